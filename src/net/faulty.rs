//! Fault injection on the real socket, configured by `RAMP_FAULT_*`: the
//! shared [`FaultInjector`](crate::fault::FaultInjector) decides what happens
//! to each outgoing datagram; this wrapper holds back the delayed ones and
//! sends them when they are due (`flush_due`).
//!
//! It forwards the `Transport` core, and shared memory's rings, claims,
//! regions and host datagrams (`SharedMemory`) of a transport that has
//! them; never an express lane (a record would bypass the faults), nor
//! UDP's connected ports (`connected_ports`: none).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;

use super::{DatagramSink, ExpressLane, RegionMsg, SharedMemory, Transport};
use crate::fault::{FaultConfig, FaultInjector};
use crate::rng::Rng;
use crate::time::Instant;

/// A datagram held back: when it goes, a tie-breaker, where, what.
type Held = (Instant, u64, SocketAddr, Vec<u8>);

pub struct FaultyTransport<T: Transport> {
    inner: T,
    faults: FaultInjector,
    held: BinaryHeap<Reverse<Held>>,
    order: u64,
}

impl<T: Transport> FaultyTransport<T> {
    pub fn new(inner: T, cfg: FaultConfig) -> FaultyTransport<T> {
        // Each endpoint gets its own stream, repeatable for a given seed and port.
        let seed = cfg.seed ^ ((inner.local_addr().port() as u64) << 32);
        FaultyTransport {
            inner,
            faults: FaultInjector::with_rng(cfg, Rng::new(seed)),
            held: BinaryHeap::new(),
            order: 0,
        }
    }
}

impl<T: Transport> Transport for FaultyTransport<T> {
    fn send(&mut self, now: Instant, to: SocketAddr, dgram: &[u8]) -> io::Result<()> {
        self.flush_due(now);
        let mut due_now = Vec::new();
        let (held, order) = (&mut self.held, &mut self.order);
        self.faults.inject(now, dgram, |at, d| {
            if at > now {
                *order += 1;
                held.push(Reverse((at, *order, to, d)));
            } else {
                due_now.push(d);
            }
        });
        for d in due_now {
            self.inner.send(now, to, &d)?;
        }
        Ok(())
    }

    fn recv_batch(&mut self, each: &mut DatagramSink<'_>) -> io::Result<usize> {
        let faults = &mut self.faults;
        // a datagram lost at the receiver (`recv_loss`) is never handed on
        self.inner
            .recv_batch(&mut |d: Option<(&[u8], SocketAddr)>| match d {
                Some(_) if faults.receive() => {}
                d => each(d),
            })
    }

    fn local_addr(&self) -> SocketAddr {
        self.inner.local_addr()
    }

    fn fd(&self) -> RawFd {
        self.inner.fd()
    }

    fn readable(&self) -> bool {
        self.inner.readable()
    }

    fn reaches(&self, to: SocketAddr) -> bool {
        self.inner.reaches(to)
    }

    fn flush_due(&mut self, now: Instant) -> Option<Instant> {
        let inner = self.inner.flush_due(now);
        while let Some(Reverse((at, ..))) = self.held.peek() {
            if *at > now {
                return Some(inner.map_or(*at, |t| t.min(*at)));
            }
            let Reverse((_, _, to, d)) = self.held.pop().unwrap();
            // A send error here is a lost datagram, as on a real network.
            let _ = self.inner.send(now, to, &d);
        }
        inner
    }

    fn path_news(&mut self, each: &mut dyn FnMut(super::PathNews)) {
        self.inner.path_news(each);
    }
}

impl<T: SharedMemory + 'static> SharedMemory for FaultyTransport<T> {
    /// Through the faults, like any send.
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

    fn active(&self) -> bool {
        self.inner.active()
    }

    fn next_look(&self) -> Option<Instant> {
        self.inner.next_look()
    }

    fn checks_due_at(&self) -> Instant {
        self.inner.checks_due_at()
    }

    fn regions_waiting(&self) -> bool {
        self.inner.regions_waiting()
    }

    fn fallback_from_host(&self, from: SocketAddr, now: Instant) {
        self.inner.fallback_from_host(from, now)
    }

    fn ring_to(&self, to: SocketAddr) -> Option<(u32, u64)> {
        self.inner.ring_to(to)
    }

    fn ring_from(&self, from: SocketAddr, pid: u32, secret: u64) -> bool {
        self.inner.ring_from(from, pid, secret)
    }

    fn claim_to(&self, to: SocketAddr, k: usize, current: u64, new: u64) -> Option<bool> {
        self.inner.claim_to(to, k, current, new)
    }

    fn claim_word_to(&self, to: SocketAddr, k: usize) -> Option<(u64, u32)> {
        self.inner.claim_word_to(to, k)
    }

    fn claim_from(
        &self,
        from: SocketAddr,
        owner: (u32, u64),
        k: usize,
        current: u64,
        new: u64,
    ) -> bool {
        self.inner.claim_from(from, owner, k, current, new)
    }

    fn region_send(&self, to: SocketAddr, body: &[u8], fd: Option<RawFd>) -> bool {
        self.inner.region_send(to, body, fd)
    }

    fn region_take(&self) -> (Vec<RegionMsg>, u64) {
        self.inner.region_take()
    }

    /// None: express records would bypass the faults.
    fn into_express_lane(self: Box<Self>) -> Result<Box<dyn ExpressLane>, Box<dyn SharedMemory>> {
        Err(self)
    }
}
