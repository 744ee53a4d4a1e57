//! The express lane between simulated processes (`sim::World`, virtual
//! time) joined by real shared-memory rings, the simulated network their
//! fallback: records used both ways and counted; a request the lane
//! refuses goes by the protocol; hostile records written straight into a
//! ring (malformed, forged or repeated answers, a flood past the queue,
//! one by the network) are dropped and counted, run no handler, free no
//! credit twice; job keys open or close the lane; requests behind an
//! unanswered one wait for the requester's poll.
//!
//! The test calls the endpoints' API as their programs would (a blocking
//! call runs the rest of the world). A target that must not poll yet
//! computes (`Program::Computes`: the world does not poll it), and the
//! test polls it itself where the order of polls is the point.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::am::{handler, Endpoint, EndpointName, Message};
use crate::config::{Config, TransportChoice};
use crate::net::express::{Express, ExpressKind, MAX_ARGS, MAX_LEN};
use crate::sim::{Program, World};
use crate::time::{Nanos, MILLIS};

pub(in crate::am) const TAG: u64 = 0xe59;
/// The world's seed (no network faults: it draws the endpoints' secrets).
pub(in crate::am) const SEED: u64 = 1;
/// Virtual time the requests of a test are given to be answered, far
/// more than they take (a failure is a request never answered).
pub(in crate::am) const SETTLE: Nanos = 10_000 * MILLIS;

/// A node's configuration: shared memory first, the network after.
pub(in crate::am) fn shm_cfg() -> Config {
    let mut cfg = Config::from_lookup(|_| None).unwrap();
    cfg.transport = TransportChoice::Shm;
    cfg
}

pub(in crate::am) fn record(
    kind: ExpressKind,
    handler: u8,
    args: &[u32],
    txn: u32,
    tag: u64,
) -> Vec<u8> {
    let mut a = [0u32; MAX_ARGS];
    a[..args.len()].copy_from_slice(args);
    let mut buf = [0u8; MAX_LEN];
    let n = Express {
        kind,
        handler,
        nargs: args.len() as u8,
        args: a,
        txn,
        tag,
    }
    .encode(&mut buf);
    buf[..n].to_vec()
}

/// Writes `rec` into `from`'s ring to `to` as it is.
pub(in crate::am) fn inject(from: &Endpoint, to: SocketAddr, rec: &[u8]) -> bool {
    from.with(|s| s.transports.express_send(to, rec, false))
}

/// Two nodes of a world, each one endpoint. (The world goes last: its
/// host addresses are free for another world once it has gone.)
pub(in crate::am) struct Pair {
    /// the target's node and the friend's
    pub(in crate::am) t: usize,
    pub(in crate::am) f: usize,
    /// sends requests (index 0: `target`; index 1: itself)
    pub(in crate::am) friend: Arc<Endpoint>,
    /// handler 10 replies with handler 11 and the sum of its arguments
    pub(in crate::am) target: Arc<Endpoint>,
    pub(in crate::am) ran: Arc<AtomicU64>,
    pub(in crate::am) replies: Arc<AtomicU64>,
    pub(in crate::am) returned: Arc<AtomicU64>,
    pub(in crate::am) w: World,
}

pub(in crate::am) fn pair() -> Pair {
    pair_with(&World::seeded(SEED), &[])
}

/// `pair` as two new nodes of `w`, the target also mapping `more` (at
/// indexes 2 on).
pub(in crate::am) fn pair_with(w: &World, more: &[EndpointName]) -> Pair {
    pair_cfg(w, more, &shm_cfg())
}

