//! The express lane's fast poll between simulated processes joined by
//! real rings (`express_tests::pair`, virtual time): records go straight
//! to their handlers; a stream of them, or a busy-polling loop over empty
//! rings, keeps a request from a peer on the network (no ring) from its
//! handler for a bounded time only (exact on virtual time); a record
//! behind a protocol datagram in the same ring waits its turn. Where the
//! order of polls is the point, the target computes (the world does not
//! poll it) and the test polls it itself.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::am::express::express_poll::{FULL_EVERY, FULL_MAX, STREAK};
use crate::am::express::express_tests::{
    inject, pair, pair_with, record, shm_cfg, Pair, SEED, SETTLE, TAG,
};
use crate::am::{handler, Endpoint, Message};
use crate::config::{Config, TransportChoice};
use crate::net::express::ExpressKind;
use crate::sim::{lan, World};
use crate::time::{Instant, Nanos, MICROS, MILLIS};

/// A pair whose target also hears a peer reached by the network only,
/// a node of its own, at the target's index 2 (returned with it); the
/// target's handler 12 stores into the returned cell how many ring
/// requests (handler 10) had run when it ran, and replies.
fn pair_and_udp_peer() -> (Pair, Arc<Endpoint>, Arc<AtomicU64>) {
    let w = World::seeded(SEED);
    let mut cfg = Config::from_lookup(|_| None).unwrap();
    cfg.transport = TransportChoice::Udp;
    let u = w.node(&cfg).ep;
    let p = pair_with(&w, &[u.name()]);
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
    assert!(
        w.run_until(SETTLE, || u.unanswered_requests() == 0),
        "no round trip by the network"
    );
    assert_eq!(
        returned.load(Ordering::SeqCst),
        0,
        "the network's request came back"
    );
    seen.store(u64::MAX, Ordering::SeqCst);
    (p, u, seen)
}

/// The peer's request to handler 12, sent now: the instant it reaches
/// the target's inbox (the clean network's delay).
fn udp_request(p: &Pair, u: &Arc<Endpoint>) -> Instant {
    u.request(0, &Message::short(12, &[]), false).unwrap();
    p.w.now().plus(lan().delay)
}

/// The longest a datagram of the network waits for the target's receive
/// while its rings carry traffic (`net/transports.rs`'s fallback gaps).
const FALLBACK_WAIT: Nanos = crate::net::FALLBACK_WAIT_MAX;

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

/// A record waits at the ring's head at every poll of the target; time
/// moves a microsecond between polls: the network's request runs at the
/// latest in the first full poll after the fallback's wait, which follows
/// at most `STREAK` fast ones.
#[test]
fn a_stream_of_records_leaves_room_for_a_udp_request() {
    let (p, u, seen) = pair_and_udp_peer();
    let to = p.target.addr();
    let step = MICROS;
    p.computing(p.t, || {
        p.computing(p.f, || {
            let arrive = udp_request(&p, &u);
            let mut txn = 1u32 << 30;
            let mut polls_late = 0;
            while seen.load(Ordering::SeqCst) == u64::MAX {
                txn += 1;
                assert!(inject(
                    &p.friend,
                    to,
                    &record(ExpressKind::Request, 10, &[], txn, TAG)
                ));
                p.target.poll().unwrap();
                // the friend takes the target's replies (answers to
                // nothing of its own: dropped), so its ring never fills
                p.friend.poll().unwrap();
                if p.w.now() >= arrive.plus(FALLBACK_WAIT) {
                    polls_late += 1;
                    assert!(
                        polls_late <= STREAK as u64 + 1,
                        "the request starved behind the ring's records"
                    );
                }
                p.w.run_for(step);
            }
        })
    });
    assert!(p.target.express_stats().fast > 0);
    assert!(
        p.w.run_until(SETTLE, || u.unanswered_requests() == 0),
        "no reply"
    );
}

/// A busy-polling loop over empty rings (a poll every 100 ns): the
/// network's request runs within the fallback's wait and `FULL_EVERY`
/// of its arrival.
#[test]
fn polling_empty_rings_leaves_room_for_a_udp_request() {
    let (p, u, seen) = pair_and_udp_peer();
    let step = 100;
    p.computing(p.t, || {
        let arrive = udp_request(&p, &u);
        let mut polls = 0u64;
        while seen.load(Ordering::SeqCst) == u64::MAX {
            p.target.poll().unwrap();
            polls += 1;
            let late = p.w.now().since(arrive);
            assert!(
                p.w.now() < arrive || late <= FALLBACK_WAIT + FULL_EVERY + step,
                "the request starved while the rings were polled ({polls} polls, {late} ns)"
            );
            p.w.run_for(step);
        }
    });
    assert!(
        p.w.run_until(SETTLE, || u.unanswered_requests() == 0),
        "no reply"
    );
}

