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

use crate::am::endpoint::endpoint::{Endpoint, EpState};
use crate::am::messages::request::Outstanding;
use crate::error::{Error, Result, ReturnStatus};
use crate::fxhash::FxHashMap;
use crate::time::{Instant, MICROS};
use crate::wire::{Category, MsgMeta};

/// Status bit of a request's header: a kept transaction (trailer, ack).
pub(in crate::am) const TXN_FLAG: u8 = 1;
/// incarnation u64 | floor u32 | id's high half u32, big-endian, after the
/// payload.
pub(in crate::am) const TRAILER_LEN: usize = 16;
/// A transaction waiting this long is probed (then again as long).
pub(in crate::am) const PROBE_EVERY: u64 = 200 * crate::time::MILLIS;
/// Probes of one transaction given up before it is concluded.
pub(in crate::am) const MAX_PROBE_FAILURES: u8 = 3;
/// A `TxnAck`'s status when it answers a probe for a transaction the
/// target does not keep. Its one argument is `UNKNOWN_LOGGED` when the
/// target keeps a log (it logs a start before the handler runs, so it
/// never started that one, also before a restart), else 0.
pub(in crate::am) const PROBE_UNKNOWN: u8 = 1;
/// The argument of a `PROBE_UNKNOWN` answer from a target with a log.
pub(in crate::am) const UNKNOWN_LOGGED: u32 = 1;
/// A `TxnAck`'s status when the target restarted from its log while the
/// transaction's handler ran.
pub(in crate::am) const PROBE_CRASHED: u8 = 2;
/// How far behind the next id a floor may be (`txn_floor`).
pub(in crate::am) const MAX_FLOOR_LAG: u32 = 1 << 30;
/// How soon a transaction's end is logged (`txn_floor` waits for it).
const STATE_LAG: u64 = crate::time::MILLIS;
/// Kept transactions at once (until `ramp_TxnRelease`).
pub const MAX_KEPT_TXNS: usize = 1 << 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(C)]
pub enum Ack {
    #[default]
    None = 0,
    Acked = 1,
    Nacked = 2,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(C)]
pub enum Progress {
    #[default]
    NotSent = 0,
    RequestSent = 1,
    Processing = 2,
    Processed = 3,
}

