//! The transaction log wired into an endpoint (`ramp_LogOpen`,
//! `RAMP_LOG_DIR`; the file itself is `txlog/`). Opening it before the
//! endpoint maps any peer makes the endpoint the one the log names: a
//! restarted process binds the logged address and takes the logged
//! secret, from which its incarnation derives (its association secret
//! mixes it with the run's own randomness: a new handshake each run). As a target it logs, for every kept transaction, Acked
//! and Started (one record, `AckedStarted`) before the ack leaves and the handler runs, Finished (with
//! the kept reply) before the reply leaves, Forgotten when the initiator's
//! floor passes it. On reopening: a finished transaction answers
//! duplicates with the logged reply; one that had started answers
//! "crashed" (the initiator sees RAMP_ABANDON_TARGET_CRASHED); one only
//! acked in the log never had its ack sent, and is forgotten (its
//! retransmission runs it).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use crate::am::endpoint::core::{Endpoint, EpState};
use crate::am::handler::message::TXN_FLAG;
use crate::am::state::txn::{
    incarnation_of, put_trailer, Abandon, Ack, Progress, TxnState, TRAILER_LEN,
};
use crate::am::state::txn_target::{Entry, KeptReply};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::proto::Protocol;
use crate::time::Instant;
use crate::txlog::record::{LoggedMsg, Record, TargetKey, TxnState as LogTxnState};
use crate::txlog::state::TargetPhase;
use crate::txlog::{Identity, TxLog};
use crate::wire::{Category, MsgKind, MsgMeta, CHANNEL_REQUEST, MAX_ARGS};

pub(in crate::am) fn logged(meta: &MsgMeta, payload: &[u8]) -> LoggedMsg {
    LoggedMsg {
        handler: meta.handler,
        category: meta.category as u8,
        args: meta.args().to_vec(),
        dest_offset: meta.dest_offset,
        payload: payload.to_vec(),
    }
}

/// A logged reply as the table keeps it (None when the record is unusable).
fn kept(txn: u32, m: &LoggedMsg) -> Option<KeptReply> {
    let cat = Category::from_u8(m.category)?;
    if m.args.len() > MAX_ARGS {
        return None;
    }
    let mut meta = MsgMeta::new(MsgKind::User, cat, m.handler, &m.args);
    meta.txn = txn;
    meta.dest_offset = m.dest_offset;
    Some(KeptReply {
        meta,
        payload: m.payload.clone(),
    })
}

fn abandon_from(v: u8) -> Abandon {
    match v {
        1 => Abandon::NotAcked,
        2 => Abandon::Refused,
        3 => Abandon::HandlerTimeout,
        4 => Abandon::NoReply,
        5 => Abandon::TargetCrashed,
        _ => Abandon::None,
    }
}

/// A target's key: the 64-bit id (v3; the trailer's high half).
fn key(peer: SocketAddr, incarnation: u64, txn: u64) -> TargetKey {
    TargetKey {
        peer,
        incarnation,
        txn,
    }
}

impl EpState {
    /// Appends `rec` when a log is open; false when it could not be written.
    fn log_append(&mut self, rec: &mut Record) -> bool {
        let Some(log) = self.txn.log.as_mut() else {
            return true;
        };
        match log.append_mut(rec) {
            Ok(()) => true,
            Err(e) => {
                eprintln!("ramp: {e}");
                false
            }
        }
    }

    /// A kept request is about to be acked and run: logged first, in one
    /// record (a crash falls before both or after both) with the entries
    /// of the same peer and run its arrival freed; other freed entries
    /// (an earlier run's) are logged forgotten before it.
    pub(in crate::am) fn log_started(
        &mut self,
        from: SocketAddr,
        incarnation: u64,
        id: u64,
        meta: &MsgMeta,
        payload: &[u8],
    ) -> bool {
        let mut forgotten = std::mem::take(&mut self.txn.target.forgotten);
        forgotten.clear();
        let mut freed = std::mem::take(&mut self.txn.target.freed);
        for &(peer, inc, txn) in &freed {
            if (peer, inc) == (from, incarnation) {
                forgotten.push(txn);
            } else {
                self.log_append(&mut Record::Forgotten {
                    key: key(peer, inc, txn),
                });
            }
        }
        freed.clear();
        self.txn.target.freed = freed;
        forgotten.sort_unstable();
        let mut rec = Record::AckedStarted {
            key: key(from, incarnation, id),
            msg: logged(meta, payload),
            forgotten,
        };
        let mut ok = self.log_append(&mut rec);
        if let Record::AckedStarted { forgotten, .. } = &mut rec {
            if !ok && !forgotten.is_empty() {
                // one of them the log does not keep (said above): the
                // others are forgotten one by one, the request logged alone
                for &txn in forgotten.iter() {
                    self.log_append(&mut Record::Forgotten {
                        key: key(from, incarnation, txn),
                    });
                }
                forgotten.clear();
                ok = self.log_append(&mut rec);
            }
        }
        if let Record::AckedStarted { forgotten, .. } = rec {
            self.txn.target.forgotten = forgotten;
        }
        ok
    }

