//! Requests held back for a batch (`batch.rs`), over the in-memory
//! network, whose datagrams the tests count and open.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{handler, Bundle, BundleMode, Endpoint, Message};
use crate::config::Config;
use crate::net::mem::MemNetwork;
use crate::net::Transports;
use crate::wire::{decode, packets, Integrity, Packet, CHANNEL_REQUEST};

const TAG: u64 = 0xba7c;

/// Requests (handler number, first argument) in each datagram on `net`,
/// in the order sent, each packet the first time it went.
type Seen = Arc<Mutex<Vec<Vec<(u32, u32)>>>>;

/// Requests in packets sent again (a timer's or a probe's copy), in order.
type Copies = Arc<Mutex<Vec<(u32, u32)>>>;

/// `watch_copies` without the copies. The target is not polled while a
/// test looks at what the sender batches, so on a loaded machine the
/// sender's tail-loss probe or timer may fire meanwhile: its copies are
/// the protocol doing its job, not the batching under test.
fn watch(net: &MemNetwork) -> Seen {
    watch_copies(net).0
}

/// Watches the request packets on `net`: a packet is a copy when one with
/// its receiver, association (verification tag), epoch and sequence
/// number went before.
fn watch_copies(net: &MemNetwork) -> (Seen, Copies) {
    let seen: Seen = Default::default();
    let copies: Copies = Default::default();
    let (s, c) = (seen.clone(), copies.clone());
    let sent_before = Mutex::new(std::collections::HashSet::new());
    net.hold_if(move |to, d| {
        let integ = Integrity::default();
        let mut reqs = Vec::new();
        for p in packets(&integ, d) {
            if let Ok(Packet::Data { common, meta, .. }) = p.and_then(|p| decode(&integ, p)) {
                if common.channel != CHANNEL_REQUEST {
                    continue;
                }
                let r = (meta.handler as u32, meta.args[0]);
                if sent_before
                    .lock()
                    .insert((to, common.vtag, common.epoch, common.seq))
                {
                    reqs.push(r);
                } else {
                    c.lock().push(r);
                }
            }
        }
        if !reqs.is_empty() {
            s.lock().push(reqs);
        }
        false
    });
    (seen, copies)
}

/// e0 (the sender) and e1 (the target) in bundles of their own, so that
/// polling one does not answer the other; `batch` requests at most a batch.
/// (sender's bundle, sender, target's bundle, target, handlers run)
type Apart = (
    Arc<Bundle>,
    Arc<Endpoint>,
    Arc<Bundle>,
    Arc<Endpoint>,
    Arc<AtomicU64>,
);

fn apart(net: &MemNetwork, batch: u16) -> Apart {
    apart3(net, batch).0
}

/// `apart`, and a second target e2 (index 2) in e1's bundle, whose
/// handler 10 only replies.
fn apart3(net: &MemNetwork, batch: u16) -> (Apart, Arc<Endpoint>) {
    super::init().unwrap();
    let mut cfg = Config::from_lookup(|_| None).unwrap();
    cfg.request_batch = batch;
    let open = || {
        let b = super::allocate_bundle(BundleMode::Seq).unwrap();
        let t = Transports::new(Box::new(net.attach()));
        let e = super::allocate_endpoint_over(b.id, &cfg, t).unwrap();
        (b, e)
    };
    let ((b0, e0), (b1, e1)) = (open(), open());
    let e2 = {
        let t = Transports::new(Box::new(net.attach()));
        super::allocate_endpoint_over(b1.id, &cfg, t).unwrap()
    };
    for e in [&e0, &e1, &e2] {
        e.set_tag(TAG);
        e.map(0, e0.name(), TAG).unwrap();
        e.map(1, e1.name(), TAG).unwrap();
        e.map(2, e2.name(), TAG).unwrap();
        // credits for a whole burst: the target is polled only after it
        e.set_expected_resources(3, 256).unwrap();
    }
    e2.set_handler(
        10,
        handler(|h| super::reply(h.token, &Message::short(11, &[])).unwrap()),
    );
    // the target records the order in which its handler ran
    let order = Arc::new(AtomicU64::new(0));
    let o = order.clone();
    e1.set_handler(
        10,
        handler(move |h| {
            // each request's argument is its place: they must run in order
            let k = h.args[0] as u64;
            assert_eq!(o.load(Ordering::SeqCst), k, "request {k} ran out of order");
            o.store(k + 1, Ordering::SeqCst);
            super::reply(h.token, &Message::short(11, &[])).unwrap();
        }),
    );
    e0.set_handler(11, handler(|_| {}));
    // the association first (its handshake needs the target's polls)
    e1.set_handler(
        12,
        handler(|h| super::reply(h.token, &Message::short(11, &[])).unwrap()),
    );
    e0.request(1, &Message::short(12, &[]), false).unwrap();
    poll_both_until(&b0, &b1, "the association", || {
        e0.unanswered_requests() == 0
    });
    ((b0, e0, b1, e1, order), e2)
}

