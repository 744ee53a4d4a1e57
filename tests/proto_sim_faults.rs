//! The protocol core over the simulated network: corrupt, truncated and
//! stale datagrams, peer restarts, and every fault at once.

mod common;
#[path = "common/sim.rs"]
mod sim;

use sim::*;

// ---------------------------------------------------------------------------
// 6. Corrupt, truncated and stale datagrams; peer restarts.
// ---------------------------------------------------------------------------

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
/// either delivered once or failed once, never both: one delivered ahead
/// of a gap is never sent again in a new epoch (its sender is not told to
/// give up the one before it: `proto/recv.rs`).
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
    let (mut congested, mut early) = (0, 0);
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
        // (no order: a request whole in a packet may be delivered ahead
        // of a gap, `proto_sim_unordered.rs`)
        early += delivered.windows(2).filter(|w| w[0] > w[1]).count();
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
    assert!(
        congested > 0 && early > 0,
        "{congested} failed, {early} early"
    );
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
