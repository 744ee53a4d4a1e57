//! The association's handshake and the answers that need no state: INIT
//! (answered with a cookie, nothing kept), INIT_ACK, COOKIE_ECHO (the only
//! packet that creates a peer for a sender; one whose cookie another
//! secret made is answered with an UNKNOWN_COOKIE), COOKIE_ACK,
//! UNKNOWN_COOKIE, ABORT, HEARTBEAT, and what a packet outside any
//! association gets (at most one rate-limited ABORT). `mod.rs` dispatches
//! to these.
//!
//! A responder that restarted between its INIT_ACK and our COOKIE_ECHO
//! (a new secret) cannot open our cookie. It says so (UNKNOWN_COOKIE,
//! naming both tags of the echo), and the initiator, still echoing that
//! cookie, starts the handshake again with a fresh tag. Nothing else makes
//! an initiator give up a cookie it echoes: a responder that is only slow
//! (off the CPU for many RTOs) takes the echo when it runs, or its secret
//! opens it later; were the initiator to ask again with an INIT of the same
//! tag (3b45d36), it could take a late INIT_ACK of a fresh tag and have it
//! established by the COOKIE_ACK of the first cookie (a COOKIE_ACK does
//! not say which cookie it answers): half open (`tests/proto_echo.rs`).

use super::*;

impl<A: PeerAddr> Protocol<A> {
    /// A DATA, ACK or NACK that no association of `from` takes: dropped
    /// and counted. A DATA is answered with an ABORT carrying its tag
    /// (rate-limited), so that a sender whose association we do not have
    /// (we restarted, or ended it) starts a new one; not while we are
    /// opening one with it ourselves (the DATA overtook its COOKIE_ECHO).
    /// `data_vtag`: the tag of a DATA (None: an ACK or NACK). Under a MAC
    /// the packet cannot be checked without its association's key: the
    /// ABORT goes all the same (it is how a restarted peer is learnt), and
    /// it carries the job key's MAC, so only a member of the job takes it.
    pub(super) fn outside_association(&mut self, now: Instant, from: A, data_vtag: Option<u64>) {
        self.out.stats.stale_dropped += 1;
        let Some(vtag) = data_vtag else {
            return;
        };
        // Only a sender we hold no association with learns that it lost
        // one. With an association (or one being opened) in place, a DATA
        // under another tag is stale, forged or our own packet reflected back
        // from the peer's address: dropped without a word (RFC 9260 8.5), or
        // its ABORT, carrying the peer's own tag, would end the real one.
        let known = self
            .find_peer(&from)
            .is_some_and(|s| self.peers[s].assoc.state != AssocState::Closed);
        if !known && !self.in_bundle && self.take_unsolicited(now) {
            let start = self.out.start();
            wire::encode_abort(&mut self.out.bytes, &self.cfg.integrity, vtag);
            self.out.push(self.back_to(from), start);
        }
    }

    /// The path an answer to a packet from `from` takes: back to that
    /// address, on the rail the packet came in on.
    #[inline]
    pub(super) fn back_to(&self, from: A) -> crate::path::Path<A> {
        crate::path::Path {
            remote: from,
            rail: self.arrival,
        }
    }

    /// Whether an unsolicited answer may go now (else it is counted).
    pub(super) fn take_unsolicited(&mut self, now: Instant) -> bool {
        let (rate, burst) = (self.cfg.unsolicited_rate, self.cfg.unsolicited_burst);
        let ok = self.unsolicited.take(now, rate, burst);
        if !ok {
            self.suppressed += 1;
        }
        ok
    }

    /// An INIT: answered with a cookie, and nothing else: no peer, no slot,
    /// no map entry. While we are opening an association with `from`
    /// ourselves (simultaneous open), our pending tag goes in the cookie,
    /// so that both ends settle on the same pair of tags; an INIT with the
    /// tag of the association we have with `from` (its end asks again, our
    /// COOKIE_ACKs lost) gets that association's tag: its echo changes
    /// nothing.
    ///
    /// Its address list (the initiator's other rails) goes into the
    /// cookie's MAC: the COOKIE_ECHO lists them again, and only the same
    /// list opens the cookie. A list of addresses of another kind is
    /// refused (`paths_refused`), the INIT unanswered.
    pub(super) fn on_init(&mut self, now: Instant, from: A, init_tag: u64, addrs: wire::Addrs<'_>) {
        if self.listed(&from, addrs).is_none() {
            self.out.stats.stale_dropped += 1;
            return;
        }
        if !self.take_unsolicited(now) {
            self.out.stats.stale_dropped += 1;
            return;
        }
        let pending = self.find_peer(&from).and_then(|s| {
            let a = &self.peers[s].assoc;
            let same = a.state == AssocState::Established && a.peer_tag == init_tag;
            (same || matches!(a.state, AssocState::CookieWait | AssocState::CookieEchoed))
                .then_some(a.local_tag)
        });
        let resp_tag = pending.unwrap_or_else(|| self.secrets.next_tag());
        let cookie = self
            .secrets
            .make_cookie(resp_tag, init_tag, &(from, addrs.0), now);
        let start = self.out.start();
        wire::encode_init_ack_listing(
            &mut self.out.bytes,
            &self.cfg.integrity,
            init_tag,
            resp_tag,
            &cookie,
            &self.listing,
        );
        self.out.push(self.back_to(from), start);
    }