    /// The handler of kept transaction `txn` from `to` finished: kept, and
    /// logged (with its reply) before the reply leaves.
    pub(in crate::am) fn txn_finished(
        &mut self,
        to: SocketAddr,
        txn: u32,
        reply: Option<KeptReply>,
    ) {
        let logging = self.txn.log.is_some();
        let logged_reply = match (&reply, logging) {
            (Some(r), true) => Some(logged(&r.meta, &r.payload)),
            _ => None,
        };
        if let Some((inc, id)) = self.txn.target.finish(to, txn, reply) {
            if logging {
                self.log_append(&mut Record::Finished {
                    key: key(to, inc, id),
                    reply: logged_reply,
                });
            }
        }
    }

    /// The initiator issued kept transaction `txn` (64-bit id) to `dest`
    /// (logged before it is sent: a restarted initiator sends it again).
    pub(in crate::am) fn log_issued(
        &mut self,
        txn: u64,
        dest: SocketAddr,
        meta: &MsgMeta,
        payload: &[u8],
    ) {
        self.log_append(&mut Record::Issued {
            txn,
            dest,
            msg: logged(meta, payload),
        });
    }

    /// The states that changed since they were logged (read lazily: a
    /// state lost in a crash is found again by resuming the transaction).
    pub(in crate::am) fn log_states(&mut self) {
        let changed: Vec<(u32, u64, TxnState)> = self.txn.changed_states().collect();
        for (txn, id64, s) in changed {
            let state = LogTxnState {
                ack: s.ack as u8,
                progress: s.progress as u8,
                abandon: s.abandon as u8,
                status: s.status,
            };
            if self.log_append(&mut Record::State { txn: id64, state }) {
                self.txn.set_logged(txn, s);
            }
        }
    }

    /// Kept transaction `id64` released (before its record goes).
    pub(in crate::am) fn log_released(&mut self, id64: u64) {
        if self.txn.log.is_some() {
            self.log_append(&mut Record::Released { txn: id64 });
        }
    }

    /// Sends again what the log had unfinished, to targets now mapped.
    pub(in crate::am) fn txn_resume(&mut self, now: Instant) {
        let todo = std::mem::take(&mut self.txn.to_resume);
        for (txn, addr, m) in todo {
            let Some(index) = self.table.index_of(&addr) else {
                self.txn.to_resume.push((txn, addr, m));
                continue;
            };
            self.txn_send_logged(txn, index, addr, &m, now);
        }
    }

    /// Sends kept transaction `txn` (64-bit id), whose request is `m`, to
    /// translation index `index` (at `addr`) again: it waits for its
    /// answer anew. False when `m` is unusable.
    pub(in crate::am) fn txn_send_logged(
        &mut self,
        txn: u64,
        index: u32,
        addr: SocketAddr,
        m: &LoggedMsg,
        now: Instant,
    ) -> bool {
        let tag = self.table.mapped_entry(index).map_or(0, |e| e.tag);
        let Some(cat) = Category::from_u8(m.category) else {
            return false;
        };
        if m.args.len() > MAX_ARGS {
            return false;
        }
        let mut meta = MsgMeta::new(MsgKind::User, cat, m.handler, &m.args);
        meta.txn = txn as u32;
        meta.tag = tag;
        meta.dest_offset = m.dest_offset;
        meta.status = TXN_FLAG;
        self.txn_resumed(txn, index, addr, meta, now);
        let floor = self.txn_floor(addr);
        let mut payload = self.proto.payload_buffer_with_room(&m.payload, TRAILER_LEN);
        put_trailer(&mut payload, self.txn.incarnation, txn, floor);
        self.send_message(now, addr, CHANNEL_REQUEST, meta, payload);
        true
    }

    /// Logs the entries the table freed as forgotten.
    pub(in crate::am) fn log_forgotten(&mut self) {
        let mut freed = std::mem::take(&mut self.txn.target.freed);
        for &(peer, inc, txn) in &freed {
            self.log_append(&mut Record::Forgotten {
                key: key(peer, inc, txn),
            });
        }
        freed.clear();
        self.txn.target.freed = freed;
    }
}

