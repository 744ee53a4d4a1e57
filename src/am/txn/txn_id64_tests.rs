//! 64-bit transaction ids (the trailer's high half): a target that heard
//! nothing from an initiator for half or all of the 32-bit id space frees
//! what the floor passed and runs a new transaction whose wire id repeats
//! an old finished one; trailers whose floor is out of reach of their id
//! are refused and counted, never a panic. The tables and trailers alone,
//! and whole endpoints between simulated processes (`sim::World`, virtual
//! time, the seeds `sim::seeds` gives), their logs real files.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;

use super::txn_tests::{cfg, counting, pair, until, wait, SOON, TAG};
use crate::am::handler::message::TXN_FLAG;
use crate::am::state::txn::{put_trailer, take_trailer, Trailer, MAX_FLOOR_LAG};
use crate::am::state::txn_target::{Entry, Seen, TxnTarget};
use crate::am::{Message, Progress};
use crate::sim::{seeds, World};
use crate::wire::CHANNEL_REQUEST;

const LAP: u64 = 1 << 32;

fn peer() -> SocketAddr {
    "10.0.0.9:1".parse().unwrap()
}

/// Ids 1..=3 from `peer()` (incarnation 7), finished, the floor at 1.
fn three_finished() -> TxnTarget {
    let mut t = TxnTarget::default();
    for id in 1..=3u64 {
        assert!(matches!(t.arrive(peer(), 7, 1, id), Seen::New));
        t.finish(peer(), id as u32, None);
    }
    assert_eq!(t.counts().entries, 3);
    t
}

/// What the initiator's trailer says of (id, floor), as the target reads it.
fn through_trailer(id: u64, floor: u64) -> (u64, u64) {
    let mut p = b"payload".to_vec();
    put_trailer(&mut p, 7, id, floor);
    let t = take_trailer(&mut p).unwrap();
    assert_eq!(p, b"payload");
    t.ids(id as u32).expect("a floor in reach")
}

#[test]
fn half_a_lap_elsewhere_moves_the_floor_forward_and_frees_what_it_passed() {
    let mut t = three_finished();
    // 2^31 ids went to other targets; this one has nothing waiting here
    let id = (1 << 31) + 10;
    let (id, floor) = through_trailer(id, id);
    assert!(matches!(t.arrive(peer(), 7, floor, id), Seen::New));
    let c = t.counts();
    assert_eq!(c.entries, 1, "the three finished ones freed: {c:?}");
    assert_eq!(c.duplicates, 0);
    // an old copy of one of them is below the floor: dropped, not run
    assert!(matches!(t.arrive(peer(), 7, 1, 2), Seen::Old));
}

#[test]
fn a_wire_id_repeated_a_lap_later_is_a_new_transaction() {
    let mut t = three_finished();
    // 2^32 ids went elsewhere: the next one here has wire id 2 again
    let id = LAP + 2;
    let (id, floor) = through_trailer(id, id - 1);
    assert_eq!((id, floor), (LAP + 2, LAP + 1));
    assert!(
        matches!(t.arrive(peer(), 7, floor, id), Seen::New),
        "it runs (not answered with the old kept reply)"
    );
    let c = t.counts();
    assert_eq!((c.entries, c.duplicates), (1, 0), "{c:?}");
    // its handler's reply names the wire id: it finishes the new one
    t.finish(peer(), 2, None);
    assert!(matches!(
        t.arrive(peer(), 7, floor, id),
        Seen::Finished(None)
    ));
    assert!(matches!(t.arrive(peer(), 7, floor, 2), Seen::Old));
}

#[test]
fn entries_restored_from_a_log_keep_their_64_bit_ids() {
    let mut t = TxnTarget::default();
    t.restore(peer(), 7, LAP + 5, Entry::Finished(None));
    t.restore(peer(), 7, LAP + 6, Entry::Crashed);
    assert!(matches!(
        t.arrive(peer(), 7, LAP + 5, LAP + 5),
        Seen::Finished(None)
    ));
    assert!(matches!(t.arrive(peer(), 7, LAP + 5, 5), Seen::Old));
    assert!(matches!(
        t.arrive(peer(), 7, LAP + 5, LAP + 6),
        Seen::Crashed
    ));
    // a lap later the same wire ids are new ones; the floor frees the old
    assert!(matches!(
        t.arrive(peer(), 7, 2 * LAP + 5, 2 * LAP + 5),
        Seen::New
    ));
    assert_eq!(t.counts().entries, 1);
}

#[test]
fn trailer_ids_are_rebuilt_and_a_floor_out_of_reach_is_refused() {
    let t = |floor_low, id_high| Trailer {
        incarnation: 1,
        floor_low,
        id_high,
    };
    assert_eq!(t(5, 0).ids(9), Some((9, 5)));
    // the floor's low half before the wrap of the id's
    assert_eq!(t(u32::MAX - 1, 1).ids(3), Some((LAP + 3, LAP - 2)));
    // exactly MAX_FLOOR_LAG below: taken; one more: refused
    let lag = MAX_FLOOR_LAG;
    assert_eq!(t(0, 2).ids(lag), Some((2 * LAP + u64::from(lag), 2 * LAP)));
    assert_eq!(t(0, 2).ids(lag + 1), None);
    // a floor above the id (its lag wraps): refused
    assert_eq!(t(10, 0).ids(9), None);
    // a floor below id 0: refused (no underflow)
    assert_eq!(t(u32::MAX, 0).ids(3), None);
    // any high half is just a far-off id
    assert_eq!(
        t(7, u32::MAX).ids(7),
        Some((
            u64::MAX - u64::from(u32::MAX) + 7,
            u64::MAX - u64::from(u32::MAX) + 7
        ))
    );
    // the initiator never sends a floor above the id (a resumed old one)
    assert_eq!(
        through_trailer(3 * LAP + 5, 3 * LAP + 9),
        (3 * LAP + 5, 3 * LAP + 5)
    );
}