/// `pair_with`, both nodes configured by `cfg`.
pub(in crate::am) fn pair_cfg(w: &World, more: &[EndpointName], cfg: &Config) -> Pair {
    let (tn, fnode) = (w.node(cfg), w.node(cfg));
    let (target, friend) = (tn.ep.clone(), fnode.ep.clone());
    let (ran, replies, returned) = Default::default();
    for e in [&target, &friend] {
        e.set_tag(TAG);
        e.map(0, target.name(), TAG).unwrap();
        e.map(1, friend.name(), TAG).unwrap();
    }
    for (i, &m) in more.iter().enumerate() {
        target.map(2 + i as i64, m, TAG).unwrap();
    }
    for e in [&target, &friend] {
        e.set_expected_resources(2, 8).unwrap();
    }
    let r: Arc<AtomicU64> = Arc::clone(&ran);
    target.set_handler(
        10,
        handler(move |h| {
            r.fetch_add(1, Ordering::SeqCst);
            let s = h.args.iter().sum::<u32>();
            crate::am::reply(h.token, &Message::short(11, &[s])).unwrap();
        }),
    );
    let p: Arc<AtomicU64> = Arc::clone(&replies);
    friend.set_handler(
        11,
        handler(move |h| {
            p.fetch_add(h.args[0] as u64, Ordering::SeqCst);
        }),
    );
    let q: Arc<AtomicU64> = Arc::clone(&returned);
    friend.set_handler(
        0,
        handler(move |_| {
            q.fetch_add(1, Ordering::SeqCst);
        }),
    );
    let pair = Pair {
        t: tn.index,
        f: fnode.index,
        friend,
        target,
        ran,
        replies,
        returned,
        w: w.clone(),
    };
    // until a request and its reply went express (each ring is set up by
    // the first messages, which go by the network)
    let express_both_ways = |p: &Pair| {
        p.friend.express_stats().requests_sent > 0 && p.target.express_stats().replies_sent > 0
    };
    for _ in 0..10 {
        if express_both_ways(&pair) {
            break;
        }
        pair.friend
            .request(0, &Message::short(10, &[0]), false)
            .unwrap();
        pair.settle();
    }
    assert!(express_both_ways(&pair), "no express path");
    pair
}

impl Pair {
    /// Node `i` computes (the world does not poll it) while `f` runs,
    /// then polls again.
    pub(in crate::am) fn computing<R>(&self, i: usize, f: impl FnOnce() -> R) -> R {
        self.w.set_program(i, Program::Computes);
        let r = f();
        self.w.set_program(i, Program::Polls);
        r
    }

    /// Every credit is free, none counted twice: 8 requests to handler
    /// `h` go out while the target does not poll, not a ninth; then they
    /// run down.
    pub(in crate::am) fn assert_credits_whole(&self, h: u8) {
        self.computing(self.t, || {
            for _ in 0..8 {
                self.friend
                    .request(0, &Message::short(h, &[0]), true)
                    .unwrap();
            }
            assert!(self
                .friend
                .request(0, &Message::short(h, &[0]), true)
                .is_err());
        });
        self.settle();
    }

    /// Runs the world until nothing is unanswered, then a millisecond more
    /// (what the answers set off runs down).
    pub(in crate::am) fn settle(&self) {
        let done = self
            .w
            .run_until(SETTLE, || self.friend.unanswered_requests() == 0);
        assert!(done, "requests unanswered");
        self.w.run_for(MILLIS);
    }
}

#[test]
fn requests_and_replies_go_express_and_credits_come_back() {
    let p = pair();
    let (f0, t0) = (p.friend.express_stats(), p.target.express_stats());
    let before = p.replies.load(Ordering::SeqCst);
    let n = 2000u64;
    for k in 0..n {
        // 8 credits: most wait for the reply of an earlier one
        p.friend
            .request(0, &Message::short(10, &[k as u32, 1]), false)
            .unwrap();
    }
    p.settle();
    let want: u64 = (0..n).map(|k| k + 1).sum();
    assert_eq!(p.replies.load(Ordering::SeqCst) - before, want);
    let (f, t) = (p.friend.express_stats(), p.target.express_stats());
    assert_eq!(f.requests_sent - f0.requests_sent, n, "all went express");
    assert_eq!(t.requests_received - t0.requests_received, n);
    assert_eq!(t.replies_sent - t0.replies_sent, n);
    assert_eq!(f.replies_received - f0.replies_received, n);
    assert_eq!((f.dropped, t.dropped), (0, 0));
    assert_eq!(p.returned.load(Ordering::SeqCst), 0);
    // requests and replies counted as the protocol's are
    let s = p.friend.statistics();
    assert!(s.requests_sent[0] >= n);
}

/// A request behind an unanswered one is remembered before its record is
/// written (`send_request`); when the lane then refuses it, it is
/// forgotten again and goes by the protocol: each request answered once,
/// every credit back, nothing returned.
#[test]
fn a_request_behind_another_that_the_lane_refuses_goes_by_the_protocol() {
    let p = pair();
    let sent0 = p.friend.express_stats().requests_sent;
    let before = p.replies.load(Ordering::SeqCst);
    // unanswered (the target does not poll): the next ones are behind it
    p.computing(p.t, || {
        p.friend
            .request(0, &Message::short(10, &[100, 1]), true)
            .unwrap();
        assert_eq!(p.friend.express_stats().requests_sent, sent0 + 1);
        // the lane refuses from now on (as a full ring would)
        p.friend.with(|s| s.express.send = false);
        for k in 0..3u32 {
            p.friend
                .request(0, &Message::short(10, &[k, 1]), true)
                .unwrap();
        }
        assert_eq!(p.friend.express_stats().requests_sent, sent0 + 1);
        assert_eq!(p.friend.unanswered_requests(), 4);
        // only the first waits as an express request (a lost ring returns
        // those, and only an express record may answer them)
        let express = p
            .friend
            .with(|s| s.outstanding.values().filter(|o| o.express).count());
        assert_eq!(express, 1);
    });
    p.settle();
    assert_eq!(
        p.replies.load(Ordering::SeqCst) - before,
        101 + (1..=3).sum::<u64>(),
        "each request answered once"
    );
    assert_eq!(p.returned.load(Ordering::SeqCst), 0);
    p.friend.with(|s| s.express.send = true);
    p.assert_credits_whole(10);
}

