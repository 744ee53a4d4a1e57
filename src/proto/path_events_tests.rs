//! Path events (`path_events.rs`) on the rails harness (`rails_tests.rs`):
//! confirmation, failure, partition, recovery and rejoining each told once;
//! forged or replayed answers tell nothing; the queue is bounded.

use super::*;
use crate::proto::path_events::PathEvents;

/// Node `n`'s path events so far: (path, change), suspicion's
/// (`Suspect`, `Cleared`: `suspicion_is_told_...`) left out.
fn news(net: &mut Net, n: usize) -> Vec<(Path<u32>, PathChange)> {
    let mut v = all_news(net, n);
    v.retain(|e| !matches!(e.1, PathChange::Suspect | PathChange::Cleared));
    v
}

/// Node `n`'s path events so far, every one.
fn all_news(net: &mut Net, n: usize) -> Vec<(Path<u32>, PathChange)> {
    let mut v = Vec::new();
    while let Some(e) = net.p[n].take_path_event() {
        assert_eq!(e.peer, RAILS[1 - n][0], "the peer is named by its name");
        v.push((e.path, e.change));
    }
    v
}

/// Sends `n` messages 5 ms apart (numbered on from `k`), runs `then`
/// more, and checks that every message so far was delivered exactly once.
fn send_spaced(net: &mut Net, k: &mut u32, n: usize, then: Nanos) {
    for _ in 0..n {
        net.send(*k);
        *k += 1;
        net.run_for(5 * MILLIS);
    }
    net.run_for(then);
    net.assert_exactly_once(*k);
}

/// A receiver off the CPU makes the path carrying data suspect (told
/// once), and its answer clears it (told once), nothing failed; a path
/// cut silently is told suspect, then failed, never cleared.
#[test]
fn suspicion_is_told_when_it_begins_and_when_it_ends_or_fails() {
    let mut net = confirmed(26);
    news(&mut net, 0);
    let mut k = 1;
    for _ in 0..10 {
        net.send(k);
        k += 1;
    }
    net.run_for(MILLIS);
    net.asleep[1] = net.now.plus(200 * MILLIS);
    send_spaced(&mut net, &mut k, 60, 300 * MILLIS);
    let off = all_news(&mut net, 0);
    println!("receiver off the CPU 200 ms: {off:?}");
    let suspect: Vec<_> = off.iter().filter(|e| e.1 == PathChange::Suspect).collect();
    assert!(!suspect.is_empty(), "a path became suspect: {off:?}");
    for (path, _) in &suspect {
        let told = |c| off.iter().filter(|e| e.0 == *path && e.1 == c).count();
        assert_eq!(
            told(PathChange::Suspect),
            told(PathChange::Cleared),
            "{off:?}"
        );
    }
    assert!(off.iter().all(|e| e.1 != PathChange::Failed), "{off:?}");
    let r = net.p[0].paths_of(&1);
    assert!(
        r.iter().all(|r| !r.suspect),
        "none suspect at the end: {r:?}"
    );

    // the path carrying data cut: suspect, then failed
    let cur = net.p[0]
        .paths_of(&1)
        .iter()
        .find(|r| r.current)
        .map(|r| p(r.rail.0, r.remote));
    let cur = cur.unwrap_or(p(0, 1));
    net.link(RAILS[0][cur.rail.0 as usize], cur.remote, false);
    send_spaced(&mut net, &mut k, 100, 500 * MILLIS);
    let cut: Vec<_> = all_news(&mut net, 0)
        .into_iter()
        .filter(|e| e.0 == cur)
        .collect();
    println!("path {cur:?} cut: {cut:?}");
    assert_eq!(
        cut.iter().map(|e| e.1).collect::<Vec<_>>(),
        [PathChange::Suspect, PathChange::Failed],
        "{cut:?}"
    );
}

#[test]
fn confirming_a_path_is_told_once_and_nothing_else() {
    let mut net = confirmed(21);
    assert_eq!(news(&mut net, 0), [(p(1, 11), PathChange::Confirmed)]);
    assert_eq!(news(&mut net, 1), [(p(1, 10), PathChange::Confirmed)]);
}

