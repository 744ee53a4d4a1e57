//! A re-entrant lock whose release is a plain store (the endpoint's:
//! `am/endpoint/core.rs`).
//!
//! On x86 every locked read-modify-write is a full fence: it waits for the
//! store buffer to drain, and after a store to a line the other core last
//! touched (a ring's record) it waits for that line to come over. A
//! `parking_lot` mutex pays one at its lock and one at its unlock (its
//! release is a compare-exchange that checks for parked threads); every
//! AM_Poll and AM_Request took both. This lock pays one compare-exchange
//! to take a free lock, none to take it again on the thread that holds it,
//! and a plain release store to let it go: no thread is ever parked, so the
//! release has no one to wake.
//!
//! A thread that finds the lock held spins (`spin_loop`, ~`SPINS` looks),
//! then yields its core (`YIELDS` times), then sleeps on a futex, each sleep
//! at most twice the last up to `MAX_SLEEP` (100 us): a waiter behind a long
//! handler costs its core a wake-up per 100 us. A release that sees a
//! sleeper (`sleepers`, read after its release store without a fence) wakes
//! them (`wake`); when that read raced with a waiter going to sleep, the
//! waiter takes the lock at most ~100 us (plus the kernel's timer slack)
//! after it was let go, as without the wake. So that a
//! thread which lets go and takes the lock again in a loop (a poller) cannot
//! keep a waiter out for ever, a waiter that has spun in vain claims the next
//! turn (`next`): while it is claimed no other thread takes the lock, free or
//! not, and the claimant clears it once it holds the lock.
//!
//! The owner is a per-thread id (the address of a thread-local); the count
//! of re-entries is touched only by the owner. Like `parking_lot`'s, a guard
//! forgotten (`mem::forget`) leaves the lock held, and a thread started after
//! its owner ended may receive the same id and so find it held by itself.

use std::cell::Cell;
use std::marker::PhantomData;
use std::ops::Deref;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::time::Duration;

/// Looks at a held lock, with a `spin_loop` hint each, before yielding.
const SPINS: u32 = 200;
/// Yields of the core before sleeping.
const YIELDS: u32 = 50;
/// The longest sleep of a waiter.
const MAX_SLEEP: Duration = Duration::from_micros(100);

thread_local! {
    /// Its address is the thread's id (never 0).
    static THREAD_MARK: u8 = const { 0 };
}

#[inline(always)]
fn thread_id() -> usize {
    THREAD_MARK.with(|m| m as *const u8 as usize)
}

/// Sleeps while `word` holds `seen`, at most `limit` (a futex wait; any
/// return, a wake, a signal, the limit or `word` moved first, is fine: the
/// caller looks at the lock again).
fn futex_wait(word: &AtomicU32, seen: u32, limit: Duration) {
    let ts = libc::timespec {
        tv_sec: limit.as_secs() as libc::time_t,
        tv_nsec: limit.subsec_nanos() as libc::c_long,
    };
    // SAFETY: the futex word is a live, aligned AtomicU32 of the lock
    // (borrowed for the call), the timeout a timespec on our stack; the
    // kernel only reads both, and FUTEX_WAIT_PRIVATE touches no other
    // memory.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            seen,
            &ts as *const libc::timespec,
        );
    }
}

/// Wakes every thread asleep on `word` (`futex_wait`).
fn futex_wake_all(word: &AtomicU32) {
    // SAFETY: as `futex_wait`'s: a live, aligned AtomicU32; FUTEX_WAKE
    // reads no memory of ours beyond the word's address.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            libc::c_int::MAX,
        );
    }
}

/// A re-entrant mutual-exclusion lock around a `T` (which is only ever
/// shared by the guards of one thread at a time: put a `RefCell` inside
/// for mutation).
pub(crate) struct ReLock<T> {
    /// The id of the thread holding the lock; 0 when it is free.
    owner: AtomicUsize,
    /// The id of a waiter that claimed the next turn; 0 when none did.
    next: AtomicUsize,
    /// Waiters asleep on `wake` (or about to be).
    sleepers: AtomicU32,
    /// The futex word sleepers wait on: moved by each release that saw one.
    wake: AtomicU32,
    /// How many guards the owner holds (read and written only by it).
    count: Cell<usize>,
    data: T,
}

