//! The express lane: short AM requests and their replies to a peer reached
//! through an open shared-memory ring go straight into the ring as one
//! record (`net/express.rs`), outside the reliable protocol (no sequence
//! number, ACK, timer or checksum: the ring neither loses, reorders nor
//! corrupts, and its writer is a process of our user on this host).
//!
//! When: a short request with no payload, not a kept transaction, sent
//! outside a handler (it holds a credit), and a reply (or automatic reply)
//! to a request that came express; only while the protocol has nothing of
//! ours to that peer queued, in flight or unacknowledged (`Protocol::
//! express_ready`: everything sent before was delivered there; the ACKs we
//! owe it go first, or its own messages would stay unacknowledged for the
//! ACK delay and keep its answers off the lane), the ring is
//! open and has room, and its receiver proved it is of our job (below).
//! Otherwise the protocol's path, as before. A full ring
//! does not spill a datagram to UDP while an express record may be unread
//! in it (`shm.rs`): it could overtake the record.
//!
//! A job key: records carry no MAC (the ring is only handed to processes
//! of our user, who can read our memory anyway), but each end of a ring
//! proves once, by the key's keyed hash, that it belongs to the same job
//! (`net/shm_proof.rs`): a sender writes records only to a receiver that
//! proved it, a receiver drops (and counts) those of a slot whose sender
//! did not. Keys that differ, or a key at one end only: no express lane,
//! the protocol's path as before.
//!
//! Receiving: a record is read from the ring in its place among the
//! protocol's datagrams and, checked, queued as a delivered message behind
//! those delivered before it (`Protocol::push_delivered`), so the in-order
//! draining (`rma_target.rs`), the arrival checks and the dispatch are the
//! protocol's messages'. Hostile input: a record not exactly of the format
//! is dropped and counted; a reply counts only for an express request of
//! ours to the peer whose ring it came from, not yet answered (one queued
//! answer each: no credit freed twice, no queue grown by copies); requests
//! past `QUEUE` waiting are returned (ECONGESTION) by the protocol.
//!
//! Automatic replies: those a dispatch owes one peer for its express
//! requests go as one record when the dispatch ends (or when 17 are owed,
//! or one is owed to another peer first): a stream of requests whose
//! handlers do not reply costs a record per batch the receiver takes in
//! one poll, not one per request. Each id in it is checked as a lone
//! answer is (an express request of ours to that ring's writer, not yet
//! answered): a forged or repeated id frees nothing.
//!
//! Failure: a peer whose ring is dropped (its endpoint closed, its process
//! dead, our slot freed, or a record left unread in it for the peer
//! timeout: it stopped polling) returns each express request to it still waiting
//! for its answer to handler 0 with EUNREACHABLE, "may have run" (the start
//! window, `started.rs`, does not hold express requests, and does not count
//! them among the places it judges by).

use std::net::SocketAddr;

use crate::am::endpoint::endpoint::EpState;
use crate::am::messages::request::Outstanding;
use crate::am::rma::rma::RmaState;
use crate::error::ReturnStatus;
use crate::net::express::{Express, ExpressKind, MAX_ARGS, MAX_LEN};
use crate::net::ExpressProver;
use crate::proto::{Event, FailReason, Protocol};
use crate::stats::Statistics;
use crate::time::Instant;
use crate::wire::{Category, MsgKind, MsgMeta, CHANNEL_REPLY, CHANNEL_REQUEST};

const _: () = assert!(MAX_ARGS == crate::wire::MAX_ARGS);

/// Requests waiting to be taken past which an express one is returned.
pub(in crate::am) const QUEUE: usize = 16384;

/// What the express lane counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExpressStats {
    pub requests_sent: u64,
    pub replies_sent: u64,
    pub requests_received: u64,
    pub replies_received: u64,
    /// Records dropped on arrival: malformed, an answer to nothing of
    /// ours, or from a ring whose sender did not prove our job key
    /// (`net/shm_proof.rs`). (The endpoint's
    /// statistics count each record read as a packet received, a dropped
    /// malformed one in `corrupt_dropped`, an answer to nothing in
    /// `stale_dropped`; each written as a packet sent, its bytes in the
    /// totals.)
    pub dropped: u64,
    /// Requests returned (ECONGESTION) for want of room in the queue.
    pub refused: u64,
    /// Requests returned because their peer's ring was dropped.
    pub lost: u64,
    /// Records taken by the fast poll (`express_poll.rs`), straight from
    /// their ring to their handler; the others went through the full one.
    pub fast: u64,
}

