//! The endpoint list a thread polled last, kept by that thread: AM_Poll
//! of an unchanged bundle then costs no atomic read-modify-write (the
//! list's lock and its `Arc`'s count cost ~20 ns a poll: `Bundle::poll`
//! 61 ns against `Endpoint::poll`'s 39 ns before).
//!
//! A bundle counts the changes of its list (`Bundle::generation`, bumped
//! under the list's write lock). A poll borrows the thread's kept list
//! where it lies (`with_kept`: no move in or out of the slot); when it is
//! this bundle's at the current count (one plain load), the poll runs
//! over it, else over a fresh snapshot taken under the read lock with its
//! count, which is kept after the poll unless the count moved meanwhile.
//! A kept list whose bundle changed during the poll (an endpoint freed by
//! a handler or another thread) is dropped after it (`forget`), so that
//! the poll does not keep a freed endpoint. A poll nested in a handler
//! borrows the same list (shared), or polls a snapshot it does not keep
//! (the slot is borrowed); a change inside it is dropped by the outer
//! poll's `forget`.
//!
//! What the slot keeps alive: the endpoints of the list the thread polled
//! last, until that thread's next poll, its exit, or a change of that
//! bundle made on the same thread (`forget`). An endpoint freed by
//! another thread while this one is not polling closes at this thread's
//! next poll (before: at once). A list leaves the slot before it is
//! dropped (never inside a borrow): an endpoint closing may poll.

use std::cell::RefCell;
use std::sync::Arc;

use crate::am::endpoint::core::Endpoint;

/// A bundle's list at generation `gen`.
pub(super) struct Polled {
    pub(super) bundle: u64,
    pub(super) gen: u64,
    pub(super) eps: Arc<Vec<Arc<Endpoint>>>,
}

thread_local! {
    static POLLED: RefCell<Option<Polled>> = const { RefCell::new(None) };
}

/// `f` of the thread's kept list, borrowed in its slot, when it is bundle
/// `bundle`'s at generation `gen`; `Err(f)`, not called, when it is not
/// (none kept, another bundle's or count, or the thread is ending).
pub(super) fn with_kept<R, F: FnOnce(&[Arc<Endpoint>]) -> R>(
    bundle: u64,
    gen: u64,
    f: F,
) -> Result<R, F> {
    let mut f = Some(f);
    let r = POLLED
        .try_with(|c| {
            let slot = c.try_borrow().ok()?;
            let p = slot
                .as_ref()
                .filter(|p| p.bundle == bundle && p.gen == gen)?;
            let f = f.take()?;
            Some(f(&p.eps))
        })
        .ok()
        .flatten();
    match (r, f) {
        (Some(r), _) => Ok(r),
        (None, Some(f)) => Err(f),
        (None, None) => unreachable!("f is taken only when it runs"),
    }
}

/// Keeps `p` as the thread's list (what the slot held is dropped, after
/// it left the slot); not while the slot is borrowed (a nested poll).
pub(super) fn keep(p: Polled) {
    let mut p = Some(p);
    let old = POLLED
        .try_with(|c| match c.try_borrow_mut() {
            Ok(mut slot) => slot.replace(p.take()?),
            Err(_) => None,
        })
        .ok()
        .flatten();
    drop(old);
    drop(p);
}

/// Drops the thread's kept list when it is bundle `bundle`'s: the bundle
/// changed on this thread, whose freed endpoint closes now (not while the
/// slot is borrowed: the poll that borrows it drops it after).
pub(super) fn forget(bundle: u64) {
    let p = POLLED
        .try_with(|c| match c.try_borrow_mut() {
            Ok(mut slot) if slot.as_ref().is_some_and(|p| p.bundle == bundle) => slot.take(),
            _ => None,
        })
        .ok()
        .flatten();
    drop(p);
}

/// Whether the thread keeps bundle `bundle`'s list (tests).
#[cfg(test)]
pub(crate) fn keeps(bundle: u64) -> bool {
    POLLED
        .try_with(|c| {
            c.try_borrow()
                .is_ok_and(|s| s.as_ref().is_some_and(|p| p.bundle == bundle))
        })
        .unwrap_or(false)
}
