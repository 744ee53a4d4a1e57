//! Striping (`path/stripe.rs`, `peer/stripe.rs`) on the rails harness
//! (`rails_tests.rs`) with rate-limited subnets: two equal paths carry a
//! large message at about twice one path's rate, unequal ones each near
//! its share, small messages take the lower-RTT path, a path cut silently
//! while striping loses and duplicates nothing. Deterministic (seeds
//! printed); the figures are printed.

use super::rails_tests::{cfg, confirmed, p, Net};
use super::*;
use crate::time::{Nanos, MILLIS};
use crate::wire::{Category, MsgKind, CHANNEL_REQUEST};

const MIB: usize = 1 << 20;

/// Sends message `k` of `len` bytes from node 0.
fn send_len(net: &mut Net, k: u32, len: usize) {
    let meta = MsgMeta::new(MsgKind::User, Category::Long, 1, &[k]);
    net.p[0].send(net.now, 1, CHANNEL_REQUEST, meta, vec![k as u8; len]);
}

/// Runs until message `k` arrived (at most `limit`); how long it took.
fn time_to_deliver(net: &mut Net, k: u32, limit: Nanos) -> Nanos {
    let start = net.now;
    while !net.delivered.contains(&k) && net.now.since(start) < limit {
        net.run_for(MILLIS / 2);
    }
    assert!(
        net.delivered.contains(&k),
        "message {k} delivered: paths {:#?}",
        net.p[0].paths_of(&1)
    );
    net.now.since(start)
}

/// Bytes acknowledged on node 0's path (rail, remote).
fn acked(net: &Net, rail: u8, remote: u32) -> u64 {
    net.p[0]
        .paths_of(&1)
        .iter()
        .find(|r| r.rail.0 == rail && r.remote == remote)
        .map_or(0, |r| r.bytes_acked)
}

/// A net whose subnets run at `rates` (bytes/s), paths confirmed, with
/// striping from `stripe_min`.
fn shaped(seed: u64, rates: [u64; 2], stripe_min: usize) -> Net {
    let mut net = Net::new(
        seed,
        ProtoConfig {
            stripe_min,
            ..cfg()
        },
    );
    net.rate = rates;
    net.send(0);
    net.run_for(50 * MILLIS);
    net.assert_exactly_once(1);
    net
}

/// Goodput of `n` messages of `len` bytes sent one after another, MB/s,
/// and the bytes each path carried meanwhile.
fn goodput(net: &mut Net, n: u32, len: usize) -> (f64, u64, u64) {
    let (a0, a1) = (acked(net, 0, 1), acked(net, 1, 11));
    let mut total: Nanos = 0;
    for k in 1..=n {
        send_len(net, k, len);
        total += time_to_deliver(net, k, 10_000 * MILLIS);
    }
    let rate = (n as usize * len) as f64 / (total as f64 / 1e9) / 1e6;
    (rate, acked(net, 0, 1) - a0, acked(net, 1, 11) - a1)
}

#[test]
fn two_equal_paths_carry_a_large_message_at_about_twice_one_paths_rate() {
    let rate = 12_500_000; // 100 Mbit/s each
    let mut one = shaped(21, [rate, rate], usize::MAX);
    let (single, _, _) = goodput(&mut one, 4, MIB);
    let mut two = shaped(21, [rate, rate], 128 << 10);
    let (striped, b0, b1) = goodput(&mut two, 4, MIB);
    println!(
        "equal paths 2 x 12.5 MB/s, 4 x 1 MiB: one path {single:.2} MB/s, striped \
         {striped:.2} MB/s ({:.2}x); bytes per path {b0} + {b1}",
        striped / single
    );
    two.assert_exactly_once(5);
    assert!(
        striped >= 1.6 * single,
        "striping about doubles: {striped} vs {single}"
    );
    let share = b0 as f64 / (b0 + b1) as f64;
    assert!((0.35..=0.65).contains(&share), "even shares: {share}");
}

