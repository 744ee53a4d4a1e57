//! An endpoint's remote memory (`rma/`): its regions, the operations it
//! started and their chunks waiting, direct copies and shared mappings.

use std::net::SocketAddr;
use std::sync::Arc;

use super::region::Regions;
use crate::am::handler::args::SegmentMemory;
use crate::error::{Error, Result, ReturnStatus};
use crate::fxhash::FxHashMap;
use crate::sys::{OwnedRegion, PeerRegion};
use crate::time::Instant;

/// Operations one endpoint may have unfinished or unreported at once.
pub const MAX_OPS: usize = 1 << 20;

/// The remote memory state of an endpoint (in its `EpState`).
#[derive(Default)]
pub(crate) struct RmaState {
    pub(in crate::am) regions: Regions,
    pub(in crate::am) ops: FxHashMap<u32, Op>,
    /// The last handle handed out (its low 32 bits are the id on the wire).
    pub(in crate::am) last_handle: u64,
    /// An operation without a handle failed since the last fence.
    pub(in crate::am) fence_failed: bool,
    /// Direct copies (`rma_direct.rs`): operations of ours done directly,
    /// fallen back to chunks, and copies we performed as a target.
    pub(in crate::am) direct_counts: [u64; 3],
    /// Direct Xfers' copies split (`xfer_split.rs`): tails we wrote as the
    /// sender, tails the kernel refused us, tails senders wrote into ours.
    pub(in crate::am) split_counts: [u64; 3],
    /// Peers into which the kernel refused our writes (no split offered).
    pub(in crate::am) split_refused: Vec<SocketAddr>,
    /// Direct gets that failed, held until a late copy cannot come.
    pub(in crate::am) held: usize,
    /// Peers' regions mapped (`rma_shared.rs`).
    pub(in crate::am) shared: SharedCache,
    /// Our segment when ramp allocated it (`xfer_shared.rs`).
    pub(in crate::am) own_segment: OwnSegment,
    /// Staging areas of long requests (`xfer_staged.rs`).
    pub(in crate::am) staged: Staging,
    /// Direct Xfers whose call returned at the target's commit
    /// (`xfer_direct.rs`): (peer, id) of each whose answer is still to
    /// come, taken when it does; the oldest forgotten past `EARLY_MAX`.
    pub(in crate::am) early: std::collections::VecDeque<(SocketAddr, u32)>,
}

impl RmaState {
    /// A fresh state, staging areas on or off (`RAMP_XFER_STAGING`).
    pub(crate) fn staging(on: bool) -> RmaState {
        let mut s = RmaState::default();
        s.staged.off = !on;
        s
    }
}

/// How many answers of direct Xfers done at the commit are waited for (a
/// call waits for its Xfer: one at a time per thread; a peer that died
/// after its commit never answers).
pub(in crate::am) const EARLY_MAX: usize = 64;

pub(in crate::am) struct Op {
    pub(in crate::am) handle: u64,
    pub(in crate::am) peer: SocketAddr,
    /// Chunks not answered yet, as a bitmap.
    pub(in crate::am) waiting: Vec<u64>,
    pub(in crate::am) remaining: u64,
    pub(in crate::am) total: u64,
    pub(in crate::am) status: Option<ReturnStatus>,
    /// A caller holds the handle (else the op is forgotten when done).
    pub(in crate::am) kept: bool,
    /// A fence has reported its failure already.
    pub(in crate::am) fenced: bool,
    /// A get's destination.
    pub(in crate::am) dst: Option<Arc<dyn SegmentMemory>>,
    /// A direct copy's state (`rma_direct.rs`).
    pub(in crate::am) direct: Direct,
    /// A direct get's: what its chunks need if it falls back.
    pub(in crate::am) redo: Option<Redo>,
}

/// What a direct get keeps to fall back to chunks (`rma_direct.rs`).
pub(in crate::am) struct Redo {
    pub(in crate::am) region: u32,
    pub(in crate::am) offset: u64,
    pub(in crate::am) tag: u64,
    /// CLOCK_MONOTONIC ns after which no late copy can come.
    pub(in crate::am) hold_until: u64,
}

impl Op {
    /// A bitmap of `n` chunks waiting.
    pub(in crate::am) fn all_waiting(n: u64) -> Vec<u64> {
        let words = (n as usize).div_ceil(64);
        let mut waiting = vec![u64::MAX; words];
        if !n.is_multiple_of(64) {
            waiting[words - 1] = (1u64 << (n % 64)) - 1;
        }
        waiting
    }

