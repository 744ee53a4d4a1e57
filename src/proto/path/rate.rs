//! A path's delivery rate, measured from its ACKs (issue 38 item 3:
//! striping spreads a message in proportion to it, `stripe.rs`).
//!
//! As BBR's delivery rate sample (Cheng et al., draft-cheng-iccrg-
//! delivery-rate-estimation): when a packet's ACK brings a round-trip
//! sample, the bytes the path delivered since the last ACK event before
//! that packet went, over the time since that event, is what the path
//! delivers while busy. A send on an idle path is an event too, so no
//! interval spans idleness; an interval that begins before the packet went
//! is at least its round trip (a burst of ACKs at one instant tells no
//! rate). The estimate is the largest sample over the last one to two
//! `RATE_WINDOW`s: a sample of a path short of data (app-limited: held by
//! the scheduler, a message's first round trip) is lower, never higher.

use crate::time::{Instant, Nanos, MILLIS};

/// The events kept: enough to reach back a round trip at the ACK rate of
/// a bulk flow (one ACK per one or two 64 KiB datagrams).
const MARKS: usize = 16;

/// The estimate is the largest sample of the last one to two of these.
pub const RATE_WINDOW: Nanos = 500 * MILLIS;

#[derive(Clone, Debug)]
pub struct DeliveryRate {
    /// The last events: (when, bytes the path had delivered by then).
    marks: [(Instant, u64); MARKS],
    next: usize,
    /// The largest sample of this window and of the one before, bytes/s.
    cur: u64,
    prev: u64,
    since: Instant,
}

impl Default for DeliveryRate {
    fn default() -> DeliveryRate {
        DeliveryRate {
            marks: [(Instant::ZERO, 0); MARKS],
            next: 0,
            cur: 0,
            prev: 0,
            since: Instant::ZERO,
        }
    }
}

impl DeliveryRate {
    /// The estimate, bytes/s (0: none yet).
    #[inline]
    pub fn get(&self) -> u64 {
        self.cur.max(self.prev)
    }

    /// Data goes on the path at `now` with nothing of it in flight; it
    /// had delivered `delivered` bytes.
    pub fn restart(&mut self, now: Instant, delivered: u64) {
        self.mark(now, delivered);
    }

    /// An ACK at `now` brought the path's total to `delivered` bytes;
    /// the newest packet it acknowledged on this path went at `sent`.
    pub fn delivered(&mut self, now: Instant, delivered: u64, sent: Instant) {
        if sent != Instant::ZERO && sent <= now {
            self.sample(now, delivered, sent);
        }
        self.mark(now, delivered);
    }

    fn mark(&mut self, now: Instant, delivered: u64) {
        self.marks[self.next] = (now, delivered);
        self.next = (self.next + 1) % MARKS;
    }

    fn sample(&mut self, now: Instant, delivered: u64, sent: Instant) {
        let rtt = now.since(sent);
        // the newest event at or before the packet went, else the oldest
        // kept (the packet was in flight since: the path busy)
        let mut from: Option<(Instant, u64)> = None;
        let mut oldest: Option<(Instant, u64)> = None;
        for k in 1..=MARKS {
            let m = self.marks[(self.next + MARKS - k) % MARKS];
            if m.0 == Instant::ZERO {
                break;
            }
            oldest = Some(m);
            if m.0 <= sent {
                from = Some(m);
                break;
            }
        }
        let Some((t, d)) = from.or(oldest) else {
            return;
        };
        let span = now.since(t);
        if span == 0 || span < rtt / 2 || delivered <= d {
            return;
        }
        let rate = ((delivered - d) as u128 * 1_000_000_000 / span as u128) as u64;
        if now.since(self.since) >= RATE_WINDOW {
            self.prev = self.cur;
            self.cur = 0;
            self.since = now;
        }
        self.cur = self.cur.max(rate);
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
        r.restart(t0, 0);
        // 10 MB/s: a 10_000-byte packet every ms, each ACK a ms apart, the
        // round trip 3 ms (a queue of 2)
        let mut total = 0;
        for k in 1..=20u64 {
            total += 10_000;
            let at = t0.plus(k * MILLIS);
            r.delivered(at, total, Instant(at.0 - 3 * MILLIS));
        }
        let est = r.get();
        assert!((9_000_000..=11_000_000).contains(&est), "{est}");
        // idle, then one packet alone (10 KB in a round trip of 2 ms): no
        // sample spans the idle time, and a lower one does not lower it
        let t1 = t0.plus(200 * MILLIS);
        r.restart(t1, total);
        r.delivered(t1.plus(2 * MILLIS), total + 10_000, t1);
        assert_eq!(r.get(), est);
    }

    #[test]
    fn acks_at_one_instant_tell_no_rate() {
        let mut r = DeliveryRate::default();
        let t0 = Instant(1_000_000_000);
        r.delivered(t0, 10_000, Instant::ZERO);
        r.delivered(t0.plus(MICROS), 1_000_000, Instant(t0.0 - 99 * MICROS));
        assert_eq!(r.get(), 0);
    }

    #[test]
    fn the_estimate_follows_a_slower_path_after_two_windows() {
        let mut r = DeliveryRate::default();
        let mut now = Instant(1_000_000_000);
        r.restart(now, 0);
        let mut total = 0;
        for (rate_kb_per_ms, ms) in [(40u64, 300u64), (10, 2 * RATE_WINDOW / MILLIS + 10)] {
            for _ in 0..ms {
                now = now.plus(MILLIS);
                total += rate_kb_per_ms * 1000;
                r.delivered(now, total, Instant(now.0 - 2 * MILLIS));
            }
        }
        let est = r.get();
        assert!((9_000_000..=11_000_000).contains(&est), "{est}");
    }
}