#[test]
fn a_partition_and_its_end_are_told_in_order() {
    for seed in [22, 23] {
        let mut net = Net::new(
            seed,
            ProtoConfig {
                retry_limit: 4,
                ..cfg()
            },
        );
        net.send(0);
        net.run_for(50 * MILLIS);
        news(&mut net, 0);
        for k in 1..20 {
            net.send(k);
        }
        net.run_for(60 * MICROS);
        for (a, b) in [(0, 1), (10, 11)] {
            net.link(a, b, false);
        }
        for k in 20..30 {
            net.send(k);
            net.run_for(100 * MILLIS);
        }
        let down = news(&mut net, 0);
        let changes: Vec<PathChange> = down.iter().map(|e| e.1).collect();
        assert_eq!(
            changes,
            [
                PathChange::Failed,
                PathChange::Failed,
                PathChange::Partitioned
            ],
            "seed {seed}: {down:?}"
        );
        assert_ne!(down[0].0, down[1].0, "both paths failed");
        assert_eq!(down[2].0, down[1].0, "the last failure partitioned");
        net.run_for(2000 * MILLIS);
        assert_eq!(
            news(&mut net, 0),
            [],
            "seed {seed}: probes unanswered: no news"
        );
        for (a, b) in [(0, 1), (10, 11)] {
            net.link(a, b, true);
        }
        // (failed paths are probed while there is something to say)
        for k in 30..45 {
            net.send(k);
            net.run_for(100 * MILLIS);
        }
        net.run_for(1500 * MILLIS);
        net.assert_exactly_once(45);
        let up = news(&mut net, 0);
        let count = |c: PathChange| up.iter().filter(|e| e.1 == c).count();
        assert_eq!(up[0].1, PathChange::Recovered, "seed {seed}: {up:?}");
        assert_eq!(
            up[1],
            (up[0].0, PathChange::Rejoined),
            "seed {seed}: {up:?}"
        );
        assert_eq!(count(PathChange::Rejoined), 1, "seed {seed}: {up:?}");
        assert_eq!(count(PathChange::Recovered), 2, "seed {seed}: {up:?}");
        assert_eq!(count(PathChange::Failed), 0, "seed {seed}: {up:?}");
    }
}

#[test]
fn path_down_is_told_and_forged_or_replayed_answers_tell_nothing() {
    let mut net = confirmed(24);
    news(&mut net, 0);
    net.p[0].path_down(net.now, p(1, 11));
    assert_eq!(news(&mut net, 0), [(p(1, 11), PathChange::Failed)]);
    // again: already failed, no news
    net.p[0].path_down(net.now, p(1, 11));
    let (tag0, _) = net.p[0].association(&1).unwrap_or_default();
    let replays: Vec<_> = net.hb_acks.iter().filter(|a| a.0 == 0).cloned().collect();
    assert!(!replays.is_empty(), "answers were seen");
    for (_, arrival, bytes) in &replays {
        net.p[0].handle_datagram_placing(net.now, *arrival, bytes, &mut NoPlacement);
    }
    let mut forged = Vec::new();
    wire::encode_heartbeat(&mut forged, &wire::Integrity::Crc32c, tag0, true, 777);
    for r in 0..2 {
        for remote in [1, 11] {
            net.p[0].handle_datagram_placing(net.now, p(r, remote), &forged, &mut NoPlacement);
        }
    }
    assert_eq!(
        news(&mut net, 0),
        [],
        "no news from forged or replayed answers"
    );
    assert_eq!(net.p[0].path_event_counts(), (0, 0));
}

#[test]
fn the_queue_holds_at_most_its_bound_and_counts_the_rest() {
    let mut q: PathEvents<u32> = PathEvents::default();
    for k in 0..(PATH_EVENTS_MAX as u32 + 36) {
        q.push(PathEvent {
            peer: k,
            path: p(0, k),
            change: PathChange::Failed,
        });
    }
    assert_eq!(q.len(), PATH_EVENTS_MAX);
    assert_eq!(q.dropped, 36);
}
