//! Batched datagram receives (recvmmsg) and sends (sendmmsg), with UDP
//! GRO's sizes on receive and GSO's trains on send (`udp_path.rs`), and
//! socket addresses from C.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::RawFd;

use super::udp_path::{gro_size, GsoCmsg, GSO_MAX_SEGMENTS, RECV_CMSG_SPACE};

/// Receives up to `slots` datagrams with one `recvmmsg` call.
pub struct BatchReceiver {
    buf: Vec<u8>,
    /// Where slot 0 starts in `buf`: the first page boundary (see `SLOT_ALIGN`).
    base: usize,
    slot_size: usize,
    names: Vec<libc::sockaddr_storage>,
    iov: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
    /// Each slot's control messages (UDP GRO's segment size).
    ctrl: Vec<[u64; RECV_CMSG_SPACE / 8]>,
}

// SAFETY: the raw pointers inside `iov`/`hdrs` are set once (`point`) and
// only ever point into the receiver's own heap buffers, which never move.
unsafe impl Send for BatchReceiver {}

/// Alignment of each receive slot. The kernel's copy of a datagram into
/// user memory (`copy_to_iter`, `rep movsb`) runs at a third of its speed
/// when the destination starts 4 to 28 bytes past a cache line on the AMD
/// Zen 3 of our machines (measured: 2.4 against 7.3 GB/s for 65,507-byte
/// datagrams on loopback), and a large `Vec` from malloc starts 16 bytes
/// past a page. A page boundary is fast on every CPU measured; slot sizes
/// are multiples of it.
const SLOT_ALIGN: usize = 4096;

impl BatchReceiver {
    pub fn new(slots: usize, slot_size: usize) -> BatchReceiver {
        let slots = slots.max(1);
        let buf = vec![0u8; slots * slot_size + SLOT_ALIGN];
        let base = buf.as_ptr().align_offset(SLOT_ALIGN).min(SLOT_ALIGN);
        let mut r = BatchReceiver {
            buf,
            base,
            slot_size,
            // SAFETY: sockaddr_storage is plain old data; all-zero is valid.
            names: vec![unsafe { std::mem::zeroed() }; slots],
            iov: Vec::with_capacity(slots),
            // SAFETY: mmsghdr is plain old data; all-zero is valid.
            hdrs: vec![unsafe { std::mem::zeroed() }; slots],
            ctrl: vec![[0; RECV_CMSG_SPACE / 8]; slots],
        };
        r.point();
        r
    }

