//! Regions ramp allocates (`Endpoint::alloc_region`), which same-host
//! peers map and put into or get from with one memcpy
//! (docs/rma-shm-design.md section 2). The memory and its control page
//! (the Dekker pair with which deregistration revokes) are in
//! `sys/shm_region.rs`; this file holds the handover and the cache.
//!
//! Handover: an initiator that puts or gets to a region of a peer it
//! reaches through a shared-memory ring asks for the region's file once,
//! on the ring set-up's Unix socket (`net/shm.rs` carries the bytes:
//! only between processes of one user, each from the socket of the
//! address it names): region id, the tag it would use, its ring slot's
//! pid and secret. The owner answers with the file's descriptor only when
//! that slot is one of its rings' (so the asker reads its ring file: a
//! process on this host of its user), the tag is accepted and the region
//! grants reading; a read-only descriptor (reopened through /proc) when it
//! does not grant writing. The initiator maps it only sealed, of a sane
//! size, live (`PeerRegion::map`), and keeps it per (peer, region) while
//! a ring reaches the peer and the region is live. Meanwhile, and on any
//! failure, operations go the usual way (`rma_direct.rs`, chunks), where
//! the owner decides.
//!
//! An operation through the mapping: the bounds are checked against our
//! own mapping's length (EBADSEGOFF at once, nothing touched), then the
//! copy (a put's notification word after its bytes, a release store). A
//! put is complete when the call returns, so a later AM request to the
//! peer (pushed after it into the ring) runs after its bytes are there.

use std::net::SocketAddr;
use std::sync::Arc;

use super::rma_direct::DirectIssue;
use crate::am::endpoint::core::{Endpoint, EpState};
use crate::am::handler::args::SegmentMemory;
use crate::am::handler::tables::tag_accepts;
use crate::am::state::region::{REGION_READ, REGION_WRITE};
use crate::am::state::rma::Cached;
use crate::am::state::rma::Direct;
use crate::am::state::rma::SharedCache;
use crate::am::state::rma::{Op, RmaState};
use crate::error::{Error, Result, ReturnStatus};
use crate::net::RegionMsg;
use crate::sys::{OwnedRegion, PeerRegion, MAX_REGION};
use crate::time::{Instant, MILLIS};
use crate::wire::MsgKind;

/// How long an ask waits for its answer, and a refusal is believed,
/// before the next operation asks again.
const RETRY: u64 = 1000 * MILLIS;
/// The same for a peer's segment whose file could not be mapped (it may
/// have been replaced since the answer: the next one is live).
const SEGMENT_RETRY: u64 = MILLIS;
/// Peers' regions remembered at most (mapped or not).
const MAX_CACHED: usize = 256;
/// How often mappings of peers gone or of regions revoked are dropped.
const SWEEP: u64 = 200 * MILLIS;
/// How long deregistration waits for peers inside a copy.
const REVOKE_WAIT: std::time::Duration = std::time::Duration::from_millis(10);
const ASK: u8 = 1;
pub(in crate::am) const ANSWER: u8 = 2;

/// The owner's memory of an allocated region, as the registry sees it.
pub(in crate::am) struct SharedMem(pub(in crate::am) Arc<OwnedRegion>);

