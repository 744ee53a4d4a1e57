//! The protocol core over the simulated network: exactly-once, in-order
//! delivery per channel whatever the network does, NACK and go-back-N,
//! ECONGESTION, EUNREACHABLE, peer restarts, fragmentation, statistics, and
//! the simulator itself (determinism, going idle).
//!
//! Every message carries `[from, k, len]` as arguments and a payload computed
//! from them, so a receiver checks order (k), origin and integrity on its own.

mod common;

use std::time::Duration;

use std::collections::{HashMap, HashSet};

use ramp::am::Statistics;
use ramp::proto::{Event, FailReason, MsgId, ProtoConfig, Protocol, MAX_MESSAGE};
use ramp::sim::{lan, FaultConfig, SimNet};
use ramp::time::{Instant, Nanos, MICROS, MILLIS};
use ramp::wire::{self, Category, Common, MsgKind, MsgMeta, CHANNEL_REPLY, CHANNEL_REQUEST};

const SECOND: Nanos = 1000 * MILLIS;

fn meta(from: u32, k: u32, len: usize) -> MsgMeta {
    MsgMeta::new(MsgKind::User, Category::Medium, 1, &[from, k, len as u32])
}

fn payload(from: u32, k: u32, ch: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32 ^ k.rotate_left(3) ^ from.rotate_left(8) ^ (ch as u32) << 5) as u8)
        .collect()
}

/// The faults of every "hostile network" test, for one seed.
fn faults(seed: u64) -> FaultConfig {
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

/// Records deliveries and checks each is the next one expected on its
/// (receiver, sender, channel) and intact.
#[derive(Default)]
struct Ledger {
    next: HashMap<(u32, u32, u8), u32>,
    delivered: u64,
    failed: Vec<(u32, Event<u32>)>,
    /// (receiver, sender, channel, k) in delivery order.
    trace: Vec<(u32, u32, u8, u32)>,
}

impl Ledger {
    fn take(&mut self, to: u32, ev: Event<u32>) {
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
                let next = self.next.entry((to, from, channel)).or_insert(0);
                assert_eq!(
                    k, *next,
                    "out of order or duplicate at {to} from {from} channel {channel}"
                );
                *next += 1;
                assert!(p == payload(from, k, channel, len), "payload damaged");
                self.delivered += 1;
                self.trace.push((to, from, channel, k));
            }
            ev @ Event::Failed { .. } => self.failed.push((to, ev)),
        }
    }

    fn drain(&mut self, net: &mut SimNet, nodes: impl IntoIterator<Item = u32>) {
        for i in nodes {
            while let Some(ev) = net.poll_event(i) {
                self.take(i, ev);
            }
        }
    }

    fn delivered_on(&self, to: u32, from: u32, ch: u8) -> u32 {
        self.next.get(&(to, from, ch)).copied().unwrap_or(0)
    }
}

/// Numbers messages per (sender, receiver, channel) and sends them.
#[derive(Default)]
struct Sender {
    next: HashMap<(u32, u32, u8), u32>,
    sent: u64,
}

