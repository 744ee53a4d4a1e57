//! Remote memory on the wire and at the target: the chunk header, the
//! performing of puts and gets (no handler runs), and the remote memory
//! events the in-order draining (`messages/drain.rs`) hands over.
//!
//! Wire (kinds of `wire::MsgKind`): a put or get is cut into chunks of at
//! most [`CHUNK`] bytes; each chunk is one message on the request channel
//! (`Put` with its bytes, `Get` without), `txn` the operation's id,
//! `dest_offset` the chunk's offset in the region, and 11 arguments:
//!
//! | arg | meaning |
//! |---|---|
//! | 0 | region id |
//! | 1 | flags: bit 0 = put with a notification word |
//! | 2, 3 | the operation's offset in the region (low, high 32 bits) |
//! | 4, 5 | the operation's length (low, high) |
//! | 6 | chunk index |
//! | 7 | chunk length |
//! | 8, 9 | notification word's offset (low, high) |
//! | 10 | notification value |
//!
//! The target checks every field (the whole operation's range, not just the
//! chunk's, so a refused operation writes nothing) and answers each chunk on
//! the reply channel: `RmaDone` (put) or `GetReply` (get, with the bytes),
//! `txn` echoed, argument 0 the chunk index, `status` 0 or the AM-2
//! return-status code.
//!
//! Ordering: the request channel delivers in order. Each pump of the network
//! drains the protocol's events in order into the endpoint's queue of AM
//! messages (`queue/incoming.rs`), handing remote memory messages here as
//! they come out: a put is therefore performed before any AM request sent
//! after it on the same channel can run its handler (handlers take messages
//! from that queue only).

use std::net::SocketAddr;

use crate::am::endpoint::core::EpState;
use crate::am::handler::tables::tag_accepts;
use crate::error::ReturnStatus;
use crate::proto::{Event, FailReason};
use crate::time::Instant;
use crate::wire::{Category, MsgKind, MsgMeta, CHANNEL_REPLY, CHANNEL_REQUEST};

/// The largest chunk of a put or get (below the protocol's `MAX_MESSAGE`,
/// so that several chunks of a large operation are in flight at once):
/// 255 KiB, four datagrams of the largest size exactly (a chunk's payload
/// per datagram is 65,391 bytes under CRC32C, 65,367 under the packet
/// MAC). With 256 KiB each chunk took a fifth datagram for its last ~600
/// bytes, which costs each end nearly as much as a full one but for the
/// copy (issue 9: a 1 MiB put went in 20 datagrams, now 17).
pub const CHUNK: usize = 4 * 65280;
/// Fragments queued or in flight to a peer beyond which its puts and gets
/// wait (are not performed, nor anything behind them drained) until they
/// drain: a peer asking for gets faster than it takes the answers makes
/// the target hold at most this much for it, and its requests back up into
/// the protocol's receive buffer, which refuses more.
pub(in crate::am) const MAX_BACKLOG: usize = 1024;
/// Answers to a peer queued behind the window (not yet sent) beyond which
/// its puts and gets wait likewise: a get's bytes are then read from the
/// region just before they go, not megabytes ahead into buffers that have
/// left the cache (or were never touched: fresh pages).
pub(in crate::am) const ANSWER_BACKLOG: usize = 8;
pub(in crate::am) const FLAG_NOTIFY: u32 = 1;
const NARGS: usize = 11;
/// A put or get request from a same-host peer may be, instead of a chunk,
/// a descriptor (`rma_direct.rs`): 16 arguments, this flag in argument 1.
pub(in crate::am) const FLAG_DIRECT: u32 = 2;
const DESC_NARGS: usize = 16;

/// One chunk's header (the arguments above).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::am) struct Chunk {
    pub region: u32,
    pub notify: Option<(u64, u32)>,
    pub start: u64,
    pub total: u64,
    pub index: u32,
    pub len: u32,
}

fn lo_hi(v: u64) -> (u32, u32) {
    (v as u32, (v >> 32) as u32)
}

fn join(lo: u32, hi: u32) -> u64 {
    lo as u64 | (hi as u64) << 32
}

/// Whether `meta` is a descriptor (not a chunk).
pub(in crate::am) fn is_direct(meta: &MsgMeta) -> bool {
    meta.nargs as usize == DESC_NARGS && meta.args[1] & FLAG_DIRECT != 0
}

impl Chunk {
    /// The chunk's offset in the region.
    pub(in crate::am) fn offset(&self) -> u64 {
        self.start + self.index as u64 * CHUNK as u64
    }

    /// How many chunks an operation of `total` bytes has (at least one).
    pub(in crate::am) fn count(total: u64) -> u64 {
        total.div_ceil(CHUNK as u64).max(1)
    }

