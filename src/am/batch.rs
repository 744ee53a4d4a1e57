//! Requests held back to leave together: Nagle's rule, for requests.
//! Over UDP every datagram costs the sender a system call and the
//! kernel's work (about 3 us here); a burst of small requests to one peer
//! leaves as one datagram (a bundle, `proto/outbox.rs`), and the peer's
//! replies to the requests of one datagram leave together too.

use std::net::SocketAddr;

use super::endpoint::{Endpoint, EpState};
use crate::time::Instant;

/// Requests held back to leave together (Nagle's rule, for requests):
/// a small request to a peer reached over UDP (not a shared-memory ring)
/// that still owes the answer to an earlier one waits in the send queue
/// until `max` of them are queued (they then leave as one datagram, a
/// bundle), or the endpoint's next poll, wait, drain or other request (a
/// request polls when the endpoint was not polled in the last 20 us), or
/// the progress thread's next pass (woken by that earlier answer's
/// arrival), or the endpoint's release, or the process's exit. The program must call ramp to receive that answer,
/// and a lost datagram already waits for such a call to be sent again; a
/// lone request, a ping-pong's, never waits. `RAMP_REQUEST_BATCH`.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Batch {
    /// Most requests in one batch; 0 or 1: none held.
    pub max: u16,
    /// Requests queued and not yet transmitted.
    pub held: u16,
    /// Their destination: a request to another peer sends them first.
    pub to: Option<SocketAddr>,
    /// When the first of them was queued: the protocol's timers of what
    /// was queued since start when they leave (`Protocol::restamp`).
    pub since: Instant,
}

/// The largest payload a held request may carry: small requests join
/// into one datagram; a large one fills a datagram of its own anyway.
const HOLD_MAX_PAYLOAD: usize = 1024;

impl EpState {
    /// Whether the request just queued for `to` (with `len` bytes of
    /// payload) may wait for its batch (`Batch`) instead of being sent now.
    pub(super) fn hold_request(&mut self, now: Instant, to: SocketAddr, len: usize) -> bool {
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

    /// Sends the requests held for a batch now, if any (before a pump
    /// looks at timers, before a sleep, when the endpoint closes).
    #[inline]
    pub(super) fn send_held(&mut self, now: Instant) {
        if self.batch.held > 0 {
            self.flush(now);
        }
    }

    /// The held requests are being transmitted: their retransmission and
    /// probe timers start now, not when they were queued (a request held
    /// while the program computed is neither resent nor a late answer).
    pub(super) fn release_batch(&mut self, now: Instant) {
        if let Some(to) = self.batch.to.take() {
            self.proto
                .restamp(&to, crate::wire::CHANNEL_REQUEST, self.batch.since, now);
        }
        self.batch.held = 0;
    }
}

impl Endpoint {
    /// At process exit: sends the requests held for a batch, unless
    /// another thread holds the endpoint (waiting could hang the exit).
    pub(super) fn send_held_at_exit(&self) {
        self.try_with(|s| s.send_held(Instant::now()));
    }
}
