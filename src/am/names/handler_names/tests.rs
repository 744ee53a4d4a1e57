//! Handler names in the simulated world (`sim::World`), on virtual time:
//! each endpoint a node (a simulated process) on a clean LAN, the test
//! calling the API as a program would (a look-up waits for its answer
//! while the world runs the peer). Lookups across different install
//! orders, the cache, refusals, hostile name messages, a flood of queries
//! whose answers never arrive (`World::tap` drops them), and a peer
//! restarted at its old address (`World::restart`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::am::names::handler_names::MAX_QUEUED_TO_PEER;
use crate::am::tests::{cfg, connect, is_reply};
use crate::am::{handler, Endpoint, Message};
use crate::error::Error;
use crate::sim::World;
use crate::time::MILLIS;
use crate::wire::{Category, MsgKind, MsgMeta, CHANNEL_REPLY, CHANNEL_REQUEST};

const TAG: u64 = 0x7a9;

/// `n` nodes of `w`, each endpoint mapped to all (index i is node i's),
/// tagged TAG, depth 4.
fn endpoints(w: &World, n: usize) -> Vec<Arc<Endpoint>> {
    let eps: Vec<_> = (0..n).map(|_| w.node(&cfg()).ep).collect();
    connect(&eps.iter().collect::<Vec<_>>(), TAG, 4);
    eps
}

/// Installs a handler that counts its calls into `hits[k]`.
fn install(e: &Endpoint, index: u8, hits: &Arc<[AtomicU64; 3]>, k: usize) {
    let h = hits.clone();
    e.set_handler(
        index,
        handler(move |_| {
            h[k].fetch_add(1, Ordering::SeqCst);
        }),
    );
}

#[test]
fn lookups_find_handlers_installed_in_other_orders() {
    let w = World::seeded(1);
    let eps = endpoints(&w, 2);
    let (e0, e1) = (&eps[0], &eps[1]);
    let hits: Arc<[AtomicU64; 3]> = Arc::new(Default::default());
    // e1 installs "ping" at 7 and "pong" at 20; e0 the other way round
    install(e1, 7, &hits, 0);
    install(e1, 20, &hits, 1);
    e1.set_handler_name(7, b"ping").unwrap();
    e1.set_handler_name(20, b"pong").unwrap();
    install(e0, 20, &hits, 2);
    e0.set_handler_name(20, b"ping").unwrap();
    let h = e0.lookup_handler(1, b"ping").unwrap();
    assert_eq!(h, 7);
    assert_eq!(e0.lookup_handler(1, b"pong").unwrap(), 20);
    // loopback: its own table
    assert_eq!(e0.lookup_handler(0, b"ping").unwrap(), 20);
    e0.request(1, &Message::short(h, &[]), false).unwrap();
    assert!(
        w.run_until(10 * MILLIS, || hits[0].load(Ordering::SeqCst) == 1),
        "ping runs"
    );
    // cached: no query goes out
    let sent = e0.statistics().packets_sent;
    assert_eq!(e0.lookup_handler(1, b"ping").unwrap(), 7);
    assert_eq!(
        e0.statistics().packets_sent,
        sent,
        "a cached lookup sent packets"
    );
    assert!(matches!(
        e0.lookup_handler(1, b"nope"),
        Err(Error::BadArg(_))
    ));
    // no user handler ran for the queries
    assert_eq!(hits[1].load(Ordering::SeqCst), 0);
    assert_eq!(hits[2].load(Ordering::SeqCst), 0);
}

