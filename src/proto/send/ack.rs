//! What an acknowledgement does to a send channel's flight (`mod.rs`):
//! cumulative and selective ACKs, round-trip samples, the reordering rule
//! that finds what is lost, and duplicates reported by the receiver (D-SACK).

use super::*;

/// What a cumulative acknowledgement took off the channel.
#[derive(Default, Debug, PartialEq, Eq)]
pub struct Acked {
    /// Packets acknowledged (removed from the flight).
    pub count: usize,
    /// Send time of the newest of them that times one round trip (see
    /// `InFlight::rtt_eligible`).
    pub sample_from: Option<Instant>,
}

/// What a selective acknowledgement told.
#[derive(Default, Debug)]
pub struct SackResult {
    /// The highest sequence number the receiver holds.
    pub highest: Option<u32>,
    /// Some packet was SACKed for the first time.
    pub newly_sacked: bool,
    /// Send time of the newest packet SACKed for the first time that was
    /// sent once only (a round-trip sample, Karn's rule).
    pub sample_from: Option<Instant>,
}

/// What an acknowledgement changed.
pub struct AckOutcome {
    /// Packets left the flight or were SACKed: the channel may send more.
    pub progress: bool,
    /// The earliest deadline it armed (a reordering timer, or the oldest
    /// packet timed afresh: `time_sacked_front`): the channel's timer
    /// fires by then.
    pub rearm_at: Option<Instant>,
}

impl SendChannel {
    /// Packet `p` leaves the flight acknowledged: if it counted in
    /// flight, its bytes are delivered.
    #[inline]
    fn delivered(&mut self, p: &InFlight) {
        if p.counts() {
            let len = p.flight_len();
            self.outstanding -= len;
            self.news.delivered += len;
            self.lane_news.delivered(p.lane, len);
        }
    }

    /// Removes every packet before `next`; says how many and what they time.
    /// The boxes of one-fragment messages go to `spare` for reuse.
    pub fn ack_cumulative(&mut self, next: u32, spare: &mut SpareMsgs) -> Acked {
        let mut r = Acked::default();
        while let Some(front) = self.in_flight.front() {
            if seq_diff(front.seq, next) >= 0 {
                break;
            }
            if front.rtt_eligible() {
                r.sample_from = Some(front.first_sent);
                self.lane_news.rtt_lane = front.lane;
            }
            r.count += 1;
            if let Some(p) = self.in_flight.pop_front() {
                self.delivered(&p);
                p.frag.msg.recycle(spare);
            }
        }
        r
    }

    /// Marks packets `next+1+i` for every bit i of `sack` as held by the receiver.
    /// Returns the highest sequence number so marked.
    pub fn ack_selective(&mut self, next: u32, sack: u64) -> SackResult {
        let mut r = SackResult::default();
        if sack == 0 {
            return r;
        }
        for p in self.in_flight.iter_mut() {
            let d = seq_diff(p.seq, next);
            if (1..=64).contains(&d) && sack & (1u64 << (d - 1)) != 0 {
                if p.counts() {
                    self.outstanding -= p.flight_len();
                    self.news.delivered += p.flight_len();
                    self.lane_news.delivered(p.lane, p.flight_len());
                }
                if !p.sacked {
                    r.newly_sacked = true;
                    if p.rtt_eligible() {
                        r.sample_from = Some(p.first_sent);
                        self.lane_news.rtt_lane = p.lane;
                    }
                }
                p.sacked = true;
                p.resend = false;
                r.highest = Some(p.seq);
            }
        }
        r
    }

    /// Takes an acknowledgement of everything before `next` and, in `sack`,
    /// of packets after it; samples the round trip; finds what is lost by
    /// the reordering rule. None when it tells nothing new.
    /// Round trips sampled go to the peer's estimate (`rtt`, when
    /// `clocks` says it is their path's) and to their path's (`clocks`).
    #[inline]
    pub fn on_ack(
        &mut self,
        now: Instant,
        ack: (u16, u32, u64),
        rtt: &mut RttEstimator,
        clocks: &mut impl LaneClocks,
        stats: &mut Statistics,
        spare: &mut SpareMsgs,
    ) -> Option<AckOutcome> {
        let (epoch, next, sack) = ack;
        if epoch != self.epoch || seq_diff(next, self.next_seq) > 0 {
            return None;
        }
        if sack == 0 && !self.acks_any(next) {
            // Nothing new (the usual piggybacked ACK): nothing changes.
            return None;
        }
        let o = self.take_ack(now, (next, sack), rtt, clocks, stats, spare);
        // What is acknowledged stays so: nothing before `next` is left in
        // flight (a cumulative ack never goes back), and `next` is within
        // what was sent (checked above).
        debug_assert!(self
            .in_flight
            .front()
            .is_none_or(|p| seq_diff(p.seq, next) >= 0));
        Some(o)
    }

