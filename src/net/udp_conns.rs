//! Sockets of a UDP endpoint connected to its busiest peers, to send the
//! small packets of their associations through (`udp::CONNECTED_MAX`). The kernel looks a connected
//! socket's route up once, an unconnected one's for every datagram: on
//! this machine's loopback a raw round trip is ~1.4 us shorter over
//! connected sockets (`ramp bench` prints both ping-pongs: 6.1 against
//! 7.6 us). Each is bound to a port of its own (bound to the endpoint's,
//! a connected socket would take the peer's datagrams from the endpoint's
//! socket), so the peer learns the port as our alias (`proto/alias.rs`):
//! under a MAC from the first packet's seal; without one (`announce`) from
//! an ALIAS sent from our name, and the socket carries an association's
//! packets only once the peer took its port for that association's tag
//! (`accepted`; until then they leave from the name, and `announce_due`
//! names the port again after `ANNOUNCE_EVERY`, then after waits that
//! double).
//! Nothing is sent to it but what answers a packet from it (an ABORT for
//! a tag the peer lost): read now and then (`drain`), taken as coming
//! from the peer. At most `MAX_CONNS`; a full set takes a new peer in
//! place of one idle for `IDLE_SENDS` sends, except with announced
//! aliases: a port given up while its peer still takes it as ours could
//! be bound by anyone on the host, so each socket keeps its peer.

use std::io;
use std::net::{SocketAddr, UdpSocket};

use crate::time::{Instant, Nanos, MILLIS};

/// Connected sockets an endpoint keeps at most.
pub const MAX_CONNS: usize = 8;
/// Sends to others after which a connected socket may go to a new peer.
const IDLE_SENDS: u64 = 4096;
/// How long after its first announcement a port not yet taken is
/// announced again (an ALIAS lost, or sent before the association was up);
/// each later wait is twice the one before, up to 64 times this (a peer
/// that never answers costs a datagram every 1.3 s).
pub const ANNOUNCE_EVERY: Nanos = 20 * MILLIS;

struct Conn {
    to: SocketAddr,
    /// None: it could not be made (the peer is sent to unconnected).
    sock: Option<UdpSocket>,
    /// Its port (0 without a socket).
    port: u16,
    /// `Conns::sends` at its last use.
    used: u64,
    /// Announced aliases: the association tag for which the peer took the
    /// port (0: none), the tag last seen on a datagram for it, and when the
    /// port was last announced.
    accepted: u64,
    wanted: u64,
    announced: Option<Instant>,
    /// Announcements made for `wanted`.
    tries: u32,
}

pub struct Conns {
    list: Vec<Conn>,
    /// The send buffer of each (the endpoint's own size).
    pub buffer: usize,
    sends: u64,
    /// Sockets made so far (each peer's, and each after a failed one).
    pub made: u64,
    /// Whether a peer must take a socket's port before it carries
    /// anything (module doc).
    pub announce: bool,
    /// Whether some socket waits for its port to be taken.
    waiting: bool,
}

impl Conns {
    pub fn new(buffer: usize, announce: bool) -> Conns {
        Conns {
            list: Vec::new(),
            buffer,
            sends: 0,
            made: 0,
            announce,
            waiting: false,
        }
    }

    /// The socket connected to `to` for a datagram of the association
    /// tagged `tag`, made (bound to `local`'s address) when there is
    /// room; None: send unconnected (also, with announced aliases, until
    /// the peer took its port for `tag`).
    #[inline]
    pub fn socket_for(
        &mut self,
        local: SocketAddr,
        to: SocketAddr,
        tag: u64,
    ) -> Option<&UdpSocket> {
        self.sends += 1;
        let i = match self.list.iter().position(|c| c.to == to) {
            Some(i) => i,
            None => self.make(local, to)?,
        };
        let c = &mut self.list[i];
        c.used = self.sends;
        if self.announce && c.accepted != tag {
            if c.sock.is_some() && c.wanted != tag {
                c.wanted = tag;
                c.announced = None;
                c.tries = 0;
                self.waiting = true;
            }
            return None;
        }
        c.sock.as_ref()
    }

    /// `each(peer, port)` for every socket whose port waits to be taken
    /// and whose wait since its last announcement is over (`ANNOUNCE_EVERY`,
    /// doubling).
    pub fn announce_due(&mut self, now: Instant, each: &mut dyn FnMut(SocketAddr, u16)) {
        if !self.waiting {
            return;
        }
        let mut waiting = false;
        for c in &mut self.list {
            if c.sock.is_none() || c.wanted == c.accepted {
                continue;
            }
            waiting = true;
            let wait = ANNOUNCE_EVERY << c.tries.saturating_sub(1).min(6);
            if c.announced.is_none_or(|t| now.since(t) >= wait) {
                c.announced = Some(now);
                c.tries += 1;
                each(c.to, c.port);
            }
        }
        self.waiting = waiting;
    }

    /// The peer `to` took `port` as ours for the association tagged `tag`.
    pub fn accepted(&mut self, to: SocketAddr, port: u16, tag: u64) {
        if let Some(c) = self
            .list
            .iter_mut()
            .find(|c| c.to == to && c.sock.is_some() && c.port == port)
        {
            c.accepted = tag;
        }
    }

    #[cold]
    fn make(&mut self, local: SocketAddr, to: SocketAddr) -> Option<usize> {
        let i = if self.list.len() < MAX_CONNS {
            self.list.push(Conn {
                to,
                sock: None,
                port: 0,
                used: 0,
                accepted: 0,
                wanted: 0,
                announced: None,
                tries: 0,
            });
            self.list.len() - 1
        } else if self.announce {
            return None;
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
        let port = sock
            .as_ref()
            .and_then(|s| s.local_addr().ok())
            .map_or(0, |a| a.port());
        // (a socket whose port cannot be known cannot be announced)
        let sock = sock.filter(|_| port != 0);
        self.made += u64::from(sock.is_some());
        self.list[i] = Conn {
            to,
            sock,
            port,
            used: self.sends,
            accepted: 0,
            wanted: 0,
            announced: None,
            tries: 0,
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
    // never fragmented: one too large goes by the endpoint's socket
    // (`UdpTransport::send`), which learns the path's size
    {
        use std::os::fd::AsRawFd;
        crate::sys::set_fragmenting(s.as_raw_fd(), local.is_ipv6(), false)?;
    }
    s.bind(&SocketAddr::new(local.ip(), 0).into())?;
    s.connect(&to.into())?;
    Ok(s.into())
}
