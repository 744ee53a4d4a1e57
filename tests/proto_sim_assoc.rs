//! The protocol core over the simulated network: associations, the
//! handshake, and what a packet outside one can do (nothing).

mod common;
#[path = "common/sim.rs"]
mod sim;

use sim::*;

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
/// after its lifetime, is refused (no state; the flipped one is answered
/// with an UNKNOWN_COOKIE); the genuine one establishes.
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
    assert!(!duo.p[1].has_events());
    // Each altered cookie (its MAC fails: no secret of node 1's made it)
    // is answered with an UNKNOWN_COOKIE alone, smaller than the echo; the
    // genuine cookie from another address with nothing.
    let answers = duo.out(1);
    assert_eq!(answers.len(), refused as usize - 1);
    assert!(answers.iter().all(|d| d.len() < echo.len()
        && matches!(wire::decode(&I, d), Ok(wire::Packet::UnknownCookie { .. }))));
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
