//! A lost `TxnAck` (issue 10's recovery states), between simulated
//! processes (`sim::World`, virtual time) with exactly that datagram
//! dropped (`World::tap`): a handler that polls while it runs gets its ack
//! through (the initiator sees PROCESSING), and a transaction whose
//! handler ran is never reported NOT_ACKED when the target then goes
//! silent (its handler blocked, not polling) or is killed and replaced,
//! whether or not the request's delivery was acknowledged at the protocol
//! level. While the target's handler runs the test drives the world from
//! the top and the initiator's program reads the state every millisecond
//! (`txn_tests::watch`). Every test runs the seeds `sim::seeds` gives.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use super::txn_tests::{cfg, pair_with, until, watch, ONE_WAY, SOON, TAG};
use crate::am::{handler, Abandon, Ack, Bundle, Endpoint, Message, Progress};
use crate::clock::Clock;
use crate::sim::{crash_here, seeds, Node, World};
use crate::time::{Nanos, MILLIS};
use crate::wire::{any_packet, MsgKind, Packet};

/// Two nodes mapped to each other, `peer_timeout` the peer timeout
/// (`RAMP_PEER_TIMEOUT_MS`) of both.
fn pair(w: &World, peer_timeout: Nanos) -> (Node, Node) {
    let mut c = cfg();
    c.proto.peer_timeout = peer_timeout;
    pair_with(w, &c, 8)
}

/// Whether `d` holds a DATA packet carrying a `TxnAck` that says the
/// handler started (status 0: not an answer to a probe the target cannot
/// place), alone or bundled with other packets.
fn is_start_ack(d: &[u8]) -> bool {
    any_packet(
        d,
        |p| matches!(p, Packet::Data { meta, .. } if meta.kind == MsgKind::TxnAck && meta.status == 0),
    )
}

/// Drops the first `n` start acks to `e0`; the count of those dropped.
fn drop_start_acks(w: &World, e0: &Endpoint, n: u64) -> Arc<AtomicU64> {
    let dropped = Arc::new(AtomicU64::new(0));
    let d = dropped.clone();
    let to_e0 = e0.addr();
    w.tap(move |_, to, dgram| {
        let drop = to == to_e0
            && is_start_ack(dgram)
            && d.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |k| {
                (k < n).then_some(k + 1)
            })
            .is_ok();
        !drop
    });
    dropped
}

/// How long a transaction waits before it is probed (`txn.rs`).
const PROBE_EVERY: Nanos = 200 * MILLIS;

/// Flags a handler and the test share.
#[derive(Default)]
struct Flags {
    started: AtomicBool,
    /// The handler stops polling (the target goes silent).
    silent: AtomicBool,
    release: AtomicBool,
    runs: AtomicU64,
}

/// e1's handler 10: starts, polls its own bundle (nested: the world runs
/// meanwhile) until told to go silent, then blocks without polling (it
/// sleeps a millisecond at a time) until released.
fn blocking_handler(n1: &Node, f: &Arc<Flags>) {
    let (f, b1): (Arc<Flags>, Weak<Bundle>) = (f.clone(), Arc::downgrade(&n1.bundle));
    let clock: Clock = n1.ep.clock.clone();
    n1.ep.set_handler(
        10,
        handler(move |_| {
            f.started.store(true, Ordering::SeqCst);
            while !f.silent.load(Ordering::SeqCst) && !f.release.load(Ordering::SeqCst) {
                if let Some(b) = b1.upgrade() {
                    b.poll().unwrap();
                }
            }
            while !f.release.load(Ordering::SeqCst) {
                clock.sleep(MILLIS);
            }
            f.runs.fetch_add(1, Ordering::SeqCst);
        }),
    );
}

