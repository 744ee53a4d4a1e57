//! Rails in the protocol (`path.rs`, `rails.rs`, `peer/paths.rs`), on
//! virtual time: two cores, each with two rails, joined by a small
//! network of two subnets (rail 0's and rail 1's: an address reaches only
//! its own subnet), whose links can be cut silently per direction and
//! restored. Deterministic; each test prints its seed (the latency
//! jitter and message sizes come from it).

use std::collections::{BTreeMap, HashSet};

use super::path::PROBE_MAX;
use super::*;
use crate::path::{Path, Rail};
use crate::rng::Rng;
use crate::sim::Bottleneck;
use crate::time::{Nanos, MICROS, MILLIS};
use crate::wire::{Category, MsgKind, PacketType, CHANNEL_REQUEST};

#[path = "path_events_tests.rs"]
mod path_events_tests;

/// Node 0's rails are addresses 0 and 10, node 1's 1 and 11; an address's
/// subnet is `addr / 10 % 10`, its node `addr % 10` (a restarted node may
/// take another rail-1 address: 111, `Net::rails`).
const RAILS: [[u32; 2]; 2] = [[0, 10], [1, 11]];

fn node_of(addr: u32) -> usize {
    (addr % 10) as usize
}

fn rail_of(addr: u32) -> Rail {
    Rail((addr / 10 % 10) as u8)
}

/// A datagram on the wire: to which node, its arrival path, its bytes.
type InFlight = (usize, Path<u32>, Vec<u8>);

pub(super) struct Net {
    pub(super) p: [Protocol<u32>; 2],
    /// Each node's rails (`RAILS`, until a restart moves one).
    rails: [[u32; 2]; 2],
    /// Every address reaches every other (loopback's 127.0.0.1, .2).
    flat: bool,
    /// As the kernel routes: every address reaches every other, over the
    /// destination's link whatever rail sent it (rail 0 to rail-1: link 1).
    pub(super) routed: bool,
    /// The nodes share a host: a datagram to a node's name goes through
    /// its ring (`handle_ring_datagram`, told as from the sender's name),
    /// as the endpoint's transports route it (`net/transports.rs`).
    pub(super) ring: bool,
    pub(super) now: Instant,
    rng: Rng,
    /// In flight: (arrival, order) -> (to node, arrival path, bytes).
    wire: BTreeMap<(Instant, u64), InFlight>,
    order: u64,
    /// Directed links (from address, to address) that drop everything.
    cut: HashSet<(u32, u32)>,
    /// Every DATA datagram that left a node: (time, node, path); every
    /// HEARTBEAT too (`hb_sent`).
    pub(super) data_sent: Vec<(Instant, usize, Path<u32>)>,
    pub(super) hb_sent: Vec<(Instant, usize, Path<u32>)>,
    /// Per subnet: its link is down (`ip link set down`): a send from or to
    /// it fails (the transport's `path_down`), nothing goes.
    pub(super) down: [bool; 2],
    /// Heartbeat answers seen, for replays: (to node, arrival, bytes).
    hb_acks: Vec<InFlight>,
    pub(super) delivered: Vec<u32>,
    /// When each of `delivered` was (at the target).
    pub(super) delivered_at: Vec<Instant>,
    pub(super) failed: Vec<(u32, FailReason)>,
    /// Each node runs nothing before this (off the CPU): what comes waits.
    pub(super) asleep: [Instant; 2],
    /// Per subnet: a bottleneck's rate (bytes/s, 0: none), extra delay;
    /// each sending node's egress to it a `sim::Bottleneck` of that rate
    /// (made at its first datagram): with `shape`'s token bucket and
    /// queue (bytes; None: no burst, an unbounded queue), as the real
    /// rails' `tc tbf` on each end (`scripts/netns.sh`).
    pub(super) rate: [u64; 2],
    pub(super) delay: [Nanos; 2],
    pub(super) shape: Option<(u64, Nanos)>,
    pub(super) links: [[Option<Bottleneck>; 2]; 2],
}

