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
//! Only without a kept transaction, not inside a handler, with a send
//! credit free (else the usual path waits or says AM_ERR_IN_USE).

use std::net::SocketAddr;
use std::sync::Arc;

use super::rma_direct::{Desc, GRACE, SPIN_BYTES_PER_NS, SPIN_NS, TTL};
use crate::am::endpoint::core::{Endpoint, EpState};
use crate::am::handler::args::SegmentMemory;
use crate::am::handler::message::Message;
use crate::am::handler::message::XFER_FLAG;
use crate::am::messages::returned::Admitted;
use crate::am::state::outstanding::Outstanding;
use crate::am::state::rma::Direct;
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

/// A descriptor's length in bytes (16 little-endian words).
const DESC_LEN: usize = 64;

/// The claim word of direct Xfer `id` while its sender waits (never 0).
pub(in crate::am) fn claim(id: u32) -> u64 {
    u64::from(id) << 1 | 1
}

/// The claim word of direct Xfer `id` once its target committed.
fn committed(id: u32) -> u64 {
    claim(id) | 1 << 63
}

pub(in crate::am) fn encode(d: &Desc) -> [u8; DESC_LEN] {
    let m = d.meta(MsgKind::Put, 0, 0);
    let mut out = [0u8; DESC_LEN];
    for (o, w) in out.chunks_exact_mut(4).zip(m.args.iter()) {
        o.copy_from_slice(&w.to_le_bytes());
    }
    out
}

/// The descriptor a request from the network carries; None when malformed.
fn decode(meta: &MsgMeta, payload: &[u8]) -> Option<Desc> {
    if payload.len() != DESC_LEN || meta.category != Category::Long || meta.status != XFER_FLAG {
        return None;
    }
    let mut words = [0u32; DESC_LEN / 4];
    for (w, b) in words.iter_mut().zip(payload.chunks_exact(4)) {
        *w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    }
    let m = MsgMeta {
        dest_offset: meta.dest_offset,
        ..MsgMeta::new(MsgKind::Put, Category::Short, 0, &words)
    };
    Desc::parse(&m).filter(|d| d.notify.is_none())
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
            let payload = st.proto.payload_buffer(&encode(&d));
            st.send_message(now, to, CHANNEL_REQUEST, meta, payload);
            if let Some(e) = st.table.get_mut(dest) {
                e.outstanding += 1;
            }
            st.outstanding
                .insert(txn, Outstanding::new(dest, to, now, meta));
            let c = Category::Long.index();
            st.stats.requests_sent[c] += 1;
            st.stats.request_data_bytes_sent[c] += total;
            Some((id, txn, to))
        });
        let Some((id, txn, to)) = started else {
            return Ok(false);
        };
        // the claim word back to free, whichever of the two values it holds
        let release = || {
            self.with(|st| {
                let _ = st.transports.claim_to(to, id as usize, claim(id), 0);
                let _ = st.transports.claim_to(to, id as usize, committed(id), 0);
            })
        };
        // the target took the claim: it copied and runs the handler, its
        // answer is on its way; no giving up then
        let mut committed_seen = false;
        let mut rounds = 0;
        let spin_until = self.clock.now().as_nanos() + SPIN_NS + total / SPIN_BYTES_PER_NS;
        let state = || self.with(|st| (st.rma.direct_state(id), st.outstanding.contains_key(&txn)));
        loop {
            match state() {
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
}

impl EpState {
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
        let Some(d) = decode(meta, payload) else {
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
        let copied = seg.fill_from_process(off, len, d.pid, d.addr as usize);
        // the handler runs only if the sender has not withdrawn: whichever
        // of the two takes the claim word first decides (a copy that ended
        // late races the sender's fall-back to chunks)
        let owner = (d.pid, d.secret);
        if copied.is_err()
            || !self.transports.claim_from(
                from,
                owner,
                d.region as usize,
                claim(d.region),
                committed(d.region),
            )
        {
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
        let bytes = encode(&d);
        assert_eq!(decode(&meta, &bytes), Some(d));
        assert_eq!(decode(&meta, &bytes[..60]), None, "short");
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
        assert_eq!(decode(&meta, &encode(&with_notify)), None, "a notify");
    }
}
