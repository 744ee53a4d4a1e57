//! Where a new message goes in a send channel's queue (`pending`): a short
//! user message goes ahead of the long user messages (Xfers) queued
//! before it whose sending has not begun (issue 37: a short request
//! waited behind every fragment of every queued Xfer, tens of MiB on a
//! slow link; its latency was seconds).
//!
//! Sequence numbers are given as fragments leave (`transmit`), so the
//! queue's order is the channel's order; the receiver reassembles one
//! message's fragments in sequence, so a message goes only between whole
//! messages, never into one partly sent. Which may pass which, from the
//! contracts (`include/am.h`, "Order": nothing is promised between
//! requests, nor between replies, except that a put or get sent before a
//! request is performed before its handler runs):
//! - `overtakes`: a user request or reply, or an automatic reply, of the
//!   short category, with no flag in its status (not a kept transaction,
//!   not a direct Xfer's descriptor);
//! - `overtaken`: a user request or reply of the long category (an Xfer),
//!   with no flag in its status. (Not a medium one: medium messages are
//!   small as a rule, and programs, ramp's tests among them, count on
//!   short and medium requests running in the order they were sent.)
//!
//! Everything else keeps its place and nothing queued after it passes it:
//! remote memory (put before request), transactions and their probes and
//! acks, name queries, returned messages. Overtakers keep their order
//! among themselves. A message is passed by at most as many bytes of
//! overtakers as it carries itself (counted as in flight, each packet's
//! overhead included): then it keeps its place, and a stream of short
//! messages faster than the link delays a bulk message at most twofold,
//! never starves it.
//!
//! The AM layer's conclusion on the requests to a peer that ended
//! (`am/messages/started.rs`) counts a request's place among the others
//! knowing that an `overtakes` one may have passed the `overtaken` ones
//! sent before it.

use super::*;
use crate::wire::{Category, MsgKind, MsgMeta};

/// Whether a message of `meta` goes ahead of queued `overtaken` messages
/// whose sending has not begun.
#[inline]
pub fn overtakes(meta: &MsgMeta) -> bool {
    matches!(meta.kind, MsgKind::User | MsgKind::AutoReply)
        && meta.category == Category::Short
        && meta.status == 0
}

/// Whether an `overtakes` message may go ahead of a queued message of
/// `meta` (not begun).
#[inline]
pub fn overtaken(meta: &MsgMeta) -> bool {
    meta.kind == MsgKind::User && meta.category == Category::Long && meta.status == 0
}

impl SendChannel {
    /// Queues `msg` as fragments as `cut` says: after every fragment that
    /// keeps its place (`settled`) when it `overtakes`, else at the back.
    #[inline(always)]
    pub fn queue(&mut self, msg: MsgRef, cut: Cut) {
        if self.settled == self.pending.len() || !overtakes(&msg.meta) {
            let keeps = !overtaken(&msg.meta);
            push_fragments(&mut self.pending, msg, cut);
            if keeps {
                self.settled = self.pending.len();
            }
            return;
        }
        self.queue_ahead(msg, cut);
    }

    /// `queue` of a message that overtakes the messages after `settled`
    /// (each passed by at most its own bytes of overtakers).
    #[inline(never)]
    fn queue_ahead(&mut self, msg: MsgRef, cut: Cut) {
        let mut frags = VecDeque::new();
        push_fragments(&mut frags, msg, cut);
        let bytes: u64 = frags.iter().map(|f| flight_len(f.len)).sum();
        while self.settled < self.pending.len() {
            let first = &self.pending[self.settled];
            if self.passed + bytes <= flight_len(first.msg.payload.len() as u32) {
                break;
            }
            // passed enough: it keeps its place
            self.settle_front_message();
        }
        let at = self.settled;
        self.settled += frags.len();
        if at == self.pending.len() {
            self.pending.extend(frags);
            return;
        }
        self.passed += bytes;
        for (i, f) in frags.into_iter().enumerate() {
            self.pending.insert(at + i, f);
        }
    }

    /// The message right after `settled` keeps its place from now on.
    fn settle_front_message(&mut self) {
        let id = self.pending[self.settled].msg.id;
        while self
            .pending
            .get(self.settled)
            .is_some_and(|f| f.msg.id == id)
        {
            self.settled += 1;
        }
        self.passed = 0;
    }

    /// The next fragment to send, off the front of the queue: when it
    /// begins a message that could still be passed, the rest of that
    /// message keeps its place now.
    #[inline]
    pub(super) fn take_next(&mut self) -> Option<Fragment> {
        if self.settled == 0 && !self.pending.is_empty() {
            self.settle_front_message();
        }
        let f = self.pending.pop_front()?;
        self.settled -= 1;
        Some(f)
    }

    /// Counts again what keeps its place after the queue was remade (a new
    /// association or epoch, fragments cut again): all but the whole
    /// unbegun `overtaken` messages at its back.
    pub fn resettle(&mut self) {
        let q = &self.pending;
        let mut i = q.len();
        while i > 0 && overtaken(&q[i - 1].msg.meta) {
            let id = q[i - 1].msg.id;
            let mut j = i - 1;
            while j > 0 && q[j - 1].msg.id == id {
                j -= 1;
            }
            if q[j].off != 0 {
                break; // partly sent
            }
            i = j;
        }
        self.settled = i;
        self.passed = 0;
    }

    /// Whether the queue's order holds what `queue` promises: what follows
    /// `settled` is whole `overtaken` messages not begun
    /// (`Protocol::check_invariants`).
    #[cfg(any(test, feature = "testing"))]
    pub fn check_order(&self) -> Result<(), String> {
        if self.settled > self.pending.len() {
            return Err(format!(
                "{} fragments settled of {} queued",
                self.settled,
                self.pending.len()
            ));
        }
        let mut last = None;
        for f in self.pending.iter().skip(self.settled) {
            if !overtaken(&f.msg.meta) {
                return Err(format!("message {} after the settled ones", f.msg.id));
            }
            if last != Some(f.msg.id) && f.off != 0 {
                return Err(format!("message {} partly sent, not settled", f.msg.id));
            }
            last = Some(f.msg.id);
        }
        Ok(())
    }
}
