//! The raw monotonic clock.

/// The monotonic clock (CLOCK_MONOTONIC, the one std's Instant reads) in
/// nanoseconds, without std's subtraction and conversion: it is read on
/// every poll and every send.
pub fn monotonic_nanos() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer; with
    // CLOCK_MONOTONIC it cannot fail on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
