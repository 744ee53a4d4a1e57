//! The AM-2 segment in memory ramp allocates (`Endpoint::alloc_segment`,
//! `ramp_AllocSegment`), and long requests into it from a same-host peer
//! done as one memcpy by the sender (docs/rma-shm-design.md section 2).
//!
//! The segment is an `OwnedRegion` (a sealed memfd, `sys/shm_region.rs`)
//! handed over as region 0 by the regions' handover (`rma_shared.rs`:
//! a peer reaching us through a ring asks once, gets the file, maps it).
//! Each segment of an endpoint has its own generation, so its state word
//! names it: a replaced one (AM_SetSeg, another `alloc_segment`) is
//! revoked as a deregistered region is (not live, a bounded wait for
//! peers inside a copy, our view unmapped).
//!
//! Sender (`try_xfer_inplace`): a long request of at least `INPLACE_MIN`
//! bytes to a peer whose segment we have mapped, inside it (by our own
//! mapping's length), with a send credit free and no request of ours to
//! that peer still unanswered (an earlier handler must not see our bytes,
//! nor an earlier long request's bytes, written into the segment when it
//! is dispatched, be overwritten by ours before its handler ran: AM-2
//! order, as on the usual path). Then: the copy through the mapping (the Dekker pair
//! of `PeerRegion::put`), the state checked again after it (a revocation
//! that raced the copy: the request goes the usual way, with its bytes),
//! and the request with the flag `INPLACE_FLAG` and no payload but a
//! trailer (n, the segment's state, our ring's pid and secret), pushed
//! after the copy (the ring's release). Credits, replies and returned
//! messages are those of any request.
//!
//! Unlike the usual path, the bytes are in the segment before the target
//! sees the request: one refused for another reason (no such handler, a
//! tag no longer accepted) leaves them there.
//!
//! Target (`inplace_arrived`): only from a process reading our ring's
//! file (pid, secret), only when the state names our current segment
//! (else EBADSEGOFF to the sender's handler 0: the bytes went into a
//! segment since replaced), and `admit` checks offset + n against our
//! segment's length as for any long request; then the handler runs once
//! with buf = segment + offset.

use std::sync::Arc;
use std::time::Duration;

use super::rma_shared::SharedMem;
use crate::am::endpoint::core::{Endpoint, EpState};
use crate::am::handler::args::SegmentMemory;
use crate::am::handler::message::Message;
use crate::am::handler::message::INPLACE_FLAG;
use crate::am::messages::returned::Admitted;
use crate::am::state::outstanding::Outstanding;
use crate::am::state::region::SEGMENT_REGION;
use crate::am::state::rma::OwnSegment;
use crate::error::{Error, Result, ReturnStatus};
use crate::sys::{OwnedRegion, PeerRegion, MAX_REGION};
use crate::time::Instant;
use crate::wire::{Category, MsgMeta, CHANNEL_REQUEST};

/// Smallest long request sent in place (below it the ring is as fast).
pub(in crate::am) const INPLACE_MIN: u64 = 16 * 1024;
/// The trailer: n, the segment's state, pid, secret (little-endian).
const TRAILER: usize = 28;
/// How long a replacement waits for peers inside a copy.
const REVOKE_WAIT: Duration = Duration::from_millis(10);

impl OwnSegment {
    /// Revokes the allocated segment, if any (it is being replaced).
    pub(in crate::am) fn revoke(&mut self) {
        if let Some(r) = self.mem.take() {
            self.last = self.last.max(r.state().unwrap_or(0) >> 1);
            r.revoke(REVOKE_WAIT);
        }
    }

    /// A new generation, still live (our tag changed): peers' mappings are
    /// stale, they ask again and are checked against the new tag.
    pub(in crate::am) fn reshare(&self) {
        if let Some(r) = &self.mem {
            r.reshare();
        }
    }
}

