//! Express records a ring holds back (`TxRing::hold`), over real rings in
//! one process: nothing of them reaches the ring until they are released,
//! and then all of them, in order, before anything sent after them; every
//! moment that releases them (the eighth record, a datagram, another
//! peer's record, a receive, `release_held`); held records across the
//! ring's end (a wrap among them); what a dropped ring held never
//! reaches a receiver; a ring without room holds nothing; a
//! ring whose receiver leaves an express record unread is dropped after
//! exactly the time allowed. The transports keep time by a clock the test
//! moves by hand (`sim::ManualClock`): the peer checks are exact.

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;

use super::tests::{fresh, open_on};
use super::*;
use crate::net::express::{Express, ExpressKind, MAX_ARGS, MAX_LEN};
use crate::sim::ManualClock;

/// `tx` with a proven ring to `rx` at `a` (no job key at either end).
fn linked(tx: &ShmTransport, rx: &ShmTransport, a: SocketAddr) {
    assert!(!tx.reaches(a));
    rx.read_socket();
    tx.read_socket();
    assert!(tx.reaches(a), "a ring to {a}");
}

/// A receiver `rx` at `a` and a sender `tx` with a ring to it (their
/// addresses' sockets kept bound while they live), on clock `c`.
struct Two {
    _keep: [UdpSocket; 2],
    a: SocketAddr,
    rx: ShmTransport,
    tx: ShmTransport,
    c: Arc<ManualClock>,
}

fn two() -> Two {
    let ((k1, a), (k2, a2)) = (fresh(), fresh());
    let c = ManualClock::new();
    let rx = open_on(a, &c);
    let tx = open_on(a2, &c);
    linked(&tx, &rx, a);
    Two {
        _keep: [k1, k2],
        a,
        rx,
        tx,
        c,
    }
}

/// An express request record for transaction `txn`.
fn rec(txn: u32) -> Vec<u8> {
    rec_of(txn, 2)
}

/// An express request record of `nargs` arguments for transaction `txn`.
pub(super) fn rec_of(txn: u32, nargs: usize) -> Vec<u8> {
    let x = Express {
        kind: ExpressKind::Request,
        handler: 9,
        nargs: nargs as u8,
        args: [txn; MAX_ARGS],
        txn,
        tag: 5,
    };
    let mut buf = [0u8; MAX_LEN];
    let n = x.encode(&mut buf);
    buf[..n].to_vec()
}

/// Everything waiting in `rx`'s rings, in order.
fn take(rx: &mut ShmTransport) -> Vec<Vec<u8>> {
    let mut got = Vec::new();
    while rx
        .recv_batch(&mut |d| got.push(d.unwrap().0.to_vec()))
        .unwrap()
        > 0
    {}
    got
}

fn recs(txns: std::ops::Range<u32>) -> Vec<Vec<u8>> {
    txns.map(rec).collect()
}

#[test]
fn held_records_wait_for_a_receive_of_the_sender_then_go_in_order() {
    let Two {
        _keep: _k,
        a: a1,
        mut rx,
        mut tx,
        ..
    } = two();
    // the first not held (a lone request), the next ones held
    assert!(tx.express_send(a1, &rec(1), false));
    for t in 2..6 {
        assert!(tx.express_send(a1, &rec(t), true));
    }
    assert_eq!(take(&mut rx), recs(1..2), "only the first is in the ring");
    // the sender's next receive (its poll) writes them
    assert_eq!(take(&mut tx).len(), 0);
    assert_eq!(take(&mut rx), recs(2..6));
    assert!(take(&mut rx).is_empty(), "each once");
    // and the fast poll's look writes them too
    for t in 6..9 {
        assert!(tx.express_send(a1, &rec(t), true));
    }
    assert!(take(&mut rx).is_empty());
    let mut taken = crate::net::express::TakenRecord::default();
    let _ = tx.express_take(&mut taken);
    assert_eq!(take(&mut rx), recs(6..9));
}

#[test]
fn the_eighth_record_writes_the_seven_held_before_it() {
    let Two {
        _keep: _k,
        a: a1,
        mut rx,
        mut tx,
        ..
    } = two();
    for round in 0..3u32 {
        let base = 100 * round;
        for t in 0..tx_ring::HOLD_MAX as u32 - 1 {
            assert!(tx.express_send(a1, &rec(base + t), true));
        }
        assert!(take(&mut rx).is_empty(), "round {round}: seven held");
        assert!(tx.express_send(a1, &rec(base + 7), true));
        assert_eq!(take(&mut rx), recs(base..base + 8), "round {round}");
    }
}

/// An express request record of `MAX_ARGS` arguments (two lines of the
/// ring) for transaction `txn`.
fn big(txn: u32) -> Vec<u8> {
    rec_of(txn, MAX_ARGS)
}