/// `apart` with batches of 32 and `watch`, then two short requests (handler
/// 10, arguments 0 and 1): the first leaves, the second is held behind it.
fn one_held(net: &MemNetwork) -> (Apart, Seen, Copies) {
    let (b0, e0, b1, e1, ran) = apart(net, 32);
    let (seen, copies) = watch_copies(net);
    e0.request(1, &Message::short(10, &[0]), false).unwrap();
    e0.request(1, &Message::short(10, &[1]), false).unwrap();
    assert_eq!(requests_in(&seen), 1, "the second must be held");
    ((b0, e0, b1, e1, ran), seen, copies)
}

fn poll_both_until(b0: &Bundle, b1: &Bundle, what: &str, done: impl Fn() -> bool) {
    let t0 = std::time::Instant::now();
    while !done() {
        b0.poll().unwrap();
        b1.poll().unwrap();
        assert!(t0.elapsed().as_secs() < 5, "timed out waiting for {what}");
    }
}

fn requests_in(seen: &Seen) -> usize {
    seen.lock().iter().map(Vec::len).sum()
}

#[test]
fn a_lone_request_leaves_at_once_and_one_behind_it_waits_for_the_next_poll() {
    let net = MemNetwork::new();
    let (b0, e0, b1, _e1, ran) = apart(&net, 32);
    let seen = watch(&net);
    e0.request(1, &Message::short(10, &[0]), false).unwrap();
    assert_eq!(requests_in(&seen), 1, "a lone request must leave at once");
    // the first is unanswered (nobody polled the target): this one waits
    e0.request(1, &Message::short(10, &[1]), false).unwrap();
    e0.request(1, &Message::medium(10, &[2], &[7u8; 100]), false)
        .unwrap();
    assert_eq!(
        requests_in(&seen),
        1,
        "requests behind an unanswered one are held"
    );
    b0.poll().unwrap();
    assert_eq!(*seen.lock(), vec![vec![(10, 0)], vec![(10, 1), (10, 2)]]);
    poll_both_until(&b0, &b1, "three answers", || e0.unanswered_requests() == 0);
    assert_eq!(ran.load(Ordering::SeqCst), 3);
}

/// `n` requests in a burst, with batches of `batch`, the target not
/// polled meanwhile: each leaves once, in order; what left during the
/// burst went in datagrams of at most `batch` requests, far fewer than
/// the requests. (Once the target answers, what the protocol's send
/// window kept back leaves in bundles of its own size.)
fn burst(batch: u16, n: u32) {
    let net = MemNetwork::new();
    let (b0, e0, b1, _e1, ran) = apart(&net, batch);
    // (a copy of the association's request, before the watch, is not one
    // of the burst's)
    let copies_before = e0.statistics().packets_retransmitted;
    let (seen, copies) = watch_copies(&net);
    for k in 0..n {
        e0.request(1, &Message::short(10, &[k]), false).unwrap();
    }
    let during = seen.lock().clone();
    poll_both_until(&b0, &b1, "every handler", || {
        ran.load(Ordering::SeqCst) == n as u64
    });
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
        e0.statistics().packets_retransmitted - copies_before
    );
    assert!(
        during.iter().all(|d| d.len() <= batch as usize),
        "{during:?}"
    );
    assert!(seen.iter().all(|d| d.len() <= 32));
    let reqs: usize = during.iter().map(Vec::len).sum();
    // the first request of a burst goes alone, the rest queue behind it
    // (a request polls at most every 20 us, which sends a batch early)
    assert!(
        reqs > batch as usize && during.len() < reqs / 2,
        "batch {batch}: {} datagrams for {reqs} requests",
        during.len()
    );
}