/// The lane's state in an endpoint.
#[derive(Default)]
pub(in crate::am) struct ExpressState {
    /// Whether we send express records (`RAMP_SHM_EXPRESS`).
    pub(in crate::am) send: bool,
    pub(in crate::am) stats: ExpressStats,
    /// Requests refused on arrival, returned after the receive.
    pub(in crate::am) refused: Vec<(SocketAddr, MsgMeta)>,
    /// Fast polls in a row that took records (`express_poll.rs`); a full
    /// poll resets it.
    pub(in crate::am) fast_streak: u32,
    /// Empty fast polls since the last full one, and when that was.
    pub(in crate::am) quick_polls: u32,
    pub(in crate::am) full_at: Instant,
    /// Automatic replies owed, sent when the dispatch ends.
    pub(in crate::am) owed: OwedAutoReplies,
}

/// Most automatic replies in one record: its id and one per argument.
pub(in crate::am) const OWED_MAX: usize = 1 + MAX_ARGS;

/// Automatic replies a dispatch owes one peer (`EpState::owe_auto_reply`).
#[derive(Clone, Copy)]
pub(in crate::am) struct OwedAutoReplies {
    pub(in crate::am) to: SocketAddr,
    pub(in crate::am) txns: [u32; OWED_MAX],
    pub(in crate::am) n: usize,
}

impl Default for OwedAutoReplies {
    fn default() -> Self {
        OwedAutoReplies {
            to: SocketAddr::from(([0, 0, 0, 0], 0)),
            txns: [0; OWED_MAX],
            n: 0,
        }
    }
}

impl ExpressState {
    pub(in crate::am) fn new(send: bool) -> ExpressState {
        ExpressState {
            send,
            ..Default::default()
        }
    }

    /// An express record `rec` read from the ring `from` writes: checked,
    /// queued in order among the protocol's delivered messages.
    pub(in crate::am) fn arrived(
        &mut self,
        proto: &mut Protocol<SocketAddr>,
        rma: &mut RmaState,
        outstanding: &mut crate::am::state::txn_map::TxnMap<Outstanding>,
        counts: &mut Statistics,
        from: SocketAddr,
        rec: &[u8],
    ) {
        let Some(Event::Delivered { channel, meta, .. }) =
            self.check(outstanding, counts, from, rec)
        else {
            return;
        };
        if channel == CHANNEL_REQUEST {
            if deliver(proto, rma, from, channel, meta, QUEUE) {
                self.stats.requests_received += 1;
            } else {
                self.stats.refused += 1;
                self.refused.push((from, meta));
            }
        } else {
            deliver(proto, rma, from, channel, meta, usize::MAX);
        }
    }

