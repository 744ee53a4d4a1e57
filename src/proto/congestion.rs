//! Congestion control and pacing of one path (`path.rs`): what the network
//! between us and the peer may hold, and how fast a window may leave.
//! Both send channels of a peer share it; credits (the layer above) bound
//! what the receiver must buffer, this bounds what the network holds, and
//! a message waits for both.
//!
//! - The window (`cwnd`, bytes) after NewReno (RFC 5681, 6582): slow start
//!   to `ssthresh`, the first one also until the flow holds
//!   `RANDOM_BACKLOG` largest datagrams in the bottleneck's queue (the estimate below: slow start
//!   ends by delay, as Vegas and HyStart end it, not by overflowing the
//!   queue), then `INCREASE` bytes more per window acknowledged
//!   (`QUEUED_SLOWDOWN` times less while that queue is held, after Veno);
//!   grown only while the flight used at least half of it (RFC 7661).
//!   A queue under `PROBE_DELAY` no loss showed to overflow (loopback's
//!   receiver socket) is probed (RFC 9406) until a congestion loss or NACK.
//!   The initial window is 4 largest datagrams (at least 64 KiB).
//! - Bytes in flight are the send channels' exact counters
//!   (`SendChannel::outstanding`: sent, not acknowledged, SACKed or taken
//!   as lost), checked by `invariants.rs` against a walk over the flight.
//!   New data goes while they are below the window (one packet may pass
//!   it); retransmissions always go (they replace bytes taken as lost) and
//!   count in flight again.
//! - A loss (RACK, a reordering timer) reduces the window once per
//!   recovery episode: a loss of a packet sent before the episode began
//!   is part of it. Congestion or random loss is told by TCP Veno's rule
//!   (Fu & Liew 2003): the queue the flow holds is estimated from the
//!   smoothed round trip over the least one seen lately,
//!   `backlog = cwnd * (1 - min_rtt / rtt)` (the least round trip over
//!   two 10 s windows, seeded by the handshake's); a loss with less than
//!   `RANDOM_BACKLOG` largest datagrams (or half the window) queued is
//!   random (the fault injector, a bad cable): the window shrinks to 0.8;
//!   else it is congestion: to 0.7 (CUBIC's beta; with 0.5, flows that
//!   took their losses as random took three times the share of one that
//!   did not). The samples of 64 KiB datagrams include their
//!   serialization, the handshake's do not: on a slow link a full-size
//!   flow's losses are taken as congestion (the safe side). A tail-loss
//!   probe and a NACK (the receiver's buffer, not the network) are no
//!   congestion.
//! - A retransmission timeout collapses the window to the minimum (two
//!   largest datagrams: one packet always goes when nothing is in flight)
//!   and F-RTO's verdict of a spurious timeout undoes it.
//! - Pacing: packets leave at `gain * cwnd / standing` (2 in slow start,
//!   1.25 after, as Linux), by an earliest departure time with a small
//!   burst allowance; loopback's huge rate never waits. Held back, they go
//!   at the peer's `Timer::Pace`. `standing` is the least round trip over
//!   the last one to two smoothed ones (Copa's standing round trip), not
//!   the smoothed one: on a loaded host a process off the CPU for a time
//!   slice (ms) stretches the samples taken across it, the mean follows
//!   them and paced a path far below what it carries (bulk puts over
//!   loopback at 0.1x of `RAMP_CC=off`), while the least over a round
//!   trip still sees the path and its queue (`am/pace_world_tests.rs`).
//!
//! `ProtoConfig::congestion` off (`RAMP_CC=off`) leaves the window at its
//! largest and pacing off: the packet window alone, as before.
//!
//! Why these rules, measured in `tests/proto_sim_congestion.rs` (the
//! bottlenecks of `sim/bottleneck.rs`): x0.5 let flows that took losses
//! as random take three times the share of one that did not (Jain 0.89 in incast); growth by one 64 KiB datagram per
//! round trip overflowed a queue of ten such every few hundred ms; the least
//! round trip seeded by the handshake keeps a flow whose first data met a
//! full queue from taking every loss for random; 10 initial datagrams from
//! four senders and slow start to the first loss overflowed the queue
//! (retransmitted 17%, now 5% in incast, under 2% for one or two senders).

use crate::stats::Statistics;
use crate::time::{Instant, Nanos, MICROS, MILLIS};

