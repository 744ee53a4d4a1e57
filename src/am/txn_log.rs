//! The transaction log wired into an endpoint (`ramp_LogOpen`,
//! `RAMP_LOG_DIR`; the file itself is `txlog/`). Opening it before the
//! endpoint maps any peer makes the endpoint the one the log names: a
//! restarted process binds the logged address and takes the logged
//! protocol secret (so its incarnation, which derives from the secret, is
//! the same too). As a target it logs, for every kept transaction, Acked
//! and Started before the ack leaves and the handler runs, Finished (with
//! the kept reply) before the reply leaves, Forgotten when the initiator's
//! floor passes it. On reopening: a finished transaction answers
//! duplicates with the logged reply; one that had started answers
//! "crashed" (the initiator sees RAMP_ABANDON_TARGET_CRASHED); one only
//! acked in the log never had its ack sent, and is forgotten (its
//! retransmission runs it).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use super::endpoint::{Endpoint, EpState};
use super::txn::incarnation_of;
use super::txn_target::{Entry, KeptReply};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::proto::Protocol;
use crate::txlog::record::{LoggedMsg, Record, TargetKey};
use crate::txlog::state::TargetPhase;
use crate::txlog::{Identity, TxLog};
use crate::wire::{Category, MsgKind, MsgMeta, MAX_ARGS};

fn logged(meta: &MsgMeta, payload: &[u8]) -> LoggedMsg {
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

fn key(peer: SocketAddr, incarnation: u64, txn: u32) -> TargetKey {
    TargetKey {
        peer,
        incarnation,
        txn: txn as u64,
    }
}

impl EpState {
    /// Appends `rec` when a log is open; false when it could not be written.
    fn log_append(&mut self, rec: &Record) -> bool {
        let Some(log) = self.txn.log.as_mut() else {
            return true;
        };
        match log.append(rec) {
            Ok(()) => true,
            Err(e) => {
                eprintln!("ramp: {e}");
                false
            }
        }
    }

    /// A kept request is about to be acked and run: logged first.
    pub(super) fn log_started(
        &mut self,
        from: SocketAddr,
        incarnation: u64,
        meta: &MsgMeta,
        payload: &[u8],
    ) -> bool {
        let k = key(from, incarnation, meta.txn);
        self.log_append(&Record::Acked {
            key: k,
            msg: logged(meta, payload),
        }) && self.log_append(&Record::Started { key: k })
    }

    /// The handler of kept transaction `txn` from `to` finished: logged
    /// (with its reply) before the reply leaves, then kept.
    pub(super) fn txn_finished(&mut self, to: SocketAddr, txn: u32, reply: Option<KeptReply>) {
        if self.txn.log.is_some() && self.txn.target.is_started(to, txn) {
            if let Some(inc) = self.txn.target.incarnation(to) {
                let r = reply.as_ref().map(|r| logged(&r.meta, &r.payload));
                self.log_append(&Record::Finished {
                    key: key(to, inc, txn),
                    reply: r,
                });
            }
        }
        self.txn.target.finish(to, txn, reply);
    }

    /// Logs the entries the table freed as forgotten.
    pub(super) fn log_forgotten(&mut self) {
        let freed = std::mem::take(&mut self.txn.target.freed);
        for (peer, inc, txn) in freed {
            self.log_append(&Record::Forgotten {
                key: key(peer, inc, txn),
            });
        }
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
        let created_unix_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
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
            let transports = crate::net::open_at(cfg, id.addr).map_err(|e| {
                eprintln!(
                    "ramp: transaction log {}: cannot bind its address {}: {e}",
                    path.display(),
                    id.addr
                );
                Error::Resource("cannot bind the address the transaction log names")
            })?;
            let mut proto = Protocol::new(st.proto.config().clone(), &id.secret);
            proto.set_recv_depth(st.proto.recv_depth());
            st.transports = transports;
            st.proto = proto;
            st.secret = id.secret;
            st.txn.incarnation = incarnation_of(&id.secret);
            let _ = self.logged.set(id.addr);
        }
        // what the target had acked, started, finished
        let mut forget = Vec::new();
        for (k, phase) in &log.state().target {
            let txn = k.txn as u32;
            let entry = match phase {
                // its ack never left (it follows Started): not run, not owed
                TargetPhase::Acked(_) => {
                    forget.push(*k);
                    continue;
                }
                TargetPhase::Started => Entry::Crashed,
                TargetPhase::Finished(r) => Entry::Finished(r.as_ref().and_then(|m| kept(txn, m))),
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
        st.txn.target.logging = true;
        st.txn.log = Some(log);
        Ok(())
    }
}
