//! The express lane beside the protocol (shared-memory rings,
//! `am/express.rs`): its messages queued as delivered among ours, and
//! whether it may bypass us to a peer (nothing of ours unfinished there).

use super::*;

impl<A: PeerAddr> Protocol<A> {
    /// A message that came outside the protocol (an express record of a
    /// shared-memory ring, `am/express.rs`), queued as delivered behind the
    /// messages delivered before it. A request is refused (false) while
    /// `limit` requests wait to be taken.
    pub fn push_delivered(&mut self, from: A, channel: u8, meta: MsgMeta, limit: usize) -> bool {
        if channel == wire::CHANNEL_REQUEST {
            if self.queued_requests >= limit {
                return false;
            }
            self.queued_requests += 1;
        }
        self.out.events.push_back(Event::Delivered {
            from,
            channel,
            meta,
            payload: Vec::new(),
        });
        true
    }

    /// `express_ready`'s question without its act: None when something
    /// of ours to `to` that an express record must not pass is queued, in
    /// flight or unacknowledged (`Peer::express_passes`); else
    /// whether we owe it ACKs (which `express_ready` would send). The
    /// usual answer, `Some(false)`, lets the lane write its record with no
    /// other look (`am/express/lane.rs`).
    #[inline(always)]
    pub fn express_quiet(&mut self, to: &A) -> Option<bool> {
        let Some(s) = self.find_peer(to) else {
            return Some(false);
        };
        let p = &self.peers[s];
        if !p.express_passes() {
            return None;
        }
        Some(
            p.assoc.state == AssocState::Established
                && p.rx.iter().any(|r| r.ack_owed_since.is_some()),
        )
    }

    /// Whether an express record to `to` may go now (`am/express/lane.rs`
    /// may bypass us): nothing of ours to it is queued, in flight or
    /// unacknowledged, on either channel, but messages the record may be
    /// delivered before (`Peer::express_passes`). If so,
    /// the ACKs we owe it are sent now (the caller transmits them first):
    /// a peer that sends us messages outside the protocol would otherwise
    /// see its own ones unacknowledged for the ACK delay, and never quiet.
    pub fn express_ready(&mut self, to: &A) -> bool {
        let Some(s) = self.find_peer(to) else {
            return true;
        };
        let p = &self.peers[s];
        if !p.express_passes() {
            return false;
        }
        // (the context made only when an ACK is owed: the usual look
        // makes none)
        if p.assoc.state == AssocState::Established
            && p.rx.iter().any(|r| r.ack_owed_since.is_some())
        {
            let (p, mut cx) = self.peer_cx(s);
            for ch in 0..NUM_CHANNELS {
                if p.rx[ch].ack_owed_since.is_some() {
                    p.send_ack(ch, &mut cx);
                }
            }
        }
        true
    }
}

impl<A: PeerAddr> Peer<A> {
    /// Whether an express record to this peer may be delivered before
    /// everything of ours to it now queued, in flight or unacknowledged:
    /// nothing at all (the usual look, one test a channel), or, the
    /// association established, only messages that may be overtaken
    /// (`MsgMeta::may_be_overtaken`: short and medium user requests and
    /// replies, automatic replies). Not "nothing" alone: a stream of
    /// requests that went by the protocol (before the ring opened, or
    /// while it was full) always has some in flight, and so do the
    /// answers to it, which kept both ends off the lane for good.
    /// (The usual look inline; the walk through the messages, when there
    /// are some, out of line.)
    #[inline(always)]
    pub(super) fn express_passes(&self) -> bool {
        self.tx
            .iter()
            .all(|t| t.in_flight.is_empty() && t.pending.is_empty())
            || self.express_passes_unfinished()
    }

    #[inline(never)]
    fn express_passes_unfinished(&self) -> bool {
        self.assoc.state == AssocState::Established
            && self.tx.iter().all(|t| {
                t.in_flight
                    .iter()
                    .map(|p| &p.frag)
                    .chain(t.pending.iter())
                    .all(|f| f.msg.meta.may_be_overtaken())
            })
    }
}
