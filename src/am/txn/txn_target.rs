//! Transactions at the target: at-most-once handler execution. Per peer
//! (address and incarnation) the target keeps the kept transactions it
//! started and finished, with their replies: a duplicate request (a
//! retransmission in a new association, a resumed transaction, a replay)
//! gets the kept reply again, or only the ack while its handler still
//! runs, and never runs the handler twice. Entries below the floor the
//! initiator sends with each kept request (its answer arrived there) are
//! freed; a request below the floor is an old copy and is dropped. Memory
//! is bounded: at most `MAX_ENTRIES_PER_PEER` entries a peer and
//! `MAX_KEPT_BYTES` bytes of kept replies; past them a new transaction is
//! refused (returned with ECONGESTION: it never ran). Ids and floors are
//! 64 bits (the trailer's high half, `Trailer::ids`); a trailer whose
//! floor is out of reach of its id (more than 2^30 below, above it, below
//! id 0) is refused with BADARGS and counted (`bad_floor`).

use std::net::SocketAddr;

use crate::am::endpoint::core::EpState;
use crate::am::state::txn::{Trailer, PROBE_CRASHED, PROBE_UNKNOWN, UNKNOWN_LOGGED};
use crate::am::state::txn_target::KeptReply;
use crate::am::state::txn_target::Seen;
use crate::am::state::txn_target::TargetCounts;
use crate::error::ReturnStatus;
use crate::time::Instant;
use crate::wire::{Category, MsgKind, MsgMeta, CHANNEL_REPLY};

impl EpState {
    /// A kept request passed the checks: true to run its handler (its ack
    /// is out); false when it is a duplicate (answered here), old or
    /// refused (full, or its trailer's floor out of reach of its id).
    pub(in crate::am) fn txn_arrive(
        &mut self,
        from: SocketAddr,
        meta: &MsgMeta,
        payload: &[u8],
        trailer: &Trailer,
        now: Instant,
    ) -> bool {
        // the 64-bit id and floor (the trailer's high half and lag): a
        // floor out of reach of the id is refused, never run
        let Some((id, floor)) = trailer.ids(meta.txn) else {
            self.txn.target.bad_floor();
            self.send_returned(now, from, *meta, ReturnStatus::BadArgs, true);
            return false;
        };
        let incarnation = trailer.incarnation;
        let seen = self.txn.target.arrive(from, incarnation, floor, id);
        let logged_start = matches!(seen, Seen::New) && self.txn.log.is_some();
        // a logged start writes them in its own record
        if !self.txn.target.freed.is_empty() && !logged_start {
            self.log_forgotten();
        }
        match seen {
            Seen::New => {
                // logged (Acked, Started) before the ack leaves and the
                // handler runs
                if logged_start && !self.log_started(from, incarnation, id, meta, payload) {
                    self.txn.target.unstart(from, id);
                    self.send_returned(now, from, *meta, ReturnStatus::Congestion, true);
                    return false;
                }
                self.send_txn_ack(now, from, meta.txn);
                true
            }
            Seen::Running => {
                self.send_txn_ack(now, from, meta.txn);
                false
            }
            Seen::Finished(r) => {
                self.send_txn_ack(now, from, meta.txn);
                self.send_kept(now, from, meta.txn, r);
                false
            }
            Seen::Crashed => {
                self.send_txn_status(now, from, meta.txn, PROBE_CRASHED);
                false
            }
            Seen::Old => false,
            Seen::Full => {
                self.send_returned(now, from, *meta, ReturnStatus::Congestion, true);
                false
            }
        }
    }

    /// A probe from the initiator: ack again while it runs, the kept reply
    /// when finished, "unknown" when it keeps no such transaction.
    pub(in crate::am) fn txn_probed(&mut self, from: SocketAddr, meta: &MsgMeta, now: Instant) {
        let a = meta.args();
        if a.len() != 2 {
            self.stats.corrupt_dropped += 1;
            return;
        }
        let inc = (a[0] as u64) << 32 | a[1] as u64;
        match self.txn.target.probe(from, inc, meta.txn) {
            None => self.send_txn_status(now, from, meta.txn, PROBE_UNKNOWN),
            Some(Seen::Crashed) => self.send_txn_status(now, from, meta.txn, PROBE_CRASHED),
            Some(Seen::Finished(r)) => self.send_kept(now, from, meta.txn, r),
            Some(_) => self.send_txn_ack(now, from, meta.txn),
        }
    }

    /// A kept reply sent again (None: the automatic reply); its tag is
    /// the sender's translation entry's (a restored reply has none).
    fn send_kept(&mut self, now: Instant, to: SocketAddr, txn: u32, r: Option<KeptReply>) {
        match r {
            Some(r) => {
                let mut meta = r.meta;
                if let Some(i) = self.table.index_of(&to) {
                    if let Some(e) = self.table.mapped_entry(i) {
                        meta.tag = e.tag;
                    }
                }
                let payload = self.proto.payload_buffer(&r.payload);
                self.send_message(now, to, CHANNEL_REPLY, meta, payload);
            }
            None => self.send_auto_reply(now, to, txn, false),
        }
    }

    /// A `TxnAck` carrying `status` (`PROBE_UNKNOWN`, `PROBE_CRASHED`);
    /// "unknown" says whether this endpoint logs its starts (then it
    /// never started the transaction, also before a restart).
    fn send_txn_status(&mut self, now: Instant, to: SocketAddr, txn: u32, status: u8) {
        let logged = [UNKNOWN_LOGGED];
        let args: &[u32] = if status == PROBE_UNKNOWN && self.txn.log.is_some() {
            &logged
        } else {
            &[]
        };
        let mut m = MsgMeta::new(MsgKind::TxnAck, Category::Short, 0, args);
        m.txn = txn;
        m.status = status;
        self.send_message(now, to, CHANNEL_REPLY, m, Vec::new());
    }

    /// The ack of kept request `txn`: its handler starts. It leaves now,
    /// not with the reply after the handler.
    fn send_txn_ack(&mut self, now: Instant, to: SocketAddr, txn: u32) {
        let meta = MsgMeta {
            txn,
            ..MsgMeta::new(MsgKind::TxnAck, Category::Short, 0, &[])
        };
        self.proto.send(now, to, CHANNEL_REPLY, meta, Vec::new());
        self.flush(now);
    }
}

impl crate::am::endpoint::core::Endpoint {
    /// The counters of this endpoint's table of transactions as a target.
    pub fn txn_target_counts(&self) -> TargetCounts {
        self.with(|s| s.txn.target.counts())
    }
}
