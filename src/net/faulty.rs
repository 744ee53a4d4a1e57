//! Fault injection on the real socket, configured by `RAMP_FAULT_*`: seeded
//! loss, duplication, corruption, reordering and delay of outgoing datagrams.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;

use super::{DatagramSink, Transport};
use crate::config::FaultConfig;
use crate::rng::Rng;
use crate::time::{Instant, MICROS};

/// What the injector did.
#[derive(Clone, Debug, Default)]
pub struct FaultStats {
    pub dropped: u64,
    pub duplicated: u64,
    pub corrupted: u64,
    pub reordered: u64,
}

/// How long a reordered datagram is held back at most.
const REORDER_HOLD_MAX: u64 = 300 * MICROS;

/// A datagram held back: when it goes, a tie-breaker, where, what.
type Held = (Instant, u64, SocketAddr, Vec<u8>);

pub struct FaultyTransport<T: Transport> {
    inner: T,
    cfg: FaultConfig,
    rng: Rng,
    held: BinaryHeap<Reverse<Held>>,
    order: u64,
    pub stats: FaultStats,
}

impl<T: Transport> FaultyTransport<T> {
    pub fn new(inner: T, cfg: FaultConfig) -> FaultyTransport<T> {
        // Each endpoint gets its own stream, repeatable for a given seed and port.
        let seed = cfg.seed ^ ((inner.local_addr().port() as u64) << 32);
        FaultyTransport {
            inner,
            rng: Rng::new(seed),
            cfg,
            held: BinaryHeap::new(),
            order: 0,
            stats: FaultStats::default(),
        }
    }

    fn hold(&mut self, at: Instant, to: SocketAddr, d: Vec<u8>) {
        self.order += 1;
        self.held.push(Reverse((at, self.order, to, d)));
    }
}

impl<T: Transport> Transport for FaultyTransport<T> {
    fn send(&mut self, now: Instant, to: SocketAddr, dgram: &[u8]) -> io::Result<()> {
        self.flush_due(now);
        if self.rng.chance(self.cfg.loss) {
            self.stats.dropped += 1;
            return Ok(());
        }
        let copies = if self.rng.chance(self.cfg.dup) {
            self.stats.duplicated += 1;
            2
        } else {
            1
        };
        for _ in 0..copies {
            let mut d = dgram.to_vec();
            if !d.is_empty() && self.rng.chance(self.cfg.corrupt) {
                self.stats.corrupted += 1;
                let i = self.rng.below(d.len() as u64) as usize;
                d[i] ^= 1 << self.rng.below(8);
            }
            let mut at = now.plus(self.cfg.delay_us * MICROS);
            if self.rng.chance(self.cfg.reorder) {
                self.stats.reordered += 1;
                at = at.plus(1 + self.rng.below(REORDER_HOLD_MAX));
            }
            if at > now {
                self.hold(at, to, d);
            } else {
                self.inner.send(now, to, &d)?;
            }
        }
        Ok(())
    }

    fn recv_batch(&mut self, each: &mut DatagramSink<'_>) -> io::Result<usize> {
        self.inner.recv_batch(each)
    }

    fn local_addr(&self) -> SocketAddr {
        self.inner.local_addr()
    }

    fn fd(&self) -> RawFd {
        self.inner.fd()
    }

    fn flush_due(&mut self, now: Instant) -> Option<Instant> {
        while let Some(Reverse((at, ..))) = self.held.peek() {
            if *at > now {
                return Some(*at);
            }
            let Reverse((_, _, to, d)) = self.held.pop().unwrap();
            // A send error here is a lost datagram, as on a real network.
            let _ = self.inner.send(now, to, &d);
        }
        None
    }

    fn send_drops(&self) -> u64 {
        self.inner.send_drops()
    }
}
