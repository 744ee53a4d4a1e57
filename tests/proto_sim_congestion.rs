//! Congestion control and pacing (`proto/congestion.rs`) over the
//! simulator's bottleneck links (`sim::Bottleneck`: a rate, a drop-tail
//! queue): one sender at 100, 200 and 400 Mbit/s, four senders into one
//! receiver (incast), two independent flows through one link, a link with
//! 1% random loss besides. Every message is delivered exactly once, in
//! order; goodput, retransmitted share and fairness are virtual-time
//! results, deterministic per seed, asserted with margins and printed
//! (`--nocapture`). `RAMP_SIM_SEED=n` replays one seed.

mod common;
#[path = "common/sim.rs"]
mod sim;

use ramp::sim::{seeds, Bottleneck};
use sim::*;

/// Bytes of each bulk message (an Xfer of 64 KiB).
const LEN: usize = 65_536;
/// Messages each flow keeps outstanding (its credits: 4 MiB).
const CREDITS: u64 = 64;

/// One bulk flow: `from` keeps `CREDITS` messages of `LEN` bytes to `to`
/// outstanding, as an application with credits does (a credit comes
/// back when its message is delivered).
struct Flow {
    from: u32,
    to: u32,
    sent: u64,
    delivered: u64,
    /// Bytes delivered inside the measured interval.
    measured: u64,
}

struct Outcome {
    /// Goodput of each flow over the measured interval, bytes/s.
    goodput: Vec<f64>,
    /// DATA packets retransmitted / datagrams the bottleneck carried.
    retransmitted: f64,
    stats: ramp::sim::BottleneckStats,
}

/// Runs `flows` (from, to) over `net` (its bottleneck `link` set) for
/// `warmup` then `measure` of virtual time, then lets everything finish:
/// every message delivered once, in order, none failed.
fn run(
    net: &mut SimNet,
    link: usize,
    pairs: &[(u32, u32)],
    warmup: Nanos,
    measure: Nanos,
) -> Outcome {
    let mut flows: Vec<Flow> = pairs
        .iter()
        .map(|&(from, to)| Flow {
            from,
            to,
            sent: 0,
            delivered: 0,
            measured: 0,
        })
        .collect();
    let start = net.now();
    let (m0, m1) = (start.plus(warmup), start.plus(warmup + measure));
    let mut sending = true;
    let mut warm_drops = None;
    let end = m1.plus(120 * SECOND);
    loop {
        if net.now() >= m1 {
            sending = false;
        }
        if net.now() >= m0 && warm_drops.is_none() {
            warm_drops = Some(net.link(link).stats.dropped);
        }
        if sending {
            for f in flows.iter_mut() {
                while f.sent - f.delivered < CREDITS {
                    let k = f.sent as u32;
                    net.send(
                        f.from,
                        f.to,
                        CHANNEL_REQUEST,
                        meta(f.from, k, LEN),
                        payload(f.from, k, CHANNEL_REQUEST, LEN),
                    );
                    f.sent += 1;
                }
            }
        }
        let receivers: HashSet<u32> = flows.iter().map(|f| f.to).collect();
        for &r in &receivers {
            while let Some(ev) = net.poll_event(r) {
                match ev {
                    Event::Delivered {
                        from,
                        meta,
                        payload: p,
                        ..
                    } => {
                        let f = flows
                            .iter_mut()
                            .find(|f| f.from == from && f.to == r)
                            .expect("a flow's message");
                        let k = meta.args()[1] as u64;
                        assert_eq!(k, f.delivered, "flow {from}->{r}: in order, once");
                        assert_eq!(p, payload(from, k as u32, CHANNEL_REQUEST, LEN));
                        f.delivered += 1;
                        let now = net.now();
                        if now >= m0 && now < m1 {
                            f.measured += LEN as u64;
                        }
                    }
                    other => panic!("{other:?}"),
                }
            }
        }
        for f in &flows {
            if let Some(ev) = net.poll_event(f.from) {
                panic!("sender {}: {ev:?}", f.from);
            }
        }
        if !sending && flows.iter().all(|f| f.delivered == f.sent) {
            break;
        }
        assert!(net.now() < end, "not all delivered");
        assert!(
            net.step(),
            "the network went idle with messages undelivered"
        );
    }
    let secs = measure as f64 / SECOND as f64;
    // bytes sent again: every byte the senders sent but the first
    // transmissions of DATA (their few ACKs counted too: an over-estimate)
    let (mut all, mut first) = (0, 0);
    for f in &flows {
        let s = net.node(f.from).stats();
        all += s.total_bytes_sent;
        first += s.request_total_bytes_sent.iter().sum::<u64>();
    }
    let stats = net.link(link).stats;
    println!("  queue drops in the warm-up {:?}", warm_drops);
    Outcome {
        goodput: flows.iter().map(|f| f.measured as f64 / secs).collect(),
        retransmitted: (all - first) as f64 / first.max(1) as f64,
        stats,
    }
}