    /// Points every header at its slot, name and control buffer, once.
    /// Every pointer is into a heap buffer of `self` that never grows past
    /// its first capacity (`iov` holds `hdrs.len()`), so they stay valid
    /// when the receiver moves; the kernel writes only the lengths and the
    /// flags of a header (`reset`), never its pointers nor the `iovec`s.
    fn point(&mut self) {
        let slots = self.hdrs.len();
        self.iov.clear();
        for i in 0..slots {
            self.iov.push(libc::iovec {
                iov_base: self.buf[self.base + i * self.slot_size..]
                    .as_mut_ptr()
                    .cast(),
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
            h.msg_hdr.msg_control = self.ctrl[i].as_mut_ptr().cast();
            h.msg_hdr.msg_controllen = RECV_CMSG_SPACE as _;
            h.msg_hdr.msg_flags = 0;
            h.msg_len = 0;
        }
    }

    /// Header `i` ready for a receive: the lengths and flags the kernel
    /// overwrites set back (its pointers stay as `point` set them).
    #[inline]
    fn reset(h: &mut libc::mmsghdr) {
        h.msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        h.msg_hdr.msg_controllen = RECV_CMSG_SPACE as _;
        h.msg_hdr.msg_flags = 0;
    }

    /// `recv` of at most one datagram, into slot 0 (`datagram(0)`): one
    /// `recvmsg` with header 0 as `point` left it, nothing to set up but
    /// the lengths the kernel overwrites. A ping-pong's receives, found or
    /// not, are all of this kind.
    pub fn recv_one(&mut self, fd: RawFd) -> std::io::Result<usize> {
        loop {
            let h = &mut self.hdrs[0];
            Self::reset(h);
            // SAFETY: header 0 points into heap buffers owned by `self`
            // (`point`), valid for the lengths given, for the whole call.
            let r = unsafe { libc::recvmsg(fd, &mut h.msg_hdr, libc::MSG_DONTWAIT) };
            if r >= 0 {
                h.msg_len = r as libc::c_uint;
                return Ok(1);
            }
            match received_error() {
                None => continue,
                Some(Ok(())) => return Ok(0),
                Some(Err(e)) => return Err(e),
            }
        }
    }

    /// Takes up to `max` datagrams waiting on non-blocking `fd` (0 when
    /// nothing is): one `recvmsg` for one, else one `recvmmsg`. With UDP
    /// GRO on, a slot may hold several (`datagram`'s segment size).
    pub fn recv(&mut self, fd: RawFd, max: usize) -> std::io::Result<usize> {
        let slots = max.clamp(1, self.hdrs.len());
        if slots == 1 {
            return self.recv_one(fd);
        }
        for h in &mut self.hdrs[..slots] {
            Self::reset(h);
        }
        loop {
            // SAFETY: every header points into buffers owned by `self`
            // that outlive the call, with the lengths given (`point`).
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
            match received_error() {
                None => continue,
                Some(Ok(())) => return Ok(0),
                Some(Err(e)) => return Err(e),
            }
        }
    }

    /// Slot `i` as a plain buffer (for single reads without recvmmsg).
    pub fn slot(&mut self, i: usize) -> &mut [u8] {
        let at = self.base + i * self.slot_size;
        &mut self.buf[at..at + self.slot_size]
    }

    /// Datagram `i` of the last `recv`: its bytes (None when it was cut short
    /// by the slot size), its sender, and with UDP GRO the size of the
    /// datagrams it holds back to back (None: it is one; the size as the
    /// kernel said it, unchecked: `net::udp_offload::segments`).
    pub fn datagram(&self, i: usize) -> (Option<&[u8]>, Option<SocketAddr>, Option<usize>) {
        let h = &self.hdrs[i];
        let len = (h.msg_len as usize).min(self.slot_size);
        let truncated = h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
        let at = self.base + i * self.slot_size;
        let bytes = (!truncated).then(|| &self.buf[at..at + len]);
        (bytes, sockaddr_to_std(&self.names[i]), gro_size(&h.msg_hdr))
    }
}

/// What a failed receive's `errno` means: `None` to try again (a signal,
/// or an ICMP error of an earlier send, which the protocol's timers
/// handle), `Some(Ok(()))` nothing waiting, else the error.
fn received_error() -> Option<std::io::Result<()>> {
    let e = std::io::Error::last_os_error();
    match e.kind() {
        std::io::ErrorKind::WouldBlock => Some(Ok(())),
        std::io::ErrorKind::Interrupted | std::io::ErrorKind::ConnectionRefused => None,
        _ => Some(Err(e)),
    }
}

/// Sends batches of datagrams with one `sendmmsg` call each.
pub struct BatchSender {
    names: Vec<libc::sockaddr_storage>,
    name_lens: Vec<libc::socklen_t>,
    iov: Vec<libc::iovec>,
    /// Each message: where its pieces start in `iov` and how many, its
    /// first datagram and how many it carries (more than one: a GSO
    /// train, whose control message is `gso[k]`).
    msgs: Vec<Msg>,
    gso: Vec<GsoCmsg>,
    hdrs: Vec<libc::mmsghdr>,
}

#[derive(Clone, Copy)]
struct Msg {
    iov_first: usize,
    iov_count: usize,
    first: usize,
    count: usize,
    /// Its GSO control message (an index into `gso`), for a train.
    gso: Option<usize>,
}

/// A datagram as up to three pieces sent back to back (empty ones skipped).
pub type Gathered<'a> = [&'a [u8]; 3];

/// Most bytes of one GSO train (the kernel takes up to 65,535 less the
/// headers).
const GSO_MAX_BYTES: usize = 65_000;

/// Whether a send's `errno` says the path (this socket's address to that
/// destination) is broken, not the socket: no route (`ENETUNREACH`,
/// `EHOSTUNREACH`), the interface down (`ENETDOWN`) or its address gone
/// (`EADDRNOTAVAIL`), a firewall's refusal (`EPERM`), an address this
/// socket's cannot send to (`EINVAL` of one datagram: a loopback rail to
/// another host's address; of a GSO train it is the train's refusal,
/// `Refused`). A path event for the protocol (`net::PathNews::Down`),
/// never the endpoint's error.
pub fn is_path_error(errno: i32) -> bool {
    matches!(
        errno,
        libc::ENETUNREACH
            | libc::EHOSTUNREACH
            | libc::ENETDOWN
            | libc::EADDRNOTAVAIL
            | libc::EPERM
            | libc::EINVAL
    )
}

/// A message of a batch the kernel refused (`BatchSender::send`): its
/// datagrams `first..first + count` of the batch (more than one: a GSO
/// train) and the error's number.
/// (`is_path_error` numbers: the whole message is refused for its path.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refused {
    pub first: usize,
    pub count: usize,
    pub errno: i32,
}