#[test]
fn a_new_transaction_whose_wire_id_repeats_a_lap_later_runs() {
    for seed in seeds(2) {
        let w = World::seeded(seed);
        let (n0, n1) = pair(&w);
        let (e0, e1) = (&n0.ep, &n1.ep);
        let (runs, sum) = counting(e0, e1);
        let mut last = 0;
        for arg in 1..=2 {
            last = e0.request_txn(1, &Message::short(10, &[arg])).unwrap();
            assert_eq!(wait(e0, last).progress, Progress::Processed);
            e0.txn_release(last).unwrap();
        }
        // the target keeps the last one's reply (its floor did not pass it)
        assert_eq!(e1.txn_target_counts().entries, 1);
        // 2^32 ids go to other targets: the next one to e1 has the same wire id
        e0.with(|s| s.next_txn = last + LAP);
        let t = e0.request_txn(1, &Message::short(10, &[3])).unwrap();
        assert_eq!(t, last, "the same 32-bit id");
        let st = wait(e0, t);
        assert_eq!(st.progress, Progress::Processed, "{st:?}");
        assert_eq!(runs.load(Ordering::SeqCst), 3, "it ran");
        assert_eq!(sum.load(Ordering::SeqCst), 3 * 1000 + 1 + 2 + 3);
        let c = e1.txn_target_counts();
        assert_eq!((c.duplicates, c.entries), (0, 1), "{c:?}");
    }
}

#[test]
fn a_trailer_whose_floor_is_out_of_reach_is_refused_and_counted() {
    for seed in seeds(2) {
        let w = World::seeded(seed);
        let (n0, n1) = pair(&w);
        let (e0, e1) = (&n0.ep, &n1.ep);
        let (runs, _) = counting(e0, e1);
        let raw = |txn: u32, floor_low: u32, id_high: u32| {
            e0.with(|s| {
                let mut meta = Message::short(10, &[9]).meta(txn, TAG);
                meta.status = TXN_FLAG;
                let mut payload = s.txn.incarnation.to_be_bytes().to_vec();
                payload.extend_from_slice(&floor_low.to_be_bytes());
                payload.extend_from_slice(&id_high.to_be_bytes());
                s.send_message(s.clock.now(), e1.addr(), CHANNEL_REQUEST, meta, payload);
            })
        };
        raw(100, 100u32.wrapping_sub(MAX_FLOOR_LAG + 1), 0);
        raw(5, 6, 0);
        raw(3, u32::MAX, 0);
        until(&w, SOON, "three refusals", || {
            e1.txn_target_counts().bad_floor == 3
        });
        assert_eq!(runs.load(Ordering::SeqCst), 0, "none ran");
        // a garbage high half with the floor in reach is only another id: it runs
        raw(200, 200, 0xdead_beef);
        until(&w, SOON, "the run", || runs.load(Ordering::SeqCst) == 1);
        assert_eq!(e1.txn_target_counts().bad_floor, 3);
    }
}

#[test]
fn logs_keep_the_64_bit_ids_at_both_ends() {
    for seed in seeds(2) {
        let dir = std::env::temp_dir().join(format!("ramp-txid64-{}-{seed}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (p0, p1) = (dir.join("e0.log"), dir.join("e1.log"));
        {
            let w = World::seeded(seed);
            let c = cfg();
            let (n0, n1) = (w.node(&c), w.node(&c));
            let (e0, e1) = (&n0.ep, &n1.ep);
            e0.log_open(&p0, false, &c).unwrap();
            e1.log_open(&p1, false, &c).unwrap();
            for e in [e0, e1] {
                e.set_tag(TAG);
                e.map(0, e0.name(), TAG).unwrap();
                e.map(1, e1.name(), TAG).unwrap();
                e.set_expected_resources(2, 8).unwrap();
            }
            let (runs, _) = counting(e0, e1);
            e0.with(|s| s.next_txn = 3 * LAP + 40);
            let t = e0.request_txn(1, &Message::short(10, &[1])).unwrap();
            assert_eq!(t, 40);
            assert_eq!(wait(e0, t).progress, Progress::Processed);
            assert_eq!(runs.load(Ordering::SeqCst), 1);
            let _ = e0.txn_state(t).unwrap(); // its state logged
            let (_, s0, _) = crate::txlog::inspect(&p0).unwrap();
            assert_eq!(s0.next_txn, 3 * LAP + 41);
            assert_eq!(s0.issued[&(3 * LAP + 40)].state.progress, 3);
            let (_, s1, _) = crate::txlog::inspect(&p1).unwrap();
            let ids: Vec<u64> = s1.target.iter().map(|(k, _)| k.txn).collect();
            assert_eq!(ids, vec![3 * LAP + 40]);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
