//! A path's delivery rate, measured from its ACKs (issue 38 item 3:
//! striping spreads a message in proportion to it, `stripe.rs`; the path
//! report's `rate`).
//!
//! The bytes the path delivered over the time it was busy, both summed
//! with weights that decay over `RATE_HALF_LIFE` of busy time: each
//! interval between two ACK events adds the bytes its second one
//! acknowledged and its length. Busy: a send on an idle path begins a new
//! period and the interval to its first ACK (the pipe filling: a round
//! trip for a packet) is not counted, so idleness and a lone packet
//! neither lower nor raise it; the estimate holds across idle time. Why a
//! weighted mean, not the largest sample (BBR's): on real links samples
//! run far above the link's rate and a maximum keeps them. A token bucket
//! (tc's tbf, a shaped port) passes a burst (its bucket, hundreds of KB)
//! at line rate after idleness, the receiver's and the sender's time
//! slices bunch ACKs, and MTU-sized datagrams bring an ACK event every
//! few KB: on two 200 Mbit/s rails in namespaces the largest samples
//! were 140-750 MB/s (25 MB/s links) and striping put nearly everything
//! on one path. A weighted mean counts a burst once, with its short time,
//! and a bunch of ACKs with the gap before it.

use crate::time::{Instant, Nanos, MILLIS};

/// The weight of an interval halves after this much busy time since.
pub const RATE_HALF_LIFE: Nanos = 200 * MILLIS;

/// Busy time measured before there is an estimate.
pub const RATE_MIN_TIME: Nanos = 2 * MILLIS;

#[derive(Clone, Debug, Default)]
pub struct DeliveryRate {
    /// The last ACK event of this busy period: (when, bytes the path had
    /// delivered by then); None when idle or waiting for the first ACK.
    last: Option<(Instant, u64)>,
    /// Decayed sums: bytes delivered, and busy time (ns) they took.
    bytes: f64,
    time: f64,
}

impl DeliveryRate {
    /// The estimate, bytes/s (0: none yet).
    #[inline]
    pub fn get(&self) -> u64 {
        if self.time < RATE_MIN_TIME as f64 {
            return 0;
        }
        (self.bytes * 1e9 / self.time) as u64
    }

    /// Data goes on the path with nothing of it in flight: a busy period
    /// begins.
    pub fn restart(&mut self) {
        self.last = None;
    }

    /// An ACK at `now` brought the path's total to `delivered` bytes;
    /// `busy`: a datagram or more of it still in flight. An interval
    /// whose ACK left less (a message's tail on this path, a path the
    /// scheduler gave little), or longer than `stall` (the path's
    /// smoothed round trip: a busy path is ACKed more often; its packets
    /// waited for a timeout and went on another path), may have waited
    /// on the sender or a loss, not the link: counted only when it raises
    /// the estimate (BBR's rule for application-limited samples).
    pub fn delivered(&mut self, now: Instant, delivered: u64, busy: bool, stall: Nanos) {
        if let Some((t, d)) = self.last {
            let dt = now.since(t) as f64;
            let dd = delivered.saturating_sub(d) as f64;
            let limited = !busy || dt > stall as f64;
            if limited && dd * 1e9 < self.get() as f64 * dt {
                self.last = Some((now, delivered));
                return;
            }
            // weights halve every RATE_HALF_LIFE: 2^(-dt / half life),
            // to first order (dt is a small part of it)
            let keep = 1.0 / (1.0 + dt * std::f64::consts::LN_2 / RATE_HALF_LIFE as f64);
            self.bytes = self.bytes * keep + dd;
            self.time = self.time * keep + dt;
        }
        // (after idleness, the first ACK ends the pipe's filling:
        // counted from here)
        self.last = Some((now, delivered));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MICROS;

    #[test]
    fn a_busy_path_measures_its_ack_rate_and_idleness_does_not_lower_it() {
        let mut r = DeliveryRate::default();
        let t0 = Instant(1_000_000_000);
        assert_eq!(r.get(), 0);
        r.restart();
        // 10 MB/s: a 10_000-byte packet every ms, each ACK a ms apart, the
        // round trip 3 ms (a queue of 2)
        let mut total = 0;
        for k in 3..=20u64 {
            total += 10_000;
            r.delivered(t0.plus(k * MILLIS), total, true, Nanos::MAX);
        }
        let est = r.get();
        assert!((9_900_000..=10_100_000).contains(&est), "{est}");
        // idle, then one packet alone (10 KB in a round trip of 2 ms): no
        // sample spans the idle time nor the lone packet's round trip
        let t1 = t0.plus(200 * MILLIS);
        r.restart();
        r.delivered(t1.plus(2 * MILLIS), total + 10_000, false, Nanos::MAX);
        assert_eq!(r.get(), est);
    }

    #[test]
    fn acks_at_one_instant_tell_no_rate() {
        let mut r = DeliveryRate::default();
        let t0 = Instant(1_000_000_000);
        r.delivered(t0, 10_000, true, Nanos::MAX);
        r.delivered(t0.plus(MICROS), 1_000_000, true, Nanos::MAX);
        assert_eq!(r.get(), 0);
    }

    /// A tbf-shaped link (25 MB/s, a bucket of 565 KB) after idleness:
    /// the bucket goes at 500 MB/s, then the link's rate; ACKs every
    /// 3 KB (120 us), held for the first 10 ms of every 50 and told at
    /// once (a peer off the CPU). Within 10% of the link's rate after 300 ms busy.
    #[test]
    fn a_token_bucket_burst_and_bunched_acks_do_not_hold_the_estimate_up() {
        let mut r = DeliveryRate::default();
        let mut now = Instant(1_000_000_000);
        r.restart();
        let mut total = 0u64;
        let step = 3_000u64;
        for _ in 0..565_000 / step {
            now = now.plus(step * 1_000_000_000 / 500_000_000);
            total += step;
            r.delivered(now, total, true, Nanos::MAX);
        }
        let end = now.plus(300 * MILLIS);
        let mut k = 0;
        while now < end {
            now = now.plus(step * 1_000_000_000 / 25_000_000);
            total += step;
            k += 1;
            // one slice in five (10 ms of 50) the ACKs wait, then come at once
            if k % 416 >= 83 {
                r.delivered(now, total, true, Nanos::MAX);
            }
        }
        let est = r.get();
        println!("token bucket: estimate {est} B/s (link 25,000,000)");
        assert!((22_500_000..=27_500_000).contains(&est), "{est}");
    }

    #[test]
    fn the_estimate_follows_a_slower_path_within_a_second() {
        let mut r = DeliveryRate::default();
        let mut now = Instant(1_000_000_000);
        r.restart();
        let mut total = 0;
        for (rate_kb_per_ms, ms) in [(40u64, 300u64), (10, 1_000)] {
            for _ in 0..ms {
                now = now.plus(MILLIS);
                total += rate_kb_per_ms * 1000;
                r.delivered(now, total, true, Nanos::MAX);
            }
        }
        let est = r.get();
        assert!((9_000_000..=11_000_000).contains(&est), "{est}");
    }
}
