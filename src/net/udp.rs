//! UDP: one non-blocking socket per endpoint for all its peers, IPv4 or
//! IPv6 (the `Transport` core), and the sockets connected to its busiest
//! peers that an association's small packets may leave through (the
//! `ConnectedPorts` capability, `udp_conns.rs`).

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};

use socket2::{Domain, Protocol, SockAddr, SockRef, Socket, Type};

use super::udp_conns::Conns;
use super::{
    Connectable, ConnectedPorts, DatagramSink, Outgoing, Transport, RECV_BATCH, RECV_SLOT,
};
use crate::clock::Clock;
use crate::sys::{BatchReceiver, BatchSender};
use crate::time::Instant;

/// The largest datagram sent through a connected socket (`udp_conns.rs`):
/// a short one's route look-up is a good part of its send; a bulk one's
/// is nothing beside its copy, and it leaves through the endpoint's
/// socket as before (A/B runs of `scripts/udp-xfer-profile.sh` could not
/// tell the two apart: the host's copy times varied 2x between runs).
pub const CONNECTED_MAX: usize = 4096;

pub struct UdpTransport {
    sock: UdpSocket,
    local: SocketAddr,
    batch: BatchReceiver,
    sender: BatchSender,
    /// Datagrams the next receive asks for.
    want: usize,
    /// Receives of one datagram in a row.
    singles: u32,
    /// The last destination of `send`, and it in the kernel's form: kept
    /// for the next send to the same peer (a round trip's, the usual case),
    /// which is made without converting it again.
    last_to: SocketAddr,
    last_raw: SockAddr,
    /// Sockets connected to peers (`udp_conns.rs`), for the datagrams
    /// `connectable` picks (None: every datagram goes through `sock`).
    conns: Conns,
    connectable: Option<Connectable>,
    /// Receives in a row that found nothing (every 16th reads `conns`).
    empty: u32,
    /// When `conns` were last read (they are, at least every millisecond
    /// an empty receive comes: an endpoint that sleeps between timers).
    drained: Instant,
    /// The endpoint's clock (`with_clock`).
    clock: Clock,
}

impl UdpTransport {
    /// Binds to `addr` (port 0 picks a free one) with kernel buffers of
    /// `buffer` bytes each (as far as the system allows).
    pub fn bind(addr: SocketAddr, buffer: usize) -> io::Result<UdpTransport> {
        let sock = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
        if addr.is_ipv6() {
            sock.set_only_v6(true)?;
        }
        // Best effort: the system may cap the sizes; the protocol copes.
        let _ = sock.set_recv_buffer_size(buffer);
        let _ = sock.set_send_buffer_size(buffer);
        sock.set_nonblocking(true)?;
        sock.bind(&addr.into())?;
        let sock: UdpSocket = sock.into();
        let local = sock.local_addr()?;
        if local.port() == 0 || local.ip().is_unspecified() {
            return Err(io::Error::new(
                io::ErrorKind::AddrNotAvailable,
                format!("bound to {local}, which peers cannot reach"),
            ));
        }
        Ok(UdpTransport {
            sock,
            local,
            batch: BatchReceiver::new(RECV_BATCH, RECV_SLOT),
            sender: BatchSender::new(),
            want: 1,
            singles: 0,
            last_to: local,
            last_raw: SockAddr::from(local),
            conns: Conns::new(buffer, false),
            connectable: None,
            empty: 0,
            drained: Instant::ZERO,
            clock: Clock::Real,
        })
    }

    /// The transport, keeping time by `clock` (the endpoint's).
    pub fn with_clock(mut self, clock: Clock) -> UdpTransport {
        self.clock = clock;
        self
    }

    /// Connected sockets made so far, and standing now.
    #[cfg(test)]
    pub fn connected(&self) -> (u64, usize) {
        (self.conns.made, self.conns.len())
    }

