//! Direct copies of large puts and gets to a peer on this host: instead of
//! its chunks (`rma_target.rs`), the initiator sends one descriptor (where
//! its bytes are, in its own memory) on the request channel, and the
//! target, after the same checks as for a chunk and under the same lock,
//! copies them itself with Cross Memory Attach (`process_vm_readv` into the
//! region for a put, `process_vm_writev` out of it for a get;
//! `sys/cma.rs`), then answers once as a chunk answer does.
//!
//! Trust: the target honours a descriptor only when a shared-memory ring of
//! its own receives from the sender's address, written by the pid the
//! descriptor names, whose slot holds the 64-bit secret the descriptor
//! carries (random, written by the sender into the receiver's 0600 file in
//! /dev/shm: `net/shm.rs`). A datagram from the network cannot know it, so it
//! can never make the target read or write another process's memory; the
//! kernel checks besides that the target may ptrace the sender.
//!
//! Any failure (the sender unknown or not dumpable, EPERM, EFAULT, a short
//! copy, the descriptor too old) answers "fall back": the initiator then
//! sends the operation's chunks as usual. Only a refusal a chunk would get
//! too (EBADSEGOFF, EBADTAG, ...) is final.
//!
//! Wire: kind `Put` / `Get` on the request channel, no payload, `txn` the
//! operation's id, 16 arguments: 0 region, 1 flags (bit 0 notify, bit 1
//! direct), 2-3 offset, 4-5 length, 6-7 expiry (CLOCK_MONOTONIC ns, after
//! which the target refuses to copy), 8-9 notify offset, 10 notify value,
//! 11-12 the initiator's address of its bytes, 13 its pid, 14-15 the secret.
//! Answer: `RmaDone` / `GetReply`, arguments [0, 1 = fall back / 0], status.
//!
//! The initiator's call waits for the answer (a put's `src` may be reused
//! when it returns; a get returns complete): at most until the expiry, then
//! it falls back — a target that does not poll delays a call by
//! `TTL + GRACE`, never blocks it. Before falling back after an expiry or a
//! failure it waits `GRACE` more, so that a copy the target began in time
//! has ended before the caller may reuse or free its memory. The chunks
//! of a fall-back follow the descriptor on the same ordered channel, so
//! what a late copy wrote is overwritten before they complete.

use std::net::SocketAddr;
use std::sync::Arc;

use super::rma_target::{is_direct, Chunk, CHUNK, FLAG_DIRECT, FLAG_NOTIFY};
use crate::am::endpoint::core::{Endpoint, EpState};
use crate::am::handler::args::SegmentMemory;
use crate::am::handler::tables::tag_accepts;
use crate::am::state::rma::Direct;
use crate::am::state::rma::{Op, Redo, RmaState, MAX_OPS};
use crate::error::{Result, ReturnStatus};
use crate::wire::{Category, MsgKind, MsgMeta, CHANNEL_REQUEST};

/// Operations this large or larger go direct when they can. Measured here
/// (2 shared vCPUs, put or get then wait, best of 3): direct beats chunks
/// from 16 KiB (10 against 17-20 us) and by 3x at 64 KiB (12 against 40
/// us); below 64 KiB a chunked put's call returns before the round trip,
/// which a stream of small puts keeps.
pub const DIRECT_MIN: u64 = 64 << 10;
/// How long a descriptor may wait for the target (ns).
pub(in crate::am) const TTL: u64 = 50_000_000;
/// What the initiator waits beyond the expiry before falling back after
/// a failure or no answer (ns): a copy begun in time ends within it.
pub(in crate::am) const GRACE: u64 = 50_000_000;
/// How long a direct put polls for its answer without sleeping, besides
/// the copy's time at `SPIN_BYTES_PER_NS` (ns). Longer than the copy takes
/// on an idle host (1 MiB: 70-130 us here), not much longer: a poller
/// that shares its core with the target keeps the target from copying
/// for as long as it spins (measured on the loaded 2-core host: the
/// descriptor of a 1 MiB put waited 2.2 ms, the whole former spin of
/// 1 ms + 1 ns/byte, before the target saw it). Past it the put sleeps
/// until the target's answer wakes it.
pub(in crate::am) const SPIN_NS: u64 = 50_000;
pub(in crate::am) const SPIN_BYTES_PER_NS: u64 = 8;

