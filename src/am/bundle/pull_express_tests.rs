//! Pull-style receive (`pull.rs`) of express records between simulated
//! processes joined by real rings (virtual time): a drain takes the
//! records at the rings' heads as the fast poll does (`express_poll.rs`),
//! hands them out in order with their arguments, their replies and
//! automatic replies go back, and an empty drain looks at the rings only
//! (no full pump) while nothing else is due.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::am::express::express_tests::{shm_cfg, SEED, SETTLE};
use crate::am::{handler, reply, Message, TokenId};
use crate::sim::{Program, World};
use crate::time::MILLIS;

const TAG: u64 = 0x5ea;

#[test]
fn a_drain_takes_express_records_in_order_and_their_answers_go_back() {
    let w = World::seeded(SEED);
    let (t, f) = (w.node(&shm_cfg()), w.node(&shm_cfg()));
    for e in [&t.ep, &f.ep] {
        e.set_tag(TAG);
        e.map(0, t.ep.name(), TAG).unwrap();
        e.map(1, f.ep.name(), TAG).unwrap();
        e.set_expected_resources(2, 8).unwrap();
    }
    let replies = Arc::new(AtomicU64::new(0));
    let (r, sum) = (replies.clone(), Arc::new(AtomicU64::new(0)));
    let s = sum.clone();
    f.ep.set_handler(
        11,
        handler(move |h| {
            r.fetch_add(1, Ordering::SeqCst);
            s.fetch_add(h.args[0] as u64, Ordering::SeqCst);
        }),
    );
    // (the target's handlers are never called: its messages are drained)
    t.ep.set_handler(10, handler(|_| panic!("a drained request's handler ran")));
    t.ep.set_handler(12, handler(|_| panic!("a drained request's handler ran")));
    // a first round trip sets the rings up
    w.set_program(t.index, Program::Computes);
    let mut got: Vec<(u8, u32, TokenId)> = Vec::new();
    let drain = |got: &mut Vec<(u8, u32, TokenId)>| {
        t.bundle
            .drain(32, |p| {
                assert!(p.is_request && p.returned.is_none());
                got.push((p.handler, p.args.first().copied().unwrap_or(0), p.token));
            })
            .unwrap()
    };
    f.ep.request(0, &Message::short(10, &[7]), false).unwrap();
    assert!(w.run_until(SETTLE, || drain(&mut got) > 0));
    assert_eq!(got.len(), 1);
    reply(got[0].2, &Message::short(11, &[got[0].1])).unwrap();
    assert!(w.run_until(SETTLE, || f.ep.unanswered_requests() == 0));
    let before = t.ep.express_stats();
    // requests while the target computes: 8 (its credits), in order;
    // handler 10 replied to, handler 12 answered by its automatic reply
    for round in 0..10u32 {
        got.clear();
        for k in 0..8u32 {
            let h = if k % 2 == 0 { 10 } else { 12 };
            f.ep.request(0, &Message::short(h, &[round * 8 + k]), false)
                .unwrap();
        }
        w.run_for(MILLIS);
        // (a drain ends the messages of the last: each answered at once)
        while got.len() < 8 {
            let n = drain(&mut got);
            for &(h, a, tok) in &got[got.len() - n..] {
                if h == 10 {
                    reply(tok, &Message::short(11, &[a])).unwrap();
                }
            }
            w.run_for(MILLIS);
        }
        let seen: Vec<u32> = got.iter().map(|g| g.1).collect();
        assert_eq!(
            seen,
            (round * 8..round * 8 + 8).collect::<Vec<_>>(),
            "round {round}"
        );
        // the next drain ends the others: their automatic replies
        drain(&mut got);
        assert!(
            w.run_until(SETTLE, || f.ep.unanswered_requests() == 0),
            "round {round}: requests unanswered"
        );
    }
    let after = t.ep.express_stats();
    assert_eq!(after.requests_received - before.requests_received, 80);
    assert!(
        after.fast - before.fast >= 60,
        "records drained fast: {} of 80",
        after.fast - before.fast
    );
    // 1 + 40 replies, their arguments back
    assert_eq!(replies.load(Ordering::SeqCst), 41);
    let want: u64 = 7 + (0..80u64).filter(|k| k % 2 == 0).sum::<u64>();
    assert_eq!(sum.load(Ordering::SeqCst), want);
    assert_eq!(after.dropped, 0);
}