pub(super) fn cfg() -> ProtoConfig {
    ProtoConfig {
        peer_timeout: 10_000 * MILLIS,
        ..ProtoConfig::default()
    }
}

impl Net {
    pub(super) fn new(seed: u64, cfg: ProtoConfig) -> Net {
        println!("rails test seed {seed}");
        let mut p = [
            Protocol::new(cfg.clone(), &[0x10; 32]),
            Protocol::new(cfg, &[0x20; 32]),
        ];
        p[0].set_local_rails(&RAILS[0]);
        p[1].set_local_rails(&RAILS[1]);
        Net {
            p,
            rails: RAILS,
            flat: false,
            routed: false,
            ring: false,
            now: Instant(1_000_000_000),
            rng: Rng::new(seed),
            wire: BTreeMap::new(),
            order: 0,
            cut: HashSet::new(),
            data_sent: Vec::new(),
            hb_sent: Vec::new(),
            down: [false; 2],
            hb_acks: Vec::new(),
            delivered: Vec::new(),
            delivered_at: Vec::new(),
            failed: Vec::new(),
            asleep: [Instant::ZERO; 2],
            rate: [0; 2],
            delay: [0; 2],
            shape: None,
            links: Default::default(),
        }
    }

    /// Puts what node `n` has to send on the wire.
    fn drain(&mut self, n: usize) {
        let mut out: Vec<(Path<u32>, Vec<u8>)> = Vec::new();
        self.p[n].drain_transmits::<8>(|batch| {
            for (path, pieces) in batch {
                out.push((*path, pieces.concat()));
            }
        });
        let mut errors = Vec::new();
        for (path, bytes) in out {
            let src = self.rails[n][path.rail.0 as usize];
            let t = bytes[crate::wire::layout::TYPE_AT];
            if self.down[rail_of(src).0 as usize] || self.down[rail_of(path.remote).0 as usize] {
                errors.push(path); // ENETDOWN: the path's news
                continue;
            }
            if t == PacketType::Heartbeat as u8 {
                self.hb_sent.push((self.now, n, path));
            }
            if t == PacketType::Data as u8 {
                // (a failed path was confirmed once: with none active,
                // the current one keeps its retransmissions)
                let state = self.state(n, path);
                assert!(
                    state.is_some_and(|s| s != PathState::Unconfirmed),
                    "node {n}: DATA on {path:?}, a path not confirmed"
                );
                self.data_sent.push((self.now, n, path));
            }
            let ring = self.ring && rail_of(path.remote) == Rail(0);
            let src = if ring { self.rails[n][0] } else { src };
            let reaches = ring || self.flat || self.routed || rail_of(src) == rail_of(path.remote);
            if !reaches || self.cut.contains(&(src, path.remote)) {
                continue; // another subnet, or cut (a ring: full): lost without a word
            }
            let to = node_of(path.remote);
            let arrival = Path {
                remote: src,
                rail: rail_of(path.remote),
            };
            if t == PacketType::HeartbeatAck as u8 {
                self.hb_acks.push((to, arrival, bytes.clone()));
            }
            let link = if self.routed || ring {
                path.remote
            } else {
                src
            };
            let sub = rail_of(link).0 as usize;
            let mut at = self.now.plus(50 * MICROS + self.rng.below(20) * MICROS);
            if self.rate[sub] > 0 {
                let (rate, shape) = (self.rate[sub], self.shape);
                let b = self.links[n][sub].get_or_insert_with(|| match shape {
                    Some((burst, latency)) => Bottleneck::tbf(rate, burst, latency),
                    None => Bottleneck::new(rate, u64::MAX),
                });
                let Some(left) = b.enqueue(self.now, bytes.len()) else {
                    continue; // the queue is full: dropped
                };
                at = at.max(left.plus(50 * MICROS));
            }
            let at = at.plus(self.delay[sub]);
            self.order += 1;
            self.wire.insert((at, self.order), (to, arrival, bytes));
        }
        for path in errors {
            self.p[n].path_down(self.now, path);
        }
    }

