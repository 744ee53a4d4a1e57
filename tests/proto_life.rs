//! Peer lifetime and memory over the simulated network: a dead peer is
//! found by time (the peer timeout), not by a retry count; everything queued
//! for it and every new message fails at once; a restarted peer is usable
//! again; a peer's buffer budget bounds what it makes us hold (claimed as
//! data arrives, not as a header promises); dead peers are reclaimed; and
//! what 10,000 peers cost.

mod common;

use std::collections::HashSet;
use std::time::Duration;

use ramp::proto::{Event, FailReason, MsgId, ProtoConfig, Protocol};
use ramp::sim::{lan, FaultConfig, SimNet};
use ramp::time::{Nanos, MICROS, MILLIS};
use ramp::wire::{
    self, Category, Common, Integrity, MsgKind, MsgMeta, CHANNEL_REPLY, CHANNEL_REQUEST,
};

const SECOND: Nanos = 1000 * MILLIS;

fn meta(k: u32) -> MsgMeta {
    MsgMeta::new(MsgKind::User, Category::Medium, 1, &[k])
}

/// Takes node `i`'s events: (delivered, failed ids with their reasons).
fn drain(net: &mut SimNet, i: u32, delivered: &mut usize, failed: &mut Vec<(MsgId, FailReason)>) {
    while let Some(ev) = net.poll_event(i) {
        match ev {
            Event::Delivered { .. } => *delivered += 1,
            Event::Failed { id, reason, .. } => failed.push((id, reason)),
        }
    }
}

/// Finding 7: 3,552 messages queued for a peer that died all fail within
/// the peer timeout and one RTO of its death (not 16 per 28 s); new ones
/// fail at once; the peer restarted is usable again after a handshake.
#[test]
fn dead_peer_fails_everything_by_the_timeout_then_new_sends_at_once_then_restart() {
    let _watchdog = common::watchdog(
        "proto_life::dead_peer_fails_everything_by_the_timeout_then_new_sends_at_once_then_restart",
        Duration::from_secs(180),
    );
    let cfg = ProtoConfig::default();
    assert_eq!(cfg.peer_timeout, 10 * SECOND);
    let mut net = SimNet::new(2, cfg.clone(), lan());
    let (mut delivered, mut failed) = (0, Vec::new());
    for k in 0..5 {
        net.send(0, 1, CHANNEL_REQUEST, meta(k), vec![7; 40]);
        net.send(1, 0, CHANNEL_REQUEST, meta(k), vec![7; 40]);
    }
    assert!(net.run_until(SECOND, |net| {
        drain(net, 0, &mut delivered, &mut failed);
        drain(net, 1, &mut delivered, &mut failed);
        delivered == 10 && net.node(0).is_idle() && net.node(1).is_idle()
    }));
    // the idle association sends nothing (no heartbeats without a reason)
    assert!(net.run_for(60 * SECOND), "an idle pair keeps timers");

    // SIGKILL: node 1 vanishes; node 0 queues 3,552 messages for it.
    net.set_down(1, true);
    let t0 = net.now();
    let ids: HashSet<MsgId> = (0..3552u32)
        .map(|k| {
            let ch = if k % 4 == 0 {
                CHANNEL_REPLY
            } else {
                CHANNEL_REQUEST
            };
            net.send(0, 1, ch, meta(k), vec![1; 64 + (k as usize % 300)])
        })
        .collect();
    let mut first = None;
    assert!(net.run_until(60 * SECOND, |net| {
        drain(net, 0, &mut delivered, &mut failed);
        if first.is_none() && !failed.is_empty() {
            first = Some(net.now());
        }
        failed.len() >= ids.len()
    }));
    let last = net.now().since(t0);
    let first = first.unwrap().since(t0);
    eprintln!(
        "3552 messages to a dead peer: first failed after {} ms, last after {} ms \
         (peer timeout {} ms)",
        first / MILLIS,
        last / MILLIS,
        cfg.peer_timeout / MILLIS
    );
    assert!(last >= cfg.peer_timeout, "declared dead too soon: {last}");
    assert!(
        last <= cfg.peer_timeout + cfg.rto_max,
        "took {} ms",
        last / MILLIS
    );
    let got: HashSet<MsgId> = failed
        .iter()
        .map(|&(id, r)| {
            assert_eq!(r, FailReason::PeerUnreachable);
            id
        })
        .collect();
    assert_eq!(got, ids, "each once");
    assert_eq!(failed.len(), ids.len());
    assert!(net.node(0).is_dead(&1));
    assert_eq!(net.node(0).unfinished_to(&1), 0);
    let (died, _) = net.node(0).life_counts();
    assert_eq!(died, 1);

    // New messages fail at once, without any time passing.
    failed.clear();
    let t1 = net.now();
    for k in 0..10 {
        net.send(0, 1, CHANNEL_REQUEST, meta(k), vec![2; 10]);
    }
    drain(&mut net, 0, &mut delivered, &mut failed);
    assert_eq!(failed.len(), 10);
    assert_eq!(net.now(), t1);
    assert!(failed
        .iter()
        .all(|&(_, r)| r == FailReason::PeerUnreachable));
    // some time later, still dead: still at once
    net.run_for(5 * SECOND);
    failed.clear();
    net.send(0, 1, CHANNEL_REPLY, meta(0), vec![3; 10]);
    drain(&mut net, 0, &mut delivered, &mut failed);
    assert_eq!(failed.len(), 1);

    // A new process at node 1's address: the handshake a send started
    // succeeds, the peer is alive again and messages flow both ways.
    *net.node(1) = Protocol::new(cfg.clone(), &[0x77; 32]);
    net.set_down(1, false);
    net.send(0, 1, CHANNEL_REQUEST, meta(0), vec![4; 10]);
    assert!(
        net.run_until(3 * SECOND, |net| net.node(0).association(&1).is_some()),
        "no new association"
    );
    assert!(!net.node(0).is_dead(&1));
    // the send that started it failed at once, like any to a dead peer
    drain(&mut net, 0, &mut delivered, &mut failed);
    assert_eq!(failed.len(), 2);
    failed.clear();
    delivered = 0;
    for k in 0..20 {
        net.send(0, 1, (k % 2) as u8, meta(k), vec![5; 100]);
        net.send(1, 0, CHANNEL_REQUEST, meta(k), vec![5; 100]);
    }
    assert!(net.run_until(5 * SECOND, |net| {
        drain(net, 0, &mut delivered, &mut failed);
        drain(net, 1, &mut delivered, &mut failed);
        delivered == 40
    }));
    assert!(failed.is_empty(), "{failed:?}");
}

