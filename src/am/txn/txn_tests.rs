//! Transactions between simulated processes (`sim::World`: whole
//! endpoints on virtual time, one node each): the state tuple, refusals,
//! duplicates answered with the kept reply (never a second run), old
//! copies below the floor, bounded memory, the handler-time bound (when it
//! ends a transaction, exactly), the start window. Every test runs the
//! seeds `sim::seeds` gives; a failing world prints its seed
//! (`RAMP_SIM_SEED` replays it).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::am::handler::message::TXN_FLAG;
use crate::am::state::txn::{put_trailer, TxnState};
use crate::am::state::txn_target::{Seen, TxnTarget, MAX_ENTRIES_PER_PEER};
use crate::am::{handler, Abandon, Ack, Endpoint, Message, Progress};
use crate::config::Config;
use crate::sim::{seeds, Node, World};
use crate::time::{Instant, Nanos, MICROS, MILLIS};
use crate::wire::CHANNEL_REQUEST;

pub(in crate::am) const TAG: u64 = 0x7a7a;
/// The world's one-way delay (`sim::lan`).
pub(in crate::am) const ONE_WAY: Nanos = 20 * MICROS;
/// Virtual time within which an answer a test waits for comes: a few
/// round trips (40 us each) and a handshake, with room to spare.
pub(in crate::am) const SOON: Nanos = 10 * MILLIS;

pub(in crate::am) fn cfg() -> Config {
    Config::from_lookup(|_| None).unwrap()
}

/// Two new nodes of `w` opened under `cfg`, mapped to each other (index 0
/// is the first, 1 the second), with network depth `depth`.
pub(in crate::am) fn pair_with(w: &World, cfg: &Config, depth: i32) -> (Node, Node) {
    let (n0, n1) = (w.node(cfg), w.node(cfg));
    for e in [&n0.ep, &n1.ep] {
        e.set_tag(TAG);
        e.map(0, n0.ep.name(), TAG).unwrap();
        e.map(1, n1.ep.name(), TAG).unwrap();
        e.set_expected_resources(2, depth).unwrap();
    }
    (n0, n1)
}

/// `pair_with` under the default configuration, depth 8.
pub(in crate::am) fn pair(w: &World) -> (Node, Node) {
    pair_with(w, &cfg(), 8)
}

/// e1's handler 10 counts its runs and replies (handler 11) with arg+1000;
/// e0's handler 11 adds the reply's argument to `sum`.
pub(in crate::am) fn counting(e0: &Endpoint, e1: &Endpoint) -> (Arc<AtomicU64>, Arc<AtomicU64>) {
    let runs = Arc::new(AtomicU64::new(0));
    let r = runs.clone();
    e1.set_handler(
        10,
        handler(move |h| {
            r.fetch_add(1, Ordering::SeqCst);
            crate::am::reply(h.token, &Message::medium(11, &[h.args[0] + 1000], b"kept")).unwrap();
        }),
    );
    let sum = Arc::new(AtomicU64::new(0));
    let s = sum.clone();
    e0.set_handler(
        11,
        handler(move |h| {
            s.fetch_add(h.args[0] as u64, Ordering::SeqCst);
        }),
    );
    (runs, sum)
}

/// Waits for `txn` as a program would (`txn_wait`: the world runs
/// meanwhile), at most 5 s of virtual time.
pub(in crate::am) fn wait(e: &Arc<Endpoint>, txn: u64) -> TxnState {
    let (done, st) = e.txn_wait(txn, 5000).unwrap();
    assert!(done, "transaction {txn} did not end: {st:?}");
    st
}

/// Runs the world until `done`, failing after `limit` of virtual time.
pub(in crate::am) fn until(w: &World, limit: Nanos, what: &str, done: impl FnMut() -> bool) {
    assert!(
        w.run_until(limit, done),
        "not within {limit} ns of virtual time: {what}"
    );
}

/// (When, the state) a `watch` ended with.
pub(in crate::am) type Seen64 = Arc<Mutex<Option<(Instant, TxnState)>>>;

/// The initiator's program while the test drives the world from the top
/// (`World::run_until`; a target's handler that runs long holds up what
/// is below it on the stack, which must not be the initiator): every
/// millisecond of virtual time it reads the state of `txn` (as `txn_wait`
/// does; reading also probes a transaction that waited 200 ms) and hands
/// it to `f` with the time, until `f` says done; the slot then holds
/// that time and state.
pub(in crate::am) fn watch(
    w: &World,
    e: &Arc<Endpoint>,
    txn: u64,
    f: impl FnMut(Instant, TxnState) -> bool + Send + 'static,
) -> Seen64 {
    let slot: Seen64 = Default::default();
    tick(w, e.clone(), txn, f, slot.clone());
    slot
}