    /// `on_ack` of an acknowledgement that tells something new.
    /// `take_ack` of the usual ACK: cumulative only, no timeout to judge.
    /// What it acknowledges is the front of the flight, looked at once (as
    /// the general case's first loop, then `ack_cumulative`, would).
    fn take_cumulative(
        &mut self,
        now: Instant,
        next: u32,
        rtt: &mut RttEstimator,
        clocks: &mut impl LaneClocks,
        stats: &mut Statistics,
        spare: &mut SpareMsgs,
    ) -> AckOutcome {
        let mut done = Acked::default();
        let mut run = LaneRun::default();
        while self.acks_any(next) {
            let Some(mut p) = self.in_flight.pop_front() else {
                break;
            };
            p.settle_lane(now, clocks);
            if p.first_sent != p.last_sent && p.nacks == 0 {
                let answered = (p.seq, now.since(p.last_sent), now.since(p.first_sent));
                self.resent_answered = Some(answered);
                rtt.on_retransmit_answered(answered.1, answered.2);
            }
            if p.rtt_eligible() {
                done.sample_from = Some(p.first_sent);
                self.lane_news.rtt_lane = p.lane;
                run.take(p.lane, p.first_sent, now, clocks);
            }
            done.count += 1;
            self.delivered(&p);
            p.frag.msg.recycle(spare);
        }
        if done.count > 0 {
            rtt.on_progress();
        }
        run.end(now, clocks);
        if let Some(t) = done.sample_from {
            self.sampled(now, t, rtt, clocks, stats);
        }
        // (the usual front is not SACKed: tested here, no call)
        let rearm_at = if done.count > 0 && self.in_flight.front().is_some_and(|p| p.sacked) {
            self.time_sacked_front(now, rtt, clocks)
        } else {
            None
        };
        AckOutcome {
            progress: done.count > 0,
            rearm_at,
        }
    }

    /// An ACK made a SACKed packet the oldest in flight: the receiver does
    /// not hold it after all (it refused it for want of buffer, and its
    /// NACK may be lost). The oldest is timed even when SACKed, from now
    /// (as RFC 6298 restarts the timer when an ACK acknowledges new data):
    /// its deadline, set while others were older, may have passed unseen
    /// by the channel's timer. Returns it, for that timer.
    #[inline(never)]
    fn time_sacked_front(
        &mut self,
        now: Instant,
        rtt: &RttEstimator,
        clocks: &impl LaneClocks,
    ) -> Option<Instant> {
        // (the usual front is not SACKed: nothing computed for it)
        let p = self.in_flight.front_mut().filter(|p| p.sacked)?;
        let rto = rtt.rto().max(clocks.rto(p.lane));
        p.deadline = p.deadline.max(now.plus(rto));
        Some(p.deadline)
    }

    /// The newest packet an ACK acknowledged for the first time, sent once
    /// at `sent` (on `lane_news.rtt_lane`), times a round trip: the peer's
    /// estimate takes it when it is the current path's (`clocks`), the
    /// path's controller and the statistics whatever its path.
    #[inline]
    fn sampled(
        &mut self,
        now: Instant,
        sent: Instant,
        rtt: &mut RttEstimator,
        clocks: &impl LaneClocks,
        stats: &mut Statistics,
    ) {
        let r = now.since(sent);
        if clocks.feeds_peer(self.lane_news.rtt_lane) {
            rtt.sample_from(now, sent);
        }
        stats.record_rtt(r);
        self.news.rtt = Some(r);
    }

