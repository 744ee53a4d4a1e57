//! The express lane's fast poll: when nothing else waits for a handler, an
//! express record at the head of a ring (`net/express.rs`) is checked and
//! its handler run straight away, without the full receive
//! (`driver.rs`'s pump over every transport, timers and queues) and
//! without a trip through the delivered queue (`queue/incoming.rs`).
//!
//! The same checks and the same dispatch as the full path: the record is
//! checked as `ExpressState::check` checks it (a reply only for an express
//! request of ours to that ring's writer, not yet answered), then goes
//! through `EpState::prepare` (arrival checks, credits, transactions) and
//! `Endpoint::run` (token, handler, automatic reply), as a record queued by
//! the full path would, just sooner. A request or reply that passes the
//! arrival checks goes more directly still (`run_express_record`): the
//! same checks and counts, its token made from the record where it lies
//! in the live list; an automatic reply's ids are completed as directly
//! (`express_answers`: no event, no handler). The records behind the
//! first are taken in the same poll (up to the endpoint's depth, at least
//! 10) while nothing else waits and the last take saw something behind
//! its record (`TakenRecord::more`: a ping-pong's lone record costs no
//! second look).
//!
//! When: a top-level poll (not from a handler), the endpoint ready, nothing
//! queued or stalled for a handler (so the record cannot overtake a
//! message delivered before it; and it is the head of its ring, after
//! everything that ring brought), no request held for a batch, nothing
//! refused waiting to be returned. Anything else at a ring's head and the
//! poll takes the full path as before. After `STREAK` fast ones in a
//! row a full poll follows when it has work due (`full_poll_due`), so
//! UDP, timers and the rest are never starved by a stream of records.
//!
//! An empty look (nothing at any ring) ends the poll too while the full
//! one has nothing due: less than `FULL_EVERY` since the last one, or no
//! protocol timer or transaction probe due and the transports quiet (the
//! UDP socket in its gap, their periodic work not due,
//! `Transports::quiet_until`); at most `FULL_MAX` and `QUICK_MAX` looks.
//! A busy-polling loop spends its time looking at the rings, not on the
//! UDP socket's gap, timers and queues when nothing there is due. The
//! poll's one clock read comes before the look, so no clock read lies
//! between a record's arrival and its handler.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::am::endpoint::core::{Endpoint, EpState, Guard};
use crate::am::handler::args::{Data, HandlerArgs};
use crate::am::handler::tables::tag_accepts;
use crate::am::messages::token::{self, LiveToken, TokenInfo};
use crate::am::state::express::ExpressSource;
use crate::net::express::{ExpressKind, ExpressTake, Head, MAX_ARGS};
use crate::proto::Event;
use crate::time::Instant;
use crate::wire::{Category, CHANNEL_REQUEST};

/// Fast polls in a row that took records before the full poll is asked
/// whether it has work due (`full_poll_due`).
const STREAK: u32 = 8;
/// Empty fast polls after a full one before the next, at most...
const QUICK_MAX: u32 = 1024;
/// ...never fewer than this apart...
const FULL_EVERY: crate::time::Nanos = crate::time::MICROS;
/// ...and at most this long apart, even when nothing is due.
const FULL_MAX: crate::time::Nanos = 50 * crate::time::MICROS;

