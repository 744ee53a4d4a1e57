//! The clock an endpoint owns: above `sys`, the only way to learn the time
//! or to wait for it to pass. In production it is the system's monotonic
//! clock (`sys::monotonic_nanos`, `poll(2)`, `nanosleep`); in the
//! simulator (`sim::World`) a virtual clock whose time moves only when the
//! simulated processes have nothing left to do now, so that a whole
//! endpoint (AM layer, protocol, transports) runs deterministically and a
//! seed replays a run.
//!
//! Every wait above `sys` goes through one of three calls: `wait_readable`
//! (sleep until a descriptor is readable or a deadline), `sleep`, and
//! `yield_now` (a busy loop's turn: a poll that may have found nothing).
//! The real clock's `yield_now` does nothing; the virtual one lets the rest
//! of the simulated world run, and moves time on when nothing is due.

use std::os::fd::RawFd;
use std::sync::Arc;

use crate::time::{Instant, Nanos};

/// Virtual time, as the simulator keeps it for one simulated process.
pub trait VirtualTime: Send + Sync {
    /// The time now.
    fn now(&self) -> Instant;
    /// The process has nothing to do before `until`, unless a datagram
    /// reaches it: the rest of the world runs and time moves on, at most
    /// to `until`.
    fn wait(&self, until: Instant);
    /// The process sleeps until `until`, whatever reaches it meanwhile:
    /// the rest of the world runs and time moves on to `until`.
    fn sleep(&self, until: Instant);
    /// A busy loop's turn: the rest of the world runs; when nothing is due
    /// anywhere, time moves on to the next thing that happens.
    fn yield_now(&self);
    /// Nanoseconds since the Unix epoch, as this world has them.
    fn unix_nanos(&self) -> u64;
}

/// An endpoint's clock (cheap to clone: the real one is a unit, a virtual
/// one a shared pointer).
#[derive(Clone, Default)]
pub enum Clock {
    /// The system's monotonic clock.
    #[default]
    Real,
    /// The simulator's virtual time.
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    Virtual(Arc<dyn VirtualTime>),
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Clock::Real => f.write_str("Clock::Real"),
            Clock::Virtual(v) => write!(f, "Clock::Virtual(at {} ns)", v.now().as_nanos()),
        }
    }
}

impl Clock {
    /// The time now.
    #[inline]
    pub fn now(&self) -> Instant {
        match self {
            Clock::Real => Instant(crate::sys::monotonic_nanos()),
            Clock::Virtual(v) => v.now(),
        }
    }

    /// Whether this is the simulator's clock.
    #[inline]
    pub fn is_virtual(&self) -> bool {
        matches!(self, Clock::Virtual(_))
    }

    /// Sleeps until a descriptor of `fds` is readable or `until` (None:
    /// `max` from now, the longest a caller sleeps without looking again).
    /// Virtual time: the process waits in the simulated world, where
    /// datagrams are not descriptors.
    pub fn wait_readable(&self, fds: &[RawFd], until: Option<Instant>, max: Nanos) {
        let now = self.now();
        let until = until.map_or(now.plus(max), |u| u.min(now.plus(max)));
        match self {
            Clock::Real => {
                // to the nanosecond: a protocol deadline under a
                // millisecond (a paced packet's) is not rounded up to one
                crate::sys::wait_readable_ns(fds, until.since(now));
            }
            Clock::Virtual(v) => v.wait(until),
        }
    }

    /// Sleeps for `d`.
    pub fn sleep(&self, d: Nanos) {
        match self {
            Clock::Real => std::thread::sleep(std::time::Duration::from_nanos(d)),
            Clock::Virtual(v) => v.sleep(v.now().plus(d)),
        }
    }

    /// A busy loop's turn (see the module doc): nothing on the real clock.
    #[inline]
    pub fn yield_now(&self) {
        if let Clock::Virtual(v) = self {
            v.yield_now();
        }
    }

    /// Nanoseconds since the Unix epoch (a file's creation stamp): the
    /// system's real-time clock, or the simulated world's.
    pub fn unix_nanos(&self) -> u64 {
        match self {
            Clock::Real => crate::sys::unix_nanos(),
            Clock::Virtual(v) => v.unix_nanos(),
        }
    }
}

/// The real clock's time now: for code that runs only in real processes
/// (job start-up, launchers), which the simulator never drives.
// (no code of the shipped library reads it at present; tests do)
#[cfg_attr(not(feature = "testing"), allow(dead_code))]
#[inline]
pub fn real_now() -> Instant {
    Clock::Real.now()
}