    /// Marks chunk `index` answered; false when it was not waiting.
    pub(in crate::am) fn answer(&mut self, index: u32) -> bool {
        let (w, b) = (index as usize / 64, index % 64);
        match self.waiting.get_mut(w) {
            Some(word) if *word & (1 << b) != 0 => {
                *word &= !(1 << b);
                self.remaining -= 1;
                true
            }
            _ => false,
        }
    }
}

impl RmaState {
    /// A fresh (wire id, handle) pair: the id is not in use.
    pub(in crate::am) fn next_id(&mut self) -> (u32, u64) {
        loop {
            self.last_handle += 1;
            let id = self.last_handle as u32;
            if id != 0 && !self.ops.contains_key(&id) {
                return (id, self.last_handle);
            }
        }
    }

    /// Whether `op` (a handle) has completed, still unreported.
    pub(in crate::am) fn is_done(&self, op: u64) -> bool {
        self.ops
            .get(&(op as u32))
            .is_some_and(|o| o.handle == op && o.remaining == 0)
    }

    /// Some(status) and the handle released when `op` is done.
    pub(in crate::am) fn take_done(&mut self, op: u64) -> Result<Option<u8>> {
        match self.ops.get(&(op as u32)) {
            Some(o) if o.handle == op && o.kept => {
                if o.remaining > 0 {
                    return Ok(None);
                }
                let s = o.status.map_or(0, |s| s as u8);
                self.ops.remove(&(op as u32));
                Ok(Some(s))
            }
            _ => Err(Error::BadArg("not a handle of an unreported operation")),
        }
    }
}
/// Where a direct operation stands at the initiator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::am) enum Direct {
    /// A chunked operation.
    No,
    Waiting,
    /// The target answered with a final status.
    Answered,
    /// The target did not copy: send the chunks.
    FallBack,
    /// The descriptor could not be delivered.
    Failed,
}
/// What an initiator knows of one peer's region.
pub(in crate::am) enum Cached {
    Mapped(Arc<PeerRegion>),
    /// Asked, or refused: the usual way until then.
    Not(Instant),
}

/// The initiator's mappings of peers' regions (in `RmaState`).
#[derive(Default)]
pub(crate) struct SharedCache {
    pub(in crate::am) map: FxHashMap<(SocketAddr, u32), Cached>,
    /// [operations done through a mapping, mappings made, files handed out]
    pub(in crate::am) counts: [u64; 3],
    /// When mappings of peers gone or regions revoked are dropped next.
    pub(in crate::am) next_sweep: Instant,
}
/// The endpoint's segment when ramp allocated it (in `RmaState`).
#[derive(Default)]
pub(crate) struct OwnSegment {
    pub(in crate::am) mem: Option<Arc<OwnedRegion>>,
    /// The highest generation any of our segments had (a new one's is
    /// above it: no state word of an earlier segment, reshared or not,
    /// ever names a later one).
    pub(in crate::am) last: u64,
    /// Peers our threads are copying an Xfer into right now (as sender):
    /// another waits as for an unanswered request (AM_PAR).
    pub(in crate::am) copying: Vec<std::net::SocketAddr>,
}

/// Staging areas of long requests between same-host peers
/// (`xfer_staged.rs`, in `RmaState`).
#[derive(Default)]
pub(crate) struct Staging {
    /// As the target: the area we allocated for each peer that asked, and
    /// the pid and secret of its ring it asked from.
    pub(in crate::am) from: FxHashMap<SocketAddr, (Arc<OwnedRegion>, u32, u64)>,
    /// The last generation an area of ours had (each a new one: a request
    /// naming one is never taken for another's).
    pub(in crate::am) last_gen: u64,
    /// As the sender: where we are in each peer's area we mapped.
    pub(in crate::am) to: FxHashMap<SocketAddr, StagedTo>,
    /// [requests we sent staged, staged requests we copied as a target,
    /// sends that waited for room]
    pub(in crate::am) counts: [u64; 3],
    /// `RAMP_XFER_STAGING=0`: none staged, none kept for peers.
    pub(in crate::am) off: bool,
}

/// The sender's place in a peer's staging area.
pub(crate) struct StagedTo {
    /// The mapping this place is in (a new one starts at the target's
    /// `CONSUMED`).
    pub(in crate::am) area: Arc<PeerRegion>,
    /// Bytes staged so far (the next one's position; its offset in the
    /// area is this modulo the area's ring length).
    pub(in crate::am) head: u64,
    /// A thread of ours is copying into it now: another waits.
    pub(in crate::am) copying: bool,
}
