//! Idle reclaim over the simulated network: an association quiet for the
//! idle timeout is shut down (SHUTDOWN, SHUTDOWN_ACK) and both ends free
//! the peer's state; the next message opens a new association; a peer with
//! something to say keeps it and nothing is lost; a lost answer is made up
//! for; forged, replayed and flooded SHUTDOWNs and SHUTDOWN_ACKs change
//! nothing; a COOKIE_ECHO replayed after an association ended (closed by
//! ABORT, shut down, dead) does not bring it back.

mod common;

use std::time::Duration;

use ramp::proto::{Event, FailReason, ProtoConfig, Protocol};
use ramp::sim::{lan, FaultConfig, SimNet};
use ramp::time::{Instant, Nanos, MICROS, MILLIS};
use ramp::wire::{self, Category, Integrity, MsgKind, MsgMeta, Packet, CHANNEL_REQUEST};

const SECOND: Nanos = 1000 * MILLIS;
const I: Integrity = Integrity::Crc32c;

fn meta(k: u32) -> MsgMeta {
    MsgMeta::new(MsgKind::User, Category::Medium, 1, &[k])
}

fn cfg() -> ProtoConfig {
    ProtoConfig {
        idle_timeout: 5 * SECOND,
        ..Default::default()
    }
}

/// Node `i`'s events: (delivered, failed).
fn drain(net: &mut SimNet, i: u32, delivered: &mut usize, failed: &mut Vec<FailReason>) {
    while let Some(ev) = net.poll_event(i) {
        match ev {
            Event::Delivered { .. } => *delivered += 1,
            Event::Failed { reason, .. } => failed.push(reason),
        }
    }
}

fn shutdown(vtag: u64, ack: bool, nonce: u64) -> Vec<u8> {
    let mut b = Vec::new();
    wire::encode_shutdown(&mut b, &I, vtag, ack, nonce);
    b
}

/// Sends `k` messages each way between 0 and 1 and runs until all arrived.
fn exchange(net: &mut SimNet, k: u32) {
    let (mut delivered, mut failed) = (0, Vec::new());
    for m in 0..k {
        net.send(0, 1, CHANNEL_REQUEST, meta(m), vec![1; 100]);
        net.send(1, 0, CHANNEL_REQUEST, meta(m), vec![2; 100]);
    }
    assert!(net.run_until(5 * SECOND, |net| {
        drain(net, 0, &mut delivered, &mut failed);
        drain(net, 1, &mut delivered, &mut failed);
        delivered == 2 * k as usize
    }));
    assert!(failed.is_empty(), "{failed:?}");
    // the ACKs owed go out
    assert!(net.run_until(5 * SECOND, |net| net.node(0).is_idle()
        && net.node(1).is_idle()));
}

#[test]
fn idle_associations_are_shut_down_both_ends_free_and_the_next_message_reopens() {
    let _watchdog = common::watchdog(
        "proto_shutdown::idle_associations_are_shut_down_both_ends_free_and_the_next_message_reopens",
        Duration::from_secs(120),
    );
    // a hub and 2,000 peers: every idle association goes, both ends
    let n = 2001u32;
    let mut net = SimNet::new(n as usize, cfg(), lan());
    let empty = net.node(0).memory_bytes();
    for from in 1..n {
        net.send(from, 0, CHANNEL_REQUEST, meta(from), vec![1; 300]);
    }
    let (mut delivered, mut failed) = (0, Vec::new());
    assert!(net.run_until(5 * SECOND, |net| {
        drain(net, 0, &mut delivered, &mut failed);
        delivered == n as usize - 1
    }));
    let busy = net.node(0).memory_bytes();
    let tags = net.node(0).association(&1).unwrap();
    assert_eq!(net.node(0).peer_count(), n as usize - 1);
    // the idle timeout and the exchange: then nothing is left to happen
    assert!(net.run_for(cfg().idle_timeout + 5 * SECOND), "timers left");
    assert_eq!(net.node(0).peer_count(), 0, "the hub freed every peer");
    for i in 1..n {
        assert_eq!(net.node(i).peer_count(), 0, "node {i} kept its peer");
    }
    let (shut, closed) = net.node(0).shutdown_counts();
    let after = net.node(0).memory_bytes();
    eprintln!(
        "2000 idle peers: hub {busy} bytes before the idle timeout, {after} after \
         ({shut} shutdowns, {closed} ended tags remembered; empty {empty})"
    );
    assert_eq!(shut, n as u64 - 1);
    assert!(after < busy / 4, "{busy} -> {after}");
    drain(&mut net, 0, &mut delivered, &mut failed);
    assert!(failed.is_empty(), "{failed:?}");
    // the next message opens a new association, with new tags
    exchange(&mut net, 10);
    let again = net.node(0).association(&1).unwrap();
    assert!(again.0 != tags.0 && again.1 != tags.1);
}

