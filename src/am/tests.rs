//! The AM layer's basic exchange in the simulated world (`sim::World`):
//! two nodes (simulated processes) on a clean LAN, on virtual time, each
//! test a program calling the API; the world polls the other node when it
//! has work. Requests and replies of every category, a returned message,
//! credits (one reply gives back one, counted with the replies held in the
//! network, `World::hold`), forged answers from a third endpoint, and the
//! unmap of the last entry of an address.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::am::endpoint::core::Endpoint;
use crate::am::handler::args::{handler, Data, VecSegment};
use crate::am::handler::message::Message;
use crate::config::Config;
use crate::error::{Error, ReturnStatus};
use crate::sim::{Node, World};
use crate::time::MILLIS;
use crate::wire::{any_packet, Packet, CHANNEL_REPLY};

const TAG: u64 = 0x5eed;

/// The configuration every node of these tests has: the defaults.
pub(super) fn cfg() -> Config {
    Config::from_lookup(|_| None).unwrap()
}

/// Maps every endpoint of `eps` to every other (index k is `eps[k]`),
/// tagged `tag`, and fixes the tables with network depth `depth`.
pub(super) fn connect(eps: &[&Arc<Endpoint>], tag: u64, depth: i32) {
    for e in eps {
        e.set_tag(tag);
        for (k, p) in eps.iter().enumerate() {
            e.map(k as i64, p.name(), tag).unwrap();
        }
        e.set_expected_resources(eps.len() as i32, depth).unwrap();
    }
}

/// `connect` for simulated nodes: every node's endpoint mapped to every
/// other (index k is node k), tagged `tag`, network depth `depth` (the
/// set-up of `world_tests.rs`, `timing_world_tests.rs` and
/// `rails_world_tests.rs`).
pub(super) fn connect_nodes(nodes: &[&Node], tag: u64, depth: i32) {
    let eps: Vec<_> = nodes.iter().map(|n| &n.ep).collect();
    connect(&eps, tag, depth);
}

/// Counts what comes back to handler 0 of `ep` (returned messages): how
/// many, and how many of them EUNREACHABLE; `then` runs after each (the
/// returned-message handler of `timing_world_tests.rs` and
/// `rails_world_tests.rs`).
pub(super) fn count_returned(
    ep: &Endpoint,
    then: impl Fn() + Send + Sync + 'static,
) -> (Arc<AtomicU64>, Arc<AtomicU64>) {
    let (returned, unreachable) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (r, u) = (returned.clone(), unreachable.clone());
    ep.set_handler(
        0,
        handler(move |h| {
            if let Data::Returned { status, .. } = h.data {
                if format!("{status:?}").contains("Unreachable") {
                    u.fetch_add(1, Ordering::SeqCst);
                }
            }
            r.fetch_add(1, Ordering::SeqCst);
            then();
        }),
    );
    (returned, unreachable)
}

/// Two new nodes of `w` configured by `cfg`, mapped to each other (index
/// 0 is node 0's endpoint, 1 node 1's), with network depth `depth`.
pub(super) fn pair(w: &World, cfg: &Config, depth: i32) -> (Node, Node) {
    let (n0, n1) = (w.node(cfg), w.node(cfg));
    connect(&[&n0.ep, &n1.ep], TAG, depth);
    (n0, n1)
}

/// Whether `dgram` carries a DATA of the reply channel (among the packets
/// of a bundle too).
pub(super) fn is_reply(dgram: &[u8]) -> bool {
    any_packet(
        dgram,
        |p| matches!(p, Packet::Data { common, .. } if common.channel == CHANNEL_REPLY),
    )
}

