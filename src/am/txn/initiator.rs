//! Transactions at the initiator (issue 10): the state tuple of every
//! request issued with `request_txn` (`ramp_RequestTxn`), kept until
//! released; its three steps on the wire (the request, the target's
//! `TxnAck` when the handler starts, the reply when it is done); where it
//! was abandoned; waiting and listing.
//!
//! A kept request is marked by `TXN_FLAG` in its header's status byte (0 in
//! every other request) and carries a trailer after its payload: the
//! initiator's incarnation and its floor for that target (every kept
//! transaction to it below the floor has its answer here), which lets the
//! target free the replies it keeps (`txn_target.rs`). Plain AM-2 requests
//! carry neither and cost what they did.
//!
//! Ids are 64 bits (`next_txn`); the header carries the low half (the wire
//! id, by which acks, replies and probes are matched, skipped at its wrap
//! while in use) and the trailer the high half, so the target compares
//! ids and floors in 64 bits: an initiator that sent nothing to a target
//! for 2^31 or 2^32 ids is not taken for an old one.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::am::endpoint::core::{Endpoint, EpState};
use crate::am::state::outstanding::Outstanding;
use crate::am::state::txn::Abandon;
use crate::am::state::txn::Ack;
use crate::am::state::txn::Progress;
use crate::am::state::txn::TxnRecord;
use crate::am::state::txn::TxnState;
use crate::am::state::txn::MAX_FLOOR_LAG;
use crate::am::state::txn::MAX_KEPT_TXNS;
use crate::am::state::txn::PROBE_EVERY;
use crate::am::state::txn::TRAILER_LEN;
use crate::error::{Error, Result, ReturnStatus};
use crate::time::{Instant, MICROS};
use crate::wire::{Category, MsgMeta};

impl EpState {
    /// The floor for `addr` (64 bits): the oldest kept transaction to it
    /// still waiting for its answer, else the next id; never more than
    /// `MAX_FLOOR_LAG` ids behind the next one (the trailer carries the
    /// floor's low half, placed by the target below the id within that
    /// lag; an older one still waiting loses only its kept reply there, a
    /// copy of it below the floor is dropped, never run again). With a
    /// log, an answer counts once the log has it: a restarted initiator
    /// resumes what its log has unfinished, and the target must still
    /// know it (so it never sees an id below a floor it was sent).
    pub(in crate::am) fn txn_floor(&self, addr: SocketAddr) -> u64 {
        let next = self.next_txn;
        let logging = self.txn.log.is_some();
        let oldest = self
            .txn
            .records
            .values()
            .filter(|r| r.addr == addr)
            .filter(|r| !(if logging { r.logged } else { r.state }).is_final())
            .map(|r| r.id64)
            .min()
            .unwrap_or(next)
            .min(next);
        oldest.max(next.saturating_sub(u64::from(MAX_FLOOR_LAG)))
    }

    /// Starts the record of kept transaction `id64` (the wire id its low
    /// half), sent to `addr`; `request`: the request when no log keeps it.
    pub(in crate::am) fn txn_sent(
        &mut self,
        id64: u64,
        addr: SocketAddr,
        now: Instant,
        request: Option<crate::txlog::record::LoggedMsg>,
    ) {
        let txn = id64 as u32;
        let assoc = self.proto.association(&addr);
        self.txn.wake(now.plus(PROBE_EVERY));
        self.txn.records.insert(
            txn,
            TxnRecord {
                state: TxnState {
                    progress: Progress::RequestSent,
                    ..Default::default()
                },
                addr,
                assoc,
                acked_at: now,
                probed_at: now,
                probe_failures: 0,
                sent_in: assoc,
                may_have_run: None,
                request,
                again: false,
                logged: TxnState::default(),
                id64,
            },
        );
    }

    /// Kept transaction `txn` to translation index `index` (at `addr`) is
    /// sent again (resumed): it waits for its answer anew, holding a credit.
    pub(in crate::am) fn txn_resumed(
        &mut self,
        id64: u64,
        index: u32,
        addr: SocketAddr,
        meta: MsgMeta,
        now: Instant,
    ) {
        let txn = id64 as u32;
        if self
            .outstanding
            .insert(txn, Outstanding::new(index, addr, now, meta))
            .is_none()
        {
            if let Some(e) = self.table.get_mut(index) {
                e.outstanding += 1;
            }
        }
        let request = self
            .txn
            .log
            .is_none()
            .then(|| self.txn_request(id64))
            .flatten();
        self.txn_sent(id64, addr, now, request);
        if let Some(r) = self.txn.records.get_mut(&txn) {
            r.again = true;
        }
    }

    /// A loopback transaction: its handler ran (or was refused) already.
    pub(in crate::am) fn txn_loopback(&mut self, id64: u64, addr: SocketAddr, ran: Result<()>) {
        let txn = id64 as u32;
        let state = match ran {
            Ok(()) => TxnState {
                ack: Ack::Acked,
                progress: Progress::Processed,
                ..Default::default()
            },
            Err(_) => TxnState {
                ack: Ack::Nacked,
                progress: Progress::RequestSent,
                abandon: Abandon::Refused,
                status: ReturnStatus::BadArgs as i32,
            },
        };
        self.txn
            .records
            .insert(txn, TxnRecord::new(state, addr, id64));
    }

