//! Placement: the layer above may take a long message's bytes where they
//! go (the AM-2 segment) as its fragments arrive, instead of the protocol
//! gathering them into a buffer that the layer above then copies: one copy
//! from the receive buffer, not two.
//!
//! Only in-order fragments of a message the protocol has accepted reach
//! `write` (checked, not a duplicate, inside the association, in its
//! place in the reassembly, within the length the first fragment gave), and
//! only when no delivered event waits ahead of it: a handler that runs
//! before this message's never sees its bytes.

use crate::wire::MsgMeta;

pub trait Placement<A> {
    /// Whether the message starting with this fragment (`meta`, `len`
    /// bytes in all, from `from` on `channel`) is placed; `Some(gen)`: its
    /// bytes go to `write`, and its event comes with `meta.placed` = (len,
    /// gen) and an empty payload.
    fn claim(&mut self, from: A, channel: u8, meta: &MsgMeta, len: usize) -> Option<u32>;
    /// Writes `bytes`, at `at` within the message claimed with `meta`.
    fn write(&mut self, meta: &MsgMeta, at: usize, bytes: &[u8]);
    /// `write`, summing the bytes as they are copied (`wire::copy_sum`):
    /// their sum, or None when nothing was written (the bytes are then
    /// checked first and given to `write`). The bytes are not checked yet:
    /// the protocol offers only a packet whose header it can trust to name
    /// where they go (a later fragment of a placed message, at its next
    /// offset: what a packet's own header says decides nothing), and drops
    /// it, its bytes left there, when the sum fails; the message's next
    /// fragment then writes over them before it is delivered.
    fn write_summed(&mut self, _meta: &MsgMeta, _at: usize, _bytes: &[u8]) -> Option<u32> {
        None
    }
}

/// Places nothing: every message is gathered into a buffer.
#[cfg(any(test, feature = "testing"))]
pub struct NoPlacement;

#[cfg(any(test, feature = "testing"))]
impl<A> Placement<A> for NoPlacement {
    #[inline]
    fn claim(&mut self, _: A, _: u8, _: &MsgMeta, _: usize) -> Option<u32> {
        None
    }
    #[inline]
    fn write(&mut self, _: &MsgMeta, _: usize, _: &[u8]) {}
}
