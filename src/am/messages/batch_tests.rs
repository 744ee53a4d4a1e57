//! Requests held back for a batch (`batch.rs`), in the simulated world
//! (`sim::World`), on virtual time: the sender (node 0) and the target
//! (node 1, with a second endpoint e2) on a clean LAN; the test watches
//! every datagram sent (`World::tap`), counts and opens them. While the
//! test looks at what the sender batches, the target computes (nobody
//! polls it, `Program::Computes`), so requests stay unanswered; then it
//! polls again and every request is answered. Which requests leave when,
//! in which datagrams, in order, once; a held last fragment of a long
//! request leaves exactly `TAIL_HOLD` after it was held.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::batch::TAIL_HOLD;
use crate::am::tests::{cfg, connect};
use crate::am::{handler, Bundle, Endpoint, Message};
use crate::sim::{Program, World};
use crate::time::MILLIS;
use crate::wire::{decode, packets, Integrity, Packet, CHANNEL_REQUEST};

const TAG: u64 = 0xba7c;

/// Requests (handler number, first argument) in each datagram sent, in
/// the order sent, each packet the first time it went.
type Seen = Arc<Mutex<Vec<Vec<(u32, u32)>>>>;

/// Requests in packets sent again (a timer's or a probe's copy), in order.
type Copies = Arc<Mutex<Vec<(u32, u32)>>>;

/// `watch_copies` without the copies.
fn watch(w: &World) -> Seen {
    watch_copies(w).0
}

/// Watches the request packets sent in `w`: a packet is a copy when one
/// with its receiver, association (verification tag), epoch and sequence
/// number went before.
fn watch_copies(w: &World) -> (Seen, Copies) {
    let seen: Seen = Default::default();
    let copies: Copies = Default::default();
    let (s, c) = (seen.clone(), copies.clone());
    let mut sent_before = std::collections::HashSet::new();
    // each message's first sequence number, by association and epoch: a
    // later fragment (`Packet::More`) names no request, it belongs to the
    // message that starts last before it
    let mut starts = std::collections::BTreeMap::new();
    w.tap(move |_, to, d| {
        let integ = Integrity::default();
        let mut reqs = Vec::new();
        for p in packets(&integ, d) {
            let (common, r) = match p.and_then(|p| decode(&integ, p)) {
                Ok(Packet::Data { common, meta, .. }) => {
                    let r = (meta.handler as u32, meta.args[0]);
                    if common.channel == CHANNEL_REQUEST {
                        starts.insert((to, common.vtag, common.epoch, common.seq), r);
                    }
                    (common, r)
                }
                Ok(Packet::More { common, .. }) => {
                    let key = (to, common.vtag, common.epoch, common.seq);
                    let first = (to, common.vtag, common.epoch, 0);
                    match starts.range(first..=key).next_back() {
                        Some((_, &r)) => (common, r),
                        None => continue,
                    }
                }
                _ => continue,
            };
            if common.channel != CHANNEL_REQUEST {
                continue;
            }
            if sent_before.insert((to, common.vtag, common.epoch, common.seq)) {
                reqs.push(r);
            } else {
                c.lock().push(r);
            }
        }
        if !reqs.is_empty() {
            s.lock().push(reqs);
        }
        true
    });
    (seen, copies)
}

/// The sender e0 (node 0), the target e1 (node 1, index 1) and a second
/// target e2 in e1's bundle (index 2), whose handler 10 only replies; the
/// association of e0 and e1 made, the target computing.
struct Apart {
    w: World,
    b0: Arc<Bundle>,
    e0: Arc<Endpoint>,
    e1: Arc<Endpoint>,
    /// How many of e1's handler 10 ran (each request's argument is its
    /// place: they must run in order).
    ran: Arc<AtomicU64>,
}