    /// Every 16th receive in a row that found nothing, and any a
    /// millisecond after the last reading: what came to the connected
    /// sockets (answers to their packets, rare), as from their peers.
    fn after_empty(&mut self, each: &mut DatagramSink<'_>) -> usize {
        self.empty = self.empty.wrapping_add(1);
        if self.connectable.is_none() {
            return 0;
        }
        if !self.empty.is_multiple_of(16) {
            let now = self.clock.now();
            if now.since(self.drained) < crate::time::MILLIS {
                return 0;
            }
            self.drained = now;
        }
        let mut n = 0;
        self.conns.drain(self.batch.slot(0), &mut |d, from| {
            each(Some((d, from)));
            n += 1;
        });
        n
    }
}

/// `send`'s outcome: a datagram the kernel could not take is lost like
/// any other (the protocol resends it).
fn sent(mut send: impl FnMut() -> io::Result<usize>) -> io::Result<()> {
    loop {
        match send() {
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e)
                if e.kind() == io::ErrorKind::WouldBlock
                    || e.raw_os_error() == Some(libc::ENOBUFS)
                    || e.kind() == io::ErrorKind::ConnectionRefused =>
            {
                return Ok(());
            }
            Err(e) => return Err(e),
        }
    }
}

impl UdpTransport {
    /// Sets the next receive's size from what the last one, of `want`,
    /// found (`recv_batch`).
    fn found(&mut self, want: usize, n: usize) {
        self.singles = if n == 1 { self.singles + 1 } else { 0 };
        self.want = match n {
            // a full batch: more may wait
            n if n >= 2 && n == want => (2 * n).min(RECV_BATCH),
            n if n >= 2 => n,
            // a batch that found one: the burst is over; start again
            1 if want >= 2 => {
                self.singles = 0;
                1
            }
            1 if self.singles >= 2 => 2,
            _ => 1,
        };
    }
}

impl Transport for UdpTransport {
    fn send(&mut self, _now: Instant, to: SocketAddr, dgram: &[u8]) -> io::Result<()> {
        // a small packet of an association: through the socket connected
        // to the peer (a handshake's comes from the endpoint's own address)
        if dgram.len() <= CONNECTED_MAX {
            if let Some(tag) = self.connectable.and_then(|c| (c.tag_of)(dgram)) {
                if let Some(s) = self.conns.socket_for(self.local, to, tag) {
                    return sent(|| s.send(dgram));
                }
            }
        }
        if to != self.last_to {
            self.last_to = to;
            self.last_raw = SockAddr::from(to);
        }
        let (sock, raw) = (&self.sock, &self.last_raw);
        sent(|| SockRef::from(sock).send_to(dgram, raw))
    }

    fn send_batch(&mut self, now: Instant, dgrams: &[Outgoing<'_>]) -> io::Result<()> {
        match dgrams {
            // one datagram in one piece: plain sendto costs the kernel less
            [(path, [d, [], []])] => self.send(now, path.remote, d),
            _ => self.sender.send(
                self.sock.as_raw_fd(),
                dgrams.iter().map(|(path, parts)| (path.remote, parts)),
            ),
        }
    }

    fn recv_batch(&mut self, each: &mut DatagramSink<'_>) -> io::Result<usize> {
        // One datagram at a time with plain recvfrom until two receives in
        // a row found one each (a burst may be starting), then batches
        // that double while they come back full. In a ping-pong the
        // receive after a datagram finds nothing: recvmmsg costs the
        // kernel more per call than recvfrom, found or not, and asking for
        // more than is there costs it a second, failing attempt, both in
        // the polling loop a round trip waits in.
        let want = self.want;
        if want == 1 {
            let buf = self.batch.slot(0);
            let n = loop {
                match self.sock.recv_from(buf) {
                    Ok((len, from)) => {
                        each(Some((&buf[..len], from)));
                        break 1;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break 0,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    // An ICMP error of an earlier send; the protocol's timers
                    // report a peer that is gone.
                    Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => continue,
                    Err(e) => return Err(e),
                }
            };
            self.found(want, n);
            if n == 0 {
                return Ok(self.after_empty(each));
            }
            self.empty = 0;
            return Ok(n);
        }
        let n = self.batch.recv(self.sock.as_raw_fd(), want)?;
        self.found(want, n);
        if n == 0 {
            return Ok(self.after_empty(each));
        }
        self.empty = 0;
        for i in 0..n {
            match self.batch.datagram(i) {
                (Some(d), Some(from)) => each(Some((d, from))),
                _ => each(None),
            }
        }
        Ok(n)
    }

    fn local_addr(&self) -> SocketAddr {
        self.local
    }

    fn fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }

    fn readable(&self) -> bool {
        crate::sys::poll_fds(&[self.sock.as_raw_fd()], 0)
            .first()
            .copied()
            .unwrap_or(false)
    }

    fn connected_ports(&mut self) -> Option<&mut dyn ConnectedPorts> {
        Some(self)
    }
}

impl ConnectedPorts for UdpTransport {
    fn set_connectable(&mut self, f: Option<Connectable>) {
        if f.is_none_or(|c| c.announce != self.conns.announce) {
            self.conns = Conns::new(self.conns.buffer, f.is_some_and(|c| c.announce));
        }
        self.connectable = f;
    }

