//! Long requests to a same-host peer through a staging area: one memcpy
//! by the sender into memory both map, one by the target into its
//! segment when it dispatches the request (issue 39: a segment of the
//! user's own memory, `AM_SetSeg`, which no peer can map; the direct path,
//! `xfer_direct.rs`, copies it across processes and waits for the
//! target, six hand-overs per message).
//!
//! The area: a region (`sys/shm_region.rs`, a sealed memfd) the target
//! allocates for one peer when that peer asks for region
//! `STAGING_REGION` by the regions' handover (`rma_shared.rs`: only a
//! process reading one of our rings, of our table, with a tag we
//! accept). Its data: [`CONSUMED`, a 64-bit word][pad to `HEADER`][a ring
//! of `RING` bytes]. Positions count bytes staged since the area was
//! made; a message at position p lies at `HEADER + p % RING`, whole (one
//! that would wrap starts at the next turn instead), p a multiple of 64.
//!
//! Sender (`try_xfer_staged`): a long request of `STAGED_MIN` to
//! `STAGED_MAX` bytes to a peer whose area we have mapped, not inside a
//! handler, with a credit free and room in the ring (the target's
//! `CONSUMED` at most `RING` bytes behind the message's end): the bytes
//! copied into the ring, then the request sent as any other, in its place
//! on the request channel, with the flag `STAGED_FLAG` and no payload but
//! a trailer (position, length, the area's state, our ring's pid and
//! secret). The call returns then: the caller's buffer is free (AM-2), and
//! the next message is copied while the target copies this one. No room
//! (the target is behind): the call polls until there is, as it would for
//! a credit; once none of our staged requests to it is unanswered (the
//! target takes each one's bytes before it answers: it died, or lies), the
//! area is dropped and the usual path sends. One thread copies into an
//! area at a time (another waits), so positions reach the target in order.
//! A new mapping starts where the target's `CONSUMED` is, and only with
//! none of our staged requests to it unanswered.
//!
//! Sizes (GASNet's testbulk over shm into its malloc'd segment, 6 rounds
//! alternated with the direct path and AMUDP, medians, MB/s, a ring of
//! 256 KiB, messages packed): 32 KiB 2974 -> 5456 (AMUDP 2121), 65,000
//! bytes 4796 -> 7585 (AMUDP 3246). Then 12 rounds alternated at 65,000
//! bytes: each message on its own lines and a ring of 512 KiB, medians
//! 4358 -> 5010 (higher in 11 of 12); 256 -> 512 KiB, both aligned, 6560
//! -> 7255 (higher in 9 of 12). 1 MiB staged through a ring of 4 MiB was
//! slower than the direct path (3.9-8.1 against 10.0-12.0 GB/s, 3 runs):
//! above `STAGED_MAX` the direct path sends.
//!
//! Target (`staged_arrived`): only from the process reading our ring's
//! file (pid, secret), naming the area we keep for that peer as it is
//! now (else EBADSEGOFF: an area replaced since), a message inside the
//! ring; `admit` checks offset + length against our segment as for any
//! long request; then the copy into the segment, `CONSUMED` moved past
//! it (a release store: the sender may reuse the bytes), and the handler
//! runs once with buf = segment + offset. A request refused also moves
//! `CONSUMED`: its bytes are not needed. Credits, replies and returned
//! messages are those of any request; a returned one carries no payload.
//!
//! What a peer can do with its area: write into it (its own bytes, as in
//! any request it sends) and say where its bytes are (checked against the
//! ring); it can make its own sends wait (a `CONSUMED` behind), not ours.
//! A `CONSUMED` ahead of what we staged is not believed: the area is
//! dropped and asked for again.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::am::endpoint::core::{Endpoint, EpState};
use crate::am::handler::args::SegmentMemory;
use crate::am::handler::message::{Message, STAGED_FLAG};
use crate::am::messages::returned::Admitted;
use crate::am::state::outstanding::Outstanding;
use crate::am::state::region::{REGION_READ, REGION_WRITE, STAGING_REGION};
use crate::am::state::rma::StagedTo;
use crate::error::{Error, Result, ReturnStatus};
use crate::sys::{OwnedRegion, PeerRegion};
use crate::time::Instant;
use crate::wire::{Category, MsgMeta};

