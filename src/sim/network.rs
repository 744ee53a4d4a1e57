//! The simulated datagram network of a `World`: datagrams in transit with
//! the instant they arrive (the seeded fault injector decides loss,
//! duplication, corruption, reordering and delay), an inbox per address
//! (a socket's receive buffer, bounded), links cut and hosts down, the
//! test's tap and the datagrams it holds back; and
//! `SimTransport`, the `Transport` an endpoint of the world sends and
//! receives through.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io;
use std::net::{IpAddr, SocketAddr};

use super::bottleneck::Bottlenecks;
use super::SimStats;
use crate::fault::FaultInjector;
use crate::fxhash::FxHashMap;
use crate::time::Instant;

/// Datagrams an inbox holds at most (a socket's receive buffer); more are
/// dropped, as a kernel drops them, and counted.
pub const INBOX_MAX: usize = 4096;

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct InTransit {
    at: Instant,
    order: u64,
    from: SocketAddr,
    to: SocketAddr,
    bytes: Vec<u8>,
}

/// An address's receive buffer, and the transport that owns it now.
struct Inbox {
    owner: u64,
    queue: VecDeque<(SocketAddr, Vec<u8>)>,
}

pub(crate) struct Network {
    transit: BinaryHeap<Reverse<InTransit>>,
    order: u64,
    inboxes: FxHashMap<SocketAddr, Inbox>,
    faults: FaultInjector,
    /// Links between hosts cut (both directions): (lower, higher).
    cut: std::collections::HashSet<(IpAddr, IpAddr), crate::fxhash::FxBuild>,
    pub(crate) stats: SimStats,
    /// Datagrams dropped because an inbox was full.
    pub(crate) overflowed: u64,
    /// The test's look at every datagram sent (`World::tap`): false drops it.
    pub(crate) tap: Option<Tap>,
    /// Which datagrams the test holds back (`World::hold`): true holds it.
    pub(crate) hold: Option<Tap>,
    /// Those held, in the order sent: (from, to, bytes).
    pub(crate) held: VecDeque<(SocketAddr, SocketAddr, Vec<u8>)>,
    /// Bottleneck links datagrams go through before the faults
    /// (`World::bottleneck`).
    pub(crate) links: Bottlenecks<SocketAddr>,
    /// The rail of each rail address (`World::node_with_rails`): rails
    /// are separate networks, a datagram between two rails' addresses is
    /// lost; and the addresses whose interface is down (`set_down`).
    rail_of: FxHashMap<IpAddr, u8>,
    down: std::collections::HashSet<IpAddr, crate::fxhash::FxBuild>,
}

/// Sees every datagram sent, (from, to, bytes); false: it is lost.
pub type Tap = Box<dyn FnMut(SocketAddr, SocketAddr, &[u8]) -> bool + Send>;