fn tick<F>(w: &World, e: Arc<Endpoint>, txn: u64, mut f: F, slot: Seen64)
where
    F: FnMut(Instant, TxnState) -> bool + Send + 'static,
{
    let at = w.now().plus(MILLIS);
    w.at(at, move |w| {
        let st = e.txn_state(txn).unwrap();
        if f(w.now(), st) {
            *slot.lock() = Some((w.now(), st));
        } else {
            tick(w, e, txn, f, slot);
        }
    });
}

/// Sends again, from `e0`, the kept request `txn` (handler 10, argument
/// `arg`) with `floor`, as a new message: what a resumed transaction, a
/// retransmission in a new association or a replay looks like to the AM
/// layer of the target.
fn send_again(e0: &Endpoint, to: SocketAddr, txn: u64, arg: u32, floor: u64) {
    e0.with(|s| {
        let mut meta = Message::short(10, &[arg]).meta(txn as u32, TAG);
        meta.status = TXN_FLAG;
        let mut payload = Vec::new();
        put_trailer(&mut payload, s.txn.incarnation, txn, floor);
        s.send_message(s.clock.now(), to, CHANNEL_REQUEST, meta, payload);
    });
}

#[test]
fn a_transaction_goes_through_its_states_and_is_kept_until_released() {
    for seed in seeds(2) {
        let w = World::seeded(seed);
        let (n0, n1) = pair(&w);
        let (e0, e1) = (&n0.ep, &n1.ep);
        let (runs, sum) = counting(e0, e1);
        let t = e0.request_txn(1, &Message::short(10, &[5])).unwrap();
        assert_ne!(t, 0);
        let st = e0.txn_state(t).unwrap();
        assert_eq!(st.progress, Progress::RequestSent);
        assert_eq!(e0.txn_list(Progress::RequestSent), vec![t]);
        let st = wait(e0, t);
        assert_eq!(
            st,
            TxnState {
                ack: Ack::Acked,
                progress: Progress::Processed,
                abandon: Abandon::None,
                status: 0
            }
        );
        assert_eq!(
            (runs.load(Ordering::SeqCst), sum.load(Ordering::SeqCst)),
            (1, 1005)
        );
        assert_eq!(e0.txn_list(Progress::Processed), vec![t]);
        e0.txn_release(t).unwrap();
        assert!(e0.txn_state(t).is_err(), "released");
        assert!(e0.txn_release(t).is_err());
        assert!(e0.txn_state(1 << 40).is_err(), "not an id");
        // a plain request keeps nothing
        e0.request(1, &Message::short(10, &[1]), false).unwrap();
        assert!(e0.txn_list(Progress::RequestSent).is_empty());
        // long and medium transactions, their trailer taken off before the data lands
        let seg = crate::am::VecSegment::new(4096);
        e1.set_segment(Some(seg.clone()));
        let t2 = e0
            .request_txn(1, &Message::long(10, &[7], &[9u8; 100], 8))
            .unwrap();
        let t3 = e0
            .request_txn(1, &Message::medium(10, &[8], &[1u8; 10]))
            .unwrap();
        assert_eq!(wait(e0, t2).progress, Progress::Processed);
        assert_eq!(wait(e0, t3).progress, Progress::Processed);
        assert_eq!(&seg.snapshot()[8..108], &[9u8; 100][..]);
        assert_eq!(seg.snapshot()[108], 0, "no trailer in the segment");
        assert_eq!(e0.txn_list(Progress::Processed), vec![t2, t3]);
    }
}

#[test]
fn a_refused_transaction_is_abandoned_refused_and_handler_0_is_not_called() {
    for seed in seeds(2) {
        let w = World::seeded(seed);
        let (n0, n1) = pair(&w);
        let e0 = &n0.ep;
        let _ = counting(e0, &n1.ep);
        let zero = Arc::new(AtomicU64::new(0));
        let z = zero.clone();
        e0.set_handler(
            0,
            handler(move |_| {
                z.fetch_add(1, Ordering::SeqCst);
            }),
        );
        let t = e0.request_txn(1, &Message::short(77, &[])).unwrap();
        let st = wait(e0, t);
        assert_eq!(st.ack, Ack::Nacked);
        assert_eq!(st.abandon, Abandon::Refused);
        assert_eq!(st.status, crate::error::ReturnStatus::BadHandler as i32);
        assert_eq!(zero.load(Ordering::SeqCst), 0);
        // the same refusal of a plain request still reaches handler 0
        e0.request(1, &Message::short(77, &[]), false).unwrap();
        until(&w, SOON, "handler 0", || zero.load(Ordering::SeqCst) == 1);
    }
}

