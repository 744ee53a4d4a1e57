//! Sockets of a UDP endpoint connected to its busiest peers, to send the
//! small packets of their associations through (`udp::CONNECTED_MAX`). The kernel looks a connected
//! socket's route up once, an unconnected one's for every datagram: on
//! this machine's loopback a raw round trip is ~1.4 us shorter over
//! connected sockets (`ramp bench` prints both ping-pongs: 6.1 against
//! 7.6 us). Each is bound to a port of its own (bound to the endpoint's,
//! a connected socket would take the peer's datagrams from the endpoint's
//! socket), so the peer learns the port as our alias (`proto/alias.rs`).
//! Nothing is sent to it but what answers a packet from it (an ABORT for
//! a tag the peer lost): read now and then (`drain`), taken as coming
//! from the peer. At most `MAX_CONNS`; a full set takes a new peer in
//! place of one idle for `IDLE_SENDS` sends.

use std::io;
use std::net::{SocketAddr, UdpSocket};

/// Connected sockets an endpoint keeps at most.
pub const MAX_CONNS: usize = 8;
/// Sends to others after which a connected socket may go to a new peer.
const IDLE_SENDS: u64 = 4096;

struct Conn {
    to: SocketAddr,
    /// None: it could not be made (the peer is sent to unconnected).
    sock: Option<UdpSocket>,
    /// `Conns::sends` at its last use.
    used: u64,
}

pub struct Conns {
    list: Vec<Conn>,
    /// The send buffer of each (the endpoint's own size).
    pub buffer: usize,
    sends: u64,
    /// Sockets made so far (each peer's, and each after a failed one).
    pub made: u64,
}

impl Conns {
    pub fn new(buffer: usize) -> Conns {
        Conns {
            list: Vec::new(),
            buffer,
            sends: 0,
            made: 0,
        }
    }

    /// The socket connected to `to`, made (bound to `local`'s address)
    /// when there is room; None: send unconnected.
    pub fn socket_for(&mut self, local: SocketAddr, to: SocketAddr) -> Option<&UdpSocket> {
        self.sends += 1;
        let i = match self.list.iter().position(|c| c.to == to) {
            Some(i) => i,
            None => self.make(local, to)?,
        };
        let c = &mut self.list[i];
        c.used = self.sends;
        c.sock.as_ref()
    }

    #[cold]
    fn make(&mut self, local: SocketAddr, to: SocketAddr) -> Option<usize> {
        let i = if self.list.len() < MAX_CONNS {
            self.list.push(Conn {
                to,
                sock: None,
                used: 0,
            });
            self.list.len() - 1
        } else {
            let (i, c) = self
                .list
                .iter()
                .enumerate()
                .min_by_key(|(_, c)| c.used)
                .expect("a full list");
            if self.sends - c.used < IDLE_SENDS {
                return None;
            }
            i
        };
        let sock = connected(local, to, self.buffer).ok();
        self.made += u64::from(sock.is_some());
        self.list[i] = Conn {
            to,
            sock,
            used: self.sends,
        };
        Some(i)
    }

    /// Hands `each` what came to the connected sockets, as from their
    /// peers.
    pub fn drain(&mut self, buf: &mut [u8], each: &mut dyn FnMut(&[u8], SocketAddr)) {
        for c in &self.list {
            let Some(s) = &c.sock else { continue };
            for _ in 0..16 {
                match s.recv(buf) {
                    Ok(n) => each(&buf[..n], c.to),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    // nothing more, or an ICMP error of an earlier send
                    // (the protocol's timers report a peer that is gone)
                    Err(_) => break,
                }
            }
        }
    }

    /// How many sockets stand.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.list.iter().filter(|c| c.sock.is_some()).count()
    }
}

/// A non-blocking socket on `local`'s address (another port) connected
/// to `to`, with a send buffer of `buffer` bytes (as far as the system
/// allows; its receive buffer stays the system's: it takes rare answers).
fn connected(local: SocketAddr, to: SocketAddr, buffer: usize) -> io::Result<UdpSocket> {
    use socket2::{Domain, Protocol, Socket, Type};
    let s = Socket::new(Domain::for_address(local), Type::DGRAM, Some(Protocol::UDP))?;
    if local.is_ipv6() {
        s.set_only_v6(true)?;
    }
    let _ = s.set_send_buffer_size(buffer);
    s.set_nonblocking(true)?;
    s.bind(&SocketAddr::new(local.ip(), 0).into())?;
    s.connect(&to.into())?;
    Ok(s.into())
}