    pub(in crate::am) fn meta(&self, kind: MsgKind, txn: u32, tag: u64) -> MsgMeta {
        let (s0, s1) = lo_hi(self.start);
        let (t0, t1) = lo_hi(self.total);
        let (flags, (f0, f1), fv) = match self.notify {
            Some((off, v)) => (FLAG_NOTIFY, lo_hi(off), v),
            None => (0, (0, 0), 0),
        };
        let args = [
            self.region,
            flags,
            s0,
            s1,
            t0,
            t1,
            self.index,
            self.len,
            f0,
            f1,
            fv,
        ];
        let cat = if kind == MsgKind::Put {
            Category::Long
        } else {
            Category::Short
        };
        MsgMeta {
            txn,
            tag,
            dest_offset: self.offset(),
            ..MsgMeta::new(kind, cat, 0, &args)
        }
    }

    /// Reads a chunk header from the network; None when it is malformed or
    /// inconsistent (the chunk outside its operation, a bad length).
    pub(in crate::am) fn parse(meta: &MsgMeta) -> Option<Chunk> {
        if meta.nargs as usize != NARGS {
            return None;
        }
        let a = &meta.args;
        let notify = match a[1] {
            0 => None,
            FLAG_NOTIFY => Some((join(a[8], a[9]), a[10])),
            _ => return None,
        };
        let c = Chunk {
            region: a[0],
            notify,
            start: join(a[2], a[3]),
            total: join(a[4], a[5]),
            index: a[6],
            len: a[7],
        };
        let rel = (c.index as u64).checked_mul(CHUNK as u64)?;
        let expect = (c.total - rel.min(c.total)).min(CHUNK as u64);
        if rel >= c.total.max(1) || c.len as u64 != expect {
            return None;
        }
        if c.start.checked_add(c.total).is_none() || meta.dest_offset != c.offset() {
            return None;
        }
        Some(c)
    }

    fn is_last(&self) -> bool {
        self.index as u64 + 1 == Chunk::count(self.total)
    }
}

impl EpState {
    /// A remote memory event the in-order draining took from the
    /// protocol (`messages/drain.rs`): a put or get performed and answered,
    /// an answer taken, or a failure reported to its operation.
    pub(in crate::am) fn rma_event(&mut self, now: Instant, ev: Event<SocketAddr>) {
        match ev {
            Event::Delivered {
                from,
                channel,
                meta,
                payload,
            } => self.rma_delivered(now, from, channel, meta, payload),
            Event::Failed {
                channel,
                meta,
                reason,
                ..
            } => {
                if channel == CHANNEL_REQUEST {
                    let status = match reason {
                        FailReason::PeerUnreachable => ReturnStatus::Unreachable,
                        FailReason::Refused => ReturnStatus::Congestion,
                        FailReason::TooLong => ReturnStatus::BadLength,
                    };
                    let index = if is_direct(&meta) { 0 } else { meta.args[6] };
                    self.chunk_failed(meta.txn, index, status);
                } else {
                    // an answer to a peer that went away: nothing waits here
                    self.stats.returned_messages += 1;
                }
            }
        }
    }

    /// Whether the answers to `from` back up: its puts and gets wait (are
    /// not performed, nor anything behind them drained).
    pub(in crate::am) fn rma_backlogged(&self, from: &SocketAddr) -> bool {
        self.proto.queued_fragments(from, CHANNEL_REPLY) >= ANSWER_BACKLOG
            || self.proto.unfinished_to(from) >= MAX_BACKLOG
    }

    fn rma_delivered(
        &mut self,
        now: Instant,
        from: SocketAddr,
        channel: u8,
        meta: MsgMeta,
        payload: Vec<u8>,
    ) {
        match (channel, meta.kind) {
            (CHANNEL_REQUEST, MsgKind::Put | MsgKind::Get) if is_direct(&meta) => {
                let (status, fall_back) = self.perform_direct(from, &meta, &payload);
                self.proto.recycle(payload);
                let kind = if meta.kind == MsgKind::Put {
                    MsgKind::RmaDone
                } else {
                    MsgKind::GetReply
                };
                let answer = MsgMeta {
                    txn: meta.txn,
                    status: status.map_or(0, |s| s as u8),
                    ..MsgMeta::new(kind, Category::Short, 0, &[0, u32::from(fall_back)])
                };
                self.send_message(now, from, CHANNEL_REPLY, answer, Vec::new());
            }
            (CHANNEL_REQUEST, MsgKind::Put | MsgKind::Get) => {
                let (status, index, data) = self.perform(from, &meta, &payload);
                // the next message lands in the buffer of this one
                self.proto.recycle(payload);
                let kind = if meta.kind == MsgKind::Put {
                    MsgKind::RmaDone
                } else {
                    MsgKind::GetReply
                };
                let cat = if data.is_empty() {
                    Category::Short
                } else {
                    Category::Long
                };
                let answer = MsgMeta {
                    txn: meta.txn,
                    status: status.map_or(0, |s| s as u8),
                    ..MsgMeta::new(kind, cat, 0, &[index])
                };
                self.send_message(now, from, CHANNEL_REPLY, answer, data);
            }
            (CHANNEL_REPLY, MsgKind::RmaDone | MsgKind::GetReply) if meta.nargs == 1 => {
                let status = match meta.status {
                    0 => None,
                    s => Some(ReturnStatus::from_u8(s).unwrap_or(ReturnStatus::BadArgs)),
                };
                let data = (meta.kind == MsgKind::GetReply).then_some(payload);
                if let Some(spent) = self.chunk_answered(from, meta.txn, meta.args[0], status, data)
                {
                    self.proto.recycle(spent);
                }
            }
            (CHANNEL_REPLY, MsgKind::RmaDone | MsgKind::GetReply)
                if meta.nargs == 2
                    && meta.args[0] == 0
                    && meta.args[1] <= 1
                    && payload.is_empty() =>
            {
                let status = match meta.status {
                    0 => None,
                    s => Some(ReturnStatus::from_u8(s).unwrap_or(ReturnStatus::BadArgs)),
                };
                self.direct_answered(from, meta.txn, status, meta.args[1] == 1);
            }
            _ => self.stats.corrupt_dropped += 1,
        }
    }