impl Endpoint {
    /// The fast poll at `now`: true when it took express records, or found
    /// nothing while a full poll is not due (the poll is done); false
    /// when the full poll must run.
    pub(in crate::am) fn poll_express(self: &Arc<Self>, g: &Guard<'_>, now: Instant) -> bool {
        let limit = {
            let mut st = g.borrow_mut();
            if !st.express_fast_ok() {
                return false;
            }
            if st.express.fast_streak >= STREAK {
                if st.full_poll_due(now) {
                    return false;
                }
                st.express.fast_streak = 0;
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
            st.dispatch_nesting += 1;
            (st.depth.unwrap_or(1) as usize).max(10)
        };
        // the record taken, then those behind it while nothing else waits
        // (a record dropped on arrival runs nothing: the next one then)
        for i in 0..limit {
            if i > 0 {
                // (the dispatch ends in the same borrow when no record
                // follows: a ping-pong's usual end)
                let mut st = g.borrow_mut();
                if !st.take_next_express() {
                    st.dispatch_ended(now);
                    return true;
                }
            }
            if self.run_express_record(g, now) {
                continue;
            }
            // anything else: checked, then `prepare` (a record dropped on
            // arrival gives no event). (This loop is `dispatch_from`'s
            // shape, written out: sharing its body through a closure cost
            // 7-10 ns per one-way request in benches/am_cost, 172-180 ns
            // against 169-171.)
            let mut work = {
                let mut st = g.borrow_mut();
                // an automatic reply: its ids completed, nothing to run
                if st.express_answers(now) {
                    continue;
                }
                let ev = st.express_event();
                if ev.is_none() {
                    continue;
                }
                st.prepare(self, ev, now)
            };
            if let Some(w) = work.as_mut() {
                self.run(g, w, now);
            }
        }
        g.borrow_mut().dispatch_ended(now);
        true
    }

    /// The record taken (`express_rx`), when it is an express request or
    /// reply that passes the arrival checks (`AdmitParts::admit`'s for a
    /// short message; a reply's, `ExpressState::check`'s: it answers an
    /// express request of ours to that ring's writer, not yet answered):
    /// its handler run straight from it, its token made in place in the
    /// live list; true when done. (Most of a short message's cost went to
    /// copying its event, its prepared work and its token on the way.)
    /// False: anything else, for the general way (`express_event`,
    /// `prepare`, `run`), which also refuses or drops what fails the
    /// checks, and counts it.
    fn run_express_record(self: &Arc<Self>, g: &Guard<'_>, now: Instant) -> bool {
        let mut args = [0u32; MAX_ARGS];
        let (f, live, x, from) = {
            let mut st = g.borrow_mut();
            let st = &mut *st;
            let from = st.express_rx.from;
            // (its fields, not a whole record copied out: its arguments
            // read where they lie, into the handler's)
            let Some(x) = Head::decode(st.express_rx.record()) else {
                return false;
            };
            let is_request = match x.kind {
                ExpressKind::Request => true,
                ExpressKind::Reply => false,
                ExpressKind::AutoReply => return false,
            };
            if x.handler == 0 || !tag_accepts(st.tag, x.tag) {
                return false;
            }
            let source = st.express_source();
            if is_request && source.is_none() {
                return false;
            }
            let Some(f) = st.handlers.get(x.handler).cloned() else {
                return false;
            };
            // a reply: it answers an express request of ours to `from`,
            // not yet answered, which it completes (its credit back)
            if !is_request && !st.complete_express(from, x.txn, now) {
                return false;
            }
            let c = Category::Short.index();
            // counted as `ExpressState::check` and `prepare` count it
            st.stats.packets_received += 1;
            if is_request {
                st.express.stats.requests_received += 1;
                st.stats.requests_received[c] += 1;
                // open until answered (`started.rs`)
                st.request_opened();
            } else {
                st.express.stats.replies_received += 1;
                // (completed above; `reply_arrived`'s rest)
                if st.txn.any() {
                    st.txn_replied(from, x.txn, now);
                }
                st.stats.replies_received[c] += 1;
            }
            x.args(st.express_rx.record(), &mut args);
            let live = LiveToken::push_with(&st.express_rx.from, |id| TokenInfo {
                id,
                endpoint: self.clone(),
                source_addr: token::SOURCE_UNSET,
                source_id: source.map_or(-1, |i| i as i32),
                tag: x.tag,
                handler: x.handler,
                category: Category::Short,
                nargs: x.nargs,
                args,
                is_request,
                returned: false,
                loopback: false,
                txn: x.txn,
                replied: false,
                keep: false,
                may_have_run: false,
                express: is_request,
            });
            (f, live, x, from)
        };
        let mut ha = HandlerArgs {
            token: live.id(),
            args: &args[..(x.nargs as usize).min(MAX_ARGS)],
            data: Data::None,
        };
        f(&mut ha);
        let replied = live.finish() == Some(true);
        if x.kind == ExpressKind::Request {
            g.borrow_mut()
                .request_handled(now, from, x.txn, true, replied);
        }
        true
    }
}

impl EpState {
    /// The automatic replies the fast poll took (`express_rx`): each id
    /// completed as `complete_express` completes one (an express request
    /// of ours to `from`, not yet answered: its credit back) and counted
    /// as `ExpressState::check` and `prepare` count it; an id that answers
    /// nothing (forged, repeated) is dropped and counted, frees nothing.
    /// True when the record was one (done); false: anything else. (The
    /// general way made an event, prepared it and looked each id up
    /// twice: `benches/am_cost` one way, one thread, 16 ids a record,
    /// 1,924 -> 1,861 instructions a request, both ends. Out of line and
    /// apart from `run_express_record`: inside it, the round trip's
    /// record cost ~20 instructions more.)
    #[inline(never)]
    fn express_answers(&mut self, now: Instant) -> bool {
        let from = self.express_rx.from;
        let x = match Head::decode(self.express_rx.record()) {
            Some(x) if x.kind == ExpressKind::AutoReply => x,
            _ => return false,
        };
        let mut ids = [0u32; MAX_ARGS];
        x.args(self.express_rx.record(), &mut ids);
        let more = &ids[..(x.nargs as usize).min(MAX_ARGS)];
        self.stats.packets_received += 1;
        let c = Category::Short.index();
        for &id in std::iter::once(&x.txn).chain(more) {
            if self.complete_express(from, id, now) {
                self.express.stats.replies_received += 1;
                if self.txn.any() {
                    self.txn_replied(from, id, now);
                }
                self.stats.replies_received[c] += 1;
            } else {
                self.express.stats.dropped += 1;
                self.stats.stale_dropped += 1;
            }
        }
        true
    }