impl Endpoint {
    /// `ramp_LogOpen`: keeps this endpoint's transactions in the log at
    /// `path` (created when missing). Before the endpoint maps any peer.
    /// An existing log makes this endpoint the one it names (its address,
    /// its secret); a foreign, torn or inconsistent file is refused, with
    /// a message naming the file and the problem on stderr.
    pub fn log_open(self: &Arc<Self>, path: &Path, sync: bool, cfg: &Config) -> Result<()> {
        let g = self.state.lock();
        let mut st = g.borrow_mut();
        if st.txn.log.is_some() {
            return Err(Error::Resource("this endpoint's log is open already"));
        }
        if st.table.mapped() > 0 {
            return Err(Error::Resource(
                "ramp_LogOpen must come before the endpoint maps any peer",
            ));
        }
        let (secret, addr) = (st.secret, self.addr());
        let created_unix_ns = st.clock.unix_nanos();
        let fresh = || Identity {
            secret,
            addr,
            created_unix_ns,
        };
        let (mut log, _) = TxLog::open(path, fresh, sync).map_err(|e| {
            eprintln!("ramp: {e}");
            Error::Resource("cannot open the transaction log (the message above says why)")
        })?;
        let id = log.identity().clone();
        if id.addr != addr || id.secret != secret {
            if self.logged.get().is_some() {
                return Err(Error::Resource(
                    "this endpoint came back from a log already",
                ));
            }
            let transports = self.host.open_transports(cfg, Some(id.addr)).map_err(|e| {
                eprintln!(
                    "ramp: transaction log {}: cannot bind its address {}: {e}",
                    path.display(),
                    id.addr
                );
                Error::Resource("cannot bind the address the transaction log names")
            })?;
            // The association secret of this run mixes the logged one with
            // this run's randomness: the protocol derives its verification
            // tags from it in sequence, and a run repeating the last one's
            // tags would look like a late copy of its association. The
            // identity (address, incarnation) is the logged secret's.
            let run = blake3::keyed_hash(&id.secret, &st.secret);
            let mut proto = Protocol::new(st.proto.config().clone(), run.as_bytes());
            proto.set_recv_depth(st.proto.recv_depth());
            proto.set_local_rails(&transports.rail_addrs());
            st.transports = transports;
            st.proto = proto;
            st.secret = id.secret;
            st.txn.incarnation = incarnation_of(&id.secret);
            let _ = self.logged.set(id.addr);
            // (a request to it is loopback from now on)
            st.table.set_own(self.addr());
        }
        // what the target had acked, started, finished
        let mut forget = Vec::new();
        for (k, phase) in log.state().target.iter() {
            let txn = k.txn;
            let entry = match phase {
                // its ack never left (it follows Started): not run, not owed
                TargetPhase::Acked(_) => {
                    forget.push(*k);
                    continue;
                }
                TargetPhase::Started => Entry::Crashed,
                TargetPhase::Finished(r) => {
                    Entry::Finished(r.as_ref().and_then(|m| kept(txn as u32, m)))
                }
            };
            st.txn.target.restore(k.peer, k.incarnation, txn, entry);
            if st.txn.target.incarnation(k.peer) != Some(k.incarnation) {
                forget.push(*k);
            }
        }
        for k in forget {
            if let Err(e) = log.append(&Record::Forgotten { key: k }) {
                eprintln!("ramp: {e}");
            }
        }
        // what the initiator had issued: listed again; unfinished ones are
        // sent again once their target is mapped
        let ls = log.state();
        if ls.next_txn > 0 {
            st.next_txn = ls.next_txn.max(1);
        }
        for (&txn, i) in &ls.issued {
            let s = TxnState {
                ack: match i.state.ack {
                    1 => Ack::Acked,
                    2 => Ack::Nacked,
                    _ => Ack::None,
                },
                progress: Progress::from_i32(i.state.progress as i32).unwrap_or_default(),
                abandon: abandon_from(i.state.abandon),
                status: i.state.status,
            };
            st.txn.restore_record(txn, i.dest, s);
            if !s.is_final() {
                st.txn.to_resume.push((txn, i.dest, i.msg.clone()));
            }
        }
        if !st.txn.to_resume.is_empty() {
            st.txn.wake(Instant::ZERO);
        }
        st.txn.target.logging = true;
        st.txn.log = Some(log);
        Ok(())
    }
}
