//! UDP: one non-blocking socket per endpoint for all its peers, IPv4 or IPv6.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};

use socket2::{Domain, Protocol, Socket, Type};

use super::Transport;
use crate::time::Instant;

pub struct UdpTransport {
    sock: UdpSocket,
    local: SocketAddr,
    send_drops: u64,
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
            send_drops: 0,
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
                    self.send_drops += 1;
                    return Ok(());
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<(usize, SocketAddr)>> {
        loop {
            match self.sock.recv_from(buf) {
                Ok((n, from)) => return Ok(Some((n, from))),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // An ICMP port-unreachable from an earlier send: the peer is
                // gone; the protocol's timeouts report it.
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => continue,
                Err(e) => return Err(e),
            }
        }
    }

    fn local_addr(&self) -> SocketAddr {
        self.local
    }

    fn fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }

    fn send_drops(&self) -> u64 {
        self.send_drops
    }
}
