//! A lost `TxnAck` (issue 10's recovery states), over the in-memory
//! network with exactly that datagram dropped: a handler that polls while
//! it runs gets its ack through (the initiator sees PROCESSING), and a
//! transaction whose handler ran is never reported NOT_ACKED when the
//! target then goes silent, whether or not the request's delivery was
//! acknowledged at the protocol level.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use super::txn_tests::TAG;
use super::{handler, Abandon, Ack, Bundle, BundleMode, Endpoint, Message, Progress};
use crate::config::Config;
use crate::net::mem::MemNetwork;
use crate::net::Transports;
use crate::wire::{any_packet, MsgKind, Packet};

/// e0 and e1 in bundles of their own on `net`, mapped to each other;
/// `peer_timeout_ms` is the peer timeout (`RAMP_PEER_TIMEOUT_MS`) of both.
fn pair(
    net: &MemNetwork,
    peer_timeout_ms: u32,
) -> (Arc<Bundle>, Arc<Bundle>, Arc<Endpoint>, Arc<Endpoint>) {
    let mut cfg = Config::from_lookup(|_| None).unwrap();
    cfg.proto.peer_timeout = u64::from(peer_timeout_ms) * crate::time::MILLIS;
    super::txn_tests::pair_with(net, true, &cfg)
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

/// Drops the first `n` start acks to `e0` (held forever); the count of
/// those dropped so far.
fn drop_start_acks(net: &MemNetwork, e0: &Endpoint, n: u64) -> Arc<AtomicU64> {
    let dropped = Arc::new(AtomicU64::new(0));
    let d = dropped.clone();
    let to_e0 = e0.addr();
    net.hold_if(move |to, dgram| {
        to == to_e0
            && is_start_ack(dgram)
            && d.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |k| {
                (k < n).then_some(k + 1)
            })
            .is_ok()
    });
    dropped
}

/// Flags a handler and the test share.
#[derive(Default)]
struct Flags {
    started: AtomicBool,
    /// The handler stops polling (the target goes silent).
    silent: AtomicBool,
    release: AtomicBool,
    runs: AtomicU64,
}

/// e1's handler 10: starts, polls its own bundle (nested) until told to
/// go silent, then blocks without polling until released.
fn blocking_handler(e1: &Endpoint, b1: &Arc<Bundle>, f: &Arc<Flags>) {
    let (f, b1): (Arc<Flags>, Weak<Bundle>) = (f.clone(), Arc::downgrade(b1));
    e1.set_handler(
        10,
        handler(move |_| {
            f.started.store(true, Ordering::SeqCst);
            while !f.silent.load(Ordering::SeqCst) && !f.release.load(Ordering::SeqCst) {
                if let Some(b) = b1.upgrade() {
                    b.poll().unwrap();
                }
                std::thread::yield_now();
            }
            while !f.release.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
            f.runs.fetch_add(1, Ordering::SeqCst);
        }),
    );
}

/// Polls `b` in a thread of its own until `stop`.
fn serve(b: Arc<Bundle>, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::SeqCst) {
            b.poll().unwrap();
            std::thread::yield_now();
        }
    })
}

/// Polls `b0` until `done`, failing (not timing) after a minute.
fn poll_until(b0: &Bundle, what: &str, mut done: impl FnMut() -> bool) {
    let t0 = std::time::Instant::now();
    while !done() {
        assert!(t0.elapsed().as_secs() < 60, "never: {what}");
        b0.poll().unwrap();
        std::thread::yield_now();
    }
}