#[test]
fn a_lost_ack_reaches_the_initiator_while_the_handler_polls() {
    for seed in seeds(4) {
        let w = World::seeded(seed);
        let (n0, n1) = pair(&w, 10_000 * MILLIS);
        let e0 = n0.ep.clone();
        let f = Arc::new(Flags::default());
        blocking_handler(&n1, &f);
        let dropped = drop_start_acks(&w, &e0, 1);
        let sent = w.now();
        let t = e0.request_txn(1, &Message::short(10, &[1])).unwrap();
        // the handler runs and polls; its first ack was dropped
        let flags = f.clone();
        let seen = watch(&w, &e0, t, move |_, st| {
            assert_ne!(st.abandon, Abandon::NotAcked, "the handler runs: {st:?}");
            assert!(!st.is_final(), "ended while the handler runs: {st:?}");
            if st.progress != Progress::Processing {
                return false;
            }
            assert!(flags.started.load(Ordering::SeqCst));
            flags.release.store(true, Ordering::SeqCst);
            true
        });
        until(&w, SOON, "the handler's end", || {
            f.runs.load(Ordering::SeqCst) == 1
        });
        let (at, st) = seen.lock().expect("PROCESSING seen");
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            1,
            "the first ack was dropped"
        );
        assert_eq!(st.ack, Ack::Acked);
        // the protocol sent it again (the handler polls) at its first
        // retransmission timeout (e1 has measured no round trip yet), long
        // before the transaction's first probe (200 ms); seen at the next
        // read of the state
        let rto = cfg().proto.rto_initial;
        let took = at.since(sent);
        assert!(
            (rto..=rto + 2 * MILLIS).contains(&took),
            "PROCESSING {took} ns after the request"
        );
        let (done, st) = e0.txn_wait(t, 30_000).unwrap();
        assert!(done, "{st:?}");
        assert_eq!(
            (st.ack, st.progress, st.abandon),
            (Ack::Acked, Progress::Processed, Abandon::None)
        );
        assert_eq!(f.runs.load(Ordering::SeqCst), 1);
    }
}

/// The target's handler starts, its ack is dropped, and it blocks without
/// polling until the initiator has given up (`acked_first`: the handler
/// polls until the initiator's protocol saw the request's delivery
/// acknowledged, then goes silent; else it is silent from the start, and
/// the request is given up by the protocol). The state never says the
/// handler did not run; the end comes only once the peer timeout has
/// passed in silence.
fn silent_target_after_a_lost_ack(acked_first: bool) {
    const PEER_TIMEOUT: Nanos = 300 * MILLIS;
    for seed in seeds(4) {
        let w = World::seeded(seed);
        let (n0, n1) = pair(&w, PEER_TIMEOUT);
        let (e0, e1_addr) = (n0.ep.clone(), n1.ep.addr());
        let f = Arc::new(Flags::default());
        f.silent.store(!acked_first, Ordering::SeqCst);
        blocking_handler(&n1, &f);
        // every start ack is dropped (also those answering probes)
        let dropped = drop_start_acks(&w, &e0, u64::MAX);
        let sent = w.now();
        let t = e0.request_txn(1, &Message::short(10, &[1])).unwrap();
        let (flags, e) = (f.clone(), e0.clone());
        let acked = Arc::new(AtomicBool::new(false));
        let a = acked.clone();
        let seen = watch(&w, &e0, t, move |_, st| {
            let started = flags.started.load(Ordering::SeqCst);
            if started && !flags.silent.load(Ordering::SeqCst) {
                // the request's delivery acknowledged: silence from now
                if e.with(|s| s.proto.unfinished_to(&e1_addr)) == 0 {
                    flags.silent.store(true, Ordering::SeqCst);
                    a.store(true, Ordering::SeqCst);
                }
            }
            if st.is_final() {
                flags.release.store(true, Ordering::SeqCst);
            }
            st.is_final()
        });
        until(&w, 10 * PEER_TIMEOUT, "the handler's end", || {
            f.runs.load(Ordering::SeqCst) == 1
        });
        let (at, st) = seen.lock().expect("the transaction ended");
        assert!(dropped.load(Ordering::SeqCst) >= 1);
        assert_eq!(st.ack, Ack::None, "{st:?}");
        assert_eq!(st.progress, Progress::RequestSent, "{st:?}");
        assert_eq!(
            st.abandon,
            Abandon::NoReply,
            "the handler ran: it may have, never NOT_ACKED ({st:?})"
        );
        assert_eq!(st.status, crate::error::ReturnStatus::Unreachable as i32);
        // exactly when: the delivery acknowledged, the transaction waits for
        // its first probe (`PROBE_EVERY`), which the silent target leaves
        // unanswered for the peer timeout; else the protocol gives the
        // request itself up after the peer timeout. Either way the probes
        // that follow fail at once (the peer is dead to the protocol); the
        // state is read every millisecond.
        let expected = if acked_first {
            assert!(acked.load(Ordering::SeqCst), "the delivery acknowledged");
            PROBE_EVERY + PEER_TIMEOUT
        } else {
            PEER_TIMEOUT
        };
        let took = at.since(sent);
        assert!(
            (expected..=expected + 2 * MILLIS).contains(&took),
            "ended {took} ns after the request"
        );
        assert_eq!(f.runs.load(Ordering::SeqCst), 1);
    }
}

