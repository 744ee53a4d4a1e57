//! `ramp_GetPeerPaths`: a peer's paths (rails) as C sees them
//! (`include/ramp.h`), over `Endpoint::peer_paths`.
#![allow(non_snake_case, non_camel_case_types, clippy::missing_safety_doc)]

use std::os::raw::c_int;

use super::types::{en_t, ep_t};
use super::{boundary, endpoint, need, sane_array};
use crate::am::{EndpointName, PeerPath};
use crate::error::{Error, Result};
use crate::proto::PathState;

/// `ramp_path_t.state`: not yet confirmed by a heartbeat (carries no data).
pub const RAMP_PATH_UNCONFIRMED: c_int = 0;
/// `ramp_path_t.state`: confirmed and not failed (may carry data).
pub const RAMP_PATH_ACTIVE: c_int = 1;
/// `ramp_path_t.state`: failed; its next probe not yet sent.
pub const RAMP_PATH_FAILED: c_int = 2;
/// `ramp_path_t.state`: failed, a probe outstanding.
pub const RAMP_PATH_PROBING: c_int = 3;
/// `ramp_path_t.state`: active but suspect: its timeouts moved its traffic
/// to another path until its heartbeat answers (then active again) or
/// goes unanswered while the peer answers elsewhere (then failed).
pub const RAMP_PATH_SUSPECT: c_int = 4;

/// One path to a peer, as `ramp_GetPeerPaths` reports it (112 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ramp_path_t {
    /// Our rail's address (its local address, as an endpoint name).
    pub local: en_t,
    /// The peer's address the path goes to.
    pub remote: en_t,
    /// Our rail: 0 is the endpoint's name (RAMP_RAILS' order).
    pub rail: u32,
    /// RAMP_PATH_UNCONFIRMED, _ACTIVE, _FAILED, _PROBING or _SUSPECT.
    pub state: c_int,
    /// Smoothed round trip, ns (0: not measured yet).
    pub srtt_ns: u64,
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// Bytes per second: the measured delivery rate where one exists,
    /// else cwnd / srtt (0 without a round trip).
    pub rate: u64,
    /// Bytes of datagrams sent on it.
    pub bytes_sent: u64,
    /// Bytes of DATA acknowledged while it carried them.
    pub bytes_acked: u64,
    /// Consecutive timeouts on it now.
    pub errors: u32,
    /// Times it failed.
    pub failures: u32,
    /// 1 when the peer's packets take it now, else 0.
    pub current: c_int,
    /// Zero.
    pub reserved: u32,
}

fn state_code(s: PathState, suspect: bool) -> c_int {
    match s {
        PathState::Unconfirmed => RAMP_PATH_UNCONFIRMED,
        PathState::Active if suspect => RAMP_PATH_SUSPECT,
        PathState::Active => RAMP_PATH_ACTIVE,
        PathState::Failed => RAMP_PATH_FAILED,
        PathState::Probing => RAMP_PATH_PROBING,
    }
}

fn record(p: &PeerPath) -> ramp_path_t {
    ramp_path_t {
        local: en_t::from(EndpointName::from_addr(p.local)),
        remote: en_t::from(EndpointName::from_addr(p.remote)),
        rail: p.rail as u32,
        state: state_code(p.state, p.suspect),
        srtt_ns: p.srtt_ns,
        cwnd: p.cwnd,
        rate: p.rate,
        bytes_sent: p.bytes_sent,
        bytes_acked: p.bytes_acked,
        errors: p.errors,
        failures: p.failures,
        current: p.current as c_int,
        reserved: 0,
    }
}

/// The paths to the peer named `dest`: `*count` is how many it has; the
/// first `max` are written to `paths` (NULL allowed when `max` is 0).
/// AM_ERR_BAD_ARG for a bad endpoint, a NULL `count`, a NULL or misaligned
/// `paths` with `max` > 0, a name that is no address, or a peer this
/// endpoint has no association with (then `*count` is 0).
#[no_mangle]
pub unsafe extern "C" fn ramp_GetPeerPaths(
    ep: ep_t,
    dest: en_t,
    paths: *mut ramp_path_t,
    max: usize,
    count: *mut usize,
) -> c_int {
    boundary("ramp_GetPeerPaths", || {
        need(count)?;
        if max > 0 && (paths.is_null() || !sane_array(paths.cast_const(), max)) {
            return Err(Error::BadArg("NULL or misaligned paths array"));
        }
        let e = endpoint(ep)?;
        let found: Result<Vec<PeerPath>> = match EndpointName::from(dest).to_addr() {
            Some(a) => e.peer_paths(a),
            None => Err(Error::BadArg("the name is no address")),
        };
        let v = match found {
            Ok(v) => v,
            Err(err) => {
                // SAFETY: `count` checked by `need` above.
                unsafe { count.write(0) };
                return Err(err);
            }
        };
        // SAFETY: `count` checked by `need`; `paths` holds `max` records
        // (the caller's contract; aligned and in range, checked above).
        unsafe {
            count.write(v.len());
            for (k, p) in v.iter().take(max).enumerate() {
                paths.add(k).write(record(p));
            }
        }
        Ok(())
    })
}
