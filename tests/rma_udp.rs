//! One-sided remote memory (put, get, notify, test/wait/fence, regions) over
//! real UDP sockets: two endpoints in one process, in one bundle (so that
//! polling it moves both) or, for the progress thread, in two.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ramp::am::{
    self, handler, BundleMode, Endpoint, Message, VecSegment, REGION_READ, REGION_WRITE,
    SEGMENT_REGION,
};
use ramp::error::{Error, ReturnStatus};

const BAD_SEG: u8 = ReturnStatus::BadSegOff as u8;

fn endpoints(b0: &Arc<am::Bundle>, b1: &Arc<am::Bundle>) -> (Arc<Endpoint>, Arc<Endpoint>) {
    let e0 = am::allocate_endpoint(b0).unwrap();
    let e1 = am::allocate_endpoint(b1).unwrap();
    for e in [&e0, &e1] {
        e.set_tag(5);
        e.map(0, e0.name(), 5).unwrap();
        e.map(1, e1.name(), 5).unwrap();
        e.set_expected_resources(2, 16).unwrap();
    }
    (e0, e1)
}

/// e0 and e1 in one bundle.
fn pair() -> (Arc<am::Bundle>, Arc<Endpoint>, Arc<Endpoint>) {
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let (e0, e1) = endpoints(&b, &b);
    (b, e0, e1)
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| {
            (i as u32)
                .wrapping_mul(2654435761)
                .rotate_left(seed as u32 % 32) as u8
                ^ seed
        })
        .collect()
}

#[test]
fn puts_and_gets_of_every_size_arrive_intact() {
    let _w = common::watchdog("rma_udp::sizes", Duration::from_secs(300));
    let (_b, e0, e1) = pair();
    let region_len = 6 << 20;
    let mem = VecSegment::new(region_len);
    let r = e1
        .register_region(mem.clone(), REGION_READ | REGION_WRITE)
        .unwrap();
    assert_ne!(r, SEGMENT_REGION);
    for (k, &n) in [1usize, 64 << 10, 1 << 20, 5 << 20].iter().enumerate() {
        let off = 3 + k as u64 * 7;
        let data = pattern(n, k as u8 + 1);
        let op = e0.put(1, r, off, &data, None, true).unwrap();
        assert_ne!(op, 0);
        assert_eq!(e0.wait_op(op).unwrap(), 0, "put of {n} bytes");
        // remote completion: the bytes are there once it is reported
        assert!(mem.snapshot()[off as usize..off as usize + n] == data[..]);
        let dst = VecSegment::new(n);
        let op = e0.get(1, r, off, dst.clone(), true).unwrap();
        assert_eq!(e0.wait_op(op).unwrap(), 0, "get of {n} bytes");
        assert!(dst.snapshot() == data, "get of {n} bytes differs");
        // the handle was released by the call that reported it
        assert!(matches!(e0.wait_op(op), Err(Error::BadArg(_))));
    }
    assert_eq!(e0.rma_counts().1, 0);
}

#[test]
fn region_zero_is_the_segment_and_missing_segment_refuses() {
    let _w = common::watchdog("rma_udp::segment", Duration::from_secs(120));
    let (_b, e0, e1) = pair();
    let op = e0
        .put(1, SEGMENT_REGION, 0, &[1, 2, 3], None, true)
        .unwrap();
    assert_eq!(e0.wait_op(op).unwrap(), BAD_SEG, "no segment yet");
    let seg = VecSegment::new(4096);
    e1.set_segment(Some(seg.clone()));
    let op = e0
        .put(1, SEGMENT_REGION, 10, &[1, 2, 3], None, true)
        .unwrap();
    assert_eq!(e0.wait_op(op).unwrap(), 0);
    assert_eq!(&seg.snapshot()[10..13], &[1, 2, 3]);
}

#[test]
fn put_notify_sets_the_word_after_the_bytes() {
    let _w = common::watchdog("rma_udp::notify", Duration::from_secs(120));
    let (b, e0, e1) = pair();
    let n = 3 << 20;
    let mem = VecSegment::new(n + 64);
    let r = e1.register_region(mem.clone(), REGION_WRITE).unwrap();
    let data = pattern(n, 9);
    let flag_off = n as u64 + 8;
    e0.put(1, r, 0, &data, Some((flag_off, 0xfeed)), false)
        .unwrap();
    common::waiting_for("the flag after the bytes");
    loop {
        let snap = mem.snapshot();
        let flag = u32::from_ne_bytes(snap[n + 8..n + 12].try_into().unwrap());
        if flag == 0xfeed {
            assert!(snap[..n] == data[..], "flag set before the bytes");
            break;
        }
        assert_eq!(flag, 0);
        b.poll().unwrap();
    }
    e0.fence().unwrap();
    // a flag outside the region refuses the whole put: nothing written
    let before = mem.snapshot();
    let op = e0
        .put(1, r, 0, &[7u8; 100], Some((n as u64 + 62, 1)), true)
        .unwrap();
    assert_eq!(e0.wait_op(op).unwrap(), BAD_SEG);
    assert!(mem.snapshot() == before);
}