/// A busy peer that answers is never declared dead, however long it takes
/// (here a receiver that never takes its requests refuses with NACKs for
/// three peer timeouts), and an unanswered heartbeat alone is enough to
/// kill a silent one.
#[test]
fn a_slow_but_answering_peer_lives_a_silent_one_dies() {
    let _watchdog = common::watchdog(
        "proto_life::a_slow_but_answering_peer_lives_a_silent_one_dies",
        Duration::from_secs(180),
    );
    let cfg = ProtoConfig {
        peer_timeout: SECOND,
        recv_depth: 1,
        nack_limit: 1_000_000,
        ..Default::default()
    };
    let mut net = SimNet::new(2, cfg.clone(), lan());
    let (mut delivered, mut failed) = (0, Vec::new());
    for k in 0..4 {
        net.send(0, 1, CHANNEL_REQUEST, meta(k), vec![1; 10]);
    }
    // node 1 never polls: its buffer of 1 is full, the rest are refused
    net.run_for(3 * cfg.peer_timeout);
    drain(&mut net, 0, &mut delivered, &mut failed);
    assert!(failed.is_empty(), "{failed:?}");
    assert!(!net.node(0).is_dead(&1));
    // now node 1 vanishes while node 0 still has something to say
    net.set_down(1, true);
    let t0 = net.now();
    assert!(net.run_until(10 * SECOND, |net| {
        drain(net, 0, &mut delivered, &mut failed);
        failed.len() == 3
    }));
    let took = net.now().since(t0);
    assert!(took <= cfg.peer_timeout + cfg.rto_max, "{took}");
    assert!(net.node(0).is_dead(&1));
}

