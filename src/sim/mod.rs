//! Deterministic simulators, test tools in their own right: they run the
//! real code, only the network and time are simulated (seeded loss,
//! duplication, reordering, corruption and delay; a virtual clock that
//! jumps to the next deadline).
//!
//! - this file: `SimNet`, many protocol cores (`Protocol`) alone; every
//!   node a step touched has its invariants checked after it
//!   (`Protocol::check_invariants`, `SimNet::check`), in release builds too;
//! - `world.rs`: `World`, whole endpoints (AM layer, protocol,
//!   transports) as simulated processes, killed and restarted at will;
//!   its state (`state.rs`), how it runs them on virtual time
//!   (`scheduler.rs`), the host addresses it holds (`hosts.rs`);
//! - `network.rs`: the world's datagram network; `transport.rs`: the
//!   `SimTransport` an endpoint of the world sends and receives through;
//! - `bottleneck.rs`: a bottleneck link (a rate and a drop-tail queue)
//!   both networks may route datagrams through (`SimNet::bottleneck`,
//!   `World::bottleneck`);
//! - `manual.rs`: `ManualClock`, virtual time a test moves by hand, for
//!   code it drives directly (a transport's rings).

mod bottleneck;
mod hosts;
mod manual;
mod network;
mod scheduler;
mod state;
mod transport;
mod world;
mod world_rails;

pub use bottleneck::{Bottleneck, BottleneckStats, Bottlenecks, Carries};
pub use manual::{ManualClock, YIELD_STEP};
pub use network::{Tap, INBOX_MAX};
pub use transport::SimTransport;

/// `RAMP_SIM_TRACE` set: the world prints every datagram and every move of
/// its clock on stderr (`--nocapture`), to follow a failing seed.
fn tracing() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os(crate::config::SIM_TRACE).is_some())
}
pub use scheduler::crash_here;
pub use state::{Program, World};
pub use world::{seeds, Node};

use std::cmp::Reverse;
use std::collections::BinaryHeap;

pub use crate::rng::Rng;

pub use crate::fault::FaultConfig;
use crate::fault::FaultInjector;
use crate::proto::{Event, MsgId, ProtoConfig, Protocol};
use crate::time::{Instant, Nanos, MICROS};
use crate::wire::MsgMeta;

/// The simulated network without faults: 20 µs one way; a datagram held
/// back for reordering waits up to 200 µs more. Faults are added with
/// `FaultConfig { loss: 0.1, seed, ..lan() }`.
pub fn lan() -> FaultConfig {
    FaultConfig {
        reorder_window: 200 * MICROS,
        delay: 20 * MICROS,
        ..FaultConfig::default()
    }
}

/// 32 bytes of a node's secret, from the simulation's seeded RNG.
pub fn secret(rng: &mut Rng) -> [u8; 32] {
    let mut s = [0u8; 32];
    for c in s.chunks_exact_mut(8) {
        c.copy_from_slice(&rng.next_u64().to_le_bytes());
    }
    s
}

/// Counters of what the simulated network did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SimStats {
    pub sent: u64,
    pub lost: u64,
    pub duplicated: u64,
    pub corrupted: u64,
    pub reordered: u64,
    pub delivered: u64,
    /// Datagrams a bottleneck's queue dropped (counted in `lost` too).
    pub queue_dropped: u64,
    /// Datagrams larger than the paths carry (`SimNet::set_path_datagram`):
    /// their senders were told, and they went on (fragmented, as UDP).
    pub too_big: u64,
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct InTransit {
    at: Instant,
    order: u64,
    from: u32,
    to: u32,
    bytes: Vec<u8>,
}

/// A set of protocol nodes, addressed 0..n, joined by a simulated network.
pub struct SimNet {
    nodes: Vec<Protocol<u32>>,
    now: Instant,
    transit: BinaryHeap<Reverse<InTransit>>,
    order: u64,
    faults: FaultInjector,
    pub stats: SimStats,
    /// Nodes whose datagrams, in and out, all vanish (a partition or a crash).
    down: Vec<bool>,
    /// Until when each node is descheduled (see `deschedule`).
    asleep: Vec<Instant>,
    /// Each node's next timer as last seen, and a queue of them (entries
    /// that no longer match `armed` are skipped), so that a step costs
    /// O(log n), not O(n), with thousands of nodes.
    armed: Vec<Option<Instant>>,
    timers: BinaryHeap<Reverse<(Instant, u32)>>,
    /// Nodes handed out by `node()`: their timers and transmits are looked
    /// at before the next step.
    touched: Vec<u32>,
    /// The buffer `poll_transmit` writes into.
    buf: Vec<u8>,
    /// Steps of each node since its invariants were last checked whole.
    since_walk: Vec<usize>,
    /// Bottleneck links datagrams go through before the faults.
    links: Bottlenecks<u32>,
    /// The largest datagram every path carries whole (None: any).
    path_datagram: Option<usize>,
}