/// Jain's fairness index of `x`.
fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let q: f64 = x.iter().map(|v| v * v).sum();
    s * s / (x.len() as f64 * q)
}

fn report(name: &str, seed: u64, rate: u64, o: &Outcome, net: &mut SimNet, senders: &[u32]) {
    let total: f64 = o.goodput.iter().sum();
    let shares: Vec<String> = o
        .goodput
        .iter()
        .map(|g| format!("{:.2}", g / rate as f64))
        .collect();
    let cc: Vec<String> = senders
        .iter()
        .map(|&s| {
            let st = *net.node(s).stats();
            format!(
                "node {s}: reductions {} random {} timeouts {} undone {} paced {}",
                st.cc_reductions, st.cc_random_losses, st.cc_timeouts, st.cc_undone, st.cc_paced
            )
        })
        .collect();
    println!(
        "{name} seed {seed}: goodput/rate {:.3} (shares {}), Jain {:.3}, retransmitted {:.2}%, \
         queue drops {} max queue delay {:.1} ms mean {:.1} ms; {}",
        total / rate as f64,
        shares.join(" "),
        jain(&o.goodput),
        100.0 * o.retransmitted,
        o.stats.dropped,
        o.stats.max_queue_delay as f64 / MILLIS as f64,
        o.stats.sum_queue_delay as f64 / o.stats.datagrams.max(1) as f64 / MILLIS as f64,
        cc.join("; ")
    );
    let dups: u64 = (0..net.len() as u32)
        .map(|i| net.node(i).stats().duplicates_dropped)
        .sum();
    let retx: u64 = senders
        .iter()
        .map(|&s| net.node(s).stats().packets_retransmitted)
        .sum();
    println!(
        "  retransmitted {retx}, duplicates at receivers {dups}, queue drops {}, datagrams {}",
        o.stats.dropped, o.stats.datagrams
    );
}

fn net(n: usize, seed: u64, loss: f64) -> SimNet {
    SimNet::new(
        n,
        ProtoConfig::default(),
        FaultConfig {
            loss,
            seed,
            ..lan()
        },
    )
}

#[test]
fn one_sender_fills_a_link_of_100_200_400_mbit() {
    let _watchdog = common::watchdog("proto_sim_congestion::one_sender", Duration::from_secs(300));
    for seed in seeds(2) {
        for mbit in [100, 200, 400] {
            let mut net = net(2, seed, 0.0);
            let b = Bottleneck::shaped_mbit(mbit);
            let rate = b.rate;
            let link = net.bottleneck(b, |_, to| to == 1);
            let o = run(&mut net, link, &[(0, 1)], SECOND / 2, SECOND);
            report(
                &format!("one sender {mbit} Mbit/s"),
                seed,
                rate,
                &o,
                &mut net,
                &[0],
            );
            assert!(
                o.goodput[0] >= 0.85 * rate as f64,
                "seed {seed} {mbit} Mbit/s"
            );
            assert!(o.retransmitted <= 0.03, "seed {seed} {mbit} Mbit/s");
        }
    }
}

