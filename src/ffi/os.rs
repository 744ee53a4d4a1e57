//! The few operating-system calls std does not offer safely: the list of
//! interface addresses (getifaddrs), sleeping until a descriptor is
//! readable (poll), batched receives (recvmmsg), the raw monotonic clock.
//! They live here because `unsafe` is kept to `ffi/`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::RawFd;

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

/// The monotonic clock (CLOCK_MONOTONIC, the one std's Instant reads) in
/// nanoseconds, without std's subtraction and conversion: it is read on
/// every poll and every send.
pub fn monotonic_nanos() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer; with
    // CLOCK_MONOTONIC it cannot fail on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleeps until one of `fds` is readable or `timeout_ms` passes (-1: no
/// limit). Returns whether any descriptor is readable.
pub fn wait_readable(fds: &[RawFd], timeout_ms: i32) -> bool {
    poll_fds(fds, timeout_ms).iter().any(|&r| r)
}

/// Receives up to `slots` datagrams with one `recvmmsg` call.
pub struct BatchReceiver {
    buf: Vec<u8>,
    slot_size: usize,
    names: Vec<libc::sockaddr_storage>,
    iov: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
}

// SAFETY: the raw pointers inside `iov`/`hdrs` are rebuilt before every use and
// only ever point into the receiver's own buffers.
unsafe impl Send for BatchReceiver {}

impl BatchReceiver {
    pub fn new(slots: usize, slot_size: usize) -> BatchReceiver {
        let slots = slots.max(1);
        BatchReceiver {
            buf: vec![0u8; slots * slot_size],
            slot_size,
            // SAFETY: sockaddr_storage is plain old data; all-zero is valid.
            names: vec![unsafe { std::mem::zeroed() }; slots],
            iov: Vec::with_capacity(slots),
            // SAFETY: mmsghdr is plain old data; all-zero is valid.
            hdrs: vec![unsafe { std::mem::zeroed() }; slots],
        }
    }

    /// Takes up to `max` datagrams waiting on non-blocking `fd` (0 when
    /// nothing is).
    pub fn recv(&mut self, fd: RawFd, max: usize) -> std::io::Result<usize> {
        let slots = max.clamp(1, self.hdrs.len());
        self.iov.clear();
        for i in 0..slots {
            self.iov.push(libc::iovec {
                iov_base: self.buf[i * self.slot_size..].as_mut_ptr().cast(),
                iov_len: self.slot_size,
            });
        }
        for i in 0..slots {
            let h = &mut self.hdrs[i];
            h.msg_hdr.msg_name = (&mut self.names[i] as *mut libc::sockaddr_storage).cast();
            h.msg_hdr.msg_namelen =
                std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            h.msg_hdr.msg_iov = &mut self.iov[i];
            h.msg_hdr.msg_iovlen = 1;
            h.msg_hdr.msg_control = std::ptr::null_mut();
            h.msg_hdr.msg_controllen = 0;
            h.msg_hdr.msg_flags = 0;
            h.msg_len = 0;
        }
        loop {
            // SAFETY: every header points into buffers owned by `self` that
            // outlive the call, with the lengths given.
            let r = unsafe {
                libc::recvmmsg(
                    fd,
                    self.hdrs.as_mut_ptr(),
                    slots as libc::c_uint,
                    libc::MSG_DONTWAIT,
                    std::ptr::null_mut(),
                )
            };
            if r >= 0 {
                return Ok(r as usize);
            }
            let e = std::io::Error::last_os_error();
            match e.kind() {
                std::io::ErrorKind::WouldBlock => return Ok(0),
                std::io::ErrorKind::Interrupted => continue,
                // ICMP errors of earlier sends; the protocol's timers handle them.
                std::io::ErrorKind::ConnectionRefused => continue,
                _ => return Err(e),
            }
        }
    }

    /// Slot `i` as a plain buffer (for single reads without recvmmsg).
    pub fn slot(&mut self, i: usize) -> &mut [u8] {
        &mut self.buf[i * self.slot_size..(i + 1) * self.slot_size]
    }

    /// Datagram `i` of the last `recv`: its bytes (None when it was cut short
    /// by the slot size) and its sender.
    pub fn datagram(&self, i: usize) -> (Option<&[u8]>, Option<std::net::SocketAddr>) {
        let h = &self.hdrs[i];
        let len = h.msg_len as usize;
        let truncated = h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
        let bytes = (!truncated).then(|| &self.buf[i * self.slot_size..i * self.slot_size + len]);
        (bytes, sockaddr_to_std(&self.names[i]))
    }
}

fn sockaddr_to_std(s: &libc::sockaddr_storage) -> Option<std::net::SocketAddr> {
    use std::net::{SocketAddr, SocketAddrV4, SocketAddrV6};
    match s.ss_family as i32 {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let a = unsafe { &*(s as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            Some(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)),
                u16::from_be(a.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let a = unsafe { &*(s as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(a.sin6_addr.s6_addr),
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// Sleeps until one of `fds` is readable (or hung up) or `timeout_ms`
/// passes; returns, for each descriptor, whether it needs attention.
pub fn poll_fds(fds: &[RawFd], timeout_ms: i32) -> Vec<bool> {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    loop {
        // SAFETY: `pfds` is a valid array of pollfd of the given length.
        let r = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, timeout_ms) };
        if r >= 0 {
            return pfds.iter().map(|p| p.revents != 0).collect();
        }
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return vec![false; fds.len()];
        }
    }
}

/// Sends `sig` to process `pid` (errors ignored: it may be gone already).
pub fn kill(pid: u32, sig: i32) {
    // SAFETY: kill has no memory effects; a stale pid is at worst an error.
    unsafe {
        libc::kill(pid as libc::pid_t, sig);
    }
}

/// Takes ownership of a stream socket inherited from the launcher (the
/// PMI-1/PMI-2 `PMI_FD`). Fails unless `fd` is an open socket, and for any
/// descriptor already adopted, so it can be owned only once. Marks it
/// close-on-exec so programs this process starts do not inherit it.
pub fn adopt_inherited_socket(fd: RawFd) -> std::io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    static ADOPTED: parking_lot::Mutex<Vec<RawFd>> = parking_lot::Mutex::new(Vec::new());
    if fd < 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "negative file descriptor",
        ));
    }
    let mut adopted = ADOPTED.lock();
    if adopted.contains(&fd) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "descriptor already adopted by this process",
        ));
    }
    // SAFETY: stat is plain old data; all-zero is a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat only writes into the stat buffer we own; an invalid
    // descriptor makes it fail with EBADF.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "descriptor is not a socket",
        ));
    }
    // SAFETY: fcntl on a descriptor just checked to be open; no memory.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFD);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
        }
    }
    adopted.push(fd);
    // SAFETY: `fd` is an open socket (checked above) that the launcher left
    // open across exec for this process; nothing in this process opened it,
    // so no other owner exists, and the `ADOPTED` list guarantees it is
    // turned into an OwnedFd at most once, so it is closed exactly once.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}
