//! The protocol core over the simulated network: bundles, several DATA,
//! ACK and NACK packets in one datagram.

mod common;
#[path = "common/sim.rs"]
mod sim;

use sim::*;

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
    // every kind of fault happened, over the seeds (a seed's short run,
    // a hundred datagrams, may miss one of them)
    let mut faults = (0u64, 0u64, 0u64);
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
        faults.0 += st.lost;
        faults.1 += st.duplicated;
        faults.2 += st.corrupted;
        assert!(
            st.sent * 2 < packets,
            "seed {seed}: {} datagrams for {packets} packets",
            st.sent
        );
    }
    assert!(
        faults.0 > 0 && faults.1 > 0 && faults.2 > 0,
        "lost, duplicated, corrupted: {faults:?}"
    );
}