/// `Apart` in a world seeded by `seed`, requests held at most `batch` to a
/// batch; credits for a whole burst (the target answers only after it).
fn apart(seed: u64, batch: u16) -> Apart {
    let w = World::seeded(seed);
    let mut cfg = cfg();
    cfg.request_batch = batch;
    // what is held back for a batch, not for the congestion window (a
    // 1 MiB request is past the initial window: `proto/congestion.rs`)
    cfg.proto.congestion = false;
    let (n0, n1) = (w.node(&cfg), w.node(&cfg));
    let e2 = w.endpoint(n1.index, &cfg);
    connect(&[&n0.ep, &n1.ep, &e2], TAG, 256);
    let (e0, e1) = (n0.ep, n1.ep);
    e2.set_handler(
        10,
        handler(|h| crate::am::reply(h.token, &Message::short(11, &[])).unwrap()),
    );
    let order = Arc::new(AtomicU64::new(0));
    let o = order.clone();
    e1.set_handler(
        10,
        handler(move |h| {
            let k = h.args[0] as u64;
            assert_eq!(o.load(Ordering::SeqCst), k, "request {k} ran out of order");
            o.store(k + 1, Ordering::SeqCst);
            crate::am::reply(h.token, &Message::short(11, &[])).unwrap();
        }),
    );
    e0.set_handler(11, handler(|_| {}));
    // the association first (its handshake needs the target's polls)
    e1.set_handler(
        12,
        handler(|h| crate::am::reply(h.token, &Message::short(11, &[])).unwrap()),
    );
    e0.request(1, &Message::short(12, &[]), false).unwrap();
    assert!(w.run_until(100 * MILLIS, || e0.unanswered_requests() == 0));
    w.set_program(n1.index, Program::Computes);
    Apart {
        w,
        b0: n0.bundle,
        e0,
        e1,
        ran: order,
    }
}

impl Apart {
    /// The target polls until `done` (within a second of virtual time),
    /// then computes again.
    fn answer(&self, what: &str, done: impl FnMut() -> bool) {
        self.w.set_program(1, Program::Polls);
        assert!(self.w.run_until(1000 * MILLIS, done), "waiting for {what}");
        self.w.set_program(1, Program::Computes);
    }
}

/// `apart` with batches of 32 and `watch_copies`, then two short requests
/// (handler 10, arguments 0 and 1): the first leaves, the second is held
/// behind it.
fn one_held(seed: u64) -> (Apart, Seen, Copies) {
    let a = apart(seed, 32);
    let (seen, copies) = watch_copies(&a.w);
    a.e0.request(1, &Message::short(10, &[0]), false).unwrap();
    a.e0.request(1, &Message::short(10, &[1]), false).unwrap();
    assert_eq!(requests_in(&seen), 1, "the second must be held");
    (a, seen, copies)
}

fn requests_in(seen: &Seen) -> usize {
    seen.lock().iter().map(Vec::len).sum()
}

#[test]
fn a_lone_request_leaves_at_once_and_one_behind_it_waits_for_the_next_poll() {
    let a = apart(1, 32);
    let seen = watch(&a.w);
    a.e0.request(1, &Message::short(10, &[0]), false).unwrap();
    assert_eq!(requests_in(&seen), 1, "a lone request must leave at once");
    // the first is unanswered (the target computes): this one waits
    a.e0.request(1, &Message::short(10, &[1]), false).unwrap();
    a.e0.request(1, &Message::medium(10, &[2], &[7u8; 100]), false)
        .unwrap();
    assert_eq!(
        requests_in(&seen),
        1,
        "requests behind an unanswered one are held"
    );
    a.b0.poll().unwrap();
    assert_eq!(*seen.lock(), vec![vec![(10, 0)], vec![(10, 1), (10, 2)]]);
    a.answer("three answers", || a.e0.unanswered_requests() == 0);
    assert_eq!(a.ran.load(Ordering::SeqCst), 3);
}