/// A dead peer keeps a small state for a while (so that new messages to it
/// fail at once), then its slot is freed and reused.
#[test]
fn dead_peers_are_reclaimed_and_their_slots_reused() {
    let _watchdog = common::watchdog(
        "proto_life::dead_peers_are_reclaimed_and_their_slots_reused",
        Duration::from_secs(180),
    );
    let cfg = ProtoConfig {
        peer_timeout: 500 * MILLIS,
        ..Default::default()
    };
    let n = 41u32;
    let mut net = SimNet::new(n as usize, cfg.clone(), lan());
    let (mut delivered, mut failed) = (0, Vec::new());
    for to in 1..n {
        net.send(0, to, CHANNEL_REQUEST, meta(to), vec![1; 1000]);
    }
    assert!(net.run_until(SECOND, |net| {
        drain(net, 0, &mut delivered, &mut failed);
        (1..n).all(|i| {
            let mut d = 0;
            drain(net, i, &mut d, &mut failed);
            true
        }) && net.node(0).is_idle()
    }));
    let mem_before = net.node(0).memory_bytes();
    assert_eq!(net.node(0).peer_count(), 40);
    // half of them die while node 0 sends to them
    for to in (1..n).step_by(2) {
        net.set_down(to, true);
        net.send(0, to, CHANNEL_REQUEST, meta(to), vec![1; 5000]);
    }
    assert!(net.run_until(10 * SECOND, |net| {
        drain(net, 0, &mut delivered, &mut failed);
        failed.len() == 20
    }));
    assert_eq!(net.node(0).peer_count(), 40, "dead ones linger");
    assert!(net.node(0).is_dead(&1));
    net.run_for(cfg.peer_timeout * 7);
    assert_eq!(net.node(0).peer_count(), 20, "the dead are freed");
    assert!(!net.node(0).is_dead(&1));
    // they come back (new processes) and send: the freed slots are reused
    for to in (1..n).step_by(2) {
        *net.node(to) = Protocol::new(cfg.clone(), &[to as u8; 32]);
        net.set_down(to, false);
        net.send(to, 0, CHANNEL_REQUEST, meta(to), vec![1; 100]);
    }
    delivered = 0;
    assert!(net.run_until(2 * SECOND, |net| {
        drain(net, 0, &mut delivered, &mut failed);
        delivered == 20
    }));
    assert_eq!(net.node(0).peer_count(), 40);
    net.run_for(SECOND);
    let mem_after = net.node(0).memory_bytes();
    // the slots were reused (the peer count is back to 40 in 40 slots);
    // what grew is the outbox's buffer, which keeps the capacity of the
    // burst of twenty 5000-byte messages
    assert!(
        mem_after <= mem_before + 200 * 1024,
        "{mem_before} -> {mem_after}"
    );
    // forget: unmapping the last entry frees an idle peer's state
    assert!(net.node(0).forget(&2));
    assert_eq!(net.node(0).peer_count(), 39);
    assert!(!net.node(0).forget(&2), "nothing left to forget");
}

