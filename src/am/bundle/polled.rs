//! The endpoint list a thread polled last, kept by that thread: AM_Poll
//! of an unchanged bundle then costs no atomic read-modify-write (the
//! list's lock and its `Arc`'s count cost ~20 ns a poll: `Bundle::poll`
//! 61 ns against `Endpoint::poll`'s 39 ns before).
//!
//! A bundle counts the changes of its list (`Bundle::generation`, bumped
//! under the list's write lock). A poll takes the thread's kept list out
//! of its slot; when it is this bundle's at the current count (one plain
//! load), the poll runs over it, else over a fresh snapshot taken under
//! the read lock with its count. After the poll the list goes back into
//! the slot, only while the count is still the one it was taken at (so
//! an endpoint freed during the poll, by a handler or another thread, is
//! not kept by it). A poll nested in a handler finds the slot empty and
//! takes a snapshot, as before.
//!
//! What the slot keeps alive: the endpoints of the list the thread polled
//! last, until that thread's next poll, its exit, or a change of that
//! bundle made on the same thread (`forget`). An endpoint freed by
//! another thread while this one is not polling closes at this thread's
//! next poll (before: at once).

use std::cell::Cell;
use std::sync::Arc;

use crate::am::endpoint::core::Endpoint;

/// A bundle's list at generation `gen`.
pub(super) struct Polled {
    pub(super) bundle: u64,
    pub(super) gen: u64,
    pub(super) eps: Arc<Vec<Arc<Endpoint>>>,
}

thread_local! {
    static POLLED: Cell<Option<Polled>> = const { Cell::new(None) };
}

/// The thread's kept list, taken out of its slot (None: none kept, or the
/// thread is ending).
pub(super) fn take() -> Option<Polled> {
    POLLED.try_with(Cell::take).ok().flatten()
}

/// Keeps `p` as the thread's list (what the slot held is dropped).
pub(super) fn keep(p: Polled) {
    let _ = POLLED.try_with(|c| c.set(Some(p)));
}

/// Drops the thread's kept list when it is bundle `bundle`'s: the bundle
/// changed on this thread, whose freed endpoint closes now.
pub(super) fn forget(bundle: u64) {
    let _ = POLLED.try_with(|c| {
        let p = c.take();
        if p.as_ref().is_some_and(|p| p.bundle != bundle) {
            c.set(p);
        }
    });
}

/// Whether the thread keeps bundle `bundle`'s list (tests).
#[cfg(test)]
pub(crate) fn keeps(bundle: u64) -> bool {
    let p = take();
    let k = p.as_ref().is_some_and(|p| p.bundle == bundle);
    if let Some(p) = p {
        keep(p);
    }
    k
}
