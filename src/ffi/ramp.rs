//! ramp's extensions of `include/ramp.h`: argument-vector request/reply (the
//! targets of the variadic shim), token queries, names, statistics, versions.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::cell::RefCell;
use std::ffi::CString;
use std::os::raw::{c_char, c_int, c_void};

use super::am2::with_token;
use super::types::{en_t, ep_t, handler_t, ramp_category_t, tag_t};
use super::{boundary, endpoint, guard, guard_or, need, out, report, with_endpoint};
use crate::am::{self, EndpointName, Message, Statistics};
use crate::error::{code_name, Error, Result, ReturnStatus};
use crate::wire::{Category, MAX_ARGS};

// `Statistics` (src/stats.rs) is C's `ramp_stats_t`: cbindgen.toml renames it.

/// All zero but the minimums: the identity of `ramp_AggregateStatistics`.
#[no_mangle]
pub static ramp_initial_stats: Statistics = Statistics::initial();

fn category(c: c_int) -> Result<Category> {
    Category::from_u8(u8::try_from(c).map_err(|_| Error::BadArg("bad category"))?).ok_or(
        Error::BadArg("category must be 0 (short), 1 (medium) or 2 (long)"),
    )
}

/// Reads the argument vector and the payload, checking them first.
///
/// # Safety
/// `args` must hold `numargs` ints and `src` `nbytes` bytes, when non-NULL.
pub(super) unsafe fn message_parts<'a>(
    cat: Category,
    src: *const c_void,
    nbytes: usize,
    numargs: c_int,
    args: *const i32,
) -> Result<([u32; MAX_ARGS], usize, &'a [u8])> {
    if !(0..=MAX_ARGS as c_int).contains(&numargs) {
        return Err(Error::BadArg("numargs must be between 0 and 16"));
    }
    let n = numargs as usize;
    if n > 0 && args.is_null() {
        return Err(Error::BadArg("NULL argument vector"));
    }
    let limit = match cat {
        Category::Short => 0,
        Category::Medium => am::MAX_MEDIUM,
        Category::Long => am::MAX_LONG,
    };
    if nbytes > limit {
        return Err(Error::BadArg(match cat {
            Category::Short => "short messages carry no payload",
            Category::Medium => "medium payload larger than AM_MaxMedium() (65000 bytes): send more with a long message (AM_RequestXfer into the peer's segment) or in pieces",
            Category::Long => "long payload larger than AM_MaxLong() (1 MiB): send it in pieces of at most AM_MaxLong() bytes",
        }));
    }
    if nbytes > 0 && src.is_null() {
        return Err(Error::BadArg("NULL source address with a non-zero length"));
    }
    if !super::sane_range(src as usize, nbytes) {
        return Err(Error::BadArg("source range wraps around the address space"));
    }
    if n > 0 && !super::sane_array(args, n) {
        return Err(Error::BadArg(
            "argument vector misaligned or wrapping around",
        ));
    }
    let mut a = [0u32; MAX_ARGS];
    if n > 0 {
        // SAFETY: non-null, aligned, not wrapping (checked above) and, by
        // the contract, `numargs` ints long.
        let s = unsafe { std::slice::from_raw_parts(args, n) };
        for (d, v) in a.iter_mut().zip(s) {
            *d = *v as u32;
        }
    }
    let payload: &[u8] = if nbytes == 0 {
        &[]
    } else {
        // SAFETY: non-null, not wrapping (checked above) and, by the
        // contract, `nbytes` readable bytes; it is copied before the call
        // returns.
        unsafe { std::slice::from_raw_parts(src.cast::<u8>(), nbytes) }
    };
    Ok((a, n, payload))
}

/// The request every `AM_Request*` macro ends in (through the variadic shim).
#[no_mangle]
pub unsafe extern "C" fn ramp_RequestArgv(
    ep: ep_t,
    dest: u32,
    handler: handler_t,
    category_: c_int,
    source_addr: *const c_void,
    nbytes: usize,
    dest_offset: usize,
    async_: c_int,
    numargs: c_int,
    args: *const i32,
) -> c_int {
    boundary("AM_Request", || {
        let cat = category(category_)?;
        // SAFETY: pointers as documented in ramp.h, checked in message_parts.
        let (a, n, payload) = unsafe { message_parts(cat, source_addr, nbytes, numargs, args)? };
        let nonblocking = async_ != 0 && cat == Category::Long;
        with_endpoint(ep, |e| {
            e.request(
                dest,
                &Message::new(handler, cat, &a[..n], payload, dest_offset as u64),
                nonblocking,
            )
        })
    })
}

