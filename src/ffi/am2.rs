//! The AM-2 entry points of `include/am.h`.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::os::raw::{c_int, c_void};
use std::sync::Arc;

use super::registry;
use super::segment::CSegment;
use super::trampolines::c_handler;
use super::types::{am_handler_fn_t, eb_t, en_t, ep_t, handler_t, tag_t};
use super::{
    boundary, bundle, eb_handle, endpoint, ep_handle, guard, need, out, report, with_bundle,
    VERBOSE,
};
use crate::am::{self, BundleMode, EndpointName};
use crate::error::{Error, AM_ERR_RESOURCE, AM_OK};

/// Runs `f` on the live token a handler was given.
pub(crate) fn with_token<R>(
    token: *mut c_void,
    f: impl FnOnce(&am::token::TokenInfo) -> R,
) -> crate::error::Result<R> {
    am::token::with(token as usize as u64, f)
        .ok_or(Error::BadArg("not the token of a running handler"))
}

#[no_mangle]
pub extern "C" fn AM_Init() -> c_int {
    boundary("AM_Init", || {
        registry::init()?;
        if let Ok(cfg) = crate::config::global() {
            if cfg.verbose {
                VERBOSE.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn AM_Terminate() -> c_int {
    boundary("AM_Terminate", registry::terminate)
}

#[no_mangle]
pub unsafe extern "C" fn AM_AllocateBundle(type_: c_int, endb: *mut eb_t) -> c_int {
    boundary("AM_AllocateBundle", || {
        let mode = match type_ {
            0 => BundleMode::Seq,
            1 => BundleMode::Par,
            _ => return Err(Error::BadArg("bundle type must be AM_SEQ or AM_PAR")),
        };
        need(endb)?;
        let b = registry::allocate_bundle(mode)?;
        // SAFETY: checked non-null above; the caller's eb_t slot.
        unsafe { out(endb, eb_handle(b.id)) }
    })
}

#[no_mangle]
pub extern "C" fn AM_FreeBundle(bundle_: eb_t) -> c_int {
    boundary("AM_FreeBundle", || {
        registry::free_bundle(bundle(bundle_)?.id)
    })
}

#[no_mangle]
pub unsafe extern "C" fn AM_AllocateEndpoint(
    bundle_: eb_t,
    endp: *mut ep_t,
    endpoint_name: *mut en_t,
) -> c_int {
    boundary("AM_AllocateEndpoint", || {
        let b = bundle(bundle_)?;
        need(endp)?;
        need(endpoint_name)?;
        let ep = registry::allocate_endpoint(b.id)?;
        // SAFETY: both checked non-null above; the caller's slots.
        unsafe {
            out(endp, ep_handle(ep.id))?;
            out(endpoint_name, en_t::from(ep.name()))
        }
    })
}

#[no_mangle]
pub extern "C" fn AM_FreeEndpoint(ea: ep_t) -> c_int {
    boundary("AM_FreeEndpoint", || {
        registry::free_endpoint(endpoint(ea)?.id)
    })
}

#[no_mangle]
pub extern "C" fn AM_MoveEndpoint(ea: ep_t, from_bundle: eb_t, to_bundle: eb_t) -> c_int {
    boundary("AM_MoveEndpoint", || {
        let ep = endpoint(ea)?;
        let f = bundle(from_bundle)?;
        let t = bundle(to_bundle)?;
        registry::move_endpoint(ep.id, f.id, t.id)
    })
}

#[no_mangle]
pub unsafe extern "C" fn AM_GetSeg(ea: ep_t, addr: *mut *mut c_void, nbytes: *mut usize) -> c_int {
    boundary("AM_GetSeg", || {
        let ep = endpoint(ea)?;
        need(addr)?;
        need(nbytes)?;
        let (base, len) = ep.segment();
        // SAFETY: both checked non-null above.
        unsafe {
            out(addr, base as *mut c_void)?;
            out(nbytes, len)
        }
    })
}

#[no_mangle]
pub extern "C" fn AM_SetSeg(ea: ep_t, addr: *mut c_void, nbytes: usize) -> c_int {
    boundary("AM_SetSeg", || {
        let ep = endpoint(ea)?;
        if addr.is_null() && nbytes != 0 {
            return Err(Error::BadArg("NULL segment address with a non-zero length"));
        }
        let seg = CSegment::new(
            addr as usize,
            nbytes,
            "segment wraps around the address space",
        )?;
        if addr.is_null() {
            ep.set_segment(None);
        } else {
            ep.set_segment(Some(Arc::new(seg)));
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn AM_MaxSegLength(nbytes: *mut usize) -> c_int {
    // SAFETY: `out` checks for NULL.
    boundary("AM_MaxSegLength", || unsafe { out(nbytes, usize::MAX) })
}

#[no_mangle]
pub unsafe extern "C" fn AM_GetTag(ea: ep_t, tag: *mut tag_t) -> c_int {
    boundary("AM_GetTag", || {
        let ep = endpoint(ea)?;
        // SAFETY: `out` checks for NULL.
        unsafe { out(tag, ep.tag()) }
    })
}

#[no_mangle]
pub extern "C" fn AM_SetTag(ea: ep_t, tag: tag_t) -> c_int {
    boundary("AM_SetTag", || {
        endpoint(ea)?.set_tag(tag);
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn AM_Map(ea: ep_t, index: c_int, name: en_t, tag: tag_t) -> c_int {
    boundary("AM_Map", || {
        endpoint(ea)?.map(index as i64, EndpointName::from(name), tag)
    })
}

#[no_mangle]
pub unsafe extern "C" fn AM_MapAny(ea: ep_t, index: *mut c_int, name: en_t, tag: tag_t) -> c_int {
    boundary("AM_MapAny", || {
        let ep = endpoint(ea)?;
        need(index)?;
        let i = ep.map_any(EndpointName::from(name), tag)?;
        // SAFETY: checked non-null above.
        unsafe { out(index, i as c_int) }
    })
}

#[no_mangle]
pub extern "C" fn AM_UnMap(ea: ep_t, index: c_int) -> c_int {
    boundary("AM_UnMap", || endpoint(ea)?.unmap(index as i64))
}

#[no_mangle]
pub unsafe extern "C" fn AM_GetNumTranslations(ep: ep_t, pntrans: *mut c_int) -> c_int {
    boundary("AM_GetNumTranslations", || {
        let n = endpoint(ep)?.num_translations();
        // SAFETY: `out` checks for NULL.
        unsafe { out(pntrans, n as c_int) }
    })
}

#[no_mangle]
pub extern "C" fn AM_SetNumTranslations(ep: ep_t, ntrans: c_int) -> c_int {
    boundary("AM_SetNumTranslations", || {
        endpoint(ep)?.set_num_translations(ntrans as i64)
    })
}

/// AM_OK when entry `i` is mapped, AM_ERR_RESOURCE when not (a normal
/// answer, never reported), AM_ERR_BAD_ARG when out of range.
#[no_mangle]
pub extern "C" fn AM_GetTranslationInuse(ea: ep_t, i: c_int) -> c_int {
    // After a panic: AM_ERR_RESOURCE, as for an entry not in use.
    guard("AM_GetTranslationInuse", || {
        match endpoint(ea).and_then(|e| e.translation(i as i64)) {
            Ok(Some(_)) => AM_OK,
            Ok(None) => AM_ERR_RESOURCE,
            Err(e) => {
                report("AM_GetTranslationInuse", &e);
                e.code()
            }
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn AM_GetTranslationTag(ea: ep_t, i: c_int, tag: *mut tag_t) -> c_int {
    boundary("AM_GetTranslationTag", || {
        let ep = endpoint(ea)?;
        need(tag)?;
        let (_, t) = ep
            .translation(i as i64)?
            .ok_or(Error::Resource("translation entry not mapped"))?;
        // SAFETY: checked non-null above.
        unsafe { out(tag, t) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn AM_GetTranslationName(ea: ep_t, i: c_int, gan: *mut en_t) -> c_int {
    boundary("AM_GetTranslationName", || {
        let ep = endpoint(ea)?;
        need(gan)?;
        let (n, _) = ep
            .translation(i as i64)?
            .ok_or(Error::Resource("translation entry not mapped"))?;
        // SAFETY: checked non-null above.
        unsafe { out(gan, en_t::from(n)) }
    })
}

#[no_mangle]
pub extern "C" fn AM_SetExpectedResources(
    ea: ep_t,
    n_endpoints: c_int,
    n_outstanding_requests: c_int,
) -> c_int {
    boundary("AM_SetExpectedResources", || {
        endpoint(ea)?.set_expected_resources(n_endpoints, n_outstanding_requests)
    })
}

#[no_mangle]
pub extern "C" fn _AM_SetHandler(ea: ep_t, handler: handler_t, function: am_handler_fn_t) -> c_int {
    boundary("AM_SetHandler", || {
        let ep = endpoint(ea)?;
        let f = function.ok_or(Error::BadArg("NULL handler function"))?;
        ep.set_handler(handler, c_handler(f));
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn _AM_SetHandlerAny(
    ea: ep_t,
    handler: *mut handler_t,
    function: am_handler_fn_t,
) -> c_int {
    boundary("AM_SetHandlerAny", || {
        let ep = endpoint(ea)?;
        need(handler)?;
        let f = function.ok_or(Error::BadArg("NULL handler function"))?;
        let h = ep.set_handler_any(c_handler(f))?;
        // SAFETY: checked non-null above.
        unsafe { out(handler, h) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn AM_GetEventMask(eb: eb_t, mask: *mut c_int) -> c_int {
    boundary("AM_GetEventMask", || {
        let b = bundle(eb)?;
        // SAFETY: `out` checks for NULL.
        unsafe { out(mask, b.event_mask()) }
    })
}

#[no_mangle]
pub extern "C" fn AM_SetEventMask(eb: eb_t, mask: c_int) -> c_int {
    boundary("AM_SetEventMask", || bundle(eb)?.set_event_mask(mask))
}

#[no_mangle]
pub extern "C" fn AM_WaitSema(eb: eb_t) -> c_int {
    boundary("AM_WaitSema", || bundle(eb)?.wait_sema())
}

#[no_mangle]
pub unsafe extern "C" fn AM_GetSourceEndpoint(token: *mut c_void, gan: *mut en_t) -> c_int {
    boundary("AM_GetSourceEndpoint", || {
        let n = with_token(token, |t| t.source())?;
        // SAFETY: `out` checks for NULL.
        unsafe { out(gan, en_t::from(n)) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn AM_GetDestEndpoint(token: *mut c_void, endp: *mut ep_t) -> c_int {
    boundary("AM_GetDestEndpoint", || {
        let id = with_token(token, |t| t.endpoint.id)?;
        // SAFETY: `out` checks for NULL.
        unsafe { out(endp, ep_handle(id)) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn AM_GetMsgTag(token: *mut c_void, tagp: *mut tag_t) -> c_int {
    boundary("AM_GetMsgTag", || {
        let tag = with_token(token, |t| t.tag)?;
        // SAFETY: `out` checks for NULL.
        unsafe { out(tagp, tag) }
    })
}

#[no_mangle]
pub extern "C" fn AM_Poll(bundle_: eb_t) -> c_int {
    boundary("AM_Poll", || with_bundle(bundle_, |b| b.poll()))
}
