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

use super::txn::{Trailer, PROBE_CRASHED, PROBE_UNKNOWN, UNKNOWN_LOGGED};
use crate::am::endpoint::endpoint::EpState;
use crate::error::ReturnStatus;
use crate::fxhash::FxHashMap;
use crate::time::Instant;
use crate::wire::{Category, MsgKind, MsgMeta, CHANNEL_REPLY};

pub const MAX_ENTRIES_PER_PEER: usize = 4096;
pub const MAX_KEPT_BYTES: usize = 64 << 20;

/// A reply kept for duplicates: None is the automatic (empty) reply.
#[derive(Clone)]
pub(in crate::am) struct KeptReply {
    pub(in crate::am) meta: MsgMeta,
    pub(in crate::am) payload: Vec<u8>,
}

pub(in crate::am) enum Entry {
    Started,
    Finished(Option<KeptReply>),
    /// Started before the process crashed, restored from its log: it ran
    /// at most once and will not finish.
    Crashed,
}

/// A peer's transactions, keyed by their 64-bit ids (the trailer's high
/// half and the header's id): compared plainly, no wrapping order.
struct PeerTxns {
    incarnation: u64,
    floor: u64,
    entries: FxHashMap<u64, Entry>,
    /// The Started entries by their 32-bit wire id (a handler's reply
    /// names only that): at most one each.
    running: FxHashMap<u32, u64>,
}

impl PeerTxns {
    fn new(incarnation: u64, floor: u64) -> PeerTxns {
        PeerTxns {
            incarnation,
            floor,
            entries: FxHashMap::default(),
            running: FxHashMap::default(),
        }
    }
}

fn entry_bytes(e: &Entry) -> usize {
    match e {
        Entry::Finished(Some(r)) => r.payload.len(),
        _ => 0,
    }
}

/// Counters of the target's transaction table (tests, statistics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TargetCounts {
    /// Duplicates answered with a kept reply (or ack) instead of a run.
    pub duplicates: u64,
    /// Requests below the floor, dropped.
    pub old_dropped: u64,
    /// New transactions refused because the table was full.
    pub refused_full: u64,
    /// Kept requests whose trailer put the floor more than 2^30 ids
    /// below the id (or below id 0): refused, never run.
    pub bad_floor: u64,
    /// Entries and kept reply bytes now.
    pub entries: usize,
    pub kept_bytes: usize,
}

#[derive(Default)]
pub(crate) struct TxnTarget {
    peers: FxHashMap<SocketAddr, PeerTxns>,
    kept_bytes: usize,
    counts: TargetCounts,
    /// A log is open: freed entries are listed in `freed` (to log them
    /// forgotten).
    pub(in crate::am) logging: bool,
    pub(in crate::am) freed: Vec<(SocketAddr, u64, u64)>,
    /// The ids a logged arrival forgets (kept for its allocation).
    pub(in crate::am) forgotten: Vec<u64>,
}

/// What to do with an arriving kept request.
pub(in crate::am) enum Seen {
    /// Run it (its entry is Started now).
    New,
    /// Finished before: send this reply again.
    Finished(Option<KeptReply>),
    /// Its handler runs now: ack again, the reply follows.
    Running,
    /// Its handler started before a crash: it will not finish.
    Crashed,
    /// Below the floor: its answer arrived long ago; drop it.
    Old,
    /// No room: refuse it.
    Full,
}

impl TxnTarget {
    #[inline]
    pub(in crate::am) fn is_empty(&self) -> bool {
        self.peers.is_empty()
    }

    pub(in crate::am) fn counts(&self) -> TargetCounts {
        let mut c = self.counts;
        c.entries = self.peers.values().map(|p| p.entries.len()).sum();
        c.kept_bytes = self.kept_bytes;
        c
    }

    /// A refused trailer (its floor too far below its id), counted.
    pub(in crate::am) fn bad_floor(&mut self) {
        self.counts.bad_floor += 1;
    }

