//! What only some transports offer, each capability a trait of its own
//! beside the `Transport` core (`mod.rs`):
//!
//! - `SharedMemory`: rings to the endpoints of this host (`shm.rs`): a
//!   ring's identity and claim words for a direct copy (`am/rma_direct.rs`,
//!   `am/xfer_direct.rs`), region messages (`am/rma_shared.rs`), a
//!   same-host datagram that came by the fallback (a HELLO may wait), and
//!   when what its socket holds is read (the simulator's readiness).
//!   The set holds shared memory as such (`Transports::prefer`).
//! - `ExpressLane`: shared memory's lane for short AM records beside the
//!   protocol (`express.rs`, `am/express.rs`): records written, held,
//!   taken, proven under the job key, lost with a dropped ring; the
//!   datagrams of a proven ring told apart (`recv_proven`). Offered by
//!   `SharedMemory::into_express_lane`, once, when the set takes the
//!   transport: the fault-injecting wrapper offers none (a record would
//!   bypass the faults).
//! - `ConnectedPorts`: UDP's sockets connected to its busiest peers and
//!   the ports announced for them (`udp_conns.rs`), offered by
//!   `Transport::connected_ports` (not under fault injection).

use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;

use super::express::{ExpressTake, TakenRecord};
use super::Transport;
use crate::time::Instant;

/// `send` of a datagram in pieces, joined in `joined` first (a transport
/// that cannot write them where they go itself).
pub(crate) fn send_joined<T: Transport + ?Sized>(
    t: &mut T,
    now: Instant,
    to: SocketAddr,
    parts: super::Gathered<'_>,
    joined: &mut Vec<u8>,
) -> io::Result<()> {
    joined.clear();
    for p in parts {
        crate::sys::extend_bytes(joined, p);
    }
    t.send(now, to, joined)
}

/// Shared memory's rings to the endpoints of this host, beyond the
/// datagrams they carry (`Transport`).
pub trait SharedMemory: Transport {
    /// `send` when a ring reaches `to` (None when none does): one look-up
    /// of the route where the transport can (a ring's).
    fn send_reached(
        &mut self,
        now: Instant,
        to: SocketAddr,
        dgram: &[u8],
    ) -> Option<io::Result<()>>;
    /// `send_reached` of a datagram in pieces, sent back to back: joined
    /// in `joined` first, unless the transport writes them where they go
    /// itself (a ring: one copy of a large fragment, not two).
    fn send_gathered_reached(
        &mut self,
        now: Instant,
        to: SocketAddr,
        parts: super::Gathered<'_>,
        joined: &mut Vec<u8>,
    ) -> Option<io::Result<()>> {
        if !self.reaches(to) {
            return None;
        }
        Some(send_joined(self, now, to, parts, joined))
    }
    /// Whether rings carry traffic now; the set then polls the fallback
    /// (a system call each) only every few receives.
    fn active(&self) -> bool;
    /// When a receive next takes what waits but is read only now and then
    /// (the socket, read every `WAKE_CHECK` while busy: a peer's HELLO, a
    /// wake-up, a region message); None when nothing waits so. With
    /// `Transport::readable`, the simulator's question of when an endpoint
    /// has work next.
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    fn next_look(&self) -> Option<Instant>;
    /// When the transport's own periodic work (`Transport::flush_due`:
    /// its socket's look, its peers' liveness) is next due: a receive
    /// before then finds nothing that only that work brings. (The
    /// express lane's fast poll skips the full one until then,
    /// `Transports::quiet_until`; at once unless the transport says.)
    fn checks_due_at(&self) -> Instant {
        Instant::ZERO
    }
    /// Region messages read and waiting for `region_take` (the simulator's
    /// question too).
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    fn regions_waiting(&self) -> bool;
    /// A datagram from `from`, an address of this host, came by the
    /// fallback (UDP): a same-host peer that may be asking for our ring.
    fn fallback_from_host(&self, from: SocketAddr, now: Instant);
    /// Our pid and the secret of our ring to `to`, when a ring carries our
    /// datagrams to it (what a direct copy of a large put or get names
    /// itself by, `am/rma_direct.rs`).
    fn ring_to(&self, to: SocketAddr) -> Option<(u32, u64)>;
    /// Whether a ring of ours receives datagrams from `from`, written by
    /// process `pid`, whose slot holds `secret` (never 0).
    fn ring_from(&self, from: SocketAddr, pid: u32, secret: u64) -> bool;
    /// Compare-and-swap of claim word `k` (modulo the number of words) of
    /// our ring to `to`, `current` -> `new`: Some(true) when swapped,
    /// Some(false) when the word held something else, None when no ring
    /// reaches `to`.
    fn claim_to(&self, to: SocketAddr, k: usize, current: u64, new: u64) -> Option<bool>;
    /// Claim word `k` of our ring to `to` as it is now, and the pid of the
    /// ring file's owner (the peer: a direct Xfer's target, which offers
    /// its sender a part of the copy in the word, `am/rma/xfer_split.rs`);
    /// None when no ring reaches `to`.
    fn claim_word_to(&self, to: SocketAddr, k: usize) -> Option<(u64, u32)> {
        let _ = (to, k);
        None
    }
    /// The same on the word of the ring of ours that `from` writes
    /// (`ring_from`'s checks with `owner` = (pid, secret)); false when no
    /// such ring or the word held something else.
    fn claim_from(
        &self,
        from: SocketAddr,
        owner: (u32, u64),
        k: usize,
        current: u64,
        new: u64,
    ) -> bool;
    /// Sends the opaque region message `body` (an ask, or the answer to
    /// one with a descriptor) to the endpoint at `to` on this host
    /// (`am/rma_shared.rs`); false when it cannot go.
    fn region_send(&self, to: SocketAddr, body: &[u8], fd: Option<RawFd>) -> bool;
    /// The region messages read since the last call, from processes of our
    /// user only, each from the endpoint it names, and how many were
    /// refused on arrival meanwhile (malformed, not from the endpoint they
    /// name, or past the transport's queue).
    fn region_take(&self) -> (Vec<RegionMsg>, u64);
    /// The transport as its express lane, if it offers one; else itself
    /// back. Asked once, by the set that takes the transport.
    fn into_express_lane(self: Box<Self>) -> Result<Box<dyn ExpressLane>, Box<dyn SharedMemory>>;
}

