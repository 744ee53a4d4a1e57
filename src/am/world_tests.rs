//! The AM layer in the simulated world (`sim::World`): whole endpoints on
//! virtual time, deterministic for a seed. Requests and replies, credits,
//! and the simulator's own promises (a seed repeats a run exactly).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::am::handler::args::handler;
use crate::am::handler::message::Message;
use crate::config::Config;
use crate::error::Error;
use crate::sim::{lan, seeds, FaultConfig, Node, World};
use crate::time::{MICROS, MILLIS};

const TAG: u64 = 0x51e;
/// The target's handler: replies with its argument plus one.
const ASK: u8 = 10;
/// The initiator's reply handler.
const ANSWER: u8 = 11;

fn cfg() -> Config {
    Config::from_lookup(|_| None).unwrap()
}

/// `am::tests::connect_nodes` with this file's `TAG`.
fn connect(nodes: &[&Node], depth: i32) {
    super::tests::connect_nodes(nodes, TAG, depth);
}

/// Node 1 answers ASK; node 0 counts the answers (and records them).
fn ask_and_answer(n0: &Node, n1: &Node) -> Arc<Mutex<Vec<u32>>> {
    n1.ep.set_handler(
        ASK,
        handler(|h| {
            let v = h.args[0] + 1;
            super::reply(h.token, &Message::short(ANSWER, &[v])).unwrap();
        }),
    );
    let got: Arc<Mutex<Vec<u32>>> = Default::default();
    let g = got.clone();
    n0.ep.set_handler(
        ANSWER,
        handler(move |h| {
            g.lock().push(h.args[0]);
        }),
    );
    got
}

#[test]
fn a_request_is_answered_in_virtual_time() {
    let w = World::seeded(1);
    let (n0, n1) = (w.node(&cfg()), w.node(&cfg()));
    connect(&[&n0, &n1], 4);
    let got = ask_and_answer(&n0, &n1);
    let t0 = w.now();
    n0.ep
        .request(1, &Message::short(ASK, &[41]), false)
        .unwrap();
    while got.lock().is_empty() {
        n0.bundle.poll().unwrap();
    }
    assert_eq!(*got.lock(), [42]);
    // a handshake (two round trips) and the request's: 20 us each way
    let took = w.now().since(t0);
    assert!((100 * MICROS..=1000 * MICROS).contains(&took), "{took} ns");
}

#[test]
fn a_request_waits_for_a_credit_and_never_exceeds_the_depth() {
    let w = World::seeded(2);
    let (n0, n1) = (w.node(&cfg()), w.node(&cfg()));
    connect(&[&n0, &n1], 4);
    let got = ask_and_answer(&n0, &n1);
    // nonblocking: four credits, then none
    for k in 0..4 {
        n0.ep.request(1, &Message::short(ASK, &[k]), true).unwrap();
    }
    assert!(matches!(
        n0.ep.request(1, &Message::short(ASK, &[4]), true),
        Err(Error::InUse(_))
    ));
    assert_eq!(n0.ep.unanswered_requests(), 4);
    // blocking: each waits (the world runs the target meanwhile)
    for k in 4..100 {
        n0.ep.request(1, &Message::short(ASK, &[k]), false).unwrap();
        assert!(n0.ep.unanswered_requests() <= 4);
    }
    assert!(w.run_until(100 * MILLIS, || got.lock().len() == 100));
    let mut v = got.lock().clone();
    v.sort_unstable();
    assert_eq!(v, (1..=100).collect::<Vec<u32>>());
    assert_eq!(n0.ep.unanswered_requests(), 0);
}

/// A run's trace: when each answer arrived, in order.
fn trace(faults: FaultConfig) -> Vec<(u64, u32)> {
    let w = World::new(faults);
    let (n0, n1) = (w.node(&cfg()), w.node(&cfg()));
    connect(&[&n0, &n1], 8);
    let seen: Arc<Mutex<Vec<(u64, u32)>>> = Default::default();
    n1.ep.set_handler(
        ASK,
        handler(|h| {
            super::reply(h.token, &Message::short(ANSWER, &[h.args[0]])).unwrap();
        }),
    );
    let (s, clock) = (seen.clone(), n0.ep.clock.clone());
    n0.ep.set_handler(
        ANSWER,
        handler(move |h| s.lock().push((clock.now().0, h.args[0]))),
    );
    for k in 0..200 {
        n0.ep.request(1, &Message::short(ASK, &[k]), false).unwrap();
    }
    assert!(w.run_until(10_000 * MILLIS, || seen.lock().len() == 200));
    let v = seen.lock().clone();
    v
}