/// A node with up to this many peers has its whole state checked after
/// every step; a larger one every `peers / WALK_PEERS` steps (see
/// `SimNet::check`).
const WALK_PEERS: usize = 256;

impl SimNet {
    /// `n` nodes joined by a network that does what `faults` says (see
    /// [`lan`] for a clean one); node secrets and faults derive from its seed.
    pub fn new(n: usize, proto: ProtoConfig, faults: FaultConfig) -> SimNet {
        let mut rng = Rng::new(faults.seed);
        let nodes = (0..n)
            .map(|_| Protocol::new(proto.clone(), &secret(&mut rng)))
            .collect();
        SimNet {
            nodes,
            now: Instant(1_000_000),
            transit: BinaryHeap::new(),
            order: 0,
            faults: FaultInjector::with_rng(faults, rng),
            stats: SimStats::default(),
            down: vec![false; n],
            asleep: vec![Instant(0); n],
            armed: vec![None; n],
            timers: BinaryHeap::new(),
            touched: Vec::new(),
            buf: Vec::new(),
            since_walk: vec![0; n],
            links: Bottlenecks::default(),
            path_datagram: None,
        }
    }

    /// Every path carries datagrams of at most `size` bytes whole (a link's
    /// MTU): a larger one is told to its sender as UDP's `EMSGSIZE` is
    /// (`Protocol::path_datagram`) and goes on all the same (UDP sends it
    /// once fragmented), counted in `stats.too_big`.
    pub fn set_path_datagram(&mut self, size: Option<usize>) {
        self.path_datagram = size;
    }

