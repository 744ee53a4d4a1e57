//! UDP: one non-blocking socket per endpoint for all its peers, IPv4 or IPv6.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};

use socket2::{Domain, Protocol, Socket, Type};

use super::{DatagramSink, Gathered, Transport, RECV_BATCH, RECV_SLOT};
use crate::sys::{BatchReceiver, BatchSender};
use crate::time::Instant;

pub struct UdpTransport {
    sock: UdpSocket,
    local: SocketAddr,
    batch: BatchReceiver,
    sender: BatchSender,
    last_batch: usize,
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
            last_batch: 0,
        })
    }
}

impl Transport for UdpTransport {
    fn send(&mut self, _now: Instant, to: SocketAddr, dgram: &[u8]) -> io::Result<()> {
        loop {
            match self.sock.send_to(dgram, to) {
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
        // Ask for twice what the last call found: one datagram at a time in
        // a ping-pong, whole batches in a burst. A single datagram is read
        // with plain recvfrom: recvmmsg costs the kernel more per call, and
        // asking it for more than is there costs a second, failing attempt,
        // both on the critical path of a round trip.
        let want = (2 * self.last_batch).clamp(1, RECV_BATCH);
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
            self.last_batch = n;
            return Ok(n);
        }
        let n = self.batch.recv(self.sock.as_raw_fd(), want)?;
        self.last_batch = n;
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
