//! The protocol core over the simulated network: exactly-once, in-order
//! delivery per channel whatever the network does, at scale;
//! fragmentation; the simulator itself (same seed, same trace; going idle).

mod common;
#[path = "common/sim.rs"]
mod sim;

use sim::*;

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
    // a later fragment has the short header: 28 + 12 bytes more room
    let more = 1500 - wire::MORE_HEADER_LEN - wire::CRC_LEN;
    assert_eq!(more, cap + 40);
    for (k, (len, frags)) in [
        (0, 1),
        (1, 1),
        (cap - 1, 1),
        (cap, 1),
        (cap + 1, 2),
        (cap + more, 2),
        (cap + more + 1, 3),
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

/// A path that carries smaller datagrams than configured (a link's MTU,
/// told as UDP's `EMSGSIZE` tells it: `Protocol::path_datagram`): 256 KiB
/// messages both ways, under loss, duplication and reordering, each
/// delivered exactly once and whole (`run_plan`); what the protocol had
/// cut before it knew is cut again, so only the first datagrams of each
/// direction are too large, never the rest.
#[test]
fn a_path_of_small_datagrams_carries_256_kib_messages_exactly_once() {
    let _watchdog = common::watchdog(
        "proto_sim::a_path_of_small_datagrams_carries_256_kib_messages_exactly_once",
        Duration::from_secs(180),
    );
    for seed in ramp::sim::seeds(4) {
        eprintln!("seed {seed} (RAMP_SIM_SEED={seed} replays it)");
        let sim = FaultConfig {
            loss: 0.02,
            dup: 0.01,
            reorder: 0.05,
            seed,
            ..lan()
        };
        let mut net = SimNet::new(2, ProtoConfig::default(), sim);
        net.set_path_datagram(Some(1472));
        let mut plan = Vec::new();
        for k in 0..6 {
            plan.push((0, 1, CHANNEL_REQUEST, 256 * 1024));
            plan.push((1, 0, CHANNEL_REPLY, 256 * 1024 - k * 1000));
        }
        run_plan(&mut net, &plan, 4, &[0, 1], 600 * SECOND);
        assert_eq!(net.node(0).path_datagram_to(1), 1472);
        assert_eq!(net.node(1).path_datagram_to(0), 1472);
        // 12 messages of 178 datagrams each went; the large ones were
        // those cut (or in flight, resent) before the first was told
        let too_big = net.stats.too_big;
        eprintln!(
            "seed {seed}: {too_big} of {} datagrams too large",
            net.stats.sent
        );
        assert!(too_big > 0 && too_big < 40, "{too_big} too large");
        assert!(net.stats.sent > 12 * 178);
        assert_goes_idle(&mut net, 10 * SECOND);
    }
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
