//! The express lane's automatic replies, owed by a dispatch and sent as
//! one record at its end (`express.rs`), between simulated processes
//! joined by real rings (`express_tests::pair`, virtual time): a batch
//! answers every request it names and is one record; a forged batch frees
//! only the credits of unanswered express requests of ours to its writer,
//! each once; with the lane closed they go by the protocol. Where the
//! order of polls is the point, the target computes (the world does not
//! poll it) and the test polls it itself.

use std::sync::atomic::Ordering;

use super::express_tests::{inject, pair, record, Pair, TAG};
use crate::am::{handler, Message};
use crate::net::express::ExpressKind;

/// The target's handler that does not reply: an automatic reply is owed.
const SILENT: u8 = 12;

fn silent_pair() -> Pair {
    let p = pair();
    p.target.set_handler(SILENT, handler(|_| {}));
    p
}

/// Sends `n` requests to `SILENT` (at most the 8 credits), without a
/// poll of the target between them, then polls the friend: the requests
/// its ring held back go too (`TxRing::hold`). (The friend polls first:
/// no request then polls the bundle, `RECENT_POLL`, and no time passes.)
fn burst(p: &Pair, n: usize) {
    p.friend.poll().unwrap();
    for k in 0..n {
        p.friend
            .request(0, &Message::short(SILENT, &[k as u32]), true)
            .unwrap();
    }
    p.friend.poll().unwrap();
}

#[test]
fn the_automatic_replies_of_one_poll_go_as_one_record() {
    let p = silent_pair();
    let (f0, t0) = (p.friend.express_stats(), p.target.express_stats());
    let packets = |p: &Pair| p.target.statistics().packets_sent;
    p.computing(p.t, || {
        for round in 0..50 {
            burst(&p, 8);
            // the target's one poll takes all 8 (nothing polled it since
            // they came), and sends one record for their automatic replies
            let (got, sent) = (p.target.express_stats().requests_received, packets(&p));
            p.target.poll().unwrap();
            let took = p.target.express_stats().requests_received - got;
            assert_eq!(took, 8, "round {round}: a whole burst in one poll");
            assert_eq!(
                packets(&p) - sent,
                1,
                "round {round}: 8 answers in one record"
            );
            p.friend.poll().unwrap();
            assert_eq!(p.friend.unanswered_requests(), 0, "round {round}");
        }
    });
    let (f, t) = (p.friend.express_stats(), p.target.express_stats());
    assert_eq!(t.requests_received - t0.requests_received, 400);
    assert_eq!(t.replies_sent - t0.replies_sent, 400, "one answer each");
    assert_eq!(f.replies_received - f0.replies_received, 400);
    assert_eq!((f.dropped, t.dropped), (0, 0));
    assert_eq!(p.returned.load(Ordering::SeqCst), 0);
    p.assert_credits_whole(SILENT);
}

#[test]
fn a_forged_batch_frees_only_what_it_answers_once() {
    let p = pair();
    let from = p.friend.addr();
    let d0 = p.friend.express_stats().dropped;
    let stale0 = p.friend.statistics().stale_dropped;
    p.computing(p.t, || {
        // three requests to the target, which does not poll yet (the
        // friend was just polled: none polls the bundle)
        p.friend.poll().unwrap();
        for k in 0..3 {
            p.friend
                .request(0, &Message::short(10, &[k, 1]), true)
                .unwrap();
        }
        let mut ids: Vec<u32> = p.friend.with(|s| s.outstanding.keys().copied().collect());
        ids.sort_unstable();
        assert_eq!(ids.len(), 3);
        let (a, b) = (ids[0], ids[1]);
        // a batch from the target's ring: a, a again, an id of nothing, b
        assert!(inject(
            &p.target,
            from,
            &record(ExpressKind::AutoReply, 0, &[a, 0xbad0, b], a, TAG)
        ));
        p.friend.poll().unwrap();
    });
    assert_eq!(p.friend.express_stats().dropped - d0, 2, "a again, 0xbad0");
    assert_eq!(p.friend.statistics().stale_dropped - stale0, 2);
    assert_eq!(p.friend.unanswered_requests(), 1);
    // the target's own replies to a and b come later: dropped, not run
    let replies0 = p.replies.load(Ordering::SeqCst);
    p.settle();
    assert_eq!(
        p.replies.load(Ordering::SeqCst) - replies0,
        3,
        "the third's"
    );
    assert_eq!(p.friend.express_stats().dropped - d0, 4);
    assert_eq!(p.returned.load(Ordering::SeqCst), 0);
    p.assert_credits_whole(10);
}

#[test]
fn owed_replies_go_by_the_protocol_when_the_lane_is_closed() {
    let p = silent_pair();
    // the target answers by the protocol from now on (as when its ring
    // to us is full)
    p.target.with(|s| s.express.send = false);
    let (f0, t0) = (p.friend.express_stats(), p.target.express_stats());
    for _ in 0..25 {
        burst(&p, 8);
        p.settle();
    }
    let (f, t) = (p.friend.express_stats(), p.target.express_stats());
    assert_eq!(
        f.requests_sent - f0.requests_sent,
        200,
        "the requests went express"
    );
    assert_eq!(t.requests_received - t0.requests_received, 200);
    assert_eq!(t.replies_sent, t0.replies_sent, "no answer went express");
    assert_eq!(p.friend.unanswered_requests(), 0);
    assert_eq!(p.returned.load(Ordering::SeqCst), 0);
}