// SAFETY: the raw pointers inside `iov`/`hdrs` are rebuilt before every use
// and only point into the sender's own vectors and the caller's datagrams
// for the length of one call.
unsafe impl Send for BatchSender {}

impl Default for BatchSender {
    fn default() -> Self {
        BatchSender::new()
    }
}

impl BatchSender {
    pub fn new() -> BatchSender {
        BatchSender {
            names: Vec::new(),
            name_lens: Vec::new(),
            iov: Vec::new(),
            msgs: Vec::new(),
            gso: Vec::new(),
            hdrs: Vec::new(),
        }
    }

    /// Sends every datagram of `dgrams` on non-blocking `fd`, as few calls
    /// as the kernel allows. A datagram is gathered from its (up to three)
    /// pieces in order, empty pieces skipped: header, payload, trailer go
    /// out without being copied together first. With `gso`, consecutive
    /// datagrams to one address of one size (the last of them may be
    /// shorter) go as one GSO train (`UDP_SEGMENT`: the kernel cuts it).
    /// A datagram the kernel will not take now (full buffer, an ICMP error
    /// of an earlier send) counts as lost and is skipped: the protocol
    /// resends it. One larger than the route carries (`EMSGSIZE`), or a
    /// train the kernel refuses (`EINVAL`, `EOPNOTSUPP`, `EIO`), goes to
    /// `refused` and the batch goes on, as does one whose path is broken
    /// (`is_path_error`: the route, the interface, a firewall). Other
    /// errors end the call.
    pub fn send<'a, 'b: 'a>(
        &mut self,
        fd: RawFd,
        dgrams: impl ExactSizeIterator<Item = (SocketAddr, &'a Gathered<'b>)>,
        gso: bool,
        refused: &mut dyn FnMut(Refused),
    ) -> std::io::Result<()> {
        if dgrams.len() == 0 {
            return Ok(());
        }
        self.names.clear();
        self.name_lens.clear();
        self.iov.clear();
        self.msgs.clear();
        self.gso.clear();
        // the open train: its address, segment size, bytes; closed by a
        // shorter datagram
        let mut train: Option<(SocketAddr, usize, usize)> = None;
        for (i, (to, parts)) in dgrams.enumerate() {
            let len: usize = parts.iter().map(|p| p.len()).sum();
            let joins = match (gso, train, self.msgs.last()) {
                (true, Some((t, seg, bytes)), Some(m)) => {
                    t == to
                        && len > 0
                        && len <= seg
                        && m.count < GSO_MAX_SEGMENTS
                        && bytes + len <= GSO_MAX_BYTES
                }
                _ => false,
            };
            if !joins {
                self.push_name(to);
                self.msgs.push(Msg {
                    iov_first: self.iov.len(),
                    iov_count: 0,
                    first: i,
                    count: 0,
                    gso: None,
                });
            }
            for d in parts.iter().filter(|d| !d.is_empty()) {
                self.iov.push(libc::iovec {
                    iov_base: d.as_ptr() as *mut libc::c_void,
                    iov_len: d.len(),
                });
            }
            let m = self.msgs.last_mut().expect("a message was pushed");
            m.iov_count = self.iov.len() - m.iov_first;
            m.count += 1;
            if let (true, None, Some((_, seg, _))) = (joins, m.gso, train) {
                // the second datagram makes a train: its segments are the
                // first's size
                m.gso = Some(self.gso.len());
                self.gso.push(GsoCmsg::new(seg as u16));
            }
            train = match train {
                Some((t, seg, bytes)) if joins && len == seg => Some((t, seg, bytes + len)),
                _ if joins => None,
                _ => Some((to, len, len)),
            };
        }
        let n = self.msgs.len();
        // SAFETY: mmsghdr is plain old data; all-zero is valid.
        self.hdrs.resize(n, unsafe { std::mem::zeroed() });
        for i in 0..n {
            let m = self.msgs[i];
            let h = &mut self.hdrs[i];
            h.msg_hdr.msg_name = (&mut self.names[i] as *mut libc::sockaddr_storage).cast();
            h.msg_hdr.msg_namelen = self.name_lens[i];
            h.msg_hdr.msg_iov = if m.iov_count == 0 {
                std::ptr::null_mut()
            } else {
                &mut self.iov[m.iov_first]
            };
            h.msg_hdr.msg_iovlen = m.iov_count as _;
            match m.gso {
                Some(k) => {
                    h.msg_hdr.msg_control = self.gso[k].as_ptr();
                    h.msg_hdr.msg_controllen = GsoCmsg::space() as _;
                }
                None => {
                    h.msg_hdr.msg_control = std::ptr::null_mut();
                    h.msg_hdr.msg_controllen = 0;
                }
            }
            h.msg_hdr.msg_flags = 0;
            h.msg_len = 0;
        }
        let mut i = 0;
        while i < n {
            // SAFETY: headers i..n point into `self`'s vectors and into the
            // caller's datagrams, all alive for the call, with their lengths.
            let r = unsafe {
                libc::sendmmsg(
                    fd,
                    self.hdrs[i..].as_mut_ptr(),
                    (n - i) as libc::c_uint,
                    libc::MSG_DONTWAIT,
                )
            };
            if r > 0 {
                i += r as usize;
                continue;
            }
            let e = std::io::Error::last_os_error();
            let errno = e.raw_os_error().unwrap_or(0);
            let m = self.msgs[i];
            let train_refused = m.count > 1
                && matches!(
                    errno,
                    libc::EINVAL | libc::EOPNOTSUPP | libc::EIO | libc::EMSGSIZE
                );
            match e.kind() {
                std::io::ErrorKind::Interrupted => continue,
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::ConnectionRefused => i += 1,
                _ if errno == libc::ENOBUFS => i += 1,
                _ if errno == libc::EMSGSIZE || train_refused || is_path_error(errno) => {
                    refused(Refused {
                        first: m.first,
                        count: m.count,
                        errno,
                    });
                    i += 1;
                }
                _ => return Err(e),
            }
        }
        Ok(())
    }

    /// Appends `to` in the kernel's form to `names`.
    fn push_name(&mut self, to: SocketAddr) {
        let a = socket2::SockAddr::from(to);
        // SAFETY: sockaddr_storage is plain old data; all-zero is valid.
        let mut st: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let len = (a.len() as usize).min(std::mem::size_of::<libc::sockaddr_storage>());
        // SAFETY: `a` holds `len` valid bytes of a socket address and `st`
        // has room for them (bounded above); the regions are distinct.
        unsafe {
            std::ptr::copy_nonoverlapping(
                a.as_ptr().cast::<u8>(),
                (&mut st as *mut libc::sockaddr_storage).cast::<u8>(),
                len,
            );
        }
        self.names.push(st);
        self.name_lens.push(len as libc::socklen_t);
    }
}

