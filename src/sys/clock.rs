//! The monotonic clock, cheaply.
//!
//! `clock_gettime(CLOCK_MONOTONIC)` costs ~22 ns here (the vDSO), and ramp
//! reads the clock on every poll and every request: a tenth of a
//! shared-memory round trip. Where the kernel itself keeps time by the
//! CPU's time-stamp counter (its clocksource is `tsc`: constant rate,
//! synchronised across cores), a read is the counter (~10 ns) carried
//! forward from the thread's last real reading of the clock (its anchor:
//! the counter read just before and just after it, not interrupted
//! between) at the rate measured between anchors at least `CALIBRATE`
//! apart;
//! a real reading is taken again once the anchor is `REANCHOR` old, so
//! an estimate is never more than that far from a real reading (its
//! error: that span times the rate's, under a nanosecond). Per thread,
//! a reading never goes below the one before it. Anywhere else (another
//! clocksource, another architecture, `RAMP_CLOCK=system`: `clock_counter`),
//! every reading is a real one.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};

/// A real reading of CLOCK_MONOTONIC in nanoseconds.
fn system_nanos() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer; with
    // CLOCK_MONOTONIC it cannot fail on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Nanoseconds since the Unix epoch (CLOCK_REALTIME): a stamp written
/// into a file, never used to measure time.
pub fn unix_nanos() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Whole seconds since `t` by the real-time clock (None: `t` is later):
/// how old a file is.
pub fn secs_since(t: std::time::SystemTime) -> Option<u64> {
    t.elapsed().ok().map(|d| d.as_secs())
}

/// The time-stamp counter.
#[cfg(target_arch = "x86_64")]
#[inline]
fn cycles() -> u64 {
    // SAFETY: RDTSC has no preconditions on x86_64; it reads a counter.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn cycles() -> u64 {
    0
}

/// Cycles after which a thread reads the real clock again (50 us at 2 GHz:
/// the estimate's span).
const REANCHOR: u64 = 100_000;
/// The most cycles between the two counter readings around a real one
/// for the pair to anchor estimates (a real reading takes ~100 cycles; a
/// thread preempted between them would make every estimate from that
/// anchor, and the rate measured from it, off by the time it lost).
const PAIR_MAX: u64 = 2_000;
/// The shortest span, in nanoseconds, over which the counter's rate is
/// measured (the real clock's jitter over it: about 1e-5).
const CALIBRATE: u64 = 2_000_000;

/// Nanoseconds per cycle, 32.32 fixed point; 0: not measured yet.
static RATE: AtomicU64 = AtomicU64::new(0);
/// Whether the counter may be used: 0 unknown, 1 yes, 2 no.
static USABLE: AtomicU8 = AtomicU8::new(0);

thread_local! {
    /// (cycles, nanoseconds) of the thread's last real reading; of the
    /// one its rate is measured from; and its last reading returned.
    static ANCHOR: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
    static BASE: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
    static LAST: Cell<u64> = const { Cell::new(0) };
}

/// Whether the kernel keeps time by the counter (read once).
fn counter_usable() -> bool {
    match USABLE.load(Relaxed) {
        1 => true,
        2 => false,
        _ => {
            let ok = cfg!(target_arch = "x86_64")
                && std::fs::read_to_string(
                    "/sys/devices/system/clocksource/clocksource0/current_clocksource",
                )
                .is_ok_and(|s| s.trim() == "tsc");
            USABLE.store(if ok { 1 } else { 2 }, Relaxed);
            ok
        }
    }
}

/// The monotonic clock (CLOCK_MONOTONIC, the one std's Instant reads) in
/// nanoseconds, without std's subtraction and conversion, carried forward
/// by the time-stamp counter where that is sound (the module doc): it is
/// read on every poll and every send.
#[inline]
pub fn monotonic_nanos() -> u64 {
    let rate = RATE.load(Relaxed);
    if rate != 0 {
        let c = cycles();
        let (ac, an) = ANCHOR.get();
        let dc = c.wrapping_sub(ac);
        if an != 0 && dc < REANCHOR {
            let t = an + ((dc as u128 * rate as u128) >> 32) as u64;
            let t = t.max(LAST.get());
            LAST.set(t);
            return t;
        }
    }
    anchored()
}