impl SegmentMemory for SharedMem {
    fn base(&self) -> usize {
        self.0.base()
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn write(&self, off: usize, data: &[u8]) {
        self.0.write(off, data);
    }
    fn read_into(&self, off: usize, len: usize, out: &mut Vec<u8>) {
        let at = out.len();
        out.resize(at + len, 0);
        self.0.read(off, &mut out[at..]);
    }
    fn write_word(&self, off: usize, v: u32) {
        self.0.write_word(off, v);
    }
    fn fill_from_process(
        &self,
        off: usize,
        len: usize,
        pid: u32,
        remote: usize,
    ) -> std::io::Result<()> {
        self.0.fill_from_process(off, len, pid, remote)
    }
    fn copy_to_process(
        &self,
        off: usize,
        len: usize,
        pid: u32,
        remote: usize,
    ) -> std::io::Result<()> {
        self.0.copy_to_process(off, len, pid, remote)
    }
}

pub(in crate::am) fn ask_body(region: u32, tag: u64, pid: u32, secret: u64) -> Vec<u8> {
    let mut b = vec![ASK];
    b.extend_from_slice(&region.to_le_bytes());
    b.extend_from_slice(&tag.to_le_bytes());
    b.extend_from_slice(&pid.to_le_bytes());
    b.extend_from_slice(&secret.to_le_bytes());
    b
}

fn parse_ask(b: &[u8]) -> Option<(u32, u64, u32, u64)> {
    if b.len() != 25 || b[0] != ASK {
        return None;
    }
    let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
    let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
    Some((u32_at(1), u64_at(5), u32_at(13), u64_at(17)))
}

impl Endpoint {
    /// Allocates `len` bytes (rounded up to pages, zeroed) and registers
    /// them as a region with `access`, as `register_region` does; same-host
    /// peers may also map them. Returns (region id, address, length); the
    /// memory goes with `deregister_region` (the address is invalid then).
    pub fn alloc_region(&self, len: usize, access: u32) -> Result<(u32, usize, usize)> {
        if len == 0 || len > MAX_REGION {
            return Err(Error::BadArg("region length is 0 or too large"));
        }
        if access == 0 || access & !(REGION_READ | REGION_WRITE) != 0 {
            return Err(Error::BadArg(
                "access must be RAMP_REGION_READ, RAMP_REGION_WRITE or both",
            ));
        }
        let r = OwnedRegion::new(len)
            .map(Arc::new)
            .map_err(|_| Error::Resource("cannot allocate shared memory"))?;
        let (base, len) = (r.base(), r.len());
        let mem = Arc::new(SharedMem(r.clone()));
        let id = self.with(|s| s.rma.regions.register_shared(mem, access, r))?;
        Ok((id, base, len))
    }

    /// [operations done through a mapping of a peer's region, mappings
    /// made, region files handed to peers, mappings held now] (tests,
    /// diagnostics).
    pub fn rma_shared_counts(&self) -> [u64; 4] {
        self.with(|s| {
            let [a, b, c] = s.rma.shared.counts;
            let held = s.rma.shared.map.values();
            let held = held.filter(|c| matches!(c, Cached::Mapped(_))).count();
            [a, b, c, held as u64]
        })
    }

    /// Tries a put or get through a mapping of the peer's region: Some
    /// when done (well, or refused locally), None when it must go the
    /// usual way (no mapping yet: asked for now, or it failed).
    pub(in crate::am) fn try_shared(self: &Arc<Self>, o: &DirectIssue<'_>) -> Option<Result<u64>> {
        if o.region == crate::am::state::region::SEGMENT_REGION {
            return None;
        }
        let (peer, addr) = self.with(|st| {
            // no room for its handle: the usual way refuses it
            if o.keep && st.rma.ops.len() >= crate::am::state::rma::MAX_OPS {
                return None;
            }
            st.shared_mapping(o.dest, o.region, self.addr())
        })?;
        let total = o.dst.as_ref().map_or(o.src.len(), |d| d.len());
        let inside = |off: u64, n: usize| {
            off.checked_add(n as u64)
                .is_some_and(|e| e <= peer.len() as u64)
        };
        let bad = !inside(o.offset, total)
            || o.notify.is_some_and(|(f, _)| !inside(f, 4))
            || (o.kind == MsgKind::Put && !peer.writable());
        if bad {
            // what the owner would answer, found without asking it
            return Some(self.with(|st| {
                st.rma
                    .born_done(addr, Some(ReturnStatus::BadSegOff), o.keep)
            }));
        }
        let off = o.offset as usize;
        let done = match &o.dst {
            None => peer.put(off, o.src, o.notify.map(|(f, v)| (f as usize, v))),
            Some(dst) => {
                let mut ok = false;
                let lent = dst.fill_with(0, total, &mut |s: &mut [u8]| ok = peer.get(off, s));
                if !lent {
                    let mut tmp = vec![0u8; total];
                    ok = peer.get(off, &mut tmp);
                    if ok {
                        dst.write(0, &tmp);
                    }
                }
                ok
            }
        };
        if !done {
            // revoked (or it changed): the owner decides the usual way
            self.with(|st| {
                let now = st.clock.now();
                st.rma.shared.forget(now, addr, o.region)
            });
            return None;
        }
        Some(self.with(|st| {
            st.rma.shared.counts[0] += 1;
            st.rma.born_done(addr, None, o.keep)
        }))
    }

