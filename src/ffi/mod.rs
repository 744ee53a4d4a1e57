//! The C ABI: `extern "C"` entry points of `include/am.h`, `include/ramp.h`
//! and `include/ramp_spmd.h`, and the variadic shim (`c/shim.c`, compiled by
//! build.rs).
//!
//! # The panic boundary
//!
//! A panic must never unwind into C (since Rust 1.81 it would abort the
//! process at the `extern "C"` edge). Every `extern "C" fn` in this module
//! therefore has exactly one expression as its body: a call of [`guard`],
//! [`guard_or`], [`guard_noreturn`] or [`boundary`], which runs the work under
//! `catch_unwind`. After a panic the guard prints
//! `ramp: internal error (panic) in NAME; returning X` on stderr and returns
//! a fallback chosen by the return type ([`PanicDefault`], as rustls-ffi
//! does):
//!
//! | C return type                          | value after a panic      |
//! |----------------------------------------|--------------------------|
//! | `int` AM code                          | `AM_ERR_RESOURCE`        |
//! | pointer (`const char *`, ...)          | `NULL`                   |
//! | name never NULL (`ramp_ErrorName`...)  | a static default string  |
//! | count (`uint32_t`, `size_t`)           | 0                        |
//! | `bool`                                 | `false`                  |
//! | `void`                                 | nothing                  |
//!
//! An `int` whose C contract is not an AM code names its own fallback with
//! [`guard_or`] (e.g. -1 for `ramp_SPMDNumProcs`, 0 for a yes/no answer);
//! a function that does not return on success either returns its error
//! code (`ramp_SPMDStartup` on the master: `AM_ERR_RESOURCE`) or, when
//! returning would be worse, aborts after the message ([`guard_noreturn`]:
//! `ramp_SPMDExit`, whose process is already ending). The test
//! `every_export_is_guarded` fails when an `extern "C" fn` body here is not
//! such a guard call.
//!
//! Errors map to AM codes in one place ([`boundary`]); out-parameters are
//! written only on success.

pub mod am2;
#[cfg(test)]
mod bounds_tests;
pub mod callbacks;
pub mod drain;
pub mod names;
pub mod paths;
pub mod ramp;
pub mod registry;
pub mod rma;
mod segment;
#[cfg(test)]
mod source_checks;
pub mod spmd;
pub mod trampolines;
pub mod txn;
pub mod types;

use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::am::{Bundle, Endpoint};
use crate::error::{Error, Result, AM_ERR_RESOURCE, AM_OK};
use types::{eb_t, ep_t};

/// Print every error return on stderr (`RAMP_VERBOSE=1`).
pub static VERBOSE: AtomicBool = AtomicBool::new(false);

extern "C" {
    /// AMX_VerboseErrors / AMUDP_VerboseErrors (C shim): applications set it.
    static ramp_VerboseErrors: c_int;
}

/// `RAMP_VERBOSE` as the configuration read it (also in SPMD jobs, whose
/// start-up initialises the AM layer without `AM_Init`, and before any
/// initialisation).
static VERBOSE_ENV: once_cell::sync::Lazy<bool> =
    once_cell::sync::Lazy::new(|| crate::config::global().is_ok_and(|c| c.verbose));

pub fn verbose() -> bool {
    VERBOSE.load(Ordering::Relaxed)
        || *VERBOSE_ENV
        // SAFETY: a plain int exported by the shim; a racy read of an int the
        // application sets once is harmless (at worst one message more or less).
        || unsafe { std::ptr::read_volatile(&raw const ramp_VerboseErrors) } != 0
}

/// The value an entry point returns to C after an internal error (a panic),
/// chosen by its return type.
pub(crate) trait PanicDefault {
    /// The fallback value.
    fn panic_default() -> Self;
}

impl PanicDefault for c_int {
    /// Entry points returning `int` return an AM code: `AM_ERR_RESOURCE`.
    fn panic_default() -> Self {
        AM_ERR_RESOURCE
    }
}

impl<T> PanicDefault for *const T {
    fn panic_default() -> Self {
        std::ptr::null()
    }
}

impl<T> PanicDefault for *mut T {
    fn panic_default() -> Self {
        std::ptr::null_mut()
    }
}