pub(in crate::am) fn trailer(n: u64, state: u64, pid: u32, secret: u64) -> Vec<u8> {
    let mut b = Vec::with_capacity(TRAILER);
    b.extend_from_slice(&n.to_le_bytes());
    b.extend_from_slice(&state.to_le_bytes());
    b.extend_from_slice(&pid.to_le_bytes());
    b.extend_from_slice(&secret.to_le_bytes());
    b
}

fn parse(meta: &MsgMeta, b: &[u8]) -> Option<(u64, u64, u32, u64)> {
    if b.len() != TRAILER || meta.category != Category::Long || meta.status != INPLACE_FLAG {
        return None;
    }
    let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
    let pid = u32::from_le_bytes(b[16..20].try_into().unwrap());
    Some((u64_at(0), u64_at(8), pid, u64_at(20)))
}

enum Step {
    /// The usual way.
    No,
    /// A credit, or an earlier request to the peer, to wait for.
    Wait,
    /// Mapped, a credit taken: (mapping, peer, its tag, our ring's pid, secret).
    Go(Arc<PeerRegion>, std::net::SocketAddr, u64, u32, u64),
}

impl Endpoint {
    /// Allocates a segment of `len` bytes (rounded up to pages, zeroed)
    /// and makes it this endpoint's AM-2 segment, as `set_segment` does;
    /// same-host peers may map it (their long requests are then one memcpy
    /// by the sender). Returns (address, length). The segment it replaces,
    /// if allocated too, is freed (its address is invalid then); so is this
    /// one when replaced later.
    pub fn alloc_segment(&self, len: usize) -> Result<(usize, usize)> {
        if len == 0 || len > MAX_REGION {
            return Err(Error::BadArg("segment length is 0 or too large"));
        }
        self.with(|s| {
            let own = &mut s.rma.own_segment;
            let current = own.mem.as_ref().and_then(|r| r.state()).unwrap_or(0) >> 1;
            let g = own.last.max(current) + 1;
            let r = OwnedRegion::with_generation(len, g)
                .map(Arc::new)
                .map_err(|_| Error::Resource("cannot allocate shared memory"))?;
            own.revoke();
            own.last = g;
            own.mem = Some(r.clone());
            let (base, len) = (r.base(), r.len());
            s.segment = Some(Arc::new(SharedMem(r)));
            s.seg_gen = s.seg_gen.wrapping_add(1);
            Ok((base, len))
        })
    }

    /// Tries to send long request `msg` to `dest` with its bytes copied
    /// into the peer's segment through our mapping: true when sent so,
    /// false when the usual path must send it. `nonblocking`: InUse when
    /// it would wait (for a credit, or an earlier request to the peer).
    pub(in crate::am) fn try_xfer_inplace(
        self: &Arc<Self>,
        dest: u32,
        msg: &Message<'_>,
        nonblocking: bool,
    ) -> Result<bool> {
        let n = msg.payload.len() as u64;
        if msg.category != Category::Long || n < INPLACE_MIN {
            return Ok(false);
        }
        let Some(end) = msg.dest_offset.checked_add(n) else {
            return Ok(false);
        };
        let me = self.addr();
        let mut rounds = 0;
        let (peer, to, tag, pid, secret) = loop {
            let step = self.with(|st| {
                if st.dispatch_nesting > 0 {
                    return Step::No;
                }
                let Some(depth) = st.depth else {
                    return Step::No;
                };
                let Some((peer, to)) = st.shared_mapping(dest, SEGMENT_REGION, me) else {
                    return Step::No;
                };
                // outside: the usual way, where the target refuses it
                let Some((pid, secret)) = st.transports.ring_to(to) else {
                    return Step::No;
                };
                if end > peer.len() as u64 || !peer.writable() {
                    return Step::No;
                }
                let unanswered = st.rma.own_segment.copying.contains(&to)
                    || st.outstanding.values().any(|o| o.addr == to);
                let Some(e) = st.table.get_mut(dest) else {
                    return Step::No;
                };
                if unanswered || e.outstanding >= depth {
                    return Step::Wait;
                }
                e.outstanding += 1;
                let tag = e.tag;
                st.rma.own_segment.copying.push(to);
                Step::Go(peer, to, tag, pid, secret)
            });
            match step {
                Step::No => return Ok(false),
                Step::Go(p, to, tag, pid, secret) => break (p, to, tag, pid, secret),
                Step::Wait if nonblocking => {
                    return Err(Error::InUse("no send credit free for this destination"))
                }
                Step::Wait => {
                    self.wait_round(&mut rounds, || false)?;
                }
            }
        };
        let off = msg.dest_offset as usize;
        // the copy, then the state again: a revocation that raced it (even
        // one that gave up waiting for us) is seen here
        let copied = peer.put(off, msg.payload, None) && peer.live();
        Ok(self.with(|st| {
            st.rma.own_segment.copying.retain(|a| *a != to);
            if !copied {
                if let Some(e) = st.table.get_mut(dest) {
                    e.outstanding = e.outstanding.saturating_sub(1);
                }
                let now = st.clock.now();
                st.rma.shared.forget(now, to, SEGMENT_REGION);
                return false;
            }
            let t = trailer(n, peer.mapped_state(), pid, secret);
            st.send_marked_long(dest, to, tag, msg, INPLACE_FLAG, &t);
            st.rma.shared.counts[0] += 1;
            true
        }))
    }
}