/// Finding 4: a sender that claims 1 MiB in its first fragment costs the
/// receiver what it sent, not what it claimed; out-of-order packets beyond
/// the peer's budget are dropped (and counted), not held.
#[test]
fn held_packets_and_reassembly_cost_what_arrived_within_the_budget() {
    let _watchdog = common::watchdog(
        "proto_life::held_packets_and_reassembly_cost_what_arrived_within_the_budget",
        Duration::from_secs(180),
    );
    let cfg = ProtoConfig {
        peer_buffer: 256 * 1024,
        ..Default::default()
    };
    let mut net = SimNet::new(2, cfg.clone(), lan());
    let now = net.now();
    net.node(0).connect(now, 1);
    assert!(net.run_until(SECOND, |net| {
        net.node(1).association(&0).is_some() && net.node(0).association(&1).is_some()
    }));
    let (_, vtag) = net.node(0).association(&1).unwrap();
    let integ = Integrity::default();
    let data = |seq: u32, msg_len: u32, off: u32, len: usize| {
        let c = Common {
            vtag,
            channel: CHANNEL_REQUEST,
            epoch: 0,
            seq,
            ..Default::default()
        };
        let mut d = Vec::new();
        wire::encode_data(&mut d, &integ, &c, &meta(0), msg_len, off, &vec![9; len]);
        d
    };
    let base = net.node(1).memory_bytes();
    let now = net.now();
    // the first fragment of a message that claims 1 MiB, 1000 bytes sent
    net.node(1)
        .handle_datagram(now, 0, &data(0, 1 << 20, 0, 1000));
    let claimed = net.node(1).memory_bytes() - base;
    eprintln!("first fragment of 1000 bytes claiming 1 MiB: {claimed} bytes");
    assert!(claimed < 1000 + 4096, "{claimed} bytes for 1000 sent");
    // 63 packets of 60,000 bytes after a gap (seq 1 never comes)
    for seq in 2..=64 {
        net.node(1)
            .handle_datagram(now, 0, &data(seq, 1 << 20, 1000, 60_000));
    }
    let held = net.node(1).memory_bytes() - base;
    let (_, dropped) = net.node(1).life_counts();
    eprintln!(
        "63 out-of-order packets of 60000 bytes, budget {}: holds {held} bytes, {dropped} dropped",
        cfg.peer_buffer
    );
    assert!(held <= cfg.peer_buffer + 8192, "{held}");
    assert!(dropped >= 63 - 5, "{dropped}");
    // the reassembly grows as data arrives (reply channel), at most doubling
    let reply = |seq: u32, off: u32, len: usize| {
        let c = Common {
            vtag,
            channel: CHANNEL_REPLY,
            epoch: 0,
            seq,
            ..Default::default()
        };
        let mut d = Vec::new();
        wire::encode_data(&mut d, &integ, &c, &meta(0), 1 << 20, off, &vec![9; len]);
        d
    };
    let before = net.node(1).memory_bytes();
    net.node(1).handle_datagram(now, 0, &reply(0, 0, 1000));
    net.node(1).handle_datagram(now, 0, &reply(1, 1000, 60_000));
    let after = net.node(1).memory_bytes();
    eprintln!(
        "reassembly of 61000 bytes of a 1 MiB message: {} bytes",
        after - before
    );
    assert!(after < before + 2 * 61_000 + 8192, "{before} -> {after}");
}

/// 10,000 peers send to one hub under faults; what the hub and each sender
/// take, during and after (idle).
#[test]
fn memory_of_10000_peers_under_faults() {
    let _watchdog = common::watchdog(
        "proto_life::memory_of_10000_peers_under_faults",
        Duration::from_secs(300),
    );
    let sim = FaultConfig {
        loss: 0.02,
        dup: 0.01,
        reorder: 0.02,
        jitter: 10 * MICROS,
        seed: 4242,
        ..lan()
    };
    let senders = 10_000u32;
    let mut net = SimNet::new(senders as usize + 1, ProtoConfig::default(), sim);
    let empty = net.node(0).memory_bytes();
    for from in 1..=senders {
        net.send(from, 0, CHANNEL_REQUEST, meta(from), vec![1; 200]);
        net.send(from, 0, CHANNEL_REPLY, meta(from), vec![2; 3000]);
    }
    let (mut delivered, mut failed) = (0, Vec::new());
    let mut peak = 0;
    let mut steps = 0u64;
    assert!(net.run_until(60 * SECOND, |net| {
        drain(net, 0, &mut delivered, &mut failed);
        steps += 1;
        if steps.is_multiple_of(500) {
            peak = peak.max(net.node(0).memory_bytes());
        }
        delivered == 2 * senders as usize
    }));
    assert!(failed.is_empty());
    assert!(net.run_for(30 * SECOND), "the network goes idle");
    let hub = net.node(0).memory_bytes();
    let per_peer = (hub - empty) / senders as usize;
    let one = net.node(0).peer_memory_bytes(&1).unwrap();
    let sender = net.node(1).memory_bytes();
    eprintln!(
        "10000 peers: hub {hub} bytes idle ({per_peer} per peer; one peer's slot and \
         buffers {one}), peak seen under traffic {peak}; a sender with one peer {sender} bytes"
    );
    assert_eq!(net.node(0).peer_count(), senders as usize);
    assert!(per_peer <= 4096, "{per_peer} bytes per idle peer");
    assert!(one <= 2048, "{one}");
}
