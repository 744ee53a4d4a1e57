//! Direct copies of large long requests (AM_RequestXfer) to a peer on this
//! host: the request goes as usual, on the request channel in its place
//! among the others, but its payload is a descriptor of where the bytes
//! are in the sender's memory (`rma_direct.rs`'s `Desc`, its 16 words),
//! marked by `XFER_FLAG` in the header's status byte. When the target
//! dispatches it — where a chunked long request's payload would be written
//! into its segment — it makes the same checks (`admit`: EBADSEGOFF,
//! EBADLENGTH, ... returned to the sender's handler 0 as for any long
//! request), proves the descriptor by its ring's secret as a direct put
//! does, copies the bytes with `process_vm_readv` straight into its
//! segment at `dest_offset`, answers "copied" as a direct put's descriptor
//! is answered (`RmaDone`, arguments [0, 0], `txn` the descriptor's id),
//! then runs the handler once with (buf, nbytes) and replies as usual.
//! Anything that keeps it from copying (not our ring, the kernel refuses,
//! too late) answers "fall back" (arguments [0, 1]) and runs no handler:
//! the sender then sends the request's chunks.
//!
//! The sender's call returns only once the target has copied (the caller
//! may reuse its buffer then, AM-2), was refused (its handler 0 ran), or
//! fell back and sent the chunks (which copy the buffer before returning).
//! "Copied" is read from the claim word (below) as soon as the target
//! commits, not from its answer one protocol message later (GASNet's
//! testbulk over shm, 65,000 bytes, 12 rounds alternated, medians: 6627
//! -> 9218 MB/s, AMUDP 4017); the answer, when it comes, is let go
//! (`RmaState::early`).
//! A target that does not poll delays it by `TTL + GRACE`, then the
//! sender withdraws and the chunks go. Which of the two decided is settled
//! by a claim word in the sender's ring slot (`net::shm`'s `claim_to`,
//! `claim_from`): the sender sets it before sending the descriptor; the
//! target, after copying, swaps it to "committed" before answering and
//! running the handler; the sender withdraws only by swapping it back to
//! free. Only one swap can win, so the handler runs at most once: a target
//! that lost answers "fall back" and runs nothing; a sender that lost waits
//! for the answer, however late (or for the end of the association).
//!
//! From `SPLIT_MIN` bytes the copy is split between both processes, the
//! sender writing the tail while the target reads the head
//! (`xfer_split.rs`): the descriptor says where (its 17th and 18th words).
//!
//! Only without a kept transaction, not inside a handler, with a send
//! credit free (else the usual path waits or says AM_ERR_IN_USE).

use std::net::SocketAddr;
use std::sync::Arc;

use super::rma_direct::{Desc, GRACE, SPIN_BYTES_PER_NS, SPIN_NS, TTL};
use super::xfer_split::{
    claim, committed, grant_addr, refused, split_point, take_grant, target_copy, written, Copied,
};
use crate::am::endpoint::core::{Endpoint, EpState};
use crate::am::handler::args::SegmentMemory;
use crate::am::handler::message::Message;
use crate::am::handler::message::XFER_FLAG;
use crate::am::messages::returned::Admitted;
use crate::am::state::outstanding::Outstanding;
use crate::am::state::rma::{Direct, EARLY_MAX};
use crate::error::{Result, ReturnStatus};
use crate::time::Instant;
use crate::wire::{Category, MsgKind, MsgMeta, CHANNEL_REPLY, CHANNEL_REQUEST};

/// Long requests this large or larger go direct when they can (below it,
/// through the ring: two copies each end, but the call returns before
/// the target has the bytes, so a stream of them overlaps). Measured with
/// GASNet's testbulk (4000 requests, 2 ranks, `chrt -f 10` on the loaded
/// 2-core host, 3 runs alternated, MB/s, ring -> direct): 16 KiB 4768 ->
/// 3300 (0.69x), 32 KiB 4666 -> 5752 (1.23x), 48 KiB 4680 -> 7902
/// (1.69x), 65,000 bytes 4767 -> 9341 (1.96x). (Puts keep
/// `rma_direct::DIRECT_MIN`: a chunked put's call returns at once.)
pub const XFER_DIRECT_MIN: u64 = 32 << 10;

/// A descriptor's length in bytes (16 little-endian words, then the
/// split point as a 64-bit one: `total` when not split).
const DESC_LEN: usize = 72;