impl EpState {
    /// Sends long request `msg` to `to` (translation index `dest`, whose
    /// credit the caller took; tag `tag`) marked `flag`, its payload
    /// `trailer` instead of its bytes, which are already where the flag
    /// says (here, in place; `xfer_staged.rs`, staged): a request waiting
    /// for its reply, counted as a long request of `msg`'s length.
    pub(in crate::am) fn send_marked_long(
        &mut self,
        dest: u32,
        to: std::net::SocketAddr,
        tag: u64,
        msg: &Message<'_>,
        flag: u8,
        trailer: &[u8],
    ) {
        let txn = self.take_txn_id() as u32;
        let mut meta = msg.meta(txn, tag);
        meta.status = flag;
        let payload = self.proto.payload_buffer(trailer);
        let now = self.clock.now().max(self.last_pump);
        self.send_message(now, to, CHANNEL_REQUEST, meta, payload);
        self.outstanding
            .insert(txn, Outstanding::new(dest, to, now, meta));
        let c = Category::Long.index();
        self.stats.requests_sent[c] += 1;
        self.stats.request_data_bytes_sent[c] += msg.payload.len() as u64;
    }

    /// A long request marked `INPLACE_FLAG` from `from`, being dispatched:
    /// our segment and the length when its bytes are in place there (its
    /// handler runs now), None when it was refused (reported to the
    /// sender; no handler runs).
    pub(in crate::am) fn inplace_arrived(
        &mut self,
        from: std::net::SocketAddr,
        meta: &MsgMeta,
        payload: &[u8],
        now: Instant,
    ) -> Option<(Arc<dyn SegmentMemory>, usize)> {
        let Some((n, state, pid, secret)) = parse(meta, payload) else {
            self.send_returned(now, from, *meta, ReturnStatus::BadArgs, true);
            return None;
        };
        // only a process on this host that reads our ring's file
        if !self.transports.ring_from(from, pid, secret) {
            self.stats.corrupt_dropped += 1;
            self.send_returned(now, from, *meta, ReturnStatus::BadArgs, true);
            return None;
        }
        let current = self.rma.own_segment.mem.as_ref().and_then(|r| r.state());
        if current != Some(state) {
            // copied into a segment since replaced (or never ours)
            self.send_returned(now, from, *meta, ReturnStatus::BadSegOff, true);
            return None;
        }
        let Ok(len) = usize::try_from(n) else {
            self.send_returned(now, from, *meta, ReturnStatus::BadLength, true);
            return None;
        };
        let source = self.table.index_of(&from);
        match self.admit_parts().admit(source, meta, len, true) {
            Ok(Admitted::Long(seg)) => Some((seg, len)),
            Ok(_) => None, // (a long request is admitted as one)
            Err(status) => {
                self.send_returned(now, from, *meta, status, true);
                None
            }
        }
    }
}
