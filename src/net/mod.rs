//! Transports: how datagrams leave and reach an endpoint.
//!
//! One narrow trait every transport has (`Transport`: send, a batch of
//! sends, receive, readiness, its address, the peers it reaches, what it
//! holds back), and capabilities of their own for what only some offer
//! (`capabilities.rs`): shared memory's rings, claims, regions and express
//! lane (`SharedMemory`, `ExpressLane`), UDP's sockets connected to peers
//! (`ConnectedPorts`). The transports: UDP (`udp.rs`: one non-blocking
//! socket per rail, each serving every peer; `udp_conns.rs`), shared-memory
//! rings to endpoints on the same host (`shm.rs`), a fault-injecting
//! wrapper configured by `RAMP_FAULT_*` (`faulty.rs`); tests run these, or
//! the simulated world's network (`sim::network`). An endpoint owns a set
//! of them (`transports.rs`), which routes each datagram by the path the
//! protocol chose for it (`crate::path`), tells the simulator when a pump
//! would find work, and is the AM layer's one door to the capabilities
//! (`transports_caps.rs`).

mod capabilities;
pub mod express;
mod faulty;
mod iface;
mod shm;
mod transports;
mod udp;
mod udp_conns;
mod udp_offload;

use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;

pub use capabilities::{
    Connectable, ConnectedPorts, ExpressLane, ExpressProver, RegionMsg, SharedMemory,
};
pub use faulty::FaultyTransport;
pub use iface::choose_rails;
pub use shm::{remove_stale_files, ShmTransport, RING_FLIGHT};
pub use transports::Transports;
#[cfg(test)]
pub(crate) use transports::FALLBACK_WAIT_MAX;
pub use udp::UdpTransport;

use crate::clock::Clock;
use crate::path::Path;
pub(crate) use crate::sys::Gathered;
use crate::time::Instant;

/// Datagrams taken per receive call.
pub const RECV_BATCH: usize = 16;
/// Datagrams handed to the transports per batch (`Transport::send_batch`).
pub const SEND_BATCH: usize = 32;
/// Receive slot size: the largest UDP payload fits.
pub const RECV_SLOT: usize = 65536;

/// Receives each datagram of a batch (None: one that could not be read whole).
pub type DatagramSink<'a> = dyn FnMut(Option<(&[u8], SocketAddr)>) + 'a;

/// `DatagramSink` that may ask to stop after a datagram (it returns true):
/// `Transport::recv_batch_until`.
pub type StopSink<'a> = dyn FnMut(Option<(&[u8], SocketAddr)>) -> bool + 'a;

/// `DatagramSink`, each datagram told with whether it came through a
/// same-host ring whose sender proved our job (`shm_proof.rs`): its
/// packets' trailers need no check (`wire::Integrity::SameHost`).
pub type ProvenSink<'a> = dyn FnMut(Option<(&[u8], SocketAddr)>, bool) + 'a;

/// What a transport learnt of a path by sending on it, for the protocol
/// (`Transport::path_news`; the AM layer hands each on). A transport
/// tells its paths from rail 0 (`Path::from_name`); the set of
/// transports (`Transports::path_news`) puts in the rail it came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathNews {
    /// The path carries datagrams of at most `size` bytes whole (UDP: a
    /// datagram refused with `EMSGSIZE`, `udp_offload.rs`):
    /// `Protocol::path_datagram`.
    Datagram { path: Path<SocketAddr>, size: usize },
    /// A send on the path failed in a way that says the path, not the
    /// endpoint, is broken (`errno`: `ENETUNREACH`, `EHOSTUNREACH`,
    /// `ENETDOWN`, `EADDRNOTAVAIL`, `EPERM` from a firewall:
    /// `sys::is_path_error`); the datagram counts as lost, the rest of its
    /// batch went: `Protocol::path_down`.
    Down { path: Path<SocketAddr>, errno: i32 },
}