#[test]
fn hostile_records_are_dropped_and_counted() {
    let p = pair();
    let (to, from) = (p.target.addr(), p.friend.addr());
    let ran0 = p.ran.load(Ordering::SeqCst);
    let good = record(ExpressKind::Request, 10, &[1, 2], 77, TAG);
    let mut bad: Vec<Vec<u8>> = vec![
        good[..good.len() - 1].to_vec(), // shorter than its count says
        [&good[..], &[0u8; 4]].concat(), // longer
        b"RX".to_vec(),                  // a header cut short
        vec![
            b'R', b'X', 0, 10, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        ],
    ];
    let mut g = good.clone();
    g[4] = 200; // argument count past the limit
    bad.push(g);
    let mut g = good.clone();
    g[2] = 9; // no such kind
    bad.push(g);
    let mut g = good.clone();
    g[6] = 1; // padding
    bad.push(g);
    // answers to nothing of ours: no such request, an automatic one too
    bad.push(record(ExpressKind::Reply, 11, &[1000], 0xfeed, TAG));
    bad.push(record(ExpressKind::AutoReply, 0, &[], 0xfeed, TAG));
    let n = bad.len() as u64;
    let d0 = p.target.express_stats().dropped;
    for r in &bad {
        assert!(inject(&p.friend, to, r));
    }
    // forged answers to the friend as well (from the target's ring)
    let f0 = p.friend.express_stats().dropped;
    let replies0 = p.replies.load(Ordering::SeqCst);
    assert!(inject(
        &p.target,
        from,
        &record(ExpressKind::Reply, 11, &[5], 0xbad, TAG)
    ));
    p.w.run_for(MILLIS);
    assert_eq!(p.target.express_stats().dropped - d0, n);
    assert_eq!(p.friend.express_stats().dropped - f0, 1);
    assert_eq!(p.ran.load(Ordering::SeqCst), ran0, "no handler ran");
    assert_eq!(p.replies.load(Ordering::SeqCst), replies0);

    // the same by the network, from a port of the target's host: never
    // taken as a record (a malformed datagram)
    let malformed = |e: &Endpoint| e.statistics().corrupt_dropped;
    let m0 = malformed(&p.target);
    p.w.send_datagram(SocketAddr::new(to.ip(), 9), to, &good);
    p.w.run_for(MILLIS);
    assert_eq!(malformed(&p.target), m0 + 1);
    assert_eq!(p.ran.load(Ordering::SeqCst), ran0, "no handler ran");

    // the lane still works
    p.friend
        .request(0, &Message::short(10, &[3, 4]), false)
        .unwrap();
    p.settle();
    assert_eq!(p.ran.load(Ordering::SeqCst), ran0 + 1);
}

#[test]
fn a_repeated_answer_frees_no_credit_twice() {
    let p = pair();
    let from = p.friend.addr();
    let (replies0, ran0) = (
        p.replies.load(Ordering::SeqCst),
        p.ran.load(Ordering::SeqCst),
    );
    let (sent0, answered0) = (
        p.friend.express_stats().requests_sent,
        p.target.express_stats().replies_sent,
    );
    p.friend
        .request(0, &Message::short(10, &[40, 2]), false)
        .unwrap();
    assert_eq!(p.friend.express_stats().requests_sent, sent0 + 1);
    // the request's id, as the target will echo it
    let txn = p.friend.with(|s| *s.outstanding.keys().next().unwrap());
    // the target answers while the friend computes; a copy of its answer
    // follows, and another answer of the other kind
    p.computing(p.f, || {
        let answered = p.w.run_until(SETTLE, || {
            p.target.express_stats().replies_sent > answered0 && p.ran.load(Ordering::SeqCst) > ran0
        });
        assert!(answered, "the target never answered");
        let copy = record(ExpressKind::Reply, 11, &[42], txn, TAG);
        assert!(inject(&p.target, from, &copy));
        assert!(inject(
            &p.target,
            from,
            &record(ExpressKind::AutoReply, 0, &[], txn, TAG)
        ));
    });
    let d0 = p.friend.express_stats().dropped;
    p.settle();
    assert_eq!(
        p.replies.load(Ordering::SeqCst) - replies0,
        42,
        "one reply ran"
    );
    assert_eq!(p.friend.express_stats().dropped - d0, 2);
    assert_eq!(p.friend.unanswered_requests(), 0);
    assert_eq!(p.returned.load(Ordering::SeqCst), 0);
    p.assert_credits_whole(10);
}

