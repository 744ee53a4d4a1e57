//! What an express record may pass (`Protocol::express_ready`,
//! `Peer::express_passes`), between simulated processes joined by real
//! rings (`express_tests::pair`, virtual time): short and medium user
//! messages of ours still in flight (AM-2 promises no order among them),
//! so a stream that went by the protocol does not stay there; not a long
//! request (nor a put or a get), whose handler runs first.

use std::sync::{Arc, Mutex};

use super::express_tests::pair;
use crate::am::handler::args::VecSegment;
use crate::am::{handler, Message};

/// The target's handler that does not reply: an automatic reply is owed.
const SILENT: u8 = 12;

/// A stream of requests that went by the protocol while the lane was
/// closed goes express again once it opens, though the stream never
/// pauses (the credits always partly taken): the sender's protocol
/// messages in flight, the target's answers in flight, do not keep either
/// off the lane for good.
#[test]
fn a_stream_kept_off_the_lane_returns_to_it() {
    let p = pair();
    p.target.set_handler(SILENT, handler(|_| {}));
    let lane = |open: bool| {
        for e in [&p.friend, &p.target] {
            e.with(|s| s.express.send = open);
        }
    };
    lane(false);
    let stream = |n: u32| {
        for k in 0..n {
            p.friend
                .request(0, &Message::short(SILENT, &[k]), false)
                .unwrap();
        }
    };
    stream(400);
    let (f0, t0) = (p.friend.express_stats(), p.target.express_stats());
    lane(true);
    stream(2000);
    p.settle();
    let (f, t) = (p.friend.express_stats(), p.target.express_stats());
    let (req, ans) = (
        f.requests_sent - f0.requests_sent,
        t.replies_sent - t0.replies_sent,
    );
    eprintln!(
        "seed {}: express requests {req} answers {ans} of 2000",
        p.w.seed()
    );
    assert!(
        req >= 1900,
        "requests kept off the lane: {req} of 2000 express"
    );
    assert!(
        ans >= 1900,
        "answers kept off the lane: {ans} of 2000 express"
    );
    p.assert_credits_whole(SILENT);
}

/// A short request behind a long one still in flight (not acknowledged)
/// goes by the protocol, behind it: the long request's handler runs first
/// (am.h, "Order"). Once it is answered, the lane again.
#[test]
fn a_short_request_does_not_pass_a_long_one_in_flight() {
    let p = pair();
    p.target.set_segment(Some(VecSegment::new(4096)));
    let ran = Arc::new(Mutex::new(Vec::new()));
    for h in [13u8, 14] {
        let r = Arc::clone(&ran);
        p.target
            .set_handler(h, handler(move |_| r.lock().unwrap().push(h)));
    }
    let sent = |p: &super::express_tests::Pair| p.friend.express_stats().requests_sent;
    p.computing(p.t, || {
        p.friend.poll().unwrap();
        p.friend
            .request(0, &Message::long(13, &[], &[1u8; 1000], 0), true)
            .unwrap();
        let s0 = sent(&p);
        p.friend.request(0, &Message::short(14, &[]), true).unwrap();
        assert_eq!(sent(&p), s0, "behind a long request: by the protocol");
    });
    p.settle();
    assert_eq!(
        *ran.lock().unwrap(),
        [13, 14],
        "the long one's handler first"
    );
    let s0 = sent(&p);
    p.friend
        .request(0, &Message::short(14, &[]), false)
        .unwrap();
    assert_eq!(sent(&p), s0 + 1, "nothing in flight: the lane");
    p.settle();
}