#[test]
fn four_senders_into_one_receiver_share_its_link() {
    let _watchdog = common::watchdog("proto_sim_congestion::incast", Duration::from_secs(300));
    for seed in seeds(2) {
        let mut net = net(5, seed, 0.0);
        let b = Bottleneck::shaped_mbit(200);
        let rate = b.rate;
        let link = net.bottleneck(b, |_, to| to == 4);
        let o = run(
            &mut net,
            link,
            &[(0, 4), (1, 4), (2, 4), (3, 4)],
            SECOND / 2,
            2 * SECOND,
        );
        report(
            "incast 4 -> 1, 200 Mbit/s",
            seed,
            rate,
            &o,
            &mut net,
            &[0, 1, 2, 3],
        );
        let total: f64 = o.goodput.iter().sum();
        assert!(total >= 0.85 * rate as f64, "seed {seed}");
        assert!(jain(&o.goodput) >= 0.9, "seed {seed}");
        // (not the 3% of one sender: four initial windows meet in a queue
        // of 15 datagrams, and four windows of a few datagrams each
        // overflow it now and then: 6.0% measured with the repair timers
        // (4.9% before them), 46 of its 64 queue drops the start's; the
        // figure moves by a point with any change of timing, so the bound
        // leaves one)
        assert!(o.retransmitted <= 0.07, "seed {seed}");
    }
}

#[test]
fn two_flows_through_one_link_each_get_a_share() {
    let _watchdog = common::watchdog("proto_sim_congestion::two_flows", Duration::from_secs(300));
    for seed in seeds(2) {
        // 0 -> 2 and 1 -> 3, both through one link
        let mut net = net(4, seed, 0.0);
        let b = Bottleneck::shaped_mbit(200);
        let rate = b.rate;
        let link = net.bottleneck(b, |from, to| from < 2 && to >= 2);
        let o = run(&mut net, link, &[(0, 2), (1, 3)], SECOND / 2, 2 * SECOND);
        report(
            "two flows, one 200 Mbit/s link",
            seed,
            rate,
            &o,
            &mut net,
            &[0, 1],
        );
        for (i, g) in o.goodput.iter().enumerate() {
            assert!(*g >= 0.4 * rate as f64, "seed {seed}: flow {i}");
        }
        assert!(o.retransmitted <= 0.03, "seed {seed}");
    }
}

/// Random loss (the fault injector's 1%) on a shaped link: taken as
/// random by Veno's rule when the flow holds little queue, it does not
/// collapse the window.
#[test]
fn a_link_with_one_percent_random_loss_keeps_most_of_its_rate() {
    let _watchdog = common::watchdog(
        "proto_sim_congestion::random_loss",
        Duration::from_secs(300),
    );
    for seed in seeds(2) {
        let mut net = net(2, seed, 0.01);
        let b = Bottleneck::shaped_mbit(200);
        let rate = b.rate;
        let link = net.bottleneck(b, |_, to| to == 1);
        let o = run(&mut net, link, &[(0, 1)], SECOND / 2, SECOND);
        report("200 Mbit/s + 1% loss", seed, rate, &o, &mut net, &[0]);
        assert!(o.goodput[0] >= 0.7 * rate as f64, "seed {seed}");
        assert!(o.retransmitted <= 0.03, "seed {seed}");
    }
}