/// The ring's bytes in an area.
pub(in crate::am) const RING: u64 = 512 << 10;
/// Where the ring starts in the area's data (`CONSUMED` before it).
pub(in crate::am) const HEADER: usize = 4096;
/// The data offset of the target's `CONSUMED` word: the position up to
/// which it has taken the bytes.
pub(in crate::am) const CONSUMED: usize = 0;
/// The area's data length.
pub(in crate::am) const AREA: usize = HEADER + RING as usize;
/// The smallest long request staged (below it, the ring's chunks).
pub(in crate::am) const STAGED_MIN: u64 = 32 << 10;
/// The largest (above it the direct path; at least four in the ring).
pub(in crate::am) const STAGED_MAX: u64 = 128 << 10;
/// Each message starts on a cache line of its own: the sender's first
/// line of one is never the line the target reads last of the one before.
const ALIGN: u64 = 64;
/// The trailer: position, length, the area's state, pid, secret.
const TRAILER: usize = 36;

pub(in crate::am) fn trailer(pos: u64, n: u64, state: u64, pid: u32, secret: u64) -> Vec<u8> {
    let mut b = Vec::with_capacity(TRAILER);
    b.extend_from_slice(&pos.to_le_bytes());
    b.extend_from_slice(&n.to_le_bytes());
    b.extend_from_slice(&state.to_le_bytes());
    b.extend_from_slice(&pid.to_le_bytes());
    b.extend_from_slice(&secret.to_le_bytes());
    b
}

/// (position, length, state, pid, secret) of a staged request's trailer.
fn parse(meta: &MsgMeta, b: &[u8]) -> Option<(u64, u64, u64, u32, u64)> {
    if b.len() != TRAILER || meta.category != Category::Long || meta.status != STAGED_FLAG {
        return None;
    }
    let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
    let pid = u32::from_le_bytes(b[24..28].try_into().unwrap());
    Some((u64_at(0), u64_at(8), u64_at(16), pid, u64_at(28)))
}

/// Where a message of `n` bytes goes in a ring whose next free position is
/// `head`: its position, on a line of its own (at the next turn when it
/// would wrap).
pub(in crate::am) fn place(head: u64, n: u64) -> u64 {
    let head = head.next_multiple_of(ALIGN);
    let off = head % RING;
    if off + n > RING {
        head + (RING - off)
    } else {
        head
    }
}

enum Step {
    /// The usual way.
    No,
    /// A credit, room in the ring, or another thread's copy to wait for.
    Wait,
    /// Room reserved, a credit taken: (area, peer, its tag, position, our
    /// ring's pid, secret).
    Go(Arc<PeerRegion>, SocketAddr, u64, u64, u32, u64),
}

impl Endpoint {
    /// Tries to send long request `msg` to `dest` through the peer's
    /// staging area: true when sent so, false when another path must send
    /// it. `nonblocking`: InUse when it would wait.
    pub(in crate::am) fn try_xfer_staged(
        self: &Arc<Self>,
        dest: u32,
        msg: &Message<'_>,
        nonblocking: bool,
    ) -> Result<bool> {
        let n = msg.payload.len() as u64;
        if msg.category != Category::Long || !(STAGED_MIN..=STAGED_MAX).contains(&n) {
            return Ok(false);
        }
        if msg.dest_offset.checked_add(n).is_none() {
            return Ok(false);
        }
        let me = self.addr();
        let mut rounds = 0;
        let mut waited = false;
        let (area, to, tag, pos, pid, secret) = loop {
            match self.with(|st| st.stage(dest, n, me)) {
                Step::No => return Ok(false),
                Step::Go(a, to, tag, pos, pid, secret) => break (a, to, tag, pos, pid, secret),
                Step::Wait if nonblocking => {
                    return Err(Error::InUse("no send credit or staging room free"))
                }
                Step::Wait => {
                    if !waited {
                        waited = true;
                        self.with(|st| st.rma.staged.counts[2] += 1);
                    }
                    self.wait_round(&mut rounds, || false)?;
                }
            }
        };
        let off = HEADER + (pos % RING) as usize;
        // (the state again after the copy: a revocation that raced it)
        let copied = area.put(off, msg.payload, None) && area.live();
        Ok(self.with(|st| {
            let ours = st.rma.staged.to.get_mut(&to);
            let ours = ours.filter(|t| Arc::ptr_eq(&t.area, &area));
            if let Some(t) = ours {
                t.copying = false;
            }
            if !copied {
                if let Some(e) = st.table.get_mut(dest) {
                    e.outstanding = e.outstanding.saturating_sub(1);
                }
                st.drop_staging(to);
                return false;
            }
            let t = trailer(pos, n, area.mapped_state(), pid, secret);
            st.send_marked_long(dest, to, tag, msg, STAGED_FLAG, &t);
            st.rma.staged.counts[0] += 1;
            true
        }))
    }