    pub fn now(&self) -> Instant {
        self.now
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Direct access to a node (to inspect it, configure it, send through
    /// it, or replace it with a new process). What it queued goes out at
    /// the next step.
    pub fn node(&mut self, i: u32) -> &mut Protocol<u32> {
        self.touched.push(i);
        &mut self.nodes[i as usize]
    }

    /// Adds a bottleneck link for the datagrams `carries(from, to)` says
    /// (one receiver's downlink: `|_, to| to == r`); returns its index for
    /// `link`.
    pub fn bottleneck(
        &mut self,
        b: Bottleneck,
        carries: impl Fn(u32, u32) -> bool + Send + 'static,
    ) -> usize {
        self.links.add(b, Box::new(carries))
    }

    /// Bottleneck `i` as it is now (its counters).
    pub fn link(&self, i: usize) -> &Bottleneck {
        self.links.get(i)
    }

    /// Cuts a node off the network (or brings it back).
    pub fn set_down(&mut self, i: u32, down: bool) {
        self.down[i as usize] = down;
    }

    /// Deschedules node `i` until `until` (a process that does not run, on
    /// an oversubscribed host): what arrives for it and its timers wait
    /// until then; nothing is lost.
    pub fn deschedule(&mut self, i: u32, until: Instant) {
        let a = &mut self.asleep[i as usize];
        *a = (*a).max(until);
    }

    pub fn send(
        &mut self,
        from: u32,
        to: u32,
        channel: u8,
        meta: MsgMeta,
        payload: Vec<u8>,
    ) -> MsgId {
        let now = self.now;
        let id = self.nodes[from as usize].send(now, to, channel, meta, payload);
        self.check(from, Some(to));
        self.collect(from);
        self.rearm(from);
        id
    }

    /// Takes the next event of node `i`.
    pub fn poll_event(&mut self, i: u32) -> Option<Event<u32>> {
        self.nodes[i as usize].poll_event()
    }

    fn collect(&mut self, from: u32) {
        while let Some(to) = self.nodes[from as usize].poll_transmit(&mut self.buf) {
            let bytes = &self.buf;
            self.stats.sent += 1;
            if let Some(size) = self.path_datagram.filter(|&m| bytes.len() > m) {
                self.stats.too_big += 1;
                self.nodes[from as usize].path_datagram(to, size);
            }
            if self.down[from as usize] || self.down[to as usize] {
                self.stats.lost += 1;
                continue;
            }
            let Some(left) = self.links.pass(self.now, from, to, bytes.len()) else {
                self.stats.lost += 1;
                self.stats.queue_dropped += 1;
                continue;
            };
            let (transit, order) = (&mut self.transit, &mut self.order);
            let fate = self.faults.inject(left, bytes, |at, b| {
                *order += 1;
                transit.push(Reverse(InTransit {
                    at,
                    order: *order,
                    from,
                    to,
                    bytes: b,
                }));
            });
            self.stats.lost += fate.dropped as u64;
            self.stats.duplicated += fate.duplicated as u64;
            self.stats.corrupted += fate.corrupted as u64;
            self.stats.reordered += fate.reordered as u64;
        }
    }

    /// Checks node `i`'s invariants after a step that touched it
    /// (`Protocol::check_invariants`, in release builds too): its whole
    /// state while it has at most `WALK_PEERS` peers; a larger node (a hub
    /// of thousands) the peer `from` the step concerned each time, and the
    /// whole walk every `peers / WALK_PEERS` steps, so that checking costs
    /// a step at most about a walk over `WALK_PEERS` peers.
    fn check(&mut self, i: u32, from: Option<u32>) {
        let node = &self.nodes[i as usize];
        let since = &mut self.since_walk[i as usize];
        if *since >= node.peer_count() / WALK_PEERS {
            *since = 0;
            node.check_invariants();
        } else {
            *since += 1;
            if let Some(from) = from {
                node.check_peer_invariants(&from);
            }
        }
    }

    /// Records node `i`'s next timer.
    fn rearm(&mut self, i: u32) {
        let t = self.nodes[i as usize].next_timeout();
        if self.armed[i as usize] != t {
            self.armed[i as usize] = t;
            if let Some(t) = t {
                self.timers.push(Reverse((t, i)));
            }
        }
    }

    /// The earliest timer of any node, and the node (the lowest-numbered of
    /// those due at the same time).
    fn next_timer(&mut self) -> Option<(Instant, usize)> {
        while let Some(i) = self.touched.pop() {
            self.check(i, None);
            self.collect(i);
            self.rearm(i);
        }
        while let Some(&Reverse((t, i))) = self.timers.peek() {
            if self.armed[i as usize] == Some(t) {
                return Some((t, i as usize));
            }
            self.timers.pop();
        }
        None
    }

    /// Advances to the next thing that happens (a datagram arrives or a timer
    /// fires). Returns false when nothing is left to happen.
    pub fn step(&mut self) -> bool {
        let next_timer = self.next_timer();
        let next_packet = self.transit.peek().map(|Reverse(p)| p.at);
        match (next_packet, next_timer) {
            (None, None) => false,
            (Some(p), t) if t.is_none_or(|(t, _)| p <= t) => {
                let Reverse(mut pkt) = self.transit.pop().unwrap();
                self.now = self.now.max(pkt.at);
                let wake = self.asleep[pkt.to as usize];
                if wake > self.now {
                    // taken in when the node runs again, in order
                    self.order += 1;
                    (pkt.at, pkt.order) = (wake, self.order);
                    self.transit.push(Reverse(pkt));
                    return true;
                }
                if !self.down[pkt.to as usize] {
                    self.stats.delivered += 1;
                    let now = self.now;
                    self.nodes[pkt.to as usize].handle_datagram(now, pkt.from, &pkt.bytes);
                    self.nodes[pkt.to as usize].handle_timeout(now);
                    self.check(pkt.to, Some(pkt.from));
                    self.collect(pkt.to);
                    self.rearm(pkt.to);
                }
                true
            }
            (_, Some((t, i))) => {
                self.now = self.now.max(t);
                let wake = self.asleep[i];
                if wake > self.now {
                    self.armed[i] = Some(wake);
                    self.timers.push(Reverse((wake, i as u32)));
                    return true;
                }
                let now = self.now;
                self.nodes[i].handle_timeout(now);
                self.check(i as u32, None);
                self.collect(i as u32);
                self.armed[i] = None; // served: look again even if unchanged
                self.rearm(i as u32);
                true
            }
            _ => unreachable!(),
        }
    }

    /// Steps until nothing is left or `limit` of virtual time has passed;
    /// returns whether the network went idle.
    pub fn run_for(&mut self, limit: Nanos) -> bool {
        let end = self.now.plus(limit);
        while self.now < end {
            if !self.step() {
                return true;
            }
        }
        false
    }

    /// Steps until `cond` holds or `limit` of virtual time has passed.
    pub fn run_until(&mut self, limit: Nanos, mut cond: impl FnMut(&mut SimNet) -> bool) -> bool {
        let end = self.now.plus(limit);
        while self.now < end {
            if cond(self) {
                return true;
            }
            if !self.step() {
                return cond(self);
            }
        }
        cond(self)
    }

    /// Jumps the clock forward without events (time passes with nothing to do).
    pub fn advance(&mut self, d: Nanos) {
        self.now = self.now.plus(d);
    }
}