fn link(a: SocketAddr, b: SocketAddr) -> (IpAddr, IpAddr) {
    let (a, b) = (a.ip(), b.ip());
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

impl Network {
    pub(crate) fn new(faults: FaultInjector) -> Network {
        Network {
            transit: BinaryHeap::new(),
            order: 0,
            inboxes: FxHashMap::default(),
            faults,
            cut: Default::default(),
            stats: SimStats::default(),
            overflowed: 0,
            tap: None,
            hold: None,
            held: VecDeque::new(),
            links: Bottlenecks::default(),
            rail_of: FxHashMap::default(),
            down: Default::default(),
        }
    }

    /// `ip` is rail `rail`'s address of its host: it reaches only the
    /// same rail's addresses (and those of no rail).
    pub(crate) fn set_rail(&mut self, ip: IpAddr, rail: u8) {
        self.rail_of.insert(ip, rail);
    }

    /// The interface of `ip` goes down (or up): what it sends fails
    /// (`is_down`: the transport says ENETDOWN), nothing reaches it.
    pub(crate) fn set_down(&mut self, ip: IpAddr, down: bool) {
        if down {
            self.down.insert(ip);
        } else {
            self.down.remove(&ip);
        }
    }

    pub(crate) fn is_down(&self, ip: IpAddr) -> bool {
        !self.down.is_empty() && self.down.contains(&ip)
    }

    /// Whether nothing goes from `from` to `to`: a cut link, an interface
    /// down, or two rails.
    fn blocked(&self, from: SocketAddr, to: SocketAddr) -> bool {
        if self.cut.contains(&link(from, to)) || self.is_down(to.ip()) {
            return true;
        }
        if self.rail_of.is_empty() {
            return false;
        }
        match (self.rail_of.get(&from.ip()), self.rail_of.get(&to.ip())) {
            (Some(a), Some(b)) => a != b,
            _ => false,
        }
    }

    /// Binds `addr` for transport `owner` (a fresh inbox).
    pub(crate) fn bind(&mut self, addr: SocketAddr, owner: u64) -> io::Result<()> {
        if self.inboxes.contains_key(&addr) {
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                format!("{addr} is bound in the simulated network"),
            ));
        }
        self.inboxes.insert(
            addr,
            Inbox {
                owner,
                queue: VecDeque::new(),
            },
        );
        Ok(())
    }

    /// Unbinds `addr`: what waits for it and what comes later is lost.
    pub(crate) fn unbind(&mut self, addr: SocketAddr) {
        self.inboxes.remove(&addr);
    }

    pub(crate) fn set_cut(&mut self, a: IpAddr, b: IpAddr, cut: bool) {
        let (a, b) = (SocketAddr::new(a, 0), SocketAddr::new(b, 0));
        if cut {
            self.cut.insert(link(a, b));
        } else {
            self.cut.remove(&link(a, b));
        }
    }

    /// A datagram sent at `now`: its copies in transit, as the faults say.
    pub(crate) fn transmit(&mut self, now: Instant, from: SocketAddr, to: SocketAddr, d: &[u8]) {
        if super::tracing() {
            eprintln!(
                "sim: {} {from} -> {to}: {} bytes, type {}",
                now.0,
                d.len(),
                d.get(3).copied().unwrap_or(0)
            );
        }
        self.stats.sent += 1;
        if let Some(tap) = self.tap.as_mut() {
            if !tap(from, to, d) {
                self.stats.lost += 1;
                return;
            }
        }
        if let Some(hold) = self.hold.as_mut() {
            if hold(from, to, d) {
                self.held.push_back((from, to, d.to_vec()));
                return;
            }
        }
        self.send_on(now, from, to, d);
    }

    /// Sends on the `n` oldest datagrams held (`World::release`), as if
    /// sent at `now`; how many.
    pub(crate) fn release(&mut self, now: Instant, n: usize) -> usize {
        let n = n.min(self.held.len());
        for _ in 0..n {
            let (from, to, d) = self.held.pop_front().expect("counted");
            self.send_on(now, from, to, &d);
        }
        n
    }

    /// A datagram on its way at `now`, past the tap and the hold: lost on
    /// a cut link, else in transit as the faults say.
    fn send_on(&mut self, now: Instant, from: SocketAddr, to: SocketAddr, d: &[u8]) {
        if self.blocked(from, to) {
            self.stats.lost += 1;
            return;
        }
        let Some(left) = self.links.pass(now, from, to, d.len()) else {
            self.stats.lost += 1;
            self.stats.queue_dropped += 1;
            return;
        };
        let (transit, order) = (&mut self.transit, &mut self.order);
        let fate = self.faults.inject(left, d, |at, bytes| {
            *order += 1;
            transit.push(Reverse(InTransit {
                at,
                order: *order,
                from,
                to,
                bytes,
            }));
        });
        self.stats.lost += fate.dropped as u64;
        self.stats.duplicated += fate.duplicated as u64;
        self.stats.corrupted += fate.corrupted as u64;
        self.stats.reordered += fate.reordered as u64;
    }

    /// When the next datagram arrives.
    pub(crate) fn next_arrival(&self) -> Option<Instant> {
        self.transit.peek().map(|Reverse(d)| d.at)
    }

    /// Moves every datagram due at `now` into its inbox; true when any did.
    pub(crate) fn deliver(&mut self, now: Instant) -> bool {
        let mut any = false;
        while self.transit.peek().is_some_and(|Reverse(d)| d.at <= now) {
            let Reverse(d) = self.transit.pop().expect("peeked");
            any = true;
            if self.blocked(d.from, d.to) {
                self.stats.lost += 1;
                continue;
            }
            match self.inboxes.get_mut(&d.to) {
                Some(inbox) if inbox.queue.len() < INBOX_MAX => {
                    self.stats.delivered += 1;
                    inbox.queue.push_back((d.from, d.bytes));
                }
                Some(_) => self.overflowed += 1,
                // nobody there: lost, as on a real network
                None => self.stats.lost += 1,
            }
        }
        any
    }

    /// Whether datagrams wait in `addr`'s inbox.
    pub(crate) fn waiting(&self, addr: SocketAddr) -> bool {
        self.inboxes.get(&addr).is_some_and(|i| !i.queue.is_empty())
    }

    /// Takes up to `n` datagrams of `addr`'s inbox, if `owner` owns it.
    pub(super) fn take(
        &mut self,
        addr: SocketAddr,
        owner: u64,
        n: usize,
    ) -> Vec<(SocketAddr, Vec<u8>)> {
        match self.inboxes.get_mut(&addr) {
            Some(i) if i.owner == owner => {
                let k = n.min(i.queue.len());
                i.queue.drain(..k).collect()
            }
            _ => Vec::new(),
        }
    }

    /// Whether transport `owner` still owns `addr` (not killed).
    pub(crate) fn owns_addr(&self, addr: SocketAddr, owner: u64) -> bool {
        self.owns(addr, owner)
    }

    pub(super) fn owns(&self, addr: SocketAddr, owner: u64) -> bool {
        self.inboxes.get(&addr).is_some_and(|i| i.owner == owner)
    }
}