#[test]
fn requests_replies_and_a_returned_message() {
    let w = World::seeded(1);
    let (n0, n1) = pair(&w, &cfg(), 4);
    let (e0, e1) = (&n0.ep, &n1.ep);
    let seg = VecSegment::new(4096);
    e1.set_segment(Some(seg.clone()));
    let got = Arc::new(AtomicU64::new(0));
    let g = got.clone();
    e1.set_handler(
        10,
        handler(move |h| {
            let mut sum: u64 = h.args.iter().map(|&a| a as u64).sum();
            match &mut h.data {
                Data::None => {}
                Data::Medium(m) => sum += m.iter().map(|&x| x as u64).sum::<u64>(),
                Data::Long { len, .. } => sum += *len as u64,
                Data::Returned { .. } => panic!("not a returned message"),
            }
            g.fetch_add(sum, Ordering::SeqCst);
            super::reply(h.token, &Message::short(11, &[sum as u32])).unwrap();
        }),
    );
    let replies = Arc::new(AtomicU64::new(0));
    let r = replies.clone();
    e0.set_handler(
        11,
        handler(move |h| {
            r.fetch_add(h.args[0] as u64, Ordering::SeqCst);
        }),
    );
    let returned = Arc::new(AtomicU64::new(0));
    let rt = returned.clone();
    e0.set_handler(
        0,
        handler(move |h| {
            assert!(matches!(
                h.data,
                Data::Returned {
                    status: ReturnStatus::BadHandler,
                    ..
                }
            ));
            rt.fetch_add(1, Ordering::SeqCst);
        }),
    );

    e0.request(1, &Message::short(10, &[1, 2, 3]), false)
        .unwrap();
    e0.request(1, &Message::medium(10, &[4], &[1u8; 100]), false)
        .unwrap();
    e0.request(1, &Message::long(10, &[], &[3u8; 1000], 64), false)
        .unwrap();
    // Nobody handles 99 on e1: the request comes back to e0's handler 0.
    e0.request(1, &Message::short(99, &[]), false).unwrap();
    assert!(
        w.run_until(100 * MILLIS, || {
            replies.load(Ordering::SeqCst) == 6 + 104 + 1000 && returned.load(Ordering::SeqCst) == 1
        }),
        "three replies and a returned request"
    );
    assert_eq!(got.load(Ordering::SeqCst), 6 + 104 + 1000);
    assert_eq!(&seg.snapshot()[64..1064], &[3u8; 1000][..]);
    let s = e0.statistics();
    assert_eq!(s.requests_sent, [2, 1, 1]);
    assert_eq!(s.replies_received, [3, 0, 0]);
    assert_eq!(s.returned_messages, 1);
    assert_eq!(e1.statistics().requests_received, [2, 1, 1]);
    assert_eq!(e0.unanswered_requests(), 0);
}

#[test]
fn one_reply_gives_back_one_credit() {
    const DEPTH: usize = 4;
    let w = World::seeded(2);
    let (n0, n1) = pair(&w, &cfg(), DEPTH as i32);
    let (e0, e1) = (&n0.ep, &n1.ep);
    let handled = Arc::new(AtomicU64::new(0));
    let h1 = handled.clone();
    e1.set_handler(
        10,
        handler(move |h| {
            h1.fetch_add(1, Ordering::SeqCst);
            super::reply(h.token, &Message::short(11, &[])).unwrap();
        }),
    );
    let replies = Arc::new(AtomicU64::new(0));
    let r = replies.clone();
    e0.set_handler(
        11,
        handler(move |_| {
            r.fetch_add(1, Ordering::SeqCst);
        }),
    );
    // the replies wait in the network until the test lets them go
    let e0_addr = e0.addr();
    w.hold(move |_, to, d| to == e0_addr && is_reply(d));
    let request = || e0.request(1, &Message::short(10, &[]), true);

    // one at a time: each reply leaves in a datagram of its own (replies
    // of one poll would share one)
    for i in 0..DEPTH {
        request().unwrap_or_else(|e| panic!("request {i} of {DEPTH}: {e:?}"));
        assert!(
            w.run_until(10 * MILLIS, || {
                handled.load(Ordering::SeqCst) == i as u64 + 1 && w.held() > i
            }),
            "request {i}'s handler and its reply"
        );
    }
    assert_eq!(w.held(), DEPTH, "one datagram per reply, none sent twice");
    assert!(matches!(request(), Err(Error::InUse(_))), "depth exceeded");

    // Exactly one reply arrives: exactly one request more may go.
    assert_eq!(w.release(1), 1);
    assert!(w.run_until(10 * MILLIS, || replies.load(Ordering::SeqCst) == 1));
    request().expect("the reply gave back a credit");
    assert!(
        matches!(request(), Err(Error::InUse(_))),
        "one reply gave back more than one credit"
    );
    assert_eq!(replies.load(Ordering::SeqCst), 1);

    // The rest arrive: every credit comes back.
    w.release_all();
    assert!(w.run_until(100 * MILLIS, || {
        replies.load(Ordering::SeqCst) == DEPTH as u64 + 1
    }));
    for i in 0..DEPTH {
        request().unwrap_or_else(|e| panic!("request {i} after the replies: {e:?}"));
    }
}

