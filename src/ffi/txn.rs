//! The transactions section of `include/ramp.h` (`am/txn.rs`): requests
//! whose state is kept, queried, waited for, listed and released; the
//! handler-time bound; whether a returned request may have run.
#![allow(non_snake_case, non_camel_case_types, clippy::missing_safety_doc)]

use std::os::raw::{c_int, c_void};

use super::am2::with_token;
use super::ramp::message_parts;
use super::types::{ep_t, handler_t};
use super::{boundary, endpoint, need, out};
use crate::am::{Message, Progress, TxnState};
use crate::error::{Error, Result};
use crate::wire::Category;

/// A transaction id (`ramp_RequestTxn`).
pub type ramp_txn_t = u64;

/// `ramp_txn_state_t`: the fields hold the values of the header's enums
/// (`ramp_ack_t`, `ramp_progress_t`, `ramp_abandon_t`; int-sized).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ramp_txn_state_t {
    pub ack: c_int,
    pub progress: c_int,
    pub abandon: c_int,
    pub status: c_int,
}

impl From<TxnState> for ramp_txn_state_t {
    fn from(s: TxnState) -> ramp_txn_state_t {
        ramp_txn_state_t {
            ack: s.ack as c_int,
            progress: s.progress as c_int,
            abandon: s.abandon as c_int,
            status: s.status,
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn ramp_RequestTxn(
    ep: ep_t,
    dest: u32,
    handler: handler_t,
    category: c_int,
    source_addr: *const c_void,
    nbytes: usize,
    dest_offset: usize,
    numargs: c_int,
    args: *const i32,
    txn: *mut ramp_txn_t,
) -> c_int {
    boundary("ramp_RequestTxn", || {
        let e = endpoint(ep)?;
        need(txn)?;
        let cat = u8::try_from(category)
            .ok()
            .and_then(Category::from_u8)
            .ok_or(Error::BadArg(
                "category must be 0 (short), 1 (medium) or 2 (long)",
            ))?;
        // SAFETY: pointers as documented in ramp.h, checked in message_parts.
        let (a, n, payload) = unsafe { message_parts(cat, source_addr, nbytes, numargs, args)? };
        let id = e.request_txn(
            dest,
            &Message::new(handler, cat, &a[..n], payload, dest_offset as u64),
        )?;
        // SAFETY: `out` checks for NULL.
        unsafe { out(txn, id) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn ramp_TxnState(
    ep: ep_t,
    txn: ramp_txn_t,
    state: *mut ramp_txn_state_t,
) -> c_int {
    boundary("ramp_TxnState", || {
        let e = endpoint(ep)?;
        need(state)?;
        let s = e.txn_state(txn)?;
        // SAFETY: `out` checks for NULL.
        unsafe { out(state, s.into()) }
    })
}

/// AM_OK once PROCESSED or abandoned; AM_ERR_RESOURCE with the current
/// state when `timeout_ms` passed first (negative: no limit).
#[no_mangle]
pub unsafe extern "C" fn ramp_TxnWait(
    ep: ep_t,
    txn: ramp_txn_t,
    timeout_ms: c_int,
    state: *mut ramp_txn_state_t,
) -> c_int {
    boundary("ramp_TxnWait", || {
        let e = endpoint(ep)?;
        need(state)?;
        let (done, s) = e.txn_wait(txn, timeout_ms)?;
        // SAFETY: `out` checks for NULL.
        unsafe { out(state, s.into())? };
        if done {
            Ok(())
        } else {
            Err(Error::Resource(
                "the transaction did not end within the timeout",
            ))
        }
    })
}

/// Writes up to `max` ids of kept transactions at `progress` to `out_ids`
/// (oldest first); `*count` is how many there are (may exceed `max`).
#[no_mangle]
pub unsafe extern "C" fn ramp_TxnList(
    ep: ep_t,
    progress: c_int,
    out_ids: *mut ramp_txn_t,
    max: usize,
    count: *mut usize,
) -> c_int {
    boundary("ramp_TxnList", || {
        let e = endpoint(ep)?;
        need(count)?;
        if max > 0 && out_ids.is_null() {
            return Err(Error::BadArg("NULL output array with max > 0"));
        }
        if !super::sane_array(out_ids.cast_const(), max) {
            return Err(Error::BadArg(
                "output array misaligned or wrapping around the address space",
            ));
        }
        let p = Progress::from_i32(progress)
            .ok_or(Error::BadArg("progress must be a ramp_progress_t (0..3)"))?;
        let ids = e.txn_list(p);
        let n = ids.len().min(max);
        if n > 0 {
            // SAFETY: non-null, aligned, not wrapping (checked above), and
            // by the contract `max` >= n ids long.
            let dst = unsafe { std::slice::from_raw_parts_mut(out_ids, n) };
            dst.copy_from_slice(&ids[..n]);
        }
        // SAFETY: `out` checks for NULL.
        unsafe { out(count, ids.len()) }
    })
}

#[no_mangle]
pub extern "C" fn ramp_TxnRelease(ep: ep_t, txn: ramp_txn_t) -> c_int {
    boundary("ramp_TxnRelease", || endpoint(ep)?.txn_release(txn))
}

/// The handler-time bound in microseconds (0: none, the default).
#[no_mangle]
pub extern "C" fn ramp_SetHandlerTimeout(ep: ep_t, usec: u64) -> c_int {
    boundary("ramp_SetHandlerTimeout", || {
        endpoint(ep)?.set_handler_timeout(usec);
        Ok(())
    })
}

/// In handler 0, for a returned request: whether its handler may have run
/// at the target (1: it was given up in the network after it may have
/// arrived; 0: refused by the target, never sent, or behind the target's
/// start window when its association ended: it did not run; `am/started.rs`).
#[no_mangle]
pub unsafe extern "C" fn ramp_ReturnedMayHaveRun(token: *mut c_void, may: *mut c_int) -> c_int {
    boundary("ramp_ReturnedMayHaveRun", || {
        need(may)?;
        let m: Result<bool> = with_token(token, |t| {
            if t.returned {
                Ok(t.may_have_run)
            } else {
                Err(Error::BadArg("not the token of a returned message"))
            }
        })?;
        let m = m?;
        // SAFETY: `out` checks for NULL.
        unsafe { out(may, c_int::from(m)) }
    })
}

/// Keeps ep's transactions in the log at `path` (RAMP_LOG_SYNC=1: msync per record).
#[no_mangle]
pub unsafe extern "C" fn ramp_LogOpen(ep: ep_t, path: *const std::os::raw::c_char) -> c_int {
    boundary("ramp_LogOpen", || {
        let e = endpoint(ep)?;
        if path.is_null() {
            return Err(Error::BadArg("NULL log path"));
        }
        // SAFETY: non-null and NUL-terminated by the contract.
        let p = unsafe { std::ffi::CStr::from_ptr(path) };
        let p = std::str::from_utf8(p.to_bytes())
            .map_err(|_| Error::BadArg("the log path is not UTF-8"))?;
        if p.is_empty() {
            return Err(Error::BadArg("empty log path"));
        }
        let cfg = crate::config::global().map_err(|_| Error::BadArg("bad RAMP_* configuration"))?;
        e.log_open(std::path::Path::new(p), cfg.log_sync, cfg)
    })
}