    /// Staging areas: [requests we sent staged, staged requests we copied
    /// as a target, sends that waited for room] (tests, diagnostics).
    pub fn staged_counts(&self) -> [u64; 3] {
        self.with(|s| s.rma.staged.counts)
    }
}

impl EpState {
    /// One look at whether long request of `n` bytes to `dest` can be
    /// staged now; when it can, its room and credit are taken.
    fn stage(&mut self, dest: u32, n: u64, me: SocketAddr) -> Step {
        if self.dispatch_nesting > 0 || self.rma.staged.off {
            return Step::No;
        }
        let Some(depth) = self.depth else {
            return Step::No;
        };
        let Some((area, to)) = self.shared_mapping(dest, STAGING_REGION, me) else {
            return Step::No;
        };
        let Some((pid, secret)) = self.transports.ring_to(to) else {
            return Step::No;
        };
        // (an area of another layout is not ours to use)
        if !area.writable() || area.len() != AREA {
            self.drop_staging(to);
            return Step::No;
        }
        let known = self.rma.staged.to.get(&to);
        if known.is_none_or(|t| !Arc::ptr_eq(&t.area, &area)) {
            // a new mapping (maybe of an area we staged into before) starts
            // where the target is, and only with no staged request of ours
            // to it unanswered: no byte it may still copy is overwritten
            if self.staged_unanswered(to) {
                return Step::No;
            }
            let Some(head) = area.load_u64(CONSUMED) else {
                return Step::No;
            };
            let t = StagedTo {
                area: area.clone(),
                head,
                copying: false,
            };
            self.rma.staged.to.insert(to, t);
        }
        let t = self.rma.staged.to.get_mut(&to).expect("entered above");
        if t.copying {
            return Step::Wait;
        }
        let Some(consumed) = area.load_u64(CONSUMED).filter(|c| *c <= t.head) else {
            // the target says it took what we never staged: not believed
            self.drop_staging(to);
            return Step::No;
        };
        let pos = place(t.head, n);
        if pos + n - consumed > RING {
            // the target takes each staged request's bytes before it
            // answers: with none of ours unanswered, what it has not taken
            // it never will (it died, or lies): not waited for
            if !self.staged_unanswered(to) {
                self.drop_staging(to);
                return Step::No;
            }
            return Step::Wait;
        }
        let Some(e) = self.table.get_mut(dest) else {
            return Step::No;
        };
        if e.outstanding >= depth {
            return Step::Wait;
        }
        e.outstanding += 1;
        let tag = e.tag;
        let t = self.rma.staged.to.get_mut(&to).expect("entered above");
        t.head = pos + n;
        t.copying = true;
        Step::Go(area, to, tag, pos, pid, secret)
    }

    /// Whether a staged request of ours to `to` waits for its answer.
    fn staged_unanswered(&self, to: SocketAddr) -> bool {
        let staged = |o: &Outstanding| o.addr == to && o.meta.status == STAGED_FLAG;
        self.outstanding.values().any(staged)
    }

    /// Forgets the area of `to` (asked for again after a while).
    fn drop_staging(&mut self, to: SocketAddr) {
        self.rma.staged.to.remove(&to);
        let now = self.clock.now();
        self.rma.shared.forget(now, to, STAGING_REGION);
    }

