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
}

impl<A: Copy> Paths<A> {
    /// An association's one path: from the endpoint's name to `peer`,
    /// with the congestion controller `cc`.
    pub fn to(peer: A, cc: Congestion) -> Paths<A> {
        Paths {
            current: Path::from_name(peer),
            cc,
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