impl PanicDefault for u32 {
    fn panic_default() -> Self {
        0
    }
}

impl PanicDefault for usize {
    fn panic_default() -> Self {
        0
    }
}

impl PanicDefault for u64 {
    fn panic_default() -> Self {
        0
    }
}

impl PanicDefault for bool {
    fn panic_default() -> Self {
        false
    }
}

impl PanicDefault for () {
    fn panic_default() -> Self {}
}

/// How a fallback value is named in the panic message.
pub(crate) trait Shown {
    fn shown(&self) -> String;
}

impl Shown for c_int {
    fn shown(&self) -> String {
        if *self == AM_ERR_RESOURCE {
            "AM_ERR_RESOURCE".into()
        } else {
            self.to_string()
        }
    }
}

impl<T> Shown for *const T {
    fn shown(&self) -> String {
        if self.is_null() {
            "NULL".into()
        } else {
            "a static default".into()
        }
    }
}

impl<T> Shown for *mut T {
    fn shown(&self) -> String {
        self.cast_const().shown()
    }
}

macro_rules! shown_display {
    ($($t:ty),*) => {
        $(impl Shown for $t {
            fn shown(&self) -> String {
                self.to_string()
            }
        })*
    };
}
shown_display!(u32, usize, u64, bool);

impl Shown for () {
    fn shown(&self) -> String {
        "nothing".into()
    }
}

/// Runs the body of an entry point; after a panic returns the fallback of
/// its return type ([`PanicDefault`]).
pub(crate) fn guard<R: PanicDefault + Shown>(name: &str, f: impl FnOnce() -> R) -> R {
    guard_or(name, R::panic_default(), f)
}

/// Runs the body of an entry point; after a panic prints
/// `ramp: internal error (panic) in NAME; returning X` and returns
/// `fallback` (for a function whose C contract names another value than its
/// type's [`PanicDefault`]).
pub(crate) fn guard_or<R: Shown>(name: &str, fallback: R, f: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => {
            eprintln!(
                "ramp: internal error (panic) in {name}; returning {}",
                fallback.shown()
            );
            fallback
        }
    }
}

/// Runs the body of an entry point that must not return to its caller once
/// it has begun (the process is ending): after a panic prints
/// `ramp: internal error (panic) in NAME; aborting` and aborts, so the
/// launcher sees the process die instead of the application running on in a
/// half-shut-down library.
pub(crate) fn guard_noreturn<R>(name: &str, f: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => {
            eprintln!("ramp: internal error (panic) in {name}; aborting");
            std::process::abort()
        }
    }
}

/// Runs an entry point that returns an AM code: maps its error to the code
/// (reporting it when verbose); a panic gives `AM_ERR_RESOURCE` ([`guard`]).
pub(crate) fn boundary(name: &str, f: impl FnOnce() -> Result<()>) -> c_int {
    guard(name, || match f() {
        Ok(()) => AM_OK,
        Err(e) => {
            report(name, &e);
            e.code()
        }
    })
}

thread_local! {
    /// The calling thread's last error: `ramp_LastError`.
    static LAST_ERROR: std::cell::RefCell<std::ffi::CString> =
        std::cell::RefCell::new(std::ffi::CString::default());
}

/// Records an error an entry point is about to return as the thread's last
/// error (`ramp_LastError`), and prints it when verbose.
pub(crate) fn report(name: &str, e: &Error) {
    let text = format!("{name} returned {e}");
    if verbose() {
        eprintln!("ramp: {text}");
    }
    set_last_error(text);
}

/// Sets the thread's last error text (NUL bytes replaced).
pub(crate) fn set_last_error(text: String) {
    let c = std::ffi::CString::new(text.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|l| *l.borrow_mut() = c);
}

/// The thread's last error text; valid until the thread's next failing call.
pub(crate) fn last_error_ptr() -> *const std::os::raw::c_char {
    LAST_ERROR.with(|l| l.borrow().as_ptr())
}

pub(crate) fn endpoint(ep: ep_t) -> Result<Arc<Endpoint>> {
    if ep.is_null() {
        return Err(Error::BadArg("NULL endpoint"));
    }
    registry::endpoint(ep as usize as u64).ok_or(Error::BadArg("not a live endpoint"))
}

