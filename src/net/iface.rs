//! Choosing the address an endpoint binds to (`RAMP_INTERFACE`).

use std::io;
use std::net::{IpAddr, Ipv4Addr};

use crate::sys as os;

/// `spec` is an IP address, an interface name, or None for the default: the
/// first address of an interface that is up and not loopback (IPv4 first),
/// and loopback when there is none.
pub fn choose_bind_address(spec: Option<&str>) -> io::Result<IpAddr> {
    let addrs = os::interface_addresses();
    match spec {
        Some(s) => {
            if let Ok(ip) = s.parse::<IpAddr>() {
                return Ok(ip);
            }
            let mine: Vec<&os::IfAddr> = addrs.iter().filter(|a| a.name == s).collect();
            mine.iter()
                .find(|a| a.ip.is_ipv4())
                .or_else(|| mine.first())
                .map(|a| a.ip)
                .ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::NotFound,
                        format!(
                            "{}={s:?}: no such interface or address on this host",
                            crate::config::INTERFACE
                        ),
                    )
                })
        }
        None => {
            let usable = |a: &&os::IfAddr| a.up && !a.ip.is_loopback() && !is_link_local(a.ip);
            Ok(addrs
                .iter()
                .filter(usable)
                .find(|a| a.ip.is_ipv4())
                .or_else(|| addrs.iter().find(usable))
                .map(|a| a.ip)
                .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST)))
        }
    }
}

fn is_link_local(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v) => v.is_link_local(),
        // fe80::/10 needs a scope id to be reachable: skip it by default
        IpAddr::V6(v) => (v.segments()[0] & 0xffc0) == 0xfe80,
    }
}
