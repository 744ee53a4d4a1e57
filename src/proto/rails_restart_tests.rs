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
