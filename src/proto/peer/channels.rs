//! What a peer does with its channels' packets: DATA sent while the window
//! allows (with both receive channels' acks piggybacked), ACKs and NACKs
//! taken and sent, DATA taken within the peer's buffer budget.

use super::*;

impl<A: Copy + PartialEq> Peer<A> {
    /// Sends what send channel `ch` may send now: packets marked for
    /// resending, then new fragments while the window allows.
    #[inline]
    pub fn pump(&mut self, now: Instant, ch: usize, cx: &mut Ctx<'_, A>) {
        if self.is_paused(ch) || !self.tx[ch].has_to_send() || !self.assoc.can_send() {
            // Nothing to send (the usual case after an ACK), or no
            // association to send in yet: tested inline, no call.
            return;
        }
        self.transmit(now, ch, cx);
    }

    /// `pump` when there is something to send.
    #[inline(never)]
    pub(super) fn transmit(&mut self, now: Instant, ch: usize, cx: &mut Ctx<'_, A>) {
        let (rto, probe_after, again_after) = self.rtt.transmit_timers();
        let mut t = Transmission {
            header: Common {
                vtag: self.assoc.peer_tag,
                channel: ch as u8,
                epoch: self.tx[ch].epoch,
                seq: 0,
                unordered: false,
                acks: self.piggyback(),
            },
            rto,
            probe_after,
            again_after,
            window: cx.cfg.window,
            lane: 0,
        };
        // (one path, the usual case: no look at striping, no choice)
        if !self.assoc.paths.single() {
            if self.striping(ch, cx.cfg) {
                self.transmit_striped(now, ch, t, cx);
                return;
            }
            if self.in_flight() == 0 {
                // nothing in flight: the message goes on the best active path
                self.choose_path();
            }
            t.lane = self.assoc.paths.current_index() as u8;
        }
        let idle = self.in_flight() == 0;
        let mut gate = self.assoc.paths.cc().gate(now, self.in_flight());
        if self.same_host.is_some() {
            // a same-host ring holds no more (`ProtoConfig::same_host_flight`)
            gate.room = gate
                .room
                .min(cx.cfg.same_host_flight.saturating_sub(self.in_flight()));
        }
        let path = self.path();
        // (the lane is the current path's index; one path: 0, the name's)
        let seal = seal_on(&self.same_host, &self.assoc.tx, t.lane as usize);
        let before = self.tx[ch].outstanding;
        if let Some(d) = self.tx[ch].transmit(now, &t, &mut gate, path, seal, cx.out) {
            self.acks_carried(cx.cfg);
            self.timers.lower(Timer::Retransmit(ch), d);
        }
        let sent = self.tx[ch].outstanding.saturating_sub(before);
        if sent > 0 {
            self.assoc.paths.data_at(now, sent, idle);
        }
        if let Some(at) = self.assoc.paths.cc_mut().sent(now, &gate) {
            self.pace_until(at, &mut cx.out.stats);
        }
    }

    /// Pacing lets the next packet go at `at`: if new data waits, the
    /// pacing timer sends it then.
    #[inline(never)]
    fn pace_until(&mut self, at: Instant, stats: &mut crate::stats::Statistics) {
        if self.tx.iter().any(|t| !t.pending.is_empty()) {
            self.assoc.paths.cc_mut().held(stats);
            self.timers.set(Timer::Pace, Some(at));
        }
    }

    /// Bytes in flight on the path: both send channels' exact counts.
    #[inline]
    pub fn in_flight(&self) -> u64 {
        self.tx[0].outstanding + self.tx[1].outstanding
    }