    fn take_ack(
        &mut self,
        now: Instant,
        (next, sack): (u32, u64),
        rtt: &mut RttEstimator,
        clocks: &mut impl LaneClocks,
        stats: &mut Statistics,
        spare: &mut SpareMsgs,
    ) -> AckOutcome {
        if sack == 0 && self.rto_at.is_none() {
            return self.take_cumulative(now, next, rtt, clocks, stats, spare);
        }
        // Retransmitted packets acknowledged now: were they needless? And
        // the round trips each path's packets time (`LaneRun`).
        // Each packet acknowledged is news for the path of its copy that
        // arrived (`InFlight::arrived_lane`).
        let mut run = LaneRun::default();
        for p in self.in_flight.iter_mut() {
            let d = seq_diff(p.seq, next);
            let newly =
                d < 0 || ((1..=64).contains(&d) && sack & (1u64 << (d - 1)) != 0 && !p.sacked);
            if newly {
                p.settle_lane(now, clocks);
            }
            if newly && p.rtt_eligible() {
                run.take(p.lane, p.first_sent, now, clocks);
            }
            if newly && p.first_sent != p.last_sent && p.nacks == 0 {
                let answered = (p.seq, now.since(p.last_sent), now.since(p.first_sent));
                self.resent_answered = Some(answered);
                rtt.on_retransmit_answered(now.since(p.last_sent), now.since(p.first_sent));
            } else if d >= 64 {
                break;
            }
        }
        // The first news after a retransmission timeout: did a packet not
        // resent since arrive (the timeout was spurious)?
        let frto = self.rto_at.take().map(|t| {
            self.in_flight.iter().any(|p| {
                let d = seq_diff(p.seq, next);
                let newly = d < 0 || ((1..=64).contains(&d) && sack & (1u64 << (d - 1)) != 0);
                newly && !p.sacked && p.last_sent < t
            })
        });
        // One round-trip sample per ACK, from the newest packet it acknowledges
        // for the first time (as TCP does).
        run.end(now, clocks);
        let done = self.ack_cumulative(next, spare);
        let sacked = self.ack_selective(next, sack);
        let mut rearmed = None;
        if let Some(spurious) = frto {
            let rto = rtt.base_rto();
            // Not shown spurious: the ACK covered only packets resent
            // since. Either the packets deferred were lost too, or the ACK
            // left the receiver before they arrived (it answered the first
            // copy, then was descheduled before it sent that answer): the
            // oldest of them go now, twice as many as went last time, the
            // rest wait for the next ACK (as after a timeout TCP sends one
            // packet, then two per ACK: slow start), which decides again.
            let mut budget = if spurious {
                0
            } else {
                2 * self.frto_sent.max(1)
            };
            let mut resent = 0;
            for p in self.in_flight.iter_mut().filter(|p| p.deadline == DEFERRED) {
                if spurious || p.sacked {
                    p.deadline = now.plus(rto.max(clocks.base_rto(p.lane)));
                    rearmed = Some(rearmed.map_or(p.deadline, |r: Instant| r.min(p.deadline)));
                } else if budget == 0 {
                    self.rto_at = Some(now);
                } else {
                    budget -= 1;
                    resent += 1;
                    // taken as lost after the timeout (its collapse is
                    // the congestion news)
                    if p.counts() {
                        self.outstanding -= p.flight_len();
                    }
                    p.resend = true;
                }
            }
            self.frto_sent = resent;
            if spurious || self.rto_at.is_none() {
                // decided (else the next ACK decides again)
                self.news.frto = Some(spurious);
            }
        }
        let sample_from = sacked.sample_from.or(done.sample_from);
        if done.count > 0 || sacked.newly_sacked {
            rtt.on_progress();
        }
        if let Some(t) = sample_from {
            self.sampled(now, t, rtt, clocks, stats);
        }
        let mut reorder_at = rearmed;
        if done.count > 0 {
            if let Some(t) = self.time_sacked_front(now, rtt, clocks) {
                reorder_at = Some(reorder_at.map_or(t, |r: Instant| r.min(t)));
            }
        }
        if let Some(highest) = sacked.highest {
            // Fast retransmit (after RACK, RFC 8985): a packet sent later
            // arrived, an earlier one did not. It is lost if it was sent
            // more than a reordering window before; else it is lost if its
            // ACK is not back one round trip (that of the later packet) plus
            // the window after it was sent.
            let (arrived_sent, arrived_lane) = self
                .in_flight
                .iter()
                .find(|p| p.seq == highest)
                .map_or((now, None), |p| (p.first_sent, Some(p.lane)));
            let rtt_now = now.since(arrived_sent);
            let reo_wnd = rtt.reorder_window().unwrap_or(rtt_now);
            for p in self.in_flight.iter_mut() {
                if seq_diff(p.seq, highest) >= 0 {
                    break;
                }
                // (packets on another path are not overtaken on theirs:
                // striped paths differ in delay)
                if p.sacked || p.resend || arrived_lane.is_some_and(|l| l != p.lane) {
                    continue;
                }
                let lost_at = p.last_sent.plus(rtt_now + reo_wnd);
                if lost_at <= now {
                    self.outstanding -= p.flight_len();
                    self.news.lost(p.flight_len(), p.last_sent);
                    self.lane_news.lost(p.lane, p.flight_len());
                    p.resend = true;
                } else if lost_at < p.deadline {
                    p.deadline = lost_at;
                    p.reorder_timer = true;
                    reorder_at = Some(reorder_at.map_or(lost_at, |t: Instant| t.min(lost_at)));
                }
            }
        }
        AckOutcome {
            progress: done.count > 0 || sack != 0,
            rearm_at: reorder_at,
        }
    }

    /// The receiver reports a packet that arrived twice (D-SACK, RFC 2883):
    /// the last copy we resent was needless, its first had arrived (a
    /// network that does not duplicate), and the timers wait at least as
    /// long as its answer took from then on (Eifel/F-RTO's undo).
    pub fn needless_copy(&mut self, seq: u32, rtt: &mut RttEstimator) {
        match self.resent_answered {
            Some((s, since_last, since_first)) if s == seq => {
                self.resent_answered = None;
                rtt.on_needless_copy(since_last, since_first);
            }
            _ => {}
        }
    }
}