/// A descriptor's fields (the arguments above).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::am) struct Desc {
    pub region: u32,
    pub notify: Option<(u64, u32)>,
    pub start: u64,
    pub total: u64,
    pub expiry: u64,
    pub addr: u64,
    pub pid: u32,
    pub secret: u64,
}

fn lo_hi(v: u64) -> [u32; 2] {
    [v as u32, (v >> 32) as u32]
}

fn join(a: &[u32]) -> u64 {
    a[0] as u64 | (a[1] as u64) << 32
}

impl Desc {
    pub(in crate::am) fn meta(&self, kind: MsgKind, txn: u32, tag: u64) -> MsgMeta {
        let (flags, f, fv) = match self.notify {
            Some((off, v)) => (FLAG_DIRECT | FLAG_NOTIFY, lo_hi(off), v),
            None => (FLAG_DIRECT, [0, 0], 0),
        };
        let [s0, s1] = lo_hi(self.start);
        let [t0, t1] = lo_hi(self.total);
        let [e0, e1] = lo_hi(self.expiry);
        let [a0, a1] = lo_hi(self.addr);
        let [k0, k1] = lo_hi(self.secret);
        let args = [
            self.region,
            flags,
            s0,
            s1,
            t0,
            t1,
            e0,
            e1,
            f[0],
            f[1],
            fv,
            a0,
            a1,
            self.pid,
            k0,
            k1,
        ];
        MsgMeta {
            txn,
            tag,
            dest_offset: self.start,
            ..MsgMeta::new(kind, Category::Short, 0, &args)
        }
    }

    /// Reads a descriptor from the network; None when it is malformed.
    pub(in crate::am) fn parse(meta: &MsgMeta) -> Option<Desc> {
        if !is_direct(meta) {
            return None;
        }
        let a = &meta.args;
        let notify = match a[1] {
            FLAG_DIRECT => None,
            f if f == FLAG_DIRECT | FLAG_NOTIFY => Some((join(&a[8..10]), a[10])),
            _ => return None,
        };
        let d = Desc {
            region: a[0],
            notify,
            start: join(&a[2..4]),
            total: join(&a[4..6]),
            expiry: join(&a[6..8]),
            addr: join(&a[11..13]),
            pid: a[13],
            secret: join(&a[14..16]),
        };
        let fits = |x: u64| x.checked_add(d.total).is_some();
        let ok = fits(d.start)
            && fits(d.addr)
            && d.addr != 0
            && d.total <= isize::MAX as u64
            && meta.dest_offset == d.start;
        ok.then_some(d)
    }
}

/// What a put or get asks to have copied directly.
pub(in crate::am) struct DirectIssue<'a> {
    pub dest: u32,
    pub region: u32,
    pub offset: u64,
    pub kind: MsgKind,
    pub src: &'a [u8],
    pub dst: Option<Arc<dyn SegmentMemory>>,
    pub notify: Option<(u64, u32)>,
    pub keep: bool,
}

