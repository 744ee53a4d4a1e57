//! Rails, as the protocol sees them (`path.rs` holds an association's
//! paths): the endpoint's local rail addresses (`set_local_rails`), the
//! peer's other addresses learnt in the handshake and looked up for the
//! packets that come from them (`remotes`), what the transport tells of a
//! path (`path_down`, `path_datagram`), and what is told of them
//! (`paths_of`).

use super::path::PathReport;
use super::*;
use crate::path::{Path, MAX_RAILS};

// a handshake lists every rail but the name
const _: () = assert!(wire::MAX_LISTED + 1 == MAX_RAILS);

impl<A> From<A> for Path<A> {
    /// A datagram from (or to) `a` on the endpoint's name's rail.
    #[inline]
    fn from(a: A) -> Path<A> {
        Path::from_name(a)
    }
}

// (the transport wires these: until it does, only tests call some)
#[cfg_attr(not(feature = "testing"), allow(dead_code))]
impl<A: PeerAddr> Protocol<A> {
    /// The endpoint's rail addresses: `rails[i]` is `Rail(i)`'s, `rails[0]`
    /// the endpoint's name. At most `MAX_RAILS` are kept. Associations
    /// made from now on list the others in their handshake and have a
    /// path from every rail to every address of the peer. Default: the
    /// name alone (one rail).
    pub fn set_local_rails(&mut self, rails: &[A]) {
        self.rails = rails[..rails.len().min(MAX_RAILS)].to_vec();
        self.listing = listing_of(&self.rails);
    }

    /// The addresses a handshake packet lists, as ours: None when one is
    /// not an address of ours to take (another kind: the packet is
    /// refused, `paths_refused`). The peer's name and repeats are left out.
    pub(super) fn listed(&mut self, name: &A, addrs: wire::Addrs<'_>) -> Option<Vec<A>> {
        let mut v = Vec::new();
        for e in addrs.iter() {
            let Some(a) = A::from_wire(e) else {
                self.paths_refused += 1;
                return None;
            };
            if a != *name && !v.contains(&a) {
                v.push(a);
            }
        }
        Some(v)
    }

    /// The peer in `slot` has the paths to its name and `others` (a new
    /// association): they are set, and packets from `others` are its.
    /// An address that is another peer's name stays that peer's.
    pub(super) fn set_remotes(&mut self, now: Instant, slot: usize, others: &[A]) {
        let rails = self.rails.len().max(1);
        let probe = self.cfg.path_probe;
        if !self.remotes.is_empty() {
            self.remotes.retain(|_, s| *s as usize != slot);
        }
        let others: Vec<A> = others
            .iter()
            .copied()
            .filter(|a| !self.slots.contains_key(a))
            .take(MAX_RAILS - 1)
            .collect();
        for &a in &others {
            self.remotes.insert(a, slot as u32);
        }
        let peer = &mut self.peers[slot];
        peer.assoc.paths.set_paths(now, rails, &others, probe);
        peer.arm_paths(now);
        self.schedule(slot);
    }

    /// The transport could not send on `path` (ENETUNREACH,
    /// EHOSTUNREACH, ENETDOWN, EADDRNOTAVAIL): the path fails at once (if
    /// the association's packets took it, what it had in flight goes again
    /// at once on another active path). Never fatal; news of a path no
    /// peer has is ignored.
    pub fn path_down(&mut self, now: Instant, path: Path<A>) {
        let Some(slot) = self.find_peer(&path.remote) else {
            return;
        };
        let (peer, mut cx) = self.peer_cx(slot);
        peer.path_failed(now, &path, &mut cx);
        self.schedule(slot);
    }

    /// The transport says `path` carries datagrams of at most `size`
    /// bytes whole (UDP: the route's MTU less the IP and UDP headers, told
    /// when a datagram was refused with `EMSGSIZE`). The peer's messages
    /// shrink to it when its packets take that path (within the configured
    /// bound, and never below what a packet needs): its messages not yet
    /// sent are cut again, its bundles stay within it. A packet already
    /// numbered keeps its size (the transport still delivers it,
    /// fragmented by IP). Never grows; news of a path no peer takes is
    /// ignored (the next refusal tells again). A bare address is the path
    /// from the name's rail.
    pub fn path_datagram(&mut self, path: impl Into<Path<A>>, size: usize) {
        let path = path.into();
        let size = size.clamp(crate::wire::MAX_OVERHEAD + 64, self.cfg.max_datagram);
        let Some(slot) = self.find_peer(&path.remote) else {
            return;
        };
        let peer = &mut self.peers[slot];
        if peer.assoc.paths.current() != path || size >= peer.assoc.paths.datagram {
            return;
        }
        peer.assoc.paths.datagram = size;
        let cfg = &self.cfg;
        for tx in peer.tx.iter_mut() {
            super::send::recut(&mut tx.pending, |m| cfg.cut(&m.meta, m.payload.len(), size));
            tx.resettle();
        }
    }

    /// The largest datagram the path to `to` carries as the protocol
    /// knows it (the configured bound for a peer it does not know).
    #[cfg(any(test, feature = "testing"))] // inspection for tests and the simulator
    pub fn path_datagram_to(&mut self, to: A) -> usize {
        match self.find_peer(&to) {
            Some(s) => self.peers[s].assoc.paths.datagram,
            None => self.cfg.max_datagram,
        }
    }

    /// The retransmission timeout of a packet on `path` to the peer at
    /// `peer` now (backed off): the longer of the peer's and the path's
    /// own (`path/clock.rs`); None for a path or peer we do not know.
    #[cfg(any(test, feature = "testing"))] // inspection for tests and the simulator
    pub fn path_rto(&self, peer: &A, path: &Path<A>) -> Option<crate::time::Nanos> {
        let &s = self.slots.get(peer)?;
        let peer = &self.peers[s as usize];
        let i = peer.assoc.paths.find(path)?;
        Some(peer.assoc.paths.rto_on(i, &peer.rtt))
    }

    /// The paths to the peer at `peer` (empty for a peer we do not know):
    /// rail, remote address, state, round trip, window and rate, bytes,
    /// errors.
    pub fn paths_of(&self, peer: &A) -> Vec<PathReport<A>> {
        let slot = self
            .slots
            .get(peer)
            .or_else(|| self.remotes.get(peer))
            .map(|&s| s as usize);
        slot.map_or_else(Vec::new, |s| self.peers[s].assoc.paths.report())
    }

    /// Handshake packets listing addresses that are not addresses (for
    /// this kind of endpoint) refused so far; and packets from an address
    /// that no association lists are counted as stale (`stale_dropped`).
    pub fn paths_refused(&self) -> u64 {
        self.paths_refused
    }
}

/// `rails` but the first, as a handshake lists them.
#[cfg_attr(not(feature = "testing"), allow(dead_code))]
fn listing_of<A: PeerAddr>(rails: &[A]) -> [u8; wire::layout::ADDRS_LEN] {
    let entries: Vec<[u8; wire::ADDR_LEN]> = rails.iter().skip(1).map(A::to_wire).collect();
    wire::Addrs::encode(&entries)
}
