//! Helpers of the protocol tests over the simulated network
//! (`tests/proto_sim_*.rs`): numbered messages whose payloads check
//! themselves, a ledger of what arrived, traffic plans, and two nodes
//! joined by hand (`Duo`). Each test file includes it with
//! `#[path = "common/sim.rs"] mod sim;` and uses what it needs.
//!
//! Every message carries `[from, k, len]` as arguments and a payload computed
//! from them, so a receiver checks order (k), origin and integrity on its own.
#![allow(dead_code, unused_imports)] // each file uses part of it

// What the test files use, in one import (`use sim::*`).
pub use std::collections::{HashMap, HashSet};
pub use std::time::Duration;

pub use ramp::am::Statistics;
pub use ramp::proto::{Event, FailReason, MsgId, ProtoConfig, Protocol, MAX_MESSAGE};
pub use ramp::sim::{lan, FaultConfig, SimNet};
pub use ramp::time::{Instant, Nanos, MICROS, MILLIS};
pub use ramp::wire::{self, Category, Common, MsgKind, MsgMeta, CHANNEL_REPLY, CHANNEL_REQUEST};

pub const SECOND: Nanos = 1000 * MILLIS;

pub fn meta(from: u32, k: u32, len: usize) -> MsgMeta {
    MsgMeta::new(MsgKind::User, Category::Medium, 1, &[from, k, len as u32])
}

pub fn payload(from: u32, k: u32, ch: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32 ^ k.rotate_left(3) ^ from.rotate_left(8) ^ (ch as u32) << 5) as u8)
        .collect()
}

/// The faults of every "hostile network" test, for one seed.
pub fn faults(seed: u64) -> FaultConfig {
    FaultConfig {
        loss: 0.1,
        dup: 0.05,
        corrupt: 0.03,
        reorder: 0.1,
        jitter: 30 * MICROS,
        seed,
        ..lan()
    }
}

/// Records deliveries and checks each is intact and delivered once. No
/// order is promised to user messages: a reply whole in a packet, or a
/// request whole in a packet with nothing that keeps order before it
/// unacknowledged, is delivered as it arrives, ahead of a gap
/// (`proto/recv.rs`); a fragmented one waits for the gap. What came out
/// of its number's place is counted, by channel.
#[derive(Default)]
pub struct Ledger {
    /// Per (receiver, sender, channel): how many delivered.
    pub next: HashMap<(u32, u32, u8), u32>,
    /// Every (receiver, sender, channel, k) delivered.
    pub seen: HashSet<(u32, u32, u8, u32)>,
    /// Reply-channel messages delivered out of their number's place.
    pub early: u64,
    /// Request-channel messages delivered out of their number's place.
    pub early_requests: u64,
    pub delivered: u64,
    pub failed: Vec<(u32, Event<u32>)>,
    /// (receiver, sender, channel, k) in delivery order.
    pub trace: Vec<(u32, u32, u8, u32)>,
}

impl Ledger {
    pub fn take(&mut self, to: u32, ev: Event<u32>) {
        match ev {
            Event::Delivered {
                from,
                channel,
                meta,
                payload: p,
            } => {
                let a = meta.args();
                assert_eq!(a.len(), 3, "arguments lost");
                assert_eq!(a[0], from, "delivered from the wrong peer");
                let (k, len) = (a[1], a[2] as usize);
                assert!(
                    self.seen.insert((to, from, channel, k)),
                    "duplicate {k} at {to} from {from} channel {channel}"
                );
                let next = self.next.entry((to, from, channel)).or_insert(0);
                if k != *next {
                    match channel {
                        CHANNEL_REQUEST => self.early_requests += 1,
                        _ => self.early += 1,
                    }
                }
                *next += 1;
                assert!(p == payload(from, k, channel, len), "payload damaged");
                self.delivered += 1;
                self.trace.push((to, from, channel, k));
            }
            ev @ Event::Failed { .. } => self.failed.push((to, ev)),
        }
    }

    pub fn drain(&mut self, net: &mut SimNet, nodes: impl IntoIterator<Item = u32>) {
        for i in nodes {
            while let Some(ev) = net.poll_event(i) {
                self.take(i, ev);
            }
        }
    }

    pub fn delivered_on(&self, to: u32, from: u32, ch: u8) -> u32 {
        self.next.get(&(to, from, ch)).copied().unwrap_or(0)
    }
}

/// Numbers messages per (sender, receiver, channel) and sends them.
#[derive(Default)]
pub struct Sender {
    pub next: HashMap<(u32, u32, u8), u32>,
    pub sent: u64,
}

impl Sender {
    pub fn send(&mut self, net: &mut SimNet, from: u32, to: u32, ch: u8, len: usize) -> MsgId {
        let k = self.next.entry((from, to, ch)).or_insert(0);
        let id = net.send(
            from,
            to,
            ch,
            meta(from, *k, len),
            payload(from, *k, ch, len),
        );
        *k += 1;
        self.sent += 1;
        id
    }
}

