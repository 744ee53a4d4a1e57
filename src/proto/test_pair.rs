//! Two protocol cores associated with each other, for the unit tests of
//! the protocol's rooms (`alias_tests.rs`, `same_host_tests.rs`).

use std::net::SocketAddr;

use super::*;

pub(super) const A: &str = "127.0.0.1:1000";
pub(super) const B: &str = "127.0.0.1:2000";

pub(super) fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// A at `A` and B at `B`, associated (tags 0xA0 and 0xB1), under the
/// job key `key` (its MAC) or CRC32C.
pub(super) fn pair(key: Option<&str>) -> [Protocol<SocketAddr>; 2] {
    let cfg = || ProtoConfig {
        mac: key.map(crate::wire::mac::MacKey::from_job_key),
        ..ProtoConfig::default()
    };
    let mut n = [
        Protocol::new(cfg(), &[0x10; 32]),
        Protocol::new(cfg(), &[0x20; 32]),
    ];
    n[0].associate(addr(B), 0xA0, 0xB1);
    n[1].associate(addr(A), 0xB1, 0xA0);
    n
}