#[test]
fn a_lost_ack_reaches_the_initiator_while_the_handler_polls() {
    let net = MemNetwork::new();
    let (b0, b1, e0, e1) = pair(&net, 10_000);
    let f = Arc::new(Flags::default());
    blocking_handler(&e1, &b1, &f);
    let stop = Arc::new(AtomicBool::new(false));
    let target = serve(b1.clone(), stop.clone());
    let dropped = drop_start_acks(&net, &e0, 1);
    let t = e0.request_txn(1, &Message::short(10, &[1])).unwrap();
    poll_until(&b0, "the handler to start", || {
        f.started.load(Ordering::SeqCst)
    });
    // the handler runs and polls; its first ack was dropped
    poll_until(&b0, "PROCESSING", || {
        let st = e0.txn_state(t).unwrap();
        assert_ne!(st.abandon, Abandon::NotAcked, "the handler runs: {st:?}");
        assert!(!st.is_final(), "ended while the handler runs: {st:?}");
        st.progress == Progress::Processing
    });
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        1,
        "the first ack was dropped"
    );
    assert_eq!(e0.txn_state(t).unwrap().ack, Ack::Acked);
    f.release.store(true, Ordering::SeqCst);
    let (done, st) = e0.txn_wait(t, 30_000).unwrap();
    assert!(done, "{st:?}");
    assert_eq!(
        (st.ack, st.progress, st.abandon),
        (Ack::Acked, Progress::Processed, Abandon::None)
    );
    assert_eq!(f.runs.load(Ordering::SeqCst), 1);
    stop.store(true, Ordering::SeqCst);
    target.join().unwrap();
}

/// The target's handler starts, its ack is dropped, and it blocks without
/// polling until the initiator has given up (`acked_first`: the handler
/// polls until the initiator's protocol saw the request's delivery
/// acknowledged, then goes silent; else it is silent from the start, and
/// the request is given up by the protocol). The state never says the
/// handler did not run.
fn silent_target_after_a_lost_ack(acked_first: bool) {
    let net = MemNetwork::new();
    let (b0, b1, e0, e1) = pair(&net, 300);
    let f = Arc::new(Flags::default());
    f.silent.store(!acked_first, Ordering::SeqCst);
    blocking_handler(&e1, &b1, &f);
    let stop = Arc::new(AtomicBool::new(false));
    let target = serve(b1.clone(), stop.clone());
    // every start ack is dropped (also those answering probes)
    let dropped = drop_start_acks(&net, &e0, u64::MAX);
    let t = e0.request_txn(1, &Message::short(10, &[1])).unwrap();
    poll_until(&b0, "the handler to start", || {
        f.started.load(Ordering::SeqCst)
    });
    if acked_first {
        let e1_addr = e1.addr();
        poll_until(&b0, "the request's delivery acknowledged", || {
            e0.with(|s| s.proto.unfinished_to(&e1_addr)) == 0
        });
        f.silent.store(true, Ordering::SeqCst);
    }
    let mut st = e0.txn_state(t).unwrap();
    poll_until(&b0, "the transaction to end", || {
        st = e0.txn_state(t).unwrap();
        st.is_final()
    });
    assert!(dropped.load(Ordering::SeqCst) >= 1);
    assert_eq!(st.ack, Ack::None, "{st:?}");
    assert_eq!(st.progress, Progress::RequestSent, "{st:?}");
    assert_eq!(
        st.abandon,
        Abandon::NoReply,
        "the handler ran: it may have, never NOT_ACKED ({st:?})"
    );
    assert_eq!(st.status, crate::error::ReturnStatus::Unreachable as i32);
    f.release.store(true, Ordering::SeqCst);
    stop.store(true, Ordering::SeqCst);
    target.join().unwrap();
    assert_eq!(f.runs.load(Ordering::SeqCst), 1);
}

#[test]
fn a_lost_ack_then_a_silent_target_is_not_reported_not_acked() {
    silent_target_after_a_lost_ack(false);
}

#[test]
fn a_delivered_request_whose_ack_was_lost_is_not_reported_not_acked() {
    silent_target_after_a_lost_ack(true);
}