    /// Gives the path's congestion controller what send channel `ch`'s
    /// flight told since the last look.
    /// (The news is read where it lies and cleared, not copied out.)
    #[inline(always)]
    pub(super) fn settle(&mut self, now: Instant, ch: usize, cx: &mut Ctx<'_, A>) {
        let current = self.assoc.paths.current_index();
        if self.tx[ch].lane_news.lanes & !(1 << current) != 0 {
            // news of packets on other paths (striping)
            self.settle_lanes(now, ch, cx);
            return;
        }
        let lanes = &mut self.tx[ch].lane_news;
        lanes.lanes = 0;
        lanes.delivered[current] = 0;
        lanes.lost[current] = 0;
        let in_flight = self.in_flight();
        let tx = &mut self.tx[ch];
        let delivered = tx.news.delivered;
        if delivered > 0 {
            self.assoc.paths.progress(now, delivered, in_flight);
            self.assoc.paths.acked(now);
        }
        let single = self.assoc.paths.single();
        let cc = self.assoc.paths.cc_mut();
        cc.on_news(now, &tx.news, in_flight, &mut cx.out.stats);
        tx.news = congestion::FlightNews::default();
        if delivered > 0 && cc.is_on() && tx.in_flight.len() > 1 {
            if single {
                tx.restart_timers(now, self.rtt.rto());
            } else {
                // the current path's progress says nothing of another
                // path's packets (`path/clock.rs`): restarted, a silent
                // path's never timed out while this one delivered
                tx.restart_lane_timers(now, current as u8, self.rtt.rto());
            }
        }
    }

    /// Sends what both send channels may send now, replies first: the path's
    /// window is shared, and a reply (the answer a requester waits for, and
    /// its credit) must not starve behind bulk requests when it opens.
    #[inline]
    pub fn pump_both(&mut self, now: Instant, cx: &mut Ctx<'_, A>) {
        self.pump(now, wire::CHANNEL_REPLY as usize, cx);
        self.pump(now, wire::CHANNEL_REQUEST as usize, cx);
    }

    /// An acknowledgement for send channel `ch`: (epoch, next, sack).
    #[inline]
    pub fn on_ack(&mut self, now: Instant, ch: usize, ack: (u16, u32, u64), cx: &mut Ctx<'_, A>) {
        let tx = &mut self.tx[ch];
        let (rtt, clocks) = (&mut self.rtt, &mut self.assoc.paths);
        let Some(o) = tx.on_ack(now, ack, rtt, clocks, &mut cx.out.stats, cx.spare_msgs) else {
            return;
        };
        self.settle(now, ch, cx);
        self.tell_suspects(cx);
        if let Some(t) = o.rearm_at {
            self.timers.lower(Timer::Retransmit(ch), t);
        } else if self.tx[ch].in_flight.is_empty() {
            // all acknowledged: no timeout left to look for (the next
            // transmit sets it; `run_timers` then skips the look at the
            // flight's old deadline)
            self.timers.stop(Timer::Retransmit(ch));
        }
        if o.progress {
            // the window opened for both channels
            self.pump_both(now, cx);
            self.unwatch_if_idle();
        }
    }

    /// A NACK of packet `seq` of send channel `ch`.
    pub fn on_nack(
        &mut self,
        now: Instant,
        ch: usize,
        (epoch, seq, last): (u16, u32, bool),
        cx: &mut Ctx<'_, A>,
    ) {
        // Everything before the refused packet has arrived.
        self.on_ack(now, ch, (epoch, seq, 0), cx);
        match self.tx[ch].on_nack(epoch, seq, last) {
            Nacked::Stale => {}
            Nacked::GiveUp(id) => self.fail_message(now, ch, id, FailReason::Refused, cx),
            Nacked::GoBack => {
                self.assoc.paths.cc_mut().on_nack(now);
                let until = now.plus(cx.cfg.nack_backoff);
                self.timers.set(Timer::Pause(ch), Some(until));
                self.timers.stop(Timer::Retransmit(ch));
                // its packets left the path's flight: the other channel
                // may send
                self.pump(now, ch ^ 1, cx);
            }
        }
    }

