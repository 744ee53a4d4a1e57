//! A path: one way a datagram goes from this endpoint to a peer, as SCTP
//! multihoming names it: the local rail it leaves from and the remote
//! address it goes to. The protocol chooses the path of each datagram it
//! transmits (an association's paths, `proto/path.rs`); the transports
//! route by it (`net/transports.rs`). It is the one thing those two layers
//! share; the layer between them (`am/`) hands it on, and reads it only to
//! report paths (`ramp_GetPeerPaths`, `RAMP_VERBOSE`).
//!
//! Rail 0 is the endpoint's socket whose address is its name; an
//! endpoint has up to `MAX_RAILS` (`Protocol::set_local_rails`), and an
//! association a path from each to each of the peer's addresses
//! (`proto/path.rs`).

use std::fmt;

/// The most rails an endpoint has, and the most addresses a peer lists
/// (its name and three others): bounds every per-peer table of paths
/// (at most `MAX_RAILS` * `MAX_RAILS` of them).
pub const MAX_RAILS: usize = 4;

/// A local rail: which of the endpoint's sockets a datagram leaves from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rail(pub u8);

impl Rail {
    /// The rail of the endpoint's name (the address peers know it by).
    pub const NAME: Rail = Rail(0);
}

/// Where a datagram goes: to `remote`, leaving from rail `rail`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Path<A> {
    /// The peer's address the datagram is sent to.
    pub remote: A,
    /// The local rail it leaves from.
    pub rail: Rail,
}

impl<A> Path<A> {
    /// From the endpoint's name to `remote`: an association's path today,
    /// and the one an answer to a packet from outside any association takes.
    #[inline]
    pub const fn from_name(remote: A) -> Path<A> {
        Path {
            remote,
            rail: Rail::NAME,
        }
    }
}

/// The remote address, and the rail when it is not the name's.
impl<A: fmt::Display> fmt::Display for Path<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.rail {
            Rail::NAME => write!(f, "{}", self.remote),
            Rail(k) => write!(f, "{} (rail {k})", self.remote),
        }
    }
}
