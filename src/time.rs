//! Time as integer nanoseconds. Nothing here reads a clock: the protocol
//! core is given `Instant` values, and the layers that need the time read it
//! from the clock their endpoint owns (`clock.rs`).

/// A point in time, in nanoseconds since an arbitrary origin (that of the
/// system's monotonic clock).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(pub u64);

/// A span of time in nanoseconds.
pub type Nanos = u64;

impl Instant {
    pub const ZERO: Instant = Instant(0);

    pub fn as_nanos(self) -> u64 {
        self.0
    }

    pub fn plus(self, d: Nanos) -> Instant {
        Instant(self.0.saturating_add(d))
    }

    /// Nanoseconds from `earlier` to `self`, zero if `earlier` is later.
    pub fn since(self, earlier: Instant) -> Nanos {
        self.0.saturating_sub(earlier.0)
    }
}

pub const MICROS: Nanos = 1_000;
pub const MILLIS: Nanos = 1_000_000;