/// Sends `plan` (from, to, channel, len) in bursts of `burst` with a few
/// network steps between, then runs until every message is delivered and
/// every node idle. Checks exactly-once, order and integrity, and that
/// nothing failed. `receivers` are the nodes that get messages.
pub fn run_plan(
    net: &mut SimNet,
    plan: &[(u32, u32, u8, usize)],
    burst: usize,
    receivers: &[u32],
    limit: Nanos,
) -> Ledger {
    let mut tx = Sender::default();
    let mut ledger = Ledger::default();
    for chunk in plan.chunks(burst.max(1)) {
        for &(from, to, ch, len) in chunk {
            tx.send(net, from, to, ch, len);
        }
        for _ in 0..50 {
            if !net.step() {
                break;
            }
        }
        ledger.drain(net, receivers.iter().copied());
    }
    let total = tx.sent;
    let done = net.run_until(limit, |net| {
        ledger.drain(net, receivers.iter().copied());
        ledger.delivered == total && (0..net.len() as u32).all(|i| net.node(i).is_idle())
    });
    ledger.drain(net, 0..net.len() as u32);
    assert!(ledger.failed.is_empty(), "failures: {:?}", ledger.failed);
    assert!(
        done,
        "did not finish: {}/{} delivered; sim {:?}",
        ledger.delivered, total, net.stats
    );
    assert_eq!(ledger.delivered, total);
    ledger
}

pub fn all_to_all_plan(
    n: u32,
    per_pair: u32,
    len: impl Fn(u32) -> usize,
) -> Vec<(u32, u32, u8, usize)> {
    let mut plan = Vec::new();
    for k in 0..per_pair {
        for from in 0..n {
            for to in 0..n {
                if from != to {
                    for ch in [CHANNEL_REQUEST, CHANNEL_REPLY] {
                        plan.push((from, to, ch, len(k + from + to)));
                    }
                }
            }
        }
    }
    plan
}

pub fn sum_stats(net: &mut SimNet, f: impl Fn(&Statistics) -> u64) -> u64 {
    (0..net.len() as u32).map(|i| f(net.node(i).stats())).sum()
}

/// DATA packets retransmitted, summed over channels and categories (which
/// `packets_retransmitted` also counts).
pub fn retransmits(s: &Statistics) -> u64 {
    let sum: u64 = s
        .requests_retransmitted
        .iter()
        .chain(&s.replies_retransmitted)
        .sum();
    assert_eq!(s.packets_retransmitted, sum);
    sum
}

/// Asserts the network goes idle and no node keeps a timer.
pub fn assert_goes_idle(net: &mut SimNet, within: Nanos) {
    let t0 = net.now();
    assert!(
        net.run_for(within),
        "network still busy {} ms after the traffic ended",
        within / MILLIS
    );
    for i in 0..net.len() as u32 {
        assert!(net.node(i).is_idle(), "node {i} not idle");
        assert_eq!(net.node(i).next_timeout(), None, "node {i} keeps a timer");
    }
    assert!(net.now().since(t0) <= within);
}

/// Runs until `cond` holds, like `SimNet::run_until`, but when the network
/// has nothing left to do lets virtual time pass in `tick`s, so that a slow
/// application (a `cond` that takes events only every so often) still gets
/// to take them.
pub fn run_with_app(
    net: &mut SimNet,
    limit: Nanos,
    tick: Nanos,
    mut cond: impl FnMut(&mut SimNet) -> bool,
) -> bool {
    let end = net.now().plus(limit);
    loop {
        if net.run_until(end.since(net.now()), &mut cond) {
            return true;
        }
        if net.now() >= end {
            return false;
        }
        net.advance(tick);
    }
}

/// Two protocol instances joined by hand: the test decides which datagram
/// goes where and when. Node i calls the other one `1 - i`.
pub struct Duo {
    pub p: [Protocol<u32>; 2],
    pub now: Instant,
}

impl Duo {
    /// Two nodes with an association (established without a message; the
    /// counters start from 0 after it).
    pub fn new(cfg: ProtoConfig) -> Duo {
        let mut duo = Duo::fresh(cfg);
        let now = duo.now;
        duo.p[0].connect(now, 1);
        assert!(duo.run(SECOND, |d| d.p[0].association(&1).is_some()
            && d.p[1].association(&0).is_some()));
        assert!(duo.out(0).is_empty() && duo.out(1).is_empty());
        duo.p.iter_mut().for_each(|p| p.reset_stats());
        duo
    }

    /// Two nodes that never met.
    pub fn fresh(cfg: ProtoConfig) -> Duo {
        Duo {
            p: [
                Protocol::new(cfg.clone(), &[0x11; 32]),
                Protocol::new(cfg, &[0x22; 32]),
            ],
            now: Instant(1_000_000),
        }
    }

