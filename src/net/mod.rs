//! Transports: how datagrams leave and reach an endpoint. One trait
//! (`Transport`), a UDP implementation (`udp.rs`: one non-blocking socket per
//! endpoint, serving every peer), a fault-injecting wrapper configured by
//! `RAMP_FAULT_*` (`faulty.rs`), shared-memory rings to endpoints on the same
//! host (`shm.rs`), the set of transports an endpoint owns and
//! routes by (`transports.rs`). Tests run the real transports, or the
//! simulated world's network (`sim::network`).

pub mod express;
mod faulty;
mod iface;
mod shm;
mod transports;
mod udp;
mod udp_conns;

use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;

pub use faulty::FaultyTransport;
pub use iface::choose_bind_address;
pub use shm::{remove_stale_files, ShmTransport};
pub use transports::Transports;
#[cfg(test)]
pub(crate) use transports::FALLBACK_WAIT_MAX;
pub use udp::UdpTransport;

use crate::clock::Clock;
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

/// Sends each datagram of `dgrams` with `t.send`: a datagram in one piece
/// as it is, one in several pieces copied together first.
pub(crate) fn send_each<T: Transport + ?Sized>(
    t: &mut T,
    now: Instant,
    dgrams: &[(SocketAddr, Gathered<'_>)],
) -> io::Result<()> {
    let mut joined = Vec::new();
    for &(to, parts) in dgrams {
        match parts {
            [d, [], []] => t.send(now, to, d)?,
            _ => {
                joined.clear();
                for p in parts {
                    joined.extend_from_slice(p);
                }
                t.send(now, to, &joined)?;
            }
        }
    }
    Ok(())
}

/// A datagram transport serving one endpoint.
/// Which datagrams may leave through a socket connected to their peer
/// (`Transport::set_connectable`), and when.
#[derive(Clone, Copy, Debug)]
pub struct Connectable {
    /// The AM layer's answer: the tag of the association whose packet the
    /// datagram is; None: it leaves from the endpoint's name (the wire's
    /// format is above this layer).
    pub tag_of: fn(&[u8]) -> Option<u64>,
    /// Whether the peer must first take the socket's port as ours (without
    /// a packet MAC: an ALIAS from our name, `proto/alias.rs`): until the
    /// layer above says it did for the association's tag
    /// (`Transport::alias_accepted`), the association's datagrams leave
    /// from the name, and `aliases_to_announce` names the port.
    pub announce: bool,
}

/// A keyed hash of a context under the job key (`set_express_prover`).
pub type ExpressProver = std::sync::Arc<dyn Fn(&[u8]) -> [u8; 32] + Send + Sync>;

pub trait Transport: Send {
    /// Sends one datagram. A full kernel buffer is not an error: the datagram
    /// counts as lost and the protocol retransmits it. A transport before
    /// the fallback may refuse one with `WouldBlock` (its ring is full): the
    /// set then sends it on the fallback.
    fn send(&mut self, now: Instant, to: SocketAddr, dgram: &[u8]) -> io::Result<()>;
    /// Sends datagrams in order, as `send` each (UDP: one `sendmmsg` call
    /// for the batch, each datagram gathered from its pieces).
    fn send_batch(
        &mut self,
        now: Instant,
        dgrams: &[(SocketAddr, Gathered<'_>)],
    ) -> io::Result<()> {
        send_each(self, now, dgrams)
    }
    /// Receives what is waiting, in one system call when possible, handing
    /// each datagram to `each` (None for one that was cut short or whose
    /// sender is unknown). Returns how many there were; fewer than
    /// `RECV_BATCH` means the socket is drained.
    fn recv_batch(&mut self, each: &mut DatagramSink<'_>) -> io::Result<usize>;
    /// The address peers reach this endpoint at.
    fn local_addr(&self) -> SocketAddr;
    /// Readiness: whether a receive now would find something (a look, no
    /// wait; a system call for a socket). The simulator asks it of every
    /// endpoint to know which have work.
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    fn readable(&self) -> bool;
    /// When a receive next takes what waits but is read only now and then
    /// (shared memory's socket, read every `WAKE_CHECK` while busy), None
    /// when nothing waits so: with `readable`, the simulator's question of
    /// when an endpoint has work next.
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    fn next_look(&self) -> Option<Instant> {
        None
    }
    /// Region messages read and waiting for `region_take` (the simulator's
    /// question too).
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    fn regions_waiting(&self) -> bool {
        false
    }
    /// A descriptor that becomes readable when a datagram arrives (negative:
    /// none; the endpoint then wakes only on its timers). Asked just before
    /// the endpoint sleeps on it (shared memory arms its wake-up then).
    fn fd(&self) -> RawFd;
    /// Whether this transport has a path to `to` (only the last transport of
    /// a `Transports` set, which must reach every peer, is not asked).
    fn reaches(&self, _to: SocketAddr) -> bool {
        true
    }
    /// `send` when the transport `reaches` `to` (None when it does not):
    /// one look-up of the route where the transport can (a ring's).
    fn send_reached(
        &mut self,
        now: Instant,
        to: SocketAddr,
        dgram: &[u8],
    ) -> Option<io::Result<()>> {
        if !self.reaches(to) {
            return None;
        }
        Some(self.send(now, to, dgram))
    }
    /// Whether the transport carries traffic now; a set then polls the
    /// transports after it (a system call each) only every few receives.
    fn active(&self) -> bool {
        true
    }
    /// Datagrams the transport itself holds back (fault injection) that are
    /// due at `now`; returns the next time it needs a call.
    fn flush_due(&mut self, _now: Instant) -> Option<Instant> {
        None
    }
    /// Shared memory: our pid and the secret of our ring to `to`, when a
    /// ring carries our datagrams to it (what a direct copy of a large put
    /// or get names itself by, `am/rma_direct.rs`).
    fn ring_to(&self, _to: SocketAddr) -> Option<(u32, u64)> {
        None
    }
    /// Shared memory: whether a ring of ours receives datagrams from `from`,
    /// written by process `pid`, whose slot holds `secret` (never 0).
    fn ring_from(&self, _from: SocketAddr, _pid: u32, _secret: u64) -> bool {
        false
    }
    /// Shared memory: compare-and-swap of claim word `k` (modulo the
    /// number of words) of our ring to `to`, `current` -> `new`: Some(true)
    /// when swapped, Some(false) when the word held something else, None
    /// when no ring reaches `to`.
    fn claim_to(&self, _to: SocketAddr, _k: usize, _current: u64, _new: u64) -> Option<bool> {
        None
    }
    /// Shared memory: the same on the word of the ring of ours that `from`
    /// writes (`ring_from`'s checks with `owner` = (pid, secret)); false
    /// when no such ring or the word held something else.
    fn claim_from(
        &self,
        _from: SocketAddr,
        _owner: (u32, u64),
        _k: usize,
        _current: u64,
        _new: u64,
    ) -> bool {
        false
    }
    /// A datagram from `from`, an address of this host, came by the
    /// fallback (UDP): a same-host peer that may be asking for our ring.
    fn fallback_from_host(&self, _from: SocketAddr, _now: Instant) {}
    /// Shared memory: sends the opaque region message `body` (an ask, or
    /// the answer to one with a descriptor) to the endpoint at `to` on
    /// this host (`am/rma_shared.rs`); false when it cannot go.
    fn region_send(&self, _to: SocketAddr, _body: &[u8], _fd: Option<RawFd>) -> bool {
        false
    }
    /// Shared memory: the region messages read since the last call, from
    /// processes of our user only, each from the endpoint it names, and
    /// how many were refused on arrival meanwhile (malformed, not from the
    /// endpoint they name, or past the transport's queue).
    fn region_take(&self) -> (Vec<RegionMsg>, u64) {
        (Vec::new(), 0)
    }
    /// Shared memory: writes the express record `rec` (`express.rs`) into
    /// the open ring to `to`; false (nothing written) when no ring reaches
    /// `to` or it has no room. Never spills: the caller takes the
    /// protocol's path instead. `hold`: it may instead wait in the
    /// transport, room kept for it, with at most six others for that ring
    /// (`shm_ring.rs`'s `TxRing::hold`), until the eighth, anything else
    /// for a ring, the next `recv_batch` or `express_take`, or
    /// `release_held` writes them all in order.
    fn express_send(&mut self, _to: SocketAddr, _rec: &[u8], _hold: bool) -> bool {
        false
    }
    /// Shared memory: writes the express records held back
    /// (`express_send` with `hold`) now. The layer above calls it before
    /// a sleep, at the close and at the process's exit (`send_all_held`).
    fn release_held(&mut self) {}
    /// Shared memory: whether an express record to `to` would find an open
    /// ring whose receiver proved our job (room aside): the lane's first
    /// test, before anything is done for it.
    fn express_open(&mut self, _to: SocketAddr) -> bool {
        false
    }
    /// Shared memory: the job key's keyed hash (`wire::mac::MacKey::proof`)
    /// by which the express lane proves, once per ring, that its two ends
    /// belong to the same job (`shm.rs`); None: no job key. Set before
    /// any ring is opened.
    fn set_express_prover(&mut self, _prover: Option<ExpressProver>) {}
    /// UDP: the datagrams `f` picks leave through a socket connected to
    /// their peer (`udp_conns.rs`); None (the start): none do.
    fn set_connectable(&mut self, _f: Option<Connectable>) {}
    /// UDP, announced aliases (`Connectable::announce`): `each(peer, port)`
    /// for every connected socket whose port its peer should be told of
    /// now (an ALIAS; asked again after `udp_conns::ANNOUNCE_EVERY`, each
    /// wait twice the last, until it is taken).
    fn aliases_to_announce(&mut self, _now: Instant, _each: &mut dyn FnMut(SocketAddr, u16)) {}
    /// UDP, announced aliases: the peer `to` took `port` as ours for the
    /// association tagged `tag`; its datagrams of it may leave there.
    fn alias_accepted(&mut self, _to: SocketAddr, _port: u16, _tag: u64) {}
    /// Shared memory: express records read from rings whose sender did not
    /// prove it holds our job key (or holds one we lack) and dropped
    /// unread, since the last call.
    fn take_express_refused(&mut self) -> u64 {
        0
    }
    /// Tests: writes `rec` into the ring to `to` even when its receiver's
    /// proof did not verify (a forged record, as a process of another job
    /// could write).
    #[cfg(test)]
    fn express_send_unproven(&mut self, _to: SocketAddr, _rec: &[u8]) -> bool {
        false
    }
    /// Shared memory: takes the express record at the head of a ring, if
    /// one is the next thing there, into `rec` (the express lane's fast
    /// poll, `am/express_poll.rs`); anything else stays for `recv_batch`.
    /// Other transports: `Other` (the full receive is the only way).
    fn express_take(&mut self, _rec: &mut express::TakenRecord) -> express::ExpressTake {
        express::ExpressTake::Other
    }
    /// Shared memory: a peer whose ring was dropped (its endpoint closed or
    /// its process died, or it freed our slot) since the last call: what
    /// express records we wrote to it will never be answered.
    fn take_dropped(&mut self) -> Option<SocketAddr> {
        None
    }
}

/// A region message read from the socket of a same-host endpoint: its
/// sender (checked: the kernel's uid is ours and the socket is that
/// address's), opaque bytes, and a descriptor if one came.
pub struct RegionMsg {
    pub from: SocketAddr,
    pub body: Vec<u8>,
    pub fd: Option<std::os::fd::OwnedFd>,
}

/// Opens the transports an endpoint uses: UDP on the configured interface,
/// preceded by shared memory for same-host peers (`RAMP_TRANSPORT`), each
/// behind fault injection when any `RAMP_FAULT_*` is set.
/// They keep time by `clock`, the endpoint's.
pub fn open(cfg: &crate::config::Config, clock: &Clock) -> io::Result<Transports> {
    let ip = choose_bind_address(cfg.interface.as_deref())?;
    open_at(cfg, SocketAddr::new(ip, 0), clock)
}

/// `open` at a given address (an endpoint that comes back from its
/// transaction log binds the address it had).
pub fn open_at(
    cfg: &crate::config::Config,
    addr: SocketAddr,
    clock: &Clock,
) -> io::Result<Transports> {
    use crate::config::TransportChoice;
    let udp = UdpTransport::bind(addr, cfg.socket_buffer)?.with_clock(clock.clone());
    let local = udp.local_addr();
    let mut set = Transports::new(faulty(udp, cfg));
    let shm = match cfg.transport {
        TransportChoice::Udp => None,
        TransportChoice::Auto => ShmTransport::open_with(local, clock.clone()).ok(),
        TransportChoice::Shm => Some(ShmTransport::open_with(local, clock.clone())?),
    };
    if let Some(shm) = shm {
        set.prefer(faulty(shm.with_peer_timeout(cfg.proto.peer_timeout), cfg));
    }
    Ok(set)
}

fn faulty<T: Transport + 'static>(t: T, cfg: &crate::config::Config) -> Box<dyn Transport> {
    if cfg.fault.enabled() {
        Box::new(FaultyTransport::new(t, cfg.fault.clone()))
    } else {
        Box::new(t)
    }
}
