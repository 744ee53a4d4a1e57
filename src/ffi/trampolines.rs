//! Calling C handlers: a C handler is an unprototyped function pointer; the
//! dispatcher calls it through the exact prototype for the message's
//! category and argument count (0..16 `int32_t` arguments), as AM-2 does.

use std::os::raw::{c_int, c_void};
use std::sync::Arc;

use super::callbacks;
use crate::am::{Data, HandlerArgs, HandlerFn};

type RawHandler = unsafe extern "C" fn();

macro_rules! int32 {
    ($i:literal) => {
        i32
    };
}

/// Calls `$f` through the prototype `($pre_t.., int32_t x len)`.
macro_rules! call_arity {
    ($f:expr, $a:expr, [$($pre_t:ty),*], [$($pre:expr),*], $($i:literal)*) => {{
        let g: unsafe extern "C" fn($($pre_t,)* $(int32!($i)),*) =
            std::mem::transmute::<RawHandler, _>($f);
        g($($pre,)* $($a[$i]),*)
    }};
}

macro_rules! call_with_args {
    ($f:expr, $a:expr, $pt:tt, $p:tt) => {{
        let a = $a;
        match a.len() {
            0 => call_arity!($f, a, $pt, $p,),
            1 => call_arity!($f, a, $pt, $p, 0),
            2 => call_arity!($f, a, $pt, $p, 0 1),
            3 => call_arity!($f, a, $pt, $p, 0 1 2),
            4 => call_arity!($f, a, $pt, $p, 0 1 2 3),
            5 => call_arity!($f, a, $pt, $p, 0 1 2 3 4),
            6 => call_arity!($f, a, $pt, $p, 0 1 2 3 4 5),
            7 => call_arity!($f, a, $pt, $p, 0 1 2 3 4 5 6),
            8 => call_arity!($f, a, $pt, $p, 0 1 2 3 4 5 6 7),
            9 => call_arity!($f, a, $pt, $p, 0 1 2 3 4 5 6 7 8),
            10 => call_arity!($f, a, $pt, $p, 0 1 2 3 4 5 6 7 8 9),
            11 => call_arity!($f, a, $pt, $p, 0 1 2 3 4 5 6 7 8 9 10),
            12 => call_arity!($f, a, $pt, $p, 0 1 2 3 4 5 6 7 8 9 10 11),
            13 => call_arity!($f, a, $pt, $p, 0 1 2 3 4 5 6 7 8 9 10 11 12),
            14 => call_arity!($f, a, $pt, $p, 0 1 2 3 4 5 6 7 8 9 10 11 12 13),
            15 => call_arity!($f, a, $pt, $p, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14),
            _ => call_arity!($f, a, $pt, $p, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15),
        }
    }};
}

/// `void h(void *token, int32_t a0..)`.
///
/// # Safety
/// `f` must be a C function taking a pointer and `args.len()` ints.
unsafe fn call_short(f: RawHandler, token: *mut c_void, args: &[i32]) {
    // SAFETY: the caller registered `f` as a handler of this prototype.
    unsafe { call_with_args!(f, args, [*mut c_void], [token]) }
}

/// `void h(void *token, void *buf, size_t nbytes, int32_t a0..)`.
///
/// # Safety
/// `f` must be a C function of the medium/long handler prototype.
unsafe fn call_bulk(f: RawHandler, token: *mut c_void, buf: *mut c_void, n: usize, args: &[i32]) {
    // SAFETY: the caller registered `f` as a handler of this prototype.
    unsafe { call_with_args!(f, args, [*mut c_void, *mut c_void, usize], [token, buf, n]) }
}

/// Wraps a C handler pointer as a handler closure. When the endpoint has
/// AMUDP handler callbacks (`callbacks.rs`), they run around the handler.
pub fn c_handler(f: RawHandler) -> HandlerFn {
    Arc::new(move |h: &mut HandlerArgs<'_>| {
        let token = h.token as usize as *mut c_void;
        let mut a = [0i32; 16];
        for (d, s) in a.iter_mut().zip(h.args) {
            *d = *s as i32;
        }
        let nargs = h.args.len();
        let hooks = match &h.data {
            Data::Returned { .. } => None,
            _ => callbacks::armed(h.token),
        };
        let args = &mut a[..nargs];
        // Payload pointer and length, after the pre-handler callback.
        let run = |f2: &dyn Fn(*mut c_void, usize, &[i32]),
                   buf: *mut c_void,
                   n: usize,
                   args: &mut [i32]| {
            if let Some(k) = &hooks {
                // SAFETY: `buf` holds `n` bytes and `args` its values for the
                // whole call (the callers below).
                unsafe { k.pre(token, buf, n, args) };
            }
            f2(buf, n, args);
            if let Some(k) = &hooks {
                k.post();
            }
        };
        match &mut h.data {
            // SAFETY: the application registered `f` for this handler index and
            // AM-2 fixes its prototype by the message's category and arity.
            Data::None => run(
                &|_, _, a| unsafe { call_short(f, token, a) },
                std::ptr::null_mut(),
                0,
                args,
            ),
            Data::Medium(buf) => {
                // SAFETY: as above; the buffer lives until the handler returns.
                let bulk =
                    |p: *mut c_void, n: usize, a: &[i32]| unsafe { call_bulk(f, token, p, n, a) };
                if (buf.as_ptr() as usize).is_multiple_of(8) {
                    run(&bulk, buf.as_mut_ptr().cast(), buf.len(), args)
                } else {
                    // AM-2 promises an 8-byte aligned buffer: copy into one.
                    let mut aligned = vec![0u64; buf.len().div_ceil(8)];
                    let p = aligned.as_mut_ptr().cast::<u8>();
                    // SAFETY: `aligned` holds at least buf.len() bytes.
                    unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr(), p, buf.len()) };
                    run(&bulk, p.cast(), buf.len(), args)
                }
            }
            // SAFETY: as above; the bytes sit in the application's segment.
            Data::Long { addr, len } => run(
                &|p, n, a| unsafe { call_bulk(f, token, p, n, a) },
                *addr as *mut c_void,
                *len,
                args,
            ),
            Data::Returned { status, opcode } => {
                // SAFETY: handler 0 has the prototype void(int, op_t, void *).
                let g: unsafe extern "C" fn(c_int, c_int, *mut c_void) =
                    unsafe { std::mem::transmute::<RawHandler, _>(f) };
                // SAFETY: calling the application's handler 0 with its prototype.
                unsafe { g(*status as c_int, *opcode, token) }
            }
        }
    })
}
