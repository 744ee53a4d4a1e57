//! An in-memory network for tests: no sockets, and delivery under the
//! test's control. Every transport attached to a `MemNetwork` gets an
//! address of its own; a datagram lands in its receiver's inbox at once,
//! unless the test told the network to hold datagrams like it, which then
//! wait until the test releases them (oldest first).

use std::collections::VecDeque;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::os::fd::RawFd;
use std::sync::Arc;

use parking_lot::Mutex;

use super::{DatagramSink, Transport};
use crate::fxhash::FxHashMap;
use crate::time::Instant;

/// Tells which datagrams to hold: (receiver, datagram).
type HoldFilter = Box<dyn Fn(SocketAddr, &[u8]) -> bool + Send>;

/// A datagram in flight: from, to, bytes.
type InFlight = (SocketAddr, SocketAddr, Vec<u8>);

#[derive(Default)]
struct Hub {
    next_port: u16,
    inboxes: FxHashMap<SocketAddr, VecDeque<(SocketAddr, Vec<u8>)>>,
    hold: Option<HoldFilter>,
    held: VecDeque<InFlight>,
}

impl Hub {
    fn deliver(&mut self, (from, to, d): InFlight) {
        // A datagram to no one is lost, as on a real network.
        if let Some(q) = self.inboxes.get_mut(&to) {
            q.push_back((from, d));
        }
    }
}

/// The network the transports of a test share.
#[derive(Clone, Default)]
pub struct MemNetwork {
    hub: Arc<Mutex<Hub>>,
}

impl MemNetwork {
    pub fn new() -> MemNetwork {
        MemNetwork::default()
    }

    /// A transport on this network, at a fresh address.
    pub fn attach(&self) -> MemTransport {
        let mut hub = self.hub.lock();
        hub.next_port += 1;
        let local = SocketAddr::new(Ipv4Addr::new(10, 0, 0, 1).into(), hub.next_port);
        hub.inboxes.insert(local, VecDeque::new());
        MemTransport {
            hub: self.hub.clone(),
            local,
        }
    }

    /// A transport at `addr`, which no transport may hold now: a process
    /// restarted at its old address.
    pub fn attach_at(&self, addr: SocketAddr) -> MemTransport {
        let mut hub = self.hub.lock();
        assert!(!hub.inboxes.contains_key(&addr), "{addr} is in use");
        hub.inboxes.insert(addr, VecDeque::new());
        MemTransport {
            hub: self.hub.clone(),
            local: addr,
        }
    }

    /// From now on, holds every datagram for which `f(receiver, datagram)`.
    pub fn hold_if(&self, f: impl Fn(SocketAddr, &[u8]) -> bool + Send + 'static) {
        self.hub.lock().hold = Some(Box::new(f));
    }

    /// Stops holding and delivers everything held.
    pub fn release_all(&self) {
        let mut hub = self.hub.lock();
        hub.hold = None;
        while let Some(d) = hub.held.pop_front() {
            hub.deliver(d);
        }
    }
}

/// One endpoint's attachment to a `MemNetwork`.
pub struct MemTransport {
    hub: Arc<Mutex<Hub>>,
    local: SocketAddr,
}

impl Transport for MemTransport {
    fn send(&mut self, _now: Instant, to: SocketAddr, dgram: &[u8]) -> io::Result<()> {
        let mut hub = self.hub.lock();
        let d = (self.local, to, dgram.to_vec());
        if hub.hold.as_ref().is_some_and(|f| f(to, dgram)) {
            hub.held.push_back(d);
        } else {
            hub.deliver(d);
        }
        Ok(())
    }

    fn recv_batch(&mut self, each: &mut DatagramSink<'_>) -> io::Result<usize> {
        let mut n = 0;
        while n < super::RECV_BATCH {
            // Not under the lock while the protocol takes it in.
            let Some((from, d)) = self
                .hub
                .lock()
                .inboxes
                .get_mut(&self.local)
                .and_then(|q| q.pop_front())
            else {
                break;
            };
            each(Some((&d, from)));
            n += 1;
        }
        Ok(n)
    }

    fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// No descriptor: a waiting endpoint wakes on its timers only.
    fn fd(&self) -> RawFd {
        -1
    }

    fn readable(&self) -> bool {
        self.hub
            .lock()
            .inboxes
            .get(&self.local)
            .is_some_and(|q| !q.is_empty())
    }
}

impl Drop for MemTransport {
    fn drop(&mut self) {
        self.hub.lock().inboxes.remove(&self.local);
    }
}