    /// Deregisters region `id`; an allocated one is revoked from peers
    /// and its memory unmapped (under the endpoint's lock).
    pub(in crate::am) fn deregister_any(&self, id: u32) -> Result<()> {
        self.with(|s| {
            if let Some(r) = s.rma.regions.deregister(id)? {
                r.revoke(REVOKE_WAIT);
            }
            Ok(())
        })
    }
}

impl SharedCache {
    pub(in crate::am) fn forget(&mut self, now: Instant, peer: SocketAddr, region: u32) {
        self.map
            .insert((peer, region), Cached::Not(now.plus(RETRY)));
    }
}

impl RmaState {
    /// Makes every peer's mapping of our allocated regions stale (a new
    /// generation, still live): their next operation asks again.
    pub(crate) fn reshare_regions(&mut self) {
        self.regions.each_shared(|r| r.reshare());
        self.own_segment.reshare();
    }

    /// An operation complete at once with `status`: its handle (`keep`),
    /// else 0 (a failure remembered for `fence`).
    pub(in crate::am) fn born_done(
        &mut self,
        peer: SocketAddr,
        status: Option<ReturnStatus>,
        keep: bool,
    ) -> Result<u64> {
        if !keep {
            self.fence_failed |= status.is_some();
            return Ok(0);
        }
        if self.ops.len() >= crate::am::state::rma::MAX_OPS {
            // (only when other threads filled the room meanwhile)
            return Err(Error::Resource(
                "too many remote memory operations unfinished",
            ));
        }
        let (id, handle) = self.next_id();
        self.ops.insert(
            id,
            Op {
                handle,
                peer,
                waiting: vec![0],
                remaining: 0,
                total: 0,
                status,
                kept: true,
                fenced: false,
                dst: None,
                direct: Direct::No,
                redo: None,
            },
        );
        Ok(handle)
    }
}

impl EpState {
    /// The mapping of region `region` of the peer at index `dest` if we
    /// have a live one; else asks for it (when a ring reaches the peer and
    /// no ask is pending) and None.
    pub(in crate::am) fn shared_mapping(
        &mut self,
        dest: u32,
        region: u32,
        me: SocketAddr,
    ) -> Option<(Arc<PeerRegion>, SocketAddr)> {
        self.depth?;
        let entry = self.table.mapped_entry(dest)?;
        let (addr, tag) = (entry.addr, entry.tag);
        if addr == me {
            return None;
        }
        let key = (addr, region);
        let Some((pid, secret)) = self.transports.ring_to(addr) else {
            // the peer is gone or not on this host: nothing of it is used
            if self.rma.shared.map.remove(&key).is_some() {
                self.rma.shared.map.retain(|k, _| k.0 != addr);
            }
            return None;
        };
        let now = self.clock.now();
        match self.rma.shared.map.get(&key) {
            Some(Cached::Mapped(p)) if p.live() => return Some((p.clone(), addr)),
            Some(Cached::Not(until)) if now < *until => return None,
            _ => {}
        }
        let cache = &mut self.rma.shared.map;
        if cache.len() >= MAX_CACHED {
            cache.retain(|_, c| matches!(c, Cached::Mapped(p) if p.live()));
            if cache.len() >= MAX_CACHED {
                cache.clear();
            }
        }
        cache.insert(key, Cached::Not(now.plus(RETRY)));
        self.transports
            .region_send(addr, &ask_body(region, tag, pid, secret), None);
        None
    }