    pub(super) fn on_init_ack(
        &mut self,
        now: Instant,
        from: A,
        vtag: u64,
        resp_tag: u64,
        cookie: &[u8; COOKIE_LEN],
        addrs: wire::Addrs<'_>,
    ) {
        let Some(slot) = self.find_peer(&from) else {
            self.out.stats.stale_dropped += 1;
            return;
        };
        if self.peers[slot].assoc.local_tag != vtag {
            self.out.stats.stale_dropped += 1;
            return;
        }
        let name = self.peers[slot].addr;
        let Some(others) = self.listed(&name, addrs) else {
            self.out.stats.stale_dropped += 1;
            return;
        };
        let (peer, mut cx) = self.peer_cx(slot);
        let late = peer.assoc.state == AssocState::Established && peer.assoc.peer_tag == resp_tag;
        // A late answer agreeing with the association (simultaneous open)
        // is nothing new; one that does not is stale.
        if peer.on_init_ack(now, resp_tag, cookie, &mut cx) {
            // the responder's other rails: paths to confirm
            self.set_remotes(now, slot, &others);
        } else if !late {
            cx.out.stats.stale_dropped += 1;
        }
        self.schedule(slot);
    }

    /// A COOKIE_ECHO: with a cookie of ours, made for `from`, not too old,
    /// it creates the peer's state (the first time anything does for a
    /// peer that did not send to first) and establishes the association.
    pub(super) fn on_cookie_echo(
        &mut self,
        now: Instant,
        from: A,
        vtag: u64,
        cookie: &[u8; COOKIE_LEN],
        addrs: wire::Addrs<'_>,
    ) {
        let lifetime = self.cfg.cookie_lifetime;
        let opened = self
            .secrets
            .open_cookie(cookie, &(from, addrs.0), now, lifetime);
        let tags = match opened {
            // not for an association that ended since (a replayed echo)
            Ok(t) if t.resp_tag == vtag && !self.closed.refuses(t.resp_tag, t.created) => t,
            Err(CookieError::Forged) => return self.unknown_cookie(now, from, vtag, cookie),
            _ => {
                self.out.stats.stale_dropped += 1;
                return;
            }
        };
        if let Some(s) = self.find_peer(&from) {
            let a = &self.peers[s].assoc;
            let has_peer_tag =
                matches!(a.state, AssocState::CookieEchoed | AssocState::Established);
            if has_peer_tag && a.peer_tag == tags.init_tag && a.local_tag != tags.resp_tag {
                // Two handshakes crossed (simultaneous open where our first
                // answer carried a fresh tag): the same peer, and we have
                // echoed (or took) its cookie carrying our tag; it will take
                // ours, so this one, with another tag of ours, is dropped.
                return;
            }
            if a.state == AssocState::Established {
                if (a.local_tag, a.peer_tag) == (tags.resp_tag, tags.init_tag) {
                    // The echo of this association again (its COOKIE_ACK
                    // was lost, or both ends echoed: simultaneous open):
                    // answer it again, change nothing.
                    let start = self.out.start();
                    wire::encode_cookie_ack(&mut self.out.bytes, &self.cfg.integrity, a.peer_tag);
                    self.out.push(self.back_to(from), start);
                    return;
                }
                if tags.created < a.since {
                    // Made before this association: a late copy, not a restart.
                    self.out.stats.stale_dropped += 1;
                    return;
                }
            }
        }
        // (the cookie's MAC covers the list: its addresses are the INIT's)
        let Some(others) = self.listed(&from, addrs) else {
            self.out.stats.stale_dropped += 1;
            return;
        };
        let slot = self.peer_entry(from);
        let (peer, mut cx) = self.peer_cx(slot);
        peer.accept_association(now, tags.resp_tag, tags.init_tag, &mut cx);
        self.set_remotes(now, slot, &others);
        self.schedule(slot);
    }