#[test]
fn duplicates_get_the_kept_reply_and_never_run_the_handler_again() {
    for seed in seeds(2) {
        let w = World::seeded(seed);
        let (n0, n1) = pair(&w);
        let (e0, e1) = (&n0.ep, &n1.ep);
        let (runs, sum) = counting(e0, e1);
        let t = e0.request_txn(1, &Message::short(10, &[5])).unwrap();
        wait(e0, t);
        // a storm of copies of the same transaction, not yet below the floor
        for _ in 0..50 {
            send_again(e0, e1.addr(), t, 5, t);
        }
        let stale = e0.statistics().stale_dropped;
        until(&w, SOON, "50 duplicates", || {
            e1.txn_target_counts().duplicates >= 50
        });
        assert_eq!(runs.load(Ordering::SeqCst), 1, "ran once");
        // the kept replies came back; e0 had its answer, so they ran nothing
        until(&w, SOON, "the kept replies", || {
            e0.statistics().stale_dropped >= stale + 50
        });
        assert_eq!(sum.load(Ordering::SeqCst), 1005);
        // a restarted initiator resuming it would take the kept reply: the
        // record is made live again and one more copy is sent
        let meta = crate::wire::MsgMeta::new(
            crate::wire::MsgKind::User,
            crate::wire::Category::Short,
            5,
            &[],
        );
        e0.with(|s| s.txn_resumed(t, 1, e1.addr(), meta, s.clock.now()));
        send_again(e0, e1.addr(), t, 5, t);
        let st = wait(e0, t);
        assert_eq!(st.progress, Progress::Processed);
        assert_eq!(runs.load(Ordering::SeqCst), 1, "still once");
        assert_eq!(
            sum.load(Ordering::SeqCst),
            2010,
            "the kept reply ran its handler"
        );
    }
}

#[test]
fn the_floor_frees_kept_replies_and_old_copies_are_dropped() {
    for seed in seeds(2) {
        let w = World::seeded(seed);
        let (n0, n1) = pair(&w);
        let (e0, e1) = (&n0.ep, &n1.ep);
        let (runs, _) = counting(e0, e1);
        let mut first = 0;
        for i in 0..200u32 {
            let t = e0.request_txn(1, &Message::short(10, &[i])).unwrap();
            if i == 0 {
                first = t;
            }
            wait(e0, t);
            e0.txn_release(t).unwrap();
            let c = e1.txn_target_counts();
            assert!(c.entries <= 2, "entries bounded: {c:?}");
        }
        assert_eq!(runs.load(Ordering::SeqCst), 200);
        // a copy of the first, long below the floor: dropped, not run
        let floor = e0.with(|s| s.txn_floor(e1.addr()));
        send_again(e0, e1.addr(), first, 0, floor);
        until(&w, SOON, "the old copy dropped", || {
            e1.txn_target_counts().old_dropped == 1
        });
        assert_eq!(runs.load(Ordering::SeqCst), 200);
    }
}

