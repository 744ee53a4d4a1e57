//! The fast poll's take names each record's writer (`TakenRecord::from`)
//! and which writer it is (`TakenRecord::from_gen`, the slot's epoch):
//! over real rings in one process, two writers interleaved into one
//! receiver.

use std::net::SocketAddr;

use super::tests::{fresh, link, open};
use super::*;
use crate::net::express::{ExpressTake, TakenRecord};

/// An express request record for transaction `txn` (one argument).
fn rec(txn: u32) -> Vec<u8> {
    super::hold_tests::rec_of(txn, 1)
}

/// The writer and its number, of the record the fast poll takes next
/// (which must be `want`).
fn take_one(rx: &mut ShmTransport, taken: &mut TakenRecord, want: &[u8]) -> (SocketAddr, u64) {
    assert_eq!(rx.express_take(taken), ExpressTake::Record);
    assert_eq!(taken.record(), want);
    (taken.from, taken.from_gen)
}

/// Records from two writers taken one after the other: each named by
/// its writer's address, and by a number that is the same for one
/// writer's records and differs between writers (what the AM layer
/// resolved for one number holds for every record carrying it), never
/// the 0 of a fresh record.
#[test]
fn each_taken_record_names_its_writer_and_its_writers_number() {
    let ((_k0, a0), (_k1, a1), (_k2, a2)) = (fresh(), fresh(), fresh());
    let mut rx = open(a0);
    let (mut w1, mut w2) = (open(a1), open(a2));
    assert!(link(&w1, &rx, a0));
    assert!(link(&w2, &rx, a0));
    // each slot looked at once by a full receive (the fast poll leaves a
    // slot never looked at to it)
    assert!(w1.express_send(a0, &rec(0), false));
    assert!(w2.express_send(a0, &rec(0), false));
    while rx.recv_batch(&mut |_| {}).unwrap() > 0 {}
    let mut taken = TakenRecord::default();
    let mut seen = Vec::new();
    for t in 1..=6u32 {
        let (w, a) = if t % 2 == 1 {
            (&mut w1, a1)
        } else {
            (&mut w2, a2)
        };
        assert!(w.express_send(a0, &rec(t), false));
        let (from, gen) = take_one(&mut rx, &mut taken, &rec(t));
        assert_eq!(from, a, "record {t}'s writer");
        assert_ne!(gen, 0, "record {t}");
        seen.push((from, gen));
    }
    for &(f, g) in &seen {
        for &(f2, g2) in &seen {
            assert_eq!(f == f2, g == g2, "{f} numbered {g}, {f2} numbered {g2}");
        }
    }
}
