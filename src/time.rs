//! Time as integer nanoseconds. The protocol core never reads a clock: callers
//! pass `Instant` values in. The only clock read is `Instant::now`, used at the
//! edges (net, am, benchmarks).

/// A point in time, in nanoseconds since an arbitrary origin (that of the
/// system's monotonic clock).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(pub u64);

/// A span of time in nanoseconds.
pub type Nanos = u64;

impl Instant {
    pub const ZERO: Instant = Instant(0);

    /// Reads the monotonic clock.
    pub fn now() -> Instant {
        Instant(crate::sys::monotonic_nanos())
    }

    // (the library itself no longer reads it; tests and benches may)
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
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
