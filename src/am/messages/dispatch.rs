//! Receive dispatch: AM_Poll takes the protocol's events and turns each
//! into a handler call (after the checks of `returned.rs`), then runs it
//! with a live token, outside the state's borrow.

use std::net::SocketAddr;
use std::sync::Arc;

use super::returned::{default_returned_handler, Admitted, RESEND};
use super::token::{LiveToken, TokenInfo};
use crate::am::endpoint::core::{Endpoint, EpState, Guard};
use crate::am::handler::args::{Data, HandlerArgs};
use crate::am::handler::message::TXN_FLAG;
use crate::am::handler::message::XFER_FLAG;
use crate::am::handler::message::{INPLACE_FLAG, STAGED_FLAG};
use crate::am::messages::work::Work;
use crate::am::messages::work::WorkData;
use crate::am::state::txn::take_trailer;
use crate::error::{Result, ReturnStatus};
use crate::net::express::ExpressKind;
use crate::proto::{Event, FailReason};
use crate::time::Instant;
use crate::wire::{Category, MsgKind, MsgMeta, CHANNEL_REPLY, CHANNEL_REQUEST};

/// Handlers may poll from inside handlers; beyond this nesting, a nested poll
/// only moves packets and leaves messages queued.
const MAX_DISPATCH_NESTING: u32 = 8;

impl Endpoint {
    /// AM_Poll for this endpoint: moves packets, then runs handlers for up to
    /// max(10, depth) waiting messages.
    pub fn poll(self: &Arc<Self>) -> Result<()> {
        let g = self.state.lock();
        // (read before the rings are looked at: while nothing has come,
        // not after, on the way from an arrival to its handler)
        let now = self.clock.now();
        // express records at the rings' heads, straight to their handlers
        // (`express_poll.rs`)
        if self.poll_express(&g, now) {
            return Ok(());
        }
        let limit = {
            let mut st = g.borrow_mut();
            let Some(depth) = st.depth else {
                return Ok(());
            };
            st.pump_network(now)?;
            if st.dispatch_nesting >= MAX_DISPATCH_NESTING || st.nothing_to_dispatch() {
                // (the pump flushed what it produced)
                return Ok(());
            }
            (depth as usize).max(10)
        };
        self.dispatch(&g, limit, now)
    }

    fn dispatch(self: &Arc<Self>, g: &Guard<'_>, limit: usize, now: Instant) -> Result<()> {
        self.dispatch_from(g, limit, now, |st| st.next_event(now));
        Ok(())
    }

    /// Runs the handlers of up to `limit` events that `next` takes (None:
    /// no more), then sends what they queued. Handlers run as nested in a
    /// dispatch.
    pub(in crate::am) fn dispatch_from(
        self: &Arc<Self>,
        g: &Guard<'_>,
        limit: usize,
        now: Instant,
        mut next: impl FnMut(&mut EpState) -> Option<Event<SocketAddr>>,
    ) {
        g.borrow_mut().dispatch_nesting += 1;
        for _ in 0..limit {
            // (the event and the work stay where they were returned: moved
            // out of their Options, each was copied once more)
            let mut work = {
                let mut st = g.borrow_mut();
                let ev = next(&mut st);
                if ev.is_none() {
                    break;
                }
                st.prepare(self, ev, now)
            };
            if let Some(w) = work.as_mut() {
                self.run(g, w, now);
            }
        }
        g.borrow_mut().dispatch_ended(now);
    }

    /// Runs one handler with a live token; sends the automatic reply when a
    /// request handler did not reply. (`w` by reference: it is not moved,
    /// its medium payload is taken.)
    pub(in crate::am) fn run(self: &Arc<Self>, g: &Guard<'_>, w: &mut Work, now: Instant) {
        let data = std::mem::replace(&mut w.data, WorkData::None);
        let Work {
            ref f,
            ref info,
            auto_reply_to,
            ..
        } = *w;
        let live = LiveToken::push(info);
        let (txn, express, nargs) = (info.txn, info.express, info.nargs as usize);
        let id = live.id();
        let mut medium = Vec::new();
        let data = match data {
            WorkData::None => Data::None,
            WorkData::Medium(v) => {
                medium = v;
                Data::Medium(&mut medium[..])
            }
            WorkData::Long { addr, len } => Data::Long { addr, len },
            WorkData::Returned { status, opcode } => Data::Returned { status, opcode },
        };
        let mut ha = HandlerArgs {
            token: id,
            args: &info.args[..nargs],
            data,
        };
        match f {
            Some(f) => f(&mut ha),
            None => default_returned_handler(&ha),
        }
        let replied = live.finish() == Some(true);
        if medium.capacity() > 0 {
            // its buffer takes the next message that arrives
            g.borrow_mut().proto.recycle(medium);
        }
        if let Some(to) = auto_reply_to {
            g.borrow_mut()
                .request_handled(now, to, txn, express, replied);
        }
    }
}

