//! The express lane's fast poll over real rings in one process: records go
//! straight to their handlers; a stream of them, or a busy-polling loop
//! over empty rings, never keeps a UDP peer's request from its handler; a
//! record behind a protocol datagram in the same ring waits its turn.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::super::express_tests::{inject, pair, pair_with, record, Pair, TAG};
use crate::am::{handler, BundleMode, Endpoint, Message};
use crate::config::{Config, TransportChoice};
use crate::net::express::ExpressKind;

/// A pair (`express_tests::pair`) whose target also hears a peer reached
/// by UDP only, in a bundle of its own, at the target's index 2; the
/// target's handler 12 stores into the returned cell how many ring
/// requests (handler 10) had run when it ran, and replies.
fn pair_and_udp_peer() -> (Pair, Arc<crate::am::Bundle>, Arc<Endpoint>, Arc<AtomicU64>) {
    crate::am::init().unwrap();
    let b = crate::am::allocate_bundle(BundleMode::Seq).unwrap();
    let mut cfg = Config::from_lookup(|_| None).unwrap();
    cfg.transport = TransportChoice::Udp;
    let tr = crate::net::open(&cfg, &crate::clock::Clock::Real).unwrap();
    let u = crate::am::allocate_endpoint_over(b.id, &cfg, tr).unwrap();
    let p = pair_with(&[u.name()]);
    u.set_tag(TAG);
    u.map(0, p.target.name(), TAG).unwrap();
    u.set_expected_resources(1, 8).unwrap();
    u.set_handler(11, handler(|_| {}));
    let returned = Arc::new(AtomicU64::new(0));
    let r = returned.clone();
    u.set_handler(
        0,
        handler(move |_| {
            r.fetch_add(1, Ordering::SeqCst);
        }),
    );
    let seen = Arc::new(AtomicU64::new(u64::MAX));
    let (s, ran) = (seen.clone(), p.ran.clone());
    p.target.set_handler(
        12,
        handler(move |h| {
            s.store(ran.load(Ordering::SeqCst), Ordering::SeqCst);
            crate::am::reply(h.token, &Message::short(11, &[])).unwrap();
        }),
    );
    // one round trip first: the association is set up
    u.request(0, &Message::short(12, &[]), false).unwrap();
    let t0 = Instant::now();
    while u.unanswered_requests() > 0 {
        p.target.poll().unwrap();
        b.poll().unwrap();
        assert!(t0.elapsed() < Duration::from_secs(10), "no UDP round trip");
    }
    assert_eq!(
        returned.load(Ordering::SeqCst),
        0,
        "the UDP request came back"
    );
    seen.store(u64::MAX, Ordering::SeqCst);
    (p, b, u, seen)
}

#[test]
fn records_go_from_the_ring_straight_to_their_handlers() {
    let p = pair();
    let (f0, t0) = (p.friend.express_stats(), p.target.express_stats());
    let n = 200u64;
    for k in 0..n {
        p.friend
            .request(0, &Message::short(10, &[k as u32]), false)
            .unwrap();
        p.settle();
    }
    let (f, t) = (p.friend.express_stats(), p.target.express_stats());
    assert_eq!(t.requests_received - t0.requests_received, n);
    assert_eq!(f.replies_received - f0.replies_received, n);
    // every one but those a full poll took (one in `STREAK` + 1 at most)
    assert!(
        t.fast - t0.fast >= n * 3 / 4,
        "requests taken fast: {} of {n}",
        t.fast - t0.fast
    );
    assert!(
        f.fast - f0.fast >= n * 3 / 4,
        "replies taken fast: {} of {n}",
        f.fast - f0.fast
    );
    assert_eq!((f.dropped, t.dropped), (0, 0));
}

#[test]
fn a_stream_of_records_leaves_room_for_a_udp_request() {
    let (p, ub, u, seen) = pair_and_udp_peer();
    u.request(0, &Message::short(12, &[]), false).unwrap();
    // a record waits at the ring's head at every poll of the target
    let to = p.target.addr();
    let t0 = Instant::now();
    let mut txn = 1u32 << 30;
    while seen.load(Ordering::SeqCst) == u64::MAX {
        txn += 1;
        assert!(inject(
            &p.friend,
            to,
            &record(ExpressKind::Request, 10, &[], txn, TAG)
        ));
        p.target.poll().unwrap();
        // the friend takes the target's replies (answers to nothing of
        // its own: dropped), so its ring never fills
        p.friend.poll().unwrap();
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "the UDP request starved behind the ring's records"
        );
    }
    assert!(p.target.express_stats().fast > 0);
    let t0 = Instant::now();
    while u.unanswered_requests() > 0 {
        ub.poll().unwrap();
        p.target.poll().unwrap();
        assert!(t0.elapsed() < Duration::from_secs(5), "no reply by UDP");
    }
}

#[test]
fn polling_empty_rings_leaves_room_for_a_udp_request() {
    let (p, ub, u, seen) = pair_and_udp_peer();
    u.request(0, &Message::short(12, &[]), false).unwrap();
    let t0 = Instant::now();
    let mut polls = 0u64;
    while seen.load(Ordering::SeqCst) == u64::MAX {
        p.target.poll().unwrap();
        polls += 1;
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "the UDP request starved while the rings were polled ({polls} polls)"
        );
    }
    let t0 = Instant::now();
    while u.unanswered_requests() > 0 {
        ub.poll().unwrap();
        assert!(t0.elapsed() < Duration::from_secs(5), "no reply by UDP");
    }
}

#[test]
fn a_record_behind_a_protocol_datagram_waits_its_turn() {
    let p = pair();
    let order = Arc::new(Mutex::new(Vec::new()));
    let o = order.clone();
    p.target.set_handler(
        13,
        handler(move |h| {
            o.lock().unwrap().push(13u32);
            crate::am::reply(h.token, &Message::short(11, &[0])).unwrap();
        }),
    );
    let o = order.clone();
    p.target.set_handler(
        14,
        handler(move |_| {
            o.lock().unwrap().push(14u32);
        }),
    );
    // a medium request goes by the protocol, through the same ring...
    p.friend
        .request(0, &Message::medium(13, &[], &[7u8; 100]), false)
        .unwrap();
    // ...and a record right behind it
    assert!(inject(
        &p.friend,
        p.target.addr(),
        &record(ExpressKind::Request, 14, &[], 0x7777_0001, TAG)
    ));
    let t0 = Instant::now();
    while order.lock().unwrap().len() < 2 {
        p.target.poll().unwrap();
        assert!(t0.elapsed() < Duration::from_secs(5), "not both ran");
    }
    assert_eq!(*order.lock().unwrap(), vec![13, 14]);
    p.settle();
}