/// `n` requests in a burst, with batches of `batch`, the target computing
/// meanwhile: each leaves once, in order; what left during the burst went
/// in datagrams of at most `batch` requests, far fewer than the requests.
/// (Once the target answers, what the protocol's send window kept back
/// leaves in bundles of its own size.)
fn burst(seed: u64, batch: u16, n: u32) {
    let a = apart(seed, batch);
    // (a copy of the association's request, before the watch, is not one
    // of the burst's)
    let copies_before = a.e0.statistics().packets_retransmitted;
    let (seen, copies) = watch_copies(&a.w);
    for k in 0..n {
        a.e0.request(1, &Message::short(10, &[k]), false).unwrap();
    }
    let during = seen.lock().clone();
    a.answer("every handler", || a.ran.load(Ordering::SeqCst) == n as u64);
    let seen = seen.lock();
    let sent: Vec<u32> = seen.iter().flatten().map(|r| r.1).collect();
    assert_eq!(
        sent,
        (0..n).collect::<Vec<_>>(),
        "each request once, in order"
    );
    // (and any copy a probe or timer sent is one the sender counted)
    let copies = copies.lock().len() as u64;
    assert_eq!(
        copies,
        a.e0.statistics().packets_retransmitted - copies_before
    );
    assert!(
        during.iter().all(|d| d.len() <= batch as usize),
        "{during:?}"
    );
    assert!(seen.iter().all(|d| d.len() <= 32));
    let reqs: usize = during.iter().map(Vec::len).sum();
    assert!(
        reqs > batch as usize && during.len() < reqs / 2,
        "batch {batch}: {} datagrams for {reqs} requests",
        during.len()
    );
    // the first request of a burst goes alone, the rest queue behind it
    // and leave when a batch is full (the calls take no virtual time: no
    // request of the burst polls first, which would send a batch early),
    // until the protocol's send window is full
    let lens: Vec<usize> = during.iter().map(Vec::len).collect();
    assert_eq!(lens[0], 1, "{lens:?}");
    assert!(
        lens[1..lens.len() - 1].iter().all(|&k| k == batch as usize),
        "batch {batch}: {lens:?}"
    );
}

#[test]
fn a_burst_leaves_in_datagrams_of_at_most_the_batch_every_request_once_in_order() {
    burst(2, 32, 200);
}

#[test]
fn a_smaller_batch_is_kept_to() {
    burst(3, 8, 100);
}

#[test]
fn with_the_batch_off_every_request_has_its_own_datagram() {
    for batch in [0u16, 1] {
        let a = apart(4, batch);
        let seen = watch(&a.w);
        for k in 0..20 {
            a.e0.request(1, &Message::short(10, &[k]), false).unwrap();
            assert_eq!(requests_in(&seen), k as usize + 1);
        }
        a.answer("every handler", || a.ran.load(Ordering::SeqCst) == 20);
        assert!(seen.lock().iter().all(|d| d.len() == 1));
    }
}

#[test]
fn held_requests_leave_before_a_sleep_and_when_the_endpoint_closes() {
    let (a, seen, _) = one_held(5);
    // a wait in the kernel (AM_WaitSema's, a credit's, a barrier's)
    a.b0.wait_for_activity(0);
    assert_eq!(
        requests_in(&seen),
        2,
        "a sleep must not keep a request back"
    );

    a.e0.request(1, &Message::short(10, &[2]), false).unwrap();
    a.e0.request(1, &Message::short(10, &[3]), false).unwrap();
    assert_eq!(requests_in(&seen), 2);
    // the program frees the endpoint: what it asked to send still leaves
    let Apart { w, e0, ran, .. } = a;
    crate::am::free_endpoint(&e0).unwrap();
    drop(e0);
    assert_eq!(
        requests_in(&seen),
        4,
        "a closing endpoint must send what it holds"
    );
    w.set_program(1, Program::Polls);
    assert!(w.run_until(100 * MILLIS, || ran.load(Ordering::SeqCst) == 4));
}

#[test]
fn a_request_to_another_peer_or_a_large_one_is_not_held_behind_the_batch() {
    let a = apart(6, 32);
    // e2's association first
    a.e0.request(2, &Message::short(10, &[0]), false).unwrap();
    a.answer("e2's association", || a.e0.unanswered_requests() == 0);
    let seen = watch(&a.w);
    a.e0.request(1, &Message::short(10, &[0]), false).unwrap();
    a.e0.request(1, &Message::short(10, &[1]), false).unwrap();
    assert_eq!(requests_in(&seen), 1);
    a.e0.request(2, &Message::short(10, &[100]), false).unwrap();
    // to e2, which owes nothing: it goes, and the one held for e1 before it
    assert_eq!(requests_in(&seen), 3);
    a.e0.request(2, &Message::short(10, &[101]), false).unwrap();
    assert_eq!(requests_in(&seen), 3, "e2 owes an answer now: held");
    a.e0.request(1, &Message::short(10, &[2]), false).unwrap();
    assert_eq!(
        requests_in(&seen),
        5,
        "to another peer: the held one goes first"
    );
    // a medium request over 1 KiB fills a datagram of its own: not held
    a.e0.request(1, &Message::medium(10, &[3], &[1u8; 2000]), false)
        .unwrap();
    assert_eq!(requests_in(&seen), 6);
    let order: Vec<u32> = seen.lock().iter().flatten().map(|r| r.1).collect();
    assert_eq!(order, [0, 1, 100, 101, 2, 3]);
    a.answer("every answer", || a.e0.unanswered_requests() == 0);
    assert_eq!(a.ran.load(Ordering::SeqCst), 4);
}