impl EpState {
    /// A dispatch ends: the automatic replies it owes go, then what it
    /// queued.
    pub(in crate::am) fn dispatch_ended(&mut self, now: Instant) {
        self.dispatch_nesting -= 1;
        if self.express.owed.n > 0 {
            self.flush_auto_replies(now);
        }
        self.flush(now);
    }

    /// The handler of request `txn` from `to` returned (`replied`: it
    /// replied): else its automatic reply, owed to the end of the
    /// dispatch when the request came express (`express.rs`).
    #[inline(always)]
    pub(in crate::am) fn request_handled(
        &mut self,
        now: Instant,
        to: SocketAddr,
        txn: u32,
        express: bool,
        replied: bool,
    ) {
        if !replied {
            // counted as a short reply sent, as AMUDP counts its automatic
            // replies (GASNet's statistics compare the two)
            self.stats.replies_sent[Category::Short.index()] += 1;
            if express {
                self.owe_auto_reply(now, to, txn);
            } else {
                self.send_auto_reply(now, to, txn, false);
            }
        }
        self.request_closed();
    }

    /// A reply from `from` to our request `txn` (category index `c`):
    /// true, its request completed and the reply counted, when it answers
    /// a request of ours to `from` (or a kept transaction's, which may
    /// come after its request was given up: to a probe); else false, to
    /// be dropped.
    pub(in crate::am) fn reply_arrived(
        &mut self,
        from: SocketAddr,
        txn: u32,
        c: usize,
        now: Instant,
    ) -> bool {
        let answers = self.complete_from(from, txn, now);
        let kept = self.txn.any() && self.txn_replied(from, txn, now);
        if !answers && !kept {
            return false;
        }
        self.stats.replies_received[c] += 1;
        true
    }

    /// The automatic reply of request `txn` from `to`, whose handler did
    /// not reply (`express`: the request came express, `express.rs`).
    pub(in crate::am) fn send_auto_reply(
        &mut self,
        now: Instant,
        to: SocketAddr,
        txn: u32,
        express: bool,
    ) {
        if !self.txn.target.is_empty() {
            self.txn_finished(to, txn, None);
        }
        let meta = MsgMeta {
            txn,
            ..MsgMeta::new(MsgKind::AutoReply, Category::Short, 0, &[])
        };
        if express && self.try_express(now, to, ExpressKind::AutoReply, &meta) {
            return;
        }
        self.send_message(now, to, CHANNEL_REPLY, meta, Vec::new());
    }

    /// The sender's index in the translation table, -1 if none.
    fn source_id(&self, peer: &SocketAddr) -> i32 {
        self.table.index_of(peer).map_or(-1, |i| i as i32)
    }

