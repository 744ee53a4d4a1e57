//! One-sided remote memory at the initiator: regions' registration, put
//! (with an optional notification word), get, and their completion: test,
//! wait, fence. The wire and the target's side are in `rma_target.rs`, the
//! registry of regions in `region.rs`.
//!
//! An operation is cut into chunks (`rma_target::CHUNK`) sent at once on
//! the request channel (the protocol's window keeps them in flight, so a
//! large put is pipelined); it completes when the target has answered every
//! chunk (remote completion: the bytes are in its memory, or a get's bytes
//! are in `dst`). Its status is that of its first refused chunk, else 0.
//! A handle is released by the call that reports the completion; an
//! operation without a handle is forgotten when it completes (a failure is
//! remembered for `fence`).

use std::net::SocketAddr;
use std::sync::Arc;

use super::rma_direct::DirectIssue;
use super::rma_target::{Chunk, CHUNK};
use crate::am::endpoint::core::{Endpoint, EpState};
use crate::am::handler::args::SegmentMemory;
use crate::am::messages::request::COPY_BACKLOG;
use crate::am::messages::token;
use crate::am::state::rma::Direct;
use crate::am::state::rma::Op;
use crate::am::state::rma::MAX_OPS;
use crate::error::{Error, Result, ReturnStatus};
use crate::wire::{MsgKind, CHANNEL_REQUEST};

/// Polls of a waiting call before it sleeps in the kernel between them.
const SPIN_ROUNDS: u32 = 1000;

/// What a put or get asks for.
struct Issue<'a> {
    dest: u32,
    region: u32,
    offset: u64,
    kind: MsgKind,
    src: &'a [u8],
    dst: Option<Arc<dyn SegmentMemory>>,
    total: u64,
    notify: Option<(u64, u32)>,
    keep: bool,
}

impl Endpoint {
    /// Registers `mem` as a region with `access` (`REGION_READ`,
    /// `REGION_WRITE`, or both); returns its id (never 0, never reused).
    pub fn register_region(&self, mem: Arc<dyn SegmentMemory>, access: u32) -> Result<u32> {
        self.with(|s| s.rma.regions.register(mem, access))
    }

    /// Deregisters a region: once this returns, no put or get touches its
    /// memory again (they are refused with EBADSEGOFF).
    pub fn deregister_region(&self, region: u32) -> Result<()> {
        self.deregister_any(region)
    }

    /// Puts `src` at `offset` of region `region` of translation index
    /// `dest`; with `notify = Some((flag_offset, value))` the 32-bit word at
    /// `flag_offset` of the region becomes `value` after every byte is
    /// there. Returns once `src` may be reused: the handle (`keep`), else 0.
    pub fn put(
        self: &Arc<Self>,
        dest: u32,
        region: u32,
        offset: u64,
        src: &[u8],
        notify: Option<(u64, u32)>,
        keep: bool,
    ) -> Result<u64> {
        self.issue(Issue {
            dest,
            region,
            offset,
            kind: MsgKind::Put,
            src,
            dst: None,
            total: src.len() as u64,
            notify,
            keep,
        })
    }

    /// Gets `dst.len()` bytes from `offset` of region `region` of `dest`
    /// into `dst` (which stays valid until the operation completes).
    pub fn get(
        self: &Arc<Self>,
        dest: u32,
        region: u32,
        offset: u64,
        dst: Arc<dyn SegmentMemory>,
        keep: bool,
    ) -> Result<u64> {
        let total = dst.len() as u64;
        self.issue(Issue {
            dest,
            region,
            offset,
            kind: MsgKind::Get,
            src: &[],
            dst: Some(dst),
            total,
            notify: None,
            keep,
        })
    }

