//! Steady state allocates no payload buffer per message: after a warm-up,
//! thousands of long and medium requests (and their replies) over real UDP
//! sockets take their buffers from the protocol's pools (`proto/bufpool.rs`);
//! so do puts and gets of remote memory (their chunks at both ends).
//! Counted by a global allocator that counts allocations of 4 KiB and more
//! (what a payload takes; a fresh one also costs page faults).

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ramp::am::{self, handler, BundleMode, Data, Message, VecSegment};

struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static LARGE: AtomicU64 = AtomicU64::new(0);
static ALL: AtomicU64 = AtomicU64::new(0);

fn count(size: usize) {
    if COUNTING.load(Ordering::Relaxed) {
        ALL.fetch_add(1, Ordering::Relaxed);
        if size >= 4096 {
            LARGE.fetch_add(1, Ordering::Relaxed);
        }
    }
}

// SAFETY (of the impl): every call is passed on to the system allocator
// unchanged; counting touches only atomics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        count(l.size());
        // SAFETY: the caller's layout, passed on.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: `p` came from `System` with layout `l`.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        count(new);
        // SAFETY: `p` came from `System` with layout `l`.
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn long_and_medium_requests_allocate_no_payload_buffer_in_steady_state() {
    let _watchdog = common::watchdog(
        "am_alloc::long_and_medium_requests_allocate_no_payload_buffer_in_steady_state",
        Duration::from_secs(300),
    );
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e0 = am::allocate_endpoint(&b).unwrap();
    let e1 = am::allocate_endpoint(&b).unwrap();
    for e in [&e0, &e1] {
        e.set_tag(5);
        e.map(0, e0.name(), 5).unwrap();
        e.map(1, e1.name(), 5).unwrap();
        e.set_expected_resources(2, 16).unwrap();
    }
    const LONG: usize = 60_000;
    const MEDIUM: usize = 8_000;
    e1.set_segment(Some(VecSegment::new(2 * LONG)));
    e1.set_handler(
        10,
        handler(|h| {
            let n = match &h.data {
                Data::Long { len, .. } => *len,
                Data::Medium(m) => m.len(),
                _ => 0,
            };
            assert!(n == LONG || n == MEDIUM, "{n} bytes");
            am::reply(h.token, &Message::medium(11, &[], &[3u8; 100])).unwrap();
        }),
    );
    let replies = Arc::new(AtomicU64::new(0));
    let r = replies.clone();
    e0.set_handler(
        11,
        handler(move |_| {
            r.fetch_add(1, Ordering::Relaxed);
        }),
    );
    let long = vec![1u8; LONG];
    let medium = vec![2u8; MEDIUM];
    let run = |n: u64| {
        let base = replies.load(Ordering::Relaxed);
        for i in 0..n {
            let m = if i % 2 == 0 {
                Message::long(10, &[], &long, (i % 2) * LONG as u64)
            } else {
                Message::medium(10, &[], &medium)
            };
            e0.request(1, &m, false).unwrap();
        }
        while replies.load(Ordering::Relaxed) < base + n {
            b.poll().unwrap();
        }
    };
    run(1000); // warm-up: the pools and queues reach their size
               // the counter counts
    COUNTING.store(true, Ordering::Relaxed);
    drop(std::hint::black_box(vec![0u8; 5000]));
    COUNTING.store(false, Ordering::Relaxed);
    assert_eq!(LARGE.swap(0, Ordering::Relaxed), 1);
    ALL.store(0, Ordering::Relaxed);
    COUNTING.store(true, Ordering::Relaxed);
    let n = 4000;
    run(n);
    COUNTING.store(false, Ordering::Relaxed);
    let (large, all) = (LARGE.load(Ordering::Relaxed), ALL.load(Ordering::Relaxed));
    eprintln!("{n} requests and replies in steady state: {large} allocations of 4 KiB or more, {all} in all");
    assert!(
        large * 20 < n,
        "{large} large allocations for {n} messages: payload buffers are not reused"
    );

    // Remote memory too: the chunks of puts (a whole chunk (255 KiB) and a
    // part of one each) and of gets land in reused buffers, at the target
    // (reassembled puts, the bytes a get reads) and at the initiator (the
    // put's copy of `src`, a get's answer).
    const RMA: usize = 300 << 10;
    let region = e1
        .register_region(
            VecSegment::new(RMA),
            ramp::am::REGION_READ | ramp::am::REGION_WRITE,
        )
        .unwrap();
    let src = vec![7u8; RMA];
    let dst: Arc<dyn ramp::am::SegmentMemory> = VecSegment::new(RMA);
    let rma = |n: u64| {
        for _ in 0..n {
            let op = e0.put(1, region, 0, &src, None, true).unwrap();
            assert_eq!(e0.wait_op(op).unwrap(), 0);
            let op = e0.get(1, region, 0, dst.clone(), true).unwrap();
            assert_eq!(e0.wait_op(op).unwrap(), 0);
        }
    };
    rma(50); // warm-up
    LARGE.store(0, Ordering::Relaxed);
    COUNTING.store(true, Ordering::Relaxed);
    let n = 200;
    rma(n);
    COUNTING.store(false, Ordering::Relaxed);
    let large = LARGE.load(Ordering::Relaxed);
    eprintln!(
        "{n} puts and gets of {RMA} bytes in steady state: {large} allocations of 4 KiB or more"
    );
    // 4 chunks per round (2 put, 2 get): far fewer large allocations than chunks
    assert!(
        large * 20 < 4 * n,
        "{large} large allocations for {} chunks: remote memory buffers are not reused",
        4 * n
    );
}