impl Endpoint {
    /// Tries the direct path: Some(handle or 0) when the operation is
    /// done (well or with a final status), None when its chunks must go
    /// (not a same-host peer over shared memory, inside a handler, or the
    /// target did not copy).
    pub(in crate::am) fn try_direct(self: &Arc<Self>, o: &DirectIssue<'_>) -> Result<Option<u64>> {
        let total = match &o.dst {
            Some(d) => d.len() as u64,
            None => o.src.len() as u64,
        };
        if total < DIRECT_MIN {
            return Ok(None);
        }
        let addr = match &o.dst {
            Some(d) => d.base() as u64,
            None => o.src.as_ptr() as u64,
        };
        let expiry = self.clock.now().as_nanos() + TTL;
        let is_get = o.dst.is_some();
        let started = self.with(|st| {
            // a put waits for its answer: not inside a handler
            if st.depth.is_none() || st.dispatch_nesting > 0 && !is_get {
                return None;
            }
            let peer = st.table.mapped_entry(o.dest)?;
            let (to, tag) = (peer.addr, peer.tag);
            if to == self.addr() {
                return None;
            }
            let (pid, secret) = st.transports.ring_to(to)?;
            let d = Desc {
                region: o.region,
                notify: o.notify,
                start: o.offset,
                total,
                expiry,
                addr,
                pid,
                secret,
            };
            let redo = is_get.then_some(Redo {
                region: o.region,
                offset: o.offset,
                tag,
                hold_until: expiry + GRACE,
            });
            let kept = o.keep || !is_get;
            let (id, handle) = st.rma.start_direct(to, total, o.dst.clone(), kept, redo)?;
            let meta = d.meta(o.kind, id, tag);
            st.stats.requests_sent[meta.category.index()] += 1;
            let now = st.clock.now().max(st.last_pump);
            let payload = st.proto.payload_buffer(&[]);
            st.send_message(now, to, CHANNEL_REQUEST, meta, payload);
            Some((id, handle))
        });
        let Some((id, handle)) = started else {
            return Ok(None);
        };
        if is_get {
            // completes (or falls back to chunks) as the answer comes
            return Ok(Some(if o.keep { handle } else { 0 }));
        }
        let mut rounds = 0;
        // the copy takes a while: polled without sleeping for about as long
        // as it takes (a wake-up would cost more), then as any waiting call
        let spin_until = self.clock.now().as_nanos() + SPIN_NS + total / SPIN_BYTES_PER_NS;
        loop {
            let state = self.with(|st| st.rma.direct_state(id));
            match state {
                Direct::Answered => {
                    return Ok(Some(self.with(|st| st.rma.end_direct(id, o.keep, handle))));
                }
                Direct::FallBack => {
                    self.with(|st| st.rma.drop_direct(id));
                    return Ok(None);
                }
                Direct::Failed => break,
                _ => {}
            }
            let now = self.clock.now().as_nanos();
            if now > expiry {
                break;
            }
            if now < spin_until {
                self.poll_bundle()?;
            } else {
                let answered = || self.with(|st| st.rma.direct_state(id)) != Direct::Waiting;
                self.wait_round(&mut rounds, answered)?;
            }
        }
        // no answer in time, or none to come: a copy begun before the
        // expiry has ended after the grace; then the chunks go
        self.with(|st| st.rma.drop_direct(id));
        while self.clock.now().as_nanos() <= expiry + GRACE {
            self.wait_round(&mut rounds, || false)?;
            self.clock.sleep(200 * crate::time::MICROS);
        }
        Ok(None)
    }
}

impl RmaState {
    /// Registers a direct operation to `peer` (one answer awaited):
    /// (wire id, handle); None when too many are unfinished.
    pub(in crate::am) fn start_direct(
        &mut self,
        peer: SocketAddr,
        total: u64,
        dst: Option<Arc<dyn SegmentMemory>>,
        kept: bool,
        redo: Option<Redo>,
    ) -> Option<(u32, u64)> {
        if self.ops.len() >= MAX_OPS {
            return None;
        }
        let (id, handle) = self.next_id();
        let op = Op {
            handle,
            peer,
            waiting: vec![1],
            remaining: 1,
            total,
            status: None,
            kept,
            fenced: false,
            dst,
            direct: Direct::Waiting,
            redo,
        };
        self.ops.insert(id, op);
        Some((id, handle))
    }

    pub(in crate::am) fn direct_state(&self, id: u32) -> Direct {
        self.ops.get(&id).map_or(Direct::Failed, |o| o.direct)
    }

    /// Forgets a direct put that falls back to chunks (its late answer, if
    /// any, is dropped as stale).
    pub(in crate::am) fn drop_direct(&mut self, id: u32) {
        if let Some(op) = self.ops.remove(&id) {
            if op.direct != Direct::FallBack {
                self.direct_counts[1] += 1;
            }
        }
    }

