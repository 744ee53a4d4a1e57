//! What a peer's address must be able to say: a socket address, or a
//! simulated node's number.

use std::hash::Hash;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::wire::ADDR_LEN;

/// Addresses of peers: a socket address, or a simulated node.
pub trait PeerAddr: Copy + Eq + Hash + std::fmt::Debug {
    /// Whether a packet from `self` may be `other`'s, sent from another
    /// port of its host (`alias.rs`).
    fn same_host(&self, other: &Self) -> bool;
    /// The address of `port` on this address's host (an announced alias,
    /// `alias.rs`); None where addresses have no ports.
    fn at_port(&self, port: u16) -> Option<Self>;
    #[cfg_attr(not(feature = "testing"), allow(dead_code))] // our rails (`set_local_rails`)
    /// The address as a handshake lists it (`wire::layout`: family, 16
    /// address bytes, port).
    fn to_wire(&self) -> [u8; ADDR_LEN];
    /// An address listed by a peer: None when it is not one of this kind.
    fn from_wire(b: &[u8; ADDR_LEN]) -> Option<Self>;
}

impl PeerAddr for std::net::SocketAddr {
    fn same_host(&self, other: &Self) -> bool {
        self.ip() == other.ip()
    }

    fn at_port(&self, port: u16) -> Option<Self> {
        Some(std::net::SocketAddr::new(self.ip(), port))
    }

    fn to_wire(&self) -> [u8; ADDR_LEN] {
        let mut b = [0u8; ADDR_LEN];
        match self.ip() {
            IpAddr::V4(v) => {
                b[0] = 4;
                b[1..5].copy_from_slice(&v.octets());
            }
            IpAddr::V6(v) => {
                b[0] = 6;
                b[1..17].copy_from_slice(&v.octets());
            }
        }
        b[17..19].copy_from_slice(&self.port().to_be_bytes());
        b
    }

    fn from_wire(b: &[u8; ADDR_LEN]) -> Option<Self> {
        let port = u16::from_be_bytes([b[17], b[18]]);
        let ip = match b[0] {
            4 if b[5..17].iter().all(|&x| x == 0) => {
                IpAddr::V4(Ipv4Addr::new(b[1], b[2], b[3], b[4]))
            }
            6 => {
                let o: [u8; 16] = b[1..17].try_into().ok()?;
                IpAddr::V6(Ipv6Addr::from(o))
            }
            _ => return None,
        };
        // no port 0, no unspecified or multicast address: nothing to send to
        (port != 0 && !ip.is_unspecified() && !ip.is_multicast()).then(|| SocketAddr::new(ip, port))
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

    fn to_wire(&self) -> [u8; ADDR_LEN] {
        let mut b = [0u8; ADDR_LEN];
        b[0] = 1;
        b[1..5].copy_from_slice(&self.to_be_bytes());
        b
    }

    fn from_wire(b: &[u8; ADDR_LEN]) -> Option<Self> {
        (b[0] == 1 && b[5..].iter().all(|&x| x == 0))
            .then(|| u32::from_be_bytes([b[1], b[2], b[3], b[4]]))
    }
}
