//! Idle reclaim: an association quiet for `ProtoConfig::idle_timeout`
//! with nothing queued, in flight, held or owed is shut down, and both ends
//! free the peer's state; the next message opens a new association.
//!
//! ```text
//! A (idle for the timeout)                 B
//!   SHUTDOWN     vtag b {n}      ->   B has nothing either: frees the peer
//!             <- SHUTDOWN_ACK vtag a {n}
//!   frees the peer
//! ```
//!
//! - A sends no DATA while the SHUTDOWN is out (a message queued meanwhile
//!   waits); DATA from B (it had something to say: it ignores the SHUTDOWN
//!   while busy) takes A back to established. A resends the SHUTDOWN on the
//!   RTO with a new nonce each time; unanswered for the peer timeout, A
//!   frees the peer (idle: nothing is lost), or, with messages queued
//!   meanwhile, goes back to established and lets the peer timeout judge.
//! - B honours a SHUTDOWN only with its tag and a nonce above every one
//!   seen in the association (a replayed SHUTDOWN counts for nothing).
//! - A SHUTDOWN for no association from an address we have none with (B
//!   freed, its SHUTDOWN_ACK was lost) gets a SHUTDOWN_ACK carrying the
//!   SHUTDOWN's own tag (rate-limited like every unsolicited answer); A
//!   takes it only with one of this shutdown's nonces.
//! - After the SHUTDOWN_ACK, A with messages queued meanwhile opens a new
//!   association at once. Both ends remember their tag as ended, so a
//!   COOKIE_ECHO replayed later cannot bring the association back
//!   (`assoc::ClosedTags`).

use super::timer::Timer;
use super::*;

impl<A: Copy + PartialEq> Peer<A> {
    /// Nothing to say, nothing held, nothing owed: the association may go.
    pub fn quiescent(&self) -> bool {
        !self.busy()
            && self
                .rx
                .iter()
                .all(|r| r.held.is_empty() && r.reassembly.is_none() && r.ack_owed_since.is_none())
    }

    /// The association is established: look at its idleness after the
    /// idle timeout.
    pub fn arm_idle(&mut self, now: Instant, cfg: &ProtoConfig) {
        if cfg.idle_timeout > 0 {
            self.timers
                .set(Timer::Idle, Some(now.plus(cfg.idle_timeout)));
        }
    }

    /// The idle timer: quiet for the idle timeout (nothing heard, nothing
    /// to say, which `heard` covers: our DATA is answered by ACKs), send a
    /// SHUTDOWN; else look again when it could be.
    pub(super) fn on_idle(&mut self, now: Instant, cx: &mut Ctx<'_, A>) {
        self.timers.stop(Timer::Idle);
        let idle = cx.cfg.idle_timeout;
        if idle == 0 || self.assoc.state != AssocState::Established {
            return;
        }
        let due = self.heard.plus(idle);
        if now < due {
            self.timers.set(Timer::Idle, Some(due));
            return;
        }
        if !self.quiescent() {
            self.timers.set(Timer::Idle, Some(now.plus(idle)));
            return;
        }
        self.assoc.state = AssocState::ShutdownSent;
        self.assoc.shutdown_from = self.assoc.shutdown_sent + 1;
        self.assoc.tries = 0;
        self.assoc.init_sent = now;
        self.send_shutdown(cx);
        self.timers
            .set(Timer::Handshake, Some(now.plus(self.rtt.rto())));
    }

    /// Sends a SHUTDOWN with the next nonce.
    fn send_shutdown(&mut self, cx: &mut Ctx<'_, A>) {
        self.assoc.shutdown_sent += 1;
        let start = cx.out.start();
        let (vtag, nonce) = (self.assoc.peer_tag, self.assoc.shutdown_sent);
        wire::encode_shutdown(&mut cx.out.bytes, &cx.cfg.integrity, vtag, false, nonce);
        cx.out.push(self.path(), start);
    }

