//! Requests held back to leave together: Nagle's rule, for requests.
//! Over UDP every datagram costs the sender a system call and the
//! kernel's work (about 3 us here); a burst of small requests to one peer
//! leaves as one datagram (a bundle, `proto/outbox.rs`), and the peer's
//! replies to the requests of one datagram leave together too.

use std::net::SocketAddr;

use crate::am::endpoint::core::{Endpoint, EpState};
use crate::am::handler::message::Message;
use crate::time::Instant;

/// The longest a long request's last fragment waits for the next request
/// (a 64 KiB Xfer leaves every 20-40 us in a stream); far below the
/// protocol's first timer for it (the tail-loss probe: twice the ACK
/// delay at least, 400 us).
pub(in crate::am) const TAIL_HOLD: crate::time::Nanos = 200 * crate::time::MICROS;

/// The largest payload a held request may carry: small requests join
/// into one datagram; a large one fills a datagram of its own anyway.
const HOLD_MAX_PAYLOAD: usize = 1024;

impl EpState {
    /// Whether the request just queued for `to` (with `len` bytes of
    /// payload) may wait for its batch (`Batch`) instead of being sent now.
    pub(in crate::am) fn hold_request(&mut self, now: Instant, to: SocketAddr, len: usize) -> bool {
        let b = &mut self.batch;
        if len > HOLD_MAX_PAYLOAD || b.held + 1 >= b.max || b.to.is_some_and(|t| t != to) {
            return false;
        }
        if !self.transports.on_fallback(to) {
            // a shared-memory ring: no system call to save, and a request
            // queued in the protocol would close the express lane
            return false;
        }
        if self.proto.queued_transmits() != b.held as usize + 1 {
            // something else waits too (an ACK, a handshake), or the request
            // is not queued (the window is full): not ours to hold
            return false;
        }
        if b.held == 0 {
            b.since = now;
        }
        b.held += 1;
        b.to = Some(to);
        true
    }

    /// Sends the requests held for a batch now, if any, and a long
    /// request's last fragment held longer than `TAIL_HOLD` (before a pump
    /// looks at timers).
    #[inline]
    pub(in crate::am) fn send_held(&mut self, now: Instant) {
        if self.batch.tail && now.since(self.batch.since) >= TAIL_HOLD {
            self.batch.tail = false;
        }
        if self.batch.to.is_some() && !self.batch.tail {
            self.flush(now);
        }
    }

    /// Sends everything held now (before a sleep, when the endpoint
    /// closes, at exit), the express records a ring holds too.
    pub(in crate::am) fn send_all_held(&mut self, now: Instant) {
        self.transports.release_held();
        self.tail_due();
        if self.batch.to.is_some() {
            self.flush(now);
        }
    }

    /// A held last fragment, if any, leaves with the next flush (its
    /// timers restamped from when it was held, as held requests' are).
    #[inline]
    pub(in crate::am) fn tail_due(&mut self) {
        self.batch.tail = false;
    }

    /// A long request to `to` was just queued (`busy`: an earlier request
    /// to it is unanswered, so the program will call ramp again to take
    /// that answer): when it is two fragments, its last, small when the
    /// first is full, may wait in the send queue for the next long
    /// request's first fragment to join it in one datagram (`proto/outbox.rs`; a 64 KiB Xfer is a datagram of 65,507
    /// bytes and one of ~100 over UDP), until the next message that is not
    /// such a long request (a request, a reply, remote memory: `tail_due`
    /// in `send_request` and `send_message`), a poll, wait or drain that
    /// finds it older than `TAIL_HOLD`, a sleep, the endpoint's release or
    /// the process's exit. A ring's peer: no system call to
    /// save. Set before the flush that keeps it.
    pub(in crate::am) fn tail_hold(
        &mut self,
        now: Instant,
        to: SocketAddr,
        msg: &Message<'_>,
        busy: bool,
    ) {
        // two fragments: the second small when the first is full (a
        // longer message's first fragment is never cut, `send::cut_to_room`:
        // its last would only wait)
        let (len, cap) = (
            msg.payload.len(),
            self.proto.fragment_capacity(msg.args.len()),
        );
        if !busy || len <= cap || len > 2 * cap || !self.transports.on_fallback(to) {
            return self.tail_due();
        }
        if self.batch.held > 0 || (self.batch.tail && self.batch.to != Some(to)) {
            // held requests, or another peer's fragment: they go first
            self.send_all_held(now);
        }
        self.batch.tail = true;
        self.batch.to = Some(to);
        self.batch.since = now;
    }

    /// Hands the protocol's datagrams to the transports while something
    /// is held (`batch.to`), keeping a held last fragment (`tail_hold`)
    /// while its time is not up. What was held longer has its timers
    /// start when it leaves.
    pub(in crate::am) fn drain_holding(&mut self, now: Instant) {
        let to = match self.batch.to {
            Some(to) if self.batch.tail && now.since(self.batch.since) < TAIL_HOLD => to,
            _ => {
                self.batch.tail = false;
                self.release_batch(now);
                return self.drain_transmits(now);
            }
        };
        if !self.drain_transmits_keeping(now, to) {
            // nothing stayed (it went with the rest): no hold
            self.batch.tail = false;
            self.batch.to = None;
        }
    }

    /// The held requests are being transmitted: their retransmission and
    /// probe timers start now, not when they were queued (a request held
    /// while the program computed is neither resent nor a late answer).
    pub(in crate::am) fn release_batch(&mut self, now: Instant) {
        if let Some(to) = self.batch.to.take() {
            // the held requests, each a packet, or (none) a last fragment:
            // the last packets queued to `to` (a request sent before the
            // hold began, at the same instant, is not one of them)
            let held = usize::from(self.batch.held.max(1));
            let since = self.batch.since;
            self.proto
                .restamp(&to, crate::wire::CHANNEL_REQUEST, since, now, held);
        }
        self.batch.held = 0;
    }
}

impl Endpoint {
    /// At process exit: sends the requests held for a batch, unless
    /// another thread holds the endpoint (waiting could hang the exit).
    pub(in crate::am) fn send_held_at_exit(&self) {
        self.try_with(|s| s.send_all_held(s.clock.now()));
    }
}