/// The first message is striped before any path's rate is measured.
/// Was ignored (h-stripe3, h-probe: fast share 0.91, 0.69 of the sum):
/// the slow path took its window and, unmeasured, most of the rest (its
/// heartbeats' round trip made it look fast), a tail-loss probe at the peer's
/// probe time (its round trip: a small packet's) sent the fast path's
/// still-queued tail again on the slow one, whose ACKs of the first copy
/// were credited to the slow path (a rate of 2x its own, then 3 MB/s from
/// the stall); a path given one fragment per message never measured
/// again. Now (h-burst) a path sends no probe before its rate is
/// measured, and a path not measured yet takes its window once, then
/// nothing until its ACKs tell its rate (`Paths::stripe_shares`): the
/// slow path measures 10.0 MB/s in the first message, nothing is sent
/// twice. Either alone is not enough (without the second: 0.76 of the
/// sum). Issue 38's target is 0.9 of the sum: 0.86 here (the first
/// message's windows, 33 ms, before the rates are known; then 21 ms each).
#[test]
fn unequal_paths_each_carry_near_their_share() {
    let (fast, slow) = (40_000_000, 10_000_000); // 4:1
    let mut net = shaped(22, [fast, slow], 128 << 10);
    let (striped, b0, b1) = goodput(&mut net, 4, MIB);
    let share = b0 as f64 / (b0 + b1) as f64;
    println!(
        "unequal paths 40 + 10 MB/s, 4 x 1 MiB: {striped:.2} MB/s ({:.2} of the sum); \
         fast path's share {share:.2} (ideal 0.80); bytes {b0} + {b1}",
        striped / 50.0
    );
    println!(
        "retransmitted {:?}",
        net.p[0].stats().requests_retransmitted
    );
    net.assert_exactly_once(5);
    // (issue 38's target is 0.9 of the sum: 0.86 measured)
    assert!(
        (0.75..=0.85).contains(&share),
        "fast path near its share: {share}"
    );
    assert!(striped >= 0.85 * 50.0, "near the sum: {striped}");
}

/// Real links' conditions (h-stripe3): MTU-sized datagrams (the channel's
/// 64-packet window is 92 KB) and the kernel's routing by destination
/// (four confirmed paths over two links: our rail 0 to the peer's rail-1
/// address takes the rail-1 link). Striped, both links carry about half
/// and together about twice one (1.99x). Note: with only this branch's
/// rate estimate and neither the disjoint paths nor the shared window it
/// still gives 1.87x here: no token-bucket burst (`Net::shape` has one
/// now, h-burst) nor bunched ACKs, the real links' part of the failure.
/// (`unequal_paths_with_bunched_acks_keep_their_shares` fails with the
/// rate filter reverted to a maximum; this one does not.)
#[test]
fn two_rails_routed_by_destination_with_mtu_datagrams_carry_twice_one() {
    let rate = 12_500_000;
    let run = |stripe_min: usize| {
        let mut net = Net::new(
            27,
            ProtoConfig {
                stripe_min,
                max_datagram: 1472,
                ..cfg()
            },
        );
        net.routed = true;
        net.rate = [rate, rate];
        net.send(0);
        net.run_for(300 * MILLIS);
        let active = net.p[0]
            .paths_of(&1)
            .iter()
            .filter(|r| r.state == PathState::Active)
            .count();
        assert_eq!(active, 4, "{:#?}", net.p[0].paths_of(&1));
        let from = net.data_sent.len();
        let (mbs, _, _) = goodput(&mut net, 4, MIB);
        net.assert_exactly_once(5);
        // DATA per link: the destination's subnet
        let on = |link: u32| {
            net.data_sent[from..]
                .iter()
                .filter(|d| d.2.remote / 10 % 10 == link)
                .count()
        };
        (mbs, on(0), on(1))
    };
    let (single, _, _) = run(usize::MAX);
    let (striped, l0, l1) = run(128 << 10);
    let share = l0 as f64 / (l0 + l1) as f64;
    println!(
        "routed, MTU datagrams, 2 x 12.5 MB/s, 4 x 1 MiB: one path {single:.2} MB/s, striped \
         {striped:.2} MB/s ({:.2}x); DATA per link {l0} + {l1}",
        striped / single
    );
    assert!(striped >= 1.6 * single, "{striped} vs {single}");
    assert!((0.35..=0.65).contains(&share), "even links: {share}");
}

#[test]
fn small_messages_take_the_lower_rtt_path() {
    let mut net = Net::new(23, cfg());
    net.delay = [3 * MILLIS, 0]; // rail 0's subnet is slower
    net.send(0);
    net.run_for(200 * MILLIS);
    let from = net.data_sent.len();
    for k in 1..40 {
        net.send(k);
        net.run_for(10 * MILLIS);
    }
    net.run_for(100 * MILLIS);
    net.assert_exactly_once(40);
    let on = |rail: u8| {
        net.data_sent[from..]
            .iter()
            .filter(|d| d.2.rail.0 == rail)
            .count()
    };
    println!(
        "small messages: {} DATA on the slow path, {} on the fast",
        on(0),
        on(1)
    );
    assert!(on(1) >= 9 * on(0), "the lower-RTT path carries them");
}