// SAFETY: the lock hands `&T` only to the thread that holds it (its
// guards are neither Send nor Sync), and `count` is read and written
// only by that thread, between its acquiring compare-exchange and its
// releasing store; so a `T` that may move between threads (Send) may be
// reached from several.
unsafe impl<T: Send> Sync for ReLock<T> {}

/// Proof that the calling thread holds a `ReLock`: derefs to its `T`;
/// dropping it lets the lock go once the thread's last guard is dropped.
#[must_use]
pub(crate) struct ReGuard<'a, T> {
    lock: &'a ReLock<T>,
    /// Neither Send nor Sync: the lock belongs to the thread that took it.
    _not_send: PhantomData<*const ()>,
}

impl<T> ReLock<T> {
    pub(crate) const fn new(data: T) -> ReLock<T> {
        ReLock {
            owner: AtomicUsize::new(0),
            next: AtomicUsize::new(0),
            sleepers: AtomicU32::new(0),
            wake: AtomicU32::new(0),
            count: Cell::new(0),
            data,
        }
    }

    /// The lock, waiting for it if another thread holds it.
    #[inline]
    pub(crate) fn lock(&self) -> ReGuard<'_, T> {
        let me = thread_id();
        if !self.enter(me) {
            self.lock_slow(me);
            self.count.set(1);
        }
        self.guard()
    }

    /// The lock, unless another thread holds it or a waiter claimed it.
    #[inline]
    pub(crate) fn try_lock(&self) -> Option<ReGuard<'_, T>> {
        let me = thread_id();
        if self.enter(me) {
            return Some(self.guard());
        }
        None
    }

    /// Takes the lock at once if this thread holds it or it is free and
    /// unclaimed; false otherwise.
    #[inline(always)]
    fn enter(&self, me: usize) -> bool {
        // (only this thread stores its own id, so reading it means it
        // holds the lock)
        if self.owner.load(Ordering::Relaxed) == me {
            let n = self.count.get().checked_add(1);
            self.count.set(n.expect("re-entrant lock count overflow"));
            return true;
        }
        if self.next.load(Ordering::Relaxed) == 0
            && self
                .owner
                .compare_exchange(0, me, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        {
            self.count.set(1);
            return true;
        }
        false
    }

    #[cold]
    #[inline(never)]
    fn lock_slow(&self, me: usize) {
        let mut looks = 0u32;
        let mut sleep = Duration::from_micros(1);
        loop {
            let next = self.next.load(Ordering::Relaxed);
            if (next == 0 || next == me)
                && self.owner.load(Ordering::Relaxed) == 0
                && self
                    .owner
                    .compare_exchange(0, me, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                if next == me {
                    self.next.store(0, Ordering::Relaxed);
                }
                return;
            }
            looks = looks.saturating_add(1);
            if looks < SPINS {
                std::hint::spin_loop();
                continue;
            }
            if next == 0 {
                // spun in vain: the next turn is ours if no one claimed it
                let _ = self
                    .next
                    .compare_exchange(0, me, Ordering::Relaxed, Ordering::Relaxed);
            }
            if looks < SPINS + YIELDS {
                std::thread::yield_now();
            } else {
                self.sleep_until_released(me, sleep);
                sleep = (sleep * 2).min(MAX_SLEEP);
            }
        }
    }

    /// Sleeps until a release wakes the sleepers or `limit` passes, unless
    /// the lock is free and not claimed by another.
    fn sleep_until_released(&self, me: usize, limit: Duration) {
        let seen = self.wake.load(Ordering::Acquire);
        // (counted first, then the lock looked at: a release whose look
        // at `sleepers` missed this one left `owner` 0 for this look, or
        // raced with it, when the limit bounds the sleep)
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        let next = self.next.load(Ordering::SeqCst);
        if self.owner.load(Ordering::SeqCst) != 0 || (next != 0 && next != me) {
            futex_wait(&self.wake, seen, limit);
        }
        self.sleepers.fetch_sub(1, Ordering::Relaxed);
    }

    #[cold]
    #[inline(never)]
    fn wake_sleepers(&self) {
        self.wake.fetch_add(1, Ordering::Release);
        futex_wake_all(&self.wake);
    }

    #[inline(always)]
    fn guard(&self) -> ReGuard<'_, T> {
        ReGuard {
            lock: self,
            _not_send: PhantomData,
        }
    }
}

impl<T> Deref for ReGuard<'_, T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        &self.lock.data
    }
}