#[test]
fn refusals_at_the_target_write_nothing() {
    let _w = common::watchdog("rma_udp::refusals", Duration::from_secs(120));
    let (_b, e0, e1) = pair();
    let rw = VecSegment::new(1 << 20);
    let ro = VecSegment::new(4096);
    let wo = VecSegment::new(4096);
    let r_rw = e1
        .register_region(rw.clone(), REGION_READ | REGION_WRITE)
        .unwrap();
    let r_ro = e1.register_region(ro.clone(), REGION_READ).unwrap();
    let r_wo = e1.register_region(wo.clone(), REGION_WRITE).unwrap();
    let big = vec![0xabu8; 700 << 10]; // three chunks; the last one out of bounds
    let cases: Vec<(u32, u64, usize)> = vec![
        (r_rw, (1 << 20) - (600 << 10), big.len()), // the end out of bounds
        (r_rw, 1 << 20, 1),                         // starts at the end
        (r_rw, u64::MAX - 10, 5),                   // far out
        (999, 0, 10),                               // no such region
        (r_ro, 0, 10),                              // read-only
    ];
    for (region, off, n) in cases {
        let op = e0.put(1, region, off, &big[..n], None, true).unwrap();
        assert_eq!(e0.wait_op(op).unwrap(), BAD_SEG, "put {region} {off} {n}");
        let dst = VecSegment::new(n);
        let want = if region == r_ro { 0 } else { BAD_SEG };
        let op = e0.get(1, region, off, dst.clone(), true).unwrap();
        assert_eq!(e0.wait_op(op).unwrap(), want, "get {region} {off} {n}");
    }
    // write-only refuses a get; the destination is untouched
    let dst = VecSegment::new(16);
    let op = e0.get(1, r_wo, 0, dst.clone(), true).unwrap();
    assert_eq!(e0.wait_op(op).unwrap(), BAD_SEG);
    assert!(dst.snapshot().iter().all(|&x| x == 0));
    for m in [&rw, &ro, &wo] {
        assert!(m.snapshot().iter().all(|&x| x == 0), "a refused put wrote");
    }
    // local argument errors: nothing sent, nothing kept
    assert!(matches!(
        e0.put(1, r_rw, u64::MAX, &[1, 2], None, true),
        Err(Error::BadArg(_))
    ));
    assert!(matches!(
        e0.put(9, r_rw, 0, &[1], None, true),
        Err(Error::BadArg(_))
    ));
    assert!(matches!(e0.test_op(12345), Err(Error::BadArg(_))));
    assert!(matches!(e0.wait_op(0), Err(Error::BadArg(_))));
    assert!(e1.deregister_region(SEGMENT_REGION).is_err());
    assert!(e1.deregister_region(999).is_err());
    assert!(e1.register_region(VecSegment::new(8), 0).is_err());
    assert!(e1.register_region(VecSegment::new(8), 4).is_err());
    assert_eq!(e0.rma_counts().1, 0);
    // failures already reported by wait_op do not fail a later fence
    e0.fence().unwrap();
}

#[test]
fn fence_reports_failures_once_and_waits_for_everything() {
    let _w = common::watchdog("rma_udp::fence", Duration::from_secs(120));
    let (_b, e0, e1) = pair();
    let mem = VecSegment::new(1 << 20);
    let r = e1
        .register_region(mem.clone(), REGION_READ | REGION_WRITE)
        .unwrap();
    for i in 0..50u64 {
        e0.put(1, r, i * 1000, &[i as u8 + 1; 1000], None, false)
            .unwrap();
    }
    e0.fence().unwrap();
    let snap = mem.snapshot();
    for i in 0..50usize {
        assert!(snap[i * 1000..i * 1000 + 1000]
            .iter()
            .all(|&x| x == i as u8 + 1));
    }
    // one failure among successes: the fence says so, once
    e0.put(1, r, 0, &[1; 10], None, false).unwrap();
    e0.put(1, r, 1 << 20, &[1; 10], None, false).unwrap();
    let kept = e0.put(1, r, (1 << 20) - 1, &[1; 2], None, true).unwrap();
    e0.put(1, r, 20, &[1; 10], None, false).unwrap();
    assert!(matches!(e0.fence(), Err(Error::Resource(_))));
    e0.fence().unwrap();
    // the failed op with a handle still reports its own status
    assert_eq!(e0.test_op(kept).unwrap(), Some(BAD_SEG));
    assert!(e0.test_op(kept).is_err());
}

