//! An association's paths (after SCTP multihoming): the ways its packets
//! may go to the peer, each a local rail and a remote address
//! (`crate::path::Path`). Every packet the protocol queues names the path
//! it takes (`Outbox`), and the transports route by it; the layer above
//! hands paths on without looking at them.
//!
//! Today an association has one path, fixed when it is made: from the
//! endpoint's name (rail 0) to the peer's address. The rails issue adds
//! the peer's other addresses (learned in the handshake, each confirmed by
//! a heartbeat before it carries data), our other rails, and per path its
//! state (active, failed, probing); `current` then becomes the
//! scheduler's choice.
//!
//! Each path has the largest datagram it carries whole (`datagram`):
//! the configured bound (`RAMP_MAX_DATAGRAM`) until the transport tells
//! less (`Protocol::path_datagram`: UDP's route MTU, an `EMSGSIZE`);
//! messages are cut to it and bundles stay within it.
//!
//! Each path has its congestion controller (`congestion.rs`: window,
//! pacing, its own round-trip estimate), shared by both send channels.
//! It outlives an association to the same address (a new association
//! over the same route finds the network as it was): the peer hands it on
//! (`Peer::fresh_assoc`).

use super::congestion::Congestion;
use crate::path::Path;

/// The path an answer to a packet from `from` takes: back to that address,
/// from our name (the rails issue: on the rail the packet came in on).
#[inline]
pub fn back_to<A>(from: A) -> Path<A> {
    Path::from_name(from)
}

/// The paths of one association, and the one its packets take now.
#[derive(Clone, Debug)]
pub struct Paths<A> {
    /// The path packets take now: the only one today.
    current: Path<A>,
    /// The current path's congestion controller (the rails issue: one
    /// per path, and each packet in flight knows its path).
    pub cc: Congestion,
    /// The largest datagram the current path carries whole.
    pub datagram: usize,
}

impl<A: Copy> Paths<A> {
    /// An association's one path: from the endpoint's name to `peer`,
    /// with the congestion controller `cc`, carrying datagrams of up to
    /// `datagram` bytes.
    pub fn to(peer: A, cc: Congestion, datagram: usize) -> Paths<A> {
        Paths {
            current: Path::from_name(peer),
            cc,
            datagram,
        }
    }

    /// The path a packet of the association takes now.
    #[inline]
    pub fn current(&self) -> Path<A> {
        self.current
    }

    /// Every path of the association.
    #[cfg(any(test, feature = "testing"))] // inspection for tests and the simulator
    pub fn all(&self) -> impl Iterator<Item = Path<A>> + '_ {
        std::iter::once(self.current)
    }
}

impl<A: super::PeerAddr> super::Protocol<A> {
    /// The transport says the path to `to` (from our name: an
    /// association's one path today) carries datagrams of at most `size`
    /// bytes whole (UDP: the route's MTU less the IP and UDP headers, told
    /// when a datagram was refused with `EMSGSIZE`). The peer's path
    /// shrinks to it (within the configured bound, and never below what a
    /// packet needs): its messages not yet sent are cut again, its bundles
    /// stay within it. A packet already numbered keeps its size (the
    /// transport still delivers it, fragmented by IP). Never grows; news
    /// of a path no peer takes is ignored (the next refusal tells again).
    pub fn path_datagram(&mut self, to: A, size: usize) {
        let path = Path::from_name(to);
        let size = size.clamp(crate::wire::MAX_OVERHEAD + 64, self.cfg.max_datagram);
        let Some(slot) = self.find_peer(&path.remote) else {
            return;
        };
        let peer = &mut self.peers[slot];
        if peer.assoc.paths.current() != path || size >= peer.assoc.paths.datagram {
            return;
        }
        peer.assoc.paths.datagram = size;
        let cfg = &self.cfg;
        for tx in peer.tx.iter_mut() {
            super::send::recut(&mut tx.pending, |m| cfg.cut(&m.meta, m.payload.len(), size));
            tx.resettle();
        }
    }

    /// The largest datagram the path to `to` carries as the protocol
    /// knows it (the configured bound for a peer it does not know).
    #[cfg(any(test, feature = "testing"))] // inspection for tests and the simulator
    pub fn path_datagram_to(&mut self, to: A) -> usize {
        match self.find_peer(&to) {
            Some(s) => self.peers[s].assoc.paths.datagram,
            None => self.cfg.max_datagram,
        }
    }
}
