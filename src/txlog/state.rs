//! What a log says, replayed: the initiator's transactions and states, and
//! at the target what was acknowledged, started and finished (with kept
//! replies). The log's records change it one at a time (`apply`); a
//! compaction writes it back as the fewest records that rebuild it
//! (`records`).

use std::collections::BTreeMap;
use std::net::SocketAddr;

use super::record::{LoggedMsg, Record, TargetKey, TxnState};
pub use super::target_map::TargetMap;

/// A transaction this endpoint issued.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issued {
    pub dest: SocketAddr,
    pub msg: LoggedMsg,
    pub state: TxnState,
}

/// How far a transaction got at its target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TargetPhase {
    /// Acknowledged; the handler has not started: the request is kept, to run.
    Acked(LoggedMsg),
    /// The handler started and had not finished when last logged.
    Started,
    /// The handler finished; its reply (if any) is kept for duplicates.
    Finished(Option<LoggedMsg>),
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogState {
    /// By transaction id.
    pub issued: BTreeMap<u64, Issued>,
    /// By (peer, incarnation, id): a target looks one up for every record
    /// it writes (`target_map.rs`; `ramp log` sorts them to print).
    pub target: TargetMap,
    /// The lowest transaction id not used yet.
    pub next_txn: u64,
}

/// Why a record cannot follow the ones before it.
pub type Inconsistency = &'static str;

/// Transaction ids are counted from 1 and never reach this (2^63: a
/// billion a second for 292 years); a log that says otherwise was not
/// written by ramp, and trusting it would wrap the endpoint's counter.
pub const MAX_TXN_ID: u64 = 1 << 63;

impl LogState {
    /// Applies one record; Err when it contradicts the state (the log is
    /// then not trusted). A refused record changes nothing: every arm
    /// checks before it writes (`TxLog::append` relies on it). The
    /// messages the state keeps are moved out of `rec`, not copied.
    pub fn apply(&mut self, rec: &mut Record) -> Result<(), Inconsistency> {
        match rec {
            Record::Issued { txn, dest, msg } => {
                if *txn >= MAX_TXN_ID {
                    return Err("a transaction id of 2^63 or more (ramp never issues one)");
                }
                if self.issued.contains_key(txn) || *txn < self.next_txn {
                    return Err("a transaction id issued twice");
                }
                self.next_txn = *txn + 1;
                self.issued.insert(
                    *txn,
                    Issued {
                        dest: *dest,
                        msg: std::mem::take(msg),
                        state: TxnState::default(),
                    },
                );
            }
            Record::State { txn, state } => {
                self.issued
                    .get_mut(txn)
                    .ok_or("a state for a transaction never issued")?
                    .state = *state;
            }
            Record::Released { txn } => {
                self.issued
                    .remove(txn)
                    .ok_or("a release of a transaction never issued")?;
            }
            Record::TxnFloor { next } => {
                if *next > MAX_TXN_ID {
                    return Err("a transaction id floor above 2^63 (ramp never issues one)");
                }
                self.next_txn = self.next_txn.max(*next)
            }
            Record::Acked { key, msg } => {
                if self.target.contains_key(key) {
                    return Err("a request acknowledged twice");
                }
                self.target
                    .insert_absent(*key, TargetPhase::Acked(std::mem::take(msg)));
            }
            Record::AckedStarted { key, forgotten, .. } => {
                const TWICE: Inconsistency = "a request acknowledged twice";
                const NEVER: Inconsistency = "a transaction forgotten that was never acknowledged";
                let one = match forgotten[..] {
                    [txn] if txn != key.txn => Some(txn),
                    _ => None,
                };
                if let Some(txn) = one {
                    // the usual case: the one forgotten entry out, the new
                    // one in (or the old one back)
                    let old = TargetKey { txn, ..*key };
                    let phase = self.target.remove(&old).ok_or(NEVER)?;
                    if self.target.contains_key(key) {
                        self.target.insert_absent(old, phase);
                        return Err(TWICE);
                    }
                    self.target.insert_absent(*key, TargetPhase::Started);
                    return Ok(());
                }
                if self.target.contains_key(key) {
                    return Err(TWICE);
                }
                // increasing (so no id twice), each one kept: checked whole
                // before anything changes
                let increasing = forgotten.windows(2).all(|w| w[0] < w[1]);
                let kept = |&txn: &u64| self.target.contains_key(&TargetKey { txn, ..*key });
                if !increasing || !forgotten.iter().all(kept) {
                    return Err(NEVER);
                }
                for &txn in forgotten.iter() {
                    self.target.remove(&TargetKey { txn, ..*key });
                }
                // the request itself is no longer needed once started
                self.target.insert_absent(*key, TargetPhase::Started);
            }
            Record::Started { key } => match self.target.get_mut(key) {
                Some(p @ TargetPhase::Acked(_)) => *p = TargetPhase::Started,
                _ => return Err("a handler started without its request acknowledged"),
            },
            Record::Finished { key, reply } => match self.target.get_mut(key) {
                Some(p @ TargetPhase::Started) => *p = TargetPhase::Finished(reply.take()),
                _ => return Err("a handler finished without having started"),
            },
            Record::Forgotten { key } => {
                self.target
                    .remove(key)
                    .ok_or("a transaction forgotten that was never acknowledged")?;
            }
        }
        Ok(())
    }

    /// The fewest records that rebuild this state from nothing.
    pub fn records(&self) -> Vec<Record> {
        let mut out = Vec::new();
        for (txn, i) in &self.issued {
            out.push(Record::Issued {
                txn: *txn,
                dest: i.dest,
                msg: i.msg.clone(),
            });
            if i.state != TxnState::default() {
                out.push(Record::State {
                    txn: *txn,
                    state: i.state,
                });
            }
        }
        for (key, phase) in self.target.iter() {
            let placeholder = LoggedMsg {
                handler: 0,
                category: 0,
                args: Vec::new(),
                dest_offset: 0,
                payload: Vec::new(),
            };
            match phase {
                TargetPhase::Acked(m) => out.push(Record::Acked {
                    key: *key,
                    msg: m.clone(),
                }),
                TargetPhase::Started | TargetPhase::Finished(_) => {
                    // the request itself is no longer needed once started
                    out.push(Record::AckedStarted {
                        key: *key,
                        msg: placeholder,
                        forgotten: Vec::new(),
                    });
                    if let TargetPhase::Finished(r) = phase {
                        out.push(Record::Finished {
                            key: *key,
                            reply: r.clone(),
                        });
                    }
                }
            }
        }
        // last: the ids below it that were released are used too
        out.push(Record::TxnFloor {
            next: self.next_txn,
        });
        out
    }
}