pub(in crate::am) fn encode(d: &Desc, split: u64) -> [u8; DESC_LEN] {
    let m = d.meta(MsgKind::Put, 0, 0);
    let mut out = [0u8; DESC_LEN];
    for (o, w) in out.chunks_exact_mut(4).zip(m.args.iter()) {
        o.copy_from_slice(&w.to_le_bytes());
    }
    out[64..].copy_from_slice(&split.to_le_bytes());
    out
}

/// The descriptor a request from the network carries, and its split
/// point; None when malformed.
fn decode(meta: &MsgMeta, payload: &[u8]) -> Option<(Desc, u64)> {
    if payload.len() != DESC_LEN || meta.category != Category::Long || meta.status != XFER_FLAG {
        return None;
    }
    let mut words = [0u32; 16];
    for (w, b) in words.iter_mut().zip(payload.chunks_exact(4)) {
        *w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    }
    let split = u64::from_le_bytes(payload[64..].try_into().ok()?);
    let m = MsgMeta {
        dest_offset: meta.dest_offset,
        ..MsgMeta::new(MsgKind::Put, Category::Short, 0, &words)
    };
    let d = Desc::parse(&m).filter(|d| d.notify.is_none() && split <= d.total)?;
    Some((d, split))
}

impl Endpoint {
    /// Tries to send long request `msg` to `dest` directly: true when it is
    /// done (copied, or refused and reported to handler 0), false when the
    /// usual path must send it.
    pub(in crate::am) fn try_xfer_direct(
        self: &Arc<Self>,
        dest: u32,
        msg: &Message<'_>,
    ) -> Result<bool> {
        let total = msg.payload.len() as u64;
        // (an offset + length that wraps is refused as it is today)
        let wraps = msg.dest_offset.checked_add(total).is_none();
        if msg.category != Category::Long || total < XFER_DIRECT_MIN || wraps {
            return Ok(false);
        }
        let expiry = self.clock.now().as_nanos() + TTL;
        let started = self.with(|st| {
            if st.dispatch_nesting > 0 {
                return None;
            }
            let depth = st.depth?;
            let peer = st.table.mapped_entry(dest)?;
            let (to, tag) = (peer.addr, peer.tag);
            if to == self.addr() || peer.outstanding >= depth {
                return None;
            }
            let (pid, secret) = st.transports.ring_to(to)?;
            let split = match st.rma.split_refused.contains(&to) {
                true => total,
                false => split_point(total),
            };
            let (id, _) = st.rma.start_direct(to, total, None, true, None)?;
            // the claim word: ours until the target commits to the copy
            if st.transports.claim_to(to, id as usize, 0, claim(id)) != Some(true) {
                st.rma.end_direct(id, false, 0);
                return None;
            }
            let d = Desc {
                region: id,
                notify: None,
                start: msg.dest_offset,
                total,
                expiry,
                addr: msg.payload.as_ptr() as u64,
                pid,
                secret,
            };
            let txn = st.take_txn_id() as u32;
            let mut meta = msg.meta(txn, tag);
            meta.status = XFER_FLAG;
            let now = st.clock.now().max(st.last_pump);
            let payload = st.proto.payload_buffer(&encode(&d, split));
            st.send_message(now, to, CHANNEL_REQUEST, meta, payload);
            if let Some(e) = st.table.get_mut(dest) {
                e.outstanding += 1;
            }
            st.outstanding
                .insert(txn, Outstanding::new(dest, to, now, meta));
            let c = Category::Long.index();
            st.stats.requests_sent[c] += 1;
            st.stats.request_data_bytes_sent[c] += total;
            Some((id, txn, to, split))
        });
        let Some((id, txn, to, split)) = started else {
            return Ok(false);
        };
        let k = id as usize;
        // the claim word back to free, whichever of its values it holds
        let release = || {
            self.with(|st| {
                let Some((w, _)) = st.transports.claim_word_to(to, k) else {
                    return;
                };
                let ours = [claim(id), committed(id), written(id), refused(id)];
                if ours.contains(&w) || grant_addr(w).is_some() {
                    let _ = st.transports.claim_to(to, k, w, 0);
                }
            })
        };
        // our part of a split copy, when the target grants it (once)
        let mut tail = (split < total).then(|| &msg.payload[split as usize..]);
        // the target took the claim: it copied and runs the handler, its
        // answer is on its way; no giving up then
        let mut committed_seen = false;
        let mut rounds = 0;
        let spin_until = self.clock.now().as_nanos() + SPIN_NS + total / SPIN_BYTES_PER_NS;
        let state = || self.with(|st| (st.rma.direct_state(id), st.outstanding.contains_key(&txn)));
        loop {
            // the target committed: both parts are in place and nothing
            // reads our buffer any more; its answer, on its way, is let go
            // when it comes (`early`)
            let (direct, open, committed) = self.with(|st| {
                let committed = st.xfer_committed(to, id);
                let open = st.outstanding.contains_key(&txn);
                (st.rma.direct_state(id), open, committed)
            });
            if committed {
                release();
                return Ok(true);
            }
            match (direct, open) {
                (Direct::Answered, _) => {
                    release();
                    self.with(|st| st.rma.end_direct(id, false, 0));
                    return Ok(true);
                }
                (Direct::FallBack, _) => {
                    release();
                    break;
                }
                // refused (handler 0 ran) or given up with its peer
                (_, false) => {
                    release();
                    self.with(|st| st.rma.end_direct(id, false, 0));
                    return Ok(true);
                }
                _ => {}
            }
            if let Some(t) = tail {
                if let Some(wrote) = self.write_tail(to, id, t) {
                    tail = None;
                    committed_seen |= wrote;
                    continue;
                }
            }
            let now = self.clock.now().as_nanos();
            if now > expiry + GRACE && !committed_seen {
                // withdrawn by taking the claim back: the target, which
                // must take it to run the handler, then will not; if it
                // took it first, its answer comes (or its association ends)
                let withdrawn =
                    self.with(|st| st.transports.claim_to(to, id as usize, claim(id), 0));
                if withdrawn == Some(true) {
                    break;
                }
                committed_seen = true;
            }
            if now < spin_until {
                self.poll_bundle()?;
            } else {
                let answered = || state() != (Direct::Waiting, true);
                self.wait_round(&mut rounds, answered)?;
            }
        }
        // the target will not copy, or did not in time (a copy it began in
        // time has ended; it ran no handler): the request's credit is free
        // again and its chunks go
        self.with(|st| {
            st.rma.drop_direct(id);
            let now = st.clock.now().max(st.last_pump);
            st.complete(txn, Category::Long, now);
        });
        Ok(false)
    }

