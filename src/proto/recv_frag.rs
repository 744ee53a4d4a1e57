//! What a receive channel (`recv.rs`) takes: one DATA packet's fragment
//! as it arrived or as it was held ahead of a gap, and what holding one
//! costs.

use crate::wire::MsgMeta;

/// A DATA packet kept because it arrived ahead of a gap, or the marker of
/// one delivered at once (`delivered`, `unordered`): its payload is gone
/// to the layer above; it stays here so that it is SACKed, refused as a
/// duplicate, and stepped over when the gap before it fills.
#[derive(Debug, Clone)]
pub struct HeldPacket {
    /// None: a later fragment in the short form (`InFrag::meta`).
    pub meta: Option<MsgMeta>,
    pub msg_len: u32,
    pub frag_off: u32,
    pub payload: Vec<u8>,
    pub delivered: bool,
}

/// What holding a packet of `len` payload bytes costs the peer's budget:
/// the payload and the entry around it.
pub fn held_cost(len: usize) -> usize {
    len + std::mem::size_of::<HeldPacket>() + 16
}

/// One DATA packet's fragment, as received or as held.
pub struct InFrag<'a> {
    /// What the message is and (`msg_len`) how long, as a full header says
    /// (a message's first packet's); None for a later fragment in the short
    /// form (`wire::Packet::More`, `msg_len` 0), which only the message
    /// being reassembled, in sequence order, gives a meaning to.
    pub meta: Option<&'a MsgMeta>,
    pub msg_len: u32,
    pub frag_off: u32,
    pub bytes: &'a [u8],
    /// Copied where it goes already (the segment or the reassembly
    /// buffer), checked as it was copied (`Protocol::take_deferred`).
    pub copied: bool,
    /// Its sender marked it `Common::unordered`.
    pub unordered: bool,
}

impl InFrag<'_> {
    /// Whether the fragment fits a message of `len` bytes: a full header
    /// says that length; a short one says none.
    pub(super) fn len_agrees(&self, len: u32) -> bool {
        self.meta.is_none() || self.msg_len == len
    }
}
