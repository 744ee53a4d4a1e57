//! Batched datagram receives (recvmmsg) and socket addresses from C.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::os::fd::RawFd;

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