    /// Writes `tail` where the target's grant in claim word `id` says,
    /// when one is there: Some(true) when written, Some(false) when the
    /// kernel refused (no split offered to `to` again), None when no grant.
    fn write_tail(&self, to: SocketAddr, id: u32, tail: &[u8]) -> Option<bool> {
        let k = id as usize;
        let (w, pid) = self.with(|st| st.transports.claim_word_to(to, k))?;
        let cas = |a, b| self.with(|st| st.transports.claim_to(to, k, a, b)) == Some(true);
        let write = |addr| crate::sys::write_to_process(pid, addr as usize, tail).is_ok();
        let wrote = take_grant(id, || Some(w), cas, write)?;
        self.with(|st| match wrote {
            true => st.rma.split_counts[0] += 1,
            false => {
                st.rma.split_counts[1] += 1;
                st.rma.split_refused.push(to);
            }
        });
        Some(wrote)
    }
}

impl EpState {
    /// Whether direct Xfer `id` to `to`, still waiting for its answer, was
    /// committed by the target (its claim word): then it is done, counted
    /// as copied, and its answer is waited for in `early`.
    fn xfer_committed(&mut self, to: SocketAddr, id: u32) -> bool {
        let word = self
            .transports
            .claim_word_to(to, id as usize)
            .map(|(w, _)| w);
        if word != Some(committed(id)) || self.rma.direct_state(id) != Direct::Waiting {
            return false;
        }
        self.rma.direct_counts[0] += 1;
        self.rma.end_direct(id, false, 0);
        if self.rma.early.len() == EARLY_MAX {
            self.rma.early.pop_front();
        }
        self.rma.early.push_back((to, id));
        true
    }

