//! The set's doors to the capabilities (`capabilities.rs`), the only way
//! the AM layer reaches them: shared memory's rings (a direct copy's
//! identity and claims, region messages), its express lane, UDP's
//! connected ports. Each answers as the transport without the capability
//! would have nothing to say (no ring, no lane, no connected port).

use std::net::SocketAddr;
use std::os::fd::RawFd;

use super::super::express::{ExpressTake, TakenRecord};
use super::super::{Connectable, ExpressLane, ExpressProver, RegionMsg};
use super::{Near, Transports};
use crate::time::Instant;

/// How often `region_take` asks shared memory.
const REGION_LOOK: crate::time::Nanos = 10 * crate::time::MICROS;

impl Transports {
    /// The express lane, if shared memory offers one.
    #[inline]
    fn lane(&mut self) -> Option<&mut dyn ExpressLane> {
        match &mut self.near {
            Some(Near::Lane(t)) => Some(&mut **t),
            _ => None,
        }
    }

    /// Our pid and ring secret when a ring reaches `to`
    /// (`SharedMemory::ring_to`).
    pub fn ring_to(&self, to: SocketAddr) -> Option<(u32, u64)> {
        self.ring_reaching(to)?.ring_to(to)
    }

    /// Whether a ring receives from `from`, written by `pid` knowing
    /// `secret` (`SharedMemory::ring_from`).
    pub fn ring_from(&self, from: SocketAddr, pid: u32, secret: u64) -> bool {
        self.near
            .as_ref()
            .is_some_and(|n| n.rings().ring_from(from, pid, secret))
    }

    /// `SharedMemory::claim_to` when a ring reaches `to`; None without.
    pub fn claim_to(&self, to: SocketAddr, k: usize, current: u64, new: u64) -> Option<bool> {
        self.ring_reaching(to)?.claim_to(to, k, current, new)
    }

    /// `SharedMemory::claim_word_to` when a ring reaches `to`; None without.
    pub fn claim_word_to(&self, to: SocketAddr, k: usize) -> Option<(u64, u32)> {
        self.ring_reaching(to)?.claim_word_to(to, k)
    }

    /// `SharedMemory::claim_from`; false without shared memory.
    pub fn claim_from(
        &self,
        from: SocketAddr,
        owner: (u32, u64),
        k: usize,
        current: u64,
        new: u64,
    ) -> bool {
        self.near
            .as_ref()
            .is_some_and(|n| n.rings().claim_from(from, owner, k, current, new))
    }

    /// `SharedMemory::region_send`; false without shared memory.
    pub fn region_send(&self, to: SocketAddr, body: &[u8], fd: Option<RawFd>) -> bool {
        self.near
            .as_ref()
            .is_some_and(|n| n.rings().region_send(to, body, fd))
    }

    /// `SharedMemory::region_take`. Asked every poll, looks at most every
    /// `REGION_LOOK` (none is read more often: a ring's transport reads
    /// its socket every millisecond while busy, and before sleeping),
    /// without allocating when there is none.
    #[inline]
    pub fn region_take(&self, now: Instant) -> (Vec<RegionMsg>, u64) {
        if !self.region_look_due(now) {
            return (Vec::new(), 0);
        }
        self.region_take_now(now)
    }

    /// Whether `region_take` would look now (else it returns nothing: an
    /// empty poll need not build its empty answer).
    #[inline]
    pub fn region_look_due(&self, now: Instant) -> bool {
        self.near.is_some() && now >= self.next_region_look.get()
    }

    #[inline(never)]
    fn region_take_now(&self, now: Instant) -> (Vec<RegionMsg>, u64) {
        self.next_region_look.set(now.plus(REGION_LOOK));
        match &self.near {
            Some(n) => n.rings().region_take(),
            None => (Vec::new(), 0),
        }
    }

    /// `ExpressLane::express_open`; false without a lane.
    #[inline]
    pub fn express_open(&mut self, to: SocketAddr) -> bool {
        self.lane().is_some_and(|l| l.express_open(to))
    }

    /// `ExpressLane::express_send`: whether a ring took the record.
    #[inline]
    pub fn express_send(&mut self, to: SocketAddr, rec: &[u8], hold: bool) -> bool {
        self.lane().is_some_and(|l| l.express_send(to, rec, hold))
    }

    /// `ExpressLane::express_send_unproven` (tests).
    #[cfg(test)]
    pub fn express_send_unproven(&mut self, to: SocketAddr, rec: &[u8]) -> bool {
        self.lane()
            .is_some_and(|l| l.express_send_unproven(to, rec))
    }

    /// `ExpressLane::release_held`: the express records held back go now.
    pub fn release_held(&mut self) {
        if let Some(l) = self.lane() {
            l.release_held();
        }
    }

    /// `ExpressLane::express_take`; `Other` without a lane (the full
    /// receive is the only way).
    pub fn express_take(&mut self, rec: &mut TakenRecord) -> ExpressTake {
        match self.lane() {
            Some(l) => l.express_take(rec),
            None => ExpressTake::Other,
        }
    }

    /// `ExpressLane::set_express_prover`, if there is a lane.
    pub fn set_express_prover(&mut self, prover: Option<ExpressProver>) {
        if let Some(l) = self.lane() {
            l.set_express_prover(prover);
        }
    }

    /// `ExpressLane::take_express_refused`; 0 without a lane.
    #[inline]
    pub fn take_express_refused(&mut self) -> u64 {
        self.lane().map_or(0, |l| l.take_express_refused())
    }

    /// `ExpressLane::take_dropped`; None without a lane.
    #[inline]
    pub fn take_dropped(&mut self) -> Option<SocketAddr> {
        self.lane()?.take_dropped()
    }

    /// `ConnectedPorts::set_connectable`, if the fallback has them.
    pub fn set_connectable(&mut self, f: Option<Connectable>) {
        if let Some(p) = self.fallback.connected_ports() {
            p.set_connectable(f);
        }
    }

    /// `ConnectedPorts::aliases_to_announce`, if the fallback has them.
    pub fn aliases_to_announce(&mut self, now: Instant, each: &mut dyn FnMut(SocketAddr, u16)) {
        if let Some(p) = self.fallback.connected_ports() {
            p.aliases_to_announce(now, each);
        }
    }

    /// `ConnectedPorts::alias_accepted`, if the fallback has them.
    pub fn alias_accepted(&mut self, to: SocketAddr, port: u16, tag: u64) {
        if let Some(p) = self.fallback.connected_ports() {
            p.alias_accepted(to, port, tag);
        }
    }
}