/// Credits and the window together, both ways over two 100 Mbit/s links
/// with 5% random loss (ACKs lost too, the ones that would open the
/// window among them): each node keeps 32 requests of 64 KiB to the other
/// outstanding (a credit comes back with the reply, as in AM-2) and
/// answers each request with a short reply on the reply channel, which
/// shares the path's window with its own bulk requests. Nothing stalls
/// (the protocol's invariants, checked after every step, include that no
/// data the windows let go waits without a timer), every request and
/// reply arrives once (requests in order), every credit comes back, and a reply waits for the
/// link's queue, not behind the bulk requests' window.
#[test]
fn credits_and_windows_both_ways_under_loss_never_stall_and_replies_go_first() {
    let _watchdog = common::watchdog("proto_sim_congestion::both_ways", Duration::from_secs(300));
    const OUT: u64 = 32;
    for seed in seeds(2) {
        let mut net = net(2, seed, 0.05);
        let b = Bottleneck::shaped_mbit(100);
        let queue_delay = b.serialization(b.limit as usize);
        let l0 = net.bottleneck(b.clone(), |_, to| to == 1);
        let l1 = net.bottleneck(b, |_, to| to == 0);
        // per node: requests sent, replies received, requests answered
        let (mut sent, mut replied, mut answered) = ([0u64; 2], [0u64; 2], [0u64; 2]);
        // when each node's k-th request was delivered (to time its reply)
        let mut delivered_at: [Vec<Instant>; 2] = [Vec::new(), Vec::new()];
        let mut waits: Vec<Nanos> = Vec::new();
        let mut got: [HashSet<u64>; 2] = Default::default();
        let stop = net.now().plus(2 * SECOND);
        let end = stop.plus(600 * SECOND);
        loop {
            let sending = net.now() < stop;
            for i in 0..2u32 {
                let n = i as usize;
                if sending {
                    top_up(&mut net, i, i ^ 1, &mut sent[n], replied[n], OUT, |k| {
                        (meta(i, k, LEN), payload(i, k, CHANNEL_REQUEST, LEN))
                    });
                }
                while let Some(ev) = net.poll_event(i) {
                    let Event::Delivered {
                        from,
                        channel,
                        meta: m,
                        ..
                    } = ev
                    else {
                        panic!("seed {seed}: node {i}: {ev:?}");
                    };
                    let k = m.args()[1] as u64;
                    if channel == CHANNEL_REQUEST {
                        assert_eq!(k, answered[n], "seed {seed}: request once, in order");
                        answered[n] += 1;
                        delivered_at[from as usize].push(net.now());
                        let r = meta(i, k as u32, 16);
                        let p = payload(i, k as u32, CHANNEL_REPLY, 16);
                        net.send(i, from, CHANNEL_REPLY, r, p);
                    } else {
                        // once; in any order (`include/am.h`)
                        assert!(
                            k < sent[n] && got[n].insert(k),
                            "seed {seed}: reply {k} once"
                        );
                        replied[n] += 1;
                        waits.push(net.now().since(delivered_at[n][k as usize]));
                    }
                }
            }
            if !sending && replied == sent {
                break;
            }
            assert!(
                net.now() < end,
                "seed {seed}: stalled: sent {sent:?} replied {replied:?}"
            );
            assert!(net.step(), "seed {seed}: idle with replies owed");
        }
        waits.sort_unstable();
        let p99 = waits[waits.len() * 99 / 100];
        let max = *waits.last().unwrap();
        let ms = |n: Nanos| n as f64 / MILLIS as f64;
        let path = net.node(0).paths_report();
        println!(
            "both ways, 100 Mbit/s, 5% loss, seed {seed}: {} requests, every credit back; reply after its request: p99 {:.1} ms, max {:.1} ms (the queue holds {:.1} ms); queue drops {} {}; {}",
            sent[0] + sent[1],
            ms(p99),
            ms(max),
            ms(queue_delay),
            net.link(l0).stats.dropped,
            net.link(l1).stats.dropped,
            path.trim()
        );
        assert!(
            sent[0] > 100 && sent[1] > 100,
            "seed {seed}: both ways moved"
        );
        // a reply waits for the link's queue and a few repairs of lost
        // packets, not for the bulk requests' window to drain
        assert!(p99 < 4 * queue_delay, "seed {seed}: p99 {p99}");
    }
}