#[test]
fn a_lost_ack_then_a_silent_target_is_not_reported_not_acked() {
    silent_target_after_a_lost_ack(false);
}

#[test]
fn a_delivered_request_whose_ack_was_lost_is_not_reported_not_acked() {
    silent_target_after_a_lost_ack(true);
}

/// The target's process is killed while the handler runs (nothing it sent
/// after the request arrived gets through) and a new one, without a log,
/// starts at its address: it answers the probe "unknown", which does not
/// say the old one did not run it.
#[test]
fn unknown_to_a_restarted_target_without_a_log_is_not_reported_not_acked() {
    for seed in seeds(4) {
        let w = World::seeded(seed);
        let mut c = cfg();
        c.proto.peer_timeout = 300 * MILLIS;
        let (n0, n1) = pair_with(&w, &c, 8);
        let e0 = n0.ep.clone();
        let runs = Arc::new(AtomicU64::new(0));
        let r = runs.clone();
        n1.ep.set_handler(
            10,
            handler(move |_| {
                r.fetch_add(1, Ordering::SeqCst);
                crash_here();
            }),
        );
        // the association first
        n1.ep.set_handler(11, handler(|_| {}));
        let t = e0.request_txn(1, &Message::short(11, &[])).unwrap();
        assert!(e0.txn_wait(t, 1000).unwrap().0, "the first transaction");
        // from now on nothing reaches e0 from this process
        let to_e0 = e0.addr();
        w.tap(move |_, to, _| to != to_e0);
        let t = e0.request_txn(1, &Message::short(10, &[1])).unwrap();
        until(&w, SOON, "the handler's run", || !w.alive(n1.index));
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        // a new process starts at the address and talks first
        w.tap(|_, _, _| true);
        let n2 = w.restart(n1.index, &c);
        assert_eq!(n2.ep.addr(), n1.ep.addr());
        let e2 = &n2.ep;
        e2.set_tag(TAG);
        e2.map(0, e0.name(), TAG).unwrap();
        e2.map(1, e2.name(), TAG).unwrap();
        e2.set_expected_resources(2, 8).unwrap();
        e0.set_handler(12, handler(|_| {}));
        e2.request(0, &Message::short(12, &[]), false).unwrap();
        let (done, st) = e0.txn_wait(t, 10_000).unwrap();
        assert!(done, "{st:?}");
        assert_eq!(
            (st.ack, st.abandon),
            (Ack::None, Abandon::NoReply),
            "{st:?}"
        );
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }
}

/// "Unknown" from the process the request went to (the same association:
/// the request came before the probe), or from a target that logs its
/// starts, says the handler never ran: NOT_ACKED, as soon as it arrives.
#[test]
fn unknown_from_the_same_process_or_a_logged_target_is_not_acked() {
    use crate::am::state::txn::{PROBE_UNKNOWN, UNKNOWN_LOGGED};
    use crate::wire::{Category, MsgMeta, CHANNEL_REPLY};
    for seed in seeds(2) {
        for logged in [false, true] {
            let w = World::seeded(seed);
            let (n0, n1) = pair(&w, 10_000 * MILLIS);
            let (e0, e1) = (&n0.ep, &n1.ep);
            e1.set_handler(10, handler(|_| {}));
            // the association first
            let t = e0.request_txn(1, &Message::short(10, &[0])).unwrap();
            let (done, st) = e0.txn_wait(t, 1000).unwrap();
            assert!(done && st.progress == Progress::Processed, "{st:?}");
            // the next request never arrives; the target says it keeps none
            let to_e1 = e1.addr();
            w.tap(move |_, to, _| to != to_e1);
            let t = e0.request_txn(1, &Message::short(10, &[1])).unwrap();
            let args: &[u32] = if logged { &[UNKNOWN_LOGGED] } else { &[] };
            let mut meta = MsgMeta::new(MsgKind::TxnAck, Category::Short, 0, args);
            meta.txn = t as u32;
            meta.status = PROBE_UNKNOWN;
            let e0_addr = e0.addr();
            let sent = w.now();
            e1.with(|s| s.send_message(s.clock.now(), e0_addr, CHANNEL_REPLY, meta, Vec::new()));
            let (done, st) = e0.txn_wait(t, 1).unwrap();
            assert!(done, "ended by the answer's arrival: {st:?}");
            assert!(w.now().since(sent) <= ONE_WAY + MILLIS);
            assert_eq!(
                (st.ack, st.abandon),
                (Ack::None, Abandon::NotAcked),
                "{st:?}"
            );
        }
    }
}
