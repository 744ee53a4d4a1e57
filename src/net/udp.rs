//! UDP: one non-blocking socket per endpoint for all its peers, IPv4 or
//! IPv6 (the `Transport` core), and the sockets connected to its busiest
//! peers that an association's small packets may leave through (the
//! `ConnectedPorts` capability, `udp_conns.rs`). The kernel never
//! fragments what it sends: a datagram larger than its route carries is
//! refused (`EMSGSIZE`), told to the protocol as the path's size, and
//! sent fragmented once; equal datagrams to one peer leave as GSO trains
//! and come in coalesced by GRO where the kernel offers them
//! (`udp_offload.rs`). A send refused for its path (no route, the
//! interface down, a firewall) is news of the path, never an error.
//! An endpoint with rails has one of these per rail (`transports.rs`);
//! only rail 0's connects sockets to peers.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};

use socket2::{Domain, Protocol, SockAddr, SockRef, Socket, Type};

use super::udp_conns::Conns;
use super::udp_offload::{segments, Offload};
use super::{
    Connectable, ConnectedPorts, DatagramSink, Outgoing, PathNews, StopSink, Transport, RECV_BATCH,
    RECV_SLOT,
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

/// A datagram at least this long, the second of a burst, turns GRO on for
/// the socket (`Offload::start_gro`): bulk over a 1500-byte MTU comes in
/// 1,472-byte datagrams; short requests and replies are far below.
const GRO_AFTER: usize = 1024;

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
    /// GSO, GRO, the paths' sizes learnt (`udp_offload.rs`).
    pub(super) offload: Offload,
    /// Where the last batch's datagrams not handed on yet begin: a receive
    /// asked to stop before them (`recv_batch_until`); the next hands them
    /// on before it reads the socket again.
    kept: Option<Kept>,
}

/// A place in the receive batch: datagram `next` of `n`, from its
/// segment `seg` (a GRO train's; 0 for a lone datagram).
#[derive(Clone, Copy, Debug)]
struct Kept {
    next: usize,
    seg: usize,
    n: usize,
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
        // never fragmented by IP: a datagram too large for its route is
        // refused, and the path's size learnt (`udp_offload.rs`)
        crate::sys::set_fragmenting(sock.as_raw_fd(), addr.is_ipv6(), false)?;
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
            offload: Offload::new(sock.as_raw_fd()),
            kept: None,
            sock,
        })
    }

    /// The transport, saying what it falls back from (GSO, GRO) on stderr
    /// when `verbose` (`RAMP_VERBOSE`).
    pub fn with_verbose(mut self, verbose: bool) -> UdpTransport {
        self.offload.verbose = verbose;
        self
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
    fn after_empty(&mut self, each: &mut StopSink<'_>) -> usize {
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
    /// A send to `to` that ended in `r`: a path error
    /// (`sys::is_path_error`) is the path's news and the datagram lost.
    /// (Every send asks: the usual success is told inline.)
    #[inline]
    fn path_error(&mut self, to: SocketAddr, r: io::Result<()>) -> io::Result<()> {
        match r {
            Ok(()) => Ok(()),
            Err(e) => self.send_failed(to, e),
        }
    }

    /// `path_error` of a send that failed.
    #[cold]
    #[inline(never)]
    fn send_failed(&mut self, to: SocketAddr, e: io::Error) -> io::Result<()> {
        if e.raw_os_error().is_some_and(crate::sys::is_path_error) {
            self.offload.note_down(to, e.raw_os_error().unwrap_or(0));
            return Ok(());
        }
        Err(e)
    }

    /// `path_news` when there is some.
    #[cold]
    #[inline(never)]
    fn tell_news(&mut self, each: &mut dyn FnMut(PathNews)) {
        for n in self.offload.news.drain(..) {
            each(n);
        }
    }

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

    /// Hands the datagrams of the batch from `at` on to `each` (a GRO
    /// train's segments each alone) until it asks to stop: those after
    /// the one it stopped at are kept (`kept`). How many it was handed,
    /// and whether a lone one of `GRO_AFTER` bytes or more was among them.
    fn hand_out(&mut self, at: Kept, each: &mut StopSink<'_>) -> (usize, bool) {
        let (mut got, mut large, mut kept) = (0, false, None);
        'batch: for i in at.next..at.n {
            let stop = match self.batch.datagram(i) {
                // (one datagram: as `segments` would give it, without the
                // iterator)
                (Some(d), Some(from), None) => {
                    large |= d.len() >= GRO_AFTER;
                    got += 1;
                    each(Some((d, from)))
                }
                // (GRO: several datagrams back to back, each on its own)
                (Some(d), Some(from), gro) => {
                    let first = if i == at.next { at.seg } else { 0 };
                    let all = segments(d, gro).count();
                    for (k, seg) in segments(d, gro).enumerate().skip(first) {
                        got += 1;
                        if each(Some((seg, from))) {
                            // (past its last segment: the next datagram)
                            let (next, seg) = if k + 1 < all { (i, k + 1) } else { (i + 1, 0) };
                            kept = Some(Kept { next, seg, n: at.n });
                            break 'batch;
                        }
                    }
                    false
                }
                _ => {
                    got += 1;
                    each(None)
                }
            };
            if stop {
                kept = Some(Kept {
                    next: i + 1,
                    seg: 0,
                    n: at.n,
                });
                break;
            }
        }
        self.kept = kept.filter(|k| k.next < k.n);
        (got, large)
    }
}