/// Bytes a packet counts in flight beyond its payload: about its header
/// and trailer (so a window of empty requests is bounded too).
pub const PACKET_OVERHEAD: u64 = 64;

/// Bytes a fragment of `len` payload bytes counts in flight.
#[inline]
pub fn flight_len(len: u32) -> u64 {
    len as u64 + PACKET_OVERHEAD
}

/// The initial window, in largest datagrams (TCP's IW10, RFC 6928, is 15
/// KB; ten of ramp's 64 KiB datagrams from four senders at once overflowed
/// a 200 Mbit/s link's 30 ms queue in the simulator; four did less, and
/// loopback's slow start doubles them in a few tens of microseconds).
const INITIAL_DATAGRAMS: u64 = 4;
/// The initial window's least bytes (small datagrams: 1,500 bytes).
const INITIAL_BYTES: u64 = 64 * 1024;
/// The least window, in largest datagrams.
const MIN_DATAGRAMS: u64 = 2;
/// A loss with less than this many largest datagrams queued (Veno's
/// beta) is random.
const RANDOM_BACKLOG: u64 = 3;
/// Window kept after a congestion loss and after a random one, in 1/16.
const BETA_CONGESTION: u64 = 11;
const BETA_RANDOM: u64 = 13;
/// Bytes the window grows by per window acknowledged in congestion
/// avoidance (a few Ethernet frames: the largest datagram, 64 KiB, would
/// overflow a queue of ten such every ten round trips).
const INCREASE: u64 = 16 * 1024;
/// How many times slower the window grows while the flow holds
/// `RANDOM_BACKLOG` datagrams in the bottleneck's queue (Veno grows half
/// as fast; measured: four senders into one receiver overflowed its queue
/// every few round trips at half).
const QUEUED_SLOWDOWN: u64 = 8;
/// Pacing gains in 1/4: 2 in slow start, 1.25 in congestion avoidance.
const GAIN_SLOW_START: u64 = 8;
const GAIN_AVOIDANCE: u64 = 5;
/// Pacing credit an idle path keeps, beyond two largest datagrams.
const BURST_TIME: Nanos = 100 * MICROS;
/// The least round trip is the least over two windows of this length
/// (a route that changes is learned within two of them).
const MIN_RTT_WINDOW: Nanos = 10_000 * MILLIS;
const CONGESTED_FOR: Nanos = MIN_RTT_WINDOW; // a loss holds growth this long
/// The queue delay a probe stops at (a shaped link's 30 ms is not probed).
const PROBE_DELAY: Nanos = 10 * MILLIS;
/// A probe's growth per window acknowledged (RFC 9406's 4: incast worse).
const CSS_DIVISOR: u64 = 16;
/// Fixed-point shift of the pacing cost per byte.
const PACE_SHIFT: u32 = 16;
/// Pacing rates from 2.5 GB/s (20 Gbit/s: 64 KiB in 26 us) are not
/// paced: loopback's, measured, were held hundreds of times a second by
/// a clock reading carried forward, for nothing.
const UNPACED_COST: u64 = (1 << PACE_SHIFT) * 2 / 5;

mod news;
mod windowed_min;
pub use news::{FlightNews, Gate};
use windowed_min::WindowedMin;

/// Counters of what the controller did (`Statistics`' `cc_*` fields).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CcCounts {
    /// Windows reduced for congestion.
    pub reductions: u64,
    /// Losses taken as random (the window reduced gently).
    pub random_losses: u64,
    /// Windows collapsed by a retransmission timeout.
    pub timeouts: u64,
    /// Collapses undone (F-RTO: the timeout was spurious).
    pub undone: u64,
    /// Times pacing held packets back.
    pub paced: u64,
}

/// One path's congestion controller.
#[derive(Clone, Debug)]
pub struct Congestion {
    on: bool,
    /// The window, bytes.
    cwnd: u64,
    ssthresh: u64,
    /// Bytes delivered toward the next step of congestion avoidance.
    acked: u64,
    /// The largest datagram, the least and the largest window.
    mss: u64,
    min_cwnd: u64,
    max_cwnd: u64,
    /// When the current recovery episode began (losses of packets sent
    /// before are part of it).
    recovery: Option<Instant>,
    /// Window and threshold before the last retransmission timeout.
    undo: Option<(u64, u64)>,
    /// When the last loss taken as congestion was (`CONGESTED_FOR`).
    congested: Option<Instant>,
    /// Smoothed round trip (1/8 gain) and the least lately.
    srtt: Option<Nanos>,
    min_rtt: WindowedMin,
    /// The least round trip over the last one to two smoothed round trips
    /// (Copa's standing round trip): the path's, without the stretch of
    /// a peer or a sender off the CPU.
    standing: WindowedMin,
    /// Earliest departure of the next byte (pacing).
    pace_at: Instant,
    /// Pacing cost of a byte, ns << PACE_SHIFT (0: not paced yet).
    cost: u64,
    /// The round trip `cost` was reckoned by (None: the window changed
    /// since, `on_nack`): a sample that leaves it (or, unpaced, lowers
    /// it) leaves `cost` as it is, unreckoned.
    paced_by: Option<Nanos>,
    pub counts: CcCounts,
}