/// Two laps of the ring in rounds of held records (their room taken in the ring
/// at once, nothing of them written until released): none is seen before
/// its release, all are after, in order, each once, also the rounds
/// where the ring's end falls among them (a wrap held with them).
#[test]
fn held_records_across_the_rings_end_arrive_whole_and_in_order() {
    let Two {
        _keep: _k,
        a: a1,
        mut rx,
        mut tx,
        ..
    } = two();
    // one line first (and after each lap): two-line records then meet
    // the end with one line left, a wrap
    let odd = |tx: &mut ShmTransport, rx: &mut ShmTransport| {
        tx.send(Instant::ZERO, a1, b"RAodd").unwrap();
        assert_eq!(take(rx), vec![b"RAodd".to_vec()]);
    };
    odd(&mut tx, &mut rx);
    let k = match tx.tx.get_mut().routes.get(&a1) {
        Some(&Route::Ring(k)) => k,
        _ => panic!("a ring to {a1}"),
    };
    let tail = |tx: &mut ShmTransport| tx.tx.get_mut().rings[k].as_ref().unwrap().tail;
    let (mut wraps, mut t) = (0, 0u32);
    while tail(&mut tx) < 2 * RING as u64 + 4096 {
        let before = tail(&mut tx);
        let want: Vec<Vec<u8>> = (t..t + tx_ring::HOLD_MAX as u32 - 1).map(big).collect();
        for r in &want {
            assert!(tx.express_send(a1, r, true));
        }
        t += want.len() as u32;
        assert!(take(&mut rx).is_empty(), "held: {t}");
        // (the ring's end crossed by an odd number of lines: a wrap)
        let wrapped = before / RING as u64 != tail(&mut tx) / RING as u64;
        tx.release_held();
        assert_eq!(take(&mut rx), want, "released: {t}");
        if wrapped {
            wraps += 1;
            odd(&mut tx, &mut rx);
        }
    }
    assert_eq!(wraps, 2, "the ring's end among held records");
}

#[test]
fn anything_else_into_a_ring_goes_after_the_held_records() {
    let ((_k1, a1), (_k2, a2), (_k3, a3)) = (fresh(), fresh(), fresh());
    let c = ManualClock::new();
    let mut rx = open_on(a1, &c);
    let mut other = open_on(a3, &c);
    let mut tx = open_on(a2, &c);
    linked(&tx, &rx, a1);
    linked(&tx, &other, a3);
    // a protocol datagram to the same peer
    for t in 1..4 {
        assert!(tx.express_send(a1, &rec(t), true));
    }
    tx.send(Instant::ZERO, a1, b"RAdatagram").unwrap();
    let mut want = recs(1..4);
    want.push(b"RAdatagram".to_vec());
    assert_eq!(take(&mut rx), want);
    // a record that may not wait (a reply's), to the same peer
    assert!(tx.express_send(a1, &rec(4), true));
    assert!(tx.express_send(a1, &rec(5), false));
    assert_eq!(take(&mut rx), recs(4..6));
    // a record for another peer (one ring holds at a time): the first
    // peer's go first, then it
    assert!(tx.express_send(a1, &rec(6), true));
    assert!(tx.express_send(a3, &rec(7), true));
    assert_eq!(take(&mut rx), recs(6..7));
    assert_eq!(take(&mut other), recs(7..8));
    // held for that other peer, then a datagram to the first: any push
    // into any ring writes them
    assert!(tx.express_send(a3, &rec(8), true));
    assert!(take(&mut other).is_empty(), "held");
    tx.send(Instant::ZERO, a1, b"RAsecond").unwrap();
    assert_eq!(take(&mut other), recs(8..9));
    assert_eq!(take(&mut rx), vec![b"RAsecond".to_vec()]);
}

#[test]
fn release_held_writes_them_once_for_a_sleep_or_the_close() {
    let Two {
        _keep: _k,
        a: a1,
        mut rx,
        mut tx,
        ..
    } = two();
    for t in 1..4 {
        assert!(tx.express_send(a1, &rec(t), true));
    }
    // what the layer above calls before the endpoint sleeps
    tx.release_held();
    assert_eq!(take(&mut rx), recs(1..4));
    tx.release_held();
    assert!(take(&mut rx).is_empty(), "each once");
    // and as the endpoint closes (`send_all_held`), then the close
    for t in 4..7 {
        assert!(tx.express_send(a1, &rec(t), true));
    }
    tx.release_held();
    drop(tx);
    assert_eq!(take(&mut rx), recs(4..7), "written as the endpoint closed");
}

