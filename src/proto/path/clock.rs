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

    #[inline]
    fn least_rtt(&self, lane: u8) -> Nanos {
        self.least_rtt_known(lane as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MILLIS;

    /// Two rails to a peer with two addresses: four paths, 0 current.
    fn paths(peer: &RttEstimator) -> Paths<u32> {
        let cc = Congestion::new(true, 65_507, 1 << 24);
        let mut p = Paths::to(1, cc, peer.fresh(), 65_507);
        p.set_paths(Instant(1), 2, &[11], 100 * MILLIS);
        assert_eq!(p.all().count(), 4);
        p
    }

    /// Feeds `n` round trips of `r` on `lane` (and the peer's estimate
    /// those its clocks give it).
    fn feed(p: &mut Paths<u32>, peer: &mut RttEstimator, lane: u8, r: Nanos, n: u64) {
        for k in 0..n {
            let sent = Instant(1_000_000_000 + k * 100 * MILLIS);
            if p.feeds_peer(lane) {
                peer.sample_from(sent.plus(r), sent);
            }
            p.sample(lane, sent.plus(r), sent);
        }
    }

    #[test]
    fn a_slow_paths_packets_are_timed_by_its_round_trips_not_the_current_paths() {
        let mut peer = RttEstimator::new(20 * MILLIS, 5 * MILLIS, 1000 * MILLIS);
        let mut p = paths(&peer);
        // the current path answers in 1 ms, path 3 (rail 1 to 11) in 30 ms
        feed(&mut p, &mut peer, 0, MILLIS, 20);
        feed(&mut p, &mut peer, 3, 30 * MILLIS, 20);
        assert!(p.feeds_peer(0) && !p.feeds_peer(3));
        let (rto0, probe0, _) = p.transmit_timers(0, &peer);
        let (rto3, probe3, _) = p.transmit_timers(3, &peer);
        println!(
            "current path: rto {rto0} probe {probe0:?}; slow path: rto {rto3} probe {probe3:?}"
        );
        assert_eq!(rto0, peer.rto(), "the current path's: the peer's");
        assert!(rto0 < 10 * MILLIS, "{rto0}");
        assert!(rto3 >= 30 * MILLIS && probe3.is_some_and(|t| t >= 30 * MILLIS));
        assert!(probe0.is_some_and(|t| t < 10 * MILLIS));
        // a path not yet timed: its initial timeout, and no probe
        let (rto2, probe2, _) = p.transmit_timers(2, &peer);
        assert_eq!((rto2, probe2), (20 * MILLIS, None));
        // a timeout on the slow path backs off its own, not the current one's
        p.timeout_on(3);
        assert_eq!(p.rto_on(3, &peer), 2 * p.base_rto(3));
        assert_eq!(p.rto_on(0, &peer), rto0);
        // its progress unbacks it
        p.progress_on(3, Instant(9_000_000_000), 1000, 0);
        assert_eq!(p.rto(3), p.base_rto(3));
    }

    #[test]
    fn one_path_keeps_no_clock_of_its_own() {
        let peer = RttEstimator::new(20 * MILLIS, 5 * MILLIS, 1000 * MILLIS);
        let cc = Congestion::new(true, 65_507, 1 << 24);
        let mut p = Paths::to(1u32, cc, peer.fresh(), 65_507);
        p.sample(0, Instant(2_000_000_000), Instant(1_000_000_000));
        assert!(p.feeds_peer(0));
        assert_eq!((p.base_rto(0), p.rto(0)), (0, 0));
        assert_eq!(p.transmit_timers(0, &peer), peer.transmit_timers());
    }
}
