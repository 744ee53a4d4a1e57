//! What an endpoint keeps as a transaction's target (`txn/txn_target.rs`):
//! per peer, the transactions seen and their kept replies, within bounds.

use std::net::SocketAddr;

use crate::fxhash::FxHashMap;
use crate::wire::MsgMeta;

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
pub(in crate::am) struct PeerTxns {
    pub(in crate::am) incarnation: u64,
    pub(in crate::am) floor: u64,
    pub(in crate::am) entries: FxHashMap<u64, Entry>,
    /// The Started entries by their 32-bit wire id (a handler's reply
    /// names only that): at most one each.
    pub(in crate::am) running: FxHashMap<u32, u64>,
}

impl PeerTxns {
    pub(in crate::am) fn new(incarnation: u64, floor: u64) -> PeerTxns {
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
    pub(in crate::am) peers: FxHashMap<SocketAddr, PeerTxns>,
    pub(in crate::am) kept_bytes: usize,
    pub(in crate::am) counts: TargetCounts,
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
    pub(in crate::am) fn probe(
        &self,
        from: SocketAddr,
        incarnation: u64,
        txn: u32,
    ) -> Option<Seen> {
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
