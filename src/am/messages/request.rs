//! The request path: a request takes one of its destination's credits
//! (network depth) and waits, polling, until one is free; the reply (or the
//! request's refusal or failure) gives the credit back.

use std::net::SocketAddr;
use std::sync::Arc;

use super::token;
use crate::am::endpoint::core::{Endpoint, EpState};
use crate::am::handler::message::Message;
use crate::am::state::outstanding::Outstanding;
use crate::error::{Error, Result};
use crate::net::express::ExpressKind;
use crate::time::Instant;
use crate::wire::{Category, CHANNEL_REQUEST};

/// A request polls before sending, unless the endpoint was polled this
/// recently (in a poll loop the extra empty receive only adds latency).
const RECENT_POLL: u64 = 20 * crate::time::MICROS;

/// A long message's copy waits while this many fragments to its peer wait
/// for the window (about one chunk's worth): a put's next chunk
/// (`am/rma/initiator.rs`) and a request of `BACKLOG_WAIT_MIN` bytes or more.
pub(in crate::am) const COPY_BACKLOG: usize = 4;

/// A request whose payload is at least this long (more than one datagram
/// carries) waits (polling) before it is copied while its peer's request
/// channel has `COPY_BACKLOG` fragments queued behind the window, as a
/// put's chunk does (`am/rma/initiator.rs`), for the same reasons: the
/// copy is made just before its datagrams go, so the MAC and the kernel's
/// copy find the bytes in the cache, and the buffers in flight are the
/// ones the protocol's pool gives back, not fresh pages. Without it,
/// AMX's network depth (128 credits) of 1 MiB requests was copied up to
/// 128 MiB ahead (testbulk 100 x 1 MiB over UDP: 106 page faults a message
/// at the sender, its pool of 8 MiB overflowing, task-clock 416-806 ms ->
/// 81-129 ms). A request of one datagram never waits: a network depth of
/// them (128 x 64 KiB = 8 MiB) is what the pool holds (waiting for
/// 65,000-byte ones cost testbulk CPU: task-clock 311-338 -> 381-397 ms
/// for 4000 of them).
pub(in crate::am) const BACKLOG_WAIT_MIN: usize = 64 << 10;

impl Endpoint {
    /// Sends a request to translation index `dest`. Polls first; waits (by
    /// polling) for a credit unless `nonblocking`, which returns `InUse`
    /// instead. Inside a handler it never waits: what cannot go out yet is
    /// queued. A request to this endpoint itself runs its handler now.
    /// (Inline: the caller calls `request_kept` itself, one frame fewer.)
    #[inline]
    pub fn request(
        self: &Arc<Self>,
        dest: u32,
        msg: &Message<'_>,
        nonblocking: bool,
    ) -> Result<()> {
        self.request_kept(dest, msg, nonblocking, false).map(|_| ())
    }

