//! An express request that finds its receiver full (as many waiting as
//! the protocol lets wait before it NACKs, `RAMP_RECV_DEPTH`) goes back to
//! its sender, which sends it again by the protocol's path (`lane.rs`):
//! between simulated processes joined by real rings (`express_tests::
//! pair_cfg`, virtual time). A receiver that takes its messages later runs
//! each request once; one that keeps refusing returns requests with
//! ECONGESTION after the NACK limit, each request answered or returned
//! once; a forged or repeated `RESEND` sends nothing. The target computes
//! (the world does not poll it) and the test moves its packets
//! (`Endpoint::progress`: no handler runs) where the order is the point.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use super::express_tests::{pair_cfg, shm_cfg, Pair, SEED};
use crate::am::handler::args::Data;
use crate::am::messages::returned::RESEND;
use crate::am::{handler, Message};
use crate::error::ReturnStatus;
use crate::sim::World;
use crate::time::MILLIS;
use crate::wire::{Category, MsgKind, MsgMeta};

/// The target's handler: records its argument, replies with `ANSWER`.
const RECORD: u8 = 20;
/// The friend's handler for those replies: records their argument.
const ANSWER: u8 = 21;

/// What ran where: the target's request handlers, the friend's reply
/// handlers, and the friend's handler 0 (status, argument).
#[derive(Default)]
struct Seen {
    ran: Mutex<Vec<u32>>,
    answered: Mutex<Vec<u32>>,
    returned: Mutex<Vec<(ReturnStatus, u32)>>,
}

/// A pair whose target lets `depth` requests wait and refuses one for
/// good after `nack_limit` NACKs.
fn full_pair(depth: usize, nack_limit: u32) -> (Pair, Arc<Seen>) {
    let mut cfg = shm_cfg();
    cfg.recv_depth = Some(depth);
    cfg.proto.nack_limit = nack_limit;
    let p = pair_cfg(&World::seeded(SEED), &[], &cfg);
    let seen = Arc::new(Seen::default());
    let s = seen.clone();
    p.target.set_handler(
        RECORD,
        handler(move |h| {
            s.ran.lock().unwrap().push(h.args[0]);
            crate::am::reply(h.token, &Message::short(ANSWER, &[h.args[0]])).unwrap();
        }),
    );
    let s = seen.clone();
    p.friend.set_handler(
        ANSWER,
        handler(move |h| s.answered.lock().unwrap().push(h.args[0])),
    );
    let s = seen.clone();
    p.friend.set_handler(
        0,
        handler(move |h| {
            if let Data::Returned { status, .. } = h.data {
                s.returned.lock().unwrap().push((status, h.args[0]));
            }
        }),
    );
    (p, seen)
}

/// Sends requests 0..n to `RECORD` (express while the lane is open).
fn send(p: &Pair, n: u32) {
    for k in 0..n {
        p.friend
            .request(0, &Message::short(RECORD, &[k]), true)
            .unwrap();
    }
}

/// The target computes while the world runs for `ms` virtual
/// milliseconds, moving its packets each tenth of one.
fn target_moves_packets(p: &Pair, ms: u64) {
    p.computing(p.t, || {
        for _ in 0..10 * ms {
            p.target.progress().unwrap();
            p.w.run_for(MILLIS / 10);
        }
    });
}

fn sorted(v: &Mutex<Vec<u32>>) -> Vec<u32> {
    let mut v = v.lock().unwrap().clone();
    v.sort_unstable();
    v
}

#[test]
fn a_request_that_finds_its_receiver_full_is_sent_again_and_runs_once() {
    println!("seed {SEED}");
    let (p, seen) = full_pair(2, 1_000);
    let (f0, t0) = (p.friend.express_stats(), p.target.express_stats());
    p.computing(p.t, || send(&p, 8));
    assert_eq!(p.friend.express_stats().requests_sent - f0.requests_sent, 8);
    // the target takes 2 into its queue and 2 into the protocol's, and
    // returns the other 4, which come again by the protocol (NACKed
    // while it stays full)
    target_moves_packets(&p, 20);
    let (f, t) = (p.friend.express_stats(), p.target.express_stats());
    assert_eq!(t.requests_received - t0.requests_received, 4);
    assert_eq!(t.refused - t0.refused, 4);
    assert_eq!(f.resent - f0.resent, 4, "each refused one sent again");
    assert!(seen.ran.lock().unwrap().is_empty());
    assert!(
        p.target.statistics().nacks_sent > 0,
        "the protocol refused them while full"
    );
    // the target polls again: each request runs once, is answered once
    p.settle();
    assert_eq!(sorted(&seen.ran), (0..8).collect::<Vec<_>>());
    assert_eq!(sorted(&seen.answered), (0..8).collect::<Vec<_>>());
    assert!(seen.returned.lock().unwrap().is_empty());
    assert_eq!(p.returned.load(Ordering::SeqCst), 0);
}

