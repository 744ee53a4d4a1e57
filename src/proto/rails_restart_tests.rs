//! Rails across a peer's restart and after a partition past the peer
//! timeout (the harness of `rails_tests.rs`).

use super::*;

/// Node 0's traffic runs on rail 1 when node 1 restarts (a new process
/// at the same addresses, no state): node 0 starts a new association,
/// whose handshake goes between the names (rail 0), so that node 1 knows
/// node 0 by its name and not by the rail the old traffic took; every
/// message sent once the new association is open is delivered once.
#[test]
fn a_restarted_peer_is_associated_by_name_whatever_rail_the_traffic_took() {
    let mut net = confirmed(21);
    // rail 0 cut: the traffic moves to rail 1
    net.link(0, 1, false);
    for k in 1..5 {
        net.send(k);
    }
    net.run_for(500 * MILLIS);
    net.assert_exactly_once(5);
    net.link(0, 1, true);
    net.run_for(1500 * MILLIS);
    // node 1 restarts: a fresh protocol at the same rails
    net.p[1] = Protocol::new(cfg(), &[0x21; 32]);
    net.p[1].set_local_rails(&RAILS[1]);
    // the first message meets the new process, which aborts the old
    // association: it returns (a restarted peer lost it), and the next
    // send opens a new association
    net.delivered.clear();
    net.send(100);
    net.run_for(500 * MILLIS);
    assert_eq!(
        net.failed.len() + net.delivered.len(),
        1,
        "{:?}",
        net.failed
    );
    net.failed.clear();
    net.delivered.clear();
    for k in 0..10 {
        net.send(k);
    }
    net.run_for(3000 * MILLIS);
    net.assert_exactly_once(10);
    let paths = net.p[1].paths_of(&RAILS[0][0]);
    assert!(!paths.is_empty(), "node 1 knows node 0");
    assert_eq!(paths[0].remote, RAILS[0][0], "by its name: {paths:?}");
    assert_eq!(paths[0].rail, Rail::NAME);
}

/// Every path cut past the peer timeout: the messages of then return;
/// once a path is back, the next send's handshake ends the death and the
/// messages after it arrive.
#[test]
fn after_a_partition_past_the_peer_timeout_new_messages_get_through() {
    let mut net = Net::new(
        22,
        ProtoConfig {
            peer_timeout: 1000 * MILLIS,
            ..cfg()
        },
    );
    net.send(0);
    net.run_for(50 * MILLIS);
    for (a, b) in [(0, 1), (10, 11)] {
        net.link(a, b, false);
    }
    for k in 1..5 {
        net.send(k);
    }
    net.run_for(3000 * MILLIS);
    assert_eq!(net.failed.len(), 4, "returned after the peer timeout");
    for (a, b) in [(0, 1), (10, 11)] {
        net.link(a, b, true);
    }
    // the peer is dead: a message returns at once and starts a handshake,
    // whose success ends the death
    net.failed.clear();
    net.send(100);
    net.run_for(1000 * MILLIS);
    assert_eq!(net.failed.len(), 1);
    net.failed.clear();
    net.delivered.clear();
    for k in 0..10 {
        net.send(k);
    }
    net.run_for(3000 * MILLIS);
    net.assert_exactly_once(10);
}