/// A real reading, which anchors the thread's estimates (and measures the
/// counter's rate when the thread's base reading is old enough).
#[cold]
fn anchored() -> u64 {
    if !counter_usable() {
        return system_nanos();
    }
    let c0 = cycles();
    let n = system_nanos();
    let Some((c, n)) = anchor_pair(c0, n, cycles()) else {
        // interrupted between the readings (preempted): no anchor of
        // that pair, nor a rate; the next reading tries again
        ANCHOR.set((0, 0));
        let t = n.max(LAST.get());
        LAST.set(t);
        return t;
    };
    ANCHOR.set((c, n));
    let (bc, bn) = BASE.get();
    if bn == 0 || n < bn || c <= bc {
        BASE.set((c, n));
    } else if n - bn >= CALIBRATE {
        let rate = (((n - bn) as u128) << 32) / (c - bc) as u128;
        if rate > 0 && rate < (64u128 << 32) {
            RATE.store(rate as u64, Relaxed);
        }
        BASE.set((c, n));
    }
    let t = n.max(LAST.get());
    LAST.set(t);
    t
}

/// The anchor of a real reading `n` between counter readings `c0` and
/// `c1`: the counter halfway, when nothing came between them (at most
/// `PAIR_MAX` cycles apart, the second not before the first).
fn anchor_pair(c0: u64, n: u64, c1: u64) -> Option<(u64, u64)> {
    let d = c1.wrapping_sub(c0);
    (d <= PAIR_MAX).then(|| (c0 + d / 2, n))
}

/// Whether readings may be carried forward by the counter (`RAMP_CLOCK`,
/// applied by `am::init`): false makes every reading from now on a real
/// one.
pub fn clock_counter(allowed: bool) {
    if !allowed {
        USABLE.store(2, Relaxed);
        RATE.store(0, Relaxed);
    }
}

/// Whether readings are carried forward by the counter (tests).
#[cfg(test)]
pub fn uses_counter() -> bool {
    counter_usable()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_follow_the_system_clock_and_never_go_back() {
        // long enough for the rate to be measured and used
        let mut last = monotonic_nanos();
        let end = system_nanos() + 20 * CALIBRATE;
        let mut worst = 0i64;
        while system_nanos() < end {
            let before = system_nanos();
            let t = monotonic_nanos();
            let after = system_nanos();
            assert!(t >= last, "went back: {t} after {last}");
            last = t;
            // within the real readings around it, give or take the error
            // an estimate may have (a microsecond: far above it)
            let off = if t < before {
                before as i64 - t as i64
            } else {
                t.saturating_sub(after) as i64
            };
            worst = worst.max(off);
        }
        assert!(worst < 1000, "an estimate {worst} ns off the clock");
        if uses_counter() {
            assert_ne!(RATE.load(Relaxed), 0, "the counter's rate was measured");
        }
    }

    #[test]
    fn an_interrupted_reading_anchors_nothing() {
        assert_eq!(anchor_pair(1000, 7, 1100), Some((1050, 7)));
        assert_eq!(anchor_pair(1000, 7, 1000 + PAIR_MAX), Some((2000, 7)));
        // preempted between the counter readings
        assert_eq!(anchor_pair(1000, 7, 1001 + PAIR_MAX), None);
        // the counter going back (another core's, out of step)
        assert_eq!(anchor_pair(1000, 7, 999), None);
    }

    #[test]
    fn other_threads_read_the_same_clock() {
        let a = monotonic_nanos();
        let b = std::thread::spawn(monotonic_nanos).join().unwrap();
        let c = monotonic_nanos();
        assert!(a <= b && b <= c, "{a} {b} {c}");
    }
}
