//! What a peer's address must be able to say: a socket address, or a
//! simulated node's number.

use std::hash::Hash;

/// Addresses of peers: a socket address, or a simulated node.
pub trait PeerAddr: Copy + Eq + Hash + std::fmt::Debug {
    /// Whether a packet from `self` may be `other`'s, sent from another
    /// port of its host (`alias.rs`).
    fn same_host(&self, other: &Self) -> bool;
    /// The address of `port` on this address's host (an announced alias,
    /// `alias.rs`); None where addresses have no ports.
    fn at_port(&self, port: u16) -> Option<Self>;
}

impl PeerAddr for std::net::SocketAddr {
    fn same_host(&self, other: &Self) -> bool {
        self.ip() == other.ip()
    }

    fn at_port(&self, port: u16) -> Option<Self> {
        Some(std::net::SocketAddr::new(self.ip(), port))
    }
}

/// A simulated node: its own host (a simulated peer sends from one address).
impl PeerAddr for u32 {
    fn same_host(&self, _other: &Self) -> bool {
        false
    }

    fn at_port(&self, _port: u16) -> Option<Self> {
        None
    }
}