/// A busy-polling loop over empty rings (a poll every 100 ns for 200 us)
/// while nothing is due (no protocol timer, the network quiet for
/// longer than the fallback's quiet gap): the polls are quick looks, a
/// full one at most every `FULL_MAX` (there was one every `FULL_EVERY`);
/// a record that comes meanwhile is still taken by the next poll.
#[test]
fn polling_empty_rings_runs_a_full_poll_only_when_one_is_due() {
    let p = pair();
    p.settle();
    // the network quiet (its gap the long one) and no timer near
    p.w.run_for(5 * MILLIS);
    let span = 200 * MICROS;
    let step = 100;
    let (fulls, ran) = p.computing(p.t, || {
        let full_at = || p.target.with(|s| s.express.full_at);
        let mut last = full_at();
        let mut fulls = 0u64;
        let ran0 = p.ran.load(Ordering::SeqCst);
        for i in 0..span / step {
            if i == span / step / 2 {
                assert!(inject(
                    &p.friend,
                    p.target.addr(),
                    &record(ExpressKind::Request, 10, &[], 0x5151_0001, TAG)
                ));
            }
            p.target.poll().unwrap();
            let f = full_at();
            if f != last {
                fulls += 1;
                last = f;
            }
            p.w.run_for(step);
        }
        (fulls, p.ran.load(Ordering::SeqCst) - ran0)
    });
    let timer = p.target.with(|s| s.proto.next_timeout());
    assert!(
        fulls <= span / FULL_MAX + 2,
        "{fulls} full polls in {span} ns of empty looks (next timer {timer:?}; \
         one every {FULL_EVERY} ns would be {})",
        span / FULL_EVERY
    );
    assert_eq!(ran, 1, "the record came in the middle and ran");
    p.settle();
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
    p.computing(p.t, || {
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
        for _ in 0..10 {
            p.target.poll().unwrap();
        }
    });
    assert_eq!(*order.lock().unwrap(), vec![13, 14]);
    p.settle();
}

/// Records of two writers by turns, one of them not in the target's
/// table: the fast poll finds each writer's translation entry for its own
/// records (`EpState::express_source`, kept per writer): the mapped
/// writer's requests run and are answered, the other's never run (each
/// comes back to its handler 0), though both went express.
#[test]
fn records_of_two_writers_each_find_their_own_translation() {
    let w = World::seeded(SEED);
    let p = pair_with(&w, &[]);
    // a third endpoint of the host, which the target does not map
    let x = w.node(&shm_cfg()).ep;
    x.set_tag(TAG);
    x.map(0, p.target.name(), TAG).unwrap();
    x.set_expected_resources(1, 8).unwrap();
    let back = Arc::new(AtomicU64::new(0));
    let b = back.clone();
    x.set_handler(
        0,
        handler(move |_| {
            b.fetch_add(1, Ordering::SeqCst);
        }),
    );
    let settle = |sent: u64| {
        let done = w.run_until(SETTLE, || {
            p.friend.unanswered_requests() == 0 && x.unanswered_requests() == 0
        });
        assert!(done, "requests unanswered");
        assert_eq!(back.load(Ordering::SeqCst), sent, "the third's requests");
        w.run_for(MILLIS);
    };
    // until the third's requests go express (its ring set up by the
    // first ones, which go by the network)
    let mut sent = 0;
    while x.express_stats().requests_sent == 0 && sent < 10 {
        x.request(0, &Message::short(10, &[1]), false).unwrap();
        sent += 1;
        settle(sent);
    }
    assert!(x.express_stats().requests_sent > 0, "no express path");
    let (ran0, t0, x0) = (
        p.ran.load(Ordering::SeqCst),
        p.target.express_stats(),
        x.express_stats(),
    );
    let n = 20u64;
    for _ in 0..n {
        p.friend
            .request(0, &Message::short(10, &[1]), false)
            .unwrap();
        x.request(0, &Message::short(10, &[1]), false).unwrap();
        sent += 1;
        settle(sent);
    }
    assert_eq!(p.ran.load(Ordering::SeqCst) - ran0, n, "handlers run");
    let (t, xs) = (p.target.express_stats(), x.express_stats());
    assert_eq!(
        xs.requests_sent - x0.requests_sent,
        n,
        "the third's, express"
    );
    assert!(
        t.fast - t0.fast >= n,
        "records taken fast: {}",
        t.fast - t0.fast
    );
}
