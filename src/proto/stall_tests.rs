//! A path that drops everything without an error while large messages are
//! striped (issue 38 items 4 and 8): the stall it makes at the target.

use super::rails_tests::{cfg, p, Net};
use super::*;
use crate::time::{Nanos, MILLIS};
use crate::wire::{Category, MsgKind, CHANNEL_REQUEST};

const MIB: usize = 1 << 20;

fn send_len(net: &mut Net, k: u32, len: usize) {
    let meta = MsgMeta::new(MsgKind::User, Category::Long, 1, &[k]);
    net.p[0].send(net.now, 1, CHANNEL_REQUEST, meta, vec![k as u8; len]);
}

/// The longest gap between deliveries at the target from `from` on.
fn longest_gap(net: &Net, from: Instant) -> (Nanos, Instant) {
    let mut last = from;
    let mut worst = (0, from);
    for &t in net.delivered_at.iter().filter(|&&t| t >= from) {
        if t.since(last) > worst.0 {
            worst = (t.since(last), last);
        }
        last = t;
    }
    worst
}

/// One run: two 200 Mbit/s subnets (`delay` each way more), `n` 1 MiB
/// messages queued, the link between `cut` cut silently 200 ms in.
fn run(seed: u64, delay: Nanos, routed: bool, cut: (u32, u32), n: u32, dg: usize) -> Nanos {
    let rate = 25_000_000; // 200 Mbit/s each
    let mut net = Net::new(
        seed,
        ProtoConfig {
            stripe_min: 128 << 10,
            max_datagram: dg,
            ..cfg()
        },
    );
    net.rate = [rate, rate];
    net.delay = [delay, delay];
    net.routed = routed;
    net.send(0);
    net.run_for(300 * MILLIS);
    for k in 1..=n {
        send_len(&mut net, k, MIB);
    }
    net.run_for(200 * MILLIS);
    let cut_at = net.now;
    let before = net.p[0].paths_of(&1);
    let rto = net.p[0].path_rto(&1, &p(if cut.0 >= 10 { 1 } else { 0 }, cut.1));
    net.link(cut.0, cut.1, false);
    if routed {
        // (routed by destination: the link to the peer's address is cut
        // whatever rail sends)
        let other = if cut.0 < 10 { cut.0 + 10 } else { cut.0 - 10 };
        net.link(other, cut.1, false);
    }
    let mut events = Vec::new();
    while let Some(_) = net.p[0].take_path_event() {}
    while net.delivered.len() < (n + 1) as usize && net.now.since(cut_at) < 20_000 * MILLIS {
        net.run_for(MILLIS);
        while let Some(e) = net.p[0].take_path_event() {
            events.push((
                net.now.since(cut_at) / MILLIS,
                e.path.rail.0,
                e.path.remote,
                e.change,
            ));
        }
    }
    let (gap, at) = longest_gap(&net, cut_at);
    if std::env::var("STALL_TRACE").is_ok() {
        for b in 0..60u64 {
            let lo = cut_at.plus(b * 10 * MILLIS);
            let hi = lo.plus(10 * MILLIS);
            let inb = |t: &Instant| *t >= lo && *t < hi;
            let mut per: Vec<(u8, u32, usize)> = Vec::new();
            for d in net.data_sent.iter().filter(|d| inb(&d.0) && d.1 == 0) {
                match per
                    .iter_mut()
                    .find(|x| x.0 == d.2.rail.0 && x.1 == d.2.remote)
                {
                    Some(x) => x.2 += 1,
                    None => per.push((d.2.rail.0, d.2.remote, 1)),
                }
            }
            let dl = net.delivered_at.iter().filter(|t| inb(t)).count();
            println!("  {:4} ms: data {per:?} delivered {dl}", b * 10);
        }
    }
    let brief = |v: &[super::path::PathReport<u32>]| {
        v.iter()
            .filter(|r| r.state != PathState::Unconfirmed)
            .map(|r| {
                (
                    r.rail.0,
                    r.remote,
                    r.state,
                    r.current,
                    r.srtt.map(|s| s / 1000),
                )
            })
            .collect::<Vec<_>>()
    };
    println!(
        "seed {seed} dg {dg} delay {} routed {routed} cut {cut:?} rto {rto:?}: longest gap {} ms from {} ms after \
         the cut; events {events:?}; before {:?}",
        delay / MILLIS,
        gap / MILLIS,
        at.since(cut_at) / MILLIS,
        brief(&before),
    );
    net.assert_exactly_once(n + 1);
    gap
}

#[test]
fn stall_trace() {
    if let Ok(v) = std::env::var("STALL_TRACE") {
        let c: Vec<u32> = v.split(',').map(|x| x.parse().unwrap()).collect();
        run(
            31,
            c[0] as u64 * MILLIS,
            c[1] != 0,
            (c[2], c[3]),
            12,
            c[4] as usize,
        );
    }
}

#[test]
fn stall_experiment() {
    for (delay, routed, cut, dg) in [
        (0, false, (0, 1), 1472),
        (0, false, (10, 11), 1472),
        (10 * MILLIS, false, (0, 1), 1472),
        (10 * MILLIS, false, (10, 11), 1472),
        (10 * MILLIS, true, (0, 1), 1472),
        (10 * MILLIS, true, (0, 11), 1472),
        (0, false, (0, 1), 65507),
        (0, false, (10, 11), 65507),
        (5 * MILLIS, false, (0, 1), 65507),
        (5 * MILLIS, false, (10, 11), 65507),
    ] {
        for seed in [31u64, 32] {
            run(seed, delay, routed, cut, 12, dg);
        }
    }
}