#[test]
fn a_request_held_past_its_retransmission_timeout_is_sent_once() {
    let (a, seen, copies) = one_held(7);
    // the program computes for longer than any retransmission timeout
    // (at most 1 s; here it starts at 20 ms, at least 5 ms): nobody polls
    // the sender meanwhile
    a.w.set_program(0, Program::Computes);
    a.w.run_for(1100 * MILLIS);
    a.w.set_program(0, Program::Polls);
    assert_eq!(requests_in(&seen), 1, "nothing left while it computed");
    let before = a.e0.statistics().packets_retransmitted;
    a.b0.poll().unwrap();
    // the held request went before its timer was looked at: not a
    // retransmission of something never sent (the first one, sent and
    // unanswered for 1.1 s, is resent once: its timer is real)
    let sent: Vec<u32> = seen.lock().iter().flatten().map(|r| r.1).collect();
    assert_eq!(sent, [0, 1]);
    assert_eq!(*copies.lock(), [(10, 0)]);
    assert_eq!(a.e0.statistics().packets_retransmitted - before, 1);
    a.answer("both answers", || a.e0.unanswered_requests() == 0);
    assert_eq!(a.ran.load(Ordering::SeqCst), 2);
}

/// Byte `i` of long request `k`.
fn pattern(k: u32, i: usize) -> u8 {
    (i as u32).wrapping_mul(29).wrapping_add(k * 11) as u8
}

/// Long requests of 64 KiB (handler 13, argument k) into e1's segment,
/// each checked by its handler against `pattern`; how many ran whole.
fn long_target(e1: &Endpoint) -> Arc<AtomicU64> {
    let seg = crate::am::VecSegment::new(4 * 65_536);
    e1.set_segment(Some(seg.clone()));
    let whole = Arc::new(AtomicU64::new(0));
    let w = whole.clone();
    e1.set_handler(
        13,
        handler(move |h| {
            let crate::am::Data::Long { addr, len } = h.data else {
                panic!("a long request")
            };
            let k = h.args[0];
            let off = addr - crate::am::SegmentMemory::base(&*seg);
            let bytes = seg.snapshot()[off..off + len].to_vec();
            let want: Vec<u8> = (0..65_536).map(|i| pattern(k, i)).collect();
            assert!(bytes == want, "long request {k} whole");
            assert_eq!(w.load(Ordering::SeqCst), u64::from(k), "in order, once");
            w.fetch_add(1, Ordering::SeqCst);
            crate::am::reply(h.token, &Message::short(11, &[])).unwrap();
        }),
    );
    whole
}

/// Long request `k`'s bytes.
fn long_data(k: u32) -> Vec<u8> {
    (0..65_536).map(|i| pattern(k, i)).collect()
}

/// Long request `k` of 64 KiB, into a quarter of e1's segment.
fn long(e0: &Arc<Endpoint>, k: u32) {
    let at = u64::from(k % 4) * 65_536;
    e0.request(1, &Message::long(13, &[k], &long_data(k), at), false)
        .unwrap();
}