    /// Answers peers' asks for region files, maps the files answered to
    /// ours, and now and then drops the mappings of peers gone or regions
    /// revoked (from every pump of the endpoint: `driver.rs`).
    pub(in crate::am) fn serve_regions(&mut self, now: Instant) {
        if self.transports.region_look_due(now) {
            let (msgs, dropped) = self.transports.region_take(now);
            // refused by the transport (`net/shm_setup.rs`)
            self.stats.corrupt_dropped += dropped;
            for m in msgs {
                self.region_msg(m);
            }
        }
        let staging = !self.rma.staged.from.is_empty() || !self.rma.staged.to.is_empty();
        if (staging || !self.rma.shared.map.is_empty()) && now >= self.rma.shared.next_sweep {
            self.rma.shared.next_sweep = now.plus(SWEEP);
            self.sweep_staging();
            // a dead peer's file would live on in our mappings
            let transports = &self.transports;
            self.rma.shared.map.retain(|(peer, _), c| match c {
                Cached::Mapped(p) => p.live() && transports.ring_to(*peer).is_some(),
                Cached::Not(until) => now < *until,
            });
        }
    }

    /// One region message: an ask answered, or an answer's file mapped.
    pub(in crate::am) fn region_msg(&mut self, m: RegionMsg) {
        match m.body.first() {
            Some(&ASK) => self.answer_ask(m.from, &m.body),
            Some(&ANSWER) if m.body.len() == 5 => {
                let region = u32::from_le_bytes(m.body[1..5].try_into().unwrap());
                let key = (m.from, region);
                // only what we asked for and still wait for
                if !matches!(self.rma.shared.map.get(&key), Some(Cached::Not(_))) {
                    return;
                }
                let had_file = m.fd.is_some();
                let now = self.clock.now();
                match m.fd.and_then(|fd| PeerRegion::map(fd).ok()) {
                    Some(p) => {
                        self.rma.shared.counts[1] += 1;
                        self.rma.shared.map.insert(key, Cached::Mapped(Arc::new(p)));
                    }
                    // a segment replaced between the answer and now (region
                    // ids are never reused, a segment is): asked again soon;
                    // no file at all (user memory) is believed a second
                    None if had_file && region == crate::am::state::region::SEGMENT_REGION => {
                        let soon = now.plus(SEGMENT_RETRY);
                        self.rma.shared.map.insert(key, Cached::Not(soon));
                    }
                    None => {}
                }
            }
            // not a region message: dropped (a descriptor is closed), counted
            _ => self.stats.corrupt_dropped += 1,
        }
    }

    pub(in crate::am) fn answer_ask(&mut self, from: SocketAddr, body: &[u8]) {
        let Some((region, tag, pid, secret)) = parse_ask(body) else {
            self.stats.corrupt_dropped += 1;
            return;
        };
        let mut answer = vec![ANSWER];
        answer.extend_from_slice(&region.to_le_bytes());
        let ok = self.table.index_of(&from).is_some()
            && tag_accepts(self.tag, tag)
            && self.transports.ring_from(from, pid, secret);
        let rw = REGION_READ | REGION_WRITE;
        let fd = match region {
            _ if !ok => None,
            // region 0: our segment when ramp allocated it (`xfer_shared.rs`)
            crate::am::state::region::SEGMENT_REGION => {
                self.rma.own_segment.mem.clone().map(|r| (r, rw))
            }
            // the staging area we keep for it (`xfer_staged.rs`)
            crate::am::state::region::STAGING_REGION => self.staging_for(from, pid, secret),
            _ => self.rma.regions.shared(region),
        };
        let fd = fd
            .filter(|(_, access)| access & REGION_READ != 0)
            .and_then(|(r, access)| r.fd_for_peer(access & REGION_WRITE != 0).ok());
        let sent = self.transports.region_send(
            from,
            &answer,
            fd.as_ref().map(std::os::fd::AsRawFd::as_raw_fd),
        );
        if sent && fd.is_some() {
            self.rma.shared.counts[2] += 1;
        }
    }
}

#[cfg(test)]
#[path = "rma_shared_tests.rs"]
mod tests;
