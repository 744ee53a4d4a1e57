//! The express lane's fast poll: when nothing else waits for a handler, an
//! express record at the head of a ring (`net/express.rs`) is checked and
//! its handler run straight away, without the full receive
//! (`driver.rs`'s pump over every transport, timers and queues) and
//! without a trip through the delivered queue (`rma_target.rs`).
//!
//! The same checks and the same dispatch as the full path: the record is
//! checked as `ExpressState::check` checks it (a reply only for an express
//! request of ours to that ring's writer, not yet answered), then goes
//! through `EpState::prepare` (arrival checks, credits, transactions) and
//! `Endpoint::run` (token, handler, automatic reply), as a record queued by
//! the full path would, just sooner.
//!
//! When: a top-level poll (not from a handler), the endpoint ready, nothing
//! queued or stalled for a handler (so the record cannot overtake a
//! message delivered before it; and it is the head of its ring, after
//! everything that ring brought), no request held for a batch, nothing
//! refused waiting to be returned. Anything else at a ring's head and the
//! poll takes the full path as before. A full poll follows at most
//! `STREAK` fast ones in a row, so UDP, timers and the rest are never
//! starved by a stream of records.
//!
//! An empty look (nothing at any ring) ends the poll too while the last
//! full one is recent (`FULL_EVERY`, and at most `QUICK_MAX` looks): a
//! busy-polling loop spends its time looking at the rings, not on the UDP
//! socket's gap, timers and queues, which a full poll still serves every
//! microsecond. The poll's one clock read comes before the look, so no
//! clock read lies between a record's arrival and its handler.

use std::sync::Arc;

use super::endpoint::{Endpoint, EpState, Guard};
use crate::net::express::ExpressTake;
use crate::proto::Event;
use crate::time::Instant;
use crate::wire::CHANNEL_REQUEST;

/// Fast polls in a row that took records before a full one.
const STREAK: u32 = 8;
/// Empty fast polls after a full one before the next, at most...
const QUICK_MAX: u32 = 64;
/// ...and the longest they go on.
const FULL_EVERY: crate::time::Nanos = crate::time::MICROS;

impl Endpoint {
    /// The fast poll at `now`: true when it took express records, or found
    /// nothing while a full poll is not due (the poll is done); false
    /// when the full poll must run.
    pub(super) fn poll_express(self: &Arc<Self>, g: &Guard<'_>, now: Instant) -> bool {
        let (first, limit) = {
            let mut st = g.borrow_mut();
            if !st.express_fast_ok() {
                return false;
            }
            let st = &mut *st;
            match st.transports.express_take(&mut st.express_rx) {
                ExpressTake::Record => {}
                // nothing at any ring: the full poll only when due
                ExpressTake::Nothing => return st.quick_empty_poll(now),
                ExpressTake::Other => return false,
            }
            st.last_pump = st.last_pump.max(now);
            st.express.fast_streak += 1;
            st.express.stats.fast += 1;
            let limit = (st.depth.unwrap_or(1) as usize).max(10);
            // (a record dropped on arrival runs nothing: the next one then)
            let first = match st.express_event() {
                Some(ev) => Some(ev),
                None => st.next_express_event(limit),
            };
            (first, limit)
        };
        // (shaped so on purpose: `express_event().or_else(..)` kept in
        // one Option cost a copy of the event and a store-forwarding
        // stall, 25 ns per round trip in benches/am_cost)
        let Some(first) = first else {
            return true;
        };
        let mut first = Some(first);
        self.dispatch_from(g, limit, now, |st| {
            first.take().or_else(|| st.next_express_event(limit))
        });
        true
    }
}

impl EpState {
    /// A fast poll at `now` that found nothing at the rings: true (the
    /// poll is done) while the last full poll is less than `FULL_EVERY`
    /// old and fewer than `QUICK_MAX` quick ones followed it; false: a
    /// full poll now.
    fn quick_empty_poll(&mut self, now: Instant) -> bool {
        let x = &mut self.express;
        if x.quick_polls < QUICK_MAX && now.since(x.full_at) < FULL_EVERY {
            x.quick_polls += 1;
            return true;
        }
        false
    }

    /// The event of the next express record at a ring's head while
    /// nothing else waits for a handler, past at most `tries` records
    /// dropped on arrival; None: no more for this fast poll.
    fn next_express_event(&mut self, tries: usize) -> Option<Event<std::net::SocketAddr>> {
        for _ in 0..tries {
            if !self.nothing_to_dispatch() {
                return None;
            }
            if self.transports.express_take(&mut self.express_rx) != ExpressTake::Record {
                return None;
            }
            self.express.stats.fast += 1;
            if let Some(ev) = self.express_event() {
                return Some(ev);
            }
        }
        None
    }

    /// Whether the fast poll may run now (see the module doc).
    fn express_fast_ok(&self) -> bool {
        // (an endpoint without a ring, UDP only, first: its polls pay
        // one test for the fast poll)
        self.transports.has_preferred()
            && self.depth.is_some()
            && self.dispatch_nesting == 0
            && self.express.fast_streak < STREAK
            && self.batch.held == 0
            && self.express.refused.is_empty()
            && self.nothing_to_dispatch()
    }

    /// The record the fast poll took (`express_rx`), checked (as the
    /// full path checks it) into the event a dispatch takes; None:
    /// dropped and counted.
    fn express_event(&mut self) -> Option<Event<std::net::SocketAddr>> {
        let from = self.express_rx.from;
        let rec = self.express_rx.record();
        let ev = self
            .express
            .check(&mut self.outstanding, &mut self.stats, from, rec);
        if let Some(Event::Delivered {
            channel: CHANNEL_REQUEST,
            ..
        }) = ev
        {
            self.express.stats.requests_received += 1;
        }
        ev
    }
}

#[cfg(test)]
#[path = "express_poll_tests.rs"]
mod tests;
