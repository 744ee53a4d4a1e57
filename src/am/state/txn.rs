//! An endpoint's kept transactions (`txn/`): each one's state tuple as
//! the initiator sees it, the log when open, what it keeps as a target;
//! the trailer a kept request carries and the incarnation it names.

use std::net::SocketAddr;

use crate::fxhash::FxHashMap;
use crate::time::Instant;

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

impl TxnRecord {
    /// A transaction in `state` to `addr`: not yet in an association,
    /// never acked, probed or logged.
    pub(in crate::am) fn new(state: TxnState, addr: SocketAddr, id64: u64) -> TxnRecord {
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
        }
    }
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
                logged: s,
                ..TxnRecord::new(s, addr, id64)
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