#[test]
fn a_path_cut_silently_while_striping_loses_and_duplicates_nothing() {
    let rate = 12_500_000;
    let mut net = shaped(24, [rate, rate], 128 << 10);
    for k in 1..=3 {
        send_len(&mut net, k, MIB);
    }
    net.run_for(30 * MILLIS);
    let before = net.p[0].stats().requests_retransmitted.iter().sum::<u64>();
    net.link(10, 11, false);
    let cut_at = net.now;
    net.run_for(3_000 * MILLIS);
    net.assert_exactly_once(4);
    let state = net.state(0, p(1, 11));
    let resent = net.p[0].stats().requests_retransmitted.iter().sum::<u64>() - before;
    let other = net
        .data_sent
        .iter()
        .filter(|d| d.0 > cut_at && d.2.rail.0 == 0)
        .count();
    println!(
        "cut while striping: path (1, 11) {state:?}, {resent} retransmissions after the cut, \
         {other} DATA on the other path after it"
    );
    assert!(other > 0, "resent on the other path");
}

#[test]
fn an_idle_backup_path_cut_silently_is_noticed_by_heartbeats_and_told() {
    let mut net = confirmed(25);
    // small messages keep the peer busy on one path; the other is idle
    net.link(10, 11, false);
    for k in 1..400 {
        net.send(k);
        net.run_for(5 * MILLIS);
    }
    net.run_for(100 * MILLIS);
    net.assert_exactly_once(400);
    let states = [net.state(0, p(0, 1)), net.state(0, p(1, 11))];
    println!(
        "idle backup cut: paths {states:?} {:#?}",
        net.p[0].paths_of(&1)
    );
    assert_eq!(states[0], Some(PathState::Active));
    assert!(matches!(
        states[1],
        Some(PathState::Failed | PathState::Probing)
    ));
    // (suspect first, failed on evidence: told, not silent)
    let mut told = Vec::new();
    while let Some(e) = net.p[0].take_path_event() {
        if e.change == crate::proto::path_events::PathChange::Failed {
            told.push(e.path);
        }
    }
    assert_eq!(told, [p(1, 11)], "the idle path's failure told");
}

/// Where striping starts to pay on two equal paths (`DEFAULT_STRIPE_MIN`
/// is chosen by it): goodput of messages of each size sent one after
/// another, striped and on one path.
#[test]
fn striping_pays_from_the_default_threshold_on() {
    let rate = 12_500_000;
    let mut gains = Vec::new();
    for len in [32 << 10, 64 << 10, 128 << 10, 256 << 10, 512 << 10] {
        let mut one = shaped(26, [rate, rate], usize::MAX);
        let (single, _, _) = goodput(&mut one, 8, len);
        let mut two = shaped(26, [rate, rate], 1);
        let (striped, _, _) = goodput(&mut two, 8, len);
        two.assert_exactly_once(9);
        println!(
            "{} KiB: one path {single:.2} MB/s, striped {striped:.2} MB/s ({:.2}x)",
            len >> 10,
            striped / single
        );
        gains.push((len, striped / single));
    }
    for (len, gain) in gains {
        if len >= crate::proto::config::DEFAULT_STRIPE_MIN {
            assert!(gain >= 1.2, "{len} bytes striped: {gain:.2}x");
        }
    }
}

/// Each path's own packet timing (`path/clock.rs`) on links shaped as the
/// real rails (`tc tbf ... burst 565kb latency 30ms` at each sender:
/// `Net::shape`, `sim::Bottleneck::tbf`): a 40 MB/s path and a 10 MB/s
/// one 20 ms longer each way. Its packets take 40 ms and more: timed by
/// the peer's clock (the fast path's) they go again on the fast path
/// while still on their way. Checked with `Paths::transmit_timers` and
/// `rto_on` returning the peer's alone: 9 packets resent and nothing on
/// the slow path (own clocks: 4 resent, 917,378 bytes on it; with the
/// later fragments' short header and the loopback probe of congestion
/// control merged; before them 8 and 1 resent).
#[test]
fn a_longer_paths_packets_are_timed_by_its_own_round_trips() {
    let mut net = shaped(28, [40_000_000, 10_000_000], 128 << 10);
    net.shape = Some((565_000, 30 * MILLIS));
    net.delay = [0, 20 * MILLIS];
    net.run_for(200 * MILLIS);
    let (mbs, b0, b1) = goodput(&mut net, 8, MIB);
    let resent: u64 = net.p[0].stats().requests_retransmitted.iter().sum();
    println!(
        "tbf paths 40 + 10 MB/s, the slow one 20 ms longer each way, 8 x 1 MiB: \
         {mbs:.2} MB/s; bytes per path {b0} + {b1}; {resent} packets resent"
    );
    net.assert_exactly_once(9);
    assert!(b1 > 0, "the longer path carries its part");
    assert!(
        resent <= 5,
        "{resent} resent: timed by the fast path's clock?"
    );
}