impl Progress {
    pub fn from_i32(v: i32) -> Option<Progress> {
        Some(match v {
            0 => Progress::NotSent,
            1 => Progress::RequestSent,
            2 => Progress::Processing,
            3 => Progress::Processed,
            _ => return None,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(C)]
pub enum Abandon {
    #[default]
    None = 0,
    /// Given up before any ack where it cannot have started: the handler
    /// never ran (`given_up`).
    NotAcked = 1,
    /// Refused by the target (handler, tag, segment, length, full): never ran.
    Refused = 2,
    /// Started and not finished within the bound of `set_handler_timeout`.
    HandlerTimeout = 3,
    /// No reply (acked, or its ack may have been lost): the handler may
    /// have run.
    NoReply = 4,
    /// The target restarted from its log while the handler ran.
    TargetCrashed = 5,
}

/// The contract's `ramp_txn_state_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(C)]
pub struct TxnState {
    pub ack: Ack,
    pub progress: Progress,
    pub abandon: Abandon,
    /// The AM-2 status code when abandoned, else 0.
    pub status: i32,
}

impl TxnState {
    /// PROCESSED or abandoned: nothing more will happen to it.
    pub fn is_final(&self) -> bool {
        self.progress == Progress::Processed || self.abandon != Abandon::None
    }
}

pub(in crate::am) struct TxnRecord {
    pub(in crate::am) state: TxnState,
    pub(in crate::am) addr: SocketAddr,
    /// The association (tags) the transaction travels in, once known: a
    /// new one means the peer restarted and will not answer.
    pub(in crate::am) assoc: Option<(u64, u64)>,
    /// When the ack came (the handler-time bound counts from it).
    pub(in crate::am) acked_at: Instant,
    /// When it was sent or last probed (`TxnProbe`).
    pub(in crate::am) probed_at: Instant,
    /// Probes given up in a row (a restarted peer fails the first).
    pub(in crate::am) probe_failures: u8,
    /// The association the request went out in, when it had one then.
    pub(in crate::am) sent_in: Option<(u64, u64)>,
    /// Whether the request may have started at the target although no
    /// ack came (an ack can be lost): `Some(false)` only when it cannot
    /// have (given up before the target took it, or at a place of the
    /// start window no handler reaches, `started.rs`); None: not known,
    /// taken as "may have".
    pub(in crate::am) may_have_run: Option<bool>,
    /// The request, kept to be sent again while no ack came, when no log
    /// keeps it (`txn_send_again`).
    pub(in crate::am) request: Option<crate::txlog::record::LoggedMsg>,
    /// It was sent again (resumed): an "unknown" may answer a probe that
    /// went before it (`txn_acked`).
    pub(in crate::am) again: bool,
    /// The state the log has (`txn_log.rs`: written when it is next read).
    pub(in crate::am) logged: TxnState,
    /// The 64-bit id (its low half is the wire id, the record's key).
    pub(in crate::am) id64: u64,
}

/// The endpoint's transactions (in `EpState::txn`).
pub(crate) struct Txns {
    /// Names this process's run of the endpoint to targets.
    pub(in crate::am) incarnation: u64,
    /// The transaction log, when open (`txn_log.rs`).
    pub(in crate::am) log: Option<crate::txlog::TxLog>,
    /// Transactions the log had unfinished, to send again once their
    /// target is mapped: (id, target, message).
    pub(in crate::am) to_resume: Vec<(u64, SocketAddr, crate::txlog::record::LoggedMsg)>,
    pub(in crate::am) records: FxHashMap<u32, TxnRecord>,
    /// The handler-time bound, nanoseconds (None: no bound, as AM-2).
    pub(in crate::am) handler_timeout: Option<u64>,
    /// What this endpoint keeps as a target (`txn_target.rs`).
    pub(in crate::am) target: super::txn_target::TxnTarget,
    /// When the poll path next looks after the kept transactions (a
    /// probe due, the handler-time bound, a resume, `txn_refresh`): None
    /// while none waits for an answer.
    pub(in crate::am) due: Option<Instant>,
}

impl Txns {
    pub(in crate::am) fn new(incarnation: u64) -> Txns {
        Txns {
            incarnation,
            records: FxHashMap::default(),
            handler_timeout: None,
            target: Default::default(),
            log: None,
            to_resume: Vec::new(),
            due: None,
        }
    }

    /// The poll path looks after the kept transactions at `at` at the latest.
    pub(in crate::am) fn wake(&mut self, at: Instant) {
        self.due = Some(self.due.map_or(at, |d| d.min(at)));
    }

    /// A transaction ended: with a log, its end is logged soon (the floor
    /// passes it only then: `txn_floor`).
    pub(in crate::am) fn ended(&mut self, now: Instant) {
        if self.log.is_some() {
            self.wake(now.plus(STATE_LAG));
        }
    }

    /// Kept transactions whose state changed since the log had it.
    /// (wire id, 64-bit id, state).
    pub(in crate::am) fn changed_states(&self) -> impl Iterator<Item = (u32, u64, TxnState)> + '_ {
        self.records
            .iter()
            .filter(|(_, r)| r.state != r.logged)
            .map(|(&id, r)| (id, r.id64, r.state))
    }

    pub(in crate::am) fn set_logged(&mut self, txn: u32, s: TxnState) {
        if let Some(r) = self.records.get_mut(&txn) {
            r.logged = s;
        }
    }

    /// A transaction the log had (`txn_log.rs`), with its last logged state.
    pub(in crate::am) fn restore_record(&mut self, id64: u64, addr: SocketAddr, s: TxnState) {
        self.records.insert(
            id64 as u32,
            TxnRecord {
                state: s,
                addr,
                assoc: None,
                acked_at: Instant::ZERO,
                probed_at: Instant::ZERO,
                probe_failures: 0,
                sent_in: None,
                may_have_run: None,
                request: None,
                again: false,
                logged: s,
                id64,
            },
        );
    }

    /// Whether any transaction is kept (the plain path checks only this).
    #[inline]
    pub(in crate::am) fn any(&self) -> bool {
        !self.records.is_empty()
    }
}

/// The incarnation of an endpoint whose protocol secret is `secret` (the
/// same again when it comes back from its log).
pub(in crate::am) fn incarnation_of(secret: &[u8; 32]) -> u64 {
    let h = blake3::keyed_hash(secret, b"ramp transaction incarnation");
    let mut b = [0u8; 8];
    b.copy_from_slice(&h.as_bytes()[..8]);
    u64::from_le_bytes(b)
}

/// Appends the trailer of kept request `id` (64 bits: the header carries
/// its low half) to its payload: the incarnation, the floor's low half and
/// the id's high half. A floor above the id (a resumed old transaction
/// the floor passed) is sent as the id: a floor never moves back at the
/// target, and the id stays within `MAX_FLOOR_LAG` of it.
pub(in crate::am) fn put_trailer(payload: &mut Vec<u8>, incarnation: u64, id: u64, floor: u64) {
    let floor = floor.min(id);
    payload.extend_from_slice(&incarnation.to_be_bytes());
    payload.extend_from_slice(&(floor as u32).to_be_bytes());
    payload.extend_from_slice(&((id >> 32) as u32).to_be_bytes());
}

/// A kept request's trailer as it came: the ids still in halves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::am) struct Trailer {
    pub(in crate::am) incarnation: u64,
    pub(in crate::am) floor_low: u32,
    pub(in crate::am) id_high: u32,
}

impl Trailer {
    /// The 64-bit id and floor of request `txn` (the header's id): the
    /// floor is at most `MAX_FLOOR_LAG` ids below the id. None when the
    /// trailer says otherwise (a broken or hostile peer: refused).
    pub(in crate::am) fn ids(&self, txn: u32) -> Option<(u64, u64)> {
        let id = u64::from(self.id_high) << 32 | u64::from(txn);
        let lag = txn.wrapping_sub(self.floor_low);
        if lag > MAX_FLOOR_LAG {
            return None;
        }
        Some((id, id.checked_sub(u64::from(lag))?))
    }
}

/// Takes the trailer off a kept request's payload; None when the payload
/// is too short to hold one.
pub(in crate::am) fn take_trailer(payload: &mut Vec<u8>) -> Option<Trailer> {
    let at = payload.len().checked_sub(TRAILER_LEN)?;
    let t = &payload[at..];
    let incarnation = u64::from_be_bytes(t[..8].try_into().ok()?);
    let floor_low = u32::from_be_bytes(t[8..12].try_into().ok()?);
    let id_high = u32::from_be_bytes(t[12..16].try_into().ok()?);
    payload.truncate(at);
    Some(Trailer {
        incarnation,
        floor_low,
        id_high,
    })
}

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
        self.txn.records.insert(
            txn,
            TxnRecord {
                state,
                addr,
                assoc: None,
                acked_at: Instant::ZERO,
                probed_at: Instant::ZERO,
                probe_failures: 0,
                sent_in: None,
                may_have_run: None,
                request: None,
                again: false,
                logged: TxnState::default(),
                id64,
            },
        );
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
    pub fn request_txn(self: &Arc<Self>, dest: u32, msg: &crate::am::Message<'_>) -> Result<u64> {
        if msg.category == Category::Long && msg.payload.len() + TRAILER_LEN > crate::am::MAX_LONG {
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
            if let Some(b) = self.owning_bundle() {
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
