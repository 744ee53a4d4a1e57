//! The in-order draining of the protocol's events: each pump of the
//! network moves them, in order, into the queue of AM messages
//! (`queue/incoming.rs`), handing remote memory ones to remote memory as
//! they come out (`rma/rma_target.rs`: performed, answered, or a failure
//! reported), so that a put is performed before any AM request sent after
//! it on the same channel can run its handler; and the next message for a
//! handler, taken from that queue.

use std::net::SocketAddr;

use crate::am::endpoint::core::EpState;
use crate::am::messages::started::{arrival_tag, Gate};
use crate::proto::Event;
use crate::time::Instant;
use crate::wire::{MsgKind, CHANNEL_REQUEST};

impl EpState {
    /// Moves the protocol's events, in order, into the queue of AM messages,
    /// performing (or completing) remote memory ones as they come out.
    /// AM messages wait here (taken from the protocol, so no longer counted
    /// in its receive buffer) up to the receive depth; beyond, they wait in
    /// the protocol, whose receive buffer then refuses more.
    #[inline]
    pub(in crate::am) fn drain_events(&mut self, now: Instant) {
        if self.incoming.stalled.is_none() && self.proto.peek_event().is_none() {
            return; // an empty poll's usual case (tested inline: no call)
        }
        self.drain_some(now);
    }

    /// `drain_events` when there is something to drain.
    #[inline(never)]
    fn drain_some(&mut self, now: Instant) {
        let max_pending = self.proto.recv_depth().max(1);
        if self.take_all_events(max_pending) {
            self.release_held();
            return;
        }
        while self.incoming.pending.len() < max_pending {
            // (`take` only when there is one: the move of an empty slot
            // costs as much as an event's)
            let stalled = match self.incoming.stalled {
                Some(_) => self.incoming.stalled.take(),
                None => None,
            };
            let ev = match stalled {
                Some(ev) => ev,
                None => {
                    // An AM message (the usual case) is judged where it
                    // lies and moved once, into the queue.
                    let tag = match self.proto.peek_event() {
                        None => break,
                        Some(Event::Delivered {
                            from,
                            channel,
                            meta,
                            ..
                        }) if !meta.kind.is_rma() => {
                            if *channel == CHANNEL_REQUEST
                                && meta.kind == MsgKind::User
                                && !meta.express
                            {
                                Some(arrival_tag(self, from))
                            } else {
                                Some(0)
                            }
                        }
                        Some(Event::Failed { meta, .. }) if !meta.kind.is_rma() => Some(0),
                        Some(_) => None,
                    };
                    if let Some(tag) = tag {
                        if let Some(ev) = self.proto.poll_event() {
                            self.incoming.pending.push_back(ev);
                            self.incoming.arrived.push_back(tag);
                        }
                        continue;
                    }
                    match self.proto.poll_event() {
                        Some(ev) => ev,
                        None => break,
                    }
                }
            };
            if let Event::Delivered {
                from,
                channel,
                meta,
                ..
            } = &ev
            {
                if *channel == CHANNEL_REQUEST && meta.kind.is_rma() && self.rma_backlogged(from) {
                    self.incoming.stalled = Some(ev);
                    break;
                }
            }
            match ev {
                Event::Delivered { ref meta, .. } | Event::Failed { ref meta, .. }
                    if meta.kind.is_rma() =>
                {
                    self.rma_event(now, ev)
                }
                ev => {
                    let tag = match &ev {
                        Event::Delivered {
                            from,
                            channel: CHANNEL_REQUEST,
                            meta,
                            ..
                        } if meta.kind == MsgKind::User => arrival_tag(self, from),
                        _ => 0,
                    };
                    self.incoming.pending.push_back(ev);
                    self.incoming.arrived.push_back(tag);
                }
            }
        }
        self.release_held();
    }

    /// `drain_some`'s usual case, done without moving an event: nothing
    /// waits here, and what the protocol holds is AM messages only, no
    /// more than the queue takes. Their queue becomes ours (the tags judged
    /// where they lie, as the loop would). False (nothing done) otherwise.
    fn take_all_events(&mut self, max_pending: usize) -> bool {
        if !self.incoming.pending.is_empty() || self.incoming.stalled.is_some() {
            return false;
        }
        if self.proto.events().len() > max_pending {
            return false;
        }
        for ev in self.proto.events() {
            let tag = match ev {
                Event::Delivered { meta, .. } | Event::Failed { meta, .. }
                    if meta.kind.is_rma() =>
                {
                    self.incoming.arrived.clear();
                    return false;
                }
                Event::Delivered {
                    from,
                    channel: CHANNEL_REQUEST,
                    meta,
                    ..
                } if meta.kind == MsgKind::User && !meta.express => arrival_tag(self, from),
                _ => 0,
            };
            self.incoming.arrived.push_back(tag);
        }
        self.proto.take_events(&mut self.incoming.pending);
        true
    }

    /// The next AM message for a handler, in arrival order.
    pub(in crate::am) fn next_event(&mut self, now: Instant) -> Option<Event<SocketAddr>> {
        if self.incoming.pending.is_empty() {
            self.drain_events(now);
            if self.incoming.pending.is_empty() {
                // (a dispatch's last look, after its messages: no gate)
                return None;
            }
        }
        // a request waits while its sender has many answers open
        self.take_head(now)
    }

    /// Nothing for a handler now and nothing the protocol holds for the
    /// queue: a dispatch would find nothing.
    pub(in crate::am) fn nothing_to_dispatch(&self) -> bool {
        self.incoming.pending.is_empty()
            && self.incoming.stalled.is_none()
            && self.proto.peek_event().is_none()
    }

    pub(in crate::am) fn has_pending(&self) -> bool {
        !self.incoming.pending.is_empty() && self.head_gate() != Gate::Hold
    }
}
