//! UDP: one non-blocking socket per endpoint for all its peers, IPv4 or IPv6.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};

use socket2::{Domain, Protocol, SockAddr, SockRef, Socket, Type};

use super::{DatagramSink, Gathered, Transport, RECV_BATCH, RECV_SLOT};
use crate::sys::{BatchReceiver, BatchSender};
use crate::time::Instant;

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
        })
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
        if to != self.last_to {
            self.last_to = to;
            self.last_raw = SockAddr::from(to);
        }
        loop {
            match SockRef::from(&self.sock).send_to(dgram, &self.last_raw) {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e)
                    if e.kind() == io::ErrorKind::WouldBlock
                        || e.raw_os_error() == Some(libc::ENOBUFS)
                        || e.kind() == io::ErrorKind::ConnectionRefused =>
                {
                    // Lost like any datagram; the protocol resends it.
                    return Ok(());
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn send_batch(
        &mut self,
        now: Instant,
        dgrams: &[(SocketAddr, Gathered<'_>)],
    ) -> io::Result<()> {
        match dgrams {
            // one datagram in one piece: plain sendto costs the kernel less
            [(to, [d, [], []])] => self.send(now, *to, d),
            _ => self.sender.send(self.sock.as_raw_fd(), dgrams),
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
            return Ok(n);
        }
        let n = self.batch.recv(self.sock.as_raw_fd(), want)?;
        self.found(want, n);
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
