//! Hostile input to the rails (`path.rs`, `peer/paths.rs`, the
//! handshake's address list): forged, replayed or misrouted heartbeat
//! answers change no path; an INIT listing too many or foreign addresses
//! is refused and counted (the harness of `rails_tests.rs`).

use super::*;

#[test]
fn forged_replayed_or_misrouted_heartbeat_acks_change_nothing() {
    let mut net = confirmed(2);
    let (tag0, _) = net.p[0].association(&1).unwrap_or_default();
    let report = |net: &Net| net.p[0].paths_of(&1);
    // rail 1 fails; a replay of its old answer does not bring it back
    net.p[0].path_down(net.now, p(1, 11));
    let before = report(&net);
    assert_eq!(net.state(0, p(1, 11)), Some(PathState::Failed));
    let stale = net.p[0].stats().stale_dropped;
    let replays: Vec<_> = net.hb_acks.iter().filter(|a| a.0 == 0).cloned().collect();
    assert!(!replays.is_empty(), "answers were seen");
    for (_, arrival, bytes) in &replays {
        net.p[0].handle_datagram_placing(net.now, *arrival, bytes, &mut NoPlacement);
        // the same answer on another path
        let other = p(1 - arrival.rail.0, RAILS[1][1 - arrival.rail.0 as usize]);
        net.p[0].handle_datagram_placing(net.now, other, bytes, &mut NoPlacement);
    }
    // a forged answer with the right tag and a wrong nonce, on every path
    let mut forged = Vec::new();
    wire::encode_heartbeat(&mut forged, &wire::Integrity::Crc32c, tag0, true, 12345);
    for r in 0..2 {
        for remote in [1, 11] {
            let arrival = p(r, remote);
            net.p[0].handle_datagram_placing(net.now, arrival, &forged, &mut NoPlacement);
        }
    }
    // and from an address no peer has
    net.p[0].handle_datagram_placing(net.now, p(0, 99), &forged, &mut NoPlacement);
    assert_eq!(report(&net), before, "no path changed");
    assert!(net.p[0].stats().stale_dropped >= stale + 2 * replays.len() as u64 + 5);
    assert!(net.p[0].paths_of(&99).is_empty(), "no peer adopted");
}

#[test]
fn an_init_listing_too_many_or_foreign_addresses_is_refused_and_counted() {
    let mut p: Protocol<u32> = Protocol::new(cfg(), &[0x30; 32]);
    let integ = wire::Integrity::Crc32c;
    let now = Instant(1_000_000_000);
    let mut list = wire::Addrs::encode(&[1u32.to_wire()]);
    list[0] = wire::MAX_LISTED as u8 + 1;
    let mut d = Vec::new();
    wire::encode_init_listing(&mut d, &integ, 7, &list);
    let corrupt = p.stats().corrupt_dropped;
    p.handle_datagram(now, 5, &d);
    assert_eq!(
        p.stats().corrupt_dropped,
        corrupt + 1,
        "too many: malformed"
    );
    // an IPv4 address listed to an endpoint of simulated nodes
    let v4: std::net::SocketAddr = "10.0.0.1:7".parse().unwrap_or_else(|_| unreachable!());
    let list = wire::Addrs::encode(&[v4.to_wire()]);
    d.clear();
    wire::encode_init_listing(&mut d, &integ, 7, &list);
    p.handle_datagram(now, 5, &d);
    assert_eq!(p.paths_refused(), 1);
    assert!(!p.has_transmits(), "no answer to a refused INIT");
    assert_eq!(p.peer_count(), 0, "nothing kept");
}