#[test]
fn a_burst_leaves_in_datagrams_of_at_most_the_batch_every_request_once_in_order() {
    burst(32, 200);
}

#[test]
fn a_smaller_batch_is_kept_to() {
    burst(8, 100);
}

#[test]
fn with_the_batch_off_every_request_has_its_own_datagram() {
    for batch in [0u16, 1] {
        let net = MemNetwork::new();
        let (b0, e0, b1, _e1, ran) = apart(&net, batch);
        let seen = watch(&net);
        for k in 0..20 {
            e0.request(1, &Message::short(10, &[k]), false).unwrap();
            assert_eq!(requests_in(&seen), k as usize + 1);
        }
        poll_both_until(&b0, &b1, "every handler", || {
            ran.load(Ordering::SeqCst) == 20
        });
        assert!(seen.lock().iter().all(|d| d.len() == 1));
    }
}

#[test]
fn held_requests_leave_before_a_sleep_and_when_the_endpoint_closes() {
    let net = MemNetwork::new();
    let ((b0, e0, b1, e1, ran), seen, _) = one_held(&net);
    // a wait in the kernel (AM_WaitSema's, a credit's, a barrier's)
    b0.wait_for_activity(0);
    assert_eq!(
        requests_in(&seen),
        2,
        "a sleep must not keep a request back"
    );

    e0.request(1, &Message::short(10, &[2]), false).unwrap();
    e0.request(1, &Message::short(10, &[3]), false).unwrap();
    assert_eq!(requests_in(&seen), 2);
    // the program frees the endpoint: what it asked to send still leaves
    super::free_endpoint(e0.id).unwrap();
    drop(e0);
    assert_eq!(
        requests_in(&seen),
        4,
        "a closing endpoint must send what it holds"
    );
    poll_both_until(&b1, &b1, "the target's four handlers", || {
        ran.load(Ordering::SeqCst) == 4
    });
    drop((b0, e1));
}

#[test]
fn a_request_to_another_peer_or_a_large_one_is_not_held_behind_the_batch() {
    let net = MemNetwork::new();
    let ((b0, e0, b1, _e1, ran), _e2) = apart3(&net, 32);
    // e2's association first
    e0.request(2, &Message::short(10, &[0]), false).unwrap();
    poll_both_until(&b0, &b1, "e2's association", || {
        e0.unanswered_requests() == 0
    });
    let seen = watch(&net);
    e0.request(1, &Message::short(10, &[0]), false).unwrap();
    e0.request(1, &Message::short(10, &[1]), false).unwrap();
    assert_eq!(requests_in(&seen), 1);
    e0.request(2, &Message::short(10, &[100]), false).unwrap();
    // to e2, which owes nothing: it goes, and the one held for e1 before it
    assert_eq!(requests_in(&seen), 3);
    e0.request(2, &Message::short(10, &[101]), false).unwrap();
    assert_eq!(requests_in(&seen), 3, "e2 owes an answer now: held");
    e0.request(1, &Message::short(10, &[2]), false).unwrap();
    assert_eq!(
        requests_in(&seen),
        5,
        "to another peer: the held one goes first"
    );
    // a medium request over 1 KiB fills a datagram of its own: not held
    e0.request(1, &Message::medium(10, &[3], &[1u8; 2000]), false)
        .unwrap();
    assert_eq!(requests_in(&seen), 6);
    let order: Vec<u32> = seen.lock().iter().flatten().map(|r| r.1).collect();
    assert_eq!(order, [0, 1, 100, 101, 2, 3]);
    poll_both_until(&b0, &b1, "every answer", || e0.unanswered_requests() == 0);
    assert_eq!(ran.load(Ordering::SeqCst), 4);
}

