//! The AM layer over real UDP sockets, two endpoints in one process: every
//! category, IPv6 loopback, exactly once under injected faults, a
//! translation table of 4096 peers. ACKs riding on messages:
//! `am_udp_acks.rs`; bursts, batches and held requests, streams of long
//! requests: `am_udp_batch.rs`; the pairs they share: `common/am_pair.rs`.

#[path = "common/am_pair.rs"]
mod am_pair;
mod common;

use am_pair::*;

use std::time::Duration;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ramp::am::{self, handler, BundleMode, Data, Message, VecSegment};

fn setup() -> (Arc<am::Bundle>, Arc<am::Endpoint>, Arc<am::Endpoint>) {
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e0 = am::allocate_endpoint(&b).unwrap();
    let e1 = am::allocate_endpoint(&b).unwrap();
    for e in [&e0, &e1] {
        e.set_tag(77);
        e.map(0, e0.name(), 77).unwrap();
        e.map(1, e1.name(), 77).unwrap();
        e.set_expected_resources(2, 8).unwrap();
    }
    (b, e0, e1)
}

#[test]
fn request_reply_every_category() {
    let _watchdog = common::watchdog(
        "am_udp::request_reply_every_category",
        Duration::from_secs(120),
    );
    let (b, e0, e1) = setup();
    let seg = VecSegment::new(4096);
    e1.set_segment(Some(seg.clone()));
    let got = Arc::new(AtomicU64::new(0));
    let replies = Arc::new(AtomicU64::new(0));
    let g = got.clone();
    e1.set_handler(
        10,
        handler(move |h| {
            let sum: u64 = h.args.iter().map(|&a| a as u64).sum();
            match &mut h.data {
                Data::None => {}
                Data::Medium(b) => assert_eq!(b.len(), 100),
                Data::Long { len, .. } => assert_eq!(*len, 1000),
                _ => panic!(),
            }
            g.fetch_add(sum, Ordering::SeqCst);
            am::reply(h.token, &Message::short(11, &[7])).unwrap();
        }),
    );
    let r = replies.clone();
    e0.set_handler(
        11,
        handler(move |h| {
            assert_eq!(h.args, &[7]);
            r.fetch_add(1, Ordering::SeqCst);
        }),
    );
    e0.request(1, &Message::short(10, &[1, 2, 3]), false)
        .unwrap();
    e0.request(1, &Message::medium(10, &[5], &[9u8; 100]), false)
        .unwrap();
    e0.request(1, &Message::long(10, &[], &[3u8; 1000], 64), false)
        .unwrap();
    common::waiting_for("the replies");
    while replies.load(Ordering::SeqCst) < 3 {
        b.poll().unwrap();
    }
    assert_eq!(got.load(Ordering::SeqCst), 11);
    assert_eq!(&seg.snapshot()[64..1064], &[3u8; 1000][..]);
    let s = e0.statistics();
    assert_eq!(s.requests_sent, [1, 1, 1]);
    assert_eq!(s.replies_received, [3, 0, 0]);
}

/// `n` medium requests of distinct sizes from e0 to e1, each answered; checks
/// every payload arrives intact exactly once.
fn exchange(b: &am::Bundle, e0: &Arc<am::Endpoint>, e1: &Arc<am::Endpoint>, n: u32) {
    let seen = Arc::new(parking_lot::Mutex::new(vec![0u32; n as usize]));
    let s = seen.clone();
    e1.set_handler(
        20,
        handler(move |h| {
            let k = h.args[0];
            if let Data::Medium(buf) = &mut h.data {
                assert_eq!(buf.len(), (k as usize * 131) % 3000);
                assert!(buf.iter().all(|&x| x == k as u8));
            }
            s.lock()[k as usize] += 1;
            am::reply(h.token, &Message::short(21, &[k])).unwrap();
        }),
    );
    let returned = Arc::new(AtomicU64::new(0));
    let rt = returned.clone();
    e0.set_handler(
        0,
        handler(move |h| {
            if let Data::Returned { status, .. } = h.data {
                eprintln!("returned: {status:?} args {:?}", h.args);
            }
            rt.fetch_add(1, Ordering::SeqCst);
        }),
    );
    let replies = Arc::new(AtomicU64::new(0));
    let r = replies.clone();
    e0.set_handler(
        21,
        handler(move |_| {
            r.fetch_add(1, Ordering::SeqCst);
        }),
    );
    for k in 0..n {
        let payload = vec![k as u8; (k as usize * 131) % 3000];
        e0.request(1, &Message::medium(20, &[k], &payload), false)
            .unwrap();
    }
    common::waiting_for("the replies");
    while replies.load(Ordering::SeqCst) < n as u64 {
        b.poll().unwrap();
        assert_eq!(
            returned.load(Ordering::SeqCst),
            0,
            "a message came back; sender {:?}\nreceiver {:?}",
            e0.statistics(),
            e1.statistics()
        );
    }
    assert!(
        seen.lock().iter().all(|&c| c == 1),
        "every request handled exactly once"
    );
}