impl<T> Drop for ReGuard<'_, T> {
    /// The last guard of the thread lets the lock go: a release store.
    #[inline(always)]
    fn drop(&mut self) {
        let n = self.lock.count.get() - 1;
        self.lock.count.set(n);
        if n == 0 {
            self.lock.owner.store(0, Ordering::Release);
            if self.lock.sleepers.load(Ordering::Relaxed) != 0 {
                self.lock.wake_sleepers();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::sync::atomic::AtomicBool;
    use std::sync::{Arc, Barrier};

    #[test]
    fn the_holder_takes_it_again_others_are_refused_until_its_last_guard_goes() {
        let l = Arc::new(ReLock::new(RefCell::new(0u32)));
        let g1 = l.lock();
        let g2 = l.lock();
        assert!(l.try_lock().is_some(), "its holder takes it again");
        *g2.borrow_mut() += 1;
        let other = |l: &Arc<ReLock<RefCell<u32>>>| {
            let l = l.clone();
            std::thread::spawn(move || l.try_lock().is_some())
                .join()
                .unwrap()
        };
        assert!(!other(&l), "held twice");
        drop(g2);
        assert!(!other(&l), "still held once");
        drop(g1);
        assert!(other(&l), "let go");
        assert_eq!(*l.lock().borrow(), 1);
    }

    #[test]
    fn a_claimed_turn_keeps_others_out_of_a_free_lock() {
        let l = Arc::new(ReLock::new(RefCell::new(0u32)));
        // a waiter (another thread's id) claimed the next turn
        l.next.store(1, Ordering::Relaxed);
        assert!(l.try_lock().is_none(), "free, but claimed");
        let taker = {
            let l = l.clone();
            std::thread::spawn(move || *l.lock().borrow_mut() += 1)
        };
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(*l.data.borrow(), 0, "no one took the claimed lock");
        l.next.store(0, Ordering::Relaxed);
        taker.join().unwrap();
        assert_eq!(*l.lock().borrow(), 1);
    }

    /// A waiter that went to sleep behind a long hold is woken by the
    /// release (the futex word moves) and takes the lock. (Of 20 holds, a
    /// release may miss a sleeper between two of its sleeps; not all 20.)
    #[test]
    fn a_release_wakes_a_sleeping_waiter() {
        let l = Arc::new(ReLock::new(RefCell::new(0u32)));
        for round in 1..=20u32 {
            let g = l.lock();
            let waiter = {
                let l = l.clone();
                std::thread::spawn(move || *l.lock().borrow_mut() += 1)
            };
            while l.sleepers.load(Ordering::SeqCst) == 0 {
                std::thread::yield_now();
            }
            drop(g);
            waiter.join().unwrap();
            assert_eq!(*l.lock().borrow(), round);
        }
        assert!(
            l.wake.load(Ordering::SeqCst) > 0,
            "no release woke a sleeper"
        );
        assert_eq!(l.sleepers.load(Ordering::SeqCst), 0);
    }

    /// Threads add to a plain counter, each addition under the lock taken
    /// once or twice (re-entered), some holding it across a yield: no
    /// addition lost. And a thread that takes and lets go the lock in a
    /// tight loop does not keep another out.
    #[test]
    fn threads_exclude_each_other_and_a_looping_taker_lets_a_waiter_in() {
        const THREADS: usize = 4;
        const ADDS: u64 = 20_000;
        let l = Arc::new(ReLock::new(RefCell::new(0u64)));
        let start = Arc::new(Barrier::new(THREADS));
        let ts: Vec<_> = (0..THREADS)
            .map(|t| {
                let (l, start) = (l.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    for i in 0..ADDS {
                        let g = l.lock();
                        let v = *g.borrow();
                        if i % 1000 == 0 {
                            std::thread::yield_now();
                        }
                        if (i + t as u64).is_multiple_of(2) {
                            let inner = l.lock();
                            *inner.borrow_mut() = v + 1;
                        } else {
                            *g.borrow_mut() = v + 1;
                        }
                    }
                })
            })
            .collect();
        for t in ts {
            t.join().unwrap();
        }
        assert_eq!(*l.lock().borrow(), THREADS as u64 * ADDS);

        let stop = Arc::new(AtomicBool::new(false));
        let looper = {
            let (l, stop) = (l.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    *l.lock().borrow_mut() += 1;
                }
            })
        };
        for _ in 0..200 {
            *l.lock().borrow_mut() += 1;
        }
        stop.store(true, Ordering::Relaxed);
        looper.join().unwrap();
    }
}