#[test]
fn what_a_dropped_ring_held_is_never_written_and_its_peer_is_reported() {
    let ((_k1, a1), (_k2, a2), (_k3, a3)) = (fresh(), fresh(), fresh());
    let c = ManualClock::new();
    let rx = open_on(a1, &c);
    let mut tx = open_on(a2, &c);
    linked(&tx, &rx, a1);
    assert!(tx.express_send(a1, &rec(1), false));
    for t in 2..5 {
        assert!(tx.express_send(a1, &rec(t), true));
    }
    // the receiver closes: its ring is dropped, with what it held
    drop(rx);
    tx.check_peers(c.now());
    assert_eq!(tx.take_dropped(), Some(a1));
    assert!(tx.tx.get_mut().held_in.is_none());
    // a new ring takes the dropped one's place: nothing of the old
    // peer's records reaches it, and it holds and writes its own
    let mut next = open_on(a3, &c);
    linked(&tx, &next, a3);
    assert!(take(&mut tx).is_empty());
    assert!(take(&mut next).is_empty());
    let k = match tx.tx.get_mut().routes.get(&a3) {
        Some(&Route::Ring(k)) => k,
        _ => panic!("a ring to {a3}"),
    };
    let ring = tx.tx.get_mut().rings[k].as_ref().unwrap();
    assert_eq!(ring.express_end, 0, "no express record went into it");
    assert!(tx.express_send(a3, &rec(9), true));
    assert!(take(&mut next).is_empty());
    assert_eq!(take(&mut tx).len(), 0);
    assert_eq!(take(&mut next), recs(9..10));
}

#[test]
fn a_ring_without_room_holds_nothing() {
    let Two {
        _keep: _k,
        a: a1,
        mut rx,
        mut tx,
        ..
    } = two();
    // filled with datagrams the receiver does not read
    let d = [7u8; 4000];
    let mut sent = 0;
    while tx.send(Instant::ZERO, a1, &d).is_ok() {
        sent += 1;
        assert!(sent < RING, "a ring that never fills");
    }
    // no room for a record: neither held nor written (the caller takes
    // the protocol's path)
    let mut n = 0;
    while tx.express_send(a1, &rec(n), true) {
        n += 1;
        assert!(n < 1000, "records taken by a full ring");
    }
    // the ones taken fit: all arrive after the datagrams, in order
    tx.release_held();
    let got = take(&mut rx);
    assert_eq!(got.len(), sent + n as usize);
    assert_eq!(got[sent..], recs(0..n)[..]);
}

/// A receiver that leaves an express record unread, its head still, for
/// the time it is allowed (`stuck_after`: the protocol's peer timeout) has
/// its ring dropped at the sender's first peer check from then on, not a
/// check before; one that reads in time keeps its ring.
#[test]
fn a_ring_whose_receiver_leaves_a_record_unread_is_dropped_after_the_timeout() {
    let Two {
        _keep: _k,
        a: a1,
        mut rx,
        mut tx,
        c,
    } = two();
    tx.stuck_after = 3 * CHECK_EVERY;
    let t0 = c.now();
    // the sender's peer checks, each CHECK_EVERY from its opening
    let check = |tx: &mut ShmTransport, k: u64| {
        c.set(t0.plus(k * CHECK_EVERY));
        tx.flush_due(c.now());
        tx.take_dropped()
    };
    // read before the next check: never stuck
    assert!(tx.express_send(a1, &rec(1), false));
    assert_eq!(take(&mut rx), recs(1..2));
    for k in 1..=5 {
        assert_eq!(check(&mut tx, k), None, "check {k}: a ring read in time");
    }
    // left unread: first seen still at check 6, dropped at check 6 + 3
    assert!(tx.express_send(a1, &rec(2), false));
    for k in 6..9 {
        assert_eq!(check(&mut tx, k), None, "check {k}: dropped too soon");
        assert!(tx.reaches(a1));
    }
    assert_eq!(check(&mut tx, 9), Some(a1), "not dropped after the timeout");
    assert!(!tx.reaches(a1), "its peer is reached by UDP");
}

/// The fast poll's take says whether something may wait behind the
/// record it took (`TakenRecord::more`): after a lone record, no (the
/// fast poll looks no further); after the first of two, yes.
#[test]
fn a_take_says_whether_anything_waits_behind_its_record() {
    use crate::net::express::{ExpressTake, TakenRecord};
    let Two {
        _keep: _k,
        a: a1,
        mut rx,
        mut tx,
        ..
    } = two();
    // the slot looked at once by a full receive
    assert!(tx.express_send(a1, &rec(1), false));
    assert_eq!(take(&mut rx), recs(1..2));
    let mut taken = TakenRecord::default();
    assert!(tx.express_send(a1, &rec(2), false));
    assert_eq!(rx.express_take(&mut taken), ExpressTake::Record);
    assert_eq!(taken.record(), &rec(2)[..]);
    assert!(!taken.more, "a lone record");
    assert!(tx.express_send(a1, &rec(3), false));
    assert!(tx.express_send(a1, &rec(4), false));
    assert_eq!(rx.express_take(&mut taken), ExpressTake::Record);
    assert!(taken.more, "another behind it");
    assert_eq!(rx.express_take(&mut taken), ExpressTake::Record);
    assert_eq!(taken.record(), &rec(4)[..]);
    assert!(!taken.more, "the last one");
    assert_eq!(rx.express_take(&mut taken), ExpressTake::Nothing);
}