    /// Performs one put or get chunk from `from`: (status, chunk index, the
    /// bytes of a get). Nothing is written unless every check passed.
    pub(in crate::am) fn perform(
        &mut self,
        from: SocketAddr,
        meta: &MsgMeta,
        payload: &[u8],
    ) -> (Option<ReturnStatus>, u32, Vec<u8>) {
        let index = if meta.nargs as usize == NARGS {
            meta.args[6]
        } else {
            u32::MAX
        };
        let is_put = meta.kind == MsgKind::Put;
        self.stats.requests_received[meta.category.index()] += 1;
        if self.table.index_of(&from).is_none() {
            return (Some(ReturnStatus::BadEndpoint), index, Vec::new());
        }
        if !tag_accepts(self.tag, meta.tag) {
            return (Some(ReturnStatus::BadTag), index, Vec::new());
        }
        let Some(c) = Chunk::parse(meta) else {
            return (Some(ReturnStatus::BadArgs), index, Vec::new());
        };
        if is_put && payload.len() != c.len as usize || !is_put && !payload.is_empty() {
            return (Some(ReturnStatus::BadLength), index, Vec::new());
        }
        if c.notify.is_some() && !is_put {
            return (Some(ReturnStatus::BadSegOff), index, Vec::new());
        }
        let mem = match self.rma.regions.check_operation(
            self.segment.as_ref(),
            c.region,
            is_put,
            (c.start, c.total),
            c.notify.map(|(at, _)| at),
        ) {
            Ok(m) => m,
            Err(s) => return (Some(s), index, Vec::new()),
        };
        // inside the region: checked above (the operation's range holds the chunk's)
        let off = c.offset() as usize;
        if is_put {
            mem.write(off, payload);
            if let (Some((foff, value)), true) = (c.notify, c.is_last()) {
                mem.write_word(foff as usize, value);
            }
            (None, index, Vec::new())
        } else {
            // into a buffer of an acknowledged message: no fresh pages
            let mut data = self.proto.empty_buffer(c.len as usize);
            mem.read_into(off, c.len as usize, &mut data);
            (None, index, data)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(total: u64, index: u32) -> Chunk {
        let rel = index as u64 * CHUNK as u64;
        Chunk {
            region: 3,
            notify: Some((8, 7)),
            start: 100,
            total,
            index,
            len: (total - rel.min(total)).min(CHUNK as u64) as u32,
        }
    }

    #[test]
    fn a_chunk_header_round_trips_and_inconsistent_ones_are_refused() {
        let total = 5 * CHUNK as u64 + 17;
        for i in 0..6 {
            let c = chunk(total, i);
            let m = c.meta(MsgKind::Put, 9, 1);
            assert_eq!(Chunk::parse(&m), Some(c));
        }
        let c = chunk(total, 5);
        assert!(c.is_last() && !chunk(total, 4).is_last());
        let mut m = chunk(total, 6).meta(MsgKind::Put, 9, 1);
        assert_eq!(Chunk::parse(&m), None, "chunk past the end");
        m = c.meta(MsgKind::Put, 9, 1);
        m.args[7] += 1;
        assert_eq!(Chunk::parse(&m), None, "length inconsistent");
        m = c.meta(MsgKind::Put, 9, 1);
        m.dest_offset += 1;
        assert_eq!(Chunk::parse(&m), None, "offset inconsistent");
        m = c.meta(MsgKind::Put, 9, 1);
        m.args[3] = u32::MAX;
        assert_eq!(Chunk::parse(&m), None, "start + total overflows");
        m = c.meta(MsgKind::Put, 9, 1);
        m.nargs = 10;
        assert_eq!(Chunk::parse(&m), None);
        m = c.meta(MsgKind::Put, 9, 1);
        m.args[1] = 2;
        assert_eq!(Chunk::parse(&m), None);
        m = c.meta(MsgKind::Put, 9, 1);
        m.args[6] = u32::MAX;
        assert_eq!(Chunk::parse(&m), None);
        // an empty operation has one empty chunk
        let e = chunk(0, 0);
        assert_eq!(Chunk::parse(&e.meta(MsgKind::Get, 1, 1)), Some(e));
        assert_eq!(Chunk::parse(&chunk(0, 1).meta(MsgKind::Get, 1, 1)), None);
    }
}