/// A loss-free path with no bottleneck but the receiver itself, as over
/// loopback: a single-threaded receiver takes each 64 KiB datagram in
/// turn (here 500 MB/s, 131 us each), its socket's queue holds all that
/// credits let be outstanding (no drop), so the round trip grows with
/// the flight. Slow start ends by delay (the queue is real), but with no
/// loss and a queue under 10 ms the window must not be held there: it
/// opens to what credits allow (32 messages of 64 KiB, `ramp bench`'s
/// Xfer) within 100 ms. (Before: slow start ended by delay at 340 KiB,
/// then 2 KiB more per window while the queue was held: 545 KiB at
/// 100 ms, 830 KiB at 300 ms; `ramp bench` showed 641 KiB.)
#[test]
fn a_loss_free_path_whose_round_trip_grows_with_the_receivers_queue_opens_to_its_credits() {
    let _watchdog = common::watchdog("proto_sim_congestion::loopback", Duration::from_secs(300));
    const OUT: u64 = 32;
    for seed in seeds(2) {
        let mut net = net(2, seed, 0.0);
        let rate = 500_000_000;
        let link = net.bottleneck(Bottleneck::new(rate, 64 << 20), |_, to| to == 1);
        let start = net.now();
        let (check, stop) = (start.plus(100 * MILLIS), start.plus(300 * MILLIS));
        let (mut sent, mut delivered, mut measured) = (0u64, 0u64, 0u64);
        let mut life = Vec::new();
        let mut next_look = start;
        let mut at_check = None;
        loop {
            let now = net.now();
            let sending = now < stop;
            if sending {
                top_up(&mut net, 0, 1, &mut sent, delivered, OUT, |k| {
                    (meta(0, k, LEN), payload(0, k, CHANNEL_REQUEST, LEN))
                });
            }
            while let Some(ev) = net.poll_event(1) {
                let Event::Delivered { meta: m, .. } = ev else {
                    panic!("seed {seed}: {ev:?}");
                };
                assert_eq!(m.args()[1] as u64, delivered, "seed {seed}: in order");
                delivered += 1;
                if now >= check && now < stop {
                    measured += LEN as u64;
                }
            }
            if now >= next_look {
                next_look = now.plus(10 * MILLIS);
                let (_, cc, flight) = net.node(0).paths().next().expect("a path");
                let (cwnd, srtt) = (cc.cwnd(), cc.srtt().unwrap_or(0));
                life.push(format!(
                    "{}ms {}K/{}K {}us",
                    now.since(start) / MILLIS,
                    cwnd / 1024,
                    flight / 1024,
                    srtt / MICROS
                ));
                if now >= check && at_check.is_none() {
                    at_check = Some(cwnd);
                }
            }
            if !sending && delivered == sent {
                break;
            }
            assert!(net.step(), "seed {seed}: idle with messages owed");
        }
        let goodput = measured as f64 / (stop.since(check) as f64 / SECOND as f64);
        let path = net.node(0).paths_report();
        let stats = net.link(link).stats;
        println!(
            "loopback-like, seed {seed}: goodput/rate {:.3}, queue drops {}, max queue delay \
             {:.2} ms; window/in flight, srtt every 10 ms: {}; {}",
            goodput / rate as f64,
            stats.dropped,
            stats.max_queue_delay as f64 / MILLIS as f64,
            life.join(", "),
            path.trim()
        );
        assert_eq!(stats.dropped, 0, "seed {seed}");
        let cwnd = at_check.expect("looked at 100 ms");
        assert!(
            cwnd >= OUT * LEN as u64,
            "seed {seed}: window {} KiB at 100 ms, credits allow {} KiB",
            cwnd / 1024,
            OUT * LEN as u64 / 1024
        );
        assert!(goodput >= 0.9 * rate as f64, "seed {seed}");
    }
}
