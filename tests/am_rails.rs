//! Rails over real UDP, two endpoints in one process
//! (`RAMP_RAILS=127.0.0.1,127.0.0.2`: both loopback on Linux): each binds
//! a socket per rail, rail 0 its name; messages are delivered exactly
//! once; what comes to a further rail is received there, counted per
//! rail, and judged as any datagram (junk runs nothing); a send that its
//! path cannot carry (a loopback rail to another host's address) is the
//! path's news (counted on its rail), never the endpoint's failure; a rail that does not exist
//! is refused at open. (Which rail the protocol sends on is h-rproto's:
//! until it is merged, every association's path is rail 0.)

#[path = "common/am_pair.rs"]
mod am_pair;
mod common;

use am_pair::*;

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ramp::am::{self, handler, BundleMode, Data, Message};
use ramp::config::{Config, RAILS, TRANSPORT};

fn rails_cfg(rails: &str) -> Config {
    // not shared memory: the rails carry what the test sends
    rails_over(rails, "udp")
}

fn rails_over(rails: &str, transport: &str) -> Config {
    Config::from_lookup(|k| match k {
        k if k == RAILS => Some(rails.to_string()),
        k if k == TRANSPORT => Some(transport.to_string()),
        _ => None,
    })
    .unwrap()
}

/// `n` medium requests e0 -> e1 (index 1), each answered; every one
/// handled exactly once, none returned.
fn exchange(b: &am::Bundle, e0: &Arc<am::Endpoint>, e1: &Arc<am::Endpoint>, n: u32, h: u8) {
    let seen = Arc::new(parking_lot::Mutex::new(vec![0u32; n as usize]));
    let s = seen.clone();
    e1.set_handler(
        h,
        handler(move |m| {
            let k = m.args[0];
            if let Data::Medium(buf) = &mut m.data {
                assert!(buf.iter().all(|&x| x == k as u8));
            }
            s.lock()[k as usize] += 1;
            am::reply(m.token, &Message::short(h + 1, &[k])).unwrap();
        }),
    );
    let replies = Arc::new(AtomicU64::new(0));
    let r = replies.clone();
    e0.set_handler(
        h + 1,
        handler(move |_| {
            r.fetch_add(1, Ordering::SeqCst);
        }),
    );
    for k in 0..n {
        let payload = vec![k as u8; (k as usize * 131) % 3000];
        e0.request(1, &Message::medium(h, &[k], &payload), false)
            .unwrap();
    }
    common::waiting_for("the replies");
    while replies.load(Ordering::SeqCst) < n as u64 {
        b.poll().unwrap();
    }
    assert!(
        seen.lock().iter().all(|&c| c == 1),
        "every request handled exactly once"
    );
}

fn returned_counter(e: &Arc<am::Endpoint>) -> Arc<AtomicU64> {
    let returned = Arc::new(AtomicU64::new(0));
    let rt = returned.clone();
    e.set_handler(
        0,
        handler(move |m| {
            if let Data::Returned { status, .. } = m.data {
                eprintln!("returned: {status:?} args {:?}", m.args);
            }
            rt.fetch_add(1, Ordering::SeqCst);
        }),
    );
    returned
}