/// A packet sent again on another path is news for the path of the copy
/// that arrived (`InFlight::arrived_lane`): a 1 MiB message striped over a
/// fast path and one 30 ms longer each way; the fast path said down
/// (`path_down`, a send error) while its fragments are on their way: they
/// go again on the slow path, the first copies arrive and are
/// acknowledged within a millisecond or two. The slow path can deliver
/// nothing in the 8 ms after the message went (its round trip is 60 ms);
/// before, each packet's news went to the path of its last copy (the
/// slow one): 0.3 MB acknowledged on it in those 8 ms, its rate and
/// progress the fast path's. Seeds printed.
#[test]
fn a_resent_packets_ack_is_charged_to_the_path_its_arriving_copy_took() {
    for seed in [29, 30] {
        let stripe_min = 128 << 10;
        let mut net = Net::new(
            seed,
            ProtoConfig {
                stripe_min,
                ..cfg()
            },
        );
        net.rate = [25_000_000, 25_000_000];
        net.delay = [30 * MILLIS, 0];
        net.send(0);
        net.run_for(300 * MILLIS);
        // (a message first: each path measured)
        send_len(&mut net, 1, MIB);
        time_to_deliver(&mut net, 1, 2_000 * MILLIS);
        net.run_for(100 * MILLIS); // (its last ACKs back)
        let (slow0, fast0) = (acked(&net, 0, 1), acked(&net, 1, 11));
        send_len(&mut net, 2, MIB);
        net.run_for(2 * MILLIS);
        net.p[0].path_down(net.now, p(1, 11));
        net.run_for(6 * MILLIS);
        let (slow, fast) = (acked(&net, 0, 1) - slow0, acked(&net, 1, 11) - fast0);
        println!(
            "seed {seed}: in the 8 ms after the message went: {slow} bytes acknowledged on the \
             slow path, {fast} on the fast one (down after 2 ms)"
        );
        assert_eq!(slow, 0, "the slow path delivered nothing yet");
        assert!(fast > 0, "the fast path's copies arrived");
        time_to_deliver(&mut net, 2, 5_000 * MILLIS);
        net.assert_exactly_once(3);
    }
}

/// Striping's shares on unequal tbf-shaped paths (40 + 10 MB/s, `tc tbf`
/// at each sender: `Net::shape`) with the receiver off the CPU 10 ms of
/// every 50 (`Net::asleep`: what comes waits, then its ACKs go at once,
/// bunched): 8 x 1 MiB one after another; goodput (MB/s) and the fast
/// path's share of the bytes.
fn bunched(seed: u64) -> (f64, f64) {
    let mut net = shaped(seed, [40_000_000, 10_000_000], 128 << 10);
    net.shape = Some((565_000, 30 * MILLIS));
    net.run_for(200 * MILLIS);
    let (a0, a1) = (acked(&net, 0, 1), acked(&net, 1, 11));
    let start = net.now;
    for k in 1..=8 {
        send_len(&mut net, k, MIB);
        while !net.delivered.contains(&k) {
            assert!(net.now.since(start) < 20_000 * MILLIS, "message {k}");
            if net.now.since(start) % (50 * MILLIS) < MILLIS {
                net.asleep[1] = net.now.plus(10 * MILLIS);
            }
            net.run_for(MILLIS);
        }
    }
    let mbs = (8 * MIB) as f64 / (net.now.since(start) as f64 / 1e9) / 1e6;
    let (b0, b1) = (acked(&net, 0, 1) - a0, acked(&net, 1, 11) - a1);
    net.run_for(200 * MILLIS);
    net.assert_exactly_once(9);
    (mbs, b0 as f64 / (b0 + b1) as f64)
}

/// The rate filter (`path/rate.rs`: a weighted mean of busy intervals)
/// against bunched ACKs. The receiver runs 80% of the time: 40 MB/s at
/// most. Measured: 36.2, 40.0, 40.0 MB/s, fast share 0.78, 0.84, 0.84.
/// With the filter reverted to a plain maximum (BBR's, over the filter's
/// 200 ms): 29.2, 17.4, 15.7 MB/s, fast share 0.77, 0.46, 0.40: a bunch
/// of ACKs after the sleep is a sample far above either path's rate, the
/// slow path's held as high as the fast one's, and the message waits for
/// its share on the slow path. (The other striping tests pass with the
/// maximum: no bunched ACKs there.)
#[test]
fn unequal_paths_with_bunched_acks_keep_their_shares() {
    for seed in [31, 32, 33] {
        let (mbs, share) = bunched(seed);
        println!(
            "seed {seed}: bunched ACKs, 40 + 10 MB/s tbf, 8 x 1 MiB: {mbs:.2} MB/s ({:.2} of the \
             sum), fast share {share:.2} (ideal 0.80)",
            mbs / 50.0
        );
        assert!(mbs >= 0.65 * 50.0, "seed {seed}: {mbs:.2} MB/s");
        assert!(
            (0.7..=0.9).contains(&share),
            "seed {seed}: share {share:.2}"
        );
    }
}
