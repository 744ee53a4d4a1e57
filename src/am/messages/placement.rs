//! A long message's bytes written into the segment as they arrive (the
//! protocol's `Placement`): the receive path copies each fragment from the
//! receive buffer straight to `segment + dest_offset`, and the dispatch
//! runs the handler on it with no second copy (`dispatch.rs`).
//!
//! A message is placed only if it would be admitted now (`admit`: a known
//! sender for a request, its tag, its handler, inside the segment), is a
//! plain user message (no transaction trailer, not an in-place or direct
//! Xfer), and nothing delivered waits to be dispatched ahead of it (here:
//! no AM message queued and no handler running; in the protocol: no event
//! queued), so a handler that runs before its own never sees its bytes.
//! So that the next one in a receive batch need not be gathered and
//! copied again, the receive stops after a message placed whole and the
//! rest of the batch waits in the transport until its handler ran
//! (`driver.rs`, `placed_ahead`; UDP keeps it: `recv_batch_until`).
//! The dispatch checks it again; if the segment was replaced in between
//! (`seg_gen`) or the check fails now, the message is refused as any
//! other, its bytes left where they were written (`ramp.h` says so of
//! refused long requests).

use std::net::SocketAddr;

use super::returned::{AdmitParts, Admitted};
use crate::am::handler::args::SegmentMemory;
use crate::am::handler::tables::TranslationTable;
use crate::proto::Placement;
use crate::wire::{Category, MsgKind, MsgMeta, CHANNEL_REQUEST};

pub(in crate::am) struct Placer<'a> {
    pub(in crate::am) parts: AdmitParts<'a>,
    pub(in crate::am) table: &'a TranslationTable,
    /// The segment's generation (`EpState::seg_gen`).
    pub(in crate::am) gen: u32,
    /// Nothing waits to be dispatched and no handler runs: cleared when an
    /// express record is queued during the receive.
    pub(in crate::am) quiet: bool,
}

impl Placement<SocketAddr> for Placer<'_> {
    fn claim(&mut self, from: SocketAddr, channel: u8, meta: &MsgMeta, len: usize) -> Option<u32> {
        if !self.quiet
            || meta.kind != MsgKind::User
            || meta.category != Category::Long
            || meta.status != 0
        {
            return None;
        }
        let is_request = channel == CHANNEL_REQUEST;
        let source = self.table.index_of(&from);
        match self.parts.admit(source, meta, len, is_request) {
            Ok(Admitted::Long(_)) => Some(self.gen),
            _ => None,
        }
    }

    fn write(&mut self, meta: &MsgMeta, at: usize, bytes: &[u8]) {
        // (`claim` checked the whole message against the segment, and the
        // protocol keeps each piece within it: checked again, cheaply)
        if let Some((seg, off)) = self.place_of(meta, at, bytes.len()) {
            seg.write(off, bytes);
        }
    }

    fn write_summed(&mut self, meta: &MsgMeta, at: usize, bytes: &[u8]) -> Option<u32> {
        let (seg, off) = self.place_of(meta, at, bytes.len())?;
        seg.write_summed(off, bytes)
    }
}

impl Placer<'_> {
    /// The segment and offset where `len` bytes at `at` of the message
    /// `meta` go, when they go there.
    fn place_of(
        &self,
        meta: &MsgMeta,
        at: usize,
        len: usize,
    ) -> Option<(&dyn SegmentMemory, usize)> {
        let seg = self.parts.segment.as_deref()?;
        // a message started in a segment replaced since writes no more (its
        // dispatch refuses it): never into the new one
        if meta.placed.map(|p| p.gen) != Some(self.gen) {
            return None;
        }
        let off = (meta.dest_offset as usize)
            .checked_add(at)
            .filter(|o| o.checked_add(len).is_some_and(|e| e <= seg.len()))?;
        Some((seg, off))
    }
}
