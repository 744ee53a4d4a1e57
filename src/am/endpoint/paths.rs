//! A peer's paths seen from outside (`Endpoint::peer_paths`: C's
//! `ramp_GetPeerPaths`, Python's `Endpoint.peer_paths`), and the news of
//! paths the protocol queued (`Protocol::take_path_event`), one line each
//! under `RAMP_VERBOSE`.

use std::net::SocketAddr;

use super::core::{Endpoint, EpState};
use crate::error::{Error, Result};
use crate::proto::{PathEvent, PathState};

/// One path to a peer: our rail and its address, the peer's address, and
/// the protocol's figures (`proto::PathReport`).
#[derive(Clone, Debug, PartialEq)]
pub struct PeerPath {
    pub rail: u8,
    pub local: SocketAddr,
    pub remote: SocketAddr,
    pub state: PathState,
    /// Active but suspect (`proto/path/suspect.rs`): its timeouts moved
    /// its traffic to another path until its heartbeat answers.
    pub suspect: bool,
    /// Whether the peer's packets take it now.
    pub current: bool,
    /// Smoothed round trip, ns (0: not measured).
    pub srtt_ns: u64,
    pub cwnd: u64,
    /// The measured delivery rate while busy, bytes per second, where
    /// one is measured (several paths, this one carried data); else
    /// cwnd / srtt (0 without a round trip).
    pub rate: u64,
    pub bytes_sent: u64,
    pub bytes_acked: u64,
    pub errors: u32,
    pub failures: u32,
}

impl Endpoint {
    /// The paths to the peer at `dest` (its name or another of its
    /// addresses). A peer this endpoint has no protocol state for (never
    /// talked to, or forgotten) is an error.
    pub fn peer_paths(&self, dest: SocketAddr) -> Result<Vec<PeerPath>> {
        let v = self.with(|s| {
            let rails = s.transports.rail_addrs();
            s.proto
                .paths_of(&dest)
                .into_iter()
                .map(|r| {
                    let srtt_ns = r.srtt.unwrap_or(0);
                    let rate = match (r.delivery_rate, srtt_ns) {
                        (Some(d), _) => d,
                        (None, 0) => 0,
                        (None, t) => (r.cwnd as u128 * 1_000_000_000 / t as u128) as u64,
                    };
                    PeerPath {
                        rail: r.rail.0,
                        local: rails.get(r.rail.0 as usize).copied().unwrap_or(rails[0]),
                        remote: r.remote,
                        state: r.state,
                        suspect: r.suspect,
                        current: r.current,
                        srtt_ns,
                        cwnd: r.cwnd,
                        rate,
                        bytes_sent: r.bytes_sent,
                        bytes_acked: r.bytes_acked,
                        errors: r.errors,
                        failures: r.failures,
                    }
                })
                .collect::<Vec<_>>()
        });
        if v.is_empty() {
            return Err(Error::BadArg("no association with that peer (no paths)"));
        }
        Ok(v)
    }
}

impl Endpoint {
    /// The statistics' per-peer part: one line per peer about its
    /// current path's congestion control (window, pacing rate, round
    /// trip, events), then one line per path of the peer (rail, addresses,
    /// state, round trip, window, rate, bytes, errors); then one line per
    /// rail: its address, the datagrams sent and received on it, the news
    /// of broken paths it told.
    pub fn paths_report(&self) -> String {
        use std::fmt::Write;
        let (mut r, peers) = self.with(|s| {
            let peers: Vec<SocketAddr> = s.proto.paths().map(|p| p.0).collect();
            (s.proto.paths_report(), peers)
        });
        for peer in peers {
            for p in self.peer_paths(peer).unwrap_or_default() {
                let _ = writeln!(
                    r,
                    "  peer {peer} path rail {} {} -> {}: {}{}, rtt {:.1} us, window {} KiB, rate {:.1} MB/s, bytes sent {} acked {}, errors {} failures {}",
                    p.rail,
                    p.local,
                    p.remote,
                    p.state_name(),
                    if p.current { " (current)" } else { "" },
                    p.srtt_ns as f64 / 1e3,
                    p.cwnd / 1024,
                    p.rate as f64 / 1e6,
                    p.bytes_sent,
                    p.bytes_acked,
                    p.errors,
                    p.failures
                );
            }
        }
        for (k, x) in self.rail_statistics().iter().enumerate() {
            let _ = writeln!(
                r,
                "rail {k} at {}: datagrams sent {} received {}, paths down {}",
                x.addr, x.datagrams_sent, x.datagrams_received, x.paths_down
            );
        }
        r
    }
}

impl EpState {
    /// Takes the path news the protocol queued; under `RAMP_VERBOSE` each
    /// is one line on stderr (`path_line`).
    pub(in crate::am) fn tell_path_news(&mut self) {
        while let Some(e) = self.proto.take_path_event() {
            if self.verbose {
                let local = self.transports.rail_addrs();
                let at = local.get(e.path.rail.0 as usize).copied();
                eprintln!("{}", path_line(&e, at));
            }
        }
    }
}

/// How `RAMP_VERBOSE` tells a path's news: "ramp: path rail 1
/// 127.0.0.2:4000 -> 127.0.0.2:5000 to peer 127.0.0.1:5000 failed".
pub fn path_line(e: &PathEvent<SocketAddr>, local: Option<SocketAddr>) -> String {
    let local = local.map_or("?".to_string(), |a| a.to_string());
    format!(
        "ramp: path rail {} {local} -> {} to peer {} {}",
        e.path.rail.0,
        e.path.remote,
        e.peer,
        e.change.describe()
    )
}

impl PeerPath {
    /// Its state's name, as C's `RAMP_PATH_*` and the statistics dump say
    /// it: "suspect" for an active path that is (`RAMP_PATH_SUSPECT`).
    pub fn state_name(&self) -> &'static str {
        if self.suspect && self.state == PathState::Active {
            "suspect"
        } else {
            state_name(self.state)
        }
    }
}

/// The state's name, as C's `RAMP_PATH_*` and the statistics dump say it.
pub fn state_name(s: PathState) -> &'static str {
    match s {
        PathState::Unconfirmed => "unconfirmed",
        PathState::Active => "active",
        PathState::Failed => "failed",
        PathState::Probing => "probing",
    }
}

/// The network interface that holds `ip` (as getifaddrs tells the
/// machine's interfaces), if one does: the link a rail's address is on
/// (`ramp bench --rails` watches its state under /sys/class/net). Any
/// loopback address (127.0.0.2 too) is on the interface of 127.0.0.1.
pub fn interface_of(ip: std::net::IpAddr) -> Option<String> {
    let all = crate::sys::interface_addresses();
    let held = |ip| all.iter().find(|a| a.ip == ip).map(|a| a.name.clone());
    held(ip).or_else(|| {
        ip.is_loopback()
            .then(|| held(std::net::Ipv4Addr::LOCALHOST.into()))
            .flatten()
    })
}