/// Shared memory's express lane: short AM records (`express.rs`) written
/// whole into an open ring, beside the protocol's datagrams.
pub trait ExpressLane: SharedMemory {
    /// Whether an express record to `to` would find an open ring whose
    /// receiver proved our job (room aside): the lane's first test,
    /// before anything is done for it.
    fn express_open(&mut self, to: SocketAddr) -> bool;
    /// Writes the express record `rec` into the open ring to `to`; false
    /// (nothing written) when no ring reaches `to` or it has no room.
    /// Never spills: the caller takes the protocol's path instead.
    /// `hold`: it may instead wait in the transport, room kept for it,
    /// with at most six others for that ring (`shm_ring.rs`'s
    /// `TxRing::hold`), until the eighth, anything else for a ring, the
    /// next `recv_batch` or `express_take`, or `release_held` writes them
    /// all in order.
    fn express_send(&mut self, to: SocketAddr, rec: &[u8], hold: bool) -> bool;
    /// Writes the express records held back (`express_send` with `hold`)
    /// now. The layer above calls it before a sleep, at the close and at
    /// the process's exit (`send_all_held`).
    fn release_held(&mut self);
    /// Takes the express record at the head of a ring, if one is the next
    /// thing there, into `rec` (the express lane's fast poll,
    /// `am/express_poll.rs`); anything else stays for `recv_batch`.
    fn express_take(&mut self, rec: &mut TakenRecord) -> ExpressTake;
    /// `Transport::recv_batch`, each datagram told with whether its ring's
    /// sender proved our job (`shm_proof.rs`; `ProvenSink`).
    fn recv_proven(&mut self, each: &mut super::ProvenSink<'_>) -> io::Result<usize>;
    /// The job key's keyed hash (`wire::mac::MacKey::proof`) by which the
    /// lane proves, once per ring, that its two ends belong to the same
    /// job (`shm_proof.rs`); None: no job key. Set before any ring is
    /// opened.
    fn set_express_prover(&mut self, prover: Option<ExpressProver>);
    /// Express records read from rings whose sender did not prove it
    /// holds our job key (or holds one we lack) and dropped unread, since
    /// the last call.
    fn take_express_refused(&mut self) -> u64;
    /// A peer whose ring was dropped (its endpoint closed or its process
    /// died, or it freed our slot) since the last call: what express
    /// records we wrote to it will never be answered.
    fn take_dropped(&mut self) -> Option<SocketAddr>;
    /// Tests: writes `rec` into the ring to `to` even when its receiver's
    /// proof did not verify (a forged record, as a process of another job
    /// could write).
    #[cfg(test)]
    fn express_send_unproven(&mut self, to: SocketAddr, rec: &[u8]) -> bool;
}

/// UDP's sockets connected to peers (`udp_conns.rs`): an association's
/// small packets leave through a socket connected to its peer.
pub trait ConnectedPorts {
    /// The datagrams `f` picks leave through a socket connected to their
    /// peer; None (the start): none do.
    fn set_connectable(&mut self, f: Option<Connectable>);
    /// Announced aliases (`Connectable::announce`): `each(peer, port)` for
    /// every connected socket whose port its peer should be told of now
    /// (an ALIAS; asked again after `udp_conns::ANNOUNCE_EVERY`, each wait
    /// twice the last, until it is taken).
    fn aliases_to_announce(&mut self, now: Instant, each: &mut dyn FnMut(SocketAddr, u16));
    /// Announced aliases: the peer `to` took `port` as ours for the
    /// association tagged `tag`; its datagrams of it may leave there.
    fn alias_accepted(&mut self, to: SocketAddr, port: u16, tag: u64);
}

/// Which datagrams may leave through a socket connected to their peer
/// (`ConnectedPorts::set_connectable`), and when.
#[derive(Clone, Copy, Debug)]
pub struct Connectable {
    /// The AM layer's answer: the tag of the association whose packet the
    /// datagram is; None: it leaves from the endpoint's name (the wire's
    /// format is above this layer).
    pub tag_of: fn(&[u8]) -> Option<u64>,
    /// Whether the peer must first take the socket's port as ours (without
    /// a packet MAC: an ALIAS from our name, `proto/alias.rs`): until the
    /// layer above says it did for the association's tag
    /// (`ConnectedPorts::alias_accepted`), the association's datagrams
    /// leave from the name, and `aliases_to_announce` names the port.
    pub announce: bool,
}

/// A keyed hash of a context under the job key (`set_express_prover`).
pub type ExpressProver = std::sync::Arc<dyn Fn(&[u8]) -> [u8; 32] + Send + Sync>;

/// A region message read from the socket of a same-host endpoint: its
/// sender (checked: the kernel's uid is ours and the socket is that
/// address's), opaque bytes, and a descriptor if one came.
pub struct RegionMsg {
    pub from: SocketAddr,
    pub body: Vec<u8>,
    pub fd: Option<std::os::fd::OwnedFd>,
}
