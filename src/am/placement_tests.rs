//! Long messages placed into the segment as they arrive (`placement.rs`),
//! over the in-memory network: the bytes land whole and the handler runs
//! once on them; a handler never sees the bytes of a message behind it;
//! a message placed into a segment replaced before its dispatch is refused;
//! a message that would be refused is not placed (the segment untouched).

use std::sync::Arc;

use parking_lot::Mutex;

use super::tests::{pair, poll_until};
use super::{handler, Bundle, BundleMode, Data, Endpoint, Message, SegmentMemory, VecSegment};
use crate::config::Config;
use crate::error::ReturnStatus;
use crate::net::mem::MemNetwork;
use crate::net::Transports;
use crate::proto::Event;
use crate::wire::Placed;

const TAG: u64 = 0x91ace;

/// Moves `e`'s network (no handler runs) until a message waits for
/// dispatch or `e0` has nothing more to send; what the first waiting one
/// says of its placement.
fn pump_until_delivered(e0: &Endpoint, e: &Endpoint) -> Option<Placed> {
    let t0 = std::time::Instant::now();
    loop {
        e0.with(|s| s.pump_network(s.clock.now())).unwrap();
        let front = e.with(|s| {
            s.pump_network(s.clock.now()).unwrap();
            let ev = s.rma.pending.front().or(s.proto.peek_event());
            match ev {
                Some(Event::Delivered { meta, .. }) => Some(meta.placed),
                _ => None,
            }
        });
        if let Some(p) = front {
            return p;
        }
        assert!(t0.elapsed().as_secs() < 5, "nothing delivered");
    }
}

/// `pair`'s two endpoints, each in a bundle of its own.
fn apart(net: &MemNetwork) -> (Arc<Bundle>, Arc<Endpoint>, Arc<Endpoint>, Arc<Bundle>) {
    super::init().unwrap();
    let cfg = Config::from_lookup(|_| None).unwrap();
    let open = || {
        let b = super::allocate_bundle(BundleMode::Seq).unwrap();
        let t = Transports::new(Box::new(net.attach()));
        (super::allocate_endpoint_over(b.id, &cfg, t).unwrap(), b)
    };
    let ((e0, b0), (e1, b1)) = (open(), open());
    for e in [&e0, &e1] {
        e.set_tag(TAG);
        e.map(0, e0.name(), TAG).unwrap();
        e.map(1, e1.name(), TAG).unwrap();
        e.set_expected_resources(2, 4).unwrap();
    }
    (b0, e0, e1, b1)
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
    let net = MemNetwork::new();
    let (b, e0, e1) = pair(&net, 4);
    let seg = VecSegment::new(512 << 10);
    e1.set_segment(Some(seg.clone()));
    let seen = recorder(&e1, &seg);
    let cases = [(1usize, 0u64), (1000, 7), (65_536, 4096), (300_000, 70_001)];
    for (k, &(n, off)) in cases.iter().enumerate() {
        let k = k as u32;
        let data: Vec<u8> = (0..n).map(|i| pattern(k, i)).collect();
        e0.request(1, &Message::long(10, &[k], &data, off), false)
            .unwrap();
        let placed = pump_until_delivered(&e0, &e1);
        assert_eq!(
            placed.map(|p| p.len as usize),
            Some(n),
            "message {k} placed"
        );
        poll_until(&b, "the handler", || seen.lock().len() == k as usize + 1);
        let (got_k, got) = seen.lock()[k as usize].clone();
        assert_eq!((got_k, got.len()), (k, n));
        assert!(got == data, "message {k}: the handler saw its own bytes");
        assert_eq!(&seg.snapshot()[off as usize..off as usize + n], &data[..]);
    }
    poll_until(&b, "the replies", || e0.with(|s| s.outstanding.len() == 0));
    assert_eq!(seen.lock().len(), cases.len(), "each handler ran once");
}