#[test]
fn ipv6_loopback() {
    let _watchdog = common::watchdog("am_udp::ipv6_loopback", Duration::from_secs(120));
    let mut cfg = ramp::config::Config::from_lookup(|_| None).unwrap();
    cfg.interface = Some("::1".into());
    let (b, e0, e1) = pair_with(&cfg);
    assert!(e0.addr().is_ipv6());
    exchange(&b, &e0, &e1, 50);
}

#[test]
fn fault_injection_on_real_sockets_keeps_exactly_once() {
    let _watchdog = common::watchdog(
        "am_udp::fault_injection_on_real_sockets_keeps_exactly_once",
        Duration::from_secs(120),
    );
    let cfg = ramp::config::Config::from_lookup(|k| {
        match k {
            "RAMP_FAULT_LOSS" => Some("0.1"),
            "RAMP_FAULT_DUP" => Some("0.05"),
            "RAMP_FAULT_CORRUPT" => Some("0.02"),
            "RAMP_FAULT_REORDER" => Some("0.1"),
            "RAMP_FAULT_SEED" => Some("99"),
            _ => None,
        }
        .map(String::from)
    })
    .unwrap();
    let (b, e0, e1) = pair_with(&cfg);
    exchange(&b, &e0, &e1, 300);
    let (s0, s1) = (e0.statistics(), e1.statistics());
    assert!(
        s0.packets_retransmitted + s1.packets_retransmitted > 0,
        "loss was injected"
    );
    assert!(
        s0.duplicates_dropped + s1.duplicates_dropped > 0,
        "duplicates were injected"
    );
    assert!(
        s0.corrupt_dropped + s1.corrupt_dropped > 0,
        "corruption was injected"
    );
}

/// A translation table of 4096 entries (AMUDP stops at 256): a request to
/// each index reaches the endpoint mapped there, and is answered.
#[test]
fn translation_table_of_4096_peers() {
    let _watchdog = common::watchdog(
        "am_udp::translation_table_of_4096_peers",
        Duration::from_secs(120),
    );
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let servers: Vec<_> = (0..8).map(|_| am::allocate_endpoint(&b).unwrap()).collect();
    let client = am::allocate_endpoint(&b).unwrap();
    const N: usize = 4096;
    client.set_num_translations(N as i64 + 1).unwrap();
    for i in 0..N {
        client.map(i as i64, servers[i % 8].name(), 33).unwrap();
    }
    client.map(N as i64, client.name(), 33).unwrap();
    client.set_tag(33);
    client.set_expected_resources(N as i32, 4).unwrap();
    let hits = Arc::new(parking_lot::Mutex::new(vec![0u32; 8]));
    for (k, s) in servers.iter().enumerate() {
        s.set_tag(33);
        s.map(0, client.name(), 33).unwrap();
        s.set_expected_resources(1, 4).unwrap();
        let h = hits.clone();
        s.set_handler(
            5,
            handler(move |a| {
                assert_eq!(
                    a.args[0] as usize % 8,
                    k,
                    "request for index {} reached server {k}",
                    a.args[0]
                );
                h.lock()[k] += 1;
                am::reply(a.token, &Message::short(6, a.args)).unwrap();
            }),
        );
    }
    let got = Arc::new(parking_lot::Mutex::new(vec![0u8; N]));
    let g = got.clone();
    client.set_handler(6, handler(move |a| g.lock()[a.args[0] as usize] += 1));
    for i in 0..N {
        client
            .request(i as u32, &Message::short(5, &[i as u32]), false)
            .unwrap();
    }
    common::waiting_for("an answer from every index");
    while got.lock().contains(&0) {
        b.poll().unwrap();
    }
    assert!(
        got.lock().iter().all(|&c| c == 1),
        "each index answered exactly once"
    );
    assert!(hits.lock().iter().all(|&c| c == (N / 8) as u32));
    assert_eq!(client.num_translations(), N + 1);
}