impl Transport for UdpTransport {
    fn send(&mut self, _now: Instant, to: SocketAddr, dgram: &[u8]) -> io::Result<()> {
        // a small packet of an association: through the socket connected
        // to the peer (a handshake's comes from the endpoint's own address)
        if dgram.len() <= CONNECTED_MAX {
            if let Some(tag) = self.connectable.and_then(|c| (c.tag_of)(dgram)) {
                if let Some(s) = self.conns.socket_for(self.local, to, tag) {
                    match sent(|| s.send(dgram)) {
                        // (too large for the route: by the endpoint's socket)
                        Err(e) if e.raw_os_error() == Some(libc::EMSGSIZE) => {}
                        r => return self.path_error(to, r),
                    }
                }
            }
        }
        if to != self.last_to {
            self.last_to = to;
            self.last_raw = SockAddr::from(to);
        }
        let (sock, raw) = (&self.sock, &self.last_raw);
        match sent(|| SockRef::from(sock).send_to(dgram, raw)) {
            Err(e) if e.raw_os_error() == Some(libc::EMSGSIZE) => {
                self.offload.too_big(&self.sock, to, dgram)
            }
            r => self.path_error(to, r),
        }
    }

    fn send_batch(&mut self, now: Instant, dgrams: &[Outgoing<'_>]) -> io::Result<()> {
        match dgrams {
            // one datagram in one piece: plain sendto costs the kernel less
            [(path, [d, [], []])] => self.send(now, path.remote, d),
            _ => {
                let refused = &mut self.offload.refused;
                let r = self.sender.send(
                    self.sock.as_raw_fd(),
                    dgrams.iter().map(|(path, parts)| (path.remote, parts)),
                    self.offload.gso,
                    &mut |r| refused.push(r),
                );
                if !self.offload.refused.is_empty() {
                    self.offload.resend_refused(&self.sock, dgrams)?;
                }
                r
            }
        }
    }

    fn recv_batch(&mut self, each: &mut DatagramSink<'_>) -> io::Result<usize> {
        self.recv_batch_until(&mut |d| {
            each(d);
            false
        })
    }

    fn recv_batch_until(&mut self, each: &mut StopSink<'_>) -> io::Result<usize> {
        // what the last batch kept first (no system call)
        if let Some(at) = self.kept.take() {
            return Ok(self.hand_out(at, each).0);
        }
        // One datagram at a time with plain recvfrom until two receives in
        // a row found one each (a burst may be starting), then batches
        // that double while they come back full. In a ping-pong the
        // receive after a datagram finds nothing: recvmmsg costs the
        // kernel more per call than recvfrom, found or not, and asking for
        // more than is there costs it a second, failing attempt, both in
        // the polling loop a round trip waits in. With GRO on, one
        // datagram is still a recvmsg: only its control message tells a
        // coalesced train's segment size, recvfrom would return the train
        // as one datagram (`udp_tests`: recvfrom_on_a_gro_socket_merges_a_
        // train). Its cost: an empty recvmsg ~157 ns against recvfrom's
        // ~107 (this host, 2026-12-03): GRO refused, a loopback round
        // trip took 0.97x (same-round ratio, 6 rounds alternated; medians
        // 5.55 and 5.60 us). GRO's gain: Xfer 64 KiB over veth (MTU 1500)
        // 88 -> 484 MiB/s (scripts/veth-bench.sh, 3 rounds).
        let want = self.want;
        if want == 1 && !self.offload.gro {
            let buf = self.batch.slot(0);
            let mut large = false;
            let n = loop {
                match self.sock.recv_from(buf) {
                    Ok((len, from)) => {
                        large = len >= GRO_AFTER;
                        // (nothing after it to keep: a stop changes nothing)
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
            // a burst of large datagrams begins: GRO from now on
            if large && self.want >= 2 && self.offload.gro_later {
                self.offload.start_gro(self.sock.as_raw_fd());
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
        let (got, large) = self.hand_out(Kept { next: 0, seg: 0, n }, each);
        // (a batch of several with a large one: a burst of them)
        if large && n >= 2 && self.offload.gro_later {
            self.offload.start_gro(self.sock.as_raw_fd());
        }
        Ok(got)
    }

    fn local_addr(&self) -> SocketAddr {
        self.local
    }

    fn fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }

    fn readable(&self) -> bool {
        self.kept.is_some()
            || crate::sys::poll_fds(&[self.sock.as_raw_fd()], 0)
                .first()
                .copied()
                .unwrap_or(false)
    }

    fn connected_ports(&mut self) -> Option<&mut dyn ConnectedPorts> {
        Some(self)
    }

    /// At once while datagrams of the last batch are kept
    /// (`recv_batch_until`): an endpoint must not sleep on them.
    fn flush_due(&mut self, now: Instant) -> Option<Instant> {
        self.kept.map(|_| now)
    }

    fn path_news(&mut self, each: &mut dyn FnMut(PathNews)) {
        // (every poll asks; news is rare: no drain set up for none, and
        // no registers saved for one)
        if !self.offload.news.is_empty() {
            self.tell_news(each);
        }
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
#[path = "udp_tests.rs"]
mod tests;