    /// An express record `rec` read from the ring `from` writes, checked:
    /// the delivered message it makes (a request not yet counted: the
    /// caller takes or refuses it), or None: dropped and counted
    /// (malformed, or an answer to nothing of ours). (The event is made
    /// in one piece where it is returned: a header made first and moved
    /// into it was copied at once with wider loads than the stores that
    /// wrote it, a stall each.)
    pub(in crate::am) fn check(
        &mut self,
        outstanding: &mut crate::am::state::txn_map::TxnMap<Outstanding>,
        counts: &mut Statistics,
        from: SocketAddr,
        rec: &[u8],
    ) -> Option<Event<SocketAddr>> {
        // counted as the protocol counts its datagrams
        counts.packets_received += 1;
        let Some(x) = Express::decode(rec) else {
            self.stats.dropped += 1;
            counts.corrupt_dropped += 1;
            return None;
        };
        let (channel, txn, nargs, args) = match x.kind {
            ExpressKind::Request => (CHANNEL_REQUEST, x.txn, x.nargs, x.args),
            kind => {
                // each id answered must be an express request of ours to
                // `from` not yet answered (an automatic reply's arguments
                // are more ids: those that pass are kept, in order)
                let n = if kind == ExpressKind::AutoReply {
                    1 + x.nargs as usize
                } else {
                    1
                };
                let mut kept = [0u32; OWED_MAX];
                let mut k = 0;
                for i in 0..n {
                    let id = if i == 0 { x.txn } else { x.args[i - 1] };
                    match outstanding.get_mut(&id) {
                        Some(o) if o.addr == from && o.express && !o.answered => {
                            o.answered = true;
                            self.stats.replies_received += 1;
                            kept[k] = id;
                            k += 1;
                        }
                        _ => {
                            self.stats.dropped += 1;
                            counts.stale_dropped += 1;
                        }
                    }
                }
                if k == 0 {
                    return None;
                }
                if kind == ExpressKind::AutoReply {
                    let mut more = [0u32; MAX_ARGS];
                    more[..k - 1].copy_from_slice(&kept[1..k]);
                    (CHANNEL_REPLY, kept[0], (k - 1) as u8, more)
                } else {
                    (CHANNEL_REPLY, x.txn, x.nargs, x.args)
                }
            }
        };
        Some(Event::Delivered {
            from,
            channel,
            // (the arguments past `nargs` are zero: as `MsgMeta::new`
            // leaves them)
            meta: MsgMeta {
                kind: match x.kind {
                    ExpressKind::AutoReply => MsgKind::AutoReply,
                    _ => MsgKind::User,
                },
                category: Category::Short,
                handler: x.handler,
                nargs,
                args,
                tag: x.tag,
                dest_offset: 0,
                txn,
                status: 0,
                returned_request: false,
                express: true,
                placed: None,
            },
            payload: Vec::new(),
        })
    }
}

/// The job key's keyed hash for the rings' proofs (`net/shm_proof.rs`);
/// None without a key.
pub(in crate::am) fn prover(mac: Option<&crate::wire::mac::MacKey>) -> Option<ExpressProver> {
    let key = mac?.clone();
    Some(std::sync::Arc::new(move |ctx: &[u8]| key.proof(ctx)))
}

/// Queues an express message `meta` from `from` as delivered, in order: as
/// `Protocol::push_delivered` (false: a request refused, `limit` requests
/// waiting there), or, when nothing waits before it there nor is stalled
/// and the AM queue has room, straight into the AM queue, where the
/// in-order draining (`rma_target.rs`) would move it next with the tag 0
/// (no place of the start window): one move of the event instead of three.
fn deliver(
    proto: &mut Protocol<SocketAddr>,
    rma: &mut RmaState,
    from: SocketAddr,
    channel: u8,
    meta: MsgMeta,
    limit: usize,
) -> bool {
    if rma.stalled.is_none()
        && rma.pending.len() < proto.recv_depth().max(1)
        && proto.peek_event().is_none()
    {
        rma.pending.push_back(Event::Delivered {
            from,
            channel,
            meta,
            payload: Vec::new(),
        });
        rma.arrived.push_back(0);
        return true;
    }
    proto.push_delivered(from, channel, meta, limit)
}

impl crate::am::Endpoint {
    /// What this endpoint's express lane counted.
    pub fn express_stats(&self) -> ExpressStats {
        self.with(|s| s.express.stats)
    }
}

impl EpState {
    /// Writes `meta` as an express record of `kind` into the ring to `to`
    /// when the lane is open to it; false: nothing sent, take the
    /// protocol's path.
    pub(in crate::am) fn try_express(
        &mut self,
        now: Instant,
        to: SocketAddr,
        kind: ExpressKind,
        meta: &MsgMeta,
    ) -> bool {
        let x = Express {
            kind,
            handler: meta.handler,
            nargs: meta.nargs,
            args: meta.args,
            txn: meta.txn,
            tag: meta.tag,
        };
        self.try_express_record(now, to, &x, false)
    }

    /// Writes `x` into the ring to `to` when the lane is open to it (as
    /// `try_express`); false: nothing sent.
    pub(in crate::am) fn try_express_record(
        &mut self,
        now: Instant,
        to: SocketAddr,
        x: &Express,
        hold: bool,
    ) -> bool {
        let kind = x.kind;
        // a peer reached by UDP first: `express_ready` sends the ACKs we
        // owe, which a UDP peer's next packet would have carried
        if !self.express.send || !self.transports.express_open(to) || !self.proto.express_ready(&to)
        {
            return false;
        }
        // the ACKs owed to `to` go first
        self.flush(now);
        let mut buf = [0u8; MAX_LEN];
        let n = x.encode(&mut buf);
        if !self.transports.express_send(to, &buf[..n], hold) {
            return false;
        }
        let c = Category::Short.index();
        let s = &mut self.stats;
        s.packets_sent += 1;
        s.total_bytes_sent += n as u64;
        match kind {
            ExpressKind::Request => {
                self.express.stats.requests_sent += 1;
                s.request_total_bytes_sent[c] += n as u64;
            }
            _ => {
                self.express.stats.replies_sent += 1;
                s.reply_total_bytes_sent[c] += n as u64;
            }
        }
        true
    }

