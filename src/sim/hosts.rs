//! Host addresses of simulated nodes: a block 10.b.x.y that one world
//! holds against every other world alive on this machine.

use std::net::Ipv4Addr;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr as UnixAddr, UnixDatagram};
use std::sync::atomic::{AtomicU64, Ordering};

/// Blocks of host addresses (10.b.x.y, b below this) worlds hold.
pub(super) const HOST_BLOCKS: u64 = 250;

/// A block of host addresses, 10.b.x.y, that one world holds against
/// every other world alive on this host, in this process or another
/// (test processes run at once): shared memory names its sockets by
/// address (`net/shm.rs`), so two worlds alive at once must never share
/// one. The hold is an abstract Unix socket named for the block, which
/// goes with the world, or with its process however that ends.
pub(super) struct HostBlock {
    pub(super) b: u8,
    pub(super) _hold: UnixDatagram,
}

impl HostBlock {
    pub(super) fn claim() -> HostBlock {
        // (each process starts looking elsewhere: few tries)
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let start = 7 * std::process::id() as u64 + NEXT.fetch_add(1, Ordering::Relaxed);
        for k in 0..HOST_BLOCKS {
            let b = ((start + k) % HOST_BLOCKS) as u8;
            let name = format!("ramp-sim-hosts.{b}");
            let Ok(addr) = UnixAddr::from_abstract_name(name.as_bytes()) else {
                continue;
            };
            if let Ok(hold) = UnixDatagram::bind_addr(&addr) {
                return HostBlock { b, _hold: hold };
            }
        }
        panic!("simulated world: all {HOST_BLOCKS} blocks of host addresses are held");
    }
}

/// The host of the `i`-th node of the world that holds block `b`:
/// 10.b.x.y, of its own (`HostBlock`).
pub(super) fn host_of(b: u8, i: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, b, (i / 250) as u8, (i % 250 + 1) as u8)
}

/// Host `host`'s rail-`k` address (rail 0: the host's own): 10.b.(x +
/// 64 k).y for host 10.b.x.y (a world holds 10.b.*.*; its nodes' x stay
/// below 64; `world_rails.rs`).
pub(super) fn rail_ip(host: Ipv4Addr, k: usize) -> Ipv4Addr {
    let [a, b, x, y] = host.octets();
    Ipv4Addr::new(a, b, x.wrapping_add(64 * k as u8), y)
}