#[test]
fn a_flood_of_requests_is_bounded_by_the_receive_depth() {
    let p = pair();
    let to = p.target.addr();
    let rec = record(ExpressKind::Request, 10, &[1], 0x5eed, TAG);
    let refused = |e: &Endpoint| e.express_stats().refused;
    let depth = p.target.with(|s| s.proto.recv_depth()) as u64;
    let received0 = p.target.express_stats().requests_received;
    let mut written = 0u64;
    // the target's program only moves packets (no handler runs): its
    // queue fills
    p.computing(p.t, || {
        let mut rounds = 0;
        while refused(&p.target) == 0 {
            while inject(&p.friend, to, &rec) {
                written += 1;
            }
            p.target.progress().unwrap();
            rounds += 1;
            assert!(rounds < 1000, "never refused");
        }
    });
    assert!(written > 2 * depth, "{written} written, depth {depth}");
    // taken: the in-order queue's depth and the protocol's
    let received = p.target.express_stats().requests_received - received0;
    assert!(received <= 2 * depth, "{received} taken, depth {depth}");
    // the refused ones go back (they answer nothing of the friend's:
    // dropped there, nothing sent again); then all runs down
    let ran_down =
        p.w.run_until(SETTLE, || p.target.with(|s| s.nothing_to_dispatch()));
    assert!(ran_down, "the queue never ran down");
    assert_eq!(p.friend.express_stats().resent, 0);
}

#[test]
fn an_answer_by_the_protocol_completes_an_express_request() {
    let p = pair();
    // the target answers by the protocol from now on (as when its ring
    // to us is full or it has something unacknowledged for us)
    p.target.with(|s| s.express.send = false);
    let sent0 = p.friend.express_stats().requests_sent;
    let got0 = p.friend.express_stats().replies_received;
    let replies0 = p.replies.load(Ordering::SeqCst);
    for k in 0..100u32 {
        p.friend
            .request(0, &Message::short(10, &[k, 1]), false)
            .unwrap();
    }
    p.settle();
    let f = p.friend.express_stats();
    assert_eq!(f.requests_sent - sent0, 100, "the requests went express");
    assert_eq!(f.replies_received, got0, "no answer came express");
    assert_eq!(
        p.replies.load(Ordering::SeqCst) - replies0,
        (0..100u64).map(|k| k + 1).sum::<u64>()
    );
    assert_eq!(p.returned.load(Ordering::SeqCst), 0);
    assert_eq!(p.friend.unanswered_requests(), 0);
}

struct Keyed {
    target: Arc<Endpoint>,
    friend: Arc<Endpoint>,
    /// handler 10 of `target` ran (it replies 11)
    ran: Arc<AtomicU64>,
    w: World,
}

/// Two nodes over shared memory with these job keys (the packet MAC
/// on), a request sent and the world run until the friend's ring to the
/// target is open.
fn keyed(target_key: Option<&str>, friend_key: Option<&str>) -> Keyed {
    let w = World::seeded(SEED);
    let open = |key: Option<&str>| {
        let mut cfg = shm_cfg();
        cfg.proto.mac = key.map(crate::wire::mac::MacKey::from_job_key);
        w.node(&cfg).ep
    };
    let (target, friend) = (open(target_key), open(friend_key));
    for e in [&target, &friend] {
        e.set_tag(TAG);
        e.map(0, target.name(), TAG).unwrap();
        e.map(1, friend.name(), TAG).unwrap();
        e.set_expected_resources(2, 8).unwrap();
    }
    let ran = Arc::new(AtomicU64::new(0));
    let r = ran.clone();
    target.set_handler(
        10,
        handler(move |h| {
            r.fetch_add(1, Ordering::SeqCst);
            crate::am::reply(h.token, &Message::short(11, &[1])).unwrap();
        }),
    );
    friend.set_handler(11, handler(|_| {}));
    friend.set_handler(0, handler(|_| {}));
    friend.request(0, &Message::short(10, &[0]), false).unwrap();
    assert!(w.run_until(SETTLE, || friend.ring_ready(0)), "no ring");
    Keyed {
        target,
        friend,
        ran,
        w,
    }
}

