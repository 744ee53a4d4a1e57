//! A send channel's news by path (striping, `peer/stripe.rs`): what its
//! flight told of each lane (the path a packet's last copy took).

use crate::time::{Instant, Nanos};

/// The most paths an association has (every rail to every address).
pub const MAX_LANES: usize = crate::path::MAX_RAILS * crate::path::MAX_RAILS;

/// What the flight told of each path since the peer last looked
/// (`FlightNews` is the whole channel's): bytes delivered and lost per
/// lane, which lanes have news, the lane of the round-trip sample.
#[derive(Debug, Default)]
pub struct LaneNews {
    pub delivered: [u64; MAX_LANES],
    pub lost: [u64; MAX_LANES],
    /// Bit i: lane i has news.
    pub lanes: u32,
    pub rtt_lane: u8,
}

impl LaneNews {
    #[inline]
    pub fn delivered(&mut self, lane: u8, len: u64) {
        let l = lane as usize % MAX_LANES;
        self.delivered[l] += len;
        self.lanes |= 1 << l;
    }

    #[inline]
    pub fn lost(&mut self, lane: u8, len: u64) {
        let l = lane as usize % MAX_LANES;
        self.lost[l] += len;
        self.lanes |= 1 << l;
    }
}

/// Each path's own round-trip estimate and timeouts (`path/clock.rs`:
/// RFC 6298 per destination, as SCTP keeps one per address), as an ACK
/// sees them: a striped message's packets on a slow path are timed by
/// that path's round trips, not by the fast path's.
pub trait LaneClocks {
    /// Whether a round trip sampled on `lane` feeds the peer's estimate
    /// too (the current path's: the one non-striped packets take).
    fn feeds_peer(&self, lane: u8) -> bool;
    /// A packet sent once at `sent` on `lane` was acknowledged at `now`.
    fn sample(&mut self, lane: u8, now: Instant, sent: Instant);
    /// `lane`'s own retransmission timeout without backoff (0: none of
    /// its own).
    fn base_rto(&self, lane: u8) -> Nanos;
    /// `lane`'s own retransmission timeout, backed off (0: none of its own).
    fn rto(&self, lane: u8) -> Nanos;
    /// `lane`'s least round trip known (0: none, or one path).
    fn least_rtt(&self, lane: u8) -> Nanos;
}

impl super::InFlight {
    /// The packet is acknowledged at `now`: the path of the copy that
    /// arrived, for its news (delivery, RACK's reordering by path). Its
    /// last copy's path if that copy can have arrived (sent at least half
    /// that path's least round trip ago), else the copy's before
    /// (`prev_lane`): a first copy queued on one path, sent again on a
    /// slower one (a tail-loss probe, a path suspect or down), arrives
    /// first, and its ACK credited to the second path a rate it does not
    /// have and progress it did not make.
    #[inline]
    pub fn arrived_lane(&self, now: Instant, clocks: &impl LaneClocks) -> u8 {
        if self.prev_lane == self.lane
            || now.since(self.last_sent) >= clocks.least_rtt(self.lane) / 2
        {
            self.lane
        } else {
            self.prev_lane
        }
    }

    /// `arrived_lane`, kept: the packet's news goes to that path.
    #[inline]
    pub fn settle_lane(&mut self, now: Instant, clocks: &impl LaneClocks) {
        if self.prev_lane != self.lane {
            self.lane = self.arrived_lane(now, clocks);
            self.prev_lane = self.lane;
        }
    }
}

/// One path: the peer's estimate is its own.
impl LaneClocks for () {
    #[inline]
    fn feeds_peer(&self, _lane: u8) -> bool {
        true
    }
    #[inline]
    fn sample(&mut self, _lane: u8, _now: Instant, _sent: Instant) {}
    #[inline]
    fn base_rto(&self, _lane: u8) -> Nanos {
        0
    }
    #[inline]
    fn rto(&self, _lane: u8) -> Nanos {
        0
    }
    #[inline]
    fn least_rtt(&self, _lane: u8) -> Nanos {
        0
    }
}

/// The newest packet of a run of packets an ACK acknowledges for the
/// first time on one path (its round trip is a sample of that path's:
/// one per run, the newest, as TCP takes one per ACK).
#[derive(Default)]
pub struct LaneRun(Option<(u8, Instant)>);

impl LaneRun {
    /// Packet on `lane` sent at `sent` (timing a round trip) is newly
    /// acknowledged: a run of another path's before it ends.
    #[inline]
    pub fn take(&mut self, lane: u8, sent: Instant, now: Instant, clocks: &mut impl LaneClocks) {
        if let Some((l, t)) = self.0 {
            if l != lane {
                clocks.sample(l, now, t);
            }
        }
        self.0 = Some((lane, sent));
    }

    /// The last run ends.
    #[inline]
    pub fn end(self, now: Instant, clocks: &mut impl LaneClocks) {
        if let Some((l, t)) = self.0 {
            clocks.sample(l, now, t);
        }
    }
}
