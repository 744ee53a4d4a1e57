//! A clock a test moves by hand: virtual time for code a test drives
//! directly, outside a `World` (a transport's rings, say). It says what
//! the test set; nothing else moves it, except a wait of the code under
//! test (to its end) and a busy loop's yield (by `YIELD_STEP`), as time
//! would pass for them. Checks that depend on elapsed time (peer checks,
//! retries, a stuck ring) are then exact: the test sets the instant just
//! before a deadline and the deadline itself.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::clock::{Clock, VirtualTime};
use crate::time::{Instant, Nanos, MICROS};

/// How far a busy loop's yield moves a manual clock.
pub const YIELD_STEP: Nanos = MICROS;
/// Where a manual clock starts (a second: nothing is "before the start").
const START: Instant = Instant(1_000_000_000);

/// A clock a test moves by hand (see the module doc); shared by every
/// `Clock` made of it.
#[derive(Debug)]
pub struct ManualClock {
    now: AtomicU64,
}

impl ManualClock {
    /// A clock at its start, one second.
    pub fn new() -> Arc<ManualClock> {
        Arc::new(ManualClock {
            now: AtomicU64::new(START.0),
        })
    }

    /// An endpoint's (or a transport's) clock that reads this one.
    pub fn clock(self: &Arc<Self>) -> Clock {
        Clock::Virtual(self.clone())
    }

    /// The time now.
    pub fn now(&self) -> Instant {
        Instant(self.now.load(Ordering::SeqCst))
    }

    /// Moves the time to `t` (never back: a monotonic clock).
    pub fn set(&self, t: Instant) {
        let was = self.now.fetch_max(t.0, Ordering::SeqCst);
        assert!(
            was <= t.0,
            "a manual clock set back from {was} to {} ns",
            t.0
        );
    }

    /// Moves the time on by `d`.
    pub fn advance(&self, d: Nanos) {
        self.now.fetch_add(d, Ordering::SeqCst);
    }
}

impl VirtualTime for ManualClock {
    fn now(&self) -> Instant {
        ManualClock::now(self)
    }

    fn wait(&self, until: Instant) {
        self.now.fetch_max(until.0, Ordering::SeqCst);
    }

    fn sleep(&self, until: Instant) {
        self.now.fetch_max(until.0, Ordering::SeqCst);
    }

    fn yield_now(&self) {
        self.advance(YIELD_STEP);
    }

    fn unix_nanos(&self) -> u64 {
        // a fixed date (2026-01-01) plus the time, as a world's clock
        1_767_225_600_000_000_000 + ManualClock::now(self).0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_says_what_the_test_set_and_waits_move_it() {
        let m = ManualClock::new();
        let c = m.clock();
        let t0 = c.now();
        assert_eq!(c.now(), t0, "time does not pass by itself");
        m.advance(5);
        assert_eq!(c.now(), t0.plus(5));
        m.set(t0.plus(100));
        assert_eq!(c.now(), t0.plus(100));
        c.sleep(50);
        assert_eq!(c.now(), t0.plus(150));
        c.wait_readable(&[], Some(t0.plus(120)), 1_000_000);
        assert_eq!(c.now(), t0.plus(150), "a wait already over");
        c.yield_now();
        assert_eq!(c.now(), t0.plus(150 + YIELD_STEP));
    }

    #[test]
    #[should_panic(expected = "set back")]
    fn a_manual_clock_never_goes_back() {
        let m = ManualClock::new();
        m.set(m.now().plus(10));
        m.set(m.now());
        m.set(Instant(1));
    }
}
