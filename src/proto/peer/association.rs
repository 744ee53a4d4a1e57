//! A peer's association as the peer runs it: the handshake it starts
//! (INIT, then COOKIE_ECHO, resent on its timer; started again with a
//! fresh tag when the peer cannot open the cookie), the association it
//! accepts from a valid cookie (a restarted peer's replaces the old one),
//! and its end.

use super::*;

impl<A: Copy + PartialEq> Peer<A> {
    /// A closed association with the peer that keeps the paths (and
    /// their congestion state) of the current one: the route is the same.
    pub(super) fn fresh_assoc(&mut self) -> Assoc<A> {
        let mut a = Assoc::to(self.addr);
        std::mem::swap(&mut a.paths, &mut self.assoc.paths);
        a.paths.back_to_name();
        a
    }

    /// Starts the handshake: sends an INIT offering `tag`.
    pub fn start_handshake(&mut self, now: Instant, tag: u64, cx: &mut Ctx<'_, A>) {
        self.assoc = Assoc {
            state: AssocState::CookieWait,
            local_tag: tag,
            init_sent: now,
            ..self.fresh_assoc()
        };
        self.send_handshake(cx);
        self.timers
            .set(Timer::Handshake, Some(now.plus(self.rtt.rto())));
    }

    /// Sends the INIT or the COOKIE_ECHO, whichever the state asks for.
    pub(super) fn send_handshake(&mut self, cx: &mut Ctx<'_, A>) {
        let start = cx.out.start();
        let integ = &cx.cfg.integrity;
        match (&self.assoc.state, &self.assoc.cookie) {
            (AssocState::CookieWait, _) => {
                let tag = self.assoc.local_tag;
                wire::encode_init_listing(&mut cx.out.bytes, integ, tag, cx.listing)
            }
            (AssocState::CookieEchoed, Some(c)) => {
                let tag = self.assoc.peer_tag;
                wire::encode_cookie_echo_listing(&mut cx.out.bytes, integ, tag, c, cx.listing)
            }
            _ => return,
        }
        cx.out.push(self.assoc.paths.name(), start);
    }

    /// The INIT_ACK of our INIT: echo the cookie.
    pub fn on_init_ack(
        &mut self,
        now: Instant,
        resp_tag: u64,
        cookie: &[u8; COOKIE_LEN],
        cx: &mut Ctx<'_, A>,
    ) -> bool {
        if self.assoc.state != AssocState::CookieWait {
            return false;
        }
        if self.assoc.tries == 0 {
            // sent once: its answer times a round trip (Karn's rule)
            self.rtt.sample(now.since(self.assoc.init_sent));
            let r = now.since(self.assoc.init_sent);
            self.assoc.paths.cc_mut().on_handshake_rtt(now, r);
        }
        self.rtt.on_progress();
        self.heard = now;
        self.assoc.state = AssocState::CookieEchoed;
        self.assoc.peer_tag = resp_tag;
        // the peer may send DATA (which confirms) as soon as it has our echo
        self.assoc.keyed(&cx.cfg.integrity);
        self.assoc.cookie = Some(Box::new(*cookie));
        self.assoc.tries = 0;
        self.send_handshake(cx);
        self.timers
            .set(Timer::Handshake, Some(now.plus(self.rtt.rto())));
        true
    }

    /// The peer cannot open the cookie we echo (UNKNOWN_COOKIE naming it:
    /// it restarted since its INIT_ACK): the handshake starts again, with
    /// a fresh `tag` (a late INIT_ACK or COOKIE_ACK of the old one carries
    /// the old tag and is dropped) and the RTO unbacked (the peer
    /// answered). What waits to be sent waits on; nothing was sent (DATA
    /// goes only once established).
    pub fn restart_handshake(&mut self, now: Instant, tag: u64, cx: &mut Ctx<'_, A>) {
        self.rtt.on_progress();
        self.start_handshake(now, tag, cx);
    }

    /// The peer has our COOKIE_ECHO (its COOKIE_ACK, or a packet of the
    /// association came): the association is established, DATA goes.
    #[inline]
    pub fn confirm(&mut self, now: Instant, cx: &mut Ctx<'_, A>) {
        // (tested inline: every packet of an association comes this way)
        if self.assoc.state == AssocState::CookieEchoed {
            self.establish(now, cx);
        }
    }