impl Congestion {
    /// A new path's controller: `max_datagram` bytes the largest packet,
    /// `max_flight` bytes the most the packet windows let be in flight.
    pub fn new(on: bool, max_datagram: usize, max_flight: u64) -> Congestion {
        let mss = max_datagram as u64;
        let min_cwnd = MIN_DATAGRAMS * mss;
        let max_cwnd = max_flight.max(min_cwnd);
        let cwnd = if on {
            (INITIAL_DATAGRAMS * mss)
                .max(INITIAL_BYTES)
                .clamp(min_cwnd, max_cwnd)
        } else {
            max_cwnd
        };
        Congestion {
            on,
            cwnd,
            ssthresh: u64::MAX,
            acked: 0,
            mss,
            min_cwnd,
            max_cwnd,
            recovery: None,
            undo: None,
            congested: None,
            srtt: None,
            min_rtt: WindowedMin::new(),
            standing: WindowedMin::new(),
            pace_at: Instant::ZERO,
            cost: 0,
            paced_by: None,
            counts: CcCounts::default(),
        }
    }

    /// What `new` was given, as far as it shapes a fresh controller:
    /// `Congestion::new(on, max_datagram, max_flight)` of these makes one
    /// like this one was when new (kept instead of a whole template).
    pub fn settings(&self) -> (bool, usize, u64) {
        (self.on, self.mss as usize, self.max_cwnd)
    }

    /// Whether it limits anything (`ProtoConfig::congestion`).
    #[inline]
    pub fn is_on(&self) -> bool {
        self.on
    }

    /// The window, bytes.
    pub fn cwnd(&self) -> u64 {
        self.cwnd
    }

    pub fn srtt(&self) -> Option<Nanos> {
        self.srtt
    }

    /// The round trip the pacing rate is reckoned by: the standing one
    /// (the smoothed one until there is one).
    pub fn standing_rtt(&self) -> Option<Nanos> {
        Some(self.standing.get())
            .filter(|&r| r != Nanos::MAX)
            .or(self.srtt)
    }

    /// The least round trip lately.
    pub fn min_rtt(&self) -> Option<Nanos> {
        Some(self.min_rtt.get()).filter(|&r| r != Nanos::MAX)
    }

    /// The pacing rate, bytes per second (None: not paced).
    pub fn pacing_rate(&self) -> Option<u64> {
        (self.cost != 0).then(|| ((1_000_000_000u128 << PACE_SHIFT) / self.cost as u128) as u64)
    }

    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// What new data may go now, `in_flight` bytes in flight.
    #[inline]
    pub fn gate(&self, now: Instant, in_flight: u64) -> Gate {
        if !self.on {
            return Gate::OPEN;
        }
        let room = self.cwnd.saturating_sub(in_flight);
        if self.cost == 0 {
            return Gate {
                room,
                slack: i64::MAX,
                cost: 0,
            };
        }
        // credit kept while idle: two largest datagrams and BURST_TIME
        let burst = ((2 * self.mss * self.cost) >> PACE_SHIFT) + BURST_TIME;
        let base = self.pace_at.0.max(now.0.saturating_sub(burst));
        Gate {
            room,
            slack: now.0 as i64 - base as i64,
            cost: self.cost,
        }
    }

    /// A transmit with `gate` is over at `now`: the pacing clock moves on.
    /// Returns when the next packet may go, if pacing holds it back.
    #[inline]
    pub fn sent(&mut self, now: Instant, gate: &Gate) -> Option<Instant> {
        if gate.cost == 0 {
            return None;
        }
        self.pace_at = Instant((now.0 as i64 - gate.slack).max(0) as u64);
        (gate.slack < 0).then_some(self.pace_at)
    }