/// Findings 1 and 3: a returned message, an automatic reply or a Long
/// reply for a request of ours, sent by another endpoint (one with a real
/// association: it proved its own address, not the peer's), runs no
/// handler, frees no credit and writes nothing into the segment; the real
/// reply, from the peer the request went to, still does.
#[test]
fn forged_returned_messages_and_replies_from_another_endpoint_run_nothing() {
    use crate::wire::{Category, MsgKind, MsgMeta};
    let w = World::seeded(3);
    let (n0, n1) = pair(&w, &cfg(), 1);
    let (e0, e1) = (&n0.ep, &n1.ep);
    // the forger: a process of its own, mapped by nobody
    let e2 = w.node(&cfg()).ep;
    e2.set_expected_resources(2, 1).unwrap();
    let seg = VecSegment::new(256);
    e0.set_segment(Some(seg.clone()));
    e1.set_handler(
        10,
        handler(|h| super::reply(h.token, &Message::short(11, &[7])).unwrap()),
    );
    let (ran0, ran11) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let r0 = ran0.clone();
    e0.set_handler(
        0,
        handler(move |_| {
            r0.fetch_add(1, Ordering::SeqCst);
        }),
    );
    let r11 = ran11.clone();
    e0.set_handler(
        11,
        handler(move |_| {
            r11.fetch_add(1, Ordering::SeqCst);
        }),
    );
    let e0_addr = e0.addr();
    let e1_addr = e1.addr();
    // hold e1's reply (its one argument is 7; the forgeries carry 5)
    w.hold(move |_, to, d| {
        to == e0_addr
            && any_packet(d, |p| {
                matches!(p, Packet::Data { common, meta, .. }
                    if common.channel == CHANNEL_REPLY && meta.args()[..] == [7])
            })
    });
    e0.request(1, &Message::short(10, &[]), false).unwrap(); // transaction 1
    assert!(
        w.run_until(10 * MILLIS, || w.held() >= 1),
        "the real reply held"
    );
    assert_eq!(e1.statistics().requests_received.iter().sum::<u64>(), 1);
    // e2 forges every kind of answer to transaction 1 (and a few others)
    let forge = |kind, category, returned_request, payload: Vec<u8>| {
        for txn in [1, 2, 0] {
            let mut meta = MsgMeta::new(kind, category, 11, &[5]);
            meta.txn = txn;
            meta.tag = TAG;
            meta.status = ReturnStatus::BadHandler as u8;
            meta.returned_request = returned_request;
            let p = payload.clone();
            e2.with(|s| s.send_message(s.clock.now(), e0_addr, CHANNEL_REPLY, meta, p));
        }
    };
    forge(MsgKind::Returned, Category::Short, true, vec![]);
    forge(MsgKind::Returned, Category::Short, false, vec![]);
    forge(MsgKind::AutoReply, Category::Short, false, vec![]);
    forge(MsgKind::User, Category::Long, false, vec![0xEE; 64]);
    forge(MsgKind::User, Category::Short, false, vec![]);
    assert!(
        w.run_until(100 * MILLIS, || e0.statistics().stale_dropped >= 15),
        "the forgeries arrive"
    );
    // and a while longer: nothing else comes of them
    w.run_for(10 * MILLIS);
    assert_eq!(e0.statistics().stale_dropped, 15);
    assert_eq!(ran0.load(Ordering::SeqCst), 0, "handler 0 ran");
    assert_eq!(ran11.load(Ordering::SeqCst), 0, "a reply handler ran");
    assert!(
        seg.snapshot().iter().all(|&x| x == 0),
        "the segment was written"
    );
    assert!(
        matches!(
            e0.request(1, &Message::short(10, &[]), true),
            Err(Error::InUse(_))
        ),
        "a forgery freed the credit"
    );
    // the real reply, from e1, completes the request
    assert_ne!(e1_addr, e2.addr());
    w.release_all();
    assert!(w.run_until(100 * MILLIS, || ran11.load(Ordering::SeqCst) == 1));
    e0.request(1, &Message::short(10, &[]), true)
        .expect("the real reply gave the credit back");
    assert_eq!(ran0.load(Ordering::SeqCst), 0);
}