    /// A COOKIE_ECHO whose cookie's MAC fails: another secret made it (we
    /// restarted since our INIT_ACK, or it is forged). Dropped, and
    /// answered (rate-limited) with an UNKNOWN_COOKIE to the initiator's
    /// tag it names, carrying the echo's tag: the initiator that echoes
    /// exactly that cookie starts again (`on_unknown_cookie`). Our secret
    /// never opens the cookie later, so the answer cannot be wrong about
    /// it; it is smaller than the echo and says nothing an INIT's answer
    /// would not (no state, no amplification, no tag of ours).
    fn unknown_cookie(&mut self, now: Instant, from: A, vtag: u64, cookie: &[u8; COOKIE_LEN]) {
        self.out.stats.stale_dropped += 1;
        let init_tag = assoc::cookie_init_tag(cookie);
        if init_tag == 0 || vtag == 0 || !self.take_unsolicited(now) {
            return;
        }
        let start = self.out.start();
        wire::encode_unknown_cookie(&mut self.out.bytes, &self.cfg.integrity, init_tag, vtag);
        self.out.push(self.back_to(from), start);
    }

    /// An UNKNOWN_COOKIE: the peer cannot open the cookie we echo. Taken
    /// only while we echo the very cookie it names (our tag `vtag`, the
    /// peer's `resp_tag`): the peer restarted since its INIT_ACK (its new
    /// secret will never open that cookie), so the handshake starts again
    /// with a fresh tag of ours, which nothing of the old one (a late
    /// INIT_ACK, the COOKIE_ACK of the old cookie) can establish. Anything
    /// else is dropped: a late or replayed one names a cookie we no longer
    /// echo, and an established association is never touched.
    pub(super) fn on_unknown_cookie(&mut self, now: Instant, from: A, vtag: u64, resp_tag: u64) {
        let Some(slot) = self.find_peer(&from).filter(|&s| {
            let a = &self.peers[s].assoc;
            a.state == AssocState::CookieEchoed && a.local_tag == vtag && a.peer_tag == resp_tag
        }) else {
            self.out.stats.stale_dropped += 1;
            return;
        };
        let tag = self.secrets.next_tag();
        let (peer, mut cx) = self.peer_cx(slot);
        peer.restart_handshake(now, tag, &mut cx);
        self.schedule(slot);
    }

    pub(super) fn on_cookie_ack(&mut self, now: Instant, from: A, vtag: u64) {
        match self.find_peer(&from) {
            Some(s)
                if self.peers[s].assoc.state == AssocState::CookieEchoed
                    && self.peers[s].assoc.local_tag == vtag =>
            {
                let (peer, mut cx) = self.peer_cx(s);
                peer.confirm(now, &mut cx);
                self.schedule(s);
            }
            // the COOKIE_ACK of a simultaneous open: nothing new
            Some(s)
                if self.peers[s].assoc.state == AssocState::Established
                    && self.peers[s].assoc.local_tag == vtag => {}
            _ => self.out.stats.stale_dropped += 1,
        }
    }

    pub(super) fn on_abort(&mut self, from: A, vtag: u64) {
        match self.find_peer(&from) {
            Some(s) if self.peers[s].assoc.aborted_by(vtag) => {
                let (peer, mut cx) = self.peer_cx(s);
                peer.close(&mut cx);
                self.schedule(s);
            }
            _ => self.out.stats.stale_dropped += 1,
        }
    }

    /// A HEARTBEAT (`ack` false: answered with a HEARTBEAT_ACK echoing
    /// `nonce`, back on the path it came in on) or its answer, inside an
    /// association with `from` (the peer's name, alias or a listed
    /// address) or dropped. An answer counts only when it echoes the
    /// nonce of the heartbeat outstanding on the path it came in on
    /// (`path.rs`): the peer is heard, and that path is confirmed or back;
    /// any other (an old, forged or other path's nonce) changes nothing
    /// and is counted (`stale_dropped`).
    pub(super) fn on_heartbeat(&mut self, now: Instant, from: A, vtag: u64, nonce: u64, ack: bool) {
        let Some(slot) = self
            .find_peer(&from)
            .filter(|&s| self.peers[s].assoc.accepts(vtag))
        else {
            self.out.stats.stale_dropped += 1;
            return;
        };
        let back = self.back_to(from);
        let (peer, mut cx) = self.peer_cx(slot);
        if ack {
            if !peer.on_heartbeat_ack(now, &back, nonce, &mut cx) {
                cx.out.stats.stale_dropped += 1;
                return;
            }
            peer.confirm(now, &mut cx);
        } else {
            peer.confirm(now, &mut cx);
            peer.hear(now);
            let start = cx.out.start();
            let integ = &cx.cfg.integrity;
            wire::encode_heartbeat(&mut cx.out.bytes, integ, peer.assoc.peer_tag, true, nonce);
            cx.out.push(back, start);
        }
        self.schedule(slot);
    }
}
