//! A bottleneck link in the simulated networks (`SimNet`, the `World`'s,
//! the rails harness's): a rate in bytes per second and a drop-tail FIFO
//! queue of at most `limit` bytes, as a switch port or a shaped link
//! (`tc tbf`) holds. A datagram that reaches it at `now` leaves at
//! `max(now, busy_until) + len / rate`, or is dropped when the bytes
//! queued before it and its own would exceed the limit.
//!
//! With a burst (`with_burst`, `tbf`: tc's token bucket, `burst 565kb` on
//! the real rails, `scripts/netns.sh`) a bucket of `burst` bytes fills at
//! the rate and a datagram leaves as soon as the bucket holds its bytes
//! (at once: the line rate behind the shaper is taken as infinite), so
//! after idleness a burst's worth goes at once and the rest at the rate.
//! In one clock (GCRA's): `busy_until` is when a rate-only link would be
//! through (`tat`, the bucket full again), a datagram leaves at
//! `max(now, tat' - burst / rate)` with `tat' = max(now, tat) + len /
//! rate`; the bytes waiting for tokens are `(tat - now) * rate - burst`.
//! Burst 0: the plain link above. Deterministic:
//! virtual time only, no randomness (the fault injector's loss, delay and
//! reordering apply after it, on the way to the receiver).
//!
//! A network holds a list of them, each with the datagrams it carries (by
//! sender and receiver: one receiver's downlink for incast, a shared
//! link for several flows); a datagram goes through the first that
//! carries it.

use crate::time::{Instant, Nanos};

/// One bottleneck: its rate, its queue, what it did.
#[derive(Clone, Debug)]
pub struct Bottleneck {
    /// Bytes per second.
    pub rate: u64,
    /// Bytes the queue holds at most (the datagram being sent included).
    pub limit: u64,
    /// The token bucket's size, bytes (0: none).
    pub burst: u64,
    /// When a link of the rate alone would be through what it was given
    /// (with no burst: when the last datagram queued has left).
    busy_until: Instant,
    pub stats: BottleneckStats,
}

/// What a bottleneck carried and dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BottleneckStats {
    pub datagrams: u64,
    pub bytes: u64,
    pub dropped: u64,
    pub dropped_bytes: u64,
    /// The longest a datagram waited in the queue (before its own bytes left).
    pub max_queue_delay: Nanos,
    /// The sum of the waits (mean: / datagrams).
    pub sum_queue_delay: Nanos,
}

impl Bottleneck {
    /// A link of `rate` bytes per second with a queue of `limit` bytes.
    pub fn new(rate: u64, limit: u64) -> Bottleneck {
        Bottleneck {
            rate: rate.max(1),
            limit,
            burst: 0,
            busy_until: Instant::ZERO,
            stats: BottleneckStats::default(),
        }
    }

    /// A link of `mbit` Mbit/s with the queue of a shaped link: 30 ms of
    /// its rate plus a burst of four 64 KiB datagrams.
    pub fn shaped_mbit(mbit: u64) -> Bottleneck {
        let rate = mbit * 1_000_000 / 8;
        Bottleneck::new(rate, rate * 30 / 1000 + 4 * 65_536)
    }

    /// The same link with a token bucket of `burst` bytes (full at first).
    pub fn with_burst(mut self, burst: u64) -> Bottleneck {
        self.burst = burst;
        self
    }

    /// As `tc qdisc ... tbf rate RATE burst BURST latency LATENCY`: `rate`
    /// bytes/s, a bucket of `burst` bytes, a queue of what waits at most
    /// `latency` (tc's limit: `rate * latency + burst`).
    pub fn tbf(rate: u64, burst: u64, latency: Nanos) -> Bottleneck {
        let limit = (rate as u128 * latency as u128 / 1_000_000_000) as u64 + burst;
        Bottleneck::new(rate, limit).with_burst(burst)
    }

    /// How long `len` bytes take on the link.
    pub fn serialization(&self, len: usize) -> Nanos {
        (len as u128 * 1_000_000_000 / self.rate as u128) as Nanos
    }

    /// Bytes queued at `now` (not yet sent: waiting for tokens).
    pub fn backlog(&self, now: Instant) -> u64 {
        let wait = self.busy_until.0.saturating_sub(now.0);
        let owed = (wait as u128 * self.rate as u128 / 1_000_000_000) as u64;
        owed.saturating_sub(self.burst)
    }

    /// A datagram of `len` bytes reaches the queue at `now`: when its last
    /// byte leaves, or None when the queue drops it.
    pub fn enqueue(&mut self, now: Instant, len: usize) -> Option<Instant> {
        if self.backlog(now) + len as u64 > self.limit {
            self.stats.dropped += 1;
            self.stats.dropped_bytes += len as u64;
            return None;
        }
        let own = self.serialization(len);
        self.busy_until = self.busy_until.max(now).plus(own);
        let tokens = self.serialization(self.burst as usize);
        let leave = Instant(self.busy_until.0.saturating_sub(tokens)).max(now);
        let wait = leave.since(now).saturating_sub(own);
        self.stats.max_queue_delay = self.stats.max_queue_delay.max(wait);
        self.stats.sum_queue_delay += wait;
        self.stats.datagrams += 1;
        self.stats.bytes += len as u64;
        Some(leave)
    }
}

