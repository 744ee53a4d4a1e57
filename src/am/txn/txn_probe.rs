//! Transactions whose answer is late (`txn.rs`): the target's `TxnAck`
//! and what it says to a probe (running, finished, crashed, unknown), the
//! probes (`TxnProbe`) of transactions that waited `PROBE_EVERY` or whose
//! target restarted, a request given up by the protocol, the handler-time
//! bound; a request sent again to a restarted target that never started
//! it; and `txn_refresh`, which the poll path runs when `Txns::due` (so a
//! request waiting for a credit a transaction holds is never left waiting
//! on a target that restarted), as do the calls that read states.

use std::net::SocketAddr;

use crate::am::endpoint::core::EpState;
use crate::am::state::txn::{
    Abandon, Ack, Progress, MAX_PROBE_FAILURES, PROBE_CRASHED, PROBE_EVERY, PROBE_UNKNOWN,
    UNKNOWN_LOGGED,
};
use crate::error::ReturnStatus;
use crate::proto::FailReason;
use crate::time::Instant;
use crate::txlog::record::LoggedMsg;
use crate::wire::{Category, MsgKind, MsgMeta, CHANNEL_REQUEST};

/// How a transaction given up without its reply ends: NOT_ACKED ("the
/// handler never ran") only when no ack came and its handler cannot have
/// started (`may_run` is `Some(false)`); else NO_REPLY, "may have run":
/// an ack lost on its way while the handler runs looks like no ack, and
/// a request given up in the network may have arrived.
fn given_up(ack: Ack, may_run: Option<bool>) -> Abandon {
    if ack == Ack::None && may_run == Some(false) {
        Abandon::NotAcked
    } else {
        Abandon::NoReply
    }
}

impl EpState {
    /// The target's `TxnAck` for `meta.txn` arrived from `from` (status
    /// `PROBE_UNKNOWN`: the answer to a probe the target cannot place).
    pub(in crate::am) fn txn_acked(&mut self, from: SocketAddr, meta: &MsgMeta, now: Instant) {
        let assoc = self.proto.association(&from);
        let txn = meta.txn;
        if meta.status == PROBE_CRASHED {
            let Some(r) = self.live_record(txn, from) else {
                self.stats.stale_dropped += 1;
                return;
            };
            r.state.ack = Ack::Acked;
            r.state.abandon = Abandon::TargetCrashed;
            r.state.status = ReturnStatus::Unreachable as i32;
            self.txn.ended(now);
            self.complete(txn, Category::Short, now);
            return;
        }
        if meta.status == PROBE_UNKNOWN {
            let verdict = self.outstanding.get(&txn).and_then(|o| o.may_run);
            let Some(r) = self.live_record(txn, from) else {
                self.stats.stale_dropped += 1;
                return;
            };
            let logs_starts = meta.args().first() == Some(&UNKNOWN_LOGGED);
            if logs_starts && r.state.ack == Ack::None && (r.sent_in != assoc || r.again) {
                // a target that restarted since the request went out (or
                // a probe that went before the request was sent again),
                // and logs its starts (before its acks): it never started
                // this one, neither did the process before it; sent
                // again, to run there once
                let id64 = r.id64;
                if self.txn_send_again(id64, from, now) {
                    return;
                }
            }
            let Some(r) = self.live_record(txn, from) else {
                return;
            };
            // it keeps no such transaction: it never started it if it
            // logs its starts, or if it is the process the request went
            // to (the same association: the request came before the
            // probe); else it restarted without a log and the process
            // before it may have run it
            let never_started = logs_starts || (r.sent_in.is_some() && r.sent_in == assoc);
            let may_run = if never_started {
                Some(false)
            } else {
                r.may_have_run.max(verdict)
            };
            r.state.abandon = given_up(r.state.ack, may_run);
            r.state.status = ReturnStatus::Unreachable as i32;
            self.txn.ended(now);
            self.complete(txn, Category::Short, now);
            return;
        }
        match self.live_record(txn, from) {
            Some(r) => {
                r.probe_failures = 0;
                if r.state.ack == Ack::None {
                    r.state.ack = Ack::Acked;
                    r.state.progress = Progress::Processing;
                    r.acked_at = now;
                    r.assoc = assoc.or(r.assoc);
                    // (its target keeps it now)
                    r.request = None;
                    if let Some(b) = self.txn.handler_timeout {
                        self.txn.wake(now.plus(b + 1));
                    }
                }
            }
            None => {
                // (the reply may come first: delivered ahead of a gap
                // that held the ack, `proto/recv.rs`)
                if self.txn.records.get(&txn).is_none_or(|r| r.addr != from) {
                    self.stats.stale_dropped += 1;
                }
            }
        }
    }

