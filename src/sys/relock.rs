//! A re-entrant lock that takes no locked instruction on the thread that
//! uses it alone (the endpoint's: `am/endpoint/core.rs`).
//!
//! On x86 every locked read-modify-write is a full fence: it waits for the
//! store buffer to drain, and after a store to a line the other core last
//! touched (a ring's record) it waits for that line to come over. A
//! `parking_lot` mutex paid one to take the endpoint and one to let it go
//! (its release checks for parked threads); every AM_Poll and AM_Request
//! took both. Here the release is a plain store (no thread is ever parked,
//! so no one needs waking), and the lock is taken one of two ways:
//! - by compare-exchange of `owner` (free: 0), the general way;
//! - biased: a thread that took it `threshold` times in a row (no other
//!   thread between) gets the lock's bias; from then on it takes the lock by
//!   plain stores and loads (`inside` set to its id, then `bias` read again:
//!   still its own), no locked instruction at all. Another thread that wants
//!   the lock takes `owner` by compare-exchange, then revokes the bias: it
//!   clears `bias`, makes every thread of the process pass a full fence
//!   (`membarrier`, an asymmetric Dekker: either the biased thread's `inside`
//!   is seen, or its read of `bias` sees 0) and waits until `inside` is 0.
//!   A revocation costs the revoker a system call (~0.3-5 us) and doubles
//!   `threshold` (from 1,000 to 2^24), so threads taking turns often soon
//!   stay with the general way. Without `membarrier` no bias is given.
//!
//! A thread that finds the lock held spins (`spin_loop`, ~`SPINS` looks),
//! then yields its core (`YIELDS` times), then sleeps, each sleep twice the
//! last up to `MAX_SLEEP` (100 us): a waiter behind a long handler costs its
//! core a wake-up per 100 us, and takes the lock at most ~100 us (plus the
//! kernel's timer slack, 50 us by default) after it is let go. So that a
//! thread which lets go and takes the lock again in a loop (a poller) cannot
//! keep a waiter out for ever, a waiter that has spun in vain claims the next
//! turn (`next`): while it is claimed no other thread takes the lock by
//! compare-exchange, and the claimant clears it once it holds the lock (a
//! biased poller is stopped by the waiter's revocation).
//!
//! A thread's id is the address of a thread-local; the fields other than the
//! atomics are touched only by the thread holding the lock. Like
//! `parking_lot`'s, a guard forgotten (`mem::forget`) leaves the lock held,
//! and a thread started after another ended may receive the same id.

use std::cell::Cell;
use std::marker::PhantomData;
use std::ops::Deref;
use std::sync::atomic::{compiler_fence, AtomicU8, AtomicUsize, Ordering};
use std::time::Duration;

/// Looks at a held lock, with a `spin_loop` hint each, before yielding.
const SPINS: u32 = 200;
/// Yields of the core before sleeping.
const YIELDS: u32 = 50;
/// The longest sleep of a waiter.
const MAX_SLEEP: Duration = Duration::from_micros(100);
/// Takings in a row by one thread before it gets the bias, at first...
const FIRST_THRESHOLD: u32 = 1000;
/// ...and at most (doubled at each revocation).
const MAX_THRESHOLD: u32 = 1 << 24;

thread_local! {
    /// Its address is the thread's id (never 0).
    static THREAD_MARK: u8 = const { 0 };
}

#[inline(always)]
fn thread_id() -> usize {
    THREAD_MARK.with(|m| m as *const u8 as usize)
}

/// `membarrier(2)`: private expedited (a full fence on every CPU running a
/// thread of this process), and its registration.
const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;
/// 0: not tried; 1: registered; 2: unavailable.
static MEMBARRIER: AtomicU8 = AtomicU8::new(0);

fn membarrier(cmd: libc::c_int) -> bool {
    // SAFETY: membarrier takes two integers and a CPU number (unused
    // here), touches no memory of ours, and only returns a status.
    unsafe {
        libc::syscall(
            libc::SYS_membarrier,
            cmd,
            0 as libc::c_uint,
            0 as libc::c_int,
        ) == 0
    }
}

/// Whether revocations can make other threads fence (registered once).
fn heavy_barrier_ready() -> bool {
    match MEMBARRIER.load(Ordering::Acquire) {
        1 => true,
        2 => false,
        _ => {
            let ok = membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
            MEMBARRIER.store(if ok { 1 } else { 2 }, Ordering::Release);
            ok
        }
    }
}

/// A full fence on every CPU that runs a thread of this process, ours
/// included (registered before any bias was given: `heavy_barrier_ready`).
fn heavy_barrier() {
    if !membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) {
        // a bias is only given once the registration succeeded; should
        // the kernel refuse now, exclusion could not be kept
        std::process::abort();
    }
}