/// Which datagrams a bottleneck carries: (sender, receiver) -> whether.
pub type Carries<A> = Box<dyn Fn(A, A) -> bool + Send>;

/// A network's bottlenecks, each with what it carries.
pub struct Bottlenecks<A> {
    links: Vec<(Carries<A>, Bottleneck)>,
}

impl<A: Copy> Default for Bottlenecks<A> {
    fn default() -> Self {
        Bottlenecks { links: Vec::new() }
    }
}

impl<A: Copy> Bottlenecks<A> {
    /// Adds bottleneck `b` for the datagrams `carries` says; returns its index.
    pub fn add(&mut self, b: Bottleneck, carries: Carries<A>) -> usize {
        self.links.push((carries, b));
        self.links.len() - 1
    }

    pub fn get(&self, i: usize) -> &Bottleneck {
        &self.links[i].1
    }

    /// A datagram from `from` to `to` of `len` bytes sent at `now`: when
    /// it leaves its bottleneck (`now` if none carries it), or None when
    /// dropped there.
    #[inline]
    pub fn pass(&mut self, now: Instant, from: A, to: A, len: usize) -> Option<Instant> {
        if self.links.is_empty() {
            return Some(now);
        }
        match self.links.iter_mut().find(|(c, _)| c(from, to)) {
            Some((_, b)) => b.enqueue(now, len),
            None => Some(now),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MILLIS;

    #[test]
    fn fifo_at_the_rate_and_drop_tail_past_the_limit() {
        // 1 MB/s: 1,000 bytes take 1 ms; a queue of 2,500 bytes
        let mut b = Bottleneck::new(1_000_000, 2_500);
        let t0 = Instant(10 * MILLIS);
        assert_eq!(b.enqueue(t0, 1000), Some(t0.plus(MILLIS)));
        assert_eq!(b.enqueue(t0, 1000), Some(t0.plus(2 * MILLIS)));
        assert_eq!(b.backlog(t0), 2000);
        assert_eq!(b.enqueue(t0, 1000), None, "3,000 bytes > 2,500");
        assert_eq!(b.enqueue(t0, 500), Some(t0.plus(2 * MILLIS + MILLIS / 2)));
        // drained by the time the queue is empty again
        let later = t0.plus(10 * MILLIS);
        assert_eq!(b.backlog(later), 0);
        assert_eq!(b.enqueue(later, 1000), Some(later.plus(MILLIS)));
        assert_eq!((b.stats.datagrams, b.stats.dropped), (4, 1));
        assert_eq!(b.stats.max_queue_delay, 2 * MILLIS);
    }

    #[test]
    fn a_token_bucket_passes_its_burst_at_once_then_the_rate() {
        // 1 MB/s, a bucket of 3,000 bytes, 5 ms of queue (limit 8,000)
        let mut b = Bottleneck::tbf(1_000_000, 3_000, 5 * MILLIS);
        assert_eq!(b.limit, 8_000);
        let t0 = Instant(10 * MILLIS);
        // the full bucket: three at once, the next as its tokens come
        for _ in 0..3 {
            assert_eq!(b.enqueue(t0, 1000), Some(t0));
        }
        assert_eq!(b.backlog(t0), 0);
        assert_eq!(b.enqueue(t0, 1000), Some(t0.plus(MILLIS)));
        assert_eq!(b.enqueue(t0, 1000), Some(t0.plus(2 * MILLIS)));
        assert_eq!(b.backlog(t0), 2000);
        // the queue holds 8,000 bytes waiting: 6 more, the 7th dropped
        for k in 3..9 {
            assert_eq!(b.enqueue(t0, 1000), Some(t0.plus(k * MILLIS)));
        }
        assert_eq!(b.enqueue(t0, 1000), None);
        assert_eq!(b.stats.max_queue_delay, 7 * MILLIS);
        // idle 2 ms past the last: 2,000 bytes of tokens, not 3,000
        let t1 = t0.plus(10 * MILLIS);
        assert_eq!(b.enqueue(t1, 1000), Some(t1));
        assert_eq!(b.enqueue(t1, 1000), Some(t1));
        assert_eq!(b.enqueue(t1, 1000), Some(t1.plus(MILLIS)));
        // long idle: the bucket full again, never more
        let t2 = t1.plus(100 * MILLIS);
        for _ in 0..3 {
            assert_eq!(b.enqueue(t2, 1000), Some(t2));
        }
        assert_eq!(b.enqueue(t2, 1000), Some(t2.plus(MILLIS)));
    }

    #[test]
    fn a_datagram_goes_through_the_first_bottleneck_that_carries_it() {
        let mut n: Bottlenecks<u32> = Bottlenecks::default();
        let t0 = Instant(MILLIS);
        assert_eq!(n.pass(t0, 0, 1, 1000), Some(t0));
        n.add(
            Bottleneck::new(1_000_000, 10_000),
            Box::new(|_, to| to == 9),
        );
        assert_eq!(n.pass(t0, 0, 1, 1000), Some(t0), "not carried");
        assert_eq!(n.pass(t0, 0, 9, 1000), Some(t0.plus(MILLIS)));
        assert_eq!(n.pass(t0, 5, 9, 1000), Some(t0.plus(2 * MILLIS)), "incast");
        assert_eq!(n.get(0).stats.bytes, 2000);
    }
}
