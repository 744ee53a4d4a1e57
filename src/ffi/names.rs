//! Names of `include/ramp.h` (its "names" section): handler names
//! (`am/names.rs`) and endpoint names published job-wide, kept by the
//! job's ranks and found over ramp messages under every launcher
//! (`spmd/names.rs`, `am/services.rs`).
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::os::raw::{c_char, c_int};

use super::types::{en_t, ep_t, handler_t};
use super::{boundary, endpoint, out};
use crate::error::{Error, Result};

/// The bytes of the C string `s`, reading at most `max + 1` bytes: longer
/// strings are refused without being read to their end.
///
/// # Safety
/// `s` is NULL or a NUL-terminated string (or at least `max + 1` readable bytes).
unsafe fn c_bytes<'a>(s: *const c_char, max: usize, what: &'static str) -> Result<&'a [u8]> {
    if s.is_null() {
        return Err(Error::BadArg(what));
    }
    // SAFETY: non-null; strnlen reads at most max + 1 bytes, all readable by
    // the contract above.
    let n = unsafe { libc::strnlen(s, max + 1) };
    if n > max {
        return Err(Error::BadArg("name or service string too long"));
    }
    // SAFETY: the n bytes before the NUL were just read by strnlen.
    Ok(unsafe { std::slice::from_raw_parts(s.cast::<u8>(), n) })
}

#[no_mangle]
pub unsafe extern "C" fn ramp_SetHandlerName(
    ep: ep_t,
    handler: handler_t,
    name: *const c_char,
) -> c_int {
    boundary("ramp_SetHandlerName", || {
        let e = endpoint(ep)?;
        // SAFETY: a C string by contract; c_bytes checks NULL and length.
        let n = unsafe { c_bytes(name, crate::am::MAX_HANDLER_NAME, "NULL handler name")? };
        e.set_handler_name(handler, n)
    })
}

#[no_mangle]
pub unsafe extern "C" fn ramp_LookupHandler(
    ep: ep_t,
    dest: u32,
    name: *const c_char,
    handler: *mut handler_t,
) -> c_int {
    boundary("ramp_LookupHandler", || {
        let e = endpoint(ep)?;
        // SAFETY: a C string by contract; c_bytes checks NULL and length.
        let n = unsafe { c_bytes(name, crate::am::MAX_HANDLER_NAME, "NULL handler name")? };
        if handler.is_null() {
            return Err(Error::BadArg("NULL handler out-parameter"));
        }
        let h = e.lookup_handler(dest, n)?;
        // SAFETY: `out` checks for NULL.
        unsafe { out(handler, h) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn ramp_NamePublish(ep: ep_t, service: *const c_char) -> c_int {
    boundary("ramp_NamePublish", || {
        let e = endpoint(ep)?;
        // SAFETY: a C string by contract; c_bytes checks NULL and length.
        let s = unsafe { c_bytes(service, crate::spmd::MAX_SERVICE, "NULL service")? };
        crate::spmd::name_publish(&e, s)
    })
}

#[no_mangle]
pub unsafe extern "C" fn ramp_NameLookup(
    service: *const c_char,
    name: *mut en_t,
    timeout_ms: c_int,
) -> c_int {
    boundary("ramp_NameLookup", || {
        // SAFETY: a C string by contract; c_bytes checks NULL and length.
        let s = unsafe { c_bytes(service, crate::spmd::MAX_SERVICE, "NULL service")? };
        if name.is_null() {
            return Err(Error::BadArg("NULL name out-parameter"));
        }
        let n = crate::spmd::name_lookup(s, timeout_ms)?;
        // SAFETY: `out` checks for NULL.
        unsafe { out(name, en_t::from(n)) }
    })
}
