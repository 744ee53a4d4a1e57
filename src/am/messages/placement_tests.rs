//! Long messages placed into the segment as they arrive (`placement.rs`),
//! in the simulated world (`sim::World`), on virtual time: the sender
//! (node 0) and the target (node 1) on a clean LAN. While the test looks
//! at what arrived, the target computes and its progress thread moves its
//! packets (placing them, running no handler); then it polls and its
//! handlers run. The bytes land whole and the handler runs once on them;
//! a handler never sees the bytes of a message behind it; a message placed
//! into a segment replaced before its dispatch is refused; a message that
//! would be refused is not placed (the segment untouched); one whose
//! segment is replaced between its fragments writes no more.

use std::sync::Arc;

use parking_lot::Mutex;

use crate::am::tests::{cfg, pair};
use crate::am::{handler, Data, Endpoint, Message, SegmentMemory, VecSegment};
use crate::error::ReturnStatus;
use crate::proto::Event;
use crate::sim::{Program, World};
use crate::time::MILLIS;
use crate::wire::Placed;

/// Two nodes (`tests::pair`, depth 4), the target computing with its
/// progress thread on: it receives and places, and runs no handler.
fn apart(seed: u64) -> (World, Arc<Endpoint>, Arc<Endpoint>) {
    let w = World::seeded(seed);
    let (n0, n1) = pair(&w, &cfg(), 4);
    n1.bundle.set_progress_thread(true).unwrap();
    w.set_program(n1.index, Program::Computes);
    (w, n0.ep, n1.ep)
}

/// The first message waiting for dispatch at `e` (in the endpoint's
/// queue, else the protocol's): what it says of its placement.
fn waiting(e: &Endpoint) -> Option<Option<Placed>> {
    e.with(
        |s| match s.incoming.pending.front().or(s.proto.peek_event()) {
            Some(Event::Delivered { meta, .. }) => Some(meta.placed),
            _ => None,
        },
    )
}

/// Runs the world (the target computing) until a message waits for
/// dispatch at `e`; what it says of its placement.
fn until_delivered(w: &World, e: &Endpoint) -> Option<Placed> {
    let mut front = None;
    assert!(
        w.run_until(100 * MILLIS, || {
            front = waiting(e);
            front.is_some()
        }),
        "nothing delivered"
    );
    front.expect("delivered")
}

/// The target polls until `done` (within a second of virtual time), then
/// computes again.
fn dispatch_until(w: &World, what: &str, done: impl FnMut() -> bool) {
    w.set_program(1, Program::Polls);
    assert!(w.run_until(1000 * MILLIS, done), "waiting for {what}");
    w.set_program(1, Program::Computes);
}

/// Byte `i` of message `k`.
fn pattern(k: u32, i: usize) -> u8 {
    (i as u32).wrapping_mul(31).wrapping_add(k * 7) as u8
}

/// (message, the bytes its handler saw), in the order the handlers ran.
type Seen = Vec<(u32, Vec<u8>)>;

/// What every run of handler 10 on `seg` saw.
fn recorder(e: &Endpoint, seg: &Arc<VecSegment>) -> Arc<Mutex<Seen>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (s2, seg) = (seen.clone(), seg.clone());
    e.set_handler(
        10,
        handler(move |h| {
            let Data::Long { addr, len } = h.data else {
                panic!("a long request")
            };
            let off = addr - seg.base();
            let bytes = seg.snapshot()[off..off + len].to_vec();
            s2.lock().push((h.args[0], bytes));
        }),
    );
    seen
}

/// The status of every message of `e`'s that came back to its handler 0.
fn returns(e: &Endpoint) -> Arc<Mutex<Vec<ReturnStatus>>> {
    let status = Arc::new(Mutex::new(Vec::new()));
    let st = status.clone();
    e.set_handler(
        0,
        handler(move |h| {
            if let Data::Returned { status, .. } = h.data {
                st.lock().push(status);
            }
        }),
    );
    status
}

#[test]
fn placed_bytes_land_whole_and_the_handler_runs_once_on_them() {
    let (w, e0, e1) = apart(1);
    let seg = VecSegment::new(512 << 10);
    e1.set_segment(Some(seg.clone()));
    let seen = recorder(&e1, &seg);
    let cases = [(1usize, 0u64), (1000, 7), (65_536, 4096), (300_000, 70_001)];
    for (k, &(n, off)) in cases.iter().enumerate() {
        let k = k as u32;
        let data: Vec<u8> = (0..n).map(|i| pattern(k, i)).collect();
        e0.request(1, &Message::long(10, &[k], &data, off), false)
            .unwrap();
        let placed = until_delivered(&w, &e1);
        assert_eq!(
            placed.map(|p| p.len as usize),
            Some(n),
            "message {k} placed"
        );
        assert!(seen.lock().len() == k as usize, "no handler ran yet");
        assert_eq!(&seg.snapshot()[off as usize..off as usize + n], &data[..]);
        dispatch_until(&w, "the handler", || seen.lock().len() == k as usize + 1);
        let (got_k, got) = seen.lock()[k as usize].clone();
        assert_eq!((got_k, got.len()), (k, n));
        assert!(got == data, "message {k}: the handler saw its own bytes");
    }
    dispatch_until(&w, "the replies", || e0.unanswered_requests() == 0);
    assert_eq!(seen.lock().len(), cases.len(), "each handler ran once");
}

