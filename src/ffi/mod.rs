//! The C ABI: `extern "C"` entry points of `include/am.h` and
//! `include/ramp.h` and the variadic shim (`c/shim.c`, compiled by build.rs).
//!
//! Every entry point goes through `boundary`: a panic never crosses into C
//! (it becomes `AM_ERR_RESOURCE`), errors map to AM codes in one place, and
//! out-parameters are written only on success.

pub mod am2;
pub mod ramp;
mod segment;
pub mod spmd;
pub mod trampolines;
pub mod types;

use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::am::{self, Bundle, Endpoint};
use crate::error::{Error, Result, AM_ERR_RESOURCE, AM_OK};
use types::{eb_t, ep_t};

/// Print every error return on stderr (`RAMP_VERBOSE=1`).
pub static VERBOSE: AtomicBool = AtomicBool::new(false);

extern "C" {
    /// AMX_VerboseErrors / AMUDP_VerboseErrors (C shim): applications set it.
    static ramp_VerboseErrors: c_int;
}

pub fn verbose() -> bool {
    // SAFETY: a plain int exported by the shim; a racy read of an int the
    // application sets once is harmless (at worst one message more or less).
    VERBOSE.load(Ordering::Relaxed)
        || unsafe { std::ptr::read_volatile(&raw const ramp_VerboseErrors) } != 0
}

/// Runs an entry point: maps its error to an AM code, reports it when
/// verbose, and turns a panic into `AM_ERR_RESOURCE`.
pub(crate) fn boundary(name: &str, f: impl FnOnce() -> Result<()>) -> c_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => AM_OK,
        Ok(Err(e)) => {
            if verbose() {
                eprintln!("ramp: {name} returned {e}");
            }
            e.code()
        }
        Err(_) => {
            eprintln!("ramp: internal error (panic) in {name}; returning AM_ERR_RESOURCE");
            AM_ERR_RESOURCE
        }
    }
}

pub(crate) fn endpoint(ep: ep_t) -> Result<Arc<Endpoint>> {
    if ep.is_null() {
        return Err(Error::BadArg("NULL endpoint"));
    }
    am::endpoint(ep as usize as u64).ok_or(Error::BadArg("not a live endpoint"))
}

pub(crate) fn bundle(eb: eb_t) -> Result<Arc<Bundle>> {
    if eb.is_null() {
        return Err(Error::BadArg("NULL bundle"));
    }
    am::bundle(eb as usize as u64).ok_or(Error::BadArg("not a live bundle"))
}

pub(crate) fn ep_handle(id: u64) -> ep_t {
    id as usize as ep_t
}

pub(crate) fn eb_handle(id: u64) -> eb_t {
    id as usize as eb_t
}

/// Writes an out-parameter after checking it is not NULL.
///
/// # Safety
/// `p` must be NULL or point to writable memory for a `T`.
pub(crate) unsafe fn out<T>(p: *mut T, v: T) -> Result<()> {
    if p.is_null() {
        return Err(Error::BadArg("NULL output pointer"));
    }
    // SAFETY: non-null, and the caller passes a pointer to a T it owns.
    unsafe { p.write(v) };
    Ok(())
}

/// Fails with BadArg when an output pointer is NULL (checked before any change).
pub(crate) fn need<T>(p: *mut T) -> Result<()> {
    if p.is_null() {
        Err(Error::BadArg("NULL output pointer"))
    } else {
        Ok(())
    }
}
