//! One-sided remote memory of `include/ramp.h` (section "Remote memory"):
//! regions, put, put with a notification word, get, test/wait/fence,
//! waiting for a flag, the bundle's progress thread. The work is done by
//! `am/rma.rs`, `am/rma_target.rs`, `am/region.rs`, `am/progress.rs`.
#![allow(non_snake_case, non_camel_case_types, clippy::missing_safety_doc)]

use std::os::raw::{c_int, c_uint, c_void};
use std::sync::Arc;

use super::segment::CSegment;
use super::types::{eb_t, ep_t};
use super::{boundary, bundle, endpoint, out};
use crate::error::{Error, Result};

/// The handle of one put or get; 0 is never a handle.
pub type ramp_op_t = u64;
/// A memory region of an endpoint (0: its AM-2 segment).
pub type ramp_region_t = u32;

/// The bytes `src` points to, checked.
///
/// # Safety
/// `src` must be NULL or point to `nbytes` readable bytes.
unsafe fn source<'a>(src: *const c_void, nbytes: usize) -> Result<&'a [u8]> {
    if nbytes == 0 {
        return Ok(&[]);
    }
    if src.is_null() {
        return Err(Error::BadArg("NULL source address with a non-zero length"));
    }
    if !super::sane_range(src as usize, nbytes) {
        return Err(Error::BadArg("source range wraps around the address space"));
    }
    // SAFETY: non-null and, by the contract, `nbytes` readable bytes; it is
    // copied before the call returns.
    Ok(unsafe { std::slice::from_raw_parts(src.cast::<u8>(), nbytes) })
}

/// Writes the handle when the caller asked for one.
///
/// # Safety
/// `op` must be NULL or point to a writable `ramp_op_t`.
unsafe fn give_handle(op: *mut ramp_op_t, h: u64) -> Result<()> {
    if op.is_null() {
        Ok(())
    } else {
        // SAFETY: non-null, the caller's variable.
        unsafe { out(op, h) }
    }
}

/// Registers `[base, base + len)` as a region with `access`
/// (RAMP_REGION_READ and/or RAMP_REGION_WRITE) and stores its id in `*region`.
#[no_mangle]
pub unsafe extern "C" fn ramp_RegisterRegion(
    ep: ep_t,
    base: *mut c_void,
    len: usize,
    access: c_uint,
    region: *mut ramp_region_t,
) -> c_int {
    boundary("ramp_RegisterRegion", || {
        let e = endpoint(ep)?;
        super::need(region)?;
        if base.is_null() || len == 0 {
            return Err(Error::BadArg("a region needs a non-NULL base and a length"));
        }
        let mem = Arc::new(CSegment::new(
            base as usize,
            len,
            "the region wraps around the address space",
        )?);
        let id = e.register_region(mem, access)?;
        // SAFETY: checked non-NULL above; the caller's variable.
        unsafe { out(region, id) }
    })
}

/// Allocates `len` bytes (rounded up to pages, zeroed) that same-host
/// peers may map, registers them as a region with `access`, and stores
/// their address in `*base` and the region's id in `*region`.
#[no_mangle]
pub unsafe extern "C" fn ramp_AllocRegion(
    ep: ep_t,
    len: usize,
    access: c_uint,
    base: *mut *mut c_void,
    region: *mut ramp_region_t,
) -> c_int {
    boundary("ramp_AllocRegion", || {
        let e = endpoint(ep)?;
        super::need(region)?;
        super::need(base)?;
        let (id, addr, _) = e.alloc_region(len, access)?;
        // SAFETY: checked non-NULL above; the caller's variables.
        unsafe {
            out(base, addr as *mut c_void)?;
            out(region, id)
        }
    })
}

/// Allocates `len` bytes (rounded up to pages, zeroed) that same-host
/// peers may map and makes them the AM-2 segment (as AM_SetSeg); stores
/// their address in `*base`.
#[no_mangle]
pub unsafe extern "C" fn ramp_AllocSegment(ep: ep_t, len: usize, base: *mut *mut c_void) -> c_int {
    boundary("ramp_AllocSegment", || {
        let e = endpoint(ep)?;
        super::need(base)?;
        let (addr, _) = e.alloc_segment(len)?;
        // SAFETY: checked non-NULL above; the caller's variable.
        unsafe { out(base, addr as *mut c_void) }
    })
}

/// Deregisters a region: once this returns its memory is never touched again.
#[no_mangle]
pub extern "C" fn ramp_DeregisterRegion(ep: ep_t, region: ramp_region_t) -> c_int {
    boundary("ramp_DeregisterRegion", || {
        endpoint(ep)?.deregister_region(region)
    })
}