    /// A fast poll at `now` that found nothing at the rings: true (the
    /// poll is done) while the last full poll is less than `FULL_EVERY`
    /// old and fewer than `QUICK_MAX` quick ones followed it; false: a
    /// full poll now.
    fn quick_empty_poll(&mut self, now: Instant) -> bool {
        if self.express.quick_polls < QUICK_MAX && !self.full_poll_due(now) {
            self.express.quick_polls += 1;
            return true;
        }
        false
    }

    /// Whether a full poll at `now` has work due: `FULL_EVERY` after the
    /// last one, a protocol timer or a kept transaction's probe due, or
    /// the transports' quiet time over (`Transports::quiet_until`: the
    /// fallback's gap, their periodic work); at the latest `FULL_MAX`
    /// after the last one. (A full poll when nothing was due cost a
    /// busy-polling loop ~500 instructions every microsecond, and a record
    /// that came meanwhile waited for it.)
    #[inline]
    fn full_poll_due(&self, now: Instant) -> bool {
        let x = &self.express;
        let age = now.since(x.full_at);
        age >= FULL_EVERY
            && (age >= FULL_MAX
                || now >= x.full_by
                || self.proto.next_timeout().is_some_and(|t| t <= now)
                || self.txn.due.is_some_and(|d| d <= now))
    }

    /// The fast poll's look for a drain (`bundle/pull.rs`, the pull-style
    /// receive of the bindings): Some(true) when it took a record into
    /// `express_rx` (its event then `express_event`'s, those behind it
    /// `take_next_express`'s); Some(false) when it found nothing and no
    /// full poll is due (the drain hands out nothing); None: the full
    /// drain (pump, queue). The same conditions as the fast poll's.
    pub(in crate::am) fn express_drain_take(&mut self, now: Instant) -> Option<bool> {
        if !self.express_fast_ok() {
            return None;
        }
        if self.express.fast_streak >= STREAK {
            if self.full_poll_due(now) {
                return None;
            }
            self.express.fast_streak = 0;
        }
        match self.transports.express_take(&mut self.express_rx) {
            ExpressTake::Record => {}
            ExpressTake::Nothing => return self.quick_empty_poll(now).then_some(false),
            ExpressTake::Other => return None,
        }
        self.last_pump = self.last_pump.max(now);
        self.express.fast_streak += 1;
        self.express.stats.fast += 1;
        Some(true)
    }

    /// Takes the next express record at a ring's head into `express_rx`
    /// while nothing else waits for a handler and the last take saw
    /// something behind its record; false: none (for this fast poll).
    pub(in crate::am) fn take_next_express(&mut self) -> bool {
        if !self.express_rx.more
            || !self.nothing_to_dispatch()
            || self.transports.express_take(&mut self.express_rx) != ExpressTake::Record
        {
            return false;
        }
        self.express.stats.fast += 1;
        true
    }

    /// The translation index of the taken record's writer
    /// (`TranslationTable::index_of`), kept while neither its writer
    /// (`TakenRecord::from_gen`) nor the table changes (`ExpressSource`).
    #[inline]
    fn express_source(&mut self) -> Option<u32> {
        let (from_gen, table_gen) = (self.express_rx.from_gen, self.table.generation());
        let c = self.express.source;
        if c.from_gen == from_gen && c.table_gen == table_gen {
            return c.index;
        }
        let index = self.table.index_of(&self.express_rx.from);
        self.express.source = ExpressSource {
            from_gen,
            table_gen,
            index,
        };
        index
    }

    /// Whether the fast poll may run now (see the module doc).
    fn express_fast_ok(&self) -> bool {
        // (an endpoint without a ring, UDP only, first: its polls pay
        // one test for the fast poll)
        self.transports.has_shared_memory()
            && self.depth.is_some()
            && self.dispatch_nesting == 0
            && self.batch.to.is_none()
            && self.express.refused.is_empty()
            && self.nothing_to_dispatch()
    }

    /// The record the fast poll took (`express_rx`), checked (as the
    /// full path checks it) into the event a dispatch takes; None:
    /// dropped and counted.
    pub(in crate::am) fn express_event(&mut self) -> Option<Event<SocketAddr>> {
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
