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
    /// of ours to `to` is queued, in flight or unacknowledged; else
    /// whether we owe it ACKs (which `express_ready` would send). The
    /// usual answer, `Some(false)`, lets the lane write its record with no
    /// other look (`am/express/lane.rs`).
    #[inline]
    pub fn express_quiet(&mut self, to: &A) -> Option<bool> {
        let Some(s) = self.find_peer(to) else {
            return Some(false);
        };
        let p = &self.peers[s];
        if p.tx
            .iter()
            .any(|t| !t.in_flight.is_empty() || !t.pending.is_empty())
        {
            return None;
        }
        Some(
            p.assoc.state == AssocState::Established
                && p.rx.iter().any(|r| r.ack_owed_since.is_some()),
        )
    }

    /// Whether nothing of ours to `to` is queued, in flight or
    /// unacknowledged, on either channel: whatever we sent it before now
    /// has been delivered there (`am/express.rs` may bypass us). If so,
    /// the ACKs we owe it are sent now (the caller transmits them first):
    /// a peer that sends us messages outside the protocol would otherwise
    /// see its own ones unacknowledged for the ACK delay, and never quiet.
    pub fn express_ready(&mut self, to: &A) -> bool {
        let Some(s) = self.find_peer(to) else {
            return true;
        };
        let p = &self.peers[s];
        if p.tx
            .iter()
            .any(|t| !t.in_flight.is_empty() || !t.pending.is_empty())
        {
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