#[test]
fn bad_names_and_uninstalled_handlers_are_refused() {
    let w = World::seeded(2);
    let eps = endpoints(&w, 2);
    let e0 = &eps[0];
    let hits: Arc<[AtomicU64; 3]> = Arc::new(Default::default());
    install(e0, 3, &hits, 0);
    for bad in [
        &b""[..],
        &[b'a'; 64][..],
        b"tab\there",
        b"nul\0",
        "é".as_bytes(),
    ] {
        assert!(matches!(e0.set_handler_name(3, bad), Err(Error::BadArg(_))));
        assert!(matches!(e0.lookup_handler(1, bad), Err(Error::BadArg(_))));
    }
    e0.set_handler_name(3, &[b'~'; 63]).unwrap();
    e0.set_handler_name(3, b"with space").unwrap();
    assert!(matches!(
        e0.set_handler_name(4, b"x"),
        Err(Error::BadArg(_))
    ));
    assert!(matches!(
        e0.lookup_handler(200, b"x"),
        Err(Error::BadArg(_))
    ));
    // a name moves: the old handler loses it, a handler's old name goes
    install(e0, 4, &hits, 1);
    e0.set_handler_name(4, b"with space").unwrap();
    assert_eq!(e0.lookup_handler(0, b"with space").unwrap(), 4);
    e0.set_handler_name(4, b"other").unwrap();
    assert!(matches!(
        e0.lookup_handler(0, b"with space"),
        Err(Error::BadArg(_))
    ));
    assert_eq!(e0.statistics().packets_sent, 0, "nothing was sent");
}

/// A peer whose tag our endpoint does not accept gets REFUSED, seen as
/// Resource, not as a missing name.
#[test]
fn a_query_with_the_wrong_tag_is_refused() {
    let w = World::seeded(3);
    let eps = endpoints(&w, 2);
    let hits: Arc<[AtomicU64; 3]> = Arc::new(Default::default());
    install(&eps[1], 9, &hits, 0);
    eps[1].set_handler_name(9, b"h").unwrap();
    eps[0].set_translation_tag(1, TAG + 1).unwrap();
    assert!(matches!(
        eps[0].lookup_handler(1, b"h"),
        Err(Error::Resource(_))
    ));
}

/// Name messages with a wrong channel, category, argument count, name or
/// status, and answers to no query of ours: dropped and counted, nothing
/// runs, lookups still work.
#[test]
fn hostile_name_messages_are_dropped_and_counted() {
    let w = World::seeded(4);
    let eps = endpoints(&w, 2);
    let (e0, e1) = (&eps[0], &eps[1]);
    let hits: Arc<[AtomicU64; 3]> = Arc::new(Default::default());
    install(e0, 0, &hits, 0);
    install(e0, 5, &hits, 1);
    e0.set_handler_name(5, b"five").unwrap();
    let to = e0.addr();
    let send = |kind, cat, ch, args: &[u32], payload: &[u8]| {
        let meta = MsgMeta {
            tag: TAG,
            ..MsgMeta::new(kind, cat, 5, args)
        };
        e1.with(|s| s.send_message(s.clock.now(), to, ch, meta, payload.to_vec()));
    };
    let q = MsgKind::NameQuery;
    let a = MsgKind::NameAnswer;
    send(q, Category::Medium, CHANNEL_REPLY, &[1], b"five"); // wrong channel
    send(q, Category::Short, CHANNEL_REQUEST, &[1], b""); // no name
    send(q, Category::Long, CHANNEL_REQUEST, &[1], b"five"); // wrong category
    send(q, Category::Medium, CHANNEL_REQUEST, &[1, 2], b"five"); // two args
    send(q, Category::Medium, CHANNEL_REQUEST, &[1], &[b'x'; 64]); // too long
    send(q, Category::Medium, CHANNEL_REQUEST, &[1], b"fi\x01ve"); // control char
    send(a, Category::Short, CHANNEL_REQUEST, &[1, 0, 5], b""); // wrong channel
    send(a, Category::Short, CHANNEL_REPLY, &[1, 7, 5], b""); // bad status
    send(a, Category::Short, CHANNEL_REPLY, &[1, 0, 256], b""); // bad index
    send(a, Category::Short, CHANNEL_REPLY, &[1, 0], b""); // two args
    send(a, Category::Medium, CHANNEL_REPLY, &[1, 0, 5], b"x"); // payload
    let corrupt0 = e0.statistics().corrupt_dropped;
    assert!(
        w.run_until(10 * MILLIS, || e0.statistics().corrupt_dropped
            >= corrupt0 + 11),
        "the malformed messages arrive"
    );
    assert_eq!(e0.statistics().corrupt_dropped, corrupt0 + 11);
    send(a, Category::Short, CHANNEL_REPLY, &[77, 0, 5], b""); // no such query
    let stale0 = e0.statistics().stale_dropped;
    assert!(
        w.run_until(10 * MILLIS, || e0.statistics().stale_dropped > stale0),
        "the stray answer arrives"
    );
    assert_eq!(hits[0].load(Ordering::SeqCst), 0, "handler 0 ran");
    assert_eq!(hits[1].load(Ordering::SeqCst), 0, "a user handler ran");
    assert_eq!(e1.lookup_handler(0, b"five").unwrap(), 5);
}