/// Node 0 shuts the association down while node 1 (descheduled) has a
/// message for it, and node 0 queues one meanwhile: node 1 ignores the
/// SHUTDOWN, its DATA takes node 0 back, both messages arrive once, and
/// the association is shut down later when both are quiet.
#[test]
fn a_peer_with_something_to_say_keeps_the_association_and_nothing_is_lost() {
    let _watchdog = common::watchdog(
        "proto_shutdown::a_peer_with_something_to_say_keeps_the_association_and_nothing_is_lost",
        Duration::from_secs(120),
    );
    let idle = cfg().idle_timeout;
    let mut net = SimNet::new(2, cfg(), lan());
    // node 1 never shuts down itself
    let never = ProtoConfig {
        idle_timeout: 0,
        ..cfg()
    };
    *net.node(1) = Protocol::new(never, &[9; 32]);
    exchange(&mut net, 3);
    let tags = net.node(0).association(&1).unwrap();
    // just before node 0's idle timer: node 1 stops running for a while
    net.advance(idle - MILLIS);
    let now = net.now();
    net.deschedule(1, now.plus(200 * MILLIS));
    // node 0 sends its SHUTDOWN (and resends it), then queues a message
    // (held back while the SHUTDOWN is out)
    assert!(
        net.run_until(100 * MILLIS, |net| net.node(0).association(&1).is_none()),
        "no SHUTDOWN went"
    );
    net.send(0, 1, CHANNEL_REQUEST, meta(100), vec![3; 100]);
    // node 1, asleep, has a message too
    net.send(1, 0, CHANNEL_REQUEST, meta(200), vec![4; 100]);
    let (mut delivered, mut failed) = (0, Vec::new());
    assert!(net.run_until(5 * SECOND, |net| {
        drain(net, 0, &mut delivered, &mut failed);
        drain(net, 1, &mut delivered, &mut failed);
        delivered == 2
    }));
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(net.node(0).association(&1), Some(tags), "kept");
    net.run_for(SECOND);
    drain(&mut net, 0, &mut delivered, &mut failed);
    drain(&mut net, 1, &mut delivered, &mut failed);
    assert_eq!(delivered, 2, "nothing twice");
    // quiet again: shut down for good, both ends free
    assert!(net.run_for(2 * idle), "timers left");
    assert_eq!(net.node(0).peer_count(), 0);
    assert_eq!(net.node(1).peer_count(), 0);
    assert!(failed.is_empty(), "{failed:?}");
}

/// Under loss the exchange still ends with both ends free (a lost
/// SHUTDOWN is resent; a lost SHUTDOWN_ACK is made up for by the answer
/// of an end that freed already), and later messages all arrive.
#[test]
fn shutdown_completes_under_loss_without_losing_a_message() {
    let _watchdog = common::watchdog(
        "proto_shutdown::shutdown_completes_under_loss_without_losing_a_message",
        Duration::from_secs(120),
    );
    for seed in 1..=10 {
        let lossy = FaultConfig {
            loss: 0.3,
            dup: 0.05,
            jitter: 20 * MICROS,
            seed,
            ..lan()
        };
        let mut net = SimNet::new(2, cfg(), lossy);
        for round in 0..3 {
            exchange(&mut net, 5);
            assert!(
                net.run_for(cfg().idle_timeout + 30 * SECOND),
                "seed {seed} round {round}: timers left"
            );
            assert_eq!(net.node(0).peer_count(), 0, "seed {seed}");
            assert_eq!(net.node(1).peer_count(), 0, "seed {seed}");
        }
    }
}