    fn issue(self: &Arc<Self>, o: Issue<'_>) -> Result<u64> {
        if o.offset.checked_add(o.total).is_none() {
            return Err(Error::BadArg("offset + length overflows"));
        }
        if let Some((f, _)) = o.notify {
            if f.checked_add(4).is_none() {
                return Err(Error::BadArg("flag offset + 4 overflows"));
            }
        }
        let nchunks = Chunk::count(o.total);
        if nchunks > u32::MAX as u64 {
            return Err(Error::BadArg("length too large"));
        }
        let direct = DirectIssue {
            dest: o.dest,
            region: o.region,
            offset: o.offset,
            kind: o.kind,
            src: o.src,
            dst: o.dst.clone(),
            notify: o.notify,
            keep: o.keep,
        };
        if let Some(done) = self.try_shared(&direct) {
            return done;
        }
        if let Some(h) = self.try_direct(&direct)? {
            return Ok(h);
        }
        let g = self.state.lock();
        let mut st = g.borrow_mut();
        if st.depth.is_none() {
            return Err(Error::Resource(
                "AM_SetExpectedResources has not been called",
            ));
        }
        let entry = st
            .table
            .mapped_entry(o.dest)
            .ok_or(Error::BadArg("destination index is not mapped"))?;
        let (addr, tag) = (entry.addr, entry.tag);
        if st.rma.ops.len() >= MAX_OPS {
            return Err(Error::Resource(
                "too many remote memory operations unfinished",
            ));
        }
        let (id, handle) = st.rma.next_id();
        let waiting = Op::all_waiting(nchunks);
        st.rma.ops.insert(
            id,
            Op {
                handle,
                peer: addr,
                waiting,
                remaining: nchunks,
                total: o.total,
                status: None,
                kept: o.keep,
                fenced: false,
                dst: o.dst,
                direct: Direct::No,
                redo: None,
            },
        );
        drop(st);
        drop(g);
        // A put waits (polling) while the window to its peer has a backlog
        // of `COPY_BACKLOG` fragments or more, so that each chunk is copied
        // just before it goes: the copy, the CRC and the kernel's copy then
        // find the bytes in the cache, and the buffers in flight stay
        // within the protocol's pool (no fresh pages). Never inside a
        // handler; a failed poll stops the waiting (the rest is queued).
        let mut may_wait = o.kind == MsgKind::Put && addr != self.addr() && !token::in_handler();
        for i in 0..nchunks as u32 {
            // polls for this chunk only (a long put waits often, each time
            // briefly: it spins before sleeping every time)
            let mut rounds = 0;
            let drained =
                || self.with(|s| s.proto.queued_fragments(&addr, CHANNEL_REQUEST)) < COPY_BACKLOG;
            while may_wait && !drained() {
                may_wait = self.wait_round(&mut rounds, drained).is_ok();
            }
            let g = self.state.lock();
            let mut st = g.borrow_mut();
            let now = st.clock.now().max(st.last_pump);
            let rel = i as usize * CHUNK;
            let len = (o.total as usize - rel).min(CHUNK);
            let c = Chunk {
                region: o.region,
                notify: o.notify,
                start: o.offset,
                total: o.total,
                index: i,
                len: len as u32,
            };
            let meta = c.meta(o.kind, id, tag);
            let payload = if o.kind == MsgKind::Put {
                &o.src[rel..rel + len]
            } else {
                &[][..]
            };
            if addr == self.addr() {
                // To itself: performed at once, under the same lock.
                let (status, index, data) = st.perform(addr, &meta, payload);
                let data = (o.kind == MsgKind::Get).then_some(data);
                if let Some(spent) = st.chunk_answered(addr, id, index, status, data) {
                    st.proto.recycle(spent);
                }
            } else {
                let c = meta.category.index();
                st.stats.requests_sent[c] += 1;
                st.stats.request_data_bytes_sent[c] += payload.len() as u64;
                let payload = st.proto.payload_summed(payload, 0);
                st.send_message(now, addr, CHANNEL_REQUEST, meta, payload);
            }
        }
        Ok(if o.keep { handle } else { 0 })
    }

    /// Whether operation `op` has completed: Some(status) (0 or an AM-2
    /// status code), releasing the handle; None while it runs. Makes
    /// progress first (handlers may run, as in AM_Poll).
    pub fn test_op(self: &Arc<Self>, op: u64) -> Result<Option<u8>> {
        self.check_op(op)?;
        self.poll_bundle()?;
        self.with(|s| s.rma.take_done(op))
    }

    /// Waits (polling) until operation `op` completes; its status.
    pub fn wait_op(self: &Arc<Self>, op: u64) -> Result<u8> {
        self.check_op(op)?;
        let mut rounds = 0;
        loop {
            if let Some(s) = self.with(|s| s.rma.take_done(op))? {
                return Ok(s);
            }
            self.wait_round(&mut rounds, || self.with(|s| s.rma.is_done(op)))?;
        }
    }

    /// Waits until every put and get issued so far has completed. Err
    /// (`Resource`) when one failed whose failure was not reported yet (by
    /// an earlier fence, or by `test_op` / `wait_op`, which still report a
    /// failed operation with a handle).
    pub fn fence(self: &Arc<Self>) -> Result<()> {
        let mut rounds = 0;
        // issued so far: not those other threads issue meanwhile
        let upto = self.with(|s| s.rma.last_handle);
        let done = || {
            self.with(|s| {
                !s.rma
                    .ops
                    .values()
                    .any(|o| o.remaining > 0 && o.handle <= upto)
            })
        };
        while !done() && !self.wait_round(&mut rounds, done)? {}
        let failed = self.with(|s| {
            let mut failed = std::mem::take(&mut s.rma.fence_failed);
            for o in s.rma.ops.values_mut() {
                if o.status.is_some() && !o.fenced {
                    o.fenced = true;
                    failed = true;
                }
            }
            failed
        });
        if failed {
            Err(Error::Resource("a put or get failed"))
        } else {
            Ok(())
        }
    }