/// A peer floods queries and never takes the answers: what we queue for it
/// stays bounded, the rest is dropped and counted.
#[test]
fn a_flood_of_queries_does_not_grow_memory() {
    let w = World::seeded(5);
    let eps = endpoints(&w, 2);
    let (e0, e1) = (&eps[0], &eps[1]);
    let hits: Arc<[AtomicU64; 3]> = Arc::new(Default::default());
    install(e0, 5, &hits, 0);
    e0.set_handler_name(5, b"five").unwrap();
    let (a0, a1) = (e0.addr(), e1.addr());
    // answers to e1 (DATA on the reply channel) never arrive
    w.tap(move |_, to, d| !(to == a1 && is_reply(d)));
    let total = 3 * MAX_QUEUED_TO_PEER;
    for i in 0..total {
        let meta = MsgMeta {
            tag: TAG,
            ..MsgMeta::new(MsgKind::NameQuery, Category::Medium, 0, &[i as u32])
        };
        e1.with(|s| s.send_message(s.clock.now(), a0, CHANNEL_REQUEST, meta, b"five".to_vec()));
    }
    let mut most = 0;
    assert!(
        w.run_until(1000 * MILLIS, || {
            let (unfinished, dropped) =
                e0.with(|s| (s.proto.unfinished_to(&a1), s.stats.stale_dropped));
            most = most.max(unfinished);
            assert!(
                unfinished <= MAX_QUEUED_TO_PEER,
                "{unfinished} answers queued"
            );
            dropped as usize >= total - MAX_QUEUED_TO_PEER
        }),
        "every query arrives"
    );
    assert!(
        most >= MAX_QUEUED_TO_PEER / 2,
        "the flood never filled the queue"
    );
    assert_eq!(hits[0].load(Ordering::SeqCst), 0);
}

/// A peer restarted at its old address with other handler indices: the
/// cache keeps the old index until the new process's association shows
/// (a restart is recognised only through a new handshake), then the next
/// look-up asks again.
#[test]
fn a_restarted_peer_is_asked_again() {
    let w = World::seeded(6);
    let mut eps = endpoints(&w, 2);
    let hits: Arc<[AtomicU64; 3]> = Arc::new(Default::default());
    install(&eps[1], 5, &hits, 0);
    eps[1].set_handler_name(5, b"h").unwrap();
    install(&eps[0], 7, &hits, 1);
    assert_eq!(eps[0].lookup_handler(1, b"h").unwrap(), 5);
    // the peer's process ends; a new one starts at the same address
    let addr = eps.pop().unwrap().addr();
    w.kill(1);
    let e1 = w.restart(1, &cfg()).ep;
    assert_eq!(e1.addr(), addr);
    e1.set_tag(TAG);
    e1.map(0, eps[0].name(), TAG).unwrap();
    e1.map(1, e1.name(), TAG).unwrap();
    e1.set_expected_resources(2, 4).unwrap();
    install(&e1, 9, &hits, 2);
    e1.set_handler_name(9, b"h").unwrap();
    let e0 = &eps[0];
    assert_eq!(
        e0.lookup_handler(1, b"h").unwrap(),
        5,
        "before the new process talks, nothing shows the restart"
    );
    e1.request(0, &Message::short(7, &[]), false).unwrap();
    assert!(
        w.run_until(100 * MILLIS, || hits[1].load(Ordering::SeqCst) == 1),
        "the new process's request runs"
    );
    assert_eq!(
        e0.lookup_handler(1, b"h").unwrap(),
        9,
        "the stale index was used"
    );
}