    pub(in crate::am) fn live_record(
        &mut self,
        txn: u32,
        from: SocketAddr,
    ) -> Option<&mut TxnRecord> {
        self.txn
            .records
            .get_mut(&txn)
            .filter(|r| r.addr == from && !r.state.is_final())
    }

    /// The reply (or automatic reply) of `txn` arrived: true when it is a
    /// kept transaction.
    pub(in crate::am) fn txn_replied(&mut self, from: SocketAddr, txn: u32, now: Instant) -> bool {
        match self.live_record(txn, from) {
            Some(r) => {
                r.state.ack = Ack::Acked;
                r.state.progress = Progress::Processed;
                self.txn.ended(now);
                true
            }
            None => false,
        }
    }

    /// Kept transaction `txn` was returned by its target with `status`:
    /// true when it is one (then handler 0 is not called).
    pub(in crate::am) fn txn_refused(
        &mut self,
        from: SocketAddr,
        txn: u32,
        status: u8,
        now: Instant,
    ) -> bool {
        match self.live_record(txn, from) {
            Some(r) => {
                r.state.ack = Ack::Nacked;
                r.state.abandon = Abandon::Refused;
                r.state.status = status as i32;
                self.txn.ended(now);
                true
            }
            None => false,
        }
    }

    /// Whether `txn` is a kept transaction (its state says how it ended).
    pub(in crate::am) fn txn_is_kept(&self, txn: u32) -> bool {
        self.txn.records.contains_key(&txn)
    }

    pub(in crate::am) fn txn_is_final(&self, txn: u32) -> bool {
        self.txn
            .records
            .get(&txn)
            .is_some_and(|r| r.state.is_final())
    }

    fn txn_get(&self, txn: u64) -> Result<TxnState> {
        u32::try_from(txn)
            .ok()
            .and_then(|t| self.txn.records.get(&t))
            .map(|r| r.state)
            .ok_or(Error::BadArg(
                "not a kept transaction (ramp_RequestTxn's id, not yet released)",
            ))
    }
}

impl Endpoint {
    /// `request` that keeps the transaction's state: its id.
    pub fn request_txn(
        self: &Arc<Self>,
        dest: u32,
        msg: &crate::am::handler::message::Message<'_>,
    ) -> Result<u64> {
        if msg.category == Category::Long
            && msg.payload.len() + TRAILER_LEN > crate::am::handler::message::MAX_LONG
        {
            return Err(Error::BadArg(
                "a transaction's long payload is at most AM_MaxLong() - 16 bytes",
            ));
        }
        if self.with(|s| s.txn.records.len()) >= MAX_KEPT_TXNS {
            return Err(Error::Resource(
                "too many kept transactions: release finished ones with ramp_TxnRelease",
            ));
        }
        self.request_kept(dest, msg, false, true)
            .map(|t| t.unwrap_or(0) as u64)
    }

    /// The state of kept transaction `txn`.
    pub fn txn_state(self: &Arc<Self>, txn: u64) -> Result<TxnState> {
        self.with(|s| {
            s.txn_refresh(s.clock.now());
            s.txn_get(txn)
        })
    }

    /// Waits (polling) until `txn` is PROCESSED or abandoned, at most
    /// `timeout_ms` (negative: no limit). (done, state).
    pub fn txn_wait(self: &Arc<Self>, txn: u64, timeout_ms: i32) -> Result<(bool, TxnState)> {
        let t0 = self.clock.now();
        let limit = (timeout_ms >= 0).then(|| timeout_ms as u64 * 1000 * MICROS);
        loop {
            let st = self.txn_state(txn)?;
            if st.is_final() {
                return Ok((true, st));
            }
            if limit.is_some_and(|l| self.clock.now().since(t0) >= l) {
                return Ok((false, st));
            }
            self.poll_bundle()?;
            if let Some(b) = self.holder() {
                b.wait_for_activity(1);
            }
        }
    }

    /// Kept transactions whose progress is `progress`, oldest first.
    pub fn txn_list(self: &Arc<Self>, progress: Progress) -> Vec<u64> {
        self.with(|s| {
            s.txn_refresh(s.clock.now());
            let mut ids: Vec<(u64, u32)> = s
                .txn
                .records
                .iter()
                .filter(|(_, r)| r.state.progress == progress)
                .map(|(&id, r)| (r.id64, id))
                .collect();
            ids.sort_unstable();
            ids.into_iter().map(|(_, id)| u64::from(id)).collect()
        })
    }

    /// Forgets kept transaction `txn` (its answer, if any comes, is dropped).
    pub fn txn_release(self: &Arc<Self>, txn: u64) -> Result<()> {
        self.with(|s| {
            s.txn_get(txn)?;
            let id = txn as u32;
            let pending = s.txn.records.get(&id).is_some_and(|r| !r.state.is_final());
            if let Some(r) = s.txn.records.remove(&id) {
                s.log_released(r.id64);
            }
            if pending {
                s.complete(id, Category::Short, s.clock.now());
            }
            Ok(())
        })
    }

    /// The handler-time bound (0: none).
    pub fn set_handler_timeout(&self, usec: u64) {
        self.with(|s| {
            s.txn.handler_timeout = (usec > 0).then(|| usec.saturating_mul(MICROS));
            s.txn.wake(Instant::ZERO);
        })
    }
}