    /// The protocol gave kept transaction `txn` up: true when it is one.
    /// `probe_failed`: the message that failed was a probe (else the
    /// request itself). A request given up because the peer went silent
    /// or restarted is not concluded yet: the target may have run it and
    /// come back from its log, so it is probed first (the probe's own
    /// failure concludes). `may_run`: whether the request itself, given
    /// up, may have started at the target (dispatch's verdict, as for a
    /// plain request's `ramp_ReturnedMayHaveRun`); the verdict of its
    /// place when its association ended (`started.rs`) counts too.
    pub(in crate::am) fn txn_failed(
        &mut self,
        to: SocketAddr,
        txn: u32,
        reason: FailReason,
        probe_failed: bool,
        may_run: Option<bool>,
        now: Instant,
    ) -> bool {
        let verdict = self.outstanding.get(&txn).and_then(|o| o.may_run);
        let Some(r) = self.live_record(txn, to) else {
            return false;
        };
        // (Option's order: None < Some(false) < Some(true): "may have run"
        // from any source wins, then "cannot have", then "not known")
        r.may_have_run = r.may_have_run.max(may_run).max(verdict);
        if probe_failed {
            r.probe_failures += 1;
        }
        // a probe given up because the peer restarted goes again, in the
        // new association; a dead peer fails the next ones at once
        if reason == FailReason::PeerUnreachable && r.probe_failures < MAX_PROBE_FAILURES {
            r.probed_at = now;
            self.send_probe(txn, to, now);
            return true;
        }
        let status = match reason {
            FailReason::PeerUnreachable => ReturnStatus::Unreachable,
            FailReason::Refused => ReturnStatus::Congestion,
            FailReason::TooLong => ReturnStatus::BadLength,
        };
        r.state.status = status as i32;
        r.state.abandon = given_up(r.state.ack, r.may_have_run);
        self.txn.ended(now);
        true
    }

    /// Abandons what the handler-time bound or a restarted peer ended;
    /// probes the targets of transactions that waited `PROBE_EVERY` (so a
    /// target that died or restarted while nothing else was in flight is
    /// noticed: the probe fails after the peer timeout, or the restarted
    /// target answers it). Runs from the poll path when `due` (a request
    /// waiting for a credit a transaction holds, a poll loop), and from
    /// the calls that read states.
    pub(in crate::am) fn txn_refresh(&mut self, now: Instant) {
        let bound = self.txn.handler_timeout;
        let mut ended = Vec::new();
        let mut probes = Vec::new();
        let mut due: Option<Instant> = None;
        for (&id, r) in self.txn.records.iter_mut() {
            if r.state.is_final() {
                continue;
            }
            if now.since(r.probed_at) >= PROBE_EVERY {
                r.probed_at = now;
                probes.push((id, r.addr));
            }
            let mut next = r.probed_at.plus(PROBE_EVERY);
            if let (Some(b), Progress::Processing) = (bound, r.state.progress) {
                if now.since(r.acked_at) > b {
                    r.state.abandon = Abandon::HandlerTimeout;
                    r.state.status = ReturnStatus::Unreachable as i32;
                    ended.push(id);
                    continue;
                }
                next = next.min(r.acked_at.plus(b + 1));
            }
            due = Some(due.map_or(next, |d| d.min(next)));
            let cur = self.proto.association(&r.addr);
            match (r.assoc, cur) {
                (None, Some(c)) => r.assoc = Some(c),
                (Some(a), Some(c)) if a != c => {
                    // the peer restarted: ask the new one (from its log it
                    // knows; else it answers "unknown")
                    r.assoc = Some(c);
                    if r.probed_at != now {
                        r.probed_at = now;
                        probes.push((id, r.addr));
                    }
                }
                _ => {}
            }
        }
        for id in ended {
            // its credit is free again; a late answer is dropped
            self.complete(id, Category::Short, now);
        }
        for (id, addr) in probes {
            self.send_probe(id, addr, now);
        }
        if self.txn.log.is_some() {
            self.log_states();
            if !self.txn.to_resume.is_empty() && self.depth.is_some() {
                self.txn_resume(now);
            }
        }
        self.txn.due = due;
        if !self.txn.to_resume.is_empty() {
            // (their targets not mapped yet)
            self.txn.wake(now.plus(PROBE_EVERY));
        }
    }

    /// Asks `addr` how far kept transaction `txn` got.
    fn send_probe(&mut self, txn: u32, addr: SocketAddr, now: Instant) {
        let inc = self.txn.incarnation;
        let args = [(inc >> 32) as u32, inc as u32];
        let meta = MsgMeta {
            txn,
            ..MsgMeta::new(MsgKind::TxnProbe, Category::Short, 0, &args)
        };
        self.send_message(now, addr, CHANNEL_REQUEST, meta, Vec::new());
    }

    /// The request of kept transaction `id64`, as the log or its record
    /// keeps it.
    pub(in crate::am) fn txn_request(&self, id64: u64) -> Option<LoggedMsg> {
        match &self.txn.log {
            Some(log) => log.state().issued.get(&id64).map(|i| i.msg.clone()),
            None => self
                .txn
                .records
                .get(&(id64 as u32))
                .and_then(|r| r.request.clone()),
        }
    }

    /// Sends kept transaction `id64` to `addr` again, as a resumed one:
    /// false when it cannot (its request is not kept, `addr` is no longer
    /// mapped).
    fn txn_send_again(&mut self, id64: u64, addr: SocketAddr, now: Instant) -> bool {
        let (Some(m), Some(index)) = (self.txn_request(id64), self.table.index_of(&addr)) else {
            return false;
        };
        self.txn_send_logged(id64, index, addr, &m, now)
    }
}
