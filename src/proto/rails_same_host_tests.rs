//! Same-host peers with rails (`Peer::same_host`, `Peer::choose_path`,
//! `peer::seal_on`): two endpoints of one job on one host reach each other
//! by a ring at their names and by UDP at their other rails' addresses
//! (loopback's 127.0.0.1 and .2: every address reaches every other). The
//! ring's seal passes only through the ring, so their packets keep the
//! ring whatever round trip UDP measures on another rail, a ring that
//! times out (full: its reader slow) fails no path, and a packet that
//! must take UDP anyway is sealed with the association's key. On the
//! harness of `rails_tests.rs`, with its ring (`Net::ring`); seeds printed.

use super::*;

/// Associated, every path confirmed, each node's peer reached by a ring
/// whose round trip is `ring_delay` longer than UDP's on rail 1.
fn same_host(seed: u64, ring_delay: Nanos) -> Net {
    let mut net = Net::new(seed, cfg());
    net.flat = true;
    net.ring = true;
    net.delay[0] = ring_delay;
    net.send(0);
    net.run_for(50 * MILLIS);
    for n in 0..2 {
        net.p[n].set_same_host(RAILS[1 - n][0], true);
    }
    net
}

fn assert_clean(net: &Net, seed: u64, n: u32) {
    net.assert_exactly_once(n);
    for k in 0..2 {
        let s = net.p[k].stats();
        assert_eq!(s.corrupt_dropped, 0, "seed {seed}: node {k} refused a seal");
    }
}

#[test]
fn a_same_host_peer_keeps_its_ring_when_another_rail_answers_faster() {
    for seed in [61, 62, 63] {
        let mut net = same_host(seed, 2 * MILLIS);
        let from = net.data_sent.len();
        for k in 1..200 {
            net.send(k);
            // bursts and pauses: the path is chosen again when idle
            let gap = if k % 10 == 0 {
                20 * MILLIS
            } else {
                100 * MICROS
            };
            net.run_for(gap);
        }
        net.run_for(500 * MILLIS);
        // the choice was there: rail 1's paths answered, faster
        let r = net.p[0].paths_of(&1);
        let fast = r.iter().find(|r| r.rail == Rail(1) && r.remote == 11);
        assert!(
            fast.is_some_and(|f| f.state == PathState::Active && f.srtt.is_some()),
            "seed {seed}: {r:?}"
        );
        let off_ring: Vec<_> = net.data_sent[from..]
            .iter()
            .filter(|d| d.2.remote != 1)
            .collect();
        assert_eq!(
            off_ring,
            [] as [&(Instant, usize, Path<u32>); 0],
            "seed {seed}"
        );
        assert_clean(&net, seed, 200);
    }
}

#[test]
fn a_full_ring_fails_no_path_of_a_same_host_peer() {
    for seed in [64, 65, 66] {
        let mut net = same_host(seed, 0);
        // the ring drops everything for 300 ms (its reader off the CPU)
        net.link(0, 1, false);
        for k in 1..40 {
            net.send(k);
            net.run_for(5 * MILLIS);
        }
        net.run_for(100 * MILLIS);
        net.link(0, 1, true);
        net.run_for(2_000 * MILLIS);
        let r = net.p[0].paths_of(&1);
        assert!(r.iter().all(|r| r.failures == 0), "seed {seed}: {r:?}");
        let ring = r.iter().find(|r| r.current);
        assert!(
            ring.is_some_and(|r| (r.rail, r.remote) == (Rail(0), 1)),
            "seed {seed}: the ring's path kept: {r:?}"
        );
        assert_clean(&net, seed, 40);
    }
}

#[test]
fn a_same_host_peer_moved_off_its_ring_seals_with_the_association_key() {
    for seed in [67, 68, 69] {
        let mut net = same_host(seed, 0);
        for k in 1..20 {
            net.send(k);
        }
        net.run_for(60 * MICROS);
        // the transport says the name's path is unreachable: the packets
        // move to UDP on another path, sealed so UDP's receiver takes them
        net.p[0].path_down(net.now, p(0, 1));
        net.run_for(300 * MILLIS);
        assert!(
            net.data_sent.iter().any(|d| d.2.remote != 1),
            "seed {seed}: DATA went off the ring"
        );
        assert_clean(&net, seed, 20);
    }
}