    /// `request`; when `keep`, a kept transaction (`txn.rs`): its id.
    pub(in crate::am) fn request_kept(
        self: &Arc<Self>,
        dest: u32,
        msg: &Message<'_>,
        nonblocking: bool,
        keep: bool,
    ) -> Result<Option<u32>> {
        msg.check()?;
        let nested = token::in_handler();
        // a large long request to a peer on this host: copied by the target
        // (`xfer_direct.rs`) when it can
        // or copied by us into its segment when we have it mapped
        // (`xfer_shared.rs`)
        if !keep && !nested && self.try_xfer_inplace(dest, msg, nonblocking)? {
            return Ok(None);
        }
        // or copied by us into the staging area it keeps for us
        // (`xfer_staged.rs`)
        if !keep && !nested && self.try_xfer_staged(dest, msg, nonblocking)? {
            return Ok(None);
        }
        if !keep && !nested && self.try_xfer_direct(dest, msg)? {
            return Ok(None);
        }
        let mut first = true;
        let mut idle_rounds = 0u32;
        // (never inside a handler, whose requests take no credit and never
        // wait; nor for a caller that asked not to)
        let may_wait_backlog = !nested && !nonblocking && msg.payload.len() >= BACKLOG_WAIT_MIN;
        loop {
            {
                let g = self.state.lock();
                let (addr, to_self) = {
                    let st = g.borrow();
                    if st.depth.is_none() {
                        return Err(Error::NotInit(
                            "AM_SetExpectedResources has not been called",
                        ));
                    }
                    let e = st
                        .table
                        .mapped_entry(dest)
                        .ok_or(Error::BadArg("destination index is not mapped"))?;
                    // (whether it is this endpoint, as the entry knows it:
                    // no address compared per request)
                    (e.addr, e.to_self)
                };
                if to_self {
                    if !keep {
                        return self.deliver_loopback(&g, dest, true, msg).map(|_| None);
                    }
                    let txn = g.borrow_mut().take_txn_id();
                    let ran = self.deliver_loopback(&g, dest, true, msg);
                    g.borrow_mut().txn_loopback(txn, addr, ran);
                    return Ok(Some(txn as u32));
                }
                let mut now = self.clock.now();
                // AM-2: a request polls before it sends (the whole bundle),
                // unless this endpoint was polled a moment ago.
                if first && !nested && now.since(g.borrow().last_pump) >= RECENT_POLL {
                    drop(g);
                    self.poll_bundle()?;
                    first = false;
                    continue;
                }
                first = false;
                let mut st = g.borrow_mut();
                let backlog = may_wait_backlog
                    && st.proto.queued_fragments(&addr, CHANNEL_REQUEST) >= COPY_BACKLOG;
                let depth = st.depth.unwrap_or(1);
                let e = st
                    .table
                    .get_mut(dest)
                    .ok_or(Error::BadArg("destination index is not mapped"))?;
                if !backlog && (e.outstanding < depth || nested) {
                    // an earlier request to this peer still owes its
                    // answer: this one may wait for a batch (`Batch`)
                    let busy = e.outstanding > 0;
                    e.outstanding += 1;
                    let tag = e.tag;
                    now = now.max(st.last_pump);
                    return Ok(st.send_request(now, dest, addr, tag, msg, keep, !nested, busy));
                }
            }
            if nonblocking {
                return Err(Error::InUse("no send credit free for this destination"));
            }
            // Wait for a credit by polling the whole bundle: the answer may
            // depend on another endpoint of it. The endpoint's lock is not
            // held meanwhile, so other threads (AM_PAR) may use it.
            self.poll_bundle()?;
            idle_rounds += 1;
            if idle_rounds > 1000 {
                if let Some(b) = self.holder() {
                    b.wait_for_activity(10);
                }
            }
        }
    }

    /// Requests sent and not yet answered (by a reply, an automatic reply,
    /// a refusal or a failure): until then their handlers may not have run.
    pub fn unanswered_requests(&self) -> usize {
        self.with(|s| s.outstanding.len())
    }

    /// AM_Poll of the bundle this endpoint belongs to.
    pub(in crate::am) fn poll_bundle(self: &Arc<Self>) -> Result<()> {
        match self.holder() {
            Some(b) => b.poll(),
            None => self.poll(),
        }
    }
}