/// Puts `nbytes` from `src` at `offset` of region `region` of `dest`.
#[no_mangle]
pub unsafe extern "C" fn ramp_Put(
    ep: ep_t,
    dest: u32,
    region: ramp_region_t,
    offset: u64,
    src: *const c_void,
    nbytes: usize,
    op: *mut ramp_op_t,
) -> c_int {
    boundary("ramp_Put", || {
        let e = endpoint(ep)?;
        // SAFETY: `src` as documented in ramp.h; checked in `source`.
        let s = unsafe { source(src, nbytes)? };
        let h = e.put(dest, region, offset, s, None, !op.is_null())?;
        // SAFETY: `op` is NULL or the caller's variable.
        unsafe { give_handle(op, h) }
    })
}

/// A put that then sets the 32-bit word at `flag_offset` of the region to `flag_value`.
#[no_mangle]
pub unsafe extern "C" fn ramp_PutNotify(
    ep: ep_t,
    dest: u32,
    region: ramp_region_t,
    offset: u64,
    src: *const c_void,
    nbytes: usize,
    flag_offset: u64,
    flag_value: u32,
    op: *mut ramp_op_t,
) -> c_int {
    boundary("ramp_PutNotify", || {
        let e = endpoint(ep)?;
        // SAFETY: `src` as documented in ramp.h; checked in `source`.
        let s = unsafe { source(src, nbytes)? };
        let notify = Some((flag_offset, flag_value));
        let h = e.put(dest, region, offset, s, notify, !op.is_null())?;
        // SAFETY: `op` is NULL or the caller's variable.
        unsafe { give_handle(op, h) }
    })
}

/// Gets `nbytes` from `offset` of region `region` of `dest` into `dst`.
#[no_mangle]
pub unsafe extern "C" fn ramp_Get(
    ep: ep_t,
    dest: u32,
    region: ramp_region_t,
    offset: u64,
    dst: *mut c_void,
    nbytes: usize,
    op: *mut ramp_op_t,
) -> c_int {
    boundary("ramp_Get", || {
        let e = endpoint(ep)?;
        if nbytes > 0 && dst.is_null() {
            return Err(Error::BadArg("NULL destination with a non-zero length"));
        }
        let mem = Arc::new(CSegment::new(
            dst as usize,
            nbytes,
            "destination wraps around the address space",
        )?);
        let h = e.get(dest, region, offset, mem, !op.is_null())?;
        // SAFETY: `op` is NULL or the caller's variable.
        unsafe { give_handle(op, h) }
    })
}

/// Sets `*done` (1 when complete, then `*status` too and the handle is released).
#[no_mangle]
pub unsafe extern "C" fn ramp_Test(
    ep: ep_t,
    op: ramp_op_t,
    done: *mut c_int,
    status: *mut c_int,
) -> c_int {
    boundary("ramp_Test", || {
        let e = endpoint(ep)?;
        super::need(done)?;
        super::need(status)?;
        let r = e.test_op(op)?;
        // SAFETY: both checked non-NULL above; the caller's variables.
        unsafe {
            out(done, r.is_some() as c_int)?;
            out(status, r.map_or(0, |s| s as c_int))
        }
    })
}

/// Waits until `op` completes; its status in `*status`; releases the handle.
#[no_mangle]
pub unsafe extern "C" fn ramp_Wait(ep: ep_t, op: ramp_op_t, status: *mut c_int) -> c_int {
    boundary("ramp_Wait", || {
        let e = endpoint(ep)?;
        super::need(status)?;
        let s = e.wait_op(op)?;
        // SAFETY: checked non-NULL above; the caller's variable.
        unsafe { out(status, s as c_int) }
    })
}

/// Waits for every put and get issued so far; AM_ERR_RESOURCE if one failed.
#[no_mangle]
pub extern "C" fn ramp_Fence(ep: ep_t) -> c_int {
    boundary("ramp_Fence", || endpoint(ep)?.fence())
}

/// Polls `ep` until `*flag == value`.
#[no_mangle]
pub unsafe extern "C" fn ramp_WaitFlag(ep: ep_t, flag: *const u32, value: u32) -> c_int {
    boundary("ramp_WaitFlag", || {
        let e = endpoint(ep)?;
        if flag.is_null() {
            return Err(Error::BadArg("NULL flag"));
        }
        if !(flag as usize).is_multiple_of(std::mem::align_of::<u32>()) {
            return Err(Error::BadArg("the flag is not aligned for a uint32_t"));
        }
        // SAFETY: non-NULL, aligned; the caller's word, which a put (or
        // another thread) writes meanwhile: read it volatile.
        let set = || unsafe { std::ptr::read_volatile(flag) } == value;
        let mut rounds = 0;
        while !set() && !e.wait_round(&mut rounds, set)? {}
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        Ok(())
    })
}

/// Starts (`on` != 0) or stops the bundle's progress thread.
#[no_mangle]
pub extern "C" fn ramp_SetProgressThread(bundle_: eb_t, on: c_int) -> c_int {
    boundary("ramp_SetProgressThread", || {
        bundle(bundle_)?.set_progress_thread(on != 0)
    })
}
