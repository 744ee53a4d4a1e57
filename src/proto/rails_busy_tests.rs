//! A receiver off the CPU on two healthy paths (`path/suspect.rs`): its
//! silence moves traffic between paths but fails none, tells nothing, and
//! loses or repeats no message. Before suspect paths, a receiver
//! descheduled for 50 ms or more failed the path carrying data (3
//! retransmission timeouts: about 35 ms), then the other, and both
//! "recovered" when it ran again: two rails on a loaded loopback flapped.

use super::*;
use crate::proto::path_events::PathChange;

/// Node `n`'s failures told so far (failed or partitioned paths).
fn failures_told(net: &mut Net, n: usize) -> Vec<(Path<u32>, PathChange)> {
    let mut v = Vec::new();
    while let Some(e) = net.p[n].take_path_event() {
        if matches!(e.change, PathChange::Failed | PathChange::Partitioned) {
            v.push((e.path, e.change));
        }
    }
    v
}

/// Every path of both nodes: never failed.
fn assert_no_failure(net: &mut Net, what: &str) {
    for n in 0..2 {
        assert_eq!(failures_told(net, n), [], "node {n}: {what}");
        let r = net.p[n].paths_of(&RAILS[1 - n][0]);
        assert!(r.iter().all(|r| r.failures == 0), "node {n}: {what}: {r:?}");
    }
}

#[test]
fn a_receiver_off_the_cpu_fails_no_path() {
    for seed in [41, 42, 43] {
        let mut net = confirmed(seed);
        let mut k = 1;
        for pause in [20, 50, 100, 200, 400] {
            // a burst in flight, then the receiver stops for `pause` ms
            // while more is sent
            for _ in 0..10 {
                net.send(k);
                k += 1;
            }
            net.run_for(MILLIS);
            net.asleep[1] = net.now.plus(pause * MILLIS);
            for _ in 0..(pause + 100) / 5 {
                net.send(k);
                k += 1;
                net.run_for(5 * MILLIS);
            }
            net.run_for(200 * MILLIS);
            assert_no_failure(&mut net, &format!("seed {seed}: off the CPU {pause} ms"));
        }
        net.run_for(500 * MILLIS);
        net.assert_exactly_once(k);
    }
}

#[test]
fn a_loaded_receiver_fails_no_path() {
    for seed in [44, 45, 46] {
        let mut net = confirmed(seed);
        let mut k = 1;
        // for 3 s the receiver runs in slices: every 10 ms it is off the
        // CPU for up to 60 ms, while the sender streams
        for _ in 0..300 {
            if net.asleep[1] <= net.now {
                let off = net.rng.below(60);
                net.asleep[1] = net.now.plus(off * MILLIS);
            }
            for _ in 0..3 {
                net.send(k);
                k += 1;
            }
            net.run_for(10 * MILLIS);
        }
        net.run_for(500 * MILLIS);
        assert_no_failure(&mut net, &format!("seed {seed}: loaded"));
        net.assert_exactly_once(k);
    }
}

/// A path cut while the receiver is also off the CPU for a while still
/// fails (the receiver answers elsewhere once it runs), and its data
/// goes on the other path.
#[test]
fn a_cut_path_fails_even_when_the_receiver_was_off_the_cpu() {
    for seed in [47, 48] {
        let mut net = confirmed(seed);
        net.send(1);
        net.run_for(10 * MICROS);
        let cur = net.data_sent.last().map_or(p(0, 1), |d| d.2);
        net.link(RAILS[0][cur.rail.0 as usize], cur.remote, false);
        net.asleep[1] = net.now.plus(150 * MILLIS);
        let mut k = 2;
        for _ in 0..100 {
            net.send(k);
            k += 1;
            net.run_for(5 * MILLIS);
        }
        net.run_for(500 * MILLIS);
        let told = failures_told(&mut net, 0);
        assert_eq!(told, [(cur, PathChange::Failed)], "seed {seed}");
        net.assert_exactly_once(k);
    }
}