pub(crate) fn bundle(eb: eb_t) -> Result<Arc<Bundle>> {
    if eb.is_null() {
        return Err(Error::BadArg("NULL bundle"));
    }
    registry::bundle(eb as usize as u64).ok_or(Error::BadArg("not a live bundle"))
}

/// `f` of the live endpoint `ep`, without a reference count while the
/// registry has not changed since this thread's last call with it (the
/// hot calls: `registry::with_endpoint`).
pub(crate) fn with_endpoint<R>(ep: ep_t, f: impl FnOnce(&Arc<Endpoint>) -> Result<R>) -> Result<R> {
    if ep.is_null() {
        return Err(Error::BadArg("NULL endpoint"));
    }
    registry::with_endpoint(ep as usize as u64, f)
        .unwrap_or(Err(Error::BadArg("not a live endpoint")))
}

/// `f` of the live bundle `eb`, as `with_endpoint`.
pub(crate) fn with_bundle<R>(eb: eb_t, f: impl FnOnce(&Arc<Bundle>) -> Result<R>) -> Result<R> {
    if eb.is_null() {
        return Err(Error::BadArg("NULL bundle"));
    }
    registry::with_bundle(eb as usize as u64, f).unwrap_or(Err(Error::BadArg("not a live bundle")))
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
    need(p)?;
    // SAFETY: non-null and aligned (checked by `need`), and the caller
    // passes a pointer to a T it owns.
    unsafe { p.write(v) };
    Ok(())
}

/// Whether `len` bytes from `addr` are a range Rust may view as a slice:
/// not wrapping around the address space, at most `isize::MAX` bytes.
/// (That the application's memory is there is its contract; this much is
/// checked in every build before any pointer into it is made.)
pub(crate) fn sane_range(addr: usize, len: usize) -> bool {
    len <= isize::MAX as usize && addr.checked_add(len).is_some()
}

/// Whether `n` values of `T` from `p` are an array Rust may view as a
/// slice: `p` aligned for `T`, the bytes a `sane_range`.
pub(crate) fn sane_array<T>(p: *const T, n: usize) -> bool {
    (p as usize).is_multiple_of(std::mem::align_of::<T>())
        && n.checked_mul(std::mem::size_of::<T>())
            .is_some_and(|bytes| sane_range(p as usize, bytes))
}

/// Fails with BadArg when an output pointer is NULL or misaligned for its
/// type (checked before any change).
pub(crate) fn need<T>(p: *mut T) -> Result<()> {
    if p.is_null() {
        Err(Error::BadArg("NULL output pointer"))
    } else if !sane_array(p.cast_const(), 1) {
        Err(Error::BadArg("output pointer misaligned for its type"))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_the_fallback_of_its_type() {
        assert_eq!(
            guard("t_int", || -> c_int { panic!("test") }),
            AM_ERR_RESOURCE
        );
        assert!(guard("t_ptr", || -> *const u8 { panic!("test") }).is_null());
        assert!(guard("t_mut", || -> *mut u8 { panic!("test") }).is_null());
        assert_eq!(guard("t_u32", || -> u32 { panic!("test") }), 0);
        assert_eq!(guard("t_usize", || -> usize { panic!("test") }), 0);
        assert!(!guard("t_bool", || -> bool { panic!("test") }));
        guard("t_unit", || -> () { panic!("test") });
        assert_eq!(guard_or("t_or", -1, || -> c_int { panic!("test") }), -1);
        assert_eq!(boundary("t_boundary", || panic!("test")), AM_ERR_RESOURCE);
    }

    #[test]
    fn without_a_panic_the_value_passes_through() {
        assert_eq!(guard("t_int", || 7), 7);
        assert_eq!(guard_or("t_or", -1, || 5), 5);
        assert_eq!(guard_noreturn("t_noreturn", || 9), 9);
        assert_eq!(boundary("t_ok", || Ok(())), AM_OK);
        assert_eq!(
            boundary("t_err", || Err(Error::BadArg("test"))),
            crate::error::AM_ERR_BAD_ARG
        );
    }
}