    fn aliases_to_announce(&mut self, now: Instant, each: &mut dyn FnMut(SocketAddr, u16)) {
        self.conns.announce_due(now, each);
    }

    fn alias_accepted(&mut self, to: SocketAddr, port: u16, tag: u64) {
        self.conns.accepted(to, port, tag);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::udp_conns::MAX_CONNS;

    fn take(t: &mut UdpTransport) -> usize {
        let mut got = 0;
        let n = t
            .recv_batch(&mut |d| {
                assert_eq!(d.map(|(b, _)| b.len()), Some(3));
                got += 1;
            })
            .unwrap();
        assert_eq!(n, got);
        n
    }

    /// A lone datagram (a ping-pong) is read one at a time; a burst, once
    /// two receives in a row found datagrams, in batches that double.
    #[test]
    fn receives_grow_only_in_a_burst() {
        let mut t = UdpTransport::bind("127.0.0.1:0".parse().unwrap(), 1 << 20).unwrap();
        let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = t.local_addr();
        let wait_for = |t: &mut UdpTransport| loop {
            crate::sys::wait_readable(&[t.fd()], 1000);
            if let n @ 1.. = take(t) {
                return n;
            }
        };
        for _ in 0..3 {
            peer.send_to(b"abc", to).unwrap();
            assert_eq!(wait_for(&mut t), 1);
            assert_eq!(take(&mut t), 0);
        }
        for _ in 0..12 {
            peer.send_to(b"abc", to).unwrap();
        }
        // loopback delivers at once: all twelve wait
        let mut sizes = vec![wait_for(&mut t)];
        while sizes.iter().sum::<usize>() < 12 {
            sizes.push(wait_for(&mut t));
        }
        assert_eq!(sizes, [1, 1, 2, 4, 4]);
        assert_eq!(take(&mut t), 0);
        // after the burst, a lone datagram is read by itself again
        peer.send_to(b"abc", to).unwrap();
        assert_eq!(wait_for(&mut t), 1);
    }

    /// Every receive finding exactly one datagram (one thread polling two
    /// endpoints in turn): at most one receive in three asks for a batch.
    #[test]
    fn one_datagram_per_receive_asks_for_a_batch_rarely() {
        let mut t = UdpTransport::bind("127.0.0.1:0".parse().unwrap(), 1 << 20).unwrap();
        let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = t.local_addr();
        let mut asked = Vec::new();
        for _ in 0..9 {
            peer.send_to(b"abc", to).unwrap();
            asked.push(t.want);
            // readable first: no receive finds nothing
            crate::sys::wait_readable(&[t.fd()], 1000);
            assert_eq!(take(&mut t), 1);
        }
        assert_eq!(asked, [1, 1, 2, 1, 1, 2, 1, 1, 2]);
    }

    /// A datagram the tests' `connectable` picks.
    fn data_packet() -> Vec<u8> {
        b"D\x05 an association's packet".to_vec()
    }

    /// The tests' association tag: a 'D' datagram's second byte.
    fn tag_of(d: &[u8]) -> Option<u64> {
        (d.first() == Some(&b'D')).then(|| u64::from(d[1]))
    }

    fn connectable(announce: bool) -> Connectable {
        Connectable { tag_of, announce }
    }

    fn connecting() -> UdpTransport {
        let mut t = UdpTransport::bind("127.0.0.1:0".parse().unwrap(), 1 << 20).unwrap();
        t.set_connectable(Some(connectable(false)));
        t
    }

    /// The ports `aliases_to_announce` names at `now`.
    fn to_announce(t: &mut UdpTransport, now: Instant) -> Vec<(SocketAddr, u16)> {
        let mut v = Vec::new();
        t.aliases_to_announce(now, &mut |to, port| v.push((to, port)));
        v
    }

    /// Announced aliases (without a MAC): an association's packets leave
    /// from the name until the layer above says the peer took the socket's
    /// port for the association's tag; the port is named at once, then
    /// after `ANNOUNCE_EVERY`, each wait twice the last up to 64 times it,
    /// until taken; a taking for another port or
    /// tag changes nothing; a new association (another tag) waits again;
    /// a full set takes no new peer (a port given up could be anyone's).
    #[test]
    fn announced_aliases_carry_nothing_until_the_peer_takes_them() {
        use crate::net::udp_conns::ANNOUNCE_EVERY;
        let mut t = UdpTransport::bind("127.0.0.1:0".parse().unwrap(), 1 << 20).unwrap();
        t.set_connectable(Some(connectable(true)));
        let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
        let peer_addr = peer.local_addr().unwrap();
        let mut buf = [0u8; 64];
        let now = Instant::ZERO;
        let mut from = |t: &mut UdpTransport, tag: u8| {
            let mut d = data_packet();
            d[1] = tag;
            t.send(now, peer_addr, &d).unwrap();
            peer.recv_from(&mut buf).unwrap().1
        };
        assert_eq!(to_announce(&mut t, now), [], "nothing sent yet");
        assert_eq!(from(&mut t, 7), t.local_addr(), "not taken yet: the name");
        let named = to_announce(&mut t, now);
        assert_eq!(named.len(), 1);
        let (to, port) = named[0];
        assert_eq!(to, peer_addr);
        assert_ne!(port, t.local_addr().port());
        assert_eq!(
            to_announce(&mut t, now.plus(ANNOUNCE_EVERY - 1)),
            [],
            "not again so soon"
        );
        assert_eq!(
            to_announce(&mut t, now.plus(ANNOUNCE_EVERY)),
            named,
            "again"
        );
        // then each wait twice the one before, up to 64 times the first
        let mut at = now.plus(ANNOUNCE_EVERY);
        for k in 1..10u32 {
            let wait = ANNOUNCE_EVERY << k.min(6);
            assert_eq!(to_announce(&mut t, at.plus(wait - 1)), [], "wait {k}");
            at = at.plus(wait);
            assert_eq!(to_announce(&mut t, at), named, "after wait {k}");
        }
        // taken for another port, or by another peer: nothing changes
        t.alias_accepted(peer_addr, port.wrapping_add(1), 7);
        t.alias_accepted(t.local_addr(), port, 7);
        assert_eq!(from(&mut t, 7), t.local_addr());
        // taken for tag 7: its packets leave from the port
        t.alias_accepted(peer_addr, port, 7);
        let conn = from(&mut t, 7);
        assert_eq!(conn, SocketAddr::new(t.local_addr().ip(), port));
        assert_eq!(to_announce(&mut t, now.plus(10 * ANNOUNCE_EVERY)), []);
        // a new association with the peer (tag 8): the name until taken
        assert_eq!(from(&mut t, 8), t.local_addr());
        assert_eq!(to_announce(&mut t, now.plus(10 * ANNOUNCE_EVERY)), named);
        t.alias_accepted(peer_addr, port, 8);
        assert_eq!(from(&mut t, 8), conn);
        // a full set takes no new peer, however idle the others are
        let others: Vec<UdpSocket> = (1..MAX_CONNS)
            .map(|_| UdpSocket::bind("127.0.0.1:0").unwrap())
            .collect();
        for o in &others {
            t.send(now, o.local_addr().unwrap(), &data_packet())
                .unwrap();
        }
        assert_eq!(t.connected().1, MAX_CONNS);
        let late = UdpSocket::bind("127.0.0.1:0").unwrap();
        for _ in 0..5000 {
            from(&mut t, 8);
        }
        t.send(now, late.local_addr().unwrap(), &data_packet())
            .unwrap();
        assert_eq!(late.recv_from(&mut buf).unwrap().1, t.local_addr());
        assert_eq!(
            t.connected(),
            (MAX_CONNS as u64, MAX_CONNS),
            "none replaced"
        );
    }

    /// An association's packets leave from a port of their own connected
    /// to the peer, a handshake's from the endpoint's; what the peer sends
    /// back to that port is read after 16 empty receives, as from the
    /// peer; `set_connectable(None)`: everything from the endpoint's port.
    #[test]
    fn association_packets_leave_through_a_socket_connected_to_the_peer() {
        let mut t = connecting();
        let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
        let peer_addr = peer.local_addr().unwrap();
        let mut buf = [0u8; 64];
        let now = Instant::ZERO;
        t.send(now, peer_addr, &data_packet()).unwrap();
        let (_, conn) = peer.recv_from(&mut buf).unwrap();
        assert_eq!(conn.ip(), t.local_addr().ip());
        assert_ne!(conn, t.local_addr(), "another port");
        assert_eq!(t.connected(), (1, 1));
        t.send(now, peer_addr, &data_packet()).unwrap();
        assert_eq!(
            peer.recv_from(&mut buf).unwrap().1,
            conn,
            "the same socket again"
        );
        t.send(now, peer_addr, b"a handshake's").unwrap();
        assert_eq!(peer.recv_from(&mut buf).unwrap().1, t.local_addr());
        // a bulk one: its route look-up is nothing beside its copy
        let mut big = data_packet();
        big.resize(CONNECTED_MAX + 1, 0);
        t.send(now, peer_addr, &big).unwrap();
        let mut bigbuf = vec![0u8; CONNECTED_MAX + 8];
        assert_eq!(
            peer.recv_from(&mut bigbuf).unwrap(),
            (big.len(), t.local_addr())
        );
        // an answer to the connected port, and a stranger's datagram there
        // (the kernel takes only the peer's into a connected socket)
        let stranger = UdpSocket::bind("127.0.0.1:0").unwrap();
        stranger.send_to(b"xyz", conn).unwrap();
        peer.send_to(b"abc", conn).unwrap();
        let mut from = Vec::new();
        for _ in 0..16 {
            t.recv_batch(&mut |d| from.push(d.map(|(b, f)| (b.to_vec(), f))))
                .unwrap();
        }
        assert_eq!(from, [Some((b"abc".to_vec(), peer_addr))]);
        t.set_connectable(None);
        t.send(now, peer_addr, &data_packet()).unwrap();
        assert_eq!(peer.recv_from(&mut buf).unwrap().1, t.local_addr());
        assert_eq!(t.connected(), (0, 0));
    }

    /// At most `MAX_CONNS` peers get a connected socket; the next peer is
    /// sent to unconnected until one of them has been idle long enough.
    #[test]
    fn connected_sockets_are_few_and_go_to_the_busy_peers() {
        let mut t = connecting();
        let peers: Vec<UdpSocket> = (0..MAX_CONNS + 1)
            .map(|_| UdpSocket::bind("127.0.0.1:0").unwrap())
            .collect();
        let mut buf = [0u8; 64];
        let now = Instant::ZERO;
        let mut from = |t: &mut UdpTransport, p: &UdpSocket| {
            t.send(now, p.local_addr().unwrap(), &data_packet())
                .unwrap();
            p.recv_from(&mut buf).unwrap().1
        };
        for p in &peers[..MAX_CONNS] {
            assert_ne!(from(&mut t, p), t.local_addr());
        }
        let last = &peers[MAX_CONNS];
        assert_eq!(from(&mut t, last), t.local_addr(), "no room");
        assert_eq!(t.connected(), (MAX_CONNS as u64, MAX_CONNS));
        // the first peers stay busy; the last one idle for long enough
        for _ in 0..5000 {
            for p in &peers[1..MAX_CONNS] {
                from(&mut t, p);
            }
        }
        assert_ne!(from(&mut t, last), t.local_addr(), "the idle one's place");
        assert_eq!(t.connected(), (MAX_CONNS as u64 + 1, MAX_CONNS));
        assert_eq!(from(&mut t, &peers[0]), t.local_addr(), "the first lost it");
    }
}