#[test]
fn a_request_held_past_its_retransmission_timeout_is_sent_once() {
    let net = MemNetwork::new();
    let ((b0, e0, b1, _e1, ran), seen, copies) = one_held(&net);
    // the program computes for longer than any retransmission timeout
    // (at most 1 s; here it starts at 20 ms, at least 5 ms)
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let before = e0.statistics().packets_retransmitted;
    b0.poll().unwrap();
    // the held request went before its timer was looked at: not a
    // retransmission of something never sent (the first one, sent and
    // unanswered for 1 s, is resent: its timer is real)
    let sent: Vec<u32> = seen.lock().iter().flatten().map(|r| r.1).collect();
    assert_eq!(sent, [0, 1]);
    let copied = copies.lock().clone();
    assert!(copied.iter().all(|&(_, k)| k == 0), "{copied:?}");
    assert!(e0.statistics().packets_retransmitted - before <= 1);
    poll_both_until(&b0, &b1, "both answers", || e0.unanswered_requests() == 0);
    assert_eq!(ran.load(Ordering::SeqCst), 2);
}

/// Byte `i` of long request `k`.
fn pattern(k: u32, i: usize) -> u8 {
    (i as u32).wrapping_mul(29).wrapping_add(k * 11) as u8
}

/// Long requests of 64 KiB (handler 13, argument k) into e1's segment,
/// each checked by its handler against `pattern`; how many ran whole.
fn long_target(e1: &Endpoint) -> Arc<AtomicU64> {
    let seg = super::VecSegment::new(4 * 65_536);
    e1.set_segment(Some(seg.clone()));
    let whole = Arc::new(AtomicU64::new(0));
    let w = whole.clone();
    e1.set_handler(
        13,
        handler(move |h| {
            let super::Data::Long { addr, len } = h.data else {
                panic!("a long request")
            };
            let k = h.args[0];
            let off = addr - super::SegmentMemory::base(&*seg);
            let bytes = seg.snapshot()[off..off + len].to_vec();
            let want: Vec<u8> = (0..65_536).map(|i| pattern(k, i)).collect();
            assert!(bytes == want, "long request {k} whole");
            assert_eq!(w.load(Ordering::SeqCst), u64::from(k), "in order, once");
            w.fetch_add(1, Ordering::SeqCst);
            super::reply(h.token, &Message::short(11, &[])).unwrap();
        }),
    );
    whole
}

fn long(e0: &Arc<Endpoint>, k: u32) {
    long_of(e0, k, &long_data(k));
}

/// Long request `k`'s bytes.
fn long_data(k: u32) -> Vec<u8> {
    (0..65_536).map(|i| pattern(k, i)).collect()
}

/// Long request `k` with its bytes made beforehand.
fn long_of(e0: &Arc<Endpoint>, k: u32, data: &[u8]) {
    let at = u64::from(k % 4) * 65_536;
    e0.request(1, &Message::long(13, &[k], data, at), false)
        .unwrap();
}