#[test]
fn a_receiver_that_keeps_refusing_returns_econgestion_after_the_nack_limit() {
    println!("seed {SEED}");
    let (p, seen) = full_pair(2, 3);
    p.computing(p.t, || send(&p, 8));
    // the sent-again ones are NACKed 3 times (a millisecond apart and
    // more), then given up: ECONGESTION
    let mut waited = 0;
    while seen.returned.lock().unwrap().is_empty() {
        target_moves_packets(&p, 10);
        waited += 10;
        assert!(waited < 2_000, "no request came back");
    }
    p.settle();
    let returned = seen.returned.lock().unwrap().clone();
    assert!(
        returned.iter().all(|&(s, _)| s == ReturnStatus::Congestion),
        "{returned:?}"
    );
    // each request answered or returned once, and run at most once
    let mut all = sorted(&seen.answered);
    all.extend(returned.iter().map(|&(_, k)| k));
    all.sort_unstable();
    assert_eq!(all, (0..8).collect::<Vec<_>>());
    assert_eq!(sorted(&seen.ran), sorted(&seen.answered));
    assert_eq!(p.friend.unanswered_requests(), 0);
}

#[test]
fn a_forged_or_repeated_resend_sends_nothing() {
    println!("seed {SEED}");
    let (p, seen) = full_pair(2, 1_000);
    let from_target = |txn: u32| {
        let to = p.friend.addr();
        p.target.with(|s| {
            let meta = MsgMeta {
                txn,
                ..MsgMeta::new(MsgKind::User, Category::Short, RECORD, &[99])
            };
            s.send_returned_status(s.clock.now(), to, meta, RESEND, true);
        });
    };
    let dropped = |p: &Pair| p.friend.statistics().stale_dropped;
    // an id of no request of ours
    let d0 = dropped(&p);
    from_target(0x7eed);
    p.w.run_for(MILLIS);
    assert_eq!(dropped(&p) - d0, 1);
    // a request of ours sent by the protocol (the lane closed), waiting
    p.friend.with(|s| s.express.send = false);
    p.computing(p.t, || {
        send(&p, 1);
        let txn = p.friend.with(|s| *s.outstanding.keys().next().unwrap());
        let d0 = dropped(&p);
        from_target(txn);
        p.w.run_for(MILLIS);
        assert_eq!(dropped(&p) - d0, 1, "not an express request");
    });
    p.settle();
    // an express request refused and sent again: a second RESEND
    p.friend.with(|s| s.express.send = true);
    let f0 = p.friend.express_stats();
    p.computing(p.t, || send(&p, 8));
    target_moves_packets(&p, 5);
    assert_eq!(p.friend.express_stats().resent - f0.resent, 4);
    let again: Vec<u32> = p.friend.with(|s| {
        s.outstanding
            .iter()
            .filter(|(_, o)| !o.express)
            .map(|(&id, _)| id)
            .collect()
    });
    assert_eq!(again.len(), 4);
    p.computing(p.t, || {
        let d0 = dropped(&p);
        from_target(again[0]);
        p.w.run_for(MILLIS);
        assert_eq!(dropped(&p) - d0, 1, "sent again once only");
    });
    assert_eq!(p.friend.express_stats().resent - f0.resent, 4);
    p.settle();
    // each ran once (request 0 of the protocol's, then 0..8), nothing
    // came back to handler 0
    let mut want = vec![0];
    want.extend(0..8);
    assert_eq!(sorted(&seen.ran), want);
    assert!(seen.returned.lock().unwrap().is_empty());
    assert_eq!(p.friend.unanswered_requests(), 0);
}
