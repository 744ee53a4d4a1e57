//! Each path's own round-trip estimate and timeouts (issue 38 item 2:
//! RFC 6298 per destination, as SCTP keeps an RTO per address).
//!
//! The peer's estimate (`Peer::rtt`) times what goes on the current path;
//! it takes only that path's round trips (`LaneClocks::feeds_peer`) and
//! holds what is learnt of the peer itself (a floor learnt from a peer
//! off the CPU, the loss rate). With several paths each also keeps its
//! own (`OnePath::rtt`): fed with the round trips of its own packets (one
//! per run of them an ACK acknowledges, `send::LaneRun`), backed off by
//! the timeouts counted against it, unbacked by its progress, started
//! afresh when it recovers; not seeded by its heartbeats' round trips (a
//! small packet's, far below what a fragment queued behind others on a
//! slow path takes: until its data is timed, its timeout is the initial
//! one, and it sends no probe). A striped packet on path i is timed
//! by the longer of the two: the peer's (what the peer takes to answer
//! at all) and path i's (what that path's queue and rate take), and its
//! path's progress restarts it with that timeout (`Peer::settle_lanes`).
//! A slow path's fragments, queued behind each other at its bottleneck,
//! so wait for that path's round trip: timed by the channel's (the fast
//! path's), they outlived its probe and RTO and went again on the fast
//! path, and the slow path carried a third of its share
//! (`stripe_tests.rs`). One path: nothing of this is kept (the peer's
//! estimate is the path's).

use super::*;
use crate::proto::send::LaneClocks;

impl<A: Copy + PartialEq> Paths<A> {
    /// The timers of a transmission on path `i` (`RttEstimator::
    /// transmit_timers`): the longer of the peer's and the path's own
    /// (a probe only when both have one).
    pub fn transmit_timers(
        &self,
        i: usize,
        peer: &RttEstimator,
    ) -> (Nanos, Option<Nanos>, Option<Nanos>) {
        let (rto, probe, again) = peer.transmit_timers();
        let Some(p) = self.list.get(i).filter(|_| !self.single()) else {
            return (rto, probe, again);
        };
        let (own, own_probe, own_again) = p.rtt.transmit_timers();
        let longer = |a: Option<Nanos>, b: Option<Nanos>| Some(a?.max(b?));
        (
            rto.max(own),
            longer(probe, own_probe),
            longer(again, own_again),
        )
    }

    /// The retransmission timeout (backed off) of a packet on path `i`:
    /// the peer's or the path's own, whichever is longer.
    pub fn rto_on(&self, i: usize, peer: &RttEstimator) -> Nanos {
        peer.rto().max(self.rto(i as u8))
    }

    /// A retransmission timeout counted against path `i`: its own
    /// timeout backs off.
    pub fn timeout_on(&mut self, i: usize) {
        if let Some(p) = self.list.get_mut(i) {
            p.rtt.on_timeout();
        }
    }
}

impl<A: Copy + PartialEq> LaneClocks for Paths<A> {
    #[inline]
    fn feeds_peer(&self, lane: u8) -> bool {
        self.single() || lane as usize == self.current
    }

    #[inline]
    fn sample(&mut self, lane: u8, now: Instant, sent: Instant) {
        if self.single() {
            return;
        }
        if let Some(p) = self.list.get_mut(lane as usize) {
            p.rtt.sample_from(now, sent);
        }
    }

    #[inline]
    fn base_rto(&self, lane: u8) -> Nanos {
        match self.list.get(lane as usize) {
            Some(p) if !self.single() => p.rtt.base_rto(),
            _ => 0,
        }
    }

    #[inline]
    fn rto(&self, lane: u8) -> Nanos {
        match self.list.get(lane as usize) {
            Some(p) if !self.single() => p.rtt.rto(),
            _ => 0,
        }
    }
}