#[test]
fn every_rail_has_its_socket_and_messages_arrive_exactly_once() {
    let _watchdog = common::watchdog(
        "am_rails::every_rail_has_its_socket_and_messages_arrive_exactly_once",
        Duration::from_secs(120),
    );
    let (b, e0, e1) = pair_with(&rails_cfg("127.0.0.1,127.0.0.2"));
    let returned = returned_counter(&e0);
    for e in [&e0, &e1] {
        let rails = e.rail_statistics();
        let ips: Vec<String> = rails.iter().map(|r| r.addr.ip().to_string()).collect();
        assert_eq!(ips, ["127.0.0.1", "127.0.0.2"]);
        assert_eq!(rails[0].addr, e.addr(), "rail 0 is the endpoint's name");
    }
    exchange(&b, &e0, &e1, 200, 20);
    assert_eq!(returned.load(Ordering::SeqCst), 0);
    let (r0, r1) = (e0.rail_statistics(), e1.rail_statistics());
    for r in [&r0, &r1] {
        assert!(
            r[0].datagrams_sent > 0 && r[0].datagrams_received > 0,
            "{r:?}"
        );
        assert!(r.iter().all(|x| x.paths_down == 0), "{r:?}");
        // the second rail carried the protocol's own traffic (its paths'
        // confirming heartbeats, and data once confirmed)
        assert!(
            r[1].datagrams_sent > 0 && r[1].datagrams_received > 0,
            "{r:?}"
        );
    }
    // junk to e1's second rail: received and counted there, dropped as
    // any malformed datagram; nothing runs, nothing breaks
    let corrupt = e1.statistics().corrupt_dropped;
    let junk = UdpSocket::bind("127.0.0.5:0").unwrap();
    let rail1: SocketAddr = r1[1].addr;
    let before = e1.rail_statistics()[1].datagrams_received;
    for k in 0..3u8 {
        junk.send_to(&[k; 40], rail1).unwrap();
    }
    common::waiting_for("the junk on rail 1");
    while e1.statistics().corrupt_dropped < corrupt + 3 {
        b.poll().unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(e1.rail_statistics()[1].datagrams_received >= before + 3);
    // the report names every rail with its counts
    let report = e1.paths_report();
    assert!(
        report.contains(&format!("rail 1 at {rail1}: datagrams sent ")),
        "{report}"
    );
    // and every path to the peer: 2 rails x 2 addresses, one current
    let peer = e0.name().to_addr().unwrap();
    let paths = e1.peer_paths(peer).unwrap();
    assert_eq!(paths.len(), 4, "{paths:?}");
    assert_eq!(paths.iter().filter(|p| p.current).count(), 1, "{paths:?}");
    assert!(
        report.contains(&format!("peer {peer} path rail 1 ")),
        "{report}"
    );
    exchange(&b, &e0, &e1, 50, 30);
    assert_eq!(returned.load(Ordering::SeqCst), 0);
}

/// Same-host endpoints with two loopback rails keep their ring (shared
/// memory): every datagram sealed for the ring goes through it, none by
/// UDP where its receiver would refuse it (`proto::peer::seal_on`; the
/// rails' other paths answer faster than a busy ring, which once moved
/// the traffic to UDP and hung `ramp bench txn`: proven on virtual time
/// in `proto::rails_tests::same_host`). What holds at any speed: every
/// request handled once, nothing returned, nothing refused as corrupt,
/// the name's path current.
#[test]
fn same_host_endpoints_with_rails_keep_their_ring() {
    let _watchdog = common::watchdog(
        "am_rails::same_host_endpoints_with_rails_keep_their_ring",
        Duration::from_secs(120),
    );
    let (b, e0, e1) = pair_with(&rails_over("127.0.0.1,127.0.0.2", "shm"));
    let returned = returned_counter(&e0);
    exchange(&b, &e0, &e1, 3000, 40);
    assert_eq!(returned.load(Ordering::SeqCst), 0);
    for (e, peer) in [(&e0, &e1), (&e1, &e0)] {
        assert_eq!(e.statistics().corrupt_dropped, 0, "nothing refused");
        let to = peer.name().to_addr().unwrap();
        let cur: Vec<_> = e
            .peer_paths(to)
            .unwrap()
            .into_iter()
            .filter(|p| p.current)
            .collect();
        assert_eq!(cur.len(), 1, "{cur:?}");
        assert_eq!((cur[0].rail, cur[0].remote), (0, to), "the ring's path");
    }
}

#[test]
fn a_send_its_path_cannot_carry_does_not_fail_the_endpoint() {
    let _watchdog = common::watchdog(
        "am_rails::a_send_its_path_cannot_carry_does_not_fail_the_endpoint",
        Duration::from_secs(120),
    );
    let cfg = rails_cfg("127.0.0.1,127.0.0.2");
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e0 = am::allocate_endpoint_with(&b, &cfg).unwrap();
    let e1 = am::allocate_endpoint_with(&b, &cfg).unwrap();
    // a peer beyond this host: rail 0 (loopback) cannot send there
    // (EINVAL, or ENETUNREACH without a route): a path error
    let far = am::EndpointName::from_addr("203.0.113.9:9".parse().unwrap());
    for e in [&e0, &e1] {
        e.set_tag(9);
        e.set_num_translations(3).unwrap();
        e.map(0, e0.name(), 9).unwrap();
        e.map(1, e1.name(), 9).unwrap();
        e.map(2, far, 9).unwrap();
        e.set_expected_resources(3, 4).unwrap();
    }
    let returned = returned_counter(&e0);
    for k in 0..4 {
        e0.request(2, &Message::short(40, &[k]), false)
            .expect("a path error is not the endpoint's");
    }
    common::waiting_for("the path's news");
    while e0.rail_statistics()[0].paths_down == 0 {
        b.poll().expect("nor at a poll");
        std::thread::sleep(Duration::from_millis(1));
    }
    // the endpoint goes on: its other peer is served exactly once
    exchange(&b, &e0, &e1, 100, 20);
    assert_eq!(returned.load(Ordering::SeqCst), 0);
}

#[test]
fn a_rail_that_is_not_on_this_host_is_refused_at_open() {
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    for rails in ["127.0.0.1,nosuch9", "127.0.0.1,203.0.113.9"] {
        assert!(
            am::allocate_endpoint_with(&b, &rails_cfg(rails)).is_err(),
            "{rails}"
        );
    }
}