    /// A direct put the target answered: its handle, kept as a completed
    /// operation, or 0 and forgotten (a failure remembered for `fence`).
    pub(in crate::am) fn end_direct(&mut self, id: u32, keep: bool, handle: u64) -> u64 {
        let Some(op) = self.ops.get_mut(&id) else {
            return 0;
        };
        op.direct = Direct::No;
        op.kept = keep;
        if keep {
            return handle;
        }
        self.fence_failed |= op.status.is_some();
        self.ops.remove(&id);
        0
    }
}

impl EpState {
    /// The answer to a direct operation's descriptor: a final status, or
    /// "fall back to chunks" (a get sends them now; a put's waiting call
    /// does).
    pub(in crate::am) fn direct_answered(
        &mut self,
        from: SocketAddr,
        id: u32,
        status: Option<ReturnStatus>,
        fall_back: bool,
    ) {
        let op = match self.rma.ops.get_mut(&id) {
            Some(op) if op.peer == from && op.direct == Direct::Waiting && op.remaining == 1 => {
                op.answer(0);
                op
            }
            _ => {
                // (the answer of an Xfer done at its commit: already known)
                match self.rma.early.iter().position(|&e| e == (from, id)) {
                    Some(i) if !fall_back && status.is_none() => {
                        self.rma.early.remove(i);
                        self.stats.replies_received[0] += 1;
                    }
                    _ => self.stats.stale_dropped += 1,
                }
                return;
            }
        };
        self.stats.replies_received[0] += 1;
        self.rma.direct_counts[usize::from(fall_back)] += 1;
        if !fall_back {
            op.direct = Direct::Answered;
            return self.finish_chunk(id, status);
        }
        op.direct = Direct::FallBack;
        if op.redo.is_some() {
            self.resend_as_chunks(id);
        } else {
            self.finish_chunk(id, None);
        }
    }

    /// The descriptor of operation `id` could not be delivered. A put's
    /// waiting call falls back; a get is held until no late copy into its
    /// destination can come (`GRACE`), then fails.
    pub(in crate::am) fn direct_failed(&mut self, id: u32, status: ReturnStatus) {
        let Some(op) = self.rma.ops.get_mut(&id) else {
            return;
        };
        op.direct = Direct::Failed;
        if op.redo.is_none() {
            // the waiting call falls back: no status a fence could report
            op.answer(0);
            return self.finish_chunk(id, None);
        }
        op.status = Some(status);
        self.rma.held += 1;
    }

    /// Completes the held failed gets whose time has come.
    pub(in crate::am) fn release_held(&mut self) {
        if self.rma.held == 0 {
            return;
        }
        let now = self.clock.now().as_nanos();
        let due: Vec<u32> = self
            .rma
            .ops
            .iter()
            .filter(|(_, o)| {
                o.direct == Direct::Failed && o.redo.as_ref().is_some_and(|r| r.hold_until < now)
            })
            .map(|(&id, _)| id)
            .collect();
        for id in due {
            if let Some(op) = self.rma.ops.get_mut(&id) {
                op.answer(0);
                op.direct = Direct::No;
                let status = op.status;
                self.rma.held -= 1;
                self.finish_chunk(id, status);
            }
        }
    }

    /// A direct get the target did not copy: its chunks go now, under the
    /// same id (the descriptor's answer is in: nothing else comes for it).
    fn resend_as_chunks(&mut self, id: u32) {
        let Some(op) = self.rma.ops.get_mut(&id) else {
            return;
        };
        let Some(r) = op.redo.take() else {
            return;
        };
        let n = Chunk::count(op.total);
        op.waiting = Op::all_waiting(n);
        op.remaining = n;
        op.direct = Direct::No;
        let (peer, total) = (op.peer, op.total);
        let now = self.clock.now().max(self.last_pump);
        for i in 0..n as u32 {
            let rel = i as u64 * CHUNK as u64;
            let c = Chunk {
                region: r.region,
                notify: None,
                start: r.offset,
                total,
                index: i,
                len: (total - rel).min(CHUNK as u64) as u32,
            };
            let meta = c.meta(MsgKind::Get, id, r.tag);
            self.stats.requests_sent[meta.category.index()] += 1;
            let payload = self.proto.payload_buffer(&[]);
            self.send_message(now, peer, CHANNEL_REQUEST, meta, payload);
        }
    }