/// SHUTDOWN and SHUTDOWN_ACK from outside the association change nothing:
/// a wrong tag, another address, a forged SHUTDOWN_ACK, a replayed
/// SHUTDOWN (a nonce seen before, even one refused while busy).
#[test]
fn forged_and_replayed_shutdowns_change_nothing() {
    let _watchdog = common::watchdog(
        "proto_shutdown::forged_and_replayed_shutdowns_change_nothing",
        Duration::from_secs(120),
    );
    let mut net = SimNet::new(8, cfg(), lan());
    exchange(&mut net, 3);
    let (t0, t1) = net.node(0).association(&1).unwrap(); // node 0's tag, node 1's
    let now = net.now();
    let p = net.node(1);
    // wrong tags, node 0's own tag, neighbours of the right one
    for vtag in [t0, t1 ^ 1, t1.wrapping_add(1), 1, u64::MAX] {
        p.handle_datagram(now, 0, &shutdown(vtag, false, 1));
    }
    // the right tag from other addresses
    for from in 2..8 {
        p.handle_datagram(now, from, &shutdown(t1, false, 1));
    }
    // SHUTDOWN_ACKs nobody asked for
    for vtag in [t0, t1] {
        for nonce in 0..4 {
            net.node(1)
                .handle_datagram(now, 0, &shutdown(vtag, true, nonce));
            net.node(0)
                .handle_datagram(now, 1, &shutdown(vtag, true, nonce));
        }
    }
    assert_eq!(net.node(1).association(&0), Some((t1, t0)));
    assert_eq!(net.node(0).association(&1), Some((t0, t1)));
    assert_eq!(net.node(1).peer_count(), 1);
    // a SHUTDOWN (as if from node 0) while node 1 has a message in flight:
    // ignored, and its nonce is spent
    net.send(1, 0, CHANNEL_REQUEST, meta(1), vec![1; 10]);
    let now = net.now();
    net.node(1).handle_datagram(now, 0, &shutdown(t1, false, 5));
    let (mut delivered, mut failed) = (0, Vec::new());
    assert!(net.run_until(SECOND, |net| {
        drain(net, 0, &mut delivered, &mut failed);
        delivered == 1 && net.node(1).is_idle()
    }));
    // replayed when node 1 is idle: dropped, as is an older nonce
    let now = net.now();
    for nonce in [5, 4, 1] {
        net.node(1)
            .handle_datagram(now, 0, &shutdown(t1, false, nonce));
    }
    assert_eq!(net.node(1).association(&0), Some((t1, t0)));
    assert_eq!(net.node(1).shutdown_counts().0, 0);
    exchange(&mut net, 2);
    assert!(failed.is_empty(), "{failed:?}");
}

/// 10,000 SHUTDOWNs from as many addresses, with random tags: no state,
/// answers bounded by the rate limit of unsolicited answers.
#[test]
fn a_flood_of_shutdowns_costs_no_state_and_bounded_answers() {
    let _watchdog = common::watchdog(
        "proto_shutdown::a_flood_of_shutdowns_costs_no_state_and_bounded_answers",
        Duration::from_secs(120),
    );
    let c = cfg();
    let mut p = Protocol::<u32>::new(c.clone(), &[3; 32]);
    let before = p.memory_bytes();
    let now = Instant(SECOND);
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for from in 0..10_000u32 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p.handle_datagram(now, from, &shutdown(x | 1, from % 2 == 0, x >> 3));
    }
    let mut buf = Vec::new();
    let mut answers = 0u64;
    while let Some(_to) = p.poll_transmit(&mut buf) {
        assert!(buf.len() <= 48, "{} bytes", buf.len());
        answers += 1;
    }
    p.handle_timeout(now);
    assert_eq!(p.peer_count(), 0);
    assert!(answers <= c.unsolicited_burst, "{answers}");
    // what grew is the outbox's buffers (one per answer, 96 bytes with the
    // batched outbox), kept for reuse: bounded by the answers' token bucket,
    // not by the flood, and a second flood a second later costs nothing more
    let after = p.memory_bytes();
    let now = now.plus(SECOND);
    for from in 0..10_000u32 {
        p.handle_datagram(now, 20_000 + from, &shutdown(from as u64 + 1, false, 1));
    }
    while p.poll_transmit(&mut buf).is_some() {}
    let again = p.memory_bytes();
    eprintln!("10000 forged SHUTDOWNs: {answers} answers, memory {before} -> {after} -> {again}");
    assert_eq!(p.peer_count(), 0);
    assert!(
        after <= before + 128 * c.unsolicited_burst as usize,
        "{before} -> {after}"
    );
    assert!(again <= after, "{after} -> {again}");
}