/// A restarted process keeps its name (a logged endpoint binds it again)
/// but its further rails get new ports: node 1 comes back with rail 1 at
/// another address (111), the old one (11) gone (what is sent there is
/// lost without a word). Node 0's traffic ran on rail 1. After the new
/// association, node 0 must not keep paths to the address of the peer's
/// previous life, and every message sent after it arrives once, none
/// returned, while traffic goes on for seconds (probes and failovers
/// included).
#[test]
fn a_peer_restarted_at_a_new_rail_address_gets_every_later_message_once() {
    let mut net = confirmed(23);
    net.link(0, 1, false);
    for k in 1..5 {
        net.send(k);
    }
    net.run_for(500 * MILLIS);
    net.assert_exactly_once(5);
    net.link(0, 1, true);
    net.run_for(1500 * MILLIS);
    net.p[1] = Protocol::new(cfg(), &[0x23; 32]);
    net.rails[1] = [1, 111];
    net.p[1].set_local_rails(&net.rails[1]);
    net.delivered.clear();
    net.send(100);
    net.run_for(500 * MILLIS);
    assert_eq!(
        net.failed.len() + net.delivered.len(),
        1,
        "{:?}",
        net.failed
    );
    net.failed.clear();
    net.delivered.clear();
    for k in 0..40 {
        net.send(k);
        net.run_for(100 * MILLIS);
    }
    net.run_for(3000 * MILLIS);
    let paths = net.p[0].paths_of(&RAILS[1][0]);
    println!("node 0's paths: {paths:?}");
    net.assert_exactly_once(40);
    assert!(
        paths.iter().all(|p| p.remote != 11),
        "node 0 keeps a path to the restarted peer's old rail-1 address: {paths:?}"
    );
}

/// As on loopback with RAMP_RAILS=127.0.0.1,127.0.0.2 (python test_txn's
/// SIGKILL test): every address reaches every other (four active paths),
/// node 0 sends all the time; node 1 is killed (nothing reaches it for
/// 300 ms) and comes back with its name and a new rail-1 address (111;
/// the old one, 11, stays dead). Messages sent while it was dead may
/// return (a restarted peer lost them); every message sent once the new
/// process answers arrives once and none returns, for seconds after.
/// Failed before the fix (seed 31): the paths all failed while the peer
/// was dead, the current one to its old rail-1 address kept the
/// retransmissions, the new process dropped the probes of an association
/// it did not know, and nothing reached it until the peer timeout (10 s:
/// python test_txn's 12 s runs; its transactions' probes failed thrice
/// meanwhile: NO_REPLY for an acked one whose handler never ran).
#[test]
fn killed_and_restarted_on_loopback_rails_later_messages_arrive_once() {
    for seed in 30..40 {
        let mut net = Net::new(seed, cfg());
        net.flat = true;
        let mut k = 0;
        let step = |net: &mut Net, k: &mut u32, ms: u64| {
            for _ in 0..ms / 10 {
                net.send(*k);
                *k += 1;
                net.run_for(10 * MILLIS);
            }
        };
        step(&mut net, &mut k, 500);
        net.assert_exactly_once(k);
        for a in [0, 10] {
            for b in [1, 11] {
                net.link(a, b, false);
            }
        }
        step(&mut net, &mut k, 300);
        net.p[1] = Protocol::new(cfg(), &[0x30; 32]);
        net.rails[1] = [1, 111];
        net.p[1].set_local_rails(&net.rails[1]);
        for a in [0, 10] {
            net.link(a, 1, true);
        }
        // until the new association carries a message
        let before = k;
        step(&mut net, &mut k, 1000);
        let first = (before..k).find(|m| net.delivered.contains(m));
        let first = first.unwrap_or_else(|| panic!("seed {seed}: nothing reached the new process"));
        let late: Vec<_> = net.failed.iter().filter(|f| f.0 > first).collect();
        assert_eq!(
            late,
            [] as [&(u32, FailReason); 0],
            "seed {seed}: returned after {first}"
        );
        net.failed.clear();
        net.delivered.clear();
        let from = k;
        step(&mut net, &mut k, 5000);
        net.run_for(3000 * MILLIS);
        assert_eq!(net.failed, [], "seed {seed}: returned");
        let mut got: Vec<u32> = net
            .delivered
            .iter()
            .copied()
            .filter(|&m| m >= from)
            .collect();
        got.sort_unstable();
        assert_eq!(got, (from..k).collect::<Vec<_>>(), "seed {seed}: each once");
    }
}