fn sockaddr_to_std(s: &libc::sockaddr_storage) -> Option<std::net::SocketAddr> {
    use std::net::{SocketAddrV4, SocketAddrV6};
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    #[test]
    fn a_batch_reaches_each_destination_in_order() {
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        let (pa, pb) = (a.local_addr().unwrap(), b.local_addr().unwrap());
        let big = vec![7u8; 60_000];
        let e: &[u8] = &[];
        let batch: Vec<(SocketAddr, Gathered<'_>)> = vec![
            (pa, [b"o", b"n", b"e"]),
            (pb, [e, &big, e]),
            (pa, [b"three", e, e]),
            (pa, [e, e, e]),
        ];
        let mut s = BatchSender::new();
        let no = &mut |r| panic!("refused {r:?}");
        s.send(
            tx.as_raw_fd(),
            batch.iter().map(|(to, d)| (*to, d)),
            false,
            no,
        )
        .unwrap();
        s.send(tx.as_raw_fd(), std::iter::empty(), true, no)
            .unwrap();
        let mut buf = vec![0u8; 65536];
        for want in [&b"one"[..], b"three", b""] {
            let (n, from) = a.recv_from(&mut buf).unwrap();
            assert_eq!((&buf[..n], from), (want, tx.local_addr().unwrap()));
        }
        let (n, _) = b.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..n], &big[..]);
    }

    #[test]
    fn every_receive_slot_starts_on_a_page_and_datagrams_arrive_whole() {
        // A large Vec from malloc starts 16 bytes past a page, where the
        // kernel's copy of a datagram runs at a third of its speed (Zen 3).
        // Several sizes: each allocation lands somewhere else.
        for (slots, size) in [(16, 65536), (3, 4096), (1, 8192), (5, 65536)] {
            let mut r = BatchReceiver::new(slots, size);
            for i in 0..slots {
                let at = r.slot(i).as_ptr() as usize;
                assert_eq!(at % SLOT_ALIGN, 0, "slot {i} of {slots}x{size} at {at:#x}");
                assert_eq!(r.slot(i).len(), size);
            }
        }
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_nonblocking(true).unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut r = BatchReceiver::new(4, 65536);
        let sent: Vec<Vec<u8>> = (0..4u8).map(|i| vec![i + 1; 20_000 + i as usize]).collect();
        for d in &sent {
            tx.send_to(d, rx.local_addr().unwrap()).unwrap();
        }
        let mut got = Vec::new();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while got.len() < sent.len() {
            assert!(
                std::time::Instant::now() < deadline,
                "received {} of 4",
                got.len()
            );
            let n = r.recv(rx.as_raw_fd(), 4).unwrap();
            for i in 0..n {
                let (d, from, gro) = r.datagram(i);
                assert_eq!((from, gro), (Some(tx.local_addr().unwrap()), None));
                got.push(d.unwrap().to_vec());
            }
        }
        assert_eq!(got, sent);
    }

    #[test]
    fn headers_pointed_once_serve_receive_after_receive() {
        // Headers are pointed once (`point`); each receive resets only what
        // the kernel wrote: a truncated datagram's flag, a shorter sender
        // name, one datagram or several, must not leak into the next.
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_nonblocking(true).unwrap();
        let to = rx.local_addr().unwrap();
        let (a, b) = (
            UdpSocket::bind("127.0.0.1:0").unwrap(),
            UdpSocket::bind("127.0.0.1:0").unwrap(),
        );
        let mut r = BatchReceiver::new(3, 4096);
        let take = |r: &mut BatchReceiver, max: usize, want: usize| {
            let mut got = Vec::new();
            // (loopback queues a datagram before send_to returns: nothing
            // to time; one that never came would hang here, not pass)
            while got.len() < want {
                let n = r.recv(rx.as_raw_fd(), max).unwrap();
                for i in 0..n {
                    let (d, from, _) = r.datagram(i);
                    got.push((d.map(<[u8]>::len), from.unwrap().port()));
                }
            }
            got
        };
        let (pa, pb) = (
            a.local_addr().unwrap().port(),
            b.local_addr().unwrap().port(),
        );
        // too long for its slot (truncated: no bytes), then whole ones
        a.send_to(&[1; 5000], to).unwrap();
        b.send_to(&[2; 100], to).unwrap();
        assert_eq!(take(&mut r, 3, 2), [(None, pa), (Some(100), pb)]);
        b.send_to(&[3; 7], to).unwrap();
        assert_eq!(take(&mut r, 1, 1), [(Some(7), pb)]);
        for (s, len) in [(&a, 10), (&b, 20), (&a, 30)] {
            s.send_to(&vec![4; len], to).unwrap();
        }
        let got = take(&mut r, 3, 3);
        assert_eq!(got, [(Some(10), pa), (Some(20), pb), (Some(30), pa)]);
    }
}