impl EpState {
    /// Sends a request that holds a credit of translation index `dest`
    /// (at `addr`, tagged `tag`) and remembers it until its reply; a
    /// short one as an express record when it can (`express.rs`; not a
    /// kept transaction, and only with `express_ok`: outside handlers,
    /// whose requests take no credit). `busy`: an earlier request to this
    /// peer is unanswered, so this one may wait for a batch (`batch.rs`).
    #[allow(clippy::too_many_arguments)]
    fn send_request(
        &mut self,
        now: Instant,
        dest: u32,
        addr: SocketAddr,
        tag: u64,
        msg: &Message<'_>,
        keep: bool,
        express_ok: bool,
        busy: bool,
    ) -> Option<u32> {
        let id64 = self.take_txn_id();
        let txn = id64 as u32;
        if express_ok && !keep && msg.category == Category::Short && msg.payload.is_empty() {
            // Behind an unanswered request (a stream), remembered before
            // the record is written: remembering still waits for the
            // store buffer to drain (the compiler's copy of the entry
            // reads back across two stores), and after the record that
            // drain waits for the record's line to come over from the
            // receiver polling it, a line transfer per request. Alone (a
            // round trip), the record goes first and the bookkeeping after
            // it. (`ramp bench --loggp`, fast state, 4 pairs: one way
            // 8.46-8.65 -> 8.29-9.39 M/s, request + reply 5.81-6.25 ->
            // 6.57-6.68 M/s, round trip unchanged; the entry first always
            // cost the round trip 0.357-0.365 -> 0.369-0.370 us.)
            if busy {
                self.remember_express(now, dest, addr, tag, txn, msg);
            }
            // Behind an unanswered request the record may also wait in
            // the transport with a few others, written together at the
            // next poll (`TxRing::hold`): the sender's instructions that
            // wait for the store buffer then wait once for a burst's
            // lines, not once per record. `RAMP_REQUEST_BATCH` 0 or 1:
            // none held, as over UDP.
            let hold = busy && self.batch.max > 1;
            let mut rec = [0u8; crate::net::express::MAX_LEN];
            let len = msg.express(ExpressKind::Request, txn, tag, &mut rec);
            if self.try_express_record(now, addr, ExpressKind::Request, &rec[..len], hold) {
                if !busy {
                    self.remember_express(now, dest, addr, tag, txn, msg);
                }
                self.stats.requests_sent[Category::Short.index()] += 1;
                return None;
            }
            if busy {
                self.outstanding.remove(&txn);
            }
        }
        let mut meta = msg.meta(txn, tag);
        let room = if keep {
            crate::am::state::txn::TRAILER_LEN
        } else {
            0
        };
        let mut payload = if keep {
            self.proto.payload_summed(msg.payload, room)
        } else {
            self.proto
                .payload_sealed(&addr, msg.payload, msg.args.len())
        };
        if keep {
            // recorded first: the floor counts this one as waiting; its
            // request kept to be sent again (by the log, else the record)
            if self.txn.log.is_some() {
                self.txn_sent(id64, addr, now, None);
                self.log_issued(id64, addr, &meta, msg.payload);
            } else {
                let request = crate::am::txn::txn_log::logged(&meta, msg.payload);
                self.txn_sent(id64, addr, now, Some(request));
            }
            let floor = self.txn_floor(addr);
            crate::am::state::txn::put_trailer(
                &mut payload.bytes,
                self.txn.incarnation,
                id64,
                floor,
            );
            meta.status = crate::am::handler::message::TXN_FLAG;
        }
        // through a ring whose receiver proved our job: no trailer to make
        // (`Protocol::set_same_host`, as `send_message`)
        if self.transports.has_shared_memory() {
            let proven = self.transports.express_open(addr);
            self.proto.set_same_host(addr, proven);
        }
        self.proto.send(now, addr, CHANNEL_REQUEST, meta, payload);
        // Out at once, unless it may wait for a batch (`batch.rs`: an
        // earlier request to this peer is unanswered), or, from a handler,
        // with the replies when its dispatch ends. The bookkeeping below
        // waits until the datagram is out (off the round trip's critical
        // path): the reply is taken by a poll, which needs this endpoint's
        // lock, held until this returns.
        let held = busy && express_ok && !keep && self.hold_request(now, addr, msg.payload.len());
        if !held && self.dispatch_nesting == 0 {
            if express_ok && !keep && msg.category == Category::Long {
                // its last fragment may wait for the next one's first
                self.tail_hold(now, addr, msg, busy);
            } else {
                self.tail_due();
            }
            self.flush(now);
        }
        self.outstanding
            .insert_with(txn, || Outstanding::new(dest, addr, now, meta));
        let c = msg.category.index();
        self.stats.requests_sent[c] += 1;
        self.stats.request_data_bytes_sent[c] += msg.payload.len() as u64;
        keep.then_some(txn)
    }