/// The bound of `set_handler_timeout` counts from the ack's arrival; the
/// target's handler computes (without polling) five times as long. The
/// world is driven from the top while it runs; the initiator reads the
/// state every millisecond (`watch`), as `txn_wait` would.
#[test]
fn a_handler_past_the_bound_is_abandoned_handler_timeout() {
    const BOUND: Nanos = 20 * MILLIS;
    const RUNS: Nanos = 5 * BOUND;
    for seed in seeds(4) {
        let w = World::seeded(seed);
        let (n0, n1) = pair(&w);
        let (e0, e1) = (&n0.ep, &n1.ep);
        let span: Arc<Mutex<(Option<Instant>, Option<Instant>)>> = Default::default();
        let (s, clock) = (span.clone(), e1.clock.clone());
        e1.set_handler(
            10,
            handler(move |_| {
                s.lock().0 = Some(clock.now());
                clock.sleep(RUNS);
                s.lock().1 = Some(clock.now());
            }),
        );
        e0.set_handler_timeout(BOUND / MICROS);
        let stale = e0.statistics().stale_dropped;
        let t = e0.request_txn(1, &Message::short(10, &[1])).unwrap();
        let seen = watch(&w, e0, t, |_, st| st.is_final());
        until(&w, 2 * RUNS, "the handler's end", || {
            span.lock().1.is_some()
        });
        let (start, end) = *span.lock();
        let (start, end) = (start.unwrap(), end.unwrap());
        assert_eq!(end.since(start), RUNS);
        let (at, st) = seen.lock().expect("the transaction ended");
        assert_eq!(st.ack, Ack::Acked);
        assert_eq!(st.progress, Progress::Processing);
        assert_eq!(st.abandon, Abandon::HandlerTimeout);
        // past the bound after the ack came (a one-way delay after the
        // start), seen at the next read of the state: while the handler ran
        let after = at.since(start);
        assert!(
            after > BOUND + ONE_WAY && after <= BOUND + ONE_WAY + MILLIS,
            "ended {after} ns after the handler started"
        );
        assert!(at < end);
        // its late automatic reply changes nothing (an answer to no
        // request of e0's now: dropped)
        until(&w, SOON, "the late reply", || {
            e0.statistics().stale_dropped > stale
        });
        assert_eq!(e0.txn_state(t).unwrap().abandon, Abandon::HandlerTimeout);
    }
}

#[test]
fn the_target_table_is_bounded_and_a_new_incarnation_clears_it() {
    let mut t = TxnTarget::default();
    let a: SocketAddr = "10.0.0.9:1".parse().unwrap();
    for i in 0..MAX_ENTRIES_PER_PEER as u64 {
        assert!(matches!(t.arrive(a, 7, 1, 1 + i), Seen::New));
    }
    assert!(matches!(t.arrive(a, 7, 1, 1 << 20), Seen::Full));
    assert!(matches!(t.arrive(a, 7, 1, 5), Seen::Running));
    t.finish(a, 5, None);
    assert!(matches!(t.arrive(a, 7, 1, 5), Seen::Finished(None)));
    // the floor past them frees the finished ones, not the running ones
    assert!(matches!(
        t.arrive(a, 7, 100, 100),
        Seen::Finished(None) | Seen::Running
    ));
    assert!(matches!(t.arrive(a, 7, 100, 5), Seen::Old));
    assert_eq!(t.counts().entries, MAX_ENTRIES_PER_PEER - 1);
    // another process at the same address starts afresh
    assert!(matches!(t.arrive(a, 8, 1, 5), Seen::New));
    assert_eq!(t.counts().entries, 1);
}

#[test]
fn acks_and_probe_answers_from_another_endpoint_change_nothing() {
    use crate::wire::{Category, MsgKind, MsgMeta, CHANNEL_REPLY};
    for seed in seeds(2) {
        let w = World::seeded(seed);
        let (n0, _n1) = pair(&w);
        let e0 = &n0.ep;
        // another endpoint of e0's process
        let e2 = w.endpoint(n0.index, &cfg());
        e2.set_tag(TAG);
        e2.map(0, e0.name(), TAG).unwrap();
        e2.set_expected_resources(1, 4).unwrap();
        // e1 has no handler 10: it refuses the transaction, once the
        // forged answers below are in
        let t = e0.request_txn(1, &Message::short(10, &[1])).unwrap();
        for status in [
            0u8,
            crate::am::state::txn::PROBE_UNKNOWN,
            crate::am::state::txn::PROBE_CRASHED,
            77,
        ] {
            e2.with(|s| {
                let mut m = MsgMeta::new(MsgKind::TxnAck, Category::Short, 0, &[]);
                m.txn = t as u32;
                m.status = status;
                s.send_message(s.clock.now(), e0.addr(), CHANNEL_REPLY, m, Vec::new());
            });
        }
        // a probe with bad arguments, and one for nothing: no handler runs
        e2.with(|s| {
            let m = MsgMeta::new(MsgKind::TxnProbe, Category::Short, 0, &[1]);
            s.send_message(s.clock.now(), e0.addr(), CHANNEL_REQUEST, m, Vec::new());
            let m = MsgMeta::new(MsgKind::TxnProbe, Category::Short, 0, &[1, 2]);
            s.send_message(s.clock.now(), e0.addr(), CHANNEL_REQUEST, m, Vec::new());
        });
        w.run_for(100 * MILLIS);
        let st = e0.txn_state(t).unwrap();
        assert_eq!(
            st.abandon,
            Abandon::Refused,
            "refused by e1 (no handler 10)"
        );
        assert_eq!(st.ack, Ack::Nacked, "{st:?}");
        assert!(e0.statistics().stale_dropped >= 4);
    }
}