    /// The area for `from`, which asked for one from its ring (`pid`,
    /// `secret`; `rma_shared.rs`'s answer, all checked there), and its
    /// rights: the one it has when it asks again from the same ring (its
    /// requests on their way keep their bytes), else a new one, of a
    /// generation of its own (a request staged into the one it replaces is
    /// refused, not read from the new one).
    pub(in crate::am) fn staging_for(
        &mut self,
        from: SocketAddr,
        pid: u32,
        secret: u64,
    ) -> Option<(Arc<OwnedRegion>, u32)> {
        let s = &mut self.rma.staged;
        if s.off {
            return None;
        }
        let r = match s.from.get(&from) {
            Some((r, p, k)) if (*p, *k) == (pid, secret) && r.state().is_some() => r.clone(),
            _ => {
                let g = s.last_gen + 1;
                let r = Arc::new(OwnedRegion::with_generation(AREA, g).ok()?);
                s.last_gen = g;
                s.from.insert(from, (r.clone(), pid, secret));
                r
            }
        };
        Some((r, REGION_READ | REGION_WRITE))
    }

    /// A long request marked `STAGED_FLAG` from `from`, being dispatched:
    /// our segment and the length once its bytes are copied there (its
    /// handler runs now), None when it was refused (reported to the
    /// sender; no handler runs).
    pub(in crate::am) fn staged_arrived(
        &mut self,
        from: SocketAddr,
        meta: &MsgMeta,
        payload: &[u8],
        now: Instant,
    ) -> Option<(Arc<dyn SegmentMemory>, usize)> {
        let Some((pos, n, state, pid, secret)) = parse(meta, payload) else {
            self.send_returned(now, from, *meta, ReturnStatus::BadArgs, true);
            return None;
        };
        // only a process on this host that reads our ring's file
        if !self.transports.ring_from(from, pid, secret) {
            self.stats.corrupt_dropped += 1;
            self.send_returned(now, from, *meta, ReturnStatus::BadArgs, true);
            return None;
        }
        let area = self.rma.staged.from.get(&from).map(|f| f.0.clone());
        let Some(area) = area.filter(|a| a.state() == Some(state)) else {
            // staged into an area since replaced (or never this peer's)
            self.send_returned(now, from, *meta, ReturnStatus::BadSegOff, true);
            return None;
        };
        let off = pos % RING;
        let inside = n <= STAGED_MAX && off + n <= RING && pos.checked_add(n).is_some();
        let source = self.table.index_of(&from);
        let got = match inside {
            false => Err(ReturnStatus::BadLength),
            true => self.admit_parts().admit(source, meta, n as usize, true),
        };
        let got = match got {
            Ok(Admitted::Long(seg)) => {
                let (at, len, dst) = (HEADER + off as usize, n as usize, meta.dest_offset);
                let mut copied = false;
                let lent = seg.fill_with(dst as usize, len, &mut |d| copied = area.read(at, d));
                if !lent {
                    let mut tmp = vec![0u8; len];
                    copied = area.read(at, &mut tmp);
                    seg.write(dst as usize, &tmp);
                }
                if copied {
                    self.rma.staged.counts[1] += 1;
                    Some((seg, len))
                } else {
                    // (our own area, kept alive by us: cannot happen)
                    self.send_returned(now, from, *meta, ReturnStatus::BadSegOff, true);
                    None
                }
            }
            Ok(_) => None, // (a long request is admitted as one)
            Err(status) => {
                self.send_returned(now, from, *meta, status, true);
                None
            }
        };
        // the bytes are taken (or not needed): the sender may reuse them
        if inside {
            area.store_u64(CONSUMED, pos + n);
        }
        got
    }

    /// Drops the areas of peers whose ring to us is gone (no request
    /// staged there could be taken any more) and our places in areas of
    /// peers no ring of ours reaches (from the regions' sweep,
    /// `rma_shared.rs`).
    pub(in crate::am) fn sweep_staging(&mut self) {
        let transports = &self.transports;
        let s = &mut self.rma.staged;
        s.from
            .retain(|peer, (_, pid, secret)| transports.ring_from(*peer, *pid, *secret));
        s.to.retain(|peer, _| transports.ring_to(*peer).is_some());
    }
}
