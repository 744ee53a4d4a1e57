//! The protocol core over the simulated network: exactly-once, in-order
//! delivery per channel whatever the network does.

use ramp::proto::{Event, ProtoConfig};
use ramp::sim::{SimConfig, SimNet};
use ramp::time::{MICROS, MILLIS};
use ramp::wire::{Category, MsgKind, MsgMeta, CHANNEL_REPLY, CHANNEL_REQUEST};

fn meta(seq: u32, from: u32) -> MsgMeta {
    MsgMeta::new(MsgKind::User, Category::Medium, 1, &[from, seq])
}

fn payload(seq: u32, from: u32, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32 ^ seq ^ from.rotate_left(8)) as u8)
        .collect()
}

/// Every node sends `per_pair` messages to every other node on both channels;
/// checks that each arrives exactly once, in order per (sender, channel), intact.
fn all_to_all(
    n: u32,
    per_pair: u32,
    sim: SimConfig,
    proto: ProtoConfig,
    len: impl Fn(u32) -> usize,
) -> SimNet {
    let mut net = SimNet::new(n as usize, proto, sim);
    for k in 0..per_pair {
        for from in 0..n {
            for to in 0..n {
                if from != to {
                    for ch in [CHANNEL_REQUEST, CHANNEL_REPLY] {
                        let m = meta(k, from);
                        net.send(from, to, ch, m, payload(k, from, len(k)));
                    }
                }
            }
        }
        // let the network move a little between bursts
        for _ in 0..50 {
            if !net.step() {
                break;
            }
        }
    }
    // next expected message index per (receiver, sender, channel)
    let mut next = vec![0u32; (n * n * 2) as usize];
    let total = per_pair as u64 * n as u64 * (n as u64 - 1) * 2;
    let mut got = 0u64;
    let mut drain = |net: &mut SimNet, got: &mut u64| {
        for to in 0..n {
            while let Some(ev) = net.poll_event(to) {
                match ev {
                    Event::Delivered {
                        from,
                        channel,
                        meta,
                        payload: p,
                    } => {
                        let idx = ((to * n + from) * 2 + channel as u32) as usize;
                        let k = meta.args()[1];
                        assert_eq!(meta.args()[0], from);
                        assert_eq!(
                            k, next[idx],
                            "out of order or duplicate at {to} from {from} ch {channel}"
                        );
                        assert_eq!(p, payload(k, from, len(k)), "payload damaged");
                        next[idx] += 1;
                        *got += 1;
                    }
                    Event::Failed { .. } => panic!("message failed: {ev:?}"),
                }
            }
        }
    };
    let idle = net.run_until(600_000 * MILLIS, |net| {
        drain(net, &mut got);
        got == total && (0..n).all(|i| net.node(i).is_idle())
    });
    assert!(
        idle,
        "did not finish: {got}/{total} delivered; sim {:?}",
        net.stats
    );
    assert_eq!(got, total);
    net
}

#[test]
fn clean_network_two_peers() {
    let net = all_to_all(2, 200, SimConfig::default(), ProtoConfig::default(), |_| 16);
    assert_eq!(net.stats.lost, 0);
}

#[test]
fn lossy_network_many_peers() {
    let sim = SimConfig {
        loss: 0.1,
        dup: 0.05,
        corrupt: 0.02,
        reorder: 0.1,
        jitter: 30 * MICROS,
        seed: 7,
        ..Default::default()
    };
    let mut net = all_to_all(6, 60, sim, ProtoConfig::default(), |k| {
        (k as usize * 37) % 300
    });
    let s: u64 = (0..6).map(|i| net.node(i).stats().duplicates).sum();
    let c: u64 = (0..6).map(|i| net.node(i).stats().corrupt).sum();
    assert!(
        s > 0 && c > 0,
        "faults were injected and seen: dup {s} corrupt {c}"
    );
}

#[test]
fn fragmented_messages_under_loss() {
    let sim = SimConfig {
        loss: 0.05,
        dup: 0.02,
        reorder: 0.05,
        seed: 3,
        ..Default::default()
    };
    let proto = ProtoConfig {
        max_datagram: 1500,
        ..Default::default()
    };
    all_to_all(3, 20, sim, proto, |k| 1 + (k as usize * 7919) % 40_000);
}