#[test]
fn wrapped_ids_skip_kept_transactions_and_floors_stay_within_reach() {
    for seed in seeds(2) {
        let w = World::seeded(seed);
        let (n0, n1) = pair(&w);
        let (e0, e1) = (&n0.ep, &n1.ep);
        let (runs, sum) = counting(e0, e1);
        // a kept transaction that is not released...
        let t = e0.request_txn(1, &Message::short(10, &[5])).unwrap();
        assert_eq!(wait(e0, t).progress, Progress::Processed);
        // ...when the 32-bit ids come round to it again
        e0.with(|s| s.next_txn = t);
        let u = e0.request_txn(1, &Message::short(10, &[6])).unwrap();
        assert_ne!(u, t, "an id in use is skipped");
        assert_eq!(wait(e0, u).progress, Progress::Processed);
        assert_eq!(e0.txn_state(t).unwrap().progress, Progress::Processed);
        assert_eq!(runs.load(Ordering::SeqCst), 2);
        // a transaction left waiting (here: its record made unfinished)
        // while more than half the id space goes by: the floor the next
        // one carries is at most MAX_FLOOR_LAG behind, so the target does
        // not take the new one for a copy below its floor
        e0.with(|s| {
            let meta = crate::wire::MsgMeta::new(
                crate::wire::MsgKind::User,
                crate::wire::Category::Short,
                10,
                &[],
            );
            s.txn_resumed(t, 1, e1.addr(), meta, s.clock.now());
            s.next_txn = t + 0x8000_0005;
            let f = s.txn_floor(e1.addr());
            assert_eq!(
                s.next_txn - f,
                u64::from(crate::am::state::txn::MAX_FLOOR_LAG)
            );
        });
        let v = e0.request_txn(1, &Message::short(10, &[7])).unwrap();
        let st = wait(e0, v);
        assert_eq!(st.progress, Progress::Processed, "{st:?}");
        assert_eq!(runs.load(Ordering::SeqCst), 3);
        assert_eq!(sum.load(Ordering::SeqCst), 3 * 1000 + 5 + 6 + 7);
    }
}

/// The start window (`started.rs`): while the initiator's acknowledgements
/// of the answers do not reach the target (the world drops them), exactly
/// `START_WINDOW` request handlers start; the rest wait, and run once the
/// acknowledgements come.
#[test]
fn a_target_starts_no_more_handlers_than_the_window_while_answers_are_unacknowledged() {
    use crate::am::messages::started::START_WINDOW;
    for seed in seeds(2) {
        let w = World::seeded(seed);
        let (n0, n1) = pair_with(&w, &cfg(), 2 * START_WINDOW as i32);
        let (e0, e1) = (&n0.ep, &n1.ep);
        let (runs, _sum) = counting(e0, e1);
        // the association first (its handshake, a request and its reply)
        e0.request(1, &Message::short(10, &[0]), false).unwrap();
        until(&w, SOON, "the first request", || {
            runs.load(Ordering::SeqCst) == 1 && e0.unanswered_requests() == 0
        });
        // from now on e0's ACKs (packet type 2) to e1 are lost; its
        // requests are sent before any answer comes, so none carries an
        // acknowledgement
        let hold = Arc::new(AtomicBool::new(true));
        let (h, target) = (hold.clone(), e1.addr());
        w.tap(move |_, to, d| !(h.load(Ordering::SeqCst) && to == target && d.get(3) == Some(&2)));
        let n = START_WINDOW as u32 + 10;
        for k in 1..=n {
            e0.request(1, &Message::short(10, &[k]), true).unwrap();
        }
        // (the answers are sent again and again meanwhile)
        w.run_for(100 * MILLIS);
        assert_eq!(
            runs.load(Ordering::SeqCst),
            1 + START_WINDOW as u64,
            "handlers started with their answers unacknowledged"
        );
        hold.store(false, Ordering::SeqCst);
        until(&w, 2000 * MILLIS, "the waiting requests' runs", || {
            runs.load(Ordering::SeqCst) == 1 + n as u64
        });
    }
}