#[test]
fn a_long_requests_last_fragment_waits_for_the_next_ones_first_or_a_sleep() {
    let net = MemNetwork::new();
    let (b0, e0, b1, e1, _) = apart(&net, 32);
    let whole = long_target(&e1);
    let seen = watch(&net);
    // a lone one leaves whole: its two datagrams (its first 64 bytes,
    // the packet that says where it goes, ride with its first large
    // fragment: `ProtoConfig::cut`)
    long(&e0, 0);
    assert_eq!(*seen.lock(), vec![vec![(13, 0), (13, 0)], vec![(13, 0)]]);
    // behind an unanswered one: its small last fragment stays
    let (d1, d2) = (long_data(1), long_data(2));
    long_of(&e0, 1, &d1);
    // when the hold began (ramp's clock, read as the call began)
    let held = e0.with(|s| s.batch.since);
    let now_seen = seen.lock().clone();
    assert_eq!(now_seen.len(), 3, "{now_seen:?}");
    assert_eq!(now_seen[2], vec![(13, 1), (13, 1)]);
    // the next one's first fragment takes it along, in one datagram
    long_of(&e0, 2, &d2);
    // its own fragment held now: when the second call's clock read was
    let second = e0.with(|s| s.batch.tail.then_some(s.batch.since));
    if second.is_some_and(|t| t.since(held) < super::batch::TAIL_HOLD) {
        // (unless the hold's 200 us had run out when the next one was
        // queued: this thread off the CPU between the calls' clock reads;
        // ~100-150 us apart when the machine is quiet)
        let now_seen = seen.lock().clone();
        assert_eq!(now_seen[3], vec![(13, 1), (13, 2), (13, 2)], "{now_seen:?}");
    }
    // a sleep in the kernel sends what is held
    b0.wait_for_activity(0);
    assert_eq!(requests_in(&seen), 9, "{:?}", seen.lock());
    poll_both_until(&b0, &b1, "three long requests", || {
        whole.load(Ordering::SeqCst) == 3 && e0.unanswered_requests() == 0
    });
    // held longer than 200 us: the next poll sends it
    long(&e0, 3);
    long(&e0, 4);
    let before = requests_in(&seen);
    std::thread::sleep(std::time::Duration::from_millis(2));
    b0.poll().unwrap();
    assert_eq!(requests_in(&seen), before + 1, "{:?}", seen.lock());
    assert_eq!(seen.lock().last().unwrap(), &vec![(13, 4)]);
    poll_both_until(&b0, &b1, "five long requests", || {
        whole.load(Ordering::SeqCst) == 5 && e0.unanswered_requests() == 0
    });
    // and a closing endpoint sends it too
    long(&e0, 5);
    long(&e0, 6);
    let before = requests_in(&seen);
    super::free_endpoint(e0.id).unwrap();
    drop(e0);
    assert_eq!(requests_in(&seen), before + 1, "{:?}", seen.lock());
    poll_both_until(&b1, &b1, "seven long requests", || {
        whole.load(Ordering::SeqCst) == 7
    });
    drop(b0);
}

#[test]
fn a_long_request_of_more_than_two_fragments_keeps_nothing_back() {
    let net = MemNetwork::new();
    let (b0, e0, b1, e1, _) = apart(&net, 32);
    e1.set_segment(Some(super::VecSegment::new(2 << 20)));
    e1.set_handler(
        13,
        handler(|h| super::reply(h.token, &Message::short(11, &[])).unwrap()),
    );
    let seen = watch(&net);
    let data = vec![5u8; 1 << 20];
    e0.request(1, &Message::long(13, &[0], &data, 0), false)
        .unwrap();
    let one = requests_in(&seen);
    // (its first 64 bytes alone, then 17: `ProtoConfig::cut`)
    assert_eq!(one, 18, "a lone 1 MiB request: every fragment at once");
    // behind an unanswered one: its last fragment would only wait (the
    // next message's first is full and never cut), so it does not
    e0.request(1, &Message::long(13, &[1], &data, 0), false)
        .unwrap();
    assert_eq!(requests_in(&seen), 2 * one);
    poll_both_until(&b0, &b1, "both answers", || e0.unanswered_requests() == 0);
}

#[test]
fn a_held_last_fragment_leaves_with_any_other_message() {
    use crate::wire::{Category, MsgKind, MsgMeta, CHANNEL_REPLY};
    let net = MemNetwork::new();
    let (b0, e0, b1, e1, _) = apart(&net, 32);
    let whole = long_target(&e1);
    let seen = watch(&net);
    long(&e0, 0);
    long(&e0, 1);
    let now_seen = seen.lock().clone();
    assert_eq!(now_seen.len(), 3, "the last fragment held: {now_seen:?}");
    // a message to e1 that is not a long request (here a reply; e1 drops
    // it as answering nothing), at the hold's own time (never up): it
    // does not wait behind the held fragment, and the fragment goes too
    let to = e1.addr();
    e0.with(|s| {
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
    poll_both_until(&b0, &b1, "both long requests", || {
        whole.load(Ordering::SeqCst) == 2 && e0.unanswered_requests() == 0
    });
}