/// Spins, then yields, then sleeps, longer each time (to `MAX_SLEEP`).
struct Backoff {
    looks: u32,
    sleep: Duration,
}

impl Backoff {
    fn new() -> Backoff {
        Backoff {
            looks: 0,
            sleep: Duration::from_micros(1),
        }
    }

    /// Whether it has spun in vain.
    fn spun(&self) -> bool {
        self.looks >= SPINS
    }

    fn wait(&mut self) {
        self.looks = self.looks.saturating_add(1);
        if self.looks < SPINS {
            std::hint::spin_loop();
        } else if self.looks < SPINS + YIELDS {
            std::thread::yield_now();
        } else {
            std::thread::sleep(self.sleep);
            self.sleep = (self.sleep * 2).min(MAX_SLEEP);
        }
    }
}

/// A re-entrant mutual-exclusion lock around a `T` (which is only ever
/// shared by the guards of one thread at a time: put a `RefCell` inside
/// for mutation).
pub(crate) struct ReLock<T> {
    /// The thread holding the lock by compare-exchange; 0 when none.
    owner: AtomicUsize,
    /// The thread the lock is biased to; 0 when none.
    bias: AtomicUsize,
    /// The biased thread while it holds the lock that way; 0 otherwise.
    inside: AtomicUsize,
    /// A waiter that claimed the next turn; 0 when none did.
    next: AtomicUsize,
    /// How many guards the holder holds.
    count: Cell<usize>,
    /// Whether the holder took it biased (else by compare-exchange).
    biased: Cell<bool>,
    /// The last thread that took the lock by compare-exchange, how many
    /// times in a row, and how many give it the bias.
    last: Cell<usize>,
    streak: Cell<u32>,
    threshold: Cell<u32>,
    data: T,
}

