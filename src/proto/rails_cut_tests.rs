//! A path cut under traffic, on the rails harness (`rails_tests.rs`):
//! silently (failed after its timeouts), by a path-down report, in one
//! direction only, on and off (flapping); the data goes on the other
//! rail, and a failed path that comes back rejoins.

use super::*;

#[test]
fn a_silently_cut_path_fails_after_its_timeouts_and_its_data_goes_on_the_other() {
    for seed in [3, 4, 5] {
        let mut net = confirmed(seed);
        net.send(1);
        net.run_for(10 * MICROS);
        // the path carrying the data is cut, both ways, without a word,
        // while more goes
        let cur = net.data_sent.last().map_or(p(0, 1), |d| d.2);
        let src = RAILS[0][cur.rail.0 as usize];
        net.link(src, cur.remote, false);
        let cut_at = net.data_sent.len();
        for k in 2..40 {
            net.send(k);
            net.run_for(5 * MILLIS);
        }
        net.run_for(500 * MILLIS);
        let r = net.p[0].paths_of(&1);
        let cut = r
            .iter()
            .find(|r| r.rail == cur.rail && r.remote == cur.remote);
        assert!(
            cut.is_some_and(|r| r.failures == 1 && r.state != PathState::Active && !r.current),
            "seed {seed}: {r:?}"
        );
        assert!(net.data_sent[cut_at..].iter().any(|d| d.2 != cur));
        net.assert_exactly_once(40);
    }
}

#[test]
fn path_down_fails_a_path_at_once_and_moves_its_data() {
    let mut net = confirmed(6);
    for k in 1..20 {
        net.send(k);
    }
    net.run_for(60 * MICROS);
    net.link(0, 1, false); // the transport will see it unreachable
    net.p[0].path_down(net.now, p(0, 1));
    assert_eq!(net.state(0, p(0, 1)), Some(PathState::Failed));
    let cur = net.p[0].paths_of(&1).into_iter().find(|r| r.current);
    assert_eq!(cur.map(|r| (r.rail, r.remote)), Some((Rail(1), 11)));
    net.run_for(200 * MILLIS);
    net.assert_exactly_once(20);
}

#[test]
fn a_failed_path_that_comes_back_rejoins_within_its_probe_interval() {
    let mut net = confirmed(7);
    net.link(10, 11, false);
    net.p[0].path_down(net.now, p(1, 11));
    // keep traffic going for 3 s (probes go while there is something to say)
    let mut k = 1;
    for _ in 0..30 {
        net.send(k);
        k += 1;
        net.run_for(100 * MILLIS);
    }
    assert_ne!(net.state(0, p(1, 11)), Some(PathState::Active));
    net.link(10, 11, true);
    let back = net.now;
    let mut rejoined = None;
    for _ in 0..300 {
        net.send(k);
        k += 1;
        net.run_for(5 * MILLIS);
        if net.state(0, p(1, 11)) == Some(PathState::Active) {
            rejoined = Some(net.now.since(back));
            break;
        }
    }
    let took = rejoined.expect("the path rejoined");
    assert!(took <= PROBE_MAX + 10 * MILLIS, "rejoined after {took} ns");
    let r = net.p[0].paths_of(&1);
    let path = r.iter().find(|r| r.rail == Rail(1) && r.remote == 11);
    assert_eq!(path.map(|r| r.failures), Some(1));
    net.run_for(100 * MILLIS);
    net.assert_exactly_once(k);
}

#[test]
fn an_asymmetric_cut_fails_the_path_at_the_sender_and_delivers_once() {
    for seed in [11, 12] {
        let mut net = confirmed(seed);
        net.send(1);
        net.run_for(10 * MICROS);
        let cur = net.data_sent.last().map_or(p(0, 1), |d| d.2);
        let src = RAILS[0][cur.rail.0 as usize];
        // DATA still arrives, nothing comes back on that path
        net.cut.insert((cur.remote, src));
        for k in 2..30 {
            net.send(k);
            net.run_for(5 * MILLIS);
        }
        net.run_for(500 * MILLIS);
        let r = net.p[0].paths_of(&1);
        let cut = r
            .iter()
            .find(|r| r.rail == cur.rail && r.remote == cur.remote);
        assert!(
            cut.is_some_and(|r| r.failures >= 1 && !r.current),
            "seed {seed}: {r:?}"
        );
        net.assert_exactly_once(30);
    }
}

#[test]
fn a_flapping_path_loses_nothing_and_duplicates_nothing() {
    for seed in [13, 14, 15] {
        let mut net = confirmed(seed);
        let mut k = 1;
        for round in 0..20 {
            let up = round % 2 == 1;
            net.link(0, 1, up);
            if round % 4 == 0 {
                net.link(10, 11, up || round % 8 == 0);
            } else {
                net.link(10, 11, true);
            }
            for _ in 0..5 {
                net.send(k);
                k += 1;
                let d = 7 * MILLIS + net.rng.below(30) * MILLIS;
                net.run_for(d);
            }
        }
        net.link(0, 1, true);
        net.link(10, 11, true);
        net.run_for(3000 * MILLIS);
        net.assert_exactly_once(k);
    }
}

/// The virtual time from a silent cut of the path carrying data to the
/// first DATA on the other path, printed (not asserted beyond the peer
/// timeout's bound): `cargo test --release --features testing --lib
/// failover_time -- --nocapture`.
#[test]
fn failover_time_after_a_silent_cut() {
    for seed in [16, 17, 18] {
        let mut net = confirmed(seed);
        net.send(1);
        net.run_for(10 * MICROS);
        let cur = net.data_sent.last().map_or(p(0, 1), |d| d.2);
        net.link(RAILS[0][cur.rail.0 as usize], cur.remote, false);
        let cut = net.now;
        let mut k = 2;
        while !net.data_sent.iter().any(|d| d.0 >= cut && d.2 != cur) {
            net.send(k);
            k += 1;
            net.run_for(MILLIS);
            assert!(
                net.now.since(cut) < 1000 * MILLIS,
                "seed {seed}: no failover"
            );
        }
        let took = net.data_sent.iter().find(|d| d.0 >= cut && d.2 != cur);
        let took = took.map_or(0, |d| d.0.since(cut));
        println!("seed {seed}: failover {} us after the cut", took / MICROS);
        net.run_for(200 * MILLIS);
        net.assert_exactly_once(k);
    }
}