const KEY: &str = "express-lane-test-job-key";

/// Under a job key both ends share, the lane is open both ways (each end
/// of the ring proved the key once: `net/shm_proof.rs`).
#[test]
fn a_shared_job_key_keeps_the_lane_open() {
    let k = keyed(Some(KEY), Some(KEY));
    for _ in 0..200 {
        k.friend
            .request(0, &Message::short(10, &[0]), false)
            .unwrap();
    }
    let done =
        k.w.run_until(SETTLE, || k.friend.unanswered_requests() == 0);
    assert!(done, "requests unanswered");
    assert_eq!(k.ran.load(Ordering::SeqCst), 201);
    let (f, t) = (k.friend.express_stats(), k.target.express_stats());
    assert!(f.requests_sent > 100, "{f:?}");
    assert_eq!(t.requests_received, f.requests_sent);
    assert!(t.replies_sent > 100, "{t:?}");
    assert_eq!(f.replies_received, t.replies_sent);
    assert_eq!((f.dropped, t.dropped), (0, 0));
}

/// Keys that differ, or a key at one end only: the sender never takes the
/// lane (the receiver's proof does not verify), and a record written into
/// the ring anyway (as a process of another job could) runs no handler:
/// dropped and counted.
#[test]
fn another_job_key_or_none_gets_no_handler_run_by_a_record() {
    for (tk, fk) in [
        (Some(KEY), Some("another-job-key-of-this-user")),
        (Some(KEY), None),
        (None, Some(KEY)),
    ] {
        let k = keyed(tk, fk);
        assert!(
            !inject(
                &k.friend,
                k.target.addr(),
                &record(ExpressKind::Request, 10, &[1], 9, TAG)
            ),
            "the lane is closed to the sender"
        );
        for _ in 0..50 {
            k.friend
                .request(0, &Message::short(10, &[0]), false)
                .unwrap();
        }
        k.w.run_for(MILLIS);
        assert_eq!(k.friend.express_stats().requests_sent, 0);
        let ran0 = k.ran.load(Ordering::SeqCst);
        let forged = |k: &Keyed| {
            k.friend.with(|s| {
                s.transports.express_send_unproven(
                    k.target.addr(),
                    &record(ExpressKind::Request, 10, &[1], 9, TAG),
                )
            })
        };
        assert!(forged(&k));
        assert!(forged(&k));
        k.w.run_for(MILLIS);
        let t = k.target.express_stats();
        assert_eq!(t.dropped, 2, "{tk:?} {fk:?}");
        assert_eq!(t.requests_received, 0);
        assert_eq!(k.ran.load(Ordering::SeqCst), ran0, "no handler ran");
        assert!(k.target.statistics().corrupt_dropped >= 2);
    }
}

/// A request behind an unanswered one to the same peer waits in the ring's
/// sender (`TxRing::hold`) until the requester's next poll; a lone one
/// goes at once; `RAMP_REQUEST_BATCH` 0 holds none. (No time passes
/// between the friend's poll and its requests: none polls the bundle,
/// `RECENT_POLL`; the test polls the target itself.)
#[test]
fn requests_behind_an_unanswered_one_wait_for_the_requesters_poll() {
    let p = pair();
    let taken = |p: &Pair| p.target.express_stats().requests_received;
    for batch in [32u16, 0] {
        p.friend.with(|s| s.batch.max = batch);
        for trial in 0..20 {
            let before = taken(&p);
            p.friend.poll().unwrap();
            let t = p.w.now();
            for k in 0..3 {
                p.friend
                    .request(0, &Message::short(10, &[k]), true)
                    .unwrap();
            }
            p.target.poll().unwrap();
            let first = taken(&p) - before;
            p.friend.poll().unwrap();
            p.target.poll().unwrap();
            assert_eq!(p.w.now(), t, "time passed: a request polled");
            let all = taken(&p) - before;
            assert_eq!(all, 3, "every request arrives once the friend polls");
            let want = if batch > 1 { 1 } else { 3 };
            assert_eq!(
                first, want,
                "batch {batch}, trial {trial}: taken before the friend's poll"
            );
            p.settle();
        }
    }
    assert_eq!(p.returned.load(Ordering::SeqCst), 0);
}