    /// Remembers express request `txn` (of translation index `dest`, at
    /// `addr`, tagged `tag`, sent at `now`) until its answer: its entry
    /// made where it is kept, its arguments copied into it there (one
    /// look at the table: the id is new, `take_txn_id`).
    #[inline]
    fn remember_express(
        &mut self,
        now: Instant,
        dest: u32,
        addr: SocketAddr,
        tag: u64,
        txn: u32,
        msg: &Message<'_>,
    ) {
        // (its entry made where it is kept, not first aside and moved
        // in: the move read it back with wider loads than the stores
        // that had just written it; its arguments copied in after: the
        // header made without them is written where it goes, where one
        // with them was made on the stack, for the copy of a slice, and
        // copied over)
        let bare = Message { args: &[], ..*msg };
        let o = self.outstanding.insert_new(txn, || Outstanding {
            express: true,
            ..Outstanding::new(dest, addr, now, bare.meta(txn, tag))
        });
        let n = msg.args.len();
        if n != 0 {
            o.meta.nargs = n as u8;
            o.meta.args[..n].copy_from_slice(msg.args);
        }
    }

    /// The next transaction id, 64 bits (its low half is the wire id):
    /// the low half never 0, never one in use (a request waiting for its
    /// answer, a kept transaction not released) when it wraps around.
    #[inline(always)]
    pub(in crate::am) fn take_txn_id(&mut self) -> u64 {
        loop {
            let id = self.next_txn;
            self.next_txn += 1;
            let txn = id as u32;
            let in_use = txn == 0
                || self.outstanding.contains_key(&txn)
                || (self.txn.any() && self.txn_is_kept(txn));
            if !in_use {
                return id;
            }
        }
    }

    /// A reply, an automatic reply or a returned request from `from` for
    /// transaction `txn`: true (and the credit is free again) when it
    /// answers a request of ours that went to `from`. Anything else
    /// (forged, or a late copy) is dropped by the caller: no handler runs,
    /// no credit is freed.
    pub(in crate::am) fn complete_from(
        &mut self,
        from: SocketAddr,
        txn: u32,
        now: Instant,
    ) -> bool {
        let (index, sent) = match self.outstanding.get(&txn) {
            Some(o) if o.addr == from => (o.index, o.sent),
            _ => {
                self.stats.stale_dropped += 1;
                return false;
            }
        };
        self.outstanding.discard(&txn);
        self.credit_back(index, sent, now);
        true
    }

    /// The express answer (a reply) from `from` to our express request
    /// `txn`: when it answers one still waiting (sent to `from`, as an
    /// express record, not yet answered), it is completed as
    /// `complete_from` completes it and true; else nothing changes
    /// (`ExpressState::check`'s test and `complete_from` in one look at
    /// the table: the fast poll's).
    #[inline]
    pub(in crate::am) fn complete_express(
        &mut self,
        from: SocketAddr,
        txn: u32,
        now: Instant,
    ) -> bool {
        let answered = self.outstanding.remove_if(txn, |o| {
            (o.addr == from && o.express && !o.answered).then_some((o.index, o.sent))
        });
        match answered {
            Some((index, sent)) => {
                self.credit_back(index, sent, now);
                true
            }
            None => false,
        }
    }

    /// A request of translation index `index` sent at `sent` was answered
    /// at `now`: its credit is free again, its latency counted.
    #[inline]
    fn credit_back(&mut self, index: u32, sent: Instant, now: Instant) {
        if let Some(e) = self.table.get_mut(index) {
            e.outstanding = e.outstanding.saturating_sub(1);
        }
        self.stats.record_latency(now.since(sent));
    }

    /// A request of ours was given up: its credit is free again.
    pub(in crate::am) fn complete(&mut self, txn: u32, cat: Category, now: Instant) {
        match self.outstanding.remove(&txn) {
            Some(o) => {
                if let Some(e) = self.table.get_mut(o.index) {
                    e.outstanding = e.outstanding.saturating_sub(1);
                }
                let lat = now.since(o.sent);
                self.stats.record_latency(lat);
            }
            None => self.stats.replies_squashed[cat.index()] += 1,
        }
    }
}