/// The reply every `AM_Reply*` macro ends in (through the variadic shim).
#[no_mangle]
pub unsafe extern "C" fn ramp_ReplyArgv(
    token: *mut c_void,
    handler: handler_t,
    category_: c_int,
    source_addr: *const c_void,
    nbytes: usize,
    dest_offset: usize,
    numargs: c_int,
    args: *const i32,
) -> c_int {
    boundary("AM_Reply", || {
        let cat = category(category_)?;
        // SAFETY: pointers as documented in ramp.h, checked in message_parts.
        let (a, n, payload) = unsafe { message_parts(cat, source_addr, nbytes, numargs, args)? };
        am::reply(
            token as usize as u64,
            &Message::new(handler, cat, &a[..n], payload, dest_offset as u64),
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn ramp_GetSourceId(token: *mut c_void, srcid: *mut c_int) -> c_int {
    boundary("ramp_GetSourceId", || {
        let id = with_token(token, |t| t.source_id)?;
        // SAFETY: `out` checks for NULL.
        unsafe { out(srcid, id) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn ramp_GetTokenInfo(
    token: *mut c_void,
    handler: *mut handler_t,
    cat: *mut ramp_category_t,
    is_req: *mut c_int,
) -> c_int {
    boundary("ramp_GetTokenInfo", || {
        let (th, tc, treq) = with_token(token, |t| (t.handler, t.category, t.is_request))?;
        need(handler)?;
        need(cat)?;
        need(is_req)?;
        let c = match tc {
            Category::Short => ramp_category_t::ramp_Short,
            Category::Medium => ramp_category_t::ramp_Medium,
            Category::Long => ramp_category_t::ramp_Long,
        };
        // SAFETY: all three checked non-null above.
        unsafe {
            out(handler, th)?;
            out(cat, c)?;
            out(is_req, treq as c_int)
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn ramp_GetTokenArgCount(token: *mut c_void, nargs: *mut c_int) -> c_int {
    boundary("ramp_GetTokenArgCount", || {
        let n = with_token(token, |t| t.nargs)?;
        // SAFETY: `out` checks for NULL.
        unsafe { out(nargs, n as c_int) }
    })
}

/// Sends the message whose handler holds `token` back to its sender with
/// `status` (an E* code, e.g. EBADARGS): the sender's handler 0 runs.
#[no_mangle]
pub extern "C" fn ramp_ReturnMessage(token: *mut c_void, status: c_int) -> c_int {
    boundary("ramp_ReturnMessage", || {
        let st = u8::try_from(status)
            .ok()
            .and_then(crate::error::ReturnStatus::from_u8)
            .ok_or(Error::BadArg(
                "status is not an E* return-status code (1..10)",
            ))?;
        am::return_to_sender(token as usize as u64, st)
    })
}

#[no_mangle]
pub unsafe extern "C" fn ramp_GetEndpointName(ea: ep_t, name: *mut en_t) -> c_int {
    boundary("ramp_GetEndpointName", || {
        let n = endpoint(ea)?.name();
        // SAFETY: `out` checks for NULL.
        unsafe { out(name, en_t::from(n)) }
    })
}

#[no_mangle]
pub extern "C" fn ramp_enEqual(a: en_t, b: en_t) -> c_int {
    // A yes/no answer: 0 (not known to be equal) after a panic.
    guard_or("ramp_enEqual", 0, || (a == b) as c_int)
}

#[no_mangle]
pub unsafe extern "C" fn ramp_enToString(name: en_t, buf: *mut c_char, len: usize) -> c_int {
    boundary("ramp_enToString", || {
        if buf.is_null() {
            return Err(Error::BadArg("NULL buffer"));
        }
        let s = EndpointName::from(name).to_string();
        if s.len() + 1 > len {
            return Err(Error::BadArg("buffer too small for the name"));
        }
        if !super::sane_range(buf as usize, len) {
            return Err(Error::BadArg("buffer wraps around the address space"));
        }
        // SAFETY: `buf` holds `len` bytes by contract and s.len()+1 <= len.
        unsafe {
            std::ptr::copy_nonoverlapping(s.as_ptr(), buf.cast::<u8>(), s.len());
            *buf.add(s.len()) = 0;
        }
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn ramp_SetTranslationTag(ea: ep_t, index: c_int, tag: tag_t) -> c_int {
    boundary("ramp_SetTranslationTag", || {
        endpoint(ea)?.set_translation_tag(index as i64, tag)
    })
}

macro_rules! cstr {
    ($s:expr) => {
        concat!($s, "\0").as_ptr().cast::<c_char>()
    };
}

#[no_mangle]
pub extern "C" fn ramp_ErrorName(code: c_int) -> *const c_char {
    // Never NULL (ramp.h), not even after a panic.
    guard_or(
        "ramp_ErrorName",
        cstr!("AM_ERR_UNKNOWN"),
        || match code_name(code) {
            "AM_OK" => cstr!("AM_OK"),
            "AM_ERR_NOT_INIT" => cstr!("AM_ERR_NOT_INIT"),
            "AM_ERR_BAD_ARG" => cstr!("AM_ERR_BAD_ARG"),
            "AM_ERR_RESOURCE" => cstr!("AM_ERR_RESOURCE"),
            "AM_ERR_NOT_SENT" => cstr!("AM_ERR_NOT_SENT"),
            "AM_ERR_IN_USE" => cstr!("AM_ERR_IN_USE"),
            _ => cstr!("AM_ERR_UNKNOWN"),
        },
    )
}

/// The reason of the calling thread's last failing ramp call
/// ("AM_Request1 returned AM_ERR_BAD_ARG: medium payload larger than
/// AM_MaxMedium()"), or "" if none failed yet. Never NULL; valid until the
/// thread's next failing call.
#[no_mangle]
pub extern "C" fn ramp_LastError() -> *const c_char {
    guard_or("ramp_LastError", cstr!(""), super::last_error_ptr)
}

#[no_mangle]
pub extern "C" fn ramp_StatusName(status: c_int) -> *const c_char {
    // Never NULL (ramp.h), not even after a panic.
    guard_or(
        "ramp_StatusName",
        cstr!("EUNKNOWN"),
        || match u8::try_from(status).ok().and_then(ReturnStatus::from_u8) {
            Some(ReturnStatus::BadArgs) => cstr!("EBADARGS"),
            Some(ReturnStatus::BadEntry) => cstr!("EBADENTRY"),
            Some(ReturnStatus::BadTag) => cstr!("EBADTAG"),
            Some(ReturnStatus::BadHandler) => cstr!("EBADHANDLER"),
            Some(ReturnStatus::BadSegOff) => cstr!("EBADSEGOFF"),
            Some(ReturnStatus::BadLength) => cstr!("EBADLENGTH"),
            Some(ReturnStatus::BadEndpoint) => cstr!("EBADENDPOINT"),
            Some(ReturnStatus::Congestion) => cstr!("ECONGESTION"),
            Some(ReturnStatus::Unreachable) => cstr!("EUNREACHABLE"),
            Some(ReturnStatus::ReplyRejected) => cstr!("EREPLYREJECTED"),
            None => cstr!("EUNKNOWN"),
        },
    )
}

#[no_mangle]
pub extern "C" fn ramp_Version() -> *const c_char {
    guard_or("ramp_Version", cstr!(env!("CARGO_PKG_VERSION")), || {
        cstr!(env!("CARGO_PKG_VERSION"))
    })
}

#[no_mangle]
pub unsafe extern "C" fn ramp_GetEndpointStatistics(ep: ep_t, stats: *mut Statistics) -> c_int {
    boundary("ramp_GetEndpointStatistics", || {
        let s = endpoint(ep)?.statistics();
        // SAFETY: `out` checks for NULL.
        unsafe { out(stats, s) }
    })
}

#[no_mangle]
pub extern "C" fn ramp_ResetEndpointStatistics(ep: ep_t) -> c_int {
    boundary("ramp_ResetEndpointStatistics", || {
        endpoint(ep)?.reset_statistics();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn ramp_AggregateStatistics(
    runningsum: *mut Statistics,
    newvalues: *const Statistics,
) -> c_int {
    boundary("ramp_AggregateStatistics", || {
        if runningsum.is_null() || newvalues.is_null() {
            return Err(Error::BadArg("NULL statistics pointer"));
        }
        if !super::sane_array(newvalues, 1) || !super::sane_array(runningsum.cast_const(), 1) {
            return Err(Error::BadArg("statistics pointer misaligned"));
        }
        // SAFETY: both non-null, aligned (checked above) and point to a
        // ramp_stats_t by contract. The addend is copied first: the two may
        // be the same struct.
        unsafe {
            let add = *newvalues;
            (*runningsum).aggregate(&add);
        }
        Ok(())
    })
}

thread_local! {
    static REPORT: RefCell<CString> = RefCell::new(CString::default());
}

/// Formats `stats` into a per-thread buffer (overwritten by the next call on
/// the same thread), writes it to `fp` (a `FILE *`) when non-NULL, returns it;
/// NULL after an error or a panic.
#[no_mangle]
pub unsafe extern "C" fn ramp_DumpStatistics(
    fp: *mut c_void,
    stats: *const Statistics,
    globalAnalysis: c_int,
) -> *const c_char {
    guard("ramp_DumpStatistics", || {
        if stats.is_null() {
            report(
                "ramp_DumpStatistics",
                &Error::BadArg("NULL statistics pointer"),
            );
            return std::ptr::null();
        }
        if !super::sane_array(stats, 1) {
            report(
                "ramp_DumpStatistics",
                &Error::BadArg("statistics pointer misaligned"),
            );
            return std::ptr::null();
        }
        // SAFETY: non-null, aligned (checked above) and points to a
        // ramp_stats_t by contract.
        let s = unsafe { &*stats };
        let text = s.report(globalAnalysis != 0).replace('\0', " ");
        let c = CString::new(text).unwrap_or_default();
        let result = REPORT.with(|r| {
            *r.borrow_mut() = c;
            r.borrow().as_ptr()
        });
        if !fp.is_null() {
            // SAFETY: `fp` is a FILE * by contract; `result` is NUL-terminated
            // and stays valid until this thread's next call.
            unsafe {
                libc::fputs(result, fp.cast::<libc::FILE>());
                libc::fflush(fp.cast::<libc::FILE>());
            }
        }
        result
    })
}