    pub(super) fn state(&self, n: usize, path: Path<u32>) -> Option<PathState> {
        let peer = RAILS[1 - n][0];
        self.p[n]
            .paths_of(&peer)
            .iter()
            .find(|r| r.rail == path.rail && r.remote == path.remote)
            .map(|r| r.state)
    }

    fn events(&mut self, n: usize) {
        while let Some(ev) = self.p[n].poll_event() {
            match ev {
                Event::Delivered { meta, .. } => {
                    self.delivered.push(meta.args()[0]);
                    self.delivered_at.push(self.now);
                }
                Event::Failed { meta, reason, .. } => self.failed.push((meta.args()[0], reason)),
            }
        }
    }

    /// Runs until `until`, every node's timers and datagrams in order.
    pub(super) fn run_until(&mut self, until: Instant) {
        loop {
            for n in 0..2 {
                self.drain(n);
                self.events(n);
            }
            let next_wire = self.wire.keys().next().map(|k| k.0);
            let next_timer = (0..2)
                .filter_map(|n| Some(self.p[n].next_timeout()?.max(self.asleep[n])))
                .min();
            let next = [next_wire, next_timer].into_iter().flatten().min();
            let Some(t) = next.filter(|&t| t <= until) else {
                self.now = until;
                return;
            };
            self.now = self.now.max(t);
            if next_wire == Some(t) {
                let Some((_, (to, arrival, bytes))) = self.wire.pop_first() else {
                    unreachable!()
                };
                if self.asleep[to] > self.now {
                    // (it waits in the socket until the node runs)
                    self.order += 1;
                    let at = (self.asleep[to], self.order);
                    self.wire.insert(at, (to, arrival, bytes));
                    continue;
                }
                let p = &mut self.p[to];
                if self.ring && arrival.rail == Rail(0) {
                    p.handle_ring_datagram(self.now, arrival.remote, &bytes, &mut NoPlacement);
                } else {
                    p.handle_datagram_placing(self.now, arrival, &bytes, &mut NoPlacement);
                }
            }
            for (n, p) in self.p.iter_mut().enumerate() {
                if self.asleep[n] <= self.now {
                    p.handle_timeout(self.now);
                }
            }
            for p in &self.p {
                p.check_invariants();
            }
        }
    }

    pub(super) fn run_for(&mut self, d: Nanos) {
        self.run_until(self.now.plus(d));
    }

    /// Sends message `k` (a few hundred bytes to a few KiB) from node 0.
    pub(super) fn send(&mut self, k: u32) {
        let len = 200 + self.rng.below(4000) as usize;
        let meta = MsgMeta::new(MsgKind::User, Category::Medium, 1, &[k]);
        self.p[0].send(self.now, 1, CHANNEL_REQUEST, meta, vec![k as u8; len]);
    }

    /// Cuts (or, `on`, restores) both directions between `a` and `b`.
    pub(super) fn link(&mut self, a: u32, b: u32, on: bool) {
        for l in [(a, b), (b, a)] {
            if on {
                self.cut.remove(&l);
            } else {
                self.cut.insert(l);
            }
        }
    }

    /// Every message 0..n delivered once, nothing returned (requests
    /// whole in one packet may pass a gap: no order between them).
    pub(super) fn assert_exactly_once(&self, n: u32) {
        assert_eq!(self.failed, [], "nothing returned");
        let mut got = self.delivered.clone();
        got.sort_unstable();
        let want: Vec<u32> = (0..n).collect();
        assert_eq!(got, want, "each message once");
    }
}

pub(super) fn p(rail: u8, remote: u32) -> Path<u32> {
    Path {
        remote,
        rail: Rail(rail),
    }
}

/// Associated, every same-subnet path confirmed.
pub(super) fn confirmed(seed: u64) -> Net {
    let mut net = Net::new(seed, cfg());
    net.send(0);
    net.run_for(50 * MILLIS);
    net.assert_exactly_once(1);
    net
}