#[test]
fn a_seed_repeats_a_run_exactly_under_faults() {
    for seed in seeds(5) {
        let faults = FaultConfig {
            loss: 0.05,
            dup: 0.05,
            reorder: 0.1,
            corrupt: 0.01,
            jitter: 10 * MICROS,
            seed,
            ..lan()
        };
        let a = trace(faults.clone());
        assert_eq!(a.len(), 200, "seed {seed}");
        let mut ids: Vec<u32> = a.iter().map(|x| x.1).collect();
        ids.sort_unstable();
        assert_eq!(
            ids,
            (0..200).collect::<Vec<u32>>(),
            "seed {seed}: exactly once"
        );
        assert_eq!(trace(faults), a, "seed {seed}: the same run again");
    }
}

#[test]
fn a_killed_target_returns_the_requests_to_handler_zero() {
    let w = World::seeded(3);
    let mut c = cfg();
    c.proto.peer_timeout = 500 * MILLIS;
    let (n0, n1) = (w.node(&c), w.node(&c));
    connect(&[&n0, &n1], 4);
    let got = ask_and_answer(&n0, &n1);
    let returned = Arc::new(AtomicU64::new(0));
    let r = returned.clone();
    n0.ep.set_handler(
        0,
        handler(move |_| {
            r.fetch_add(1, Ordering::SeqCst);
        }),
    );
    n0.ep.request(1, &Message::short(ASK, &[1]), false).unwrap();
    assert!(w.run_until(10 * MILLIS, || got.lock().len() == 1));
    w.kill(n1.index);
    for k in 0..3 {
        n0.ep.request(1, &Message::short(ASK, &[k]), false).unwrap();
    }
    assert!(w.run_until(5_000 * MILLIS, || returned.load(Ordering::SeqCst) == 3));
    assert_eq!(n0.ep.unanswered_requests(), 0);
}

#[test]
fn nodes_with_shared_memory_talk_by_the_express_lane() {
    let w = World::seeded(4);
    let mut c = cfg();
    c.transport = crate::config::TransportChoice::Shm;
    let (n0, n1) = (w.node(&c), w.node(&c));
    connect(&[&n0, &n1], 8);
    let got = ask_and_answer(&n0, &n1);
    for k in 0..200 {
        n0.ep.request(1, &Message::short(ASK, &[k]), false).unwrap();
    }
    assert!(w.run_until(100 * MILLIS, || got.lock().len() == 200));
    let (a, b) = (n0.ep.express_stats(), n1.ep.express_stats());
    assert!(a.requests_sent > 100, "{a:?}");
    assert_eq!(b.requests_received, a.requests_sent);
}

/// Express requests to a target killed before they are answered come back
/// to handler 0 each with its own arguments (their outstanding entry gets
/// them copied in after it is made: `messages/request.rs`).
#[test]
fn express_requests_to_a_killed_target_return_with_their_arguments() {
    let w = World::seeded(5);
    let mut c = cfg();
    c.transport = crate::config::TransportChoice::Shm;
    c.proto.peer_timeout = 500 * MILLIS;
    let (n0, n1) = (w.node(&c), w.node(&c));
    connect(&[&n0, &n1], 8);
    let got = ask_and_answer(&n0, &n1);
    n0.ep.request(1, &Message::short(ASK, &[1]), false).unwrap();
    assert!(w.run_until(10 * MILLIS, || got.lock().len() == 1));
    let returned: Arc<Mutex<Vec<Vec<u32>>>> = Default::default();
    let r = returned.clone();
    n0.ep
        .set_handler(0, handler(move |h| r.lock().push(h.args.to_vec())));
    w.kill(n1.index);
    let before = n0.ep.express_stats().requests_sent;
    for k in 0..3u32 {
        n0.ep
            .request(1, &Message::short(ASK, &[k, 7, k + 100]), false)
            .unwrap();
    }
    assert!(
        n0.ep.express_stats().requests_sent > before,
        "none went express"
    );
    // one by the protocol: something in flight, so the death is noticed
    n0.ep
        .request(1, &Message::medium(ASK, &[3, 7, 103], &[0]), false)
        .unwrap();
    assert!(w.run_until(5_000 * MILLIS, || returned.lock().len() == 4));
    let mut args = returned.lock().clone();
    args.sort();
    assert_eq!(
        args,
        (0..4).map(|k| vec![k, 7, k + 100]).collect::<Vec<_>>()
    );
    assert_eq!(n0.ep.unanswered_requests(), 0);
}