    /// Looks kept request `txn` (64-bit id) from `from` (incarnation,
    /// 64-bit floor) up; a new one is entered as Started.
    pub(in crate::am) fn arrive(
        &mut self,
        from: SocketAddr,
        incarnation: u64,
        floor: u64,
        txn: u64,
    ) -> Seen {
        let kept = &mut self.kept_bytes;
        let p = self
            .peers
            .entry(from)
            .or_insert_with(|| PeerTxns::new(incarnation, floor));
        let freed = &mut self.freed;
        let logging = self.logging;
        if p.incarnation != incarnation {
            // another run of the endpoint at that address: the old one's
            // transactions cannot come back (it had other ids)
            *kept -= p.entries.values().map(entry_bytes).sum::<usize>();
            if logging {
                freed.extend(p.entries.keys().map(|&t| (from, p.incarnation, t)));
            }
            p.entries.clear();
            p.running.clear();
            p.incarnation = incarnation;
            p.floor = floor;
        }
        if p.floor < floor {
            p.floor = floor;
            let inc = p.incarnation;
            p.entries.retain(|&id, e| {
                let keep = id >= floor || matches!(e, Entry::Started);
                if !keep {
                    *kept -= entry_bytes(e);
                    if logging {
                        freed.push((from, inc, id));
                    }
                }
                keep
            });
        }
        if txn < p.floor && !p.entries.contains_key(&txn) {
            self.counts.old_dropped += 1;
            return Seen::Old;
        }
        match p.entries.get(&txn) {
            Some(Entry::Started) => {
                self.counts.duplicates += 1;
                Seen::Running
            }
            Some(Entry::Finished(r)) => {
                self.counts.duplicates += 1;
                Seen::Finished(r.clone())
            }
            Some(Entry::Crashed) => {
                self.counts.duplicates += 1;
                Seen::Crashed
            }
            None => {
                // (a second running one with the same wire id only comes
                // from a peer that does not skip ids in use: refused)
                if p.entries.len() >= MAX_ENTRIES_PER_PEER
                    || *kept >= MAX_KEPT_BYTES
                    || p.running.contains_key(&(txn as u32))
                {
                    self.counts.refused_full += 1;
                    return Seen::Full;
                }
                p.entries.insert(txn, Entry::Started);
                p.running.insert(txn as u32, txn);
                Seen::New
            }
        }
    }

    /// What the table says of wire id `txn` from `from`, run
    /// `incarnation` (Running, Finished or Crashed); None when it keeps no
    /// such one. A probe names the 32-bit id only: the running entry with
    /// it, else the newest kept one whose low half it is (probes are rare;
    /// a peer's entries are at most `MAX_ENTRIES_PER_PEER`).
    fn probe(&self, from: SocketAddr, incarnation: u64, txn: u32) -> Option<Seen> {
        let p = self
            .peers
            .get(&from)
            .filter(|p| p.incarnation == incarnation)?;
        let id = match p.running.get(&txn) {
            Some(&id) => id,
            None => p
                .entries
                .keys()
                .copied()
                .filter(|&id| id as u32 == txn)
                .max()?,
        };
        Some(match p.entries.get(&id)? {
            Entry::Started => Seen::Running,
            Entry::Finished(r) => Seen::Finished(r.clone()),
            Entry::Crashed => Seen::Crashed,
        })
    }

    /// The incarnation of `peer` the table keeps.
    pub(in crate::am) fn incarnation(&self, peer: SocketAddr) -> Option<u64> {
        self.peers.get(&peer).map(|p| p.incarnation)
    }

    /// Puts back an entry a log kept (`txn_log.rs`); the peer's latest
    /// incarnation in the log wins. The peer's floor is not logged: it
    /// comes again with its next request (an initiator never sends again
    /// an id below a floor it sent, `txn_floor`), and until then none is
    /// taken as old: one that never started here (lost in the crash, with
    /// newer ones finished) runs when it comes again.
    pub(in crate::am) fn restore(
        &mut self,
        peer: SocketAddr,
        incarnation: u64,
        txn: u64,
        e: Entry,
    ) {
        let p = self
            .peers
            .entry(peer)
            .or_insert_with(|| PeerTxns::new(incarnation, 0));
        if p.incarnation != incarnation {
            return;
        }
        self.kept_bytes += entry_bytes(&e);
        p.entries.insert(txn, e);
    }

    /// Takes a new entry back out (its log record could not be written).
    pub(in crate::am) fn unstart(&mut self, peer: SocketAddr, txn: u64) {
        if let Some(p) = self.peers.get_mut(&peer) {
            p.entries.remove(&txn);
            if p.running.get(&(txn as u32)) == Some(&txn) {
                p.running.remove(&(txn as u32));
            }
        }
    }

    /// The handler of wire id `txn` from `to` finished with `reply` (None:
    /// the automatic reply): the incarnation and 64-bit id of the entry
    /// it finished (None when no started entry was waiting for it).
    pub(in crate::am) fn finish(
        &mut self,
        to: SocketAddr,
        txn: u32,
        reply: Option<KeptReply>,
    ) -> Option<(u64, u64)> {
        let p = self.peers.get_mut(&to)?;
        let id = p.running.remove(&txn)?;
        let e = p.entries.get_mut(&id)?;
        if !matches!(e, Entry::Started) {
            return None;
        }
        self.kept_bytes += reply.as_ref().map_or(0, |r| r.payload.len());
        *e = Entry::Finished(reply);
        Some((p.incarnation, id))
    }
}

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

impl crate::am::Endpoint {
    /// The counters of this endpoint's table of transactions as a target.
    pub fn txn_target_counts(&self) -> TargetCounts {
        self.with(|s| s.txn.target.counts())
    }
}