    /// A long request marked `XFER_FLAG` from `from`, being dispatched:
    /// its segment and length when its bytes were copied there (its
    /// handler runs now), None when it was refused or answered "fall back"
    /// (no handler runs).
    pub(in crate::am) fn xfer_arrived(
        &mut self,
        from: SocketAddr,
        meta: &MsgMeta,
        payload: &[u8],
        now: Instant,
    ) -> Option<(Arc<dyn SegmentMemory>, usize)> {
        let Some((d, split)) = decode(meta, payload) else {
            self.send_returned(now, from, *meta, ReturnStatus::BadArgs, true);
            return None;
        };
        let answer = |st: &mut EpState, fall_back: bool| {
            let m = MsgMeta {
                txn: d.region,
                ..MsgMeta::new(
                    MsgKind::RmaDone,
                    Category::Short,
                    0,
                    &[0, u32::from(fall_back)],
                )
            };
            st.send_message(now, from, CHANNEL_REPLY, m, Vec::new());
        };
        // Only a process on this host that reads our ring's file: never a
        // datagram from the network alone (nothing else is looked at).
        if !self.transports.ring_from(from, d.pid, d.secret) {
            self.stats.corrupt_dropped += 1;
            answer(self, true);
            return None;
        }
        let source = self.table.index_of(&from);
        let seg = match self
            .admit_parts()
            .admit(source, meta, d.total as usize, true)
        {
            Ok(Admitted::Long(seg)) => seg,
            Ok(_) => return None, // (a long request is admitted as one)
            Err(status) => {
                self.send_returned(now, from, *meta, status, true);
                return None;
            }
        };
        let copy_ns = d.total / 4; // at 4 GB/s, far below what it does
        if self
            .clock
            .now()
            .as_nanos()
            .saturating_add(copy_ns + TTL / 5)
            > d.expiry
        {
            answer(self, true);
            return None;
        }
        // inside the segment (admitted above)
        let (off, len) = (d.start as usize, d.total as usize);
        let owner = (d.pid, d.secret);
        let k = d.region as usize;
        let mut copied = Copied::Failed;
        // the segment held (locked) until we answer: the sender's part of
        // a split copy is written into it meanwhile (`xfer_split.rs`)
        let lent = seg.fill_with(off, len, &mut |dst| {
            let tr = &self.transports;
            copied = target_copy(
                d.region,
                dst,
                split as usize,
                |a, b| tr.claim_from(from, owner, k, a, b),
                |at, buf| crate::sys::read_from_process(d.pid, d.addr as usize + at, buf).is_ok(),
                || self.clock.now().as_nanos(),
                |long| match long {
                    // (a sender that shares our core gets it)
                    true => self.clock.sleep(20 * crate::time::MICROS),
                    false => self.clock.yield_now(),
                },
            );
        });
        if !lent {
            let ok = seg.fill_from_process(off, len, d.pid, d.addr as usize);
            copied = match ok {
                Ok(()) => Copied::Whole(claim(d.region), false),
                Err(_) => Copied::Failed,
            };
        }
        // the handler runs only if the sender has not withdrawn: whichever
        // of the two takes the claim word first decides (a copy that ended
        // late races the sender's fall-back to chunks)
        let from_word = match copied {
            Copied::Whole(w, tail_written) => {
                self.rma.split_counts[2] += u64::from(tail_written);
                Some(w)
            }
            Copied::Failed => None,
        };
        let committed_now = from_word.is_some_and(|w| {
            self.transports
                .claim_from(from, owner, k, w, committed(d.region))
        });
        if !committed_now {
            answer(self, true);
            return None;
        }
        self.rma.direct_counts[2] += 1;
        answer(self, false);
        Some((seg, len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_descriptor_round_trips_and_malformed_ones_are_refused() {
        let d = Desc {
            region: 77,
            notify: None,
            start: 4096,
            total: 1 << 20,
            expiry: 5 << 32 | 9,
            addr: 0x7fff_0000_1000,
            pid: 4242,
            secret: 0x0bad_f00d_dead_beef,
        };
        let mut meta = Message::long(9, &[1, 2], &[], 4096).meta(3, 1);
        meta.status = XFER_FLAG;
        let bytes = encode(&d, 1 << 19);
        assert_eq!(decode(&meta, &bytes), Some((d, 1 << 19)));
        assert_eq!(decode(&meta, &bytes[..64]), None, "short");
        let past = encode(&d, (1 << 20) + 1);
        assert_eq!(decode(&meta, &past), None, "split past the end");
        let mut m = meta;
        m.dest_offset = 0;
        assert_eq!(decode(&m, &bytes), None, "offset inconsistent");
        m = meta;
        m.status = XFER_FLAG | crate::am::handler::message::TXN_FLAG;
        assert_eq!(decode(&m, &bytes), None, "with a kept transaction");
        m = meta;
        m.category = Category::Medium;
        assert_eq!(decode(&m, &bytes), None, "not long");
        let with_notify = Desc {
            notify: Some((0, 1)),
            ..d
        };
        assert_eq!(decode(&meta, &encode(&with_notify, 0)), None, "a notify");
    }
}
