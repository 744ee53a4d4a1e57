//! A peer's large messages striped over its active paths (issue 38 item
//! 3; `path/stripe.rs` tells the rules): each path's fragments within its
//! own window and pacing, the news of each packet's ACK or loss for the
//! controller of the path it took, a timeout counted against that path,
//! and a failed path's packets in flight sent again on the others.

use super::*;
use crate::proto::congestion::FlightNews;
use crate::proto::send::MAX_LANES;

impl<A: Copy + PartialEq> Peer<A> {
    /// Whether send channel `ch`'s packets are striped now: more than one
    /// active path, no same-host ring, the controllers on; a message of at
    /// least `stripe_min` bytes at the head of its queue; and two or more
    /// paths to stripe over (`Paths::stripe_order`: distinct links). (Else
    /// retransmissions stay on the current path: its timeouts fail it.)
    pub(in crate::proto) fn striping(&self, ch: usize, cfg: &ProtoConfig) -> bool {
        if self.same_host.is_some() || !cfg.congestion || self.assoc.paths.active_count() < 2 {
            return false;
        }
        self.tx[ch]
            .pending
            .front()
            .is_some_and(|f| f.msg.payload.len() >= cfg.stripe_min)
            && self.assoc.paths.stripe_order().len() >= 2
    }

    /// Bytes in flight on each path (both channels).
    fn lane_flights(&self) -> [u64; MAX_LANES] {
        let mut flights = [0u64; MAX_LANES];
        for tx in &self.tx {
            tx.lane_flights(&mut flights);
        }
        flights
    }

    /// `transmit` striped: the retransmissions on the first path of
    /// `Paths::stripe_order`, new fragments on each path in that order
    /// while its window and pacing allow.
    pub(super) fn transmit_striped(
        &mut self,
        now: Instant,
        ch: usize,
        t: Transmission,
        cx: &mut Ctx<'_, A>,
    ) {
        let flights = self.lane_flights();
        let order = self.assoc.paths.stripe_order();
        let shares = self.stripe_shares(now, ch, &order, &flights, t.window);
        let unit = self.assoc.paths.datagram as u64;
        let mut pace: Option<Instant> = None;
        for (k, &i) in order.iter().enumerate() {
            let Some(p) = self.assoc.paths.at(i) else {
                continue;
            };
            let mut gate = p.cc.gate(now, flights[i % MAX_LANES]);
            let resends = k == 0 && self.tx[ch].in_flight.iter().any(|p| p.resend);
            if !resends && (self.tx[ch].pending.is_empty() || shares[i % MAX_LANES] == 0) {
                continue;
            }
            // its share of packets (one goes while room is left); none but
            // resends without a share
            let share = shares[i % MAX_LANES];
            let room = share
                .saturating_sub(1)
                .saturating_mul(unit)
                .saturating_add(1);
            gate.room = gate.room.min(if share == 0 { 0 } else { room });
            if !resends && !gate.allows() {
                // (held by pacing: the pacing timer sends when it lets)
                if let Some(at) = self
                    .assoc
                    .paths
                    .at_mut(i)
                    .and_then(|p| p.cc.sent(now, &gate))
                {
                    pace = Some(pace.map_or(at, |x: Instant| x.min(at)));
                }
                continue;
            }
            // (timed by the path's own round trips too: `path/clock.rs`;
            // no tail-loss probe before its rate is measured: its packets
            // queue at a rate not known, a probe at the peer's probe time
            // sent its window's tail again on another path while still
            // queued, and credited its delivery to that path)
            let (rto, probe_after, again_after) = match p.rate.get() {
                0 => (self.assoc.paths.transmit_timers(i, &self.rtt).0, None, None),
                _ => self.assoc.paths.transmit_timers(i, &self.rtt),
            };
            let t = Transmission {
                lane: i as u8,
                rto,
                probe_after,
                again_after,
                ..t
            };
            let path = p.path;
            let before = self.tx[ch].outstanding;
            let tx = &mut self.tx[ch];
            if let Some(d) = tx.transmit(now, &t, &mut gate, path, &self.assoc.tx, cx.out) {
                self.acks_carried(cx.cfg);
                self.timers.lower(Timer::Retransmit(ch), d);
            }
            let sent = self.tx[ch].outstanding.saturating_sub(before);
            let idle = flights[i % MAX_LANES] == 0;
            self.assoc.paths.sent_on(i, now, sent, idle);
            if let Some(p) = self.assoc.paths.at_mut(i) {
                if let Some(at) = p.cc.sent(now, &gate) {
                    pace = Some(pace.map_or(at, |x: Instant| x.min(at)));
                }
            }
        }
        if let Some(at) = pace {
            if self.tx.iter().any(|t| !t.pending.is_empty()) {
                self.timers.lower(Timer::Pace, at);
            }
        }
    }

