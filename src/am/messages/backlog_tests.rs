//! A stream of long requests (`request.rs`, `BACKLOG_WAIT_MIN`): each one
//! waits before its copy while the peer's request channel has a backlog
//! behind the window (`COPY_BACKLOG` fragments, as a put's chunk), so that
//! a sender with many credits does not copy megabytes ahead into fresh
//! memory; every message still arrives intact and in order. In the
//! simulated world (`sim::World`), on virtual time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::request::BACKLOG_WAIT_MIN;
use crate::am::handler::args::{handler, Data, SegmentMemory, VecSegment};
use crate::am::handler::message::Message;
use crate::am::messages::request::COPY_BACKLOG;
use crate::am::tests::{cfg, pair};
use crate::sim::{seeds, World};
use crate::time::MILLIS;
use crate::wire::CHANNEL_REQUEST;

/// testbulk's shape: 1 MiB requests to one offset of the peer's segment,
/// the network depth AMX's programs get (128 credits: the whole stream
/// could be queued at once). With the wait reverted, the sender held
/// every request copied (seed 1: 432 fragments queued behind the window
/// on return, 25.2 MB held by its protocol).
#[test]
fn long_requests_wait_for_the_backlog_before_their_copy() {
    const MSG: usize = 1 << 20;
    const COUNT: u64 = 24;
    for seed in seeds(2) {
        let w = World::seeded(seed);
        let (n0, n1) = pair(&w, &cfg(), 128);
        let (e0, e1) = (&n0.ep, &n1.ep);
        let seg = VecSegment::new(MSG);
        e1.set_segment(Some(seg.clone()));
        // each message's bytes are its number: the handler checks the
        // segment holds this one's, whole
        let (got, bad) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let (g, b) = (got.clone(), bad.clone());
        let base = seg.base();
        e1.set_handler(
            10,
            handler(move |h| {
                let n = g.fetch_add(1, Ordering::SeqCst);
                match h.data {
                    Data::Long { addr, len } if addr == base && len == MSG => {}
                    _ => {
                        b.fetch_add(1, Ordering::SeqCst);
                    }
                }
                assert_eq!(h.args, &[n as u32][..], "in order");
            }),
        );
        let to = e1.addr();
        let per_msg = MSG.div_ceil(e0.with(|s| s.proto.fragment_capacity(1)));
        let (mut most_queued, mut most_memory) = (0, 0);
        for i in 0..COUNT {
            let payload = vec![i as u8; MSG];
            e0.request(1, &Message::long(10, &[i as u32], &payload, 0), false)
                .unwrap();
            let (queued, memory) = e0.with(|s| {
                (
                    s.proto.queued_fragments(&to, CHANNEL_REQUEST),
                    s.proto.memory_bytes(),
                )
            });
            most_queued = most_queued.max(queued);
            most_memory = most_memory.max(memory);
        }
        assert!(
            most_queued < COPY_BACKLOG + per_msg && most_memory < 16 << 20,
            "seed {seed}: {most_queued} fragments queued behind the window on return \
             (at most the backlog and one message: {}), {most_memory} bytes held by \
             the sender's protocol (a window in flight, the backlog, the pool's: < 16 MiB)",
            COPY_BACKLOG + per_msg
        );
        assert!(
            w.run_until(1000 * MILLIS, || got.load(Ordering::SeqCst) == COUNT),
            "seed {seed}: {} of {COUNT} delivered",
            got.load(Ordering::SeqCst)
        );
        assert_eq!(bad.load(Ordering::SeqCst), 0, "seed {seed}: misplaced");
        assert!(
            seg.snapshot().iter().all(|&x| x == (COUNT - 1) as u8),
            "seed {seed}: the last message's bytes"
        );
    }
}

/// A request below the threshold never waits for the backlog: a stream of
/// short-payload requests queues as before (their copies fit the cache).
#[test]
fn requests_below_the_threshold_queue_without_waiting() {
    let w = World::seeded(1);
    let (n0, n1) = pair(&w, &cfg(), 512);
    let (e0, e1) = (&n0.ep, &n1.ep);
    let seg = VecSegment::new(BACKLOG_WAIT_MIN);
    e1.set_segment(Some(seg));
    let got = Arc::new(AtomicU64::new(0));
    let g = got.clone();
    e1.set_handler(
        10,
        handler(move |_| {
            g.fetch_add(1, Ordering::SeqCst);
        }),
    );
    // open the association first (the first request waits for nothing)
    let small = vec![7u8; BACKLOG_WAIT_MIN - 1];
    e0.request(1, &Message::long(10, &[], &small, 0), false)
        .unwrap();
    assert!(w.run_until(100 * MILLIS, || got.load(Ordering::SeqCst) == 1));
    let to = e1.addr();
    let mut most_queued = 0;
    for _ in 0..300 {
        e0.request(1, &Message::long(10, &[], &small, 0), false)
            .unwrap();
        most_queued = most_queued.max(e0.with(|s| s.proto.queued_fragments(&to, CHANNEL_REQUEST)));
    }
    let window = e0.with(|s| s.proto.config().window);
    assert!(
        most_queued > window,
        "{most_queued} queued: a request below the threshold waited"
    );
    assert!(w.run_until(1000 * MILLIS, || got.load(Ordering::SeqCst) == 301));
}