    /// The automatic reply of express request `txn` from `to`, whose
    /// handler did not reply, owed: it goes with the others owed to `to`
    /// when the dispatch ends (`flush_auto_replies`), or now when
    /// `OWED_MAX` are owed. (From a dispatch only: its end sends them.)
    pub(in crate::am) fn owe_auto_reply(&mut self, now: Instant, to: SocketAddr, txn: u32) {
        if !self.txn.target.is_empty() {
            self.txn_finished(to, txn, None);
        }
        if self.express.owed.n > 0 && self.express.owed.to != to {
            self.flush_auto_replies(now);
        }
        let o = &mut self.express.owed;
        o.to = to;
        o.txns[o.n] = txn;
        o.n += 1;
        if o.n == OWED_MAX {
            self.flush_auto_replies(now);
        }
    }

    /// Sends the automatic replies owed (`owe_auto_reply`): one express
    /// record, or, when the lane is not open now, one protocol message
    /// each, as a lone one would have gone.
    pub(in crate::am) fn flush_auto_replies(&mut self, now: Instant) {
        let o = std::mem::take(&mut self.express.owed);
        if o.n == 0 {
            return;
        }
        let mut x = Express {
            kind: ExpressKind::AutoReply,
            handler: 0,
            nargs: (o.n - 1) as u8,
            args: [0; MAX_ARGS],
            txn: o.txns[0],
            tag: 0,
        };
        x.args[..o.n - 1].copy_from_slice(&o.txns[1..o.n]);
        if self.try_express_record(now, o.to, &x, false) {
            // (counted once by `try_express`: one per answer)
            self.express.stats.replies_sent += (o.n - 1) as u64;
            return;
        }
        for &txn in &o.txns[..o.n] {
            let meta = MsgMeta {
                txn,
                ..MsgMeta::new(MsgKind::AutoReply, Category::Short, 0, &[])
            };
            self.send_message(now, o.to, CHANNEL_REPLY, meta, Vec::new());
        }
    }

    /// After a receive: returns the requests refused on arrival, and the
    /// express requests to peers whose rings were dropped.
    pub(in crate::am) fn express_after_receive(&mut self, now: Instant) {
        let unproven = self.transports.take_express_refused();
        if unproven != 0 {
            // read and dropped by the ring (`net/shm_proof.rs`)
            self.express.stats.dropped += unproven;
            self.stats.packets_received += unproven;
            self.stats.corrupt_dropped += unproven;
        }
        if !self.express.refused.is_empty() {
            for (from, meta) in std::mem::take(&mut self.express.refused) {
                self.send_returned(now, from, meta, ReturnStatus::Congestion, true);
            }
        }
        while let Some(to) = self.transports.take_dropped() {
            self.express_lost(to);
        }
    }

    /// `to`'s ring was dropped: each express request to it still waiting
    /// for its answer goes back to handler 0 (EUNREACHABLE, may have run),
    /// oldest first, before anything queued.
    fn express_lost(&mut self, to: SocketAddr) {
        let mut lost: Vec<(Instant, u32)> = self
            .outstanding
            .iter()
            .filter(|(_, o)| o.addr == to && o.express && !o.answered && o.may_run.is_none())
            .map(|(&id, o)| (o.sent, id))
            .collect();
        lost.sort_unstable();
        for &(_, id) in lost.iter().rev() {
            let Some(o) = self.outstanding.get_mut(&id) else {
                continue;
            };
            o.may_run = Some(true);
            self.express.stats.lost += 1;
            self.rma.pending.push_front(Event::Failed {
                to,
                channel: CHANNEL_REQUEST,
                id: 0,
                meta: o.meta,
                reason: FailReason::PeerUnreachable,
            });
            self.rma.arrived.push_front(0);
        }
    }
}