    /// One round of a waiting call: polls the bundle (handlers may run);
    /// true when `done` holds after it. Otherwise, after many rounds, also
    /// sleeps until a datagram or a timer is due (a short while at most:
    /// another thread may make the progress awaited). `done` is asked
    /// between the poll and the sleep: an answer the poll took in wakes
    /// nobody, so sleeping after it would wait for the next timer for
    /// nothing (a millisecond per operation, measured on a 1 MiB get).
    pub fn wait_round(
        self: &Arc<Self>,
        rounds: &mut u32,
        done: impl FnOnce() -> bool,
    ) -> Result<bool> {
        self.poll_bundle()?;
        if done() {
            return Ok(true);
        }
        *rounds += 1;
        if *rounds > SPIN_ROUNDS {
            match self.holder() {
                Some(b) => b.wait_for_activity(2),
                None => std::thread::yield_now(),
            }
        }
        Ok(false)
    }

    fn check_op(&self, op: u64) -> Result<()> {
        self.with(|s| match s.rma.ops.get(&(op as u32)) {
            Some(o) if o.handle == op && o.kept && op != 0 => Ok(()),
            _ => Err(Error::BadArg("not a handle of an unreported operation")),
        })
    }

    /// Direct copies (`rma_direct.rs`): [our operations done directly,
    /// ours fallen back to chunks, copies performed for peers] (tests,
    /// diagnostics).
    pub fn rma_direct_counts(&self) -> [u64; 3] {
        self.with(|s| s.rma.direct_counts)
    }

    /// Direct Xfers whose copy was split (`xfer_split.rs`): [tails we
    /// wrote into a target's segment, tails the kernel refused us to write
    /// (after which that target is offered no split), tails senders wrote
    /// into ours] (tests, diagnostics).
    pub fn xfer_split_counts(&self) -> [u64; 3] {
        self.with(|s| s.rma.split_counts)
    }

    /// Whether the peer at translation index `dest` is reached through a
    /// shared-memory ring now, so that a large put or get can go direct
    /// (tests, diagnostics). The ring is asked for when the endpoint's
    /// resources are set (`set_expected_resources`: the peers of a table
    /// of at most 32) or else at the first message to the peer (which
    /// goes by UDP meanwhile), and set up once the peer has polled.
    pub fn ring_ready(&self, dest: u32) -> bool {
        self.with(|s| {
            s.table
                .mapped_entry(dest)
                .and_then(|p| s.transports.ring_to(p.addr))
                .is_some()
        })
    }

    /// Regions registered (besides the segment) and operations not yet
    /// reported (tests, diagnostics).
    pub fn rma_counts(&self) -> (usize, usize) {
        self.with(|s| (s.rma.regions.len(), s.rma.ops.len()))
    }
}

impl EpState {
    /// A chunk of operation `id` was answered by `from` (a get's bytes in
    /// `data`). Anything that does not answer a waiting chunk of ours to
    /// that peer is dropped and counted. Gives `data` back, for reuse.
    pub(in crate::am) fn chunk_answered(
        &mut self,
        from: SocketAddr,
        id: u32,
        index: u32,
        status: Option<ReturnStatus>,
        data: Option<Vec<u8>>,
    ) -> Option<Vec<u8>> {
        let Some(op) = self.rma.ops.get_mut(&id) else {
            self.stats.stale_dropped += 1;
            return data;
        };
        if op.peer != from || op.dst.is_some() != data.is_some() || !op.answer(index) {
            self.stats.stale_dropped += 1;
            return data;
        }
        let mut status = status;
        if let (None, Some(bytes), Some(dst)) = (status, data.as_ref(), op.dst.as_ref()) {
            let rel = index as u64 * CHUNK as u64;
            let len = (op.total - rel).min(CHUNK as u64);
            if bytes.len() as u64 == len {
                dst.write(rel as usize, bytes);
            } else {
                status = Some(ReturnStatus::BadLength);
            }
        }
        self.stats.replies_received[0] += 1;
        self.finish_chunk(id, status);
        data
    }

    /// A chunk (or the descriptor) of operation `id` could not be delivered.
    pub(in crate::am) fn chunk_failed(&mut self, id: u32, index: u32, status: ReturnStatus) {
        if let Some(op) = self.rma.ops.get_mut(&id) {
            if op.direct == Direct::Waiting {
                self.direct_failed(id, status);
                return;
            }
            if op.answer(index) {
                self.finish_chunk(id, Some(status));
            }
        }
    }

    pub(in crate::am) fn finish_chunk(&mut self, id: u32, status: Option<ReturnStatus>) {
        let Some(op) = self.rma.ops.get_mut(&id) else {
            return;
        };
        if op.status.is_none() {
            op.status = status;
        }
        if op.remaining > 0 {
            return;
        }
        op.dst = None; // the destination is not touched again
        if !op.kept {
            self.rma.fence_failed |= op.status.is_some();
            self.rma.ops.remove(&id);
        }
    }
}