#[test]
fn a_put_is_performed_before_a_later_am_request_runs() {
    let _w = common::watchdog("rma_udp::ordering", Duration::from_secs(120));
    let (b, e0, e1) = pair();
    let mem = VecSegment::new(13 << 20);
    let r = e1
        .register_region(mem.clone(), REGION_READ | REGION_WRITE)
        .unwrap();
    let ok = Arc::new(AtomicU64::new(0));
    let bad = Arc::new(AtomicU64::new(0));
    let (m, o, x) = (mem.clone(), ok.clone(), bad.clone());
    e1.set_handler(
        7,
        handler(move |h| {
            let (off, len, v) = (h.args[0] as usize, h.args[1] as usize, h.args[2] as u8);
            let snap = m.snapshot();
            if snap[off..off + len].iter().all(|&b| b == v) {
                o.fetch_add(1, Ordering::SeqCst);
            } else {
                x.fetch_add(1, Ordering::SeqCst);
            }
        }),
    );
    let rounds = 40u32;
    for i in 0..rounds {
        // disjoint ranges (later puts must not hide what an earlier one wrote)
        let len = if i % 4 == 0 {
            (256 << 10) + 17
        } else {
            1000 + i as usize
        };
        let off = i as usize * 300_000;
        let v = i as u8 + 1;
        e0.put(1, r, off as u64, &vec![v; len], None, false)
            .unwrap();
        // tell without waiting for the put
        e0.request(
            1,
            &Message::short(7, &[off as u32, len as u32, v as u32]),
            false,
        )
        .unwrap();
    }
    common::waiting_for("every handler after its put");
    while ok.load(Ordering::SeqCst) + bad.load(Ordering::SeqCst) < rounds as u64 {
        b.poll().unwrap();
    }
    assert_eq!(
        bad.load(Ordering::SeqCst),
        0,
        "a handler ran before its put"
    );
    e0.fence().unwrap();
}

#[test]
fn many_outstanding_operations_complete() {
    let _w = common::watchdog("rma_udp::many", Duration::from_secs(300));
    let (_b, e0, e1) = pair();
    let mem = VecSegment::new(1 << 20);
    let r = e1
        .register_region(mem.clone(), REGION_READ | REGION_WRITE)
        .unwrap();
    let mut ops = Vec::new();
    for i in 0..1000u64 {
        let off = i * 1024;
        ops.push(
            e0.put(1, r, off, &[(i % 251) as u8; 64], None, true)
                .unwrap(),
        );
    }
    for op in ops.drain(..) {
        assert_eq!(e0.wait_op(op).unwrap(), 0);
    }
    let dsts: Vec<_> = (0..1000).map(|_| VecSegment::new(64)).collect();
    for (i, d) in dsts.iter().enumerate() {
        let off = i as u64 * 1024;
        ops.push(e0.get(1, r, off, d.clone(), true).unwrap());
    }
    // test in a loop until all are done
    let mut left: Vec<u64> = ops.clone();
    common::waiting_for("every operation to complete");
    while !left.is_empty() {
        left.retain(|&op| match e0.test_op(op).unwrap() {
            Some(s) => {
                assert_eq!(s, 0);
                false
            }
            None => true,
        });
    }
    for (i, d) in dsts.iter().enumerate() {
        assert!(d.snapshot().iter().all(|&x| x == (i % 251) as u8));
    }
    assert_eq!(e0.rma_counts().1, 0);
}