    /// Pacing held packets back.
    pub fn held(&mut self, stats: &mut Statistics) {
        self.counts.paced += 1;
        stats.cc_paced += 1;
    }

    /// Takes what a channel's flight told; `in_flight` bytes are in flight
    /// now (after it).
    #[inline(always)]
    pub fn on_news(&mut self, now: Instant, n: &FlightNews, in_flight: u64, s: &mut Statistics) {
        if !self.on {
            return;
        }
        if let Some(r) = n.rtt {
            self.on_rtt(now, r);
        }
        if n.frto.is_some() || n.lost > 0 {
            self.on_events(now, n, s);
        }
        // (tested here: the usual ACK, of a window that does not limit
        // the flow, makes no call)
        if n.delivered > 0 && !self.unlimited(n.delivered, in_flight) {
            self.on_delivered(now, n.delivered, in_flight);
        }
    }

    /// `on_news` of an F-RTO verdict or a loss (rare).
    #[inline(never)]
    fn on_events(&mut self, now: Instant, n: &FlightNews, s: &mut Statistics) {
        match n.frto {
            Some(true) => self.on_spurious_timeout(s),
            Some(false) => self.undo = None,
            None => {}
        }
        if n.lost > 0 {
            self.on_loss(now, n.lost_sent, s);
        }
    }

    /// Whether `bytes` delivered with `in_flight` left show a flow the
    /// window did not limit: no growth (RFC 7661).
    #[inline]
    fn unlimited(&self, bytes: u64, in_flight: u64) -> bool {
        in_flight + bytes < self.cwnd / 2
    }

    /// The handshake's round trip (small packets, before any data: no
    /// queue of ours): the least round trip from the start, so that a
    /// flow whose first data met a full queue does not take that queue
    /// for the path (and every loss in it for random).
    pub fn on_handshake_rtt(&mut self, now: Instant, r: Nanos) {
        // (under a microsecond: a clock reading carried forward, not a
        // round trip; a least of ~0 would take every window for a queue)
        if r >= MICROS {
            self.min_rtt.sample(now, r, MIN_RTT_WINDOW);
        }
    }

    fn on_rtt(&mut self, now: Instant, r: Nanos) {
        let r = r.max(1);
        let srtt = match self.srtt {
            Some(s) => s - s / 8 + r / 8,
            None => r,
        };
        self.srtt = Some(srtt);
        if r >= MICROS {
            // (under a microsecond: sent and acknowledged under one clock
            // reading, not a round trip)
            self.min_rtt.sample(now, r, MIN_RTT_WINDOW);
            self.standing.sample(now, r, srtt);
        }
        // (the usual sample leaves the standing round trip, or lowers an
        // unpaced one: the cost stays; not reckoned again)
        let unchanged = match (self.paced_by, self.standing_rtt()) {
            (Some(by), Some(r)) => r == by || (self.cost == 0 && r < by),
            _ => false,
        };
        if !unchanged {
            self.update_pacing();
        }
    }

    fn update_pacing(&mut self) {
        if !self.on {
            return;
        }
        let Some(srtt) = self.standing_rtt() else {
            return;
        };
        let gain = if self.in_slow_start() {
            GAIN_SLOW_START
        } else {
            GAIN_AVOIDANCE
        };
        // cost per byte = srtt / (gain * cwnd), gain in quarters (u64: a
        // round trip under 2^40 ns, 18 minutes, shifts without overflow;
        // one division per sample, no u128 one)
        self.paced_by = Some(srtt);
        let srtt = srtt.min(1 << 40);
        let (x, d) = (srtt << (PACE_SHIFT + 2), (gain * self.cwnd).max(1));
        // faster than UNPACED_RATE the AM layer's clock (a reading may be
        // carried forward ~50 us) cannot space packets: none held. (x / d
        // < UNPACED_COST exactly when x < UNPACED_COST * d: loopback's
        // samples are told so without a division; a product past u64,
        // saturated, is past x, at most 2^58, all the same)
        self.cost = if x < UNPACED_COST.saturating_mul(d) {
            0
        } else {
            x / d
        };
    }

    /// Whether a congestion loss (or NACK) was lately (`CONGESTED_FOR`).
    fn congested(&self, now: Instant) -> bool {
        self.congested
            .is_some_and(|at| now.since(at) < CONGESTED_FOR)
    }