    /// The SHUTDOWN is unanswered: send it again; past the peer timeout,
    /// free the idle peer (true), or with messages queued meanwhile go back
    /// to the association and let the peer timeout judge.
    pub(super) fn on_shutdown_timeout(&mut self, now: Instant, cx: &mut Ctx<'_, A>) -> bool {
        self.assoc.tries += 1;
        let expired = now.since(self.assoc.init_sent) >= cx.cfg.peer_timeout
            || self.assoc.tries > cx.cfg.retry_limit;
        if !expired {
            self.rtt.on_timeout();
            self.send_shutdown(cx);
            self.timers
                .set(Timer::Handshake, Some(now.plus(self.rtt.rto())));
            return false;
        }
        if self.quiescent() {
            self.end_association(cx);
            return true;
        }
        self.resume(now, cx);
        false
    }

    /// Out of `ShutdownSent` back to established (DATA from the peer, or
    /// an unanswered shutdown with messages queued meanwhile).
    #[inline]
    pub fn resume(&mut self, now: Instant, cx: &mut Ctx<'_, A>) {
        if self.assoc.state == AssocState::ShutdownSent {
            self.assoc.state = AssocState::Established;
            self.assoc.tries = 0;
            self.timers.stop(Timer::Handshake);
            self.rtt.on_progress();
            self.arm_idle(now, cx.cfg);
            for ch in 0..NUM_CHANNELS {
                self.pump(now, ch, cx);
            }
        }
    }
}

impl<A: PeerAddr> Protocol<A> {
    /// A SHUTDOWN: honoured with our tag and a new nonce when we have
    /// nothing for the peer either (answered, the peer freed); ignored
    /// while busy (our DATA tells the peer). For no association at all
    /// with `from`, a rate-limited SHUTDOWN_ACK reflecting its tag.
    pub(super) fn on_shutdown(&mut self, now: Instant, from: A, vtag: u64, nonce: u64) {
        let slot = self
            .find_peer(&from)
            .filter(|&s| self.peers[s].assoc.state != AssocState::Closed);
        let Some(slot) = slot else {
            self.out.stats.stale_dropped += 1;
            if self.take_unsolicited(now) {
                let start = self.out.start();
                wire::encode_shutdown(&mut self.out.bytes, &self.cfg.integrity, vtag, true, nonce);
                self.out.push(self.back_to(from), start);
            }
            return;
        };
        let a = &self.peers[slot].assoc;
        if !a.accepts(vtag) || nonce <= a.shutdown_seen {
            self.out.stats.stale_dropped += 1;
            return;
        }
        let back = self.back_to(from);
        let (peer, mut cx) = self.peer_cx(slot);
        peer.assoc.shutdown_seen = nonce;
        peer.confirm(now, &mut cx);
        peer.hear(now);
        if !peer.quiescent() {
            self.schedule(slot);
            return;
        }
        let start = cx.out.start();
        let integ = &cx.cfg.integrity;
        wire::encode_shutdown(&mut cx.out.bytes, integ, peer.assoc.peer_tag, true, nonce);
        cx.out.push(back, start);
        peer.end_association(&mut cx);
        self.shutdowns += 1;
        self.free_slot(slot);
    }

    /// A SHUTDOWN_ACK of one of our SHUTDOWNs: the peer freed the
    /// association; so do we (or, with messages queued meanwhile, open a
    /// new one for them at once).
    pub(super) fn on_shutdown_ack(&mut self, now: Instant, from: A, vtag: u64, nonce: u64) {
        let Some(slot) = self
            .find_peer(&from)
            .filter(|&s| self.peers[s].assoc.shut_by(vtag, nonce))
        else {
            self.out.stats.stale_dropped += 1;
            return;
        };
        let (peer, mut cx) = self.peer_cx(slot);
        peer.end_association(&mut cx);
        self.shutdowns += 1;
        if !self.peers[slot].busy() {
            self.free_slot(slot);
            return;
        }
        let tag = self.secrets.next_tag();
        let (peer, mut cx) = self.peer_cx(slot);
        peer.start_handshake(now, tag, &mut cx);
        self.schedule(slot);
    }
}