    /// A DATA packet for receive channel `c.channel`.
    #[inline]
    pub fn on_data(
        &mut self,
        now: Instant,
        c: &Common,
        f: InFrag<'_>,
        cx: &mut Ctx<'_, A>,
        place: &mut dyn crate::proto::Placement<A>,
    ) {
        let ch = c.channel as usize;
        let used = self.rx[0].buffered() + self.rx[1].buffered();
        let mut rcx = RecvCx {
            from: self.addr,
            ch,
            recv_depth: cx.cfg.recv_depth,
            nack_limit: cx.cfg.nack_limit,
            budget: cx.cfg.peer_buffer.saturating_sub(used),
            queued_requests: cx.queued_requests,
            out: cx.out,
            place,
        };
        if let Some(last) = self.rx[ch].on_data(now, (c.epoch, c.seq), f, &mut rcx) {
            self.send_nack(ch, last, cx);
        }
        // held packets within the peer's budget (in-order data is taken
        // whatever it costs: reassembly may go past it, held packets never)
        debug_assert!(self.rx.iter().map(|r| r.held_bytes).sum::<usize>() <= cx.cfg.peer_buffer);
        self.sync_ack_timer(ch, cx.cfg);
    }

    pub(super) fn piggyback(&self) -> [AckField; NUM_CHANNELS] {
        let f = |r: &RecvChannel| AckField {
            valid: r.known,
            epoch: r.epoch,
            next: r.next,
        };
        [f(&self.rx[0]), f(&self.rx[1])]
    }

    /// A packet carrying the cumulative acks went out: what is owed is paid,
    /// unless a SACK is needed too.
    pub(super) fn acks_carried(&mut self, cfg: &ProtoConfig) {
        for ch in 0..NUM_CHANNELS {
            if self.rx[ch].held.is_empty() && self.rx[ch].dup.is_none() {
                self.rx[ch].ack_paid();
                self.sync_ack_timer(ch, cfg);
            }
        }
    }

    #[inline]
    pub(super) fn sync_ack_timer(&mut self, ch: usize, cfg: &ProtoConfig) {
        let due = self.rx[ch].ack_deadline(cfg.ack_delay);
        self.timers.set(Timer::Ack(ch), due);
    }

    /// The header of a control packet about receive channel `ch`: its epoch
    /// and next expected sequence number, with both piggybacked acks.
    pub(super) fn control_header(&self, ch: usize) -> Common {
        let rx = &self.rx[ch];
        Common {
            vtag: self.assoc.peer_tag,
            channel: ch as u8,
            epoch: rx.epoch,
            seq: rx.next,
            unordered: false,
            acks: self.piggyback(),
        }
    }

    /// How an answer (ACK, NACK) is sealed: for the path it takes (`seal_on`).
    #[inline]
    fn answer_sealing(&self) -> &Integrity {
        seal_on(
            &self.same_host,
            &self.assoc.tx,
            self.assoc.paths.answer_index(),
        )
    }

    /// Sends the ACK of receive channel `ch` (with its SACK bitmap).
    pub fn send_ack(&mut self, ch: usize, cx: &mut Ctx<'_, A>) {
        let c = self.control_header(ch);
        let sack = self.rx[ch].sack_bits();
        let dup = std::mem::take(&mut self.rx[ch].dup);
        let out = &mut *cx.out;
        let start = out.start();
        wire::encode_ack_dup(&mut out.bytes, self.answer_sealing(), &c, sack, dup);
        out.stats.acks_sent += 1;
        out.push(self.assoc.paths.answer(), start);
        self.rx[ch].ack_paid();
        self.timers.stop(Timer::Ack(ch));
    }

    pub(super) fn send_nack(&mut self, ch: usize, last: bool, cx: &mut Ctx<'_, A>) {
        let c = self.control_header(ch);
        let start = cx.out.start();
        wire::encode_nack(&mut cx.out.bytes, self.answer_sealing(), &c, last);
        cx.out.stats.nacks_sent += 1;
        cx.out.push(self.assoc.paths.answer(), start);
    }
}