#[test]
fn a_long_requests_last_fragment_waits_for_the_next_ones_first_or_a_sleep() {
    let a = apart(8, 32);
    let whole = long_target(&a.e1);
    let seen = watch(&a.w);
    // a lone one leaves whole: its two datagrams (its first 64 bytes,
    // the packet that says where it goes, ride with its first large
    // fragment: `ProtoConfig::cut`)
    long(&a.e0, 0);
    assert_eq!(*seen.lock(), vec![vec![(13, 0), (13, 0)], vec![(13, 0)]]);
    // behind an unanswered one: its small last fragment stays, from now
    long(&a.e0, 1);
    let now_seen = seen.lock().clone();
    assert_eq!(now_seen.len(), 3, "{now_seen:?}");
    assert_eq!(now_seen[2], vec![(13, 1), (13, 1)]);
    assert_eq!(
        a.e0.with(|s| (s.batch.tail, s.batch.since)),
        (true, a.w.now())
    );
    // the next one's first fragment takes it along, in one datagram (the
    // two calls at the same instant: well within the hold), and its own
    // last fragment is held now
    long(&a.e0, 2);
    let now_seen = seen.lock().clone();
    assert_eq!(now_seen[3], vec![(13, 1), (13, 2), (13, 2)], "{now_seen:?}");
    assert!(a.e0.with(|s| s.batch.tail));
    // a sleep in the kernel sends what is held
    a.b0.wait_for_activity(0);
    assert_eq!(requests_in(&seen), 9, "{:?}", seen.lock());
    a.answer("three long requests", || {
        whole.load(Ordering::SeqCst) == 3 && a.e0.unanswered_requests() == 0
    });
    // held longer than TAIL_HOLD: the sender's next poll sends it, which
    // the world makes when the hold runs out (the program polls)
    long(&a.e0, 3);
    long(&a.e0, 4);
    let since = a.e0.with(|s| {
        assert!(s.batch.tail, "request 4's last fragment held");
        s.batch.since
    });
    let before = requests_in(&seen);
    assert!(a.w.run_until(10 * MILLIS, || requests_in(&seen) > before));
    assert_eq!(a.w.now(), since.plus(TAIL_HOLD), "held exactly TAIL_HOLD");
    assert_eq!(requests_in(&seen), before + 1, "{:?}", seen.lock());
    assert_eq!(seen.lock().last().unwrap(), &vec![(13, 4)]);
    a.answer("five long requests", || {
        whole.load(Ordering::SeqCst) == 5 && a.e0.unanswered_requests() == 0
    });
    // and a closing endpoint sends it too
    long(&a.e0, 5);
    long(&a.e0, 6);
    let before = requests_in(&seen);
    let Apart { w, e0, .. } = a;
    crate::am::free_endpoint(&e0).unwrap();
    drop(e0);
    assert_eq!(requests_in(&seen), before + 1, "{:?}", seen.lock());
    w.set_program(1, Program::Polls);
    assert!(w.run_until(100 * MILLIS, || whole.load(Ordering::SeqCst) == 7));
}

#[test]
fn a_long_request_of_more_than_two_fragments_keeps_nothing_back() {
    let a = apart(9, 32);
    a.e1.set_segment(Some(crate::am::VecSegment::new(2 << 20)));
    a.e1.set_handler(
        13,
        handler(|h| crate::am::reply(h.token, &Message::short(11, &[])).unwrap()),
    );
    let seen = watch(&a.w);
    let data = vec![5u8; 1 << 20];
    a.e0.request(1, &Message::long(13, &[0], &data, 0), false)
        .unwrap();
    let one = requests_in(&seen);
    // (its first 64 bytes alone, then 17: `ProtoConfig::cut`)
    assert_eq!(one, 18, "a lone 1 MiB request: every fragment at once");
    // behind an unanswered one: its last fragment would only wait (the
    // next message's first is full and never cut), so it does not
    a.e0.request(1, &Message::long(13, &[1], &data, 0), false)
        .unwrap();
    assert_eq!(requests_in(&seen), 2 * one);
    a.answer("both answers", || a.e0.unanswered_requests() == 0);
}

#[test]
fn a_held_last_fragment_leaves_with_any_other_message() {
    use crate::wire::{Category, MsgKind, MsgMeta, CHANNEL_REPLY};
    let a = apart(10, 32);
    let whole = long_target(&a.e1);
    let seen = watch(&a.w);
    long(&a.e0, 0);
    long(&a.e0, 1);
    let now_seen = seen.lock().clone();
    assert_eq!(now_seen.len(), 3, "the last fragment held: {now_seen:?}");
    // a message to e1 that is not a long request (here a reply; e1 drops
    // it as answering nothing), at the hold's own time (never up): it
    // does not wait behind the held fragment, and the fragment goes too
    let to = a.e1.addr();
    a.e0.with(|s| {
        let now = s.batch.since;
        let meta = MsgMeta::new(MsgKind::User, Category::Short, 11, &[]);
        s.send_message(now, to, CHANNEL_REPLY, meta, Vec::new());
    });
    let now_seen = seen.lock().clone();
    assert_eq!(
        now_seen.iter().flatten().filter(|r| **r == (13, 1)).count(),
        3,
        "all three fragments of request 1 sent: {now_seen:?}"
    );
    a.answer("both long requests", || {
        whole.load(Ordering::SeqCst) == 2 && a.e0.unanswered_requests() == 0
    });
}
