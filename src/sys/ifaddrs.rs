//! The addresses of the machine's network interfaces (getifaddrs).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// One address of one network interface.
#[derive(Clone, Debug)]
pub struct IfAddr {
    pub name: String,
    pub ip: IpAddr,
    pub up: bool,
}

/// Every IPv4 and IPv6 address of every interface (empty on failure).
pub fn interface_addresses() -> Vec<IfAddr> {
    let mut out = Vec::new();
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a list head we own until freeifaddrs.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return out;
    }
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list returned by getifaddrs, valid
        // until freeifaddrs below; its fields are read only.
        let ifa = unsafe { &*cur };
        cur = ifa.ifa_next;
        if ifa.ifa_addr.is_null() || ifa.ifa_name.is_null() {
            continue;
        }
        // SAFETY: ifa_name is a NUL-terminated string owned by the list.
        let name = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) }
            .to_string_lossy()
            .into_owned();
        let up = ifa.ifa_flags & (libc::IFF_UP as u32) != 0;
        // SAFETY: ifa_addr is non-null and points to a sockaddr whose family
        // field says which larger struct it is.
        let family = unsafe { (*ifa.ifa_addr).sa_family } as i32;
        let ip = match family {
            libc::AF_INET => {
                // SAFETY: family AF_INET means the storage is a sockaddr_in.
                let sin = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
                IpAddr::V4(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)))
            }
            libc::AF_INET6 => {
                // SAFETY: family AF_INET6 means the storage is a sockaddr_in6.
                let sin6 = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in6) };
                IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr))
            }
            _ => continue,
        };
        out.push(IfAddr { name, ip, up });
    }
    // SAFETY: `head` came from getifaddrs and is freed exactly once.
    unsafe { libc::freeifaddrs(head) };
    out
}
