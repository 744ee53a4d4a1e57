//! The C boundary's bounds checks, through the exported C functions as a C
//! program calls them: buffers, arrays and out-pointers whose range wraps
//! around the address space or that are misaligned for their type are
//! refused with `AM_ERR_BAD_ARG` before anything is read or written
//! through them, in every build (the addresses used here are never
//! touched: without the checks these calls would crash), and nothing the
//! call would have written is written.

use std::os::raw::{c_char, c_int, c_uint, c_void};

// the library whose C symbols are declared below
extern crate ramp;

const AM_OK: c_int = 0;
const AM_ERR_BAD_ARG: c_int = 2;
const AM_SEQ: c_int = 0;
const RAMP_REGION_READ: c_uint = 1;

#[repr(C)]
#[derive(Clone, Copy)]
struct EnT {
    opaque: [u64; 4],
}

extern "C" {
    fn AM_Init() -> c_int;
    fn AM_Terminate() -> c_int;
    fn AM_AllocateBundle(kind: c_int, eb: *mut *mut c_void) -> c_int;
    fn AM_AllocateEndpoint(eb: *mut c_void, ep: *mut *mut c_void, name: *mut EnT) -> c_int;
    fn AM_SetSeg(ep: *mut c_void, addr: *mut c_void, nbytes: usize) -> c_int;
    fn ramp_enToString(name: EnT, buf: *mut c_char, len: usize) -> c_int;
    fn ramp_AggregateStatistics(sum: *mut c_void, add: *const c_void) -> c_int;
    fn ramp_DumpStatistics(fp: *mut c_void, stats: *const c_void, global: c_int) -> *const c_char;
    fn ramp_SPMDAllGather(source: *mut c_void, dest: *mut c_void, len: usize) -> c_int;
    fn ramp_RegisterRegion(
        ep: *mut c_void,
        base: *mut c_void,
        len: usize,
        access: c_uint,
        region: *mut u32,
    ) -> c_int;
    fn ramp_Get(
        ep: *mut c_void,
        dest: u32,
        region: u32,
        offset: u64,
        dst: *mut c_void,
        nbytes: usize,
        op: *mut u64,
    ) -> c_int;
    #[allow(clippy::too_many_arguments)]
    fn ramp_RequestArgv(
        ep: *mut c_void,
        dest: u32,
        handler: u8,
        category: c_int,
        source: *const c_void,
        nbytes: usize,
        dest_offset: usize,
        async_: c_int,
        numargs: c_int,
        args: *const i32,
    ) -> c_int;
    fn ramp_TxnList(
        ep: *mut c_void,
        progress: c_int,
        out: *mut u64,
        max: usize,
        count: *mut usize,
    ) -> c_int;
    fn ramp_Drain(eb: *mut c_void, msgs: *mut c_void, max: c_int, count: *mut c_int) -> c_int;
    fn AM_GetTag(ep: *mut c_void, tag: *mut u64) -> c_int;
}

/// An address `n` bytes below the end of the address space: `n` bytes
/// from it end at the last address, `n + 1` wrap around.
fn near_top(n: usize) -> *mut c_void {
    (usize::MAX - n) as *mut c_void
}

#[test]
fn calls_without_an_endpoint_refuse_wrapping_and_misaligned_memory() {
    let name = EnT { opaque: [0; 4] };
    let mut stats = vec![0u64; 1024];
    let odd = (stats.as_mut_ptr() as usize + 1) as *mut c_void;
    let mut dest = [0u8; 8];
    // SAFETY: the pointers are refused before they are read or written
    // (the test's claim); the others are the test's own buffers.
    unsafe {
        assert_eq!(
            ramp_enToString(name, near_top(8).cast(), 64),
            AM_ERR_BAD_ARG
        );
        let whole = stats.as_mut_ptr().cast();
        assert_eq!(ramp_AggregateStatistics(odd, whole), AM_ERR_BAD_ARG);
        assert_eq!(ramp_AggregateStatistics(whole, odd), AM_ERR_BAD_ARG);
        assert!(stats.iter().all(|&w| w == 0), "a refused aggregation wrote");
        assert!(ramp_DumpStatistics(std::ptr::null_mut(), odd, 0).is_null());
        let rc = ramp_SPMDAllGather(near_top(4), dest.as_mut_ptr().cast(), 8);
        assert_eq!(rc, AM_ERR_BAD_ARG);
    }
}

#[test]
fn an_endpoints_calls_refuse_wrapping_and_misaligned_memory() {
    let (mut eb, mut ep) = (std::ptr::null_mut(), std::ptr::null_mut());
    let mut name = EnT { opaque: [0; 4] };
    let args = [0i32; 4];
    let (mut region, mut count, mut n, mut tag) = (555u32, 7usize, 7 as c_int, 0u64);
    let mut words = [0u64; 64];
    let odd_words = (words.as_mut_ptr() as usize + 4) as *mut u64;
    // SAFETY: the pointers are refused before they are read or written
    // (the test's claim); the others are the test's own variables.
    unsafe {
        assert_eq!(AM_Init(), AM_OK);
        assert_eq!(AM_AllocateBundle(AM_SEQ, &mut eb), AM_OK);
        assert_eq!(AM_AllocateEndpoint(eb, &mut ep, &mut name), AM_OK);
        // a segment, a region and a get's destination that wrap around
        assert_eq!(AM_SetSeg(ep, near_top(8), 16), AM_ERR_BAD_ARG);
        let rc = ramp_RegisterRegion(ep, near_top(8), 16, RAMP_REGION_READ, &mut region);
        assert_eq!(rc, AM_ERR_BAD_ARG);
        assert_eq!(region, 555, "a refused registration wrote its id");
        assert_eq!(
            ramp_Get(ep, 0, 0, 0, near_top(4), 8, std::ptr::null_mut()),
            AM_ERR_BAD_ARG
        );
        // a request whose payload wraps; one whose arguments are misaligned
        let rc = ramp_RequestArgv(ep, 0, 1, 1, near_top(4), 8, 0, 0, 0, args.as_ptr());
        assert_eq!(rc, AM_ERR_BAD_ARG);
        let odd = (args.as_ptr() as usize + 1) as *const i32;
        let rc = ramp_RequestArgv(ep, 0, 1, 0, std::ptr::null(), 0, 0, 0, 2, odd);
        assert_eq!(rc, AM_ERR_BAD_ARG);
        // arrays of ids and of drained messages, misaligned; an out-pointer too
        assert_eq!(
            ramp_TxnList(ep, 0, odd_words, 2, &mut count),
            AM_ERR_BAD_ARG
        );
        assert_eq!(count, 7, "a refused list wrote its count");
        assert_eq!(ramp_Drain(eb, odd_words.cast(), 2, &mut n), AM_ERR_BAD_ARG);
        assert_eq!(n, 0);
        assert_eq!(AM_GetTag(ep, odd_words), AM_ERR_BAD_ARG);
        // sane ones work
        assert_eq!(
            ramp_TxnList(ep, 0, std::ptr::null_mut(), 0, &mut count),
            AM_OK
        );
        assert_eq!(AM_GetTag(ep, &mut tag), AM_OK);
        let mut msgs = vec![0u64; 64];
        assert_eq!(ramp_Drain(eb, msgs.as_mut_ptr().cast(), 2, &mut n), AM_OK);
        assert_eq!(AM_Terminate(), AM_OK);
    }
}