#[test]
fn a_handler_never_sees_the_bytes_of_a_message_behind_it() {
    let (w, e0, e1) = apart(2);
    let seg = VecSegment::new(64 << 10);
    e1.set_segment(Some(seg.clone()));
    let seen = recorder(&e1, &seg);
    // two messages to the same bytes: the second arrives while the first
    // waits for its handler (in the endpoint's queue, the protocol's empty)
    let send = |k: u8| {
        e0.request(
            1,
            &Message::long(10, &[k as u32], &vec![k; 40_000], 0),
            false,
        )
        .unwrap()
    };
    send(1);
    let first = until_delivered(&w, &e1);
    assert!(first.is_some(), "the first is placed");
    assert_eq!(
        e1.with(|s| s.incoming.pending.len()),
        1,
        "queued for dispatch"
    );
    send(2);
    assert!(
        w.run_until(100 * MILLIS, || e1.with(|s| s.incoming.pending.len()) == 2),
        "the second never came"
    );
    let second = e1.with(|s| match s.incoming.pending.get(1) {
        Some(Event::Delivered { meta, .. }) => meta.placed,
        _ => panic!("the second waits in the queue"),
    });
    assert_eq!(second, None, "the second is gathered, not placed");
    dispatch_until(&w, "both handlers", || seen.lock().len() == 2);
    for (k, bytes) in seen.lock().iter() {
        assert!(
            bytes.iter().all(|&x| x as u32 == *k),
            "handler {k} saw only its own message's bytes"
        );
    }
}

#[test]
fn a_message_placed_into_a_segment_replaced_before_its_handler_is_refused() {
    let (w, e0, e1) = apart(3);
    let old = VecSegment::new(64 << 10);
    e1.set_segment(Some(old.clone()));
    let seen = recorder(&e1, &old);
    let status = returns(&e0);
    e0.request(1, &Message::long(10, &[5], &[9u8; 20_000], 128), false)
        .unwrap();
    assert!(until_delivered(&w, &e1).is_some(), "placed");
    let new = VecSegment::new(64 << 10);
    e1.set_segment(Some(new.clone()));
    dispatch_until(&w, "the returned request", || !status.lock().is_empty());
    assert_eq!(*status.lock(), [ReturnStatus::BadSegOff]);
    assert!(seen.lock().is_empty(), "no handler ran");
    assert!(
        new.snapshot().iter().all(|&x| x == 0),
        "the new segment untouched"
    );
}

#[test]
fn a_message_that_would_be_refused_is_not_placed() {
    let (w, e0, e1) = apart(4);
    let seg = VecSegment::new(64 << 10);
    e1.set_segment(Some(seg.clone()));
    let _seen = recorder(&e1, &seg);
    let status = returns(&e0);
    // past the end of the segment, and to a handler e1 does not have
    e0.request(
        1,
        &Message::long(10, &[1], &[7u8; 1000], (64 << 10) - 999),
        false,
    )
    .unwrap();
    assert_eq!(until_delivered(&w, &e1), None, "past the end: not placed");
    dispatch_until(&w, "the first returned", || status.lock().len() == 1);
    e0.request(1, &Message::long(33, &[1], &[7u8; 1000], 0), false)
        .unwrap();
    assert_eq!(until_delivered(&w, &e1), None, "no handler: not placed");
    dispatch_until(&w, "the second returned", || status.lock().len() == 2);
    assert_eq!(
        *status.lock(),
        [ReturnStatus::BadLength, ReturnStatus::BadHandler]
    );
    assert!(seg.snapshot().iter().all(|&x| x == 0), "nothing written");
}

#[test]
fn a_message_whose_segment_is_replaced_between_its_fragments_writes_no_more() {
    use crate::wire::{any_packet, Packet};
    let (w, e0, e1) = apart(5);
    let old = VecSegment::new(512 << 10);
    e1.set_segment(Some(old.clone()));
    let seen = recorder(&e1, &old);
    let status = returns(&e0);
    // the datagrams after the first (which carries the first fragment,
    // and the next beside it) wait in the network
    let to = e1.addr();
    w.hold(move |_, dst, d| {
        dst == to
            && any_packet(d, |p| matches!(p, Packet::More { .. }))
            && !any_packet(d, |p| matches!(p, Packet::Data { frag_off: 0, .. }))
    });
    let n = 200_000;
    e0.request(1, &Message::long(10, &[3], &vec![0x5a; n], 64), false)
        .unwrap();
    assert!(
        w.run_until(100 * MILLIS, || w.held() > 0 && old.snapshot()[64] == 0x5a),
        "the first fragment placed, the rest held"
    );
    assert!(
        old.snapshot()[64 + n - 1] != 0x5a,
        "the last fragment not placed"
    );
    let new = VecSegment::new(512 << 10);
    e1.set_segment(Some(new.clone()));
    w.release_all();
    dispatch_until(&w, "the returned request", || !status.lock().is_empty());
    assert_eq!(*status.lock(), [ReturnStatus::BadSegOff]);
    assert!(seen.lock().is_empty(), "no handler ran");
    assert!(
        new.snapshot().iter().all(|&x| x == 0),
        "nothing written into the new segment"
    );
}