    /// What node `i` sent to the other, packet by packet: a bundle is
    /// split into its packets, each a datagram of its own (as it would
    /// have left alone), so that tests can lose, reorder or forge them
    /// one by one. `out_datagrams` keeps the datagrams whole.
    pub fn out(&mut self, i: usize) -> Vec<Vec<u8>> {
        self.out_datagrams(i)
            .iter()
            .flat_map(|d| {
                wire::packets(&I, d)
                    .map(|p| p.expect("a packet the protocol sent").to_vec())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// The datagrams node `i` sent to the other, as they left.
    pub fn out_datagrams(&mut self, i: usize) -> Vec<Vec<u8>> {
        let mut v = Vec::new();
        let mut b = Vec::new();
        while let Some(to) = self.p[i].poll_transmit(&mut b) {
            // (answers to a third address in the tests are dropped)
            if to as usize == 1 - i {
                v.push(b.clone());
            }
        }
        v
    }

    pub fn feed(&mut self, to: usize, d: &[u8]) {
        let now = self.now;
        self.p[to].handle_datagram(now, 1 - to as u32, d);
        self.p[to].handle_timeout(now);
    }

    pub fn send(&mut self, i: usize, ch: u8, k: u32, len: usize) -> MsgId {
        let now = self.now;
        self.p[i].send(
            now,
            1 - i as u32,
            ch,
            meta(i as u32, k, len),
            payload(i as u32, k, ch, len),
        )
    }

    /// Moves datagrams (instantly) and fires timers until `cond` or `limit`.
    pub fn run(&mut self, limit: Nanos, mut cond: impl FnMut(&mut Duo) -> bool) -> bool {
        let end = self.now.plus(limit);
        while self.now < end {
            if cond(self) {
                return true;
            }
            let mut moved = false;
            for i in 0..2 {
                for d in self.out(i) {
                    self.feed(1 - i, &d);
                    moved = true;
                }
            }
            if !moved {
                let next = self.p.iter().filter_map(|p| p.next_timeout()).min();
                match next {
                    Some(t) => {
                        self.now = self.now.max(t);
                        let now = self.now;
                        self.p.iter_mut().for_each(|p| p.handle_timeout(now));
                    }
                    None => return cond(self),
                }
            }
        }
        cond(self)
    }

    pub fn drain(&mut self, i: usize, ledger: &mut Ledger) {
        while let Some(ev) = self.p[i].poll_event() {
            ledger.take(i as u32, ev);
        }
    }

    /// One message each way: the association is established, both idle.
    pub fn connect(&mut self, ledger: &mut Ledger) {
        let before = ledger.delivered;
        self.send(0, CHANNEL_REQUEST, 0, 8);
        self.send(1, CHANNEL_REQUEST, 0, 8);
        assert!(self.run(SECOND, |d| {
            d.drain(0, ledger);
            d.drain(1, ledger);
            ledger.delivered == before + 2 && d.p[0].is_idle() && d.p[1].is_idle()
        }));
        let (t0, t1) = (self.p[0].association(&1), self.p[1].association(&0));
        let (a, b) = t0.expect("node 0 associated");
        assert_eq!(t1, Some((b, a)), "one pair of tags");
    }
}

#[path = "forge.rs"]
pub mod forge;
pub use forge::I;

/// Node `from` tops its requests to `to` up to `out` outstanding: `sent`
/// of them sent so far, `got` answered; request k is `msg(k)`, its meta
/// and payload.
pub fn top_up(
    net: &mut SimNet,
    from: u32,
    to: u32,
    sent: &mut u64,
    got: u64,
    out: u64,
    msg: impl Fn(u32) -> (MsgMeta, Vec<u8>),
) {
    while *sent - got < out {
        let (m, p) = msg(*sent as u32);
        net.send(from, to, CHANNEL_REQUEST, m, p);
        *sent += 1;
    }
}

/// A forged DATA packet (args `[from, k, len]`, like the real ones).
pub fn forged_data(vtag: u64, ch: u8, epoch: u16, seq: u32, from: u32, k: u32) -> Vec<u8> {
    let c = forge::header(vtag, ch, epoch, seq);
    forge::data(&c, &meta(from, k, 4), &payload(from, k, ch, 4))
}

pub fn forged_ack(vtag: u64, ch: u8, seq: u32) -> Vec<u8> {
    let mut d = Vec::new();
    wire::encode_ack(&mut d, &I, &forge::header(vtag, ch, 0, seq), 0);
    d
}

/// The messages failed so far, with why.
pub fn failures(ledger: &Ledger) -> Vec<(MsgId, FailReason)> {
    ledger
        .failed
        .iter()
        .map(|(_, ev)| match ev {
            Event::Failed { id, reason, .. } => (*id, *reason),
            _ => unreachable!(),
        })
        .collect()
}