    /// `confirm` of an association that waited for it.
    #[inline(never)]
    pub(super) fn establish(&mut self, now: Instant, cx: &mut Ctx<'_, A>) {
        self.assoc.state = AssocState::Established;
        self.assoc.since = now;
        self.dead = None;
        self.heard = now;
        self.assoc.cookie = None;
        self.assoc.tries = 0;
        self.rtt.on_progress();
        self.timers.stop(Timer::Handshake);
        self.arm_idle(now, cx.cfg);
        // the paths learnt in the handshake are confirmed from now
        self.arm_paths(now);
        for ch in 0..NUM_CHANNELS {
            self.pump(now, ch, cx);
        }
    }

    /// A valid cookie from the peer's address establishes the association
    /// (`local_tag`, `peer_tag`), whatever the local state. Another pair of
    /// tags than the established one means the peer restarted: what was
    /// sent in the old association fails, what was held for it is void.
    pub fn accept_association(
        &mut self,
        now: Instant,
        local_tag: u64,
        peer_tag: u64,
        cx: &mut Ctx<'_, A>,
    ) {
        let (old_state, old_tag) = (self.assoc.state, self.assoc.local_tag);
        let a = &self.assoc;
        let same =
            a.state != AssocState::Closed && (a.local_tag, a.peer_tag) == (local_tag, peer_tag);
        let keys = if same {
            // the same association: its keys, and their packet counters, go on
            Some((
                std::mem::take(&mut self.assoc.tx),
                std::mem::take(&mut self.assoc.rx),
            ))
        } else {
            if matches!(
                old_state,
                AssocState::Established | AssocState::ShutdownSent
            ) {
                self.fail_all(FailReason::PeerUnreachable, cx.out);
            }
            if old_state != AssocState::Closed && old_tag != local_tag {
                cx.closed.record(old_tag, cx.cfg.cookie_lifetime);
            }
            self.reset_channels();
            None
        };
        self.assoc = Assoc {
            state: AssocState::Established,
            local_tag,
            peer_tag,
            since: now,
            ..self.fresh_assoc()
        };
        match keys {
            Some((tx, rx)) => (self.assoc.tx, self.assoc.rx) = (tx, rx),
            None => self.assoc.keyed(&cx.cfg.integrity),
        }
        self.timers.stop(Timer::Handshake);
        self.arm_idle(now, cx.cfg);
        // the paths learnt in the handshake are confirmed from now
        self.arm_paths(now);
        self.dead = None;
        self.heard = now;
        let start = cx.out.start();
        wire::encode_cookie_ack(&mut cx.out.bytes, &cx.cfg.integrity, peer_tag);
        cx.out.push(self.assoc.paths.name(), start);
        for ch in 0..NUM_CHANNELS {
            self.pump(now, ch, cx);
        }
    }

    /// The association ends (ABORT): every unfinished message fails; a
    /// new send starts a new handshake.
    pub fn close(&mut self, cx: &mut Ctx<'_, A>) {
        self.fail_all(FailReason::PeerUnreachable, cx.out);
        self.end_association(cx);
    }

    /// The association is over (its messages dealt with): its tag is
    /// remembered (a cookie for it is refused), the channels start afresh.
    pub fn end_association(&mut self, cx: &mut Ctx<'_, A>) {
        if self.assoc.state != AssocState::Closed {
            cx.closed
                .record(self.assoc.local_tag, cx.cfg.cookie_lifetime);
        }
        self.reset_channels();
        self.assoc = self.fresh_assoc();
        self.timers.stop(Timer::Handshake);
        self.timers.stop(Timer::Idle);
    }

    /// Both directions start afresh for a new association: nothing held
    /// or owed; unacknowledged fragments go back to be numbered anew, from
    /// epoch 0 (a peer with a new association has none of them).
    pub(in crate::proto) fn reset_channels(&mut self) {
        self.rx = Default::default();
        for ch in 0..NUM_CHANNELS {
            self.tx[ch].rewind();
            self.timers.stop(Timer::Ack(ch));
            self.timers.stop(Timer::Pause(ch));
            self.timers.stop(Timer::Retransmit(ch));
        }
    }

    /// The handshake timer: send again, or past the retry limit give up
    /// everything queued for the peer. True: an unanswered shutdown of an
    /// idle association ends, the slot may be freed.
    pub(super) fn on_handshake_timeout(&mut self, now: Instant, cx: &mut Ctx<'_, A>) -> bool {
        if self.assoc.state == AssocState::ShutdownSent {
            return self.on_shutdown_timeout(now, cx);
        }
        self.assoc.tries += 1;
        if self.assoc.tries > cx.cfg.retry_limit {
            self.close(cx);
            return false;
        }
        self.rtt.on_timeout();
        self.send_handshake(cx);
        self.timers
            .set(Timer::Handshake, Some(now.plus(self.rtt.rto())));
        false
    }
}