#[test]
fn deregistering_while_operations_fly_never_writes_after() {
    let _w = common::watchdog("rma_udp::dereg", Duration::from_secs(120));
    let (b, e0, e1) = pair();
    let mem = VecSegment::new(4 << 20);
    let r = e1
        .register_region(mem.clone(), REGION_READ | REGION_WRITE)
        .unwrap();
    let data = vec![0x5au8; 4 << 20];
    let mut ops = Vec::new();
    for _ in 0..4 {
        ops.push(e0.put(1, r, 0, &data, None, true).unwrap());
        ops.push(e0.get(1, r, 0, VecSegment::new(1 << 20), true).unwrap());
    }
    // let some of it arrive, then deregister with the rest in flight
    for _ in 0..3 {
        b.poll().unwrap();
    }
    e1.deregister_region(r).unwrap();
    let at_dereg = mem.snapshot();
    let mut refused = 0;
    for op in ops {
        let s = e0.wait_op(op).unwrap();
        assert!(s == 0 || s == BAD_SEG, "status {s}");
        refused += (s == BAD_SEG) as u32;
    }
    assert!(mem.snapshot() == at_dereg, "written after deregistration");
    // everything after the deregistration is refused
    let op = e0.put(1, r, 0, &[1], None, true).unwrap();
    assert_eq!(e0.wait_op(op).unwrap(), BAD_SEG);
    eprintln!("{refused} of 8 operations refused by the deregistration");
}

#[test]
fn a_progress_thread_serves_a_target_that_never_polls() {
    let _w = common::watchdog("rma_udp::progress", Duration::from_secs(300));
    am::init().unwrap();
    let b0 = am::allocate_bundle(BundleMode::Seq).unwrap();
    let b1 = am::allocate_bundle(BundleMode::Seq).unwrap();
    let (e0, e1) = endpoints(&b0, &b1);
    let mem = VecSegment::new(1 << 20);
    let r = e1
        .register_region(mem.clone(), REGION_READ | REGION_WRITE)
        .unwrap();
    let ran = Arc::new(AtomicBool::new(false));
    let rn = ran.clone();
    e1.set_handler(9, handler(move |_| rn.store(true, Ordering::SeqCst)));
    b1.set_progress_thread(true).unwrap();
    assert!(b1.has_progress_thread());
    // nobody polls b1: only its progress thread moves e1's packets
    let mut ops = Vec::new();
    for i in 0..1000u64 {
        let off = (i % 128) * 8192;
        ops.push(
            e0.put(1, r, off, &[(i % 200) as u8 + 1; 100], None, true)
                .unwrap(),
        );
        if i % 2 == 0 {
            ops.push(e0.get(1, r, off, VecSegment::new(100), true).unwrap());
        }
    }
    // an AM request waits for the application's poll: its handler must not run
    e0.request(1, &Message::short(9, &[]), false).unwrap();
    for op in ops {
        assert_eq!(e0.wait_op(op).unwrap(), 0);
    }
    assert!(
        !ran.load(Ordering::SeqCst),
        "the progress thread ran a handler"
    );
    b1.set_progress_thread(false).unwrap();
    assert!(!b1.has_progress_thread());
    common::waiting_for("the AM request's handler at the application's poll");
    while !ran.load(Ordering::SeqCst) {
        b1.poll().unwrap();
        b0.poll().unwrap();
    }
    // freeing the bundle stops a running thread
    b1.set_progress_thread(true).unwrap();
    am::free_bundle(&b1).unwrap();
    assert!(!b1.has_progress_thread());
    am::free_bundle(&b0).unwrap();
}

#[test]
fn operations_to_a_silent_peer_fail_with_eunreachable() {
    let _w = common::watchdog("rma_udp::unreachable", Duration::from_secs(120));
    let cfg = ramp::config::Config::from_lookup(|k| match k {
        "RAMP_PEER_TIMEOUT_MS" => Some("400".into()),
        _ => std::env::var(k).ok(),
    })
    .unwrap();
    am::init().unwrap();
    let b0 = am::allocate_bundle(BundleMode::Seq).unwrap();
    let b1 = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e0 = am::allocate_endpoint_with(&b0, &cfg).unwrap();
    // the peer: a socket that never answers (its bundle is never polled)
    let e1 = am::allocate_endpoint(&b1).unwrap();
    e0.set_tag(5);
    e0.map(1, e1.name(), 5).unwrap();
    e0.set_expected_resources(2, 4).unwrap();
    let put = e0.put(1, 1, 0, &[1u8; 300_000], None, true).unwrap();
    let dst = VecSegment::new(1000);
    let get = e0.get(1, 1, 0, dst.clone(), true).unwrap();
    e0.put(1, 1, 0, &[1], None, false).unwrap();
    let unreachable = ReturnStatus::Unreachable as u8;
    assert_eq!(e0.wait_op(put).unwrap(), unreachable);
    assert_eq!(e0.wait_op(get).unwrap(), unreachable);
    assert!(matches!(e0.fence(), Err(Error::Resource(_))));
    assert!(dst.snapshot().iter().all(|&x| x == 0));
    assert_eq!(e0.rma_counts().1, 0);
    am::free_bundle(&b0).unwrap();
    am::free_bundle(&b1).unwrap();
}
