//! The protocol core over the simulated network: a receiver out of buffer
//! NACKs and the sender goes back (go-back-N); ECONGESTION when it gives a
//! message up; a refused packet that was held behind a gap.

mod common;
#[path = "common/sim.rs"]
mod sim;

use sim::*;

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