// SAFETY: the lock hands `&T` only to the thread that holds it (its
// guards are neither Send nor Sync), and the `Cell`s are read and written
// only by that thread: a biased holder between its store of `inside` and
// its release of it, any other holder after its acquiring compare-exchange
// and (when a bias was given) after the biased thread was seen out (`inside`
// 0, read with Acquire after the `membarrier`), until its release of `owner`.
// So a `T` that may move between threads (Send) may be reached from several.
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
            bias: AtomicUsize::new(0),
            inside: AtomicUsize::new(0),
            next: AtomicUsize::new(0),
            count: Cell::new(0),
            biased: Cell::new(false),
            last: Cell::new(0),
            streak: Cell::new(0),
            threshold: Cell::new(FIRST_THRESHOLD),
            data,
        }
    }

    /// The lock, waiting for it if another thread holds it.
    #[inline(always)]
    pub(crate) fn lock(&self) -> ReGuard<'_, T> {
        let me = thread_id();
        if !self.enter_again_or_biased(me) {
            self.lock_general(me);
        }
        self.guard()
    }

    /// The lock, unless another thread holds it (biased or not) or a
    /// waiter claimed it: then None, having waited for nothing.
    #[inline(always)]
    pub(crate) fn try_lock(&self) -> Option<ReGuard<'_, T>> {
        let me = thread_id();
        if self.enter_again_or_biased(me) || self.try_lock_general(me) {
            return Some(self.guard());
        }
        None
    }

    /// Takes the lock again (this thread holds it), or biased (no locked
    /// instruction); false otherwise.
    #[inline(always)]
    fn enter_again_or_biased(&self, me: usize) -> bool {
        // (only this thread stores its own id, so reading it there means
        // it holds the lock; `owner` before `bias`: the bias may be given
        // to a thread while it holds the lock by compare-exchange)
        if self.inside.load(Ordering::Relaxed) == me || self.owner.load(Ordering::Relaxed) == me {
            let n = self.count.get().checked_add(1);
            self.count.set(n.expect("re-entrant lock count overflow"));
            return true;
        }
        if self.bias.load(Ordering::Relaxed) == me {
            self.inside.store(me, Ordering::Relaxed);
            // the light side of the asymmetric fence (the revoker's
            // `membarrier` is the heavy side): the store above is seen by
            // a revoker, or the load below sees its clearing of `bias`
            compiler_fence(Ordering::SeqCst);
            if self.bias.load(Ordering::Relaxed) == me {
                self.count.set(1);
                self.biased.set(true);
                return true;
            }
            self.inside.store(0, Ordering::Release);
        }
        false
    }

    /// The general way of `lock`: by compare-exchange, waiting.
    #[inline(never)]
    fn lock_general(&self, me: usize) {
        if self.next.load(Ordering::Relaxed) != 0
            || self
                .owner
                .compare_exchange(0, me, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            self.lock_slow(me);
            return;
        }
        self.acquired(me, true);
    }

    /// The general way of `try_lock`: by compare-exchange, not waiting.
    #[inline(never)]
    fn try_lock_general(&self, me: usize) -> bool {
        if self.next.load(Ordering::Relaxed) != 0
            || self
                .owner
                .compare_exchange(0, me, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            return false;
        }
        if self.acquired(me, false) {
            return true;
        }
        self.owner.store(0, Ordering::Release);
        false
    }

    /// After `owner` was taken by compare-exchange: the bias, if another
    /// thread has it, revoked (waiting for it to be out unless `wait` is
    /// false: then false, the lock to be let go); the bias given to this
    /// thread after `threshold` takings in a row. True: the lock is held.
    fn acquired(&self, me: usize, wait: bool) -> bool {
        let b = self.bias.load(Ordering::Relaxed);
        if b != 0 && b != me && !self.revoke(wait) {
            return false;
        }
        if self.last.get() == me {
            self.streak.set(self.streak.get().saturating_add(1));
        } else {
            self.last.set(me);
            self.streak.set(1);
        }
        if self.streak.get() >= self.threshold.get() && b == 0 && heavy_barrier_ready() {
            self.bias.store(me, Ordering::Relaxed);
        }
        self.count.set(1);
        self.biased.set(false);
        true
    }

    /// Takes the bias away from its thread (this one holds `owner`), then
    /// waits until that thread is out (unless `wait` is false: then false
    /// if it is in).
    #[cold]
    #[inline(never)]
    fn revoke(&self, wait: bool) -> bool {
        self.bias.store(0, Ordering::Relaxed);
        heavy_barrier();
        let mut backoff = Backoff::new();
        while self.inside.load(Ordering::Acquire) != 0 {
            if !wait {
                return false;
            }
            backoff.wait();
        }
        self.threshold
            .set(self.threshold.get().saturating_mul(2).min(MAX_THRESHOLD));
        true
    }

    #[cold]
    #[inline(never)]
    fn lock_slow(&self, me: usize) {
        let mut backoff = Backoff::new();
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
                self.acquired(me, true);
                return;
            }
            if backoff.spun() && next == 0 {
                // spun in vain: the next turn is ours if no one claimed it
                let _ = self
                    .next
                    .compare_exchange(0, me, Ordering::Relaxed, Ordering::Relaxed);
            }
            backoff.wait();
        }
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
        let l = self.lock;
        let n = l.count.get() - 1;
        l.count.set(n);
        if n == 0 {
            if l.biased.get() {
                l.inside.store(0, Ordering::Release);
            } else {
                l.owner.store(0, Ordering::Release);
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

    /// One thread alone gets the bias; another thread's taking revokes
    /// it (waiting for the biased thread to be out, which it then is not
    /// again); after more takings in a row it is given again. Meanwhile
    /// both add to a plain counter: no addition lost.
    #[test]
    fn the_bias_goes_to_a_thread_alone_and_is_revoked_by_another() {
        if !heavy_barrier_ready() {
            return;
        }
        let l = Arc::new(ReLock::new(RefCell::new(0u64)));
        let me = thread_id();
        let mut expected = 0;
        for phase in 0..5u32 {
            // (no other thread now: the count is this thread's to read)
            let alone = l.threshold.get() as u64 + 1;
            for _ in 0..alone {
                *l.lock().borrow_mut() += 1;
            }
            expected += alone;
            assert_eq!(l.bias.load(Ordering::Relaxed), me, "phase {phase}: biased");
            // taken biased: `owner` untouched
            {
                let g = l.lock();
                assert_eq!(l.owner.load(Ordering::Relaxed), 0);
                assert_eq!(l.inside.load(Ordering::Relaxed), me);
                *g.borrow_mut() += 1;
                expected += 1;
            }
            // another thread takes it while this one goes on
            let stop = Arc::new(AtomicBool::new(false));
            let other = {
                let (l, stop) = (l.clone(), stop.clone());
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        let g = l.lock();
                        let v = *g.borrow();
                        std::hint::spin_loop();
                        *g.borrow_mut() = v + 1;
                    }
                    stop.store(true, Ordering::Relaxed);
                })
            };
            while !stop.load(Ordering::Relaxed) {
                let g = l.lock();
                let v = *g.borrow();
                std::hint::spin_loop();
                *g.borrow_mut() = v + 1;
                expected += 1;
            }
            other.join().unwrap();
            expected += 200;
            assert_eq!(l.bias.load(Ordering::Relaxed), 0, "phase {phase}: revoked");
            assert_eq!(*l.lock().borrow(), expected, "phase {phase}");
        }
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
                        if (i + t as u64) % 2 == 0 {
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
