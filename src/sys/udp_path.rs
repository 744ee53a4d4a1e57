//! A UDP path's datagram size and the kernel's offloads: the route's MTU
//! to an address (`path_datagram`), IP fragmentation refused or allowed on
//! a socket (`set_fragmenting`), UDP GRO on receive (`enable_gro`,
//! `gro_size`) and the control message of a GSO send (`GsoCmsg`).

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};

/// `UDP_SEGMENT` and `UDP_GRO` (linux/udp.h; not in the libc crate for
/// glibc targets).
pub(crate) const UDP_SEGMENT: libc::c_int = 103;
pub(crate) const UDP_GRO: libc::c_int = 104;
/// Most segments one GSO send may carry (the kernel's `UDP_MAX_SEGMENTS`).
pub const GSO_MAX_SEGMENTS: usize = 64;

fn setsockopt_int(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    v: libc::c_int,
) -> io::Result<()> {
    // SAFETY: `v` is a live c_int and its size is passed; the kernel only
    // reads it.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn getsockopt_int(fd: RawFd, level: libc::c_int, name: libc::c_int) -> io::Result<libc::c_int> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `v` and `len` are live and `len` says how much room `v` has;
    // the kernel writes at most that much.
    let r = unsafe {
        libc::getsockopt(
            fd,
            level,
            name,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if r == 0 {
        Ok(v)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether the kernel may fragment what `fd` (UDP, IPv6 when `v6`) sends:
/// false sets path MTU discovery to `DO` (a datagram larger than the
/// route's MTU is refused with `EMSGSIZE`, never fragmented), true to
/// `DONT` (fragmented as needed).
pub fn set_fragmenting(fd: RawFd, v6: bool, fragmenting: bool) -> io::Result<()> {
    if v6 {
        let v = if fragmenting {
            libc::IPV6_PMTUDISC_DONT
        } else {
            libc::IPV6_PMTUDISC_DO
        };
        setsockopt_int(fd, libc::IPPROTO_IPV6, libc::IPV6_MTU_DISCOVER, v)
    } else {
        let v = if fragmenting {
            libc::IP_PMTUDISC_DONT
        } else {
            libc::IP_PMTUDISC_DO
        };
        setsockopt_int(fd, libc::IPPROTO_IP, libc::IP_MTU_DISCOVER, v)
    }
}

/// The route's MTU to `to` as the kernel knows it now (the interface's,
/// or less when an ICMP "fragmentation needed" lowered it): a UDP socket
/// connected to it (no packet leaves) asked `IP_MTU` / `IPV6_MTU`.
pub fn route_mtu(to: SocketAddr) -> io::Result<usize> {
    let s = socket2::Socket::new(
        socket2::Domain::for_address(to),
        socket2::Type::DGRAM,
        Some(socket2::Protocol::UDP),
    )?;
    s.connect(&to.into())?;
    let (level, name) = if to.is_ipv6() {
        (libc::IPPROTO_IPV6, libc::IPV6_MTU)
    } else {
        (libc::IPPROTO_IP, libc::IP_MTU)
    };
    let mtu = getsockopt_int(s.as_raw_fd(), level, name)?;
    usize::try_from(mtu).map_err(|_| io::Error::other(format!("IP_MTU {mtu}")))
}

/// The largest UDP payload the route to `to` carries without IP
/// fragmentation: its MTU less the IP (20 or 40 bytes) and UDP (8)
/// headers, within 65,507 (loopback's MTU of 65,536 gives that).
pub fn path_datagram(to: SocketAddr) -> io::Result<usize> {
    let ip = if to.is_ipv6() { 40 } else { 20 };
    Ok(route_mtu(to)?.saturating_sub(ip + 8).min(65507))
}

/// Asks the kernel to coalesce datagrams of one flow on receive (UDP
/// GRO): a receive may then return several back to back, their size in
/// a control message (`gro_size`).
pub fn enable_gro(fd: RawFd) -> io::Result<()> {
    setsockopt_int(fd, libc::SOL_UDP, UDP_GRO, 1)
}

/// Whether the kernel does UDP GSO on `fd`: it accepts a segment size
/// (0, none: what the socket has anyway) where it does.
pub fn probe_gso(fd: RawFd) -> bool {
    setsockopt_int(fd, libc::SOL_UDP, UDP_SEGMENT, 0).is_ok()
}

/// Room for the control messages of one receive (a UDP_GRO int, with
/// room to spare: a truncated control buffer only loses the size).
pub const RECV_CMSG_SPACE: usize = 64;

/// The segment size of a coalesced receive, from its control messages
/// (`control`: `msg_control` as the kernel filled it, `len` its
/// `msg_controllen`). None when there is none: one datagram.
pub fn gro_size(hdr: &libc::msghdr) -> Option<usize> {
    if hdr.msg_control.is_null() || hdr.msg_controllen < std::mem::size_of::<libc::cmsghdr>() as _ {
        return None;
    }
    // SAFETY: `hdr` describes a control buffer the kernel filled in the
    // last recvmsg (its pointer and the length it wrote); CMSG_FIRSTHDR
    // and CMSG_NXTHDR stay within it, and each message's data is read
    // only when its length covers a c_int, unaligned.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(hdr);
        while !c.is_null() {
            let h = &*c;
            if h.cmsg_level == libc::SOL_UDP
                && h.cmsg_type == UDP_GRO
                && h.cmsg_len as usize
                    >= libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as usize
            {
                let v = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::c_int>());
                return usize::try_from(v).ok();
            }
            c = libc::CMSG_NXTHDR(hdr, c);
        }
    }
    None
}

/// The control message of a GSO send: `UDP_SEGMENT` with the segment
/// size (a u16), in a buffer aligned as `cmsghdr` needs.
#[repr(C)]
pub struct GsoCmsg {
    buf: [u64; 4],
}

impl GsoCmsg {
    /// Bytes the message takes (`msg_controllen`).
    pub fn space() -> usize {
        // SAFETY: CMSG_SPACE only computes a size.
        unsafe { libc::CMSG_SPACE(std::mem::size_of::<u16>() as u32) as usize }
    }

    /// A control message saying segments of `size` bytes.
    pub fn new(size: u16) -> GsoCmsg {
        let mut m = GsoCmsg { buf: [0; 4] };
        assert!(Self::space() <= std::mem::size_of_val(&m.buf));
        // SAFETY: a msghdr pointing at our own buffer, large enough for one
        // message of a u16 (asserted above); CMSG_FIRSTHDR returns its start
        // (aligned: the buffer is u64s) and CMSG_DATA a place inside it.
        unsafe {
            let mut h: libc::msghdr = std::mem::zeroed();
            h.msg_control = m.buf.as_mut_ptr().cast();
            h.msg_controllen = Self::space() as _;
            let c = libc::CMSG_FIRSTHDR(&h);
            (*c).cmsg_level = libc::SOL_UDP;
            (*c).cmsg_type = UDP_SEGMENT;
            (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<u16>() as u32) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<u16>(), size);
        }
        m
    }

    /// The pointer `msg_control` takes.
    pub fn as_ptr(&mut self) -> *mut libc::c_void {
        self.buf.as_mut_ptr().cast()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_carries_64_kib_datagrams_whole() {
        let to: SocketAddr = "127.0.0.1:9".parse().unwrap();
        // (IPv4's local route says 65,535: IP's largest)
        assert!(route_mtu(to).unwrap() >= 65535, "loopback's MTU");
        assert_eq!(path_datagram(to).unwrap(), 65507);
        if let Ok(n) = path_datagram("[::1]:9".parse().unwrap()) {
            assert!(n >= 65487 - 20, "IPv6 loopback: {n}");
        }
    }

    #[test]
    fn a_route_nowhere_is_an_error_not_a_size() {
        // (no route to 0.0.0.0's port 0 on a connect is still a connect: a
        // broadcast without SO_BROADCAST is refused)
        assert!(route_mtu("255.255.255.255:9".parse().unwrap()).is_err());
    }

    #[test]
    fn fragmenting_is_set_and_read_back() {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let fd = s.as_raw_fd();
        set_fragmenting(fd, false, false).unwrap();
        assert_eq!(
            getsockopt_int(fd, libc::IPPROTO_IP, libc::IP_MTU_DISCOVER).unwrap(),
            libc::IP_PMTUDISC_DO
        );
        set_fragmenting(fd, false, true).unwrap();
        assert_eq!(
            getsockopt_int(fd, libc::IPPROTO_IP, libc::IP_MTU_DISCOVER).unwrap(),
            libc::IP_PMTUDISC_DONT
        );
    }
}
