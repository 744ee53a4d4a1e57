//! The endpoint's queue of incoming AM messages (in its `EpState`).
//!
//! Ordering: the request channel delivers in order. Each pump of the
//! network drains the protocol's events in order into this queue,
//! performing remote memory messages as they come out (`messages/drain.rs`):
//! a put is therefore performed before any AM request sent after it on the
//! same channel can run its handler (handlers take messages from this
//! queue only).

use std::collections::VecDeque;
use std::net::SocketAddr;

use crate::proto::Event;

/// AM messages drained from the protocol, waiting for a poll.
#[derive(Default)]
pub(crate) struct Incoming {
    /// The messages, in arrival order.
    pub(in crate::am) pending: VecDeque<Event<SocketAddr>>,
    /// Beside each of `pending`: for a request, our tag of the association
    /// it arrived in (0: none; `messages/started.rs`), else 0.
    pub(in crate::am) arrived: VecDeque<u64>,
    /// The first remote memory request not performed yet, while the answers
    /// to its peer back up (`rma/rma_target.rs`); nothing behind it is
    /// drained.
    pub(in crate::am) stalled: Option<Event<SocketAddr>>,
}

impl Incoming {
    /// Queues `ev` last, which arrived under our tag `tag` (0: none).
    #[inline]
    pub(in crate::am) fn push_back(&mut self, ev: Event<SocketAddr>, tag: u64) {
        self.pending.push_back(ev);
        self.arrived.push_back(tag);
    }

    /// Puts `ev` back at the head (it is taken next), with no tag.
    #[inline]
    pub(in crate::am) fn push_front(&mut self, ev: Event<SocketAddr>) {
        self.pending.push_front(ev);
        self.arrived.push_front(0);
    }

    /// Nothing queued and nothing stalled.
    #[inline]
    pub(in crate::am) fn is_quiet(&self) -> bool {
        self.pending.is_empty() && self.stalled.is_none()
    }
}