#[test]
fn a_handler_never_sees_the_bytes_of_a_message_behind_it() {
    let net = MemNetwork::new();
    // e1 in a bundle of its own: e0's request polls only e0's
    let (b, e0, e1, b1) = apart(&net);
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
    let first = pump_until_delivered(&e0, &e1);
    assert!(first.is_some(), "the first is placed");
    assert_eq!(e1.with(|s| s.rma.pending.len()), 1, "queued for dispatch");
    send(2);
    let t0 = std::time::Instant::now();
    while e1.with(|s| s.rma.pending.len()) < 2 {
        e0.with(|s| s.pump_network(s.clock.now())).unwrap();
        e1.with(|s| s.pump_network(s.clock.now())).unwrap();
        assert!(t0.elapsed().as_secs() < 5, "the second never came");
    }
    let second = e1.with(|s| match s.rma.pending.get(1) {
        Some(Event::Delivered { meta, .. }) => meta.placed,
        _ => panic!("the second waits in the queue"),
    });
    assert_eq!(second, None, "the second is gathered, not placed");
    poll_until(&b1, "both handlers", || {
        b.poll().unwrap();
        seen.lock().len() == 2
    });
    for (k, bytes) in seen.lock().iter() {
        assert!(
            bytes.iter().all(|&x| x as u32 == *k),
            "handler {k} saw only its own message's bytes"
        );
    }
}

#[test]
fn a_message_placed_into_a_segment_replaced_before_its_handler_is_refused() {
    let net = MemNetwork::new();
    let (b, e0, e1) = pair(&net, 4);
    let old = VecSegment::new(64 << 10);
    e1.set_segment(Some(old.clone()));
    let seen = recorder(&e1, &old);
    let status = returns(&e0);
    e0.request(1, &Message::long(10, &[5], &[9u8; 20_000], 128), false)
        .unwrap();
    assert!(pump_until_delivered(&e0, &e1).is_some(), "placed");
    let new = VecSegment::new(64 << 10);
    e1.set_segment(Some(new.clone()));
    poll_until(&b, "the returned request", || !status.lock().is_empty());
    assert_eq!(*status.lock(), [ReturnStatus::BadSegOff]);
    assert!(seen.lock().is_empty(), "no handler ran");
    assert!(
        new.snapshot().iter().all(|&x| x == 0),
        "the new segment untouched"
    );
}

#[test]
fn a_message_that_would_be_refused_is_not_placed() {
    let net = MemNetwork::new();
    let (b, e0, e1) = pair(&net, 4);
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
    assert_eq!(
        pump_until_delivered(&e0, &e1),
        None,
        "past the end: not placed"
    );
    poll_until(&b, "the first returned", || status.lock().len() == 1);
    e0.request(1, &Message::long(33, &[1], &[7u8; 1000], 0), false)
        .unwrap();
    assert_eq!(
        pump_until_delivered(&e0, &e1),
        None,
        "no handler: not placed"
    );
    poll_until(&b, "the second returned", || status.lock().len() == 2);
    assert_eq!(
        *status.lock(),
        [ReturnStatus::BadLength, ReturnStatus::BadHandler]
    );
    assert!(seg.snapshot().iter().all(|&x| x == 0), "nothing written");
}

#[test]
fn a_message_whose_segment_is_replaced_between_its_fragments_writes_no_more() {
    let net = MemNetwork::new();
    let (b, e0, e1) = pair(&net, 4);
    let old = VecSegment::new(512 << 10);
    e1.set_segment(Some(old.clone()));
    let seen = recorder(&e1, &old);
    let status = returns(&e0);
    // the datagrams after the first (which carries the first fragment,
    // and the next beside it) wait in the network
    let to = e1.addr();
    net.hold_if(move |dst, d| {
        use crate::wire::{any_packet, Packet};
        dst == to
            && any_packet(d, |p| matches!(p, Packet::Data { .. }))
            && !any_packet(d, |p| matches!(p, Packet::Data { frag_off: 0, .. }))
    });
    let n = 200_000;
    e0.request(1, &Message::long(10, &[3], &vec![0x5a; n], 64), false)
        .unwrap();
    let t0 = std::time::Instant::now();
    while net.held() == 0 {
        e0.with(|s| s.pump_network(s.clock.now())).unwrap();
        e1.with(|s| s.pump_network(s.clock.now())).unwrap();
        assert!(t0.elapsed().as_secs() < 5, "nothing held");
    }
    e1.with(|s| s.pump_network(s.clock.now())).unwrap();
    assert_eq!(old.snapshot()[64], 0x5a, "the first fragment placed");
    let new = VecSegment::new(512 << 10);
    e1.set_segment(Some(new.clone()));
    net.hold_if(|_, _| false);
    net.release_all();
    poll_until(&b, "the returned request", || !status.lock().is_empty());
    assert_eq!(*status.lock(), [ReturnStatus::BadSegOff]);
    assert!(seen.lock().is_empty(), "no handler ran");
    assert!(
        new.snapshot().iter().all(|&x| x == 0),
        "nothing written into the new segment"
    );
}