    /// Turns one protocol event into the handler call it asks for, after
    /// the checks; refusals are sent back here.
    /// (`ev` None: nothing to do.)
    pub(in crate::am) fn prepare(
        &mut self,
        ep: &Arc<Endpoint>,
        ev: Option<Event<SocketAddr>>,
        now: Instant,
    ) -> Option<Work> {
        match ev? {
            Event::Delivered {
                from,
                channel,
                meta,
                payload,
            } => {
                if meta.kind.is_name() {
                    // handler names: answered or taken here, no handler runs
                    self.name_delivered(from, channel, &meta, &payload, now);
                    return None;
                }
                let is_request = channel == CHANNEL_REQUEST;
                if is_request && meta.kind == MsgKind::TxnProbe {
                    self.txn_probed(from, &meta, now);
                    return None;
                }
                let c = meta.category.index();
                if !is_request {
                    // A reply or a returned request must answer a request
                    // of ours to the peer it comes from (its association
                    // proved the address): else it is dropped and counted,
                    // before any handler, credit or segment is touched.
                    match meta.kind {
                        // taken by `name_delivered` above
                        MsgKind::NameQuery | MsgKind::NameAnswer => return None,
                        MsgKind::AutoReply => {
                            // (a kept transaction's answer may come after its
                            // request was given up: to a probe)
                            // An express one answers more requests, one per
                            // argument (checked: `ExpressState::check`).
                            let more = if meta.express { meta.nargs as usize } else { 0 };
                            // Each answer counts as a short reply received,
                            // as AMUDP counts automatic replies.
                            for i in 0..=more {
                                let txn = if i == 0 { meta.txn } else { meta.args[i - 1] };
                                self.reply_arrived(from, txn, Category::Short.index(), now);
                            }
                            return None;
                        }
                        MsgKind::TxnAck => {
                            self.txn_acked(from, &meta, now);
                            return None;
                        }
                        MsgKind::Returned => {
                            if meta.returned_request && meta.status == RESEND {
                                // an express request of ours refused for
                                // want of room: sent again (`express/lane.rs`)
                                self.express_resend(now, from, meta.txn);
                                return None;
                            }
                            let answers = if meta.returned_request {
                                self.complete_from(from, meta.txn, now)
                            } else {
                                // one of our replies, which go to mapped
                                // sources only
                                self.table.index_of(&from).is_some()
                            };
                            if !answers {
                                if !meta.returned_request {
                                    self.stats.stale_dropped += 1;
                                }
                                return None;
                            }
                            if meta.returned_request
                                && self.txn.any()
                                && self.txn_refused(from, meta.txn, meta.status, now)
                            {
                                // its state says it; handler 0 is for AM-2's
                                return None;
                            }
                            let status =
                                ReturnStatus::from_u8(meta.status).unwrap_or(ReturnStatus::BadArgs);
                            let info = TokenInfo::new(
                                ep.clone(),
                                from,
                                self.source_id(&from),
                                &meta,
                                meta.returned_request,
                            );
                            return Some(self.returned_work(info, status));
                        }
                        MsgKind::User => {
                            if !self.reply_arrived(from, meta.txn, c, now) {
                                return None;
                            }
                        }
                        // taken by `drain_events` before they get here
                        _ => {
                            self.stats.corrupt_dropped += 1;
                            return None;
                        }
                    }
                } else {
                    if meta.kind != MsgKind::User {
                        // Only user messages travel on the request channel.
                        self.stats.corrupt_dropped += 1;
                        return None;
                    }
                    self.stats.requests_received[c] += 1;
                }
                let source = self.table.index_of(&from);
                // a long request whose payload says where its bytes are: in
                // place, in the sender's staging area, or to copy from the
                // sender's memory (`xfer_shared.rs`, `xfer_staged.rs`,
                // `xfer_direct.rs`): in our segment now, or refused or
                // fallen back (no handler)
                let marked = INPLACE_FLAG | STAGED_FLAG | XFER_FLAG;
                let data = if is_request && meta.status & marked != 0 {
                    let got = if meta.status & INPLACE_FLAG != 0 {
                        self.inplace_arrived(from, &meta, &payload, now)
                    } else if meta.status & STAGED_FLAG != 0 {
                        self.staged_arrived(from, &meta, &payload, now)
                    } else {
                        self.xfer_arrived(from, &meta, &payload, now)
                    };
                    self.proto.recycle(payload);
                    let (seg, len) = got?;
                    WorkData::Long {
                        addr: seg.base() + meta.dest_offset as usize,
                        len,
                    }
                } else if let Some(placed) = meta.placed {
                    // bytes already in the segment (`placement.rs`)
                    let len = placed.len as usize;
                    let admitted = if placed.gen != self.seg_gen {
                        Err(ReturnStatus::BadSegOff)
                    } else {
                        self.admit_parts().admit(source, &meta, len, is_request)
                    };
                    match admitted {
                        Ok(Admitted::Long(seg)) => {
                            self.placed_runs += 1;
                            WorkData::Long {
                                addr: seg.base() + meta.dest_offset as usize,
                                len,
                            }
                        }
                        Ok(_) => {
                            self.stats.corrupt_dropped += 1;
                            return None;
                        }
                        Err(status) => {
                            self.send_returned(now, from, meta, status, is_request);
                            return None;
                        }
                    }
                } else {
                    let mut payload = payload;
                    // a kept transaction (`txn.rs`): its trailer comes off first
                    let trailer = if is_request && meta.status & TXN_FLAG != 0 {
                        match take_trailer(&mut payload) {
                            Some(t) => Some(t),
                            None => {
                                self.send_returned(now, from, meta, ReturnStatus::BadArgs, true);
                                return None;
                            }
                        }
                    } else {
                        None
                    };
                    let admitted =
                        match self
                            .admit_parts()
                            .admit(source, &meta, payload.len(), is_request)
                        {
                            Ok(a) => a,
                            Err(status) => {
                                self.send_returned(now, from, meta, status, is_request);
                                return None;
                            }
                        };
                    if let Some(t) = trailer {
                        if !self.txn_arrive(from, &meta, &payload, &t, now) {
                            return None;
                        }
                    }
                    match admitted {
                        Admitted::Short => WorkData::None,
                        Admitted::Medium => WorkData::Medium(payload),
                        Admitted::Long(seg) => {
                            let off = meta.dest_offset as usize;
                            seg.write(off, &payload);
                            let len = payload.len();
                            self.proto.recycle(payload);
                            WorkData::Long {
                                addr: seg.base() + off,
                                len,
                            }
                        }
                    }
                };
                let source_id = source.map_or(-1, |i| i as i32);
                if is_request {
                    // open until answered (`started.rs`)
                    self.request_opened();
                }
                Some(Work {
                    f: self.handlers.get(meta.handler).cloned(),
                    info: TokenInfo::new(ep.clone(), from, source_id, &meta, is_request),
                    data,
                    auto_reply_to: if is_request { Some(from) } else { None },
                })
            }
            Event::Failed {
                to,
                channel,
                meta,
                reason,
                ..
            } => {
                if reason == FailReason::PeerUnreachable
                    && channel == CHANNEL_REQUEST
                    && self.proto.association(&to).is_none()
                {
                    // the association ended: every request waiting for an
                    // answer from `to` is returned (`started.rs`)
                    self.conclude_ended(to, meta.txn);
                }
                if meta.kind.is_name() {
                    self.name_failed(to, &meta);
                    return None;
                }
                if meta.kind == MsgKind::TxnProbe {
                    // the target went silent while a transaction waited
                    if self.txn_failed(to, meta.txn, reason, true, None, now)
                        && self.outstanding.contains_key(&meta.txn)
                        && self.txn_is_final(meta.txn)
                    {
                        self.complete(meta.txn, meta.category, now);
                    }
                    return None;
                }
                let status = returned_status(reason);
                let is_request = channel == CHANNEL_REQUEST;
                let mut may_run = reason == FailReason::PeerUnreachable;
                if is_request {
                    match self.outstanding.get(&meta.txn) {
                        Some(o) => may_run = o.may_run.unwrap_or(may_run),
                        // returned already, when its association ended
                        None if meta.kind == MsgKind::User => return None,
                        None => {}
                    }
                    self.complete(meta.txn, meta.category, now);
                    if self.txn.any()
                        && self.txn_failed(to, meta.txn, reason, false, Some(may_run), now)
                    {
                        return None;
                    }
                } else if meta.kind != MsgKind::User {
                    // An automatic reply or a returned message could not be
                    // delivered: the peer is gone; nothing waits for it here.
                    self.stats.returned_messages += 1;
                    if self.verbose {
                        eprintln!(
                            "ramp: a {:?} message to {to} was given up ({})",
                            meta.kind,
                            status.name()
                        );
                    }
                    return None;
                }
                let mut info =
                    TokenInfo::new(ep.clone(), to, self.source_id(&to), &meta, is_request);
                // given up in the network: a request may have been handled,
                // unless its place says it cannot have started (`started.rs`)
                info.may_have_run = is_request && may_run;
                Some(self.returned_work(info, status))
            }
        }
    }
}

/// What a message the protocol gave up on reports to handler 0.
fn returned_status(reason: FailReason) -> ReturnStatus {
    match reason {
        FailReason::PeerUnreachable => ReturnStatus::Unreachable,
        FailReason::Refused => ReturnStatus::Congestion,
        FailReason::TooLong => ReturnStatus::BadLength,
    }
}