    /// Packets of new data each path of `order` takes now of what send
    /// channel `ch` has waiting (`Paths::stripe_shares`).
    fn stripe_shares(
        &self,
        now: Instant,
        ch: usize,
        order: &[usize],
        flights: &[u64; MAX_LANES],
        window: usize,
    ) -> [u64; MAX_LANES] {
        let mut rooms = [0u64; MAX_LANES];
        for &i in order {
            if let Some(p) = self.assoc.paths.at(i) {
                rooms[i % MAX_LANES] = p.cc.gate(now, flights[i % MAX_LANES]).room;
            }
        }
        // (fragments, not bytes: the shares are whole fragments, all but a
        // message's last of the path's size). The channel's packet window
        // (64) is shared by the paths and bounds what goes now: with
        // MTU-sized datagrams it is 92 KB, less than two paths' windows,
        // and the first path to take its room took all of it (its queue
        // held the window, the other path idled: two 200 Mbit/s rails
        // carried one's rate).
        let tx = &self.tx[ch];
        let room = window.saturating_sub(tx.in_flight.len());
        let waiting = tx.pending.len().min(room) as u64;
        self.assoc
            .paths
            .stripe_shares(order, flights, &rooms, waiting)
    }

    /// `settle` with news of packets on several paths: each path's
    /// controller gets its own (F-RTO's verdict the current path's).
    pub(super) fn settle_lanes(&mut self, now: Instant, ch: usize, cx: &mut Ctx<'_, A>) {
        let flights = self.lane_flights();
        let current = self.assoc.paths.current_index();
        let tx = &mut self.tx[ch];
        let news = std::mem::take(&mut tx.news);
        let lanes = std::mem::take(&mut tx.lane_news);
        let mut delivered = 0u32;
        for (l, &flight) in flights.iter().enumerate() {
            let frto = news.frto.filter(|_| l == current);
            if lanes.lanes & (1 << l) == 0 && frto.is_none() {
                continue;
            }
            let n = FlightNews {
                delivered: lanes.delivered[l],
                lost: lanes.lost[l],
                lost_sent: news.lost_sent,
                rtt: news.rtt.filter(|_| lanes.rtt_lane as usize == l),
                frto,
            };
            if n.delivered > 0 {
                self.assoc.paths.progress_on(l, now, n.delivered, flight);
                delivered |= 1 << l;
            }
            if let Some(p) = self.assoc.paths.at_mut(l) {
                p.cc.on_news(now, &n, flight, &mut cx.out.stats);
            }
        }
        // each path's progress restarts its own packets' timers, with its
        // own timeout (`path/clock.rs`: a fast path's ACKs say nothing of
        // a slow path's packets)
        if delivered != 0 && cx.cfg.congestion && self.tx[ch].in_flight.len() > 1 {
            for l in (0..MAX_LANES).filter(|l| delivered & (1 << l) != 0) {
                let rto = self.assoc.paths.rto_on(l, &self.rtt);
                self.tx[ch].restart_lane_timers(now, l as u8, rto);
            }
        }
    }

    /// The path the packet a retransmission timeout of channel `ch`
    /// marked last took (the oldest marked), else the current one; and
    /// when that packet went.
    pub(super) fn timeout_lane(&self, ch: usize, now: Instant) -> (usize, Instant) {
        let current = self.assoc.paths.current_index();
        self.tx[ch]
            .in_flight
            .iter()
            .find(|p| p.resend)
            .map_or((current, now), |p| (p.lane as usize, p.last_sent))
    }

    /// A retransmission timeout of channel `ch` (backed off): the
    /// controller of the path it counts against collapses; after
    /// `PATH_MAX_RETRANS` the path is suspect and its packets go on another.
    pub(super) fn lane_timed_out(&mut self, now: Instant, ch: usize, cx: &mut Ctx<'_, A>) {
        let (lane, sent) = self.timeout_lane(ch, now);
        let current = self.assoc.paths.current_index();
        // the path's own timeout backs off, and the peer's when it is the
        // current path's (`path/clock.rs`)
        self.assoc.paths.timeout_on(lane);
        if lane == current {
            self.rtt.on_timeout();
        }
        let on = match self.assoc.paths.at_mut(lane) {
            Some(p) => {
                p.cc.on_timeout(now, &mut cx.out.stats);
                p.cc.is_on()
            }
            None => false,
        };
        if on {
            let rto = self.assoc.paths.rto_on(lane, &self.rtt);
            self.tx[ch].restart_timers(now, rto);
        }
        // (a same-host peer's ring timing out says its reader is slow, a
        // full ring having dropped: no path is gone, and the ring's seal
        // passes no other way)
        let ring = lane == 0 && self.same_host.is_some();
        if !ring
            && self
                .assoc
                .paths
                .timed_out_on(lane, now, cx.cfg.path_probe, sent)
        {
            // the path is suspect (`path/suspect.rs`; nothing told: only
            // evidence fails it): what it had in flight goes again at
            // once on another
            if lane == current {
                self.failover(now, cx);
            } else {
                self.lane_failed(now, lane, cx);
            }
        }
    }

    /// Path `lane`, not the current one, failed: its packets in flight go
    /// again at once on the others.
    pub(super) fn lane_failed(&mut self, now: Instant, lane: usize, cx: &mut Ctx<'_, A>) {
        for ch in 0..NUM_CHANNELS {
            self.tx[ch].resend_lane(lane as u8);
        }
        self.pump_both(now, cx);
        self.arm_paths(now);
    }
}