impl Sender {
    fn send(&mut self, net: &mut SimNet, from: u32, to: u32, ch: u8, len: usize) -> MsgId {
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
fn run_plan(
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

fn all_to_all_plan(
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

fn sum_stats(net: &mut SimNet, f: impl Fn(&Statistics) -> u64) -> u64 {
    (0..net.len() as u32).map(|i| f(net.node(i).stats())).sum()
}

/// DATA packets retransmitted, summed over channels and categories (which
/// `packets_retransmitted` also counts).
fn retransmits(s: &Statistics) -> u64 {
    let sum: u64 = s
        .requests_retransmitted
        .iter()
        .chain(&s.replies_retransmitted)
        .sum();
    assert_eq!(s.packets_retransmitted, sum);
    sum
}

/// Asserts the network goes idle and no node keeps a timer.
fn assert_goes_idle(net: &mut SimNet, within: Nanos) {
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
fn run_with_app(
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

// ---------------------------------------------------------------------------
// 1. Exactly once and in order, under every fault at once, at scale.
// ---------------------------------------------------------------------------

#[test]
fn clean_network_two_peers() {
    let _watchdog = common::watchdog(
        "proto_sim::clean_network_two_peers",
        Duration::from_secs(180),
    );
    let mut net = SimNet::new(2, ProtoConfig::default(), lan());
    run_plan(
        &mut net,
        &all_to_all_plan(2, 200, |_| 16),
        40,
        &[0, 1],
        60 * SECOND,
    );
    assert_eq!(net.stats.lost, 0);
    assert_eq!(sum_stats(&mut net, retransmits), 0);
}

#[test]
fn exactly_once_in_order_under_faults_20_seeds() {
    let _watchdog = common::watchdog(
        "proto_sim::exactly_once_in_order_under_faults_20_seeds",
        Duration::from_secs(180),
    );
    let proto = ProtoConfig {
        max_datagram: 600,
        ..Default::default()
    };
    let (mut dups, mut corrupt, mut ooo, mut rexmit) = (0, 0, 0, 0);
    for seed in 1..=20 {
        let mut net = SimNet::new(4, proto.clone(), faults(seed));
        // small messages, some of them in two or three fragments
        let plan = all_to_all_plan(4, 12, |k| (k as usize * 97) % 1400);
        run_plan(&mut net, &plan, 24, &[0, 1, 2, 3], 600 * SECOND);
        assert!(net.stats.lost > 0 && net.stats.duplicated > 0 && net.stats.corrupted > 0);
        assert!(net.stats.reordered > 0);
        dups += sum_stats(&mut net, |s| s.duplicates_dropped);
        corrupt += sum_stats(&mut net, |s| s.corrupt_dropped);
        ooo += sum_stats(&mut net, |s| {
            s.out_of_order_requests + s.out_of_order_replies
        });
        rexmit += sum_stats(&mut net, retransmits);
        assert_goes_idle(&mut net, 10 * SECOND);
    }
    assert!(dups > 0 && corrupt > 0 && ooo > 0 && rexmit > 0);
}

#[test]
fn all_to_all_32_nodes_under_faults() {
    let _watchdog = common::watchdog(
        "proto_sim::all_to_all_32_nodes_under_faults",
        Duration::from_secs(180),
    );
    let mut net = SimNet::new(32, ProtoConfig::default(), faults(32));
    let plan = all_to_all_plan(32, 2, |k| 8 + k as usize % 64);
    let nodes: Vec<u32> = (0..32).collect();
    let ledger = run_plan(&mut net, &plan, 500, &nodes, 600 * SECOND);
    assert_eq!(ledger.delivered, 32 * 31 * 2 * 2);
    for i in 0..32 {
        assert_eq!(net.node(i).peer_count(), 31);
    }
}

/// `senders` nodes (1..=senders) each send `per_sender` messages on each
/// channel to node 0. Returns (virtual time, the simulator's datagram counts).
fn hub(senders: u32, per_sender: u32, sim: FaultConfig) -> (Nanos, ramp::sim::SimStats) {
    let n = senders + 1;
    let mut net = SimNet::new(n as usize, ProtoConfig::default(), sim);
    let t0 = net.now();
    let mut plan = Vec::new();
    for k in 0..per_sender {
        for from in 1..n {
            for ch in [CHANNEL_REQUEST, CHANNEL_REPLY] {
                plan.push((from, 0, ch, 16 + (k + from) as usize % 200));
            }
        }
    }
    let ledger = run_plan(&mut net, &plan, plan.len(), &[0], 600 * SECOND);
    for from in 1..n {
        for ch in [CHANNEL_REQUEST, CHANNEL_REPLY] {
            assert_eq!(ledger.delivered_on(0, from, ch), per_sender);
        }
    }
    assert_eq!(net.node(0).peer_count(), senders as usize);
    let took = net.now().since(t0);
    // what is still in the network (a late answer to a resent INIT) lands
    assert!(net.run_for(10 * SECOND));
    (took, net.stats.clone())
}

#[test]
fn hub_receives_from_200_nodes_under_faults() {
    let _watchdog = common::watchdog(
        "proto_sim::hub_receives_from_200_nodes_under_faults",
        Duration::from_secs(180),
    );
    hub(200, 4, faults(200));
}

#[test]
fn hub_receives_from_10000_nodes() {
    let _watchdog = common::watchdog(
        "proto_sim::hub_receives_from_10000_nodes",
        Duration::from_secs(180),
    );
    let sim = FaultConfig {
        loss: 0.02,
        reorder: 0.02,
        jitter: 10 * MICROS,
        seed: 10_000,
        ..lan()
    };
    let (virt, st) = hub(10_000, 1, sim);
    eprintln!(
        "10000 peers -> 1 hub, 20000 messages: virtual {:.3} ms, datagrams {st:?}",
        virt as f64 / MILLIS as f64,
    );
    // What happened, not how long it took on this machine (a step costs
    // O(log n), not O(n); an O(n) regression makes this test run for many
    // minutes and its 180 s watchdog fails it, by name; no benchmark covers it yet):
    // every message arrived exactly once (checked in hub), and the protocol
    // did not flood the network to get there. 20000 messages need at least
    // 20000 data datagrams; with 2% loss and their acknowledgements and
    // retransmissions they must stay within a small multiple of that.
    assert!(st.sent >= 20_000, "{st:?}");
    // The handshakes add 4 datagrams per sender (more under loss), and
    // show that they scale too: the hub answered 10000 INITs.
    assert!(
        st.sent <= 4 * 20_000 + 5 * 10_000,
        "too many datagrams for 20000 messages: {st:?}"
    );
    assert!(st.lost > 0 && st.lost < st.sent / 10, "2% loss: {st:?}");
    // everything sent was lost or delivered (duplicates add deliveries)
    assert_eq!(st.sent + st.duplicated, st.lost + st.delivered, "{st:?}");
    // the virtual clock: a 10000-peer exchange over a 10 us network finishes
    // in well under a simulated minute (a stuck retransmission would not)
    assert!(virt < 5 * SECOND, "virtual {virt} ns");
}

// ---------------------------------------------------------------------------
// 2. NACK and go-back-N: a small receive buffer and a slow receiver.
// ---------------------------------------------------------------------------

/// Node 0 sends `n` requests and `n` messages on the reply channel to node 1,
/// whose buffer holds `depth` requests and which takes at most `take` events
/// every `every` of virtual time. Returns the ledger and, for each poll, how
/// many (requests, replies) it took.
fn slow_receiver(
    sim: FaultConfig,
    depth: usize,
    n: u32,
    every: Nanos,
    take: usize,
) -> (SimNet, Ledger, Vec<(u32, u32)>) {
    let mut net = SimNet::new(2, ProtoConfig::default(), sim);
    net.node(1).set_recv_depth(depth);
    let mut tx = Sender::default();
    for _ in 0..n {
        tx.send(&mut net, 0, 1, CHANNEL_REQUEST, 40);
        tx.send(&mut net, 0, 1, CHANNEL_REPLY, 40);
    }
    let mut ledger = Ledger::default();
    let mut polls = Vec::new();
    let mut next_poll = net.now().plus(every);
    let done = run_with_app(&mut net, 600 * SECOND, every, |net| {
        if net.now() >= next_poll {
            next_poll = net.now().plus(every);
            let (mut rq, mut rp) = (0, 0);
            for _ in 0..take {
                let Some(ev) = net.poll_event(1) else { break };
                if let Event::Delivered { channel, .. } = &ev {
                    if *channel == CHANNEL_REQUEST {
                        rq += 1
                    } else {
                        rp += 1
                    }
                }
                ledger.take(1, ev);
            }
            polls.push((rq, rp));
        }
        ledger.drain(net, [0]);
        ledger.delivered == 2 * n as u64 && net.node(0).is_idle() && net.node(1).is_idle()
    });
    assert!(ledger.failed.is_empty(), "failures: {:?}", ledger.failed);
    assert!(done, "{}/{} delivered", ledger.delivered, 2 * n);
    (net, ledger, polls)
}

#[test]
fn nack_go_back_n_with_a_slow_receiver() {
    let _watchdog = common::watchdog(
        "proto_sim::nack_go_back_n_with_a_slow_receiver",
        Duration::from_secs(180),
    );
    let (mut net, _, polls) = slow_receiver(lan(), 4, 60, 5 * MILLIS, usize::MAX);
    let s1 = *net.node(1).stats();
    let s0 = *net.node(0).stats();
    assert!(s1.nacks_sent > 0, "receiver never refused");
    assert!(s0.nacks_received > 0 && s0.nacks_received <= s1.nacks_sent);
    // go-back-N resends what was refused
    assert!(s0.requests_retransmitted.iter().sum::<u64>() > 0);
    // the reply channel is never refused, so it never goes back
    assert_eq!(s0.replies_retransmitted, [0; 3]);
    // the buffer is respected at every poll
    assert!(polls.iter().all(|&(rq, _)| rq <= 4), "{polls:?}");
    // One congested channel never blocks another: every message of the reply
    // channel is there at the first poll, while requests trickle in.
    let first = polls.iter().find(|p| p.0 + p.1 > 0).unwrap();
    assert_eq!(first.1, 60, "reply channel held up: {polls:?}");
    assert!(first.0 <= 4);
    assert_goes_idle(&mut net, SECOND);
}

#[test]
fn nack_go_back_n_under_faults_10_seeds() {
    let _watchdog = common::watchdog(
        "proto_sim::nack_go_back_n_under_faults_10_seeds",
        Duration::from_secs(180),
    );
    let mut nacks = 0;
    for seed in 1..=10 {
        let (mut net, _, _) = slow_receiver(faults(seed), 3, 40, 2 * MILLIS, 3);
        nacks += net.node(1).stats().nacks_sent;
        assert_goes_idle(&mut net, 10 * SECOND);
    }
    assert!(nacks > 0);
}

// ---------------------------------------------------------------------------
// 3. ECONGESTION: the receiver takes no events.
// ---------------------------------------------------------------------------

fn congestion_net() -> SimNet {
    let proto = ProtoConfig {
        nack_limit: 3,
        nack_backoff: MILLIS,
        ..Default::default()
    };
    let mut net = SimNet::new(2, proto, lan());
    net.node(1).set_recv_depth(2);
    net
}

fn failures(ledger: &Ledger) -> Vec<(MsgId, FailReason)> {
    ledger
        .failed
        .iter()
        .map(|(_, ev)| match ev {
            Event::Failed { id, reason, .. } => (*id, *reason),
            _ => unreachable!(),
        })
        .collect()
}

#[test]
fn congestion_fails_the_refused_message_and_the_rest_start_over() {
    let _watchdog = common::watchdog(
        "proto_sim::congestion_fails_the_refused_message_and_the_rest_start_over",
        Duration::from_secs(180),
    );
    let mut net = congestion_net();
    let mut tx = Sender::default();
    let ids: Vec<MsgId> = (0..10)
        .map(|_| tx.send(&mut net, 0, 1, CHANNEL_REQUEST, 100))
        .collect();
    let mut ledger = Ledger::default();
    // node 1 takes nothing until node 0 has been told ECONGESTION
    let told = net.run_until(10 * SECOND, |net| {
        ledger.drain(net, [0]);
        !ledger.failed.is_empty()
    });
    assert!(told, "no ECONGESTION");
    assert_eq!(failures(&ledger), vec![(ids[2], FailReason::Refused)]);
    assert!(net.node(1).stats().nacks_sent >= 4);
    assert!(net.node(0).stats().nacks_received >= 4);
    // now node 1 takes events: the others arrive, exactly once, in order
    let mut ks = Vec::new();
    let done = net.run_until(10 * SECOND, |net| {
        ledger.drain(net, [0]);
        while let Some(ev) = net.poll_event(1) {
            let Event::Delivered {
                meta: m,
                payload: p,
                ..
            } = ev
            else {
                panic!("{ev:?}")
            };
            let k = m.args()[1];
            assert!(p == payload(0, k, CHANNEL_REQUEST, 100));
            ks.push(k);
        }
        ks.len() == 9 && net.node(0).is_idle()
    });
    assert!(done, "delivered {ks:?}");
    assert_eq!(ledger.failed.len(), 1);
    // the refused message (k = 2) is missing, the rest are there once, in order
    assert_eq!(ks, [0, 1, 3, 4, 5, 6, 7, 8, 9]);
    assert_goes_idle(&mut net, SECOND);
}

#[test]
fn congestion_when_never_polled_fails_each_refused_message_once() {
    let _watchdog = common::watchdog(
        "proto_sim::congestion_when_never_polled_fails_each_refused_message_once",
        Duration::from_secs(180),
    );
    let mut net = congestion_net();
    let mut tx = Sender::default();
    let ids: Vec<MsgId> = (0..8)
        .map(|_| tx.send(&mut net, 0, 1, CHANNEL_REQUEST, 100))
        .collect();
    tx.send(&mut net, 0, 1, CHANNEL_REPLY, 100);
    let mut ledger = Ledger::default();
    let done = net.run_until(60 * SECOND, |net| {
        ledger.drain(net, [0]);
        ledger.failed.len() >= 6 && net.node(0).is_idle()
    });
    assert!(done, "{:?}", failures(&ledger));
    let want: Vec<_> = ids[2..]
        .iter()
        .map(|&id| (id, FailReason::Refused))
        .collect();
    assert_eq!(
        failures(&ledger),
        want,
        "each refused message fails once, in order"
    );
    // the two that fit are delivered, so is the reply channel's
    ledger.drain(&mut net, [1]);
    assert_eq!(ledger.delivered_on(1, 0, CHANNEL_REQUEST), 2);
    assert_eq!(ledger.delivered_on(1, 0, CHANNEL_REPLY), 1);
    assert_goes_idle(&mut net, SECOND);
}

/// The receiver refuses a request (NACK), then has room and gets a
/// duplicate of it from the network; the NACK reaches the sender only
/// after that. Whatever the sender decides, the message must not be both
/// delivered and returned with ECONGESTION: the receiver, which counts its
/// refusals, has the last word.
#[test]
fn congestion_verdict_is_the_receivers() {
    let _watchdog = common::watchdog(
        "proto_sim::congestion_verdict_is_the_receivers",
        Duration::from_secs(180),
    );
    let cfg = ProtoConfig {
        nack_limit: 0,
        ..Default::default()
    };
    let mut duo = Duo::new(cfg);
    duo.p[1].set_recv_depth(1);
    let ids = [
        duo.send(0, CHANNEL_REQUEST, 0, 10),
        duo.send(0, CHANNEL_REQUEST, 1, 10),
    ];
    let d = duo.out(0);
    assert_eq!(d.len(), 2);
    duo.feed(1, &d[0]);
    duo.feed(1, &d[1]); // refused: the buffer holds message 0
    let nack = duo.out(1);
    assert_eq!(duo.p[1].stats().nacks_sent, 1);
    let mut l1 = Ledger::default();
    duo.drain(1, &mut l1); // room again
    duo.feed(1, &d[1]); // the network's duplicate
    let later = duo.out(1);
    for x in nack.iter().chain(&later) {
        duo.feed(0, x);
    }
    let mut l0 = Ledger::default();
    assert!(duo.run(10 * SECOND, |d| {
        d.drain(0, &mut l0);
        d.drain(1, &mut l1);
        d.p[0].is_idle() && d.p[1].is_idle()
    }));
    let failed: Vec<MsgId> = failures(&l0).iter().map(|f| f.0).collect();
    let delivered: Vec<u32> = l1.trace.iter().map(|t| t.3).collect();
    assert_eq!(
        delivered.len() + failed.len(),
        2,
        "{delivered:?} {failed:?}"
    );
    assert!(
        !(delivered.contains(&1) && failed.contains(&ids[1])),
        "message 1 delivered and failed"
    );
}

/// A refused message comes back by NACK go-back, not by the retransmission
/// timer: with a 2 s minimum RTO, it arrives within a few NACK backoffs of
/// the receiver making room (virtual time).
#[test]
fn nack_go_back_resends_long_before_the_retransmission_timeout() {
    let proto = ProtoConfig {
        rto_initial: 2 * SECOND,
        rto_min: 2 * SECOND,
        rto_max: 4 * SECOND,
        nack_backoff: MILLIS,
        ..Default::default()
    };
    let mut net = SimNet::new(2, proto, lan());
    net.node(1).set_recv_depth(1);
    let mut tx = Sender::default();
    tx.send(&mut net, 0, 1, CHANNEL_REQUEST, 100);
    tx.send(&mut net, 0, 1, CHANNEL_REQUEST, 100);
    // Node 1 holds the first request and refuses (NACKs) the second.
    let nacked = net.run_until(10 * MILLIS, |net| net.node(0).stats().nacks_received >= 1);
    assert!(nacked);
    let mut ledger = Ledger::default();
    ledger.drain(&mut net, [1]);
    assert_eq!(ledger.delivered_on(1, 0, CHANNEL_REQUEST), 1);
    // Room is made: the next go-back brings the second one.
    let t_free = net.now();
    let done = net.run_until(10 * SECOND, |net| {
        ledger.drain(net, [0, 1]);
        ledger.delivered_on(1, 0, CHANNEL_REQUEST) == 2
    });
    assert!(done && ledger.failed.is_empty());
    let took = net.now().since(t_free);
    assert!(took < 5 * MILLIS, "took {took} ns: waited for the RTO");
    assert_goes_idle(&mut net, 10 * SECOND);
}

// ---------------------------------------------------------------------------
// 4. EUNREACHABLE: a node that is down.
// ---------------------------------------------------------------------------

fn unreachable_config() -> ProtoConfig {
    ProtoConfig {
        rto_initial: 10 * MILLIS,
        rto_min: MILLIS,
        rto_max: 100 * MILLIS,
        retry_limit: 5,
        max_datagram: 1000,
        ..Default::default()
    }
}

#[test]
fn unreachable_after_the_retry_limit_exactly_on_time() {
    let _watchdog = common::watchdog(
        "proto_sim::unreachable_after_the_retry_limit_exactly_on_time",
        Duration::from_secs(180),
    );
    let mut net = SimNet::new(2, unreachable_config(), lan());
    net.set_down(1, true);
    let t0 = net.now();
    let id = Sender::default().send(&mut net, 0, 1, CHANNEL_REQUEST, 10);
    let mut ledger = Ledger::default();
    assert!(net.run_until(10 * SECOND, |net| {
        ledger.drain(net, [0]);
        !ledger.failed.is_empty()
    }));
    // 10 + 20 + 40 + 80 + 100 (capped) + 100 ms: the sixth timeout gives up
    assert_eq!(net.now().since(t0), 350 * MILLIS);
    assert_eq!(failures(&ledger), vec![(id, FailReason::PeerUnreachable)]);
    // the INIT was sent 6 times; no DATA ever went to an address without
    // an association
    let s = *net.node(0).stats();
    assert_eq!(s.packets_sent, 6);
    assert_eq!(
        s.requests_retransmitted[1] + s.request_total_bytes_sent[1],
        0
    );
    assert_goes_idle(&mut net, SECOND);
}

#[test]
fn unreachable_fails_every_unfinished_message_once_then_recovers() {
    let _watchdog = common::watchdog(
        "proto_sim::unreachable_fails_every_unfinished_message_once_then_recovers",
        Duration::from_secs(180),
    );
    let cfg = unreachable_config();
    for seed in 1..=5 {
        // Milder faults than elsewhere: with only 5 retries, a message whose
        // every ACK is lost 6 times is (rightly) declared unreachable
        // although it arrived, which would break the counts below.
        let sim = FaultConfig {
            loss: 0.03,
            dup: 0.03,
            corrupt: 0.01,
            reorder: 0.05,
            jitter: 20 * MICROS,
            seed,
            ..lan()
        };
        let mut net = SimNet::new(3, cfg.clone(), sim);
        let mut tx = Sender::default();
        let mut ledger = Ledger::default();
        // first some traffic both ways, so that RTTs are known
        for _ in 0..5 {
            tx.send(&mut net, 0, 1, CHANNEL_REQUEST, 50);
            tx.send(&mut net, 1, 0, CHANNEL_REPLY, 50);
        }
        assert!(net.run_until(10 * SECOND, |net| {
            ledger.drain(net, [0, 1]);
            ledger.delivered == 10 && net.node(0).is_idle() && net.node(1).is_idle()
        }));
        net.set_down(1, true);
        let t0 = net.now();
        let mut ids = HashSet::new();
        for k in 0..30 {
            let ch = if k % 3 == 0 {
                CHANNEL_REPLY
            } else {
                CHANNEL_REQUEST
            };
            // some fragmented, more than a window's worth on the request channel
            ids.insert(tx.send(&mut net, 0, 1, ch, (k * 211) % 3000));
        }
        // node 2 is unaffected meanwhile
        for _ in 0..5 {
            tx.send(&mut net, 0, 2, CHANNEL_REQUEST, 10);
        }
        let mut t_fail = None;
        assert!(net.run_until(60 * SECOND, |net| {
            ledger.drain(net, [0, 2]);
            if t_fail.is_none() && ledger.failed.len() == ids.len() {
                t_fail = Some(net.now());
            }
            ledger.failed.len() >= ids.len() && ledger.delivered == 15
        }));
        let took = t_fail
            .unwrap_or_else(|| {
                panic!(
                    "{} failed, {} expected: {:?}",
                    ledger.failed.len(),
                    ids.len(),
                    failures(&ledger)
                )
            })
            .since(t0);
        // at least the unbacked-off sum of timeouts, at most retry_limit+1
        // maximal timeouts (plus one more for a packet sent late)
        let upper = (cfg.retry_limit as u64 + 2) * cfg.rto_max;
        assert!(took <= upper, "gave up after {} ms", took / MILLIS);
        assert!(
            took >= 6 * cfg.rto_min,
            "gave up too soon: {} ms",
            took / MILLIS
        );
        let mut seen = HashSet::new();
        for (id, reason) in failures(&ledger) {
            assert_eq!(reason, FailReason::PeerUnreachable);
            assert!(seen.insert(id), "message {id} failed twice");
        }
        assert_eq!(seen, ids, "every unfinished message and only those fail");
        assert_eq!(net.node(0).unfinished_to(&1), 0);
        assert_eq!(
            ledger.delivered_on(1, 0, CHANNEL_REQUEST),
            5,
            "none got through"
        );
        // more time: nothing more fails, nothing keeps running
        assert_goes_idle(&mut net, 10 * SECOND);
        assert_eq!(ledger.failed.len(), ids.len());

        // Node 1 is back: new messages flow both ways in a new epoch.
        net.set_down(1, false);
        let mut fresh = Sender::default();
        let mut l2 = Ledger::default();
        for k in 0..20 {
            fresh.send(&mut net, 0, 1, (k % 2) as u8, (k as usize * 131) % 2500);
            fresh.send(&mut net, 1, 0, CHANNEL_REQUEST, 20);
        }
        assert!(net.run_until(60 * SECOND, |net| {
            l2.drain(net, [0, 1]);
            l2.delivered == 40 && net.node(0).is_idle() && net.node(1).is_idle()
        }));
        assert!(l2.failed.is_empty(), "{:?}", l2.failed);
    }
}

// ---------------------------------------------------------------------------
// 5. Retransmissions, RTT, piggybacked ACKs.
// ---------------------------------------------------------------------------

#[test]
fn retransmits_and_rtt_under_loss() {
    let _watchdog = common::watchdog(
        "proto_sim::retransmits_and_rtt_under_loss",
        Duration::from_secs(180),
    );
    let sim = FaultConfig {
        loss: 0.2,
        seed: 5,
        ..lan()
    };
    let mut net = SimNet::new(2, ProtoConfig::default(), sim);
    run_plan(
        &mut net,
        &all_to_all_plan(2, 100, |_| 32),
        20,
        &[0, 1],
        600 * SECOND,
    );
    for i in 0..2 {
        let s = *net.node(i).stats();
        assert!(
            retransmits(&s) > 0,
            "node {i}: no retransmission at 20% loss"
        );
        assert!(s.rtt_samples > 0);
        // a round trip is at least two one-way delays
        assert!(s.rtt_min_ns >= 40 * MICROS, "rtt_min {}", s.rtt_min_ns);
        assert!(s.rtt_min_ns <= s.rtt_max_ns && s.rtt_sum_ns >= s.rtt_min_ns * s.rtt_samples);
        assert!(s.acks_received > 0 && s.acks_sent > 0);
    }
}

#[test]
fn clean_network_never_retransmits() {
    let _watchdog = common::watchdog(
        "proto_sim::clean_network_never_retransmits",
        Duration::from_secs(180),
    );
    let sim = FaultConfig {
        jitter: 20 * MICROS,
        ..lan()
    };
    let mut net = SimNet::new(4, ProtoConfig::default(), sim);
    run_plan(
        &mut net,
        &all_to_all_plan(4, 50, |k| (k as usize * 13) % 200),
        30,
        &[0, 1, 2, 3],
        60 * SECOND,
    );
    for i in 0..4 {
        let s = *net.node(i).stats();
        assert_eq!(retransmits(&s), 0, "node {i}");
        assert_eq!(
            (
                s.duplicates_dropped,
                s.corrupt_dropped,
                s.stale_dropped,
                s.nacks_sent
            ),
            (0, 0, 0, 0)
        );
        assert!(s.rtt_samples > 0 && s.rtt_min_ns >= 40 * MICROS);
        // every RTT sample stays within delay + jitter + the delayed-ACK time
        assert!(
            s.rtt_max_ns <= 2 * 40 * MICROS + 200 * MICROS + 100 * MICROS,
            "{}",
            s.rtt_max_ns
        );
    }
}

/// Jitter as large as the delay reorders a burst, packets and ACKs alike;
/// nothing is lost, so next to nothing may be sent twice.
#[test]
fn jitter_alone_causes_almost_no_retransmission() {
    let _watchdog = common::watchdog(
        "proto_sim::jitter_alone_causes_almost_no_retransmission",
        Duration::from_secs(180),
    );
    let mut data = 0;
    let mut rexmit = 0;
    for seed in 1..=5 {
        let sim = FaultConfig {
            jitter: 20 * MICROS,
            seed,
            ..lan()
        };
        let mut net = SimNet::new(4, ProtoConfig::default(), sim);
        // 50 messages on every channel of every pair at once
        let plan = all_to_all_plan(4, 50, |_| 100);
        let ledger = run_plan(&mut net, &plan, plan.len(), &[0, 1, 2, 3], 60 * SECOND);
        assert_eq!(ledger.delivered, 4 * 3 * 2 * 50);
        // (packets bundled in one datagram arrive in order: 72-252 of
        // them out of order per seed, 200-400 before bundling)
        let ooo = sum_stats(&mut net, |s| {
            s.out_of_order_requests + s.out_of_order_replies
        });
        assert!(ooo > 50, "seed {seed}: {ooo} out of order");
        data += ledger.delivered;
        rexmit += sum_stats(&mut net, retransmits);
    }
    eprintln!("jitter only: {rexmit} retransmissions for {data} messages");
    assert!(
        rexmit * 100 <= data,
        "{rexmit} retransmissions for {data} packets, none lost"
    );
}

/// Node 0 sends a request, node 1 answers on the reply channel after
/// `think`, node 0 sends the next request as soon as the reply is there.
fn ping_pong(rounds: u32, think: Nanos) -> SimNet {
    let mut net = SimNet::new(2, ProtoConfig::default(), lan());
    let mut tx = Sender::default();
    let mut ledger = Ledger::default();
    tx.send(&mut net, 0, 1, CHANNEL_REQUEST, 24);
    let mut answer_at: Option<Instant> = None;
    let done = net.run_until(60 * SECOND, |net| {
        while let Some(ev) = net.poll_event(1) {
            ledger.take(1, ev);
            answer_at = Some(net.now().plus(think));
        }
        if let Some(t) = answer_at {
            // the handler thinks while the network has nothing to do
            if net.node(0).next_timeout().is_none() && net.node(1).next_timeout().is_none() {
                net.advance(t.since(net.now()));
            }
            if net.now() >= t {
                answer_at = None;
                tx.send(net, 1, 0, CHANNEL_REPLY, 24);
            }
        }
        while let Some(ev) = net.poll_event(0) {
            ledger.take(0, ev);
            if ledger.delivered < 2 * rounds as u64 {
                tx.send(net, 0, 1, CHANNEL_REQUEST, 24);
            }
        }
        ledger.delivered == 2 * rounds as u64 && net.node(0).is_idle() && net.node(1).is_idle()
    });
    assert!(done && ledger.failed.is_empty());
    net
}

#[test]
fn ping_pong_acks_ride_on_replies_and_requests() {
    let _watchdog = common::watchdog(
        "proto_sim::ping_pong_acks_ride_on_replies_and_requests",
        Duration::from_secs(180),
    );
    let rounds = 200;
    let mut net = ping_pong(rounds, 0);
    let acks = sum_stats(&mut net, |s| s.acks_sent);
    eprintln!("ping-pong: {acks} standalone ACKs for {rounds} round trips");
    // only the very last reply needs an ACK of its own
    assert!(acks <= 2, "{acks} standalone ACKs for {rounds} round trips");
    assert_eq!(sum_stats(&mut net, retransmits), 0);
    // (and the four datagrams of the handshake)
    assert_eq!(net.stats.sent, 4 + 2 * rounds as u64 + acks);
    // A handler slower than the ACK delay: every request is acknowledged on
    // its own (the request's timer must not wait for the reply).
    let mut slow = ping_pong(50, 2 * MILLIS);
    assert!(slow.node(1).stats().acks_sent >= 50);
    assert_eq!(sum_stats(&mut slow, retransmits), 0);
}

/// Issue 8: on a lossless network, a peer that answers late (a process
/// descheduled for a few ms on an oversubscribed host) must not make the
/// sender retransmit: its timers learn that the peer answers late. Node 0
/// sends a request as soon as the previous reply is in; after sending, it
/// is descheduled, half the time, for 0.5 to 5 ms, so that the reply (and
/// its ACK) waits in its socket.
#[test]
fn descheduled_receiver_causes_almost_no_retransmission() {
    let _watchdog = common::watchdog(
        "proto_sim::descheduled_receiver_causes_almost_no_retransmission",
        Duration::from_secs(180),
    );
    let rounds = 2000u64;
    let mut net = SimNet::new(2, ProtoConfig::default(), lan());
    let mut rng = ramp::sim::Rng::new(8);
    let mut tx = Sender::default();
    let mut ledger = Ledger::default();
    let request = |net: &mut SimNet, rng: &mut ramp::sim::Rng, tx: &mut Sender| {
        tx.send(net, 0, 1, CHANNEL_REQUEST, 24);
        if rng.chance(0.5) {
            let d = 500 * MICROS + rng.below(4500 * MICROS);
            let until = net.now().plus(d);
            net.deschedule(0, until);
        }
    };
    request(&mut net, &mut rng, &mut tx);
    let done = net.run_until(600 * SECOND, |net| {
        while let Some(ev) = net.poll_event(1) {
            ledger.take(1, ev);
            tx.send(net, 1, 0, CHANNEL_REPLY, 24);
        }
        while let Some(ev) = net.poll_event(0) {
            ledger.take(0, ev);
            if ledger.delivered < 2 * rounds {
                request(net, &mut rng, &mut tx);
            }
        }
        ledger.delivered == 2 * rounds && net.node(0).is_idle() && net.node(1).is_idle()
    });
    assert!(done && ledger.failed.is_empty());
    let rexmit = sum_stats(&mut net, retransmits);
    let data = 2 * rounds;
    eprintln!(
        "descheduled receiver: {rexmit} retransmissions for {data} packets ({:.2}%)",
        100.0 * rexmit as f64 / data as f64
    );
    assert!(
        rexmit * 200 < data,
        "{rexmit} retransmissions for {data} packets, none lost"
    );
}

/// Issue 8: a receiver descheduled for 30 ms (its arrivals and timers wait,
/// nothing is lost) while the sender sends 32 requests one by one, each the
/// newest packet when it went. Its tail-loss probe and its timeout may each
/// resend one packet needlessly per stall (fewer once the floor is
/// learned), never one per packet sent since the stall began, nor the
/// whole window when the first ACK after the timeout left the receiver
/// before the others arrived. The receiver counts the needless copies as
/// duplicates.
#[test]
fn a_stalled_receiver_costs_at_most_two_needless_copies_per_stall() {
    let _watchdog = common::watchdog(
        "proto_sim::a_stalled_receiver_costs_at_most_two_needless_copies_per_stall",
        Duration::from_secs(180),
    );
    let (stalls, per_stall) = (20u64, 32u64);
    let mut net = SimNet::new(2, ProtoConfig::default(), lan());
    let mut tx = Sender::default();
    let mut ledger = Ledger::default();
    let drain = |net: &mut SimNet, ledger: &mut Ledger| {
        while let Some(ev) = net.poll_event(1) {
            ledger.take(1, ev);
        }
    };
    for stall in 0..stalls {
        let until = net.now().plus(30 * MILLIS);
        net.deschedule(1, until);
        for _ in 0..per_stall {
            tx.send(&mut net, 0, 1, CHANNEL_REQUEST, 24);
            net.run_for(20 * MICROS);
        }
        let want = (stall + 1) * per_stall;
        assert!(net.run_until(10 * SECOND, |net| {
            drain(net, &mut ledger);
            ledger.delivered == want && net.node(0).is_idle() && net.node(1).is_idle()
        }));
    }
    assert!(ledger.failed.is_empty());
    let rexmit = sum_stats(&mut net, retransmits);
    let dups = net.node(1).stats().duplicates_dropped;
    eprintln!("stalled receiver: {rexmit} retransmissions, {dups} duplicates, {stalls} stalls");
    assert_eq!(rexmit, dups, "nothing was lost: every copy is a duplicate");
    assert!(
        dups <= 2 * stalls,
        "{dups} needless copies in {stalls} stalls of {per_stall} packets"
    );
}

// ---------------------------------------------------------------------------
// 6. Corrupt, truncated and stale datagrams; peer restarts.
// ---------------------------------------------------------------------------

/// Two protocol instances joined by hand: the test decides which datagram
/// goes where and when. Node i calls the other one `1 - i`.
struct Duo {
    p: [Protocol<u32>; 2],
    now: Instant,
}

impl Duo {
    /// Two nodes with an association (established without a message; the
    /// counters start from 0 after it).
    fn new(cfg: ProtoConfig) -> Duo {
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
    fn fresh(cfg: ProtoConfig) -> Duo {
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
    fn out(&mut self, i: usize) -> Vec<Vec<u8>> {
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
    fn out_datagrams(&mut self, i: usize) -> Vec<Vec<u8>> {
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

    fn feed(&mut self, to: usize, d: &[u8]) {
        let now = self.now;
        self.p[to].handle_datagram(now, 1 - to as u32, d);
        self.p[to].handle_timeout(now);
    }

    fn send(&mut self, i: usize, ch: u8, k: u32, len: usize) -> MsgId {
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
    fn run(&mut self, limit: Nanos, mut cond: impl FnMut(&mut Duo) -> bool) -> bool {
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

    fn drain(&mut self, i: usize, ledger: &mut Ledger) {
        while let Some(ev) = self.p[i].poll_event() {
            ledger.take(i as u32, ev);
        }
    }

    /// One message each way: the association is established, both idle.
    fn connect(&mut self, ledger: &mut Ledger) {
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

/// The integrity trailer of the tests' datagrams.
const I: wire::Integrity = wire::Integrity::Crc32c;

/// A forged DATA packet (args `[from, k, len]`, like the real ones).
fn forged_data(vtag: u64, ch: u8, epoch: u16, seq: u32, from: u32, k: u32) -> Vec<u8> {
    let c = Common {
        vtag,
        channel: ch,
        epoch,
        seq,
        ..Default::default()
    };
    let mut d = Vec::new();
    wire::encode_data(
        &mut d,
        &I,
        &c,
        &meta(from, k, 4),
        4,
        0,
        &payload(from, k, ch, 4),
    );
    d
}

fn forged_ack(vtag: u64, ch: u8, seq: u32) -> Vec<u8> {
    let c = Common {
        vtag,
        channel: ch,
        seq,
        ..Default::default()
    };
    let mut d = Vec::new();
    wire::encode_ack(&mut d, &I, &c, 0);
    d
}

#[test]
fn corrupt_and_truncated_datagrams_are_counted_and_change_nothing() {
    let _watchdog = common::watchdog(
        "proto_sim::corrupt_and_truncated_datagrams_are_counted_and_change_nothing",
        Duration::from_secs(180),
    );
    // An INIT to a node that has no state, then a DATA inside an association.
    let mut fresh = Duo::fresh(ProtoConfig::default());
    let now = fresh.now;
    fresh.p[0].connect(now, 1);
    let init = fresh.out(0).pop().unwrap();
    let mut duo = Duo::new(ProtoConfig::default());
    duo.send(0, CHANNEL_REQUEST, 0, 30);
    let d = duo.out(0).pop().unwrap();
    for (duo, d, peers) in [(&mut fresh, &init, 0), (&mut duo, &d, 1)] {
        let mut bad: Vec<Vec<u8>> = Vec::new();
        for bit in 0..d.len() * 8 {
            let mut b = d.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            bad.push(b);
        }
        for len in 0..d.len() {
            bad.push(d[..len].to_vec());
        }
        if peers == 0 {
            // a handshake packet is alone in its datagram (after a DATA,
            // a byte more is a bundle's bad second packet: tested in
            // `a_bundle_walk_stops_at_its_first_bad_packet`)
            let mut longer = d.clone();
            longer.push(0);
            bad.push(longer);
        }
        bad.push(vec![0xff; 2000]);
        for b in &bad {
            duo.feed(1, b);
        }
        let s = *duo.p[1].stats();
        assert_eq!(s.corrupt_dropped, bad.len() as u64);
        assert_eq!(s.packets_received, bad.len() as u64);
        assert_eq!(
            duo.p[1].peer_count(),
            peers,
            "a bad datagram created peer state"
        );
        assert!(!duo.p[1].has_events() && !duo.p[1].has_transmits());
        assert_eq!(duo.p[1].next_timeout(), None);
    }
    // the good one still goes through, once
    duo.feed(1, &d);
    duo.feed(1, &d);
    let mut ledger = Ledger::default();
    duo.drain(1, &mut ledger);
    assert_eq!(ledger.delivered, 1);
    assert_eq!(duo.p[1].stats().duplicates_dropped, 1);
}

/// Node 0 has sent to node 1; node 1 crashes and a new process (new id) takes
/// its address. `speaks`: whether the new process sends to node 0 first.
fn restart(speaks: bool) {
    let cfg = ProtoConfig {
        rto_initial: 10 * MILLIS,
        rto_max: 100 * MILLIS,
        retry_limit: 8,
        ..Default::default()
    };
    let mut net = SimNet::new(2, cfg.clone(), lan());
    let mut tx = Sender::default();
    let mut ledger = Ledger::default();
    for _ in 0..3 {
        tx.send(&mut net, 0, 1, CHANNEL_REQUEST, 10);
        tx.send(&mut net, 1, 0, CHANNEL_REQUEST, 10);
    }
    assert!(net.run_until(SECOND, |net| {
        ledger.drain(net, [0, 1]);
        ledger.delivered == 6 && net.node(0).is_idle() && net.node(1).is_idle()
    }));
    net.set_down(1, true);
    let old: HashSet<MsgId> = (0..4)
        .map(|k| tx.send(&mut net, 0, 1, (k % 2) as u8, 10))
        .collect();
    net.run_for(15 * MILLIS);
    ledger.drain(&mut net, [0]);
    assert!(ledger.failed.is_empty());
    // the new process at node 1's address
    *net.node(1) = Protocol::new(cfg.clone(), &[0xA5; 32]);
    net.set_down(1, false);
    let t_restart = net.now();
    // events of node 0 and of the new node 1 from now on
    let (mut l0, mut l1) = (Ledger::default(), Ledger::default());
    let mut fresh = Sender::default();
    if speaks {
        fresh.send(&mut net, 1, 0, CHANNEL_REQUEST, 5);
    }
    assert!(net.run_until(10 * SECOND, |net| {
        l0.drain(net, [0]);
        l0.failed.len() >= old.len()
    }));
    // detected at the next exchange, long before the retry limit
    assert!(net.now().since(t_restart) < 200 * MILLIS);
    let failed: HashSet<MsgId> = failures(&l0)
        .into_iter()
        .map(|(id, st)| {
            assert_eq!(st, FailReason::PeerUnreachable);
            id
        })
        .collect();
    assert_eq!(failed, old);
    // new messages get through to the new process
    for _ in 0..5 {
        fresh.send(&mut net, 0, 1, CHANNEL_REQUEST, 10);
        fresh.send(&mut net, 0, 1, CHANNEL_REPLY, 10);
    }
    let at_0 = if speaks { 1 } else { 0 };
    assert!(net.run_until(10 * SECOND, |net| {
        l1.drain(net, [1]);
        l0.drain(net, [0]);
        l1.delivered == 10 && l0.delivered == at_0 && net.node(0).is_idle()
    }));
    assert!(l1.failed.is_empty());
    assert_eq!(l0.failed.len(), old.len(), "new messages failed");
    if !speaks {
        // it learnt of the restart from the new process's answer to them
        assert!(net.node(1).stats().stale_dropped > 0);
    }
    assert_goes_idle(&mut net, SECOND);
}

#[test]
fn peer_restart_detected_when_the_new_process_speaks() {
    let _watchdog = common::watchdog(
        "proto_sim::peer_restart_detected_when_the_new_process_speaks",
        Duration::from_secs(180),
    );
    restart(true);
}

/// A restarted server that only answers: clients must still reach it.
#[test]
fn peer_restart_detected_when_the_new_process_only_listens() {
    let _watchdog = common::watchdog(
        "proto_sim::peer_restart_detected_when_the_new_process_only_listens",
        Duration::from_secs(180),
    );
    restart(false);
}

/// A datagram of the old incarnation that arrives late (reordered or
/// duplicated) must not make the peer look restarted a second time: its
/// tag is the old association's, so it is stale.
#[test]
fn late_datagram_from_an_old_incarnation_is_stale() {
    let _watchdog = common::watchdog(
        "proto_sim::late_datagram_from_an_old_incarnation_is_stale",
        Duration::from_secs(180),
    );
    let cfg = ProtoConfig::default();
    let mut duo = Duo::new(cfg.clone());
    let mut ledger = Ledger::default();
    duo.connect(&mut ledger);
    // node 1 sends once more; the datagram is held up in the network
    duo.send(1, CHANNEL_REQUEST, 1, 8);
    let late = duo.out(1);
    // node 1 restarts and speaks: a new handshake, a new association
    duo.p[1] = Protocol::new(cfg, &[0x33; 32]);
    let mut l1 = Ledger::default();
    let mut l0 = Ledger::default();
    duo.send(1, CHANNEL_REQUEST, 0, 8);
    assert!(duo.run(SECOND, |d| {
        d.drain(0, &mut l0);
        l0.delivered == 1
    }));
    // node 0 has an unfinished message to the new node 1 ...
    let id = duo.send(0, CHANNEL_REQUEST, 0, 8);
    let stale_before = duo.p[0].stats().stale_dropped;
    // ... when the old datagram arrives
    for d in &late {
        duo.feed(0, d);
    }
    assert_eq!(
        duo.p[0].stats().stale_dropped,
        stale_before + late.len() as u64
    );
    duo.drain(0, &mut l0);
    assert!(l0.failed.is_empty(), "message {id} failed: {:?}", l0.failed);
    // the old process's message is not delivered; the new one's is
    assert_eq!(l0.trace, vec![(0, 1, CHANNEL_REQUEST, 0)]);
    assert!(duo.run(SECOND, |d| {
        d.drain(1, &mut l1);
        d.drain(0, &mut l0);
        l1.delivered == 1 && d.p[0].is_idle()
    }));
    assert!(l0.failed.is_empty());
}

// ---------------------------------------------------------------------------
// The receive buffer fills while packets are held behind a gap.
// ---------------------------------------------------------------------------

/// The receiver holds (and SACKs) requests that arrived ahead of a gap; when
/// the gap fills, its buffer is full and it refuses one of them. The sender
/// must go back to it although it was SACKed, and it must be delivered once
/// the buffer has room.
#[test]
fn refused_packet_that_was_held_behind_a_gap_is_delivered() {
    let _watchdog = common::watchdog(
        "proto_sim::refused_packet_that_was_held_behind_a_gap_is_delivered",
        Duration::from_secs(180),
    );
    for lose_nack in [false, true] {
        let mut duo = Duo::new(ProtoConfig::default());
        duo.p[1].set_recv_depth(1);
        for k in 0..4 {
            duo.send(0, CHANNEL_REQUEST, k, 20);
        }
        let d = duo.out(0);
        assert_eq!(d.len(), 4);
        // 1, 2, 3 arrive first and are held; node 0 learns they are
        for x in &d[1..] {
            duo.feed(1, x);
        }
        for a in duo.out(1) {
            duo.feed(0, &a);
        }
        // then 0: delivered (the buffer is now full), 1 refused
        duo.feed(1, &d[0]);
        assert_eq!(duo.p[1].stats().nacks_sent, 1);
        let replies = duo.out(1);
        if !lose_nack {
            for a in &replies {
                duo.feed(0, a);
            }
        }
        let mut ledger = Ledger::default();
        let done = duo.run(10 * SECOND, |d| {
            d.drain(1, &mut ledger);
            ledger.delivered == 4 && d.p[0].is_idle()
        });
        assert!(
            done,
            "lose_nack {lose_nack}: {} of 4 delivered, node 0 unfinished {}",
            ledger.delivered,
            duo.p[0].unfinished_to(&1)
        );
        assert!(ledger.failed.is_empty());
    }
}

// ---------------------------------------------------------------------------
// 7. Fragmentation.
// ---------------------------------------------------------------------------

#[test]
fn fragment_counts_at_the_edges() {
    let _watchdog = common::watchdog(
        "proto_sim::fragment_counts_at_the_edges",
        Duration::from_secs(180),
    );
    let cfg = ProtoConfig {
        max_datagram: 1500,
        ..Default::default()
    };
    let mut duo = Duo::new(cfg);
    let cap = duo.p[0].fragment_capacity(3);
    assert_eq!(cap, 1500 - wire::DATA_HEADER_LEN - 12 - wire::CRC_LEN);
    for (k, (len, frags)) in [
        (0, 1),
        (1, 1),
        (cap - 1, 1),
        (cap, 1),
        (cap + 1, 2),
        (2 * cap, 2),
        (2 * cap + 1, 3),
    ]
    .into_iter()
    .enumerate()
    {
        duo.send(0, CHANNEL_REQUEST, k as u32, len);
        let d = duo.out(0);
        assert_eq!(d.len(), frags, "{len} bytes");
        assert!(d.iter().all(|x| x.len() <= 1500));
        for x in &d {
            duo.feed(1, x);
        }
    }
    let mut ledger = Ledger::default();
    duo.drain(1, &mut ledger);
    assert_eq!(ledger.delivered, 7);
}

#[test]
fn fragmented_messages_under_loss() {
    let _watchdog = common::watchdog(
        "proto_sim::fragmented_messages_under_loss",
        Duration::from_secs(180),
    );
    let sim = FaultConfig {
        loss: 0.05,
        dup: 0.02,
        reorder: 0.05,
        corrupt: 0.01,
        seed: 3,
        ..lan()
    };
    let proto = ProtoConfig {
        max_datagram: 1500,
        ..Default::default()
    };
    let cap = Protocol::<u32>::new(proto.clone(), &[1; 32]).fragment_capacity(3);
    let sizes = [
        0,
        1,
        cap - 1,
        cap,
        cap + 1,
        2 * cap + 1,
        MAX_MESSAGE,
        5,
        0,
        cap + 1,
    ];
    let mut plan = Vec::new();
    for &len in &sizes {
        for ch in [CHANNEL_REQUEST, CHANNEL_REPLY] {
            plan.push((0, 1, ch, len));
            plan.push((1, 0, ch, len));
        }
    }
    let mut net = SimNet::new(2, proto, sim);
    run_plan(&mut net, &plan, 8, &[0, 1], 600 * SECOND);
    assert!(net.stats.lost > 0);
    assert!(sum_stats(&mut net, retransmits) > 0);
}

#[test]
fn many_mixed_sizes_in_fragments() {
    let _watchdog = common::watchdog(
        "proto_sim::many_mixed_sizes_in_fragments",
        Duration::from_secs(180),
    );
    let sim = FaultConfig {
        loss: 0.05,
        dup: 0.02,
        reorder: 0.05,
        seed: 4,
        ..lan()
    };
    let proto = ProtoConfig {
        max_datagram: 1500,
        ..Default::default()
    };
    let mut net = SimNet::new(3, proto, sim);
    let plan = all_to_all_plan(3, 10, |k| 1 + (k as usize * 7919) % 40_000);
    run_plan(&mut net, &plan, 12, &[0, 1, 2], 600 * SECOND);
}

/// A message longer than the receiver accepts must not vanish silently.
#[test]
fn message_over_the_limit_is_refused_not_lost() {
    let _watchdog = common::watchdog(
        "proto_sim::message_over_the_limit_is_refused_not_lost",
        Duration::from_secs(180),
    );
    let mut net = SimNet::new(2, ProtoConfig::default(), lan());
    let id = net.send(
        0,
        1,
        CHANNEL_REQUEST,
        meta(0, 0, 0),
        vec![0; MAX_MESSAGE + 1],
    );
    let mut ledger = Ledger::default();
    assert!(net.run_until(10 * SECOND, |net| {
        ledger.drain(net, [0, 1]);
        !ledger.failed.is_empty() || ledger.delivered > 0
    }));
    assert_eq!(failures(&ledger), vec![(id, FailReason::TooLong)]);
    assert_goes_idle(&mut net, SECOND);
}

// ---------------------------------------------------------------------------
// 8. The simulator: same seed, same trace.
// ---------------------------------------------------------------------------

/// What one seeded run did, as far as a test can see.
#[derive(PartialEq, Debug)]
struct Trace {
    net: ramp::sim::SimStats,
    deliveries: Vec<(u32, u32, u8, u32)>,
    nodes: Vec<Statistics>,
    end: Instant,
}

fn traced(seed: u64) -> Trace {
    let mut net = SimNet::new(8, ProtoConfig::default(), faults(seed));
    let ledger = run_plan(
        &mut net,
        &all_to_all_plan(8, 6, |k| 10 + k as usize),
        60,
        &(0..8).collect::<Vec<_>>(),
        600 * SECOND,
    );
    Trace {
        net: net.stats.clone(),
        deliveries: ledger.trace,
        nodes: (0..8).map(|i| *net.node(i).stats()).collect(),
        end: net.now(),
    }
}

#[test]
fn same_seed_same_trace_different_seed_different_trace() {
    let _watchdog = common::watchdog(
        "proto_sim::same_seed_same_trace_different_seed_different_trace",
        Duration::from_secs(180),
    );
    let a = traced(11);
    let b = traced(11);
    assert_eq!(a.net, b.net, "network statistics differ");
    assert_eq!(a.end, b.end, "virtual end times differ");
    assert!(a.deliveries == b.deliveries, "delivery order differs");
    assert_eq!(a.nodes, b.nodes, "protocol statistics differ");
    let c = traced(12);
    assert_ne!(a.net, c.net);
    assert!(a.deliveries != c.deliveries);
}

// ---------------------------------------------------------------------------
// 9. The network goes idle.
// ---------------------------------------------------------------------------

#[test]
fn network_goes_idle_after_the_traffic() {
    let _watchdog = common::watchdog(
        "proto_sim::network_goes_idle_after_the_traffic",
        Duration::from_secs(180),
    );
    for seed in [1, 2, 3] {
        let mut net = SimNet::new(5, ProtoConfig::default(), faults(seed));
        run_plan(
            &mut net,
            &all_to_all_plan(5, 5, |k| k as usize * 50),
            40,
            &[0, 1, 2, 3, 4],
            600 * SECOND,
        );
        // every delivery is taken; ACKs may still be owed, but only briefly
        assert_goes_idle(&mut net, 2 * SECOND);
        // and idle means idle: more time brings nothing
        let sent = net.stats.sent;
        net.advance(10 * SECOND);
        assert!(!net.step(), "something happened on an idle network");
        assert_eq!(net.stats.sent, sent);
    }
}

// ---------------------------------------------------------------------------
// Everything at once.
// ---------------------------------------------------------------------------

#[test]
fn severe_faults_20_seeds() {
    let _watchdog = common::watchdog(
        "proto_sim::severe_faults_20_seeds",
        Duration::from_secs(180),
    );
    let proto = ProtoConfig {
        max_datagram: 500,
        window: 16,
        ..Default::default()
    };
    for seed in 100..120 {
        let sim = FaultConfig {
            loss: 0.3,
            dup: 0.2,
            corrupt: 0.1,
            reorder: 0.3,
            jitter: 50 * MICROS,
            seed,
            ..lan()
        };
        let mut net = SimNet::new(3, proto.clone(), sim);
        let plan = all_to_all_plan(3, 8, |k| (k as usize * 331) % 1200);
        run_plan(&mut net, &plan, 12, &[0, 1, 2], 3600 * SECOND);
        assert_goes_idle(&mut net, 10 * SECOND);
    }
}

#[test]
fn stop_and_wait_window_of_one() {
    let _watchdog = common::watchdog(
        "proto_sim::stop_and_wait_window_of_one",
        Duration::from_secs(180),
    );
    let proto = ProtoConfig {
        window: 1,
        ..Default::default()
    };
    let mut net = SimNet::new(2, proto, faults(9));
    run_plan(
        &mut net,
        &all_to_all_plan(2, 30, |k| k as usize * 3),
        10,
        &[0, 1],
        600 * SECOND,
    );
}

/// Small buffers, slow receivers, fragments and faults together, every node
/// sending to every other: delivery stays exactly-once and in order.
#[test]
fn small_buffers_slow_receivers_under_faults_20_seeds() {
    let _watchdog = common::watchdog(
        "proto_sim::small_buffers_slow_receivers_under_faults_20_seeds",
        Duration::from_secs(180),
    );
    let proto = ProtoConfig {
        recv_depth: 2,
        max_datagram: 400,
        ..Default::default()
    };
    for seed in 1..=20 {
        let mut net = SimNet::new(3, proto.clone(), faults(seed));
        let mut tx = Sender::default();
        for k in 0..15u32 {
            for from in 0..3 {
                for to in 0..3 {
                    if from != to {
                        tx.send(&mut net, from, to, CHANNEL_REQUEST, (k as usize * 97) % 900);
                        tx.send(&mut net, from, to, CHANNEL_REPLY, 30);
                    }
                }
            }
        }
        let mut ledger = Ledger::default();
        let mut next_poll = net.now();
        let done = run_with_app(&mut net, 600 * SECOND, 3 * MILLIS, |net| {
            if net.now() >= next_poll {
                next_poll = net.now().plus(3 * MILLIS);
                for i in 0..3 {
                    // one event per node every 3 ms
                    if let Some(ev) = net.poll_event(i) {
                        ledger.take(i, ev);
                    }
                }
            }
            ledger.delivered == tx.sent && (0..3).all(|i| net.node(i).is_idle())
        });
        assert!(ledger.failed.is_empty(), "seed {seed}: {:?}", ledger.failed);
        assert!(done, "seed {seed}: {}/{}", ledger.delivered, tx.sent);
        assert!(sum_stats(&mut net, |s| s.nacks_sent) > 0);
        assert_goes_idle(&mut net, 10 * SECOND);
    }
}

/// With a small NACK limit and a network that loses, duplicates and
/// reorders, some requests come back with ECONGESTION. Each message is then
/// either delivered once or failed once, never both, and what is delivered
/// keeps its order.
#[test]
fn congestion_under_faults_is_delivered_xor_failed() {
    let _watchdog = common::watchdog(
        "proto_sim::congestion_under_faults_is_delivered_xor_failed",
        Duration::from_secs(180),
    );
    let proto = ProtoConfig {
        nack_limit: 2,
        recv_depth: 2,
        ..Default::default()
    };
    let mut congested = 0;
    for seed in 1..=20 {
        let mut net = SimNet::new(2, proto.clone(), faults(seed));
        let mut ids = Vec::new();
        for k in 0..40u32 {
            let m = meta(0, k, 20);
            ids.push(net.send(0, 1, CHANNEL_REQUEST, m, payload(0, k, CHANNEL_REQUEST, 20)));
        }
        let mut delivered: Vec<u32> = Vec::new();
        let mut failed: Vec<u32> = Vec::new();
        let mut next_poll = net.now();
        let done = run_with_app(&mut net, 600 * SECOND, 5 * MILLIS, |net| {
            if net.now() >= next_poll {
                next_poll = net.now().plus(5 * MILLIS);
                if let Some(ev) = net.poll_event(1) {
                    let Event::Delivered { meta: m, .. } = ev else {
                        panic!("{ev:?}")
                    };
                    delivered.push(m.args()[1]);
                }
            }
            while let Some(ev) = net.poll_event(0) {
                let Event::Failed { id, reason, .. } = ev else {
                    panic!("{ev:?}")
                };
                assert_eq!(reason, FailReason::Refused);
                failed.push(ids.iter().position(|&x| x == id).unwrap() as u32);
            }
            delivered.len() + failed.len() >= 40 && net.node(0).is_idle()
        });
        assert!(done, "seed {seed}: {delivered:?} {failed:?}");
        while let Some(Event::Delivered { meta: m, .. }) = net.poll_event(1) {
            delivered.push(m.args()[1]);
        }
        assert!(
            delivered.windows(2).all(|w| w[0] < w[1]),
            "seed {seed}: order {delivered:?}"
        );
        let d: HashSet<u32> = delivered.iter().copied().collect();
        let f: HashSet<u32> = failed.iter().copied().collect();
        assert_eq!(f.len(), failed.len(), "seed {seed}: failed twice");
        assert!(
            d.is_disjoint(&f),
            "seed {seed}: delivered and failed: {:?}",
            d.intersection(&f)
        );
        assert_eq!(d.len() + f.len(), 40, "seed {seed}: lost");
        congested += failed.len();
    }
    assert!(congested > 0);
}

/// A lost last packet (nothing after it to reveal the loss through a SACK)
/// is resent by the tail-loss probe after about two round trips plus the ACK
/// delay, not after a whole retransmission timeout.
#[test]
fn tail_loss_probe_resends_a_lost_last_packet_early() {
    let _watchdog = common::watchdog(
        "proto_sim::tail_loss_probe_resends_a_lost_last_packet_early",
        Duration::from_secs(180),
    );
    let cfg = ProtoConfig::default();
    let mut net = SimNet::new(2, cfg.clone(), lan());
    let mut tx = Sender::default();
    let mut ledger = Ledger::default();
    // learn the round trip
    for _ in 0..20 {
        tx.send(&mut net, 0, 1, CHANNEL_REQUEST, 16);
        assert!(net.run_for(SECOND));
        ledger.drain(&mut net, [1]);
    }
    let before = ledger.delivered;
    // the next packet is lost: the receiver is cut off while it leaves
    net.set_down(1, true);
    tx.send(&mut net, 0, 1, CHANNEL_REQUEST, 16);
    net.set_down(1, false);
    let t0 = net.now();
    assert!(net.run_until(SECOND, |net| {
        ledger.drain(net, [1]);
        ledger.delivered > before
    }));
    let took = net.now().since(t0);
    assert!(
        took < cfg.rto_min / 2,
        "the lost last packet arrived after {} us; the minimum RTO is {} us",
        took / MICROS,
        cfg.rto_min / MICROS
    );
    assert_eq!(
        net.node(0)
            .stats()
            .requests_retransmitted
            .iter()
            .sum::<u64>(),
        1
    );
    assert_goes_idle(&mut net, SECOND);
}

// ---------------------------------------------------------------------------
// 7. Associations: the handshake, and what a packet outside one can do
//    (nothing). The hostile-sender findings this answers are named.
// ---------------------------------------------------------------------------

/// Packets outside an association (finding 1/3: a forged DATA from an
/// unknown address; one with a wrong tag; the right tags from another
/// address) are dropped and counted, never an event, and cost no state. A
/// DATA for no association is answered by one small ABORT with its tag.
#[test]
fn packets_outside_an_association_are_dropped_and_counted() {
    let _watchdog = common::watchdog(
        "proto_sim::packets_outside_an_association_are_dropped_and_counted",
        Duration::from_secs(180),
    );
    let mut duo = Duo::fresh(ProtoConfig::default());
    // tag 0, "returned message" style, from an address node 1 never met
    let d = forged_data(0, CHANNEL_REPLY, 0, 0, 0, 0);
    duo.feed(1, &d);
    duo.feed(1, &forged_ack(0x1234, CHANNEL_REQUEST, 1));
    let s = *duo.p[1].stats();
    assert_eq!((s.stale_dropped, s.corrupt_dropped), (2, 0));
    assert!(!duo.p[1].has_events());
    assert_eq!(duo.p[1].peer_count(), 0, "no state for a stray packet");
    let answer = duo.out(1);
    assert_eq!(answer.len(), 1, "the DATA (only) is answered");
    assert_eq!(
        wire::decode(&I, &answer[0]).unwrap(),
        wire::Packet::Abort { vtag: 0 }
    );
    assert!(
        answer[0].len() < d.len(),
        "an ABORT is smaller than the DATA"
    );
    // An association; then the wrong tag, and the right tags from elsewhere.
    let mut ledger = Ledger::default();
    duo.connect(&mut ledger);
    let (tag1, _) = duo.p[1].association(&0).unwrap();
    let stale = duo.p[1].stats().stale_dropped;
    duo.feed(1, &forged_data(tag1 ^ 1, CHANNEL_REQUEST, 0, 1, 0, 1));
    let now = duo.now;
    duo.p[1].handle_datagram(now, 7, &forged_data(tag1, CHANNEL_REQUEST, 0, 1, 0, 1));
    duo.p[1].handle_datagram(now, 7, &forged_ack(tag1, CHANNEL_REQUEST, 1));
    assert_eq!(duo.p[1].stats().stale_dropped, stale + 3);
    assert!(!duo.p[1].has_events());
    assert_eq!(duo.p[1].peer_count(), 1);
    // the real next message is delivered as k = 1
    duo.send(0, CHANNEL_REQUEST, 1, 8);
    assert!(duo.run(SECOND, |d| {
        d.drain(1, &mut ledger);
        ledger.delivered == 3
    }));
    assert!(ledger.failed.is_empty());
}

/// Finding 2: a 44-byte ACK (or a DATA) with a random tag from a mapped
/// peer's address is not "the peer restarted": nothing is reset or
/// failed, and the peer's later packets are taken as before.
#[test]
fn forged_ack_or_data_from_the_peers_address_changes_nothing() {
    let _watchdog = common::watchdog(
        "proto_sim::forged_ack_or_data_from_the_peers_address_changes_nothing",
        Duration::from_secs(180),
    );
    let mut duo = Duo::new(ProtoConfig::default());
    let mut ledger = Ledger::default();
    duo.connect(&mut ledger);
    let tags = duo.p[0].association(&1);
    // node 0 has messages in flight to node 1 (not yet delivered)
    for k in 1..4 {
        duo.send(0, CHANNEL_REQUEST, k, 8);
    }
    let in_flight = duo.out(0);
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..100 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let ack = forged_ack(x, CHANNEL_REQUEST, x as u32);
        assert_eq!(ack.len(), 44);
        duo.feed(0, &ack);
        duo.feed(0, &forged_data(x, CHANNEL_REQUEST, 0, 0, 1, 9));
    }
    assert_eq!(duo.p[0].stats().stale_dropped, 200);
    assert_eq!(duo.p[0].association(&1), tags, "the association stands");
    assert_eq!(duo.p[0].unfinished_to(&1), 3);
    duo.drain(0, &mut ledger);
    assert!(ledger.failed.is_empty(), "{:?}", ledger.failed);
    for d in &in_flight {
        duo.feed(1, d);
    }
    duo.send(1, CHANNEL_REQUEST, 1, 8);
    assert!(duo.run(SECOND, |d| {
        d.drain(0, &mut ledger);
        d.drain(1, &mut ledger);
        ledger.delivered == 2 + 4 && d.p[0].is_idle() && d.p[1].is_idle()
    }));
    assert!(ledger.failed.is_empty());
    assert_eq!(
        duo.p[0].stats().stale_dropped,
        200,
        "the real peer is not stale"
    );
}

/// An INIT costs the responder no state: 10,000 INITs from distinct
/// addresses allocate no peer; each answer is no larger than its INIT; past
/// the burst the rate limit holds the answers back, and counts them.
#[test]
fn inits_cost_no_state_and_their_answers_are_rate_limited() {
    let _watchdog = common::watchdog(
        "proto_sim::inits_cost_no_state_and_their_answers_are_rate_limited",
        Duration::from_secs(180),
    );
    let cfg = ProtoConfig {
        unsolicited_rate: 1000,
        unsolicited_burst: 64,
        ..Default::default()
    };
    let mut p: Protocol<u32> = Protocol::new(cfg, &[5; 32]);
    let t0 = Instant(1_000_000);
    let mut init = Vec::new();
    for a in 0..10_000u32 {
        init.clear();
        wire::encode_init(&mut init, &I, 1 + a as u64);
        p.handle_datagram(t0, 100 + a, &init);
    }
    assert_eq!(p.peer_count(), 0, "an INIT created peer state");
    let mut b = Vec::new();
    let mut answers = 0;
    while let Some(to) = p.poll_transmit(&mut b) {
        answers += 1;
        assert!(
            b.len() <= init.len(),
            "amplification: {} > {}",
            b.len(),
            init.len()
        );
        match wire::decode(&I, &b).unwrap() {
            wire::Packet::InitAck { vtag, .. } => assert_eq!(vtag, (to - 100 + 1) as u64),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(answers, 64, "the burst");
    assert_eq!(p.suppressed_answers(), 10_000 - 64);
    assert_eq!(p.stats().stale_dropped, 10_000 - 64);
    // 1000 per second: ten more after 10 ms
    for a in 0..100u32 {
        init.clear();
        wire::encode_init(&mut init, &I, 1 + a as u64);
        p.handle_datagram(t0.plus(10 * MILLIS), 100 + a, &init);
    }
    let mut n = 0;
    while p.poll_transmit(&mut b).is_some() {
        n += 1;
    }
    assert_eq!(n, 10);
    assert_eq!(p.peer_count(), 0);
    assert!(p.is_idle() && p.next_timeout().is_none());
}

/// The INIT_ACK of node 1 to node 0's INIT, and node 0's COOKIE_ECHO,
/// taken off the wire by hand (node 1 still has no state).
fn handshake_until_echo(duo: &mut Duo) -> Vec<u8> {
    duo.send(0, CHANNEL_REQUEST, 0, 8);
    let init = duo.out(0);
    assert_eq!(init.len(), 1, "an INIT, no DATA before the association");
    duo.feed(1, &init[0]);
    assert_eq!(duo.p[1].peer_count(), 0);
    let init_ack = duo.out(1);
    duo.feed(0, &init_ack[0]);
    let echo = duo.out(0);
    assert_eq!(echo.len(), 1, "a COOKIE_ECHO, still no DATA");
    assert!(matches!(
        wire::decode(&I, &echo[0]).unwrap(),
        wire::Packet::CookieEcho { .. }
    ));
    echo.into_iter().next().unwrap()
}

/// A cookie with a flipped bit, echoed from another address, or echoed
/// after its lifetime, is refused (no state); the genuine one establishes.
#[test]
fn cookie_altered_from_elsewhere_or_expired_is_refused() {
    let _watchdog = common::watchdog(
        "proto_sim::cookie_altered_from_elsewhere_or_expired_is_refused",
        Duration::from_secs(180),
    );
    let cfg = ProtoConfig::default();
    let mut duo = Duo::fresh(cfg.clone());
    let echo = handshake_until_echo(&mut duo);
    let now = duo.now;
    let mut refused = 0;
    // every bit of the cookie (header bits would fail the checksum first)
    for bit in (wire::COMMON_LEN * 8)..((wire::COMMON_LEN + wire::COOKIE_LEN) * 8) {
        let mut e = echo[..echo.len() - 4].to_vec();
        e[bit / 8] ^= 1 << (bit % 8);
        let crc = wire::crc32c(&e);
        e.extend_from_slice(&crc.to_be_bytes());
        duo.feed(1, &e);
        refused += 1;
    }
    duo.p[1].handle_datagram(now, 5, &echo);
    refused += 1;
    assert_eq!(duo.p[1].stats().stale_dropped, refused);
    assert_eq!(duo.p[1].peer_count(), 0);
    assert!(duo.out(1).is_empty() && !duo.p[1].has_events());
    // the genuine echo, from node 0, in time
    duo.feed(1, &echo);
    assert_eq!(duo.p[1].peer_count(), 1);
    assert!(duo.p[1].association(&0).is_some());

    // A second pair: the echo arrives after the cookie's lifetime.
    let mut duo = Duo::fresh(cfg.clone());
    let echo = handshake_until_echo(&mut duo);
    duo.now = duo.now.plus(cfg.cookie_lifetime + 1);
    duo.feed(1, &echo);
    assert_eq!(duo.p[1].stats().stale_dropped, 1);
    assert_eq!(duo.p[1].peer_count(), 0);
    // node 0 keeps trying: the echo again is refused again, then the peer
    // timeout declares node 1 dead and fails the message
    // (PeerUnreachable); the next send fails at once too but opens a new
    // association, and once it is up messages go through.
    let mut l0 = Ledger::default();
    assert!(duo.run(120 * SECOND, |d| {
        d.drain(0, &mut l0);
        !l0.failed.is_empty()
    }));
    assert_eq!(failures(&l0)[0].1, FailReason::PeerUnreachable);
    assert!(duo.p[0].is_dead(&1));
    duo.send(0, CHANNEL_REQUEST, 0, 8);
    assert!(duo.run(SECOND, |d| {
        d.drain(0, &mut l0);
        l0.failed.len() == 2 && d.p[0].association(&1).is_some()
    }));
    assert!(!duo.p[0].is_dead(&1));
    let mut l1 = Ledger::default();
    duo.send(0, CHANNEL_REQUEST, 0, 8);
    assert!(duo.run(SECOND, |d| {
        d.drain(1, &mut l1);
        l1.delivered == 1
    }));
}

/// Both ends open at once: they settle on one pair of tags, every message
/// once, on a clean network no retransmission and no packet dropped.
#[test]
fn simultaneous_open_settles_on_one_pair_of_tags() {
    let _watchdog = common::watchdog(
        "proto_sim::simultaneous_open_settles_on_one_pair_of_tags",
        Duration::from_secs(180),
    );
    let mut duo = Duo::fresh(ProtoConfig::default());
    let mut ledger = Ledger::default();
    duo.connect(&mut ledger); // both sent before either heard: simultaneous
    for i in 0..2 {
        let s = *duo.p[i].stats();
        assert_eq!(
            (s.stale_dropped, s.duplicates_dropped, retransmits(&s)),
            (0, 0, 0),
            "node {i}"
        );
    }
    // and in the simulator, with a network delay, for many pairs at once
    let mut net = SimNet::new(8, ProtoConfig::default(), lan());
    let plan = all_to_all_plan(8, 1, |_| 10);
    run_plan(
        &mut net,
        &plan,
        plan.len(),
        &(0..8).collect::<Vec<_>>(),
        SECOND,
    );
    for i in 0..8u32 {
        for j in 0..8u32 {
            if i != j {
                let (a, b) = net.node(i).association(&j).unwrap();
                assert_eq!(net.node(j).association(&i), Some((b, a)));
            }
        }
        let s = *net.node(i).stats();
        assert_eq!((s.stale_dropped, retransmits(&s)), (0, 0), "node {i}");
    }
}

/// An ABORT ends an association only with the right tag.
#[test]
fn abort_with_a_wrong_tag_is_ignored_with_the_right_one_ends_the_association() {
    let _watchdog = common::watchdog(
        "proto_sim::abort_with_a_wrong_tag_is_ignored_with_the_right_one_ends_the_association",
        Duration::from_secs(180),
    );
    let mut duo = Duo::new(ProtoConfig::default());
    let mut ledger = Ledger::default();
    duo.connect(&mut ledger);
    let (mine, theirs) = duo.p[0].association(&1).unwrap();
    let id = duo.send(0, CHANNEL_REQUEST, 1, 8);
    let lost = duo.out(0);
    assert_eq!(lost.len(), 1);
    let abort = |vtag| {
        let mut a = Vec::new();
        wire::encode_abort(&mut a, &I, vtag);
        a
    };
    for wrong in [0, 1, mine ^ 1, theirs ^ (1 << 63), u64::MAX] {
        duo.feed(0, &abort(wrong));
    }
    duo.p[0].handle_datagram(duo.now, 9, &abort(mine)); // right tag, wrong address
    assert_eq!(duo.p[0].stats().stale_dropped, 6);
    assert_eq!(duo.p[0].association(&1), Some((mine, theirs)));
    let mut l0 = Ledger::default();
    duo.drain(0, &mut l0);
    assert!(l0.failed.is_empty());
    // The right one (the peer's tag reflected, as a peer without the
    // association sends it): the message in flight fails, the next send
    // opens a new association.
    duo.feed(0, &abort(theirs));
    duo.drain(0, &mut l0);
    assert_eq!(failures(&l0), vec![(id, FailReason::PeerUnreachable)]);
    assert_eq!(duo.p[0].association(&1), None);
    assert_eq!(duo.p[0].unfinished_to(&1), 0);
    duo.send(0, CHANNEL_REQUEST, 2, 8);
    let mut l1 = Ledger::default();
    l1.next.insert((1, 0, CHANNEL_REQUEST), 2);
    assert!(duo.run(SECOND, |d| {
        d.drain(1, &mut l1);
        l1.delivered == 1 && d.p[0].is_idle()
    }));
    let (m2, t2) = duo.p[0].association(&1).unwrap();
    assert!(m2 != mine && t2 != theirs, "a new pair of tags");
}

/// Finding 6: forged DATA with the association's tags does not make a real
/// message disappear or be replaced: from another address it is stale; from
/// the peer's address, an older or newer epoch is not taken unless it is a
/// newer one at sequence number 0 (where the sender restarts), and a
/// sequence number past the receive window is dropped. (Within the window,
/// from the peer's own address, only the MAC of a job key tells a forgery:
/// that is what it is for.)
#[test]
fn forged_sequence_numbers_and_epochs_replace_no_real_message() {
    let _watchdog = common::watchdog(
        "proto_sim::forged_sequence_numbers_and_epochs_replace_no_real_message",
        Duration::from_secs(180),
    );
    let mut duo = Duo::new(ProtoConfig::default());
    let mut ledger = Ledger::default();
    duo.connect(&mut ledger); // k = 0 delivered each way, next seq 1
    let (tag1, _) = duo.p[1].association(&0).unwrap();
    let now = duo.now;
    let k_forged = 1000;
    let forged = [
        // (from, epoch, seq)
        (7u32, 0u16, 1u32 + 40), // next+40, sniffed tags, another address
        (7, 0, 1),               // the very next one, another address
        (0, 1, 41),              // the peer's address: a bumped epoch...
        (0, 5, 1),
        (0, u16::MAX, 0), // an older epoch
        (0, 0, 1 + 65),   // past the window
        (0, 0, 1 << 31),
    ];
    for &(from, epoch, seq) in &forged {
        let d = forged_data(tag1, CHANNEL_REQUEST, epoch, seq, 0, k_forged);
        duo.p[1].handle_datagram(now, from, &d);
    }
    assert_eq!(duo.p[1].stats().stale_dropped, forged.len() as u64);
    assert!(!duo.p[1].has_events());
    // the real messages 1..=60 all arrive, once, in order, intact (the
    // ledger checks k, origin and payload of each)
    for k in 1..=60 {
        duo.send(0, CHANNEL_REQUEST, k, 8);
    }
    assert!(duo.run(SECOND, |d| {
        d.drain(1, &mut ledger);
        ledger.delivered == 2 + 60
    }));
    assert!(ledger.failed.is_empty());
    assert!(!ledger.trace.iter().any(|t| t.3 == k_forged));
    assert_eq!(duo.p[1].stats().out_of_order_requests, 0, "nothing held");
}

// ---------------------------------------------------------------------------
// Bundles: several DATA, ACK and NACK packets in one datagram.
// ---------------------------------------------------------------------------

/// The byte ranges of the packets of a datagram.
fn spans(d: &[u8]) -> Vec<std::ops::Range<usize>> {
    let mut at = 0;
    wire::packets(&I, d)
        .map(|p| {
            let n = p.expect("a packet the protocol sent").len();
            at += n;
            at - n..at
        })
        .collect()
}

/// 16 requests queued at once leave in one datagram; the poll that takes
/// them answers each, and the 16 replies (with the ACK) leave in one
/// datagram too; every message arrives once, in order.
#[test]
fn sixteen_replies_of_one_poll_leave_in_one_datagram() {
    let mut duo = Duo::new(ProtoConfig::default());
    let mut ledger = Ledger::default();
    duo.connect(&mut ledger);
    for k in 1..=16 {
        duo.send(0, CHANNEL_REQUEST, k, 8 + k as usize);
    }
    let d = duo.out_datagrams(0);
    assert_eq!(d.len(), 1, "16 requests of one flush");
    assert_eq!(spans(&d[0]).len(), 16);
    let before = *duo.p[1].stats();
    duo.feed(1, &d[0]);
    let s = *duo.p[1].stats();
    assert_eq!(s.packets_received - before.packets_received, 16);
    assert_eq!(s.corrupt_dropped, before.corrupt_dropped);
    duo.drain(1, &mut ledger);
    assert_eq!(ledger.delivered, 2 + 16, "every request, in order, once");
    // the poll's 16 replies
    for k in 0..16 {
        duo.send(1, CHANNEL_REPLY, k, 4 + k as usize);
    }
    let d = duo.out_datagrams(1);
    assert_eq!(d.len(), 1, "16 replies of one poll");
    let n = spans(&d[0]).len();
    assert!((16..=17).contains(&n), "{n} packets");
    duo.feed(0, &d[0]);
    duo.drain(0, &mut ledger);
    assert_eq!(ledger.delivered, 2 + 32, "every reply, in order, once");
    // the replies acknowledged the requests: nothing is resent
    assert!(duo.run(SECOND, |d| d.p[0].is_idle() && d.p[1].is_idle()));
    for p in &duo.p {
        assert_eq!(p.stats().packets_retransmitted, 0);
    }
    assert!(ledger.failed.is_empty());
}

/// A bundle's packets are checked one by one: a damaged one ends the walk
/// (what came before it is delivered; it is counted as a bad datagram is);
/// one with another association's tag is dropped as stale and the walk
/// goes on; a byte more after the packets is refused and counted; a bundle
/// fed twice delivers nothing twice.
#[test]
fn a_bundle_walk_stops_at_its_first_bad_packet() {
    let mut duo = Duo::new(ProtoConfig::default());
    let mut ledger = Ledger::default();
    duo.connect(&mut ledger);
    for k in 1..=4 {
        duo.send(0, CHANNEL_REQUEST, k, 30);
    }
    let d = duo.out_datagrams(0).pop().unwrap();
    let sp = spans(&d);
    assert_eq!(sp.len(), 4);
    // a payload byte of the second packet
    let mut bad = d.clone();
    bad[sp[1].end - 6] ^= 0x40;
    let before = *duo.p[1].stats();
    duo.feed(1, &bad);
    let s = *duo.p[1].stats();
    assert_eq!(s.packets_received - before.packets_received, 2);
    assert_eq!(s.corrupt_dropped - before.corrupt_dropped, 1);
    duo.drain(1, &mut ledger);
    assert_eq!(ledger.delivered, 2 + 1, "the packet before the bad one");
    // the bundle whole: the rest, the first one a duplicate
    duo.feed(1, &d);
    duo.drain(1, &mut ledger);
    assert_eq!(ledger.delivered, 2 + 4);
    assert_eq!(
        duo.p[1].stats().duplicates_dropped - before.duplicates_dropped,
        1
    );
    // fed again: nothing more
    duo.feed(1, &d);
    duo.drain(1, &mut ledger);
    assert_eq!(ledger.delivered, 2 + 4);
    assert_eq!(
        duo.p[1].stats().duplicates_dropped - before.duplicates_dropped,
        5
    );
    // [DATA 5, a DATA under another tag, DATA 6]: 5 and 6 delivered
    for k in 5..=6 {
        duo.send(0, CHANNEL_REQUEST, k, 30);
    }
    let d = duo.out_datagrams(0).pop().unwrap();
    let sp = spans(&d);
    let (tag1, _) = duo.p[1].association(&0).unwrap();
    let forged = forged_data(tag1 ^ 1, CHANNEL_REQUEST, 0, 7, 0, 7);
    let mixed = [&d[sp[0].clone()], &forged, &d[sp[1].clone()]].concat();
    let before = *duo.p[1].stats();
    duo.feed(1, &mixed);
    let s = *duo.p[1].stats();
    assert_eq!(s.packets_received - before.packets_received, 3);
    assert_eq!(s.stale_dropped - before.stale_dropped, 1);
    assert_eq!(s.corrupt_dropped, before.corrupt_dropped);
    duo.drain(1, &mut ledger);
    assert_eq!(ledger.delivered, 2 + 6);
    // a byte after the packets
    duo.send(0, CHANNEL_REQUEST, 7, 30);
    let mut d = duo.out_datagrams(0).pop().unwrap();
    d.push(0);
    duo.feed(1, &d);
    let s2 = *duo.p[1].stats();
    assert_eq!(s2.packets_received - s.packets_received, 2);
    assert_eq!(s2.corrupt_dropped - s.corrupt_dropped, 1);
    duo.drain(1, &mut ledger);
    assert_eq!(ledger.delivered, 2 + 7);
    assert!(duo.run(SECOND, |d| d.p[0].is_idle() && d.p[1].is_idle()));
    assert!(ledger.failed.is_empty());
}

/// Node 0 queues 16 requests at a time (one flush: bundled); node 1
/// answers each poll's requests with one reply each, queued at once
/// (bundled); under loss, duplication, corruption and reordering every
/// message arrives exactly once and in order, and far fewer datagrams
/// than packets travel.
#[test]
fn bundles_under_faults_arrive_exactly_once_in_order() {
    let _watchdog = common::watchdog(
        "proto_sim::bundles_under_faults_arrive_exactly_once_in_order",
        Duration::from_secs(180),
    );
    for seed in 1..=8 {
        let sim = FaultConfig {
            loss: 0.1,
            dup: 0.1,
            corrupt: 0.05,
            reorder: 0.2,
            jitter: 20 * MICROS,
            seed,
            ..lan()
        };
        let mut net = SimNet::new(2, ProtoConfig::default(), sim);
        let mut ledger = Ledger::default();
        let (mut k_req, mut k_rep) = (0u32, 0u32);
        const ROUNDS: u32 = 20;
        for _ in 0..ROUNDS {
            let now = net.now();
            for _ in 0..16 {
                let (m, p) = (meta(0, k_req, 20), payload(0, k_req, CHANNEL_REQUEST, 20));
                net.node(0).send(now, 1, CHANNEL_REQUEST, m, p);
                k_req += 1;
            }
            let done = net.run_until(60 * SECOND, |net| {
                let mut took = 0;
                while let Some(ev) = net.poll_event(1) {
                    ledger.take(1, ev);
                    took += 1;
                }
                let now = net.now();
                for _ in 0..took {
                    let (m, p) = (meta(1, k_rep, 12), payload(1, k_rep, CHANNEL_REPLY, 12));
                    net.node(1).send(now, 0, CHANNEL_REPLY, m, p);
                    k_rep += 1;
                }
                while let Some(ev) = net.poll_event(0) {
                    ledger.take(0, ev);
                }
                ledger.delivered == 2 * k_req as u64
            });
            assert!(
                done,
                "seed {seed}: {} delivered of {}",
                ledger.delivered,
                2 * k_req
            );
        }
        assert!(ledger.failed.is_empty(), "seed {seed}: {:?}", ledger.failed);
        assert_eq!(ledger.delivered, 2 * 16 * ROUNDS as u64);
        assert_goes_idle(&mut net, 10 * SECOND);
        let packets = net.node(0).stats().packets_sent + net.node(1).stats().packets_sent;
        let st = net.stats.clone();
        assert!(
            st.lost > 0 && st.duplicated > 0 && st.corrupted > 0,
            "{st:?}"
        );
        assert!(
            st.sent * 2 < packets,
            "seed {seed}: {} datagrams for {packets} packets",
            st.sent
        );
    }
}