/// Plays an initiator by hand against `p` from `addr`: returns (our tag,
/// its tag, the COOKIE_ECHO).
fn handshake(p: &mut Protocol<u32>, now: Instant, addr: u32, my_tag: u64) -> (u64, u64, Vec<u8>) {
    let mut init = Vec::new();
    wire::encode_init(&mut init, &I, my_tag);
    p.handle_datagram(now, addr, &init);
    let mut buf = Vec::new();
    assert_eq!(p.poll_transmit(&mut buf), Some(addr));
    let Ok(Packet::InitAck {
        resp_tag, cookie, ..
    }) = wire::decode(&I, &buf)
    else {
        panic!("no INIT_ACK");
    };
    let mut echo = Vec::new();
    wire::encode_cookie_echo(&mut echo, &I, resp_tag, cookie);
    p.handle_datagram(now, addr, &echo);
    assert!(cookie_acked(p, my_tag), "the first echo is taken");
    assert_eq!(p.association(&addr), Some((resp_tag, my_tag)));
    (my_tag, resp_tag, echo)
}

/// Whether `p` sent a COOKIE_ACK to `my_tag` (drains what it sent).
fn cookie_acked(p: &mut Protocol<u32>, my_tag: u64) -> bool {
    let mut buf = Vec::new();
    let mut acked = false;
    while p.poll_transmit(&mut buf).is_some() {
        acked |= wire::decode(&I, &buf) == Ok(Packet::CookieAck { vtag: my_tag });
    }
    acked
}

/// A COOKIE_ECHO replayed within its lifetime after the association ended
/// does not bring it back: ended by the peer's ABORT, by a SHUTDOWN
/// exchange either end began, by the peer's death.
#[test]
fn a_cookie_echo_replayed_after_the_end_is_refused() {
    let _watchdog = common::watchdog(
        "proto_shutdown::a_cookie_echo_replayed_after_the_end_is_refused",
        Duration::from_secs(120),
    );
    let c = cfg();
    let mut p = Protocol::<u32>::new(c.clone(), &[4; 32]);
    let mut now = Instant(SECOND);
    let addr = 5;
    // ABORT
    let (mine, theirs, echo) = handshake(&mut p, now, addr, 0x1111);
    let mut abort = Vec::new();
    wire::encode_abort(&mut abort, &I, theirs);
    p.handle_datagram(now, addr, &abort);
    assert_eq!(p.association(&addr), None);
    now = now.plus(MILLIS);
    p.handle_datagram(now, addr, &echo);
    assert!(!cookie_acked(&mut p, mine), "re-created after ABORT");
    assert_eq!(p.association(&addr), None);

    // SHUTDOWN from the peer
    let (mine, theirs, echo) = handshake(&mut p, now, addr, 0x2222);
    p.handle_datagram(now, addr, &shutdown(theirs, false, 1));
    let mut buf = Vec::new();
    assert_eq!(p.poll_transmit(&mut buf), Some(addr));
    assert_eq!(
        wire::decode(&I, &buf),
        Ok(Packet::ShutdownAck {
            vtag: mine,
            nonce: 1
        })
    );
    assert_eq!(p.peer_count(), 0);
    p.handle_datagram(now, addr, &echo);
    assert!(!cookie_acked(&mut p, mine), "re-created after SHUTDOWN");
    assert_eq!(p.peer_count(), 0);

    // SHUTDOWN from us, after the idle timeout
    let (mine, theirs, echo) = handshake(&mut p, now, addr, 0x3333);
    now = now.plus(c.idle_timeout);
    p.handle_timeout(now);
    assert_eq!(p.poll_transmit(&mut buf), Some(addr));
    let Ok(Packet::Shutdown { vtag, nonce }) = wire::decode(&I, &buf) else {
        panic!("no SHUTDOWN after the idle timeout");
    };
    assert_eq!(vtag, mine);
    p.handle_datagram(now, addr, &shutdown(theirs, true, nonce));
    assert_eq!(p.peer_count(), 0);
    p.handle_datagram(now, addr, &echo);
    assert!(!cookie_acked(&mut p, mine), "re-created after our SHUTDOWN");

    // death: a message, never answered, for the peer timeout
    let (mine, _, echo) = handshake(&mut p, now, addr, 0x4444);
    p.send(now, addr, CHANNEL_REQUEST, meta(1), vec![1; 10]);
    for _ in 0..200 {
        now = now.plus(c.peer_timeout / 100);
        p.handle_timeout(now);
        while p.poll_transmit(&mut buf).is_some() {}
    }
    assert!(p.is_dead(&addr));
    p.handle_datagram(now, addr, &echo);
    assert!(!cookie_acked(&mut p, mine), "re-created after death");
    assert!(p.is_dead(&addr));
    assert!(
        now.since(Instant(SECOND)) < c.cookie_lifetime,
        "within the lifetime"
    );

    // a fresh handshake still works
    handshake(&mut p, now, addr, 0x5555);
    assert!(!p.is_dead(&addr));
}