impl PathNews {
    /// The same news of the path from rail `rail`.
    pub fn on_rail(self, rail: crate::path::Rail) -> PathNews {
        match self {
            PathNews::Datagram { path, size } => PathNews::Datagram {
                path: Path { rail, ..path },
                size,
            },
            PathNews::Down { path, errno } => PathNews::Down {
                path: Path { rail, ..path },
                errno,
            },
        }
    }
}

/// A datagram to send: the path it takes (chosen by the protocol, handed
/// on by the AM layer) and its pieces, sent back to back.
pub type Outgoing<'a> = (Path<SocketAddr>, Gathered<'a>);

/// Sends each datagram of `dgrams` with `t.send` to its path's remote
/// address: a datagram in one piece as it is, one in several pieces
/// copied together first.
pub(crate) fn send_each<T: Transport + ?Sized>(
    t: &mut T,
    now: Instant,
    dgrams: &[Outgoing<'_>],
) -> io::Result<()> {
    let mut joined = Vec::new();
    for &(path, parts) in dgrams {
        match parts {
            [d, [], []] => t.send(now, path.remote, d)?,
            _ => {
                joined.clear();
                for p in parts {
                    crate::sys::extend_bytes(&mut joined, p);
                }
                t.send(now, path.remote, &joined)?;
            }
        }
    }
    Ok(())
}

/// A datagram transport serving one endpoint: the core every transport
/// has. What only some offer is a capability of its own
/// (`capabilities.rs`): shared memory's (`SharedMemory`, and its
/// `ExpressLane`) is what the set holds it as; UDP's connected ports are
/// asked for (`connected_ports`).
pub trait Transport: Send {
    /// Sends one datagram to `to`. A full kernel buffer is not an error:
    /// the datagram counts as lost and the protocol retransmits it. Shared
    /// memory may refuse one with `WouldBlock` (its ring is full): the set
    /// then sends it on the fallback.
    fn send(&mut self, now: Instant, to: SocketAddr, dgram: &[u8]) -> io::Result<()>;
    /// Sends datagrams in order, each to its path's remote address (the
    /// set chose this transport by the path: its rail, or a ring that
    /// reaches the peer), as `send` each. UDP: one `sendmmsg` call for the
    /// batch, each datagram gathered from its pieces.
    fn send_batch(&mut self, now: Instant, dgrams: &[Outgoing<'_>]) -> io::Result<()> {
        send_each(self, now, dgrams)
    }
    /// Receives what is waiting, in one system call when possible, handing
    /// each datagram to `each` (None for one that was cut short or whose
    /// sender is unknown). Returns how many there were; fewer than
    /// `RECV_BATCH` means the socket is drained.
    fn recv_batch(&mut self, each: &mut DatagramSink<'_>) -> io::Result<usize>;
    /// `recv_batch`, where `each` may ask to stop after a datagram (it
    /// returns true): a transport that can keeps the datagrams after it
    /// for its next receive (UDP: the rest of its batch; `flush_due` is
    /// then `now`, `readable` true); the others go on. A wish, never a
    /// loss: every datagram is handed on, now or at a later receive.
    fn recv_batch_until(&mut self, each: &mut StopSink<'_>) -> io::Result<usize> {
        self.recv_batch(&mut |d| {
            each(d);
        })
    }
    /// The address peers reach this endpoint at.
    fn local_addr(&self) -> SocketAddr;
    /// Readiness: whether a receive now would find something (a look, no
    /// wait; a system call for a socket). The simulator asks it of every
    /// endpoint to know which have work.
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    fn readable(&self) -> bool;
    /// Readiness for sleeping: a descriptor that becomes readable when a
    /// datagram arrives (negative: none; the endpoint then wakes only on
    /// its timers). Asked just before the endpoint sleeps on it (shared
    /// memory arms its wake-up then).
    fn fd(&self) -> RawFd;
    /// Whether this transport has a way to `to`. Every peer, unless the
    /// transport says otherwise (shared memory: those of this host that
    /// gave it a ring).
    fn reaches(&self, _to: SocketAddr) -> bool {
        true
    }
    /// Sends the datagrams the transport itself holds back (fault
    /// injection's delayed ones) and does the periodic work that is due
    /// at `now` (shared memory's liveness checks); returns the next time
    /// it needs a call. None, unless the transport holds something back.
    fn flush_due(&mut self, _now: Instant) -> Option<Instant> {
        None
    }
    /// News of its paths learnt since the last call (`PathNews`: a path
    /// that carries smaller datagrams than were sent on it, a path whose
    /// send failed with a path error), each path from rail 0. The AM layer
    /// hands them to the protocol. None, unless the transport learns them.
    fn path_news(&mut self, _each: &mut dyn FnMut(PathNews)) {}
    /// The capability of sending an association's packets through sockets
    /// connected to the peer (UDP), if the transport offers it (not under
    /// fault injection).
    fn connected_ports(&mut self) -> Option<&mut dyn ConnectedPorts> {
        None
    }
}

/// Opens the transports an endpoint uses: UDP on each configured rail
/// (`RAMP_RAILS`, `RAMP_INTERFACE`, `choose_rails`; rail 0 at the name),
/// and shared memory for same-host peers (`RAMP_TRANSPORT`), each behind
/// fault injection when any `RAMP_FAULT_*` is set (shared memory then
/// without its express lane: a record would bypass the faults).
/// They keep time by `clock`, the endpoint's.
pub fn open(cfg: &crate::config::Config, clock: &Clock) -> io::Result<Transports> {
    let ip = choose_rails(cfg)?[0];
    open_at(cfg, SocketAddr::new(ip, 0), clock)
}

/// `open` with its name at a given address (an endpoint that comes back
/// from its transaction log binds the address it had); its further rails
/// as configured, on ports the system picks (their peers learn them in
/// the handshake).
pub fn open_at(
    cfg: &crate::config::Config,
    addr: SocketAddr,
    clock: &Clock,
) -> io::Result<Transports> {
    use crate::config::TransportChoice;
    let udp = UdpTransport::bind(addr, cfg.socket_buffer)?
        .with_clock(clock.clone())
        .with_verbose(cfg.verbose);
    let local = udp.local_addr();
    let faults = cfg.fault.enabled().then(|| cfg.fault.clone());
    let mut set = Transports::new(match &faults {
        Some(f) => Box::new(FaultyTransport::new(udp, f.clone())),
        None => Box::new(udp),
    });
    // the further rails (a name that is one of them is not bound twice)
    for ip in choose_rails(cfg)?.into_iter().skip(1) {
        if ip == local.ip() {
            continue;
        }
        let udp = UdpTransport::bind(SocketAddr::new(ip, 0), cfg.socket_buffer)?
            .with_clock(clock.clone())
            .with_verbose(cfg.verbose);
        set.add_rail(match &faults {
            Some(f) => Box::new(FaultyTransport::new(udp, f.clone())),
            None => Box::new(udp),
        });
    }
    let shm = match cfg.transport {
        TransportChoice::Udp => None,
        TransportChoice::Auto => ShmTransport::open_with(local, clock.clone()).ok(),
        TransportChoice::Shm => Some(ShmTransport::open_with(local, clock.clone())?),
    };
    if let Some(shm) = shm {
        let shm = shm.with_peer_timeout(cfg.proto.peer_timeout);
        set.prefer(match faults {
            Some(f) => Box::new(FaultyTransport::new(shm, f)),
            None => Box::new(shm),
        });
    }
    Ok(set)
}

/// The earlier of two times, either of which may be none.
#[inline]
pub(crate) fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    a.map_or(b, |a| Some(b.map_or(a, |b| a.min(b))))
}