    fn on_delivered(&mut self, now: Instant, bytes: u64, in_flight: u64) {
        if !self.on || self.unlimited(bytes, in_flight) {
            return;
        }
        if self.in_slow_start() {
            self.cwnd = (self.cwnd + bytes).min(self.ssthresh);
            if self.ssthresh == u64::MAX && self.backlog() >= RANDOM_BACKLOG * self.mss {
                // a queue builds at the bottleneck: the first slow start
                // ends before it overflows (as HyStart ends it by delay;
                // after a timeout it goes on to `ssthresh`: a loaded host's
                // late answers look like a queue too)
                self.ssthresh = self.cwnd;
            }
        } else if !self.congested(now)
            && self.srtt.unwrap_or(0) < self.min_rtt().unwrap_or(0) + PROBE_DELAY
        {
            // no loss showed this short queue overflows: probe it
            self.cwnd += bytes / CSS_DIVISOR;
        } else {
            self.acked += bytes;
            if self.acked >= self.cwnd {
                self.acked -= self.cwnd;
                // Veno: with a queue of ours at the bottleneck the window
                // grows slower (the link is full; more only fills the queue)
                let queued = self.backlog() >= RANDOM_BACKLOG * self.mss;
                self.cwnd += if queued {
                    INCREASE / QUEUED_SLOWDOWN
                } else {
                    INCREASE
                };
            }
        }
        self.cwnd = self.cwnd.min(self.max_cwnd);
        self.update_pacing();
    }

    /// The queue this flow holds at the bottleneck, estimated (Veno).
    pub fn backlog(&self) -> u64 {
        match (self.srtt, self.min_rtt()) {
            (Some(s), Some(m)) if s > m => {
                ((self.cwnd as u128 * (s - m) as u128) / s as u128) as u64
            }
            _ => 0,
        }
    }

    /// A packet last sent at `sent` was taken as lost at `now`.
    fn on_loss(&mut self, now: Instant, sent: Instant, s: &mut Statistics) {
        if !self.on || self.recovery.is_some_and(|r| sent <= r) {
            return; // part of the current episode
        }
        self.recovery = Some(now);
        self.undo = None;
        // (a window of few large datagrams: half of it queued is congestion)
        let random = (RANDOM_BACKLOG * self.mss).min(self.cwnd / 2);
        // a probe's first congestion loss: back to where avoidance began
        let probe = !self.congested(now) && self.ssthresh < self.cwnd;
        let (beta, cap) = if self.backlog() < random {
            self.counts.random_losses += 1;
            s.cc_random_losses += 1;
            (BETA_RANDOM, u64::MAX)
        } else {
            self.counts.reductions += 1;
            s.cc_reductions += 1;
            self.congested = Some(now);
            (BETA_CONGESTION, [u64::MAX, self.ssthresh][probe as usize])
        };
        self.cwnd = (self.cwnd * beta / 16).min(cap).max(self.min_cwnd);
        self.ssthresh = self.cwnd;
        self.acked = 0;
        self.update_pacing();
    }

    /// A NACK (the receiver's buffers full): a probe went past them.
    pub fn on_nack(&mut self, now: Instant) {
        if self.on && !self.congested(now) && self.ssthresh < self.cwnd {
            self.cwnd = self.ssthresh.max(self.min_cwnd);
            self.congested = Some(now);
            // (the pacing cost is reckoned at the next sample, as before)
            self.paced_by = None;
        }
    }

    /// A retransmission timeout at `now`: the window collapses.
    pub fn on_timeout(&mut self, now: Instant, s: &mut Statistics) {
        if !self.on {
            return;
        }
        self.counts.timeouts += 1;
        s.cc_timeouts += 1;
        if self.undo.is_none() {
            self.undo = Some((self.cwnd, self.ssthresh));
            self.ssthresh = (self.cwnd * BETA_CONGESTION / 16).max(self.min_cwnd);
        }
        self.cwnd = self.min_cwnd;
        self.acked = 0;
        self.recovery = Some(now);
        self.update_pacing();
    }

    /// F-RTO: the last timeout was spurious; its collapse is undone.
    fn on_spurious_timeout(&mut self, s: &mut Statistics) {
        if let Some((cwnd, ssthresh)) = self.undo.take() {
            self.counts.undone += 1;
            s.cc_undone += 1;
            self.cwnd = cwnd.max(self.cwnd);
            self.ssthresh = ssthresh;
            self.update_pacing();
        }
    }
}

#[cfg(test)]
#[path = "congestion_tests.rs"]
mod tests;