/// The target's process ends while the handler runs (nothing it sent
/// after the request arrived gets through) and a new one, without a log,
/// starts at its address: it answers the probe "unknown", which does not
/// say the old one did not run it.
#[test]
fn unknown_to_a_restarted_target_without_a_log_is_not_reported_not_acked() {
    let net = MemNetwork::new();
    let (b0, b1, e0, e1) = pair(&net, 300);
    let f = Arc::new(Flags::default());
    f.silent.store(true, Ordering::SeqCst);
    blocking_handler(&e1, &b1, &f);
    let stop = Arc::new(AtomicBool::new(false));
    let target = serve(b1.clone(), stop.clone());
    // the association first
    e1.set_handler(11, handler(|_| {}));
    let t = e0.request_txn(1, &Message::short(11, &[])).unwrap();
    poll_until(&b0, "the first transaction", || {
        e0.txn_state(t).unwrap().is_final()
    });
    // from now on nothing reaches e0 from this process
    let to_e0 = e0.addr();
    net.hold_if(move |to, _| to == to_e0);
    let t = e0.request_txn(1, &Message::short(10, &[1])).unwrap();
    poll_until(&b0, "the handler to start", || {
        f.started.load(Ordering::SeqCst)
    });
    f.release.store(true, Ordering::SeqCst);
    stop.store(true, Ordering::SeqCst);
    target.join().unwrap();
    assert_eq!(f.runs.load(Ordering::SeqCst), 1);
    // the process ends; a new one starts at the address and talks first
    let addr = e1.addr();
    super::free_endpoint(e1.id).unwrap();
    drop(e1);
    drop(b1);
    net.hold_if(|_, _| false);
    let cfg = Config::from_lookup(|_| None).unwrap();
    let b2 = super::allocate_bundle(BundleMode::Seq).unwrap();
    let e2 =
        super::allocate_endpoint_over(b2.id, &cfg, Transports::new(Box::new(net.attach_at(addr))))
            .unwrap();
    e2.set_tag(TAG);
    e2.map(0, e0.name(), TAG).unwrap();
    e2.map(1, e2.name(), TAG).unwrap();
    e2.set_expected_resources(2, 8).unwrap();
    e0.set_handler(12, handler(|_| {}));
    let stop = Arc::new(AtomicBool::new(false));
    let target = serve(b2.clone(), stop.clone());
    e2.request(0, &Message::short(12, &[]), false).unwrap();
    let mut st = e0.txn_state(t).unwrap();
    poll_until(&b0, "the transaction to end", || {
        st = e0.txn_state(t).unwrap();
        st.is_final()
    });
    assert_eq!(
        (st.ack, st.abandon),
        (Ack::None, Abandon::NoReply),
        "{st:?}"
    );
    stop.store(true, Ordering::SeqCst);
    target.join().unwrap();
}

/// "Unknown" from the process the request went to (the same association:
/// the request came before the probe), or from a target that logs its
/// starts, says the handler never ran: NOT_ACKED.
#[test]
fn unknown_from_the_same_process_or_a_logged_target_is_not_acked() {
    use super::txn::{PROBE_UNKNOWN, UNKNOWN_LOGGED};
    use crate::wire::{Category, MsgMeta, CHANNEL_REPLY};
    for logged in [false, true] {
        let net = MemNetwork::new();
        let (b0, b1, e0, e1) = pair(&net, 10_000);
        e1.set_handler(10, handler(|_| {}));
        // the association first
        let t = e0.request_txn(1, &Message::short(10, &[0])).unwrap();
        poll_until(&b0, "the first transaction", || {
            b1.poll().unwrap();
            e0.txn_state(t).unwrap().is_final()
        });
        assert_eq!(e0.txn_state(t).unwrap().progress, Progress::Processed);
        // the next request never arrives; the target says it keeps none
        let to_e1 = e1.addr();
        net.hold_if(move |to, _| to == to_e1);
        let t = e0.request_txn(1, &Message::short(10, &[1])).unwrap();
        let args: &[u32] = if logged { &[UNKNOWN_LOGGED] } else { &[] };
        let mut meta = MsgMeta::new(MsgKind::TxnAck, Category::Short, 0, args);
        meta.txn = t as u32;
        meta.status = PROBE_UNKNOWN;
        let e0_addr = e0.addr();
        e1.with(|s| s.send_message(s.clock.now(), e0_addr, CHANNEL_REPLY, meta, Vec::new()));
        poll_until(&b0, "the answer", || e0.txn_state(t).unwrap().is_final());
        let st = e0.txn_state(t).unwrap();
        assert_eq!(
            (st.ack, st.abandon),
            (Ack::None, Abandon::NotAcked),
            "{st:?}"
        );
    }
}
