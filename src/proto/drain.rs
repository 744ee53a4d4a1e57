//! Datagrams out: the outbox drained into the caller's buffer or handed
//! over in batches, straight from where they were encoded, each with the
//! path it takes.

use super::*;
use crate::path::Path;

impl<A: PeerAddr> Protocol<A> {
    /// Writes the next datagram to put on the network into `buf` (replacing
    /// its contents) and returns its destination (its path's remote
    /// address: the simulators have one rail); None when there is none.
    /// `buf` may come back in another allocation (the protocol keeps the
    /// caller's for its queue rather than copy): no allocation either way
    /// once both have grown.
    #[cfg(any(test, feature = "testing"))] // the simulator; the AM layer drains
    pub fn poll_transmit(&mut self, buf: &mut Vec<u8>) -> Option<A> {
        self.out.pop(buf)
    }

    /// Hands every datagram to put on the network to `each`, in order, in
    /// batches of at most `N` (the small packets on one path joined into
    /// one datagram, `outbox.rs`): the path it takes and the datagram's
    /// pieces, to be sent back to back, straight from where they were
    /// encoded or lie (no copy).
    #[inline]
    pub fn drain_transmits<const N: usize>(&mut self, each: impl FnMut(&[(Path<A>, [&[u8]; 3])])) {
        self.out.drain_batches::<N>(each)
    }

    /// `drain_transmits`, except the last datagram when it is a bundle of
    /// small packets to `keep` that may take more: it stays for the next
    /// drain (a long message's small last fragment, for the next
    /// message's first to join: `outbox.rs`, `am/batch.rs`). True when
    /// something stayed.
    #[inline]
    pub fn drain_transmits_keeping<const N: usize>(
        &mut self,
        keep: A,
        each: impl FnMut(&[(Path<A>, [&[u8]; 3])]),
    ) -> bool {
        self.out.drain_batches_keeping::<N>(keep, each)
    }

    #[inline]
    pub fn has_transmits(&self) -> bool {
        self.out.has_transmits()
    }

    /// How many packets wait to be drained.
    #[inline]
    pub fn queued_transmits(&self) -> usize {
        self.out.queued()
    }
}