    /// Performs a descriptor from `from`: (status, fall back).
    pub(in crate::am) fn perform_direct(
        &mut self,
        from: SocketAddr,
        meta: &MsgMeta,
        payload: &[u8],
    ) -> (Option<ReturnStatus>, bool) {
        let is_put = meta.kind == MsgKind::Put;
        self.stats.requests_received[meta.category.index()] += 1;
        if self.table.index_of(&from).is_none() {
            return (Some(ReturnStatus::BadEndpoint), false);
        }
        if !tag_accepts(self.tag, meta.tag) {
            return (Some(ReturnStatus::BadTag), false);
        }
        let Some(d) = Desc::parse(meta) else {
            return (Some(ReturnStatus::BadArgs), false);
        };
        if !payload.is_empty() || d.notify.is_some() && !is_put {
            return (Some(ReturnStatus::BadArgs), false);
        }
        // Only a process on this host that reads our ring's file: never a
        // datagram from the network alone (nothing else is looked at).
        if !self.transports.ring_from(from, d.pid, d.secret) {
            self.stats.corrupt_dropped += 1;
            return (None, true);
        }
        let mem = match self.rma.regions.check_operation(
            self.segment.as_ref(),
            d.region,
            is_put,
            (d.start, d.total),
            d.notify.map(|(at, _)| at),
        ) {
            Ok(m) => m,
            Err(s) => return (Some(s), false),
        };
        // ends well before the expiry unless preempted for long (`GRACE`)
        let copy_ns = d.total / 4; // at 4 GB/s, far below what it does
        if self
            .clock
            .now()
            .as_nanos()
            .saturating_add(copy_ns + TTL / 5)
            > d.expiry
        {
            return (None, true);
        }
        // inside the region (checked above), under the endpoint's lock as a
        // chunk's write: deregistration waits for it
        let (off, len) = (d.start as usize, d.total as usize);
        let copied = if is_put {
            mem.fill_from_process(off, len, d.pid, d.addr as usize)
        } else {
            mem.copy_to_process(off, len, d.pid, d.addr as usize)
        };
        if copied.is_err() {
            return (None, true);
        }
        if let Some((foff, value)) = d.notify {
            mem.write_word(foff as usize, value);
        }
        self.rma.direct_counts[2] += 1;
        (None, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_descriptor_round_trips_and_malformed_ones_are_refused() {
        let d = Desc {
            region: 3,
            notify: Some((8, 7)),
            start: 1 << 33,
            total: 5 << 20,
            expiry: 123 << 32 | 5,
            addr: 0x7fff_0000_1000,
            pid: 4242,
            secret: 0xdead_beef_0bad_f00d,
        };
        for kind in [MsgKind::Put, MsgKind::Get] {
            let m = d.meta(kind, 9, 1);
            assert!(is_direct(&m));
            assert_eq!(Desc::parse(&m), Some(d));
        }
        let good = d.meta(MsgKind::Put, 9, 1);
        let mut m = good;
        m.nargs = 11;
        assert_eq!(Desc::parse(&m), None, "a chunk's argument count");
        m = good;
        m.args[1] = FLAG_NOTIFY;
        assert_eq!(Desc::parse(&m), None, "not direct");
        m = good;
        m.args[1] = 4 | FLAG_DIRECT;
        assert_eq!(Desc::parse(&m), None, "unknown flag");
        m = good;
        m.args[11] = u32::MAX;
        m.args[12] = u32::MAX;
        assert_eq!(Desc::parse(&m), None, "address + length wraps");
        m = good;
        m.args[11] = 0;
        m.args[12] = 0;
        assert_eq!(Desc::parse(&m), None, "NULL address");
        m = good;
        m.args[3] = u32::MAX;
        assert_eq!(Desc::parse(&m), None, "offset + length wraps");
        m = good;
        m.dest_offset += 1;
        assert_eq!(Desc::parse(&m), None, "offset inconsistent");
    }
}