#[test]
fn the_handshake_lists_addresses_and_every_pair_is_confirmed_before_data() {
    let net = confirmed(1);
    for n in 0..2 {
        let (mine, theirs) = (RAILS[n], RAILS[1 - n]);
        let paths = net.p[n].paths_of(&theirs[0]);
        assert_eq!(paths.len(), 4, "node {n}: every pair of rails: {paths:?}");
        for r in &paths {
            let same_subnet = mine[r.rail.0 as usize] / 10 == r.remote / 10;
            let want = if same_subnet {
                PathState::Active
            } else {
                PathState::Unconfirmed
            };
            assert_eq!(r.state, want, "node {n}: {r:?}");
        }
        // packets from the peer's other address are the peer's
        assert_eq!(net.p[n].paths_of(&theirs[1]).len(), 4);
    }
    // (every DATA went on an active path: `drain` checks each)
    assert!(!net.data_sent.is_empty());
}

#[test]
fn a_partition_shorter_than_the_peer_timeout_returns_nothing() {
    for seed in [8, 9] {
        // (a low retry limit: a partition is not a dead peer)
        let mut net = Net::new(
            seed,
            ProtoConfig {
                retry_limit: 4,
                ..cfg()
            },
        );
        net.send(0);
        net.run_for(50 * MILLIS);
        for k in 1..20 {
            net.send(k);
        }
        net.run_for(60 * MICROS);
        for (a, b) in [(0, 1), (10, 11)] {
            net.link(a, b, false);
        }
        for k in 20..30 {
            net.send(k);
            net.run_for(100 * MILLIS);
        }
        net.run_for(2000 * MILLIS);
        assert!(net.failed.is_empty(), "seed {seed}: nothing returned");
        for (a, b) in [(0, 1), (10, 11)] {
            net.link(a, b, true);
        }
        let back = net.now;
        net.run_for(1500 * MILLIS);
        net.assert_exactly_once(30);
        let resumed = net.data_sent.iter().find(|d| d.0 >= back).map(|d| d.0);
        assert!(resumed.is_some_and(|t| t.since(back) <= PROBE_MAX + 10 * MILLIS));
    }
}

#[test]
fn a_partition_past_the_peer_timeout_returns_the_messages() {
    let mut net = Net::new(
        10,
        ProtoConfig {
            peer_timeout: 2000 * MILLIS,
            ..cfg()
        },
    );
    net.send(0);
    net.run_for(50 * MILLIS);
    for (a, b) in [(0, 1), (10, 11)] {
        net.link(a, b, false);
    }
    for k in 1..10 {
        net.send(k);
    }
    net.run_for(1500 * MILLIS);
    assert!(net.failed.is_empty(), "before the peer timeout: waiting");
    net.run_for(1000 * MILLIS);
    let mut returned: Vec<u32> = net.failed.iter().map(|f| f.0).collect();
    returned.sort_unstable();
    assert_eq!(returned, (1..10).collect::<Vec<_>>());
    assert!(net
        .failed
        .iter()
        .all(|f| f.1 == FailReason::PeerUnreachable));
    assert_eq!(net.delivered, [0]);
}

#[test]
fn rails_work_under_the_job_key_mac() {
    let mac = ProtoConfig {
        mac: Some(crate::wire::mac::MacKey::from_job_key("rails test key")),
        ..cfg()
    };
    let mut net = Net::new(19, mac);
    net.send(0);
    net.run_for(50 * MILLIS);
    assert_eq!(net.state(0, p(1, 11)), Some(PathState::Active));
    assert_eq!(net.state(1, p(1, 10)), Some(PathState::Active));
    net.link(0, 1, false);
    for k in 1..20 {
        net.send(k);
        net.run_for(5 * MILLIS);
    }
    net.run_for(300 * MILLIS);
    net.assert_exactly_once(20);
}

#[path = "rails_cut_tests.rs"]
mod cut;

#[path = "rails_restart_tests.rs"]
mod restart;

#[path = "rails_busy_tests.rs"]
mod busy;

#[path = "rails_hostile_tests.rs"]
mod hostile;

#[path = "rails_same_host_tests.rs"]
mod same_host;

#[path = "rejoin_tests.rs"]
mod rejoin;
