//! Endpoint names (`en_t`): a fixed 32-byte value copied by value, naming a
//! transport address. Layout: kind (1 = IPv4, 2 = IPv6), a zero byte, the
//! port (big-endian), the IPv6 scope id (big-endian), 16 address bytes (IPv4
//! in the first 4), 8 reserved zero bytes.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV6};

#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct EndpointName(pub [u8; 32]);

const KIND_V4: u8 = 1;
const KIND_V6: u8 = 2;

impl EndpointName {
    pub fn from_addr(addr: SocketAddr) -> EndpointName {
        let mut b = [0u8; 32];
        b[2..4].copy_from_slice(&addr.port().to_be_bytes());
        match addr {
            SocketAddr::V4(a) => {
                b[0] = KIND_V4;
                b[8..12].copy_from_slice(&a.ip().octets());
            }
            SocketAddr::V6(a) => {
                b[0] = KIND_V6;
                b[4..8].copy_from_slice(&a.scope_id().to_be_bytes());
                b[8..24].copy_from_slice(&a.ip().octets());
            }
        }
        EndpointName(b)
    }

    /// The address this name stands for; None when the bytes are no name
    /// ramp produced (uninitialised or damaged memory).
    pub fn to_addr(&self) -> Option<SocketAddr> {
        let b = &self.0;
        if b[1] != 0 || b[24..].iter().any(|&x| x != 0) {
            return None;
        }
        let port = u16::from_be_bytes([b[2], b[3]]);
        if port == 0 {
            return None;
        }
        match b[0] {
            KIND_V4 => {
                if b[4..8].iter().chain(&b[12..24]).any(|&x| x != 0) {
                    return None;
                }
                let ip = Ipv4Addr::new(b[8], b[9], b[10], b[11]);
                Some(SocketAddr::new(IpAddr::V4(ip), port))
            }
            KIND_V6 => {
                let mut o = [0u8; 16];
                o.copy_from_slice(&b[8..24]);
                let scope = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
                Some(SocketAddr::V6(SocketAddrV6::new(
                    Ipv6Addr::from(o),
                    port,
                    0,
                    scope,
                )))
            }
            _ => None,
        }
    }
}

impl fmt::Display for EndpointName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_addr() {
            Some(a) => write!(f, "{a}"),
            None => write!(f, "<invalid endpoint name>"),
        }
    }
}

impl fmt::Debug for EndpointName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EndpointName({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_v4_and_v6() {
        for s in ["127.0.0.1:4000", "[::1]:65535", "10.1.2.3:1"] {
            let a: SocketAddr = s.parse().unwrap();
            let n = EndpointName::from_addr(a);
            assert_eq!(n.to_addr(), Some(a));
            assert_eq!(n.to_string(), s);
        }
    }

    #[test]
    fn garbage_is_no_name() {
        assert_eq!(EndpointName([0; 32]).to_addr(), None);
        assert_eq!(EndpointName([0xff; 32]).to_addr(), None);
        let mut n = EndpointName::from_addr("127.0.0.1:9".parse().unwrap());
        n.0[30] = 1;
        assert_eq!(n.to_addr(), None);
    }
}