/// AM-2 fixes the table at `AM_SetExpectedResources`, so an unmap comes
/// before any traffic; protocol state can exist then (a peer that opened
/// an association with us first, here `connect`): the last entry's unmap
/// frees it, another entry for the address keeps it.
#[test]
fn unmapping_the_last_entry_of_an_address_frees_its_protocol_state() {
    let w = World::seeded(4);
    let (e0, e1) = (w.node(&cfg()).ep, w.node(&cfg()).ep);
    e0.map(1, e1.name(), TAG).unwrap();
    e0.map(2, e1.name(), TAG).unwrap();
    let to = e1.addr();
    e0.with(|s| s.proto.connect(s.clock.now(), to));
    let peers = |e: &Endpoint| e.with(|s| s.proto.peer_count());
    assert_eq!(peers(&e0), 1);
    e0.unmap(1).unwrap();
    assert_eq!(peers(&e0), 1, "another entry maps the address");
    e0.unmap(2).unwrap();
    assert_eq!(peers(&e0), 0, "the last entry's unmap frees the peer");
}

/// A request whose handler does not reply gets its automatic reply, which
/// counts as a short reply sent and received, as AMUDP counts it (GASNet's
/// statistics compare replies with requests): every request one reply.
#[test]
fn automatic_replies_count_as_short_replies() {
    let w = World::seeded(3);
    let (n0, n1) = pair(&w, &cfg(), 4);
    let (e0, e1) = (&n0.ep, &n1.ep);
    e1.set_handler(10, handler(|_| {}));
    e1.set_handler(
        12,
        handler(|h| super::reply(h.token, &Message::medium(11, &[], &[1u8; 10])).unwrap()),
    );
    let replies = Arc::new(AtomicU64::new(0));
    let r = replies.clone();
    e0.set_handler(
        11,
        handler(move |_| {
            r.fetch_add(1, Ordering::SeqCst);
        }),
    );
    for _ in 0..3 {
        e0.request(1, &Message::short(10, &[]), false).unwrap();
        e0.request(1, &Message::medium(10, &[], &[2u8; 20]), false)
            .unwrap();
        e0.request(1, &Message::short(12, &[]), false).unwrap();
    }
    assert!(
        w.run_until(100 * MILLIS, || {
            replies.load(Ordering::SeqCst) == 3 && e0.unanswered_requests() == 0
        }),
        "three replies and six automatic replies"
    );
    let (s0, s1) = (e0.statistics(), e1.statistics());
    assert_eq!(s0.requests_sent, [6, 3, 0]);
    assert_eq!(s1.requests_received, [6, 3, 0]);
    assert_eq!(
        s1.replies_sent,
        [6, 3, 0],
        "the six automatic ones as short"
    );
    assert_eq!(s0.replies_received, [6, 3, 0]);
}
