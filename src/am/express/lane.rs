//! The express lane: short AM requests and their replies to a peer reached
//! through an open shared-memory ring go straight into the ring as one
//! record (`net/express.rs`), outside the reliable protocol (no sequence
//! number, ACK, timer or checksum: the ring neither loses, reorders nor
//! corrupts, and its writer is a process of our user on this host).
//!
//! When: a short request with no payload, not a kept transaction, sent
//! outside a handler (it holds a credit), and a reply (or automatic reply)
//! to a request that came express; only while the protocol has nothing of
//! ours to that peer queued, in flight or unacknowledged that the record
//! must not pass (`Protocol::express_ready`: a put, a get, a long request,
//! anything but short and medium user messages and automatic replies,
//! among which AM-2 promises no order; the ACKs we owe it go first, or its
//! own messages would stay unacknowledged for the ACK delay), the ring is
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
//! draining (`messages/drain.rs`), the arrival checks and the dispatch are the
//! protocol's messages'. Hostile input: a record not exactly of the format
//! is dropped and counted; a reply counts only for an express request of
//! ours to the peer whose ring it came from, not yet answered (one queued
//! answer each: no credit freed twice, no queue grown by copies).
//!
//! A full receiver: a request that finds as many waiting as the protocol
//! lets wait before it NACKs (its receive depth, `RAMP_RECV_DEPTH`) is
//! not queued: it goes back to its sender (a returned message of status
//! `RESEND`, never shown to handler 0), which sends it again by the
//! protocol's path, whose NACKs, backoff and limit (`RAMP_NACK_LIMIT`,
//! then ECONGESTION) then hold for it as for any request; its handler has
//! not run. Only a request of ours to that peer, sent express and not yet
//! answered, is sent again, once (it is no longer express): a forged or
//! repeated `RESEND` sends nothing. Its place among the requests to that
//! peer (`started.rs`) is where it was sent again.
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

use crate::am::endpoint::core::EpState;
use crate::am::messages::returned::RESEND;
use crate::am::state::express::ExpressStats;
use crate::am::state::express::OWED_MAX;
use crate::net::express::{encode, Express, ExpressKind, MAX_ARGS, MAX_LEN};
use crate::proto::{Event, FailReason};
use crate::time::Instant;
use crate::wire::{Category, MsgKind, MsgMeta, CHANNEL_REPLY, CHANNEL_REQUEST};

impl crate::am::endpoint::core::Endpoint {
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
        let mut buf = [0u8; MAX_LEN];
        let n = (meta.nargs as usize).min(MAX_ARGS);
        let len = encode(
            kind,
            meta.handler,
            &meta.args[..n],
            meta.txn,
            meta.tag,
            &mut buf,
        );
        self.try_express_record(now, to, kind, &buf[..len], false)
    }

    /// Writes the express record `rec` (of `kind`, encoded by
    /// `net::express::encode`) into the ring to `to` when the lane is open
    /// to it (as `try_express`); false: nothing sent.
    #[inline(always)]
    pub(in crate::am) fn try_express_record(
        &mut self,
        now: Instant,
        to: SocketAddr,
        kind: ExpressKind,
        rec: &[u8],
        hold: bool,
    ) -> bool {
        if !self.express.send {
            return false;
        }
        // nothing of ours unfinished to `to` (`Protocol::express_ready`);
        // the ring's own look (open, its receiver proven) is the send's
        match self.proto.express_quiet(&to) {
            None => return false,
            Some(false) => {}
            // ACKs owed to `to` go first, through its ring; only when the
            // lane is open to it (a peer reached by UDP: they wait for
            // the protocol's next packet, which carries them)
            Some(true) => {
                if !self.transports.express_open(to) {
                    return false;
                }
                self.proto.express_ready(&to);
                self.flush(now);
            }
        }
        let n = rec.len();
        if !self.transports.express_send(to, rec, hold) {
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
        let mut buf = [0u8; MAX_LEN];
        let len = x.encode(&mut buf);
        if self.try_express_record(now, o.to, ExpressKind::AutoReply, &buf[..len], false) {
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
                self.send_returned_status(now, from, meta, RESEND, true);
            }
        }
        while let Some(to) = self.transports.take_dropped() {
            // its datagrams are sealed again (they may go by UDP now)
            self.proto.set_same_host(to, false);
            self.express_lost(to);
        }
    }

    /// A returned message of status `RESEND` from `from` for request
    /// `txn` (see the module doc): when it is an express request of ours
    /// to `from` not yet answered, it is sent again by the protocol's path
    /// (no longer express, its place among the requests to `from` now);
    /// anything else is dropped and counted, and sends nothing.
    pub(in crate::am) fn express_resend(&mut self, now: Instant, from: SocketAddr, txn: u32) {
        let meta = match self.outstanding.get_mut(&txn) {
            Some(o) if o.addr == from && o.express && !o.answered && o.may_run.is_none() => {
                o.express = false;
                o.sent = now;
                o.meta
            }
            _ => {
                self.express.stats.dropped += 1;
                self.stats.stale_dropped += 1;
                return;
            }
        };
        self.express.stats.resent += 1;
        self.send_message(now, from, CHANNEL_REQUEST, meta, Vec::new());
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
            self.incoming.push_front(Event::Failed {
                to,
                channel: CHANNEL_REQUEST,
                id: 0,
                meta: o.meta,
                reason: FailReason::PeerUnreachable,
            });
        }
    }
}
