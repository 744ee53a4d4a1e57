//! Puts and gets to regions ramp allocated (`Endpoint::alloc_region`,
//! `am/rma_shared.rs`) between real processes on this host: the target
//! hands the region's file over, the initiator maps it and copies with
//! memcpy. Contents, bounds refused with EBADSEGOFF without touching the
//! memory, a read-only region that cannot be written, a deregistration
//! racing a stream of puts, and the owner killed with -9.
//!
//! The target is this test binary again, run with `RAMP_SHARED_CHILD` set
//! and only `child` selected.

mod common;

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ramp::am::{
    self, handler, BundleMode, Endpoint, Message, VecSegment, REGION_READ, REGION_WRITE,
};
use ramp::error::ReturnStatus;

const TAG: u64 = 0x5ea7ed;
const REGION: usize = 4 << 20;
const RO_LEN: usize = 1 << 20;
const BAD_SEG: u8 = ReturnStatus::BadSegOff as u8;
/// Handlers of the target: deregister the read-write region (replies 31),
/// hash the read-write region's memory (replies 31 with the hash).
const H_DEREGISTER: u8 = 20;
const H_HASH: u8 = 21;
/// Handler of the target: changes its tag (replies 31).
const H_RETAG: u8 = 22;
const H_ANSWER: u8 = 31;

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The target: an allocated read-write region and a read-only one holding
/// `pattern(RO_LEN, 77)`, polled until stdin closes.
#[test]
fn child() {
    if std::env::var("RAMP_SHARED_CHILD").is_err() {
        return;
    }
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e = am::allocate_endpoint(&b).unwrap();
    e.set_tag(TAG);
    let (r_rw, rw_base, rw_len) = e.alloc_region(REGION, REGION_READ | REGION_WRITE).unwrap();
    assert_eq!(rw_len, REGION);
    let (r_ro, ro_base, _) = e.alloc_region(RO_LEN, REGION_READ).unwrap();
    let ro = common::pattern(RO_LEN, 77);
    // SAFETY: alloc_region returned RO_LEN writable bytes at ro_base,
    // ours until deregistered (never, here).
    unsafe { std::ptr::copy_nonoverlapping(ro.as_ptr(), ro_base as *mut u8, RO_LEN) };
    let ep = Arc::downgrade(&e);
    let live = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let l = live.clone();
    e.set_handler(
        H_DEREGISTER,
        handler(move |h| {
            ep.upgrade().unwrap().deregister_region(r_rw).unwrap();
            l.store(false, Ordering::SeqCst);
            am::reply(h.token, &Message::short(H_ANSWER, &[0])).unwrap();
        }),
    );
    e.set_handler(
        H_HASH,
        handler(move |h| {
            assert!(live.load(Ordering::SeqCst), "hash of a freed region");
            // SAFETY: the region's REGION bytes, alive (checked above);
            // peers may write them meanwhile (the test does not).
            let m = unsafe { std::slice::from_raw_parts(rw_base as *const u8, REGION) };
            am::reply(h.token, &Message::short(H_ANSWER, &[common::hash(m)])).unwrap();
        }),
    );
    let ep = Arc::downgrade(&e);
    e.set_handler(
        H_RETAG,
        handler(move |h| {
            ep.upgrade().unwrap().set_tag(TAG + 1);
            am::reply(h.token, &Message::short(H_ANSWER, &[0])).unwrap();
        }),
    );
    common::serve_parent(
        &b,
        &e,
        "RAMP_SHARED_PARENT",
        TAG,
        &format!(" {r_rw} {r_ro}"),
    );
}

struct Peer {
    child: common::ChildGuard,
    b: Arc<am::Bundle>,
    e: Arc<Endpoint>,
    rw: u32,
    ro: u32,
    answer: Arc<AtomicU64>,
}

/// This process's endpoint and a target process, with the read-write
/// region (and, `ro`, the read-only one) mapped.
fn peer(ro: bool) -> Peer {
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e = am::allocate_endpoint(&b).unwrap();
    e.set_tag(TAG);
    let answer = Arc::new(AtomicU64::new(u64::MAX));
    let a = answer.clone();
    e.set_handler(
        H_ANSWER,
        handler(move |h| a.store(h.args[0] as u64, Ordering::SeqCst)),
    );
    let (child, lines, rest) = common::spawn_announced(
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "child", "--nocapture", "--test-threads=1"])
            .env("RAMP_SHARED_CHILD", "1")
            .env("RAMP_TRANSPORT", "shm")
            .env("RAMP_SHARED_PARENT", common::name_hex(&e.name()))
            .stdin(Stdio::piped()),
    );
    std::thread::spawn(move || lines.for_each(drop));
    let v: Vec<&str> = rest.split_whitespace().collect();
    let (name, rw, r_ro) = (
        common::parse_name_hex(v[0]),
        v[1].parse::<u32>().unwrap(),
        v[2].parse::<u32>().unwrap(),
    );
    e.map(1, name, TAG).unwrap();
    e.set_expected_resources(1, 8).unwrap();
    let p = Peer {
        child: common::ChildGuard(child),
        b,
        e,
        rw,
        ro: r_ro,
        answer,
    };
    // small puts (gets from the read-only region) until the ring is up
    // and the region files came and are mapped
    let want = if ro { 2 } else { 1 };
    common::waiting_for("the target's regions to be mapped");
    while p.e.rma_shared_counts()[1] < want {
        assert_eq!(p.put(p.rw, 0, &[0u8; 8]), 0);
        if ro {
            assert_eq!(p.get(p.ro, 0, 8).0, 0);
        }
        p.b.wait_for_activity(1);
    }
    p
}

impl Peer {
    fn put(&self, region: u32, off: u64, data: &[u8]) -> u8 {
        let op = self.e.put(1, region, off, data, None, true).unwrap();
        self.e.wait_op(op).unwrap()
    }

    fn get(&self, region: u32, off: u64, n: usize) -> (u8, Vec<u8>) {
        let dst = VecSegment::new(n);
        let op = self.e.get(1, region, off, dst.clone(), true).unwrap();
        (self.e.wait_op(op).unwrap(), dst.snapshot())
    }

    /// Sends request `h` and waits for its answer.
    fn ask(&self, h: u8) -> u64 {
        self.answer.store(u64::MAX, Ordering::SeqCst);
        self.e.request(1, &Message::short(h, &[]), false).unwrap();
        while self.answer.load(Ordering::SeqCst) == u64::MAX {
            self.b.poll().unwrap();
        }
        self.answer.load(Ordering::SeqCst)
    }
}

fn is_child() -> bool {
    std::env::var("RAMP_SHARED_CHILD").is_ok()
}

#[test]
fn puts_and_gets_through_the_mapping_are_intact_and_seen_by_the_owner() {
    if is_child() {
        return;
    }
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _w = common::watchdog("rma_shared::contents", Duration::from_secs(300));
    let p = peer(false);
    let done0 = p.e.rma_shared_counts()[0];
    let mut mem = vec![0u8; REGION];
    let sizes = [8usize, 4096 + 3, 1 << 20, (3 << 20) + 7];
    for (k, &n) in sizes.iter().enumerate() {
        let off = 5 + 3 * k;
        let data = common::pattern(n, k as u32 + 1);
        assert_eq!(p.put(p.rw, off as u64, &data), 0, "put of {n}");
        mem[off..off + n].copy_from_slice(&data);
        let (s, got) = p.get(p.rw, off as u64, n);
        assert_eq!(s, 0, "get of {n}");
        assert!(got == data, "get of {n} bytes differs");
    }
    // a put with a notification word: the word after the bytes
    let data = common::pattern(1 << 16, 42);
    let op =
        p.e.put(1, p.rw, 64, &data, Some((8, 0xfeed)), true)
            .unwrap();
    assert_eq!(p.e.wait_op(op).unwrap(), 0);
    mem[64..64 + data.len()].copy_from_slice(&data);
    mem[8..12].copy_from_slice(&0xfeedu32.to_ne_bytes());
    // a handle-less put: done when the call returns, the fence agrees
    assert_eq!(p.e.put(1, p.rw, 4096, &data, None, false).unwrap(), 0);
    mem[4096..4096 + data.len()].copy_from_slice(&data);
    p.e.fence().unwrap();
    let done = p.e.rma_shared_counts()[0] - done0;
    assert_eq!(done, 2 * sizes.len() as u64 + 2, "all through the mapping");
    // the owner's memory holds every byte (read by the owner itself; the
    // request goes after the puts: they are there before its handler)
    assert_eq!(p.ask(H_HASH) as u32, common::hash(&mem));
}

#[test]
fn out_of_bounds_and_read_only_are_refused_without_touching_memory() {
    if is_child() {
        return;
    }
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _w = common::watchdog("rma_shared::bounds", Duration::from_secs(300));
    let p = peer(true);
    let before = p.ask(H_HASH) as u32;
    let data = common::pattern(1 << 20, 3);
    let c0 = p.e.rma_direct_counts();
    assert_eq!(p.put(p.rw, (REGION - (1 << 20) + 1) as u64, &data), BAD_SEG);
    assert_eq!(p.put(p.rw, u64::MAX / 2, &data), BAD_SEG);
    let op =
        p.e.put(1, p.rw, 0, &data, Some((REGION as u64 - 2, 1)), true);
    assert_eq!(p.e.wait_op(op.unwrap()).unwrap(), BAD_SEG, "flag outside");
    assert_eq!(p.get(p.rw, (REGION - 100) as u64, 1 << 20).0, BAD_SEG);
    // the read-only region: its mapping cannot be written, the put is
    // refused; gets through the mapping see the owner's bytes
    assert_eq!(p.put(p.ro, 0, &data), BAD_SEG, "a read-only region");
    let (s, got) = p.get(p.ro, 0, RO_LEN);
    assert_eq!(s, 0);
    assert!(got == common::pattern(RO_LEN, 77));
    assert_eq!(p.e.rma_direct_counts(), c0, "refused here, nothing sent");
    assert_eq!(p.ask(H_HASH) as u32, before, "nothing written");
}

#[test]
fn a_deregistration_racing_a_stream_of_puts_refuses_every_later_one() {
    if is_child() {
        return;
    }
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _w = common::watchdog("rma_shared::deregister", Duration::from_secs(300));
    let p = peer(false);
    let n = 1 << 20;
    let done0 = p.e.rma_shared_counts()[0];
    assert_eq!(p.put(p.rw, 0, &common::pattern(n, 0)), 0);
    assert_eq!(p.e.rma_shared_counts()[0], done0 + 1, "through the mapping");
    p.answer.store(u64::MAX, Ordering::SeqCst);
    p.e.request(1, &Message::short(H_DEREGISTER, &[]), false)
        .unwrap();
    let mut statuses = Vec::new();
    // the index of the first put issued once the deregistration's answer
    // was in (its handler had returned)
    let mut after = None;
    for k in 1..=20_000u32 {
        if after.is_none() && p.answer.load(Ordering::SeqCst) != u64::MAX {
            after = Some(statuses.len());
        }
        statuses.push(p.put(p.rw, 0, &common::pattern(4096, k)));
        if after.is_some_and(|a| statuses.len() > a + 20) {
            break;
        }
    }
    let after = after.expect("the deregistration answered");
    let first_bad = statuses
        .iter()
        .position(|&s| s != 0)
        .expect("refused at last");
    assert!(first_bad <= after, "a put after deregistration succeeded");
    assert!(
        statuses[first_bad..].iter().all(|&s| s == BAD_SEG),
        "{statuses:?}"
    );
}

#[test]
fn a_new_tag_at_the_owner_stops_puts_and_gets_through_old_mappings() {
    if is_child() {
        return;
    }
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _w = common::watchdog("rma_shared::retag", Duration::from_secs(300));
    let p = peer(false);
    let data = common::pattern(1 << 20, 8);
    let done0 = p.e.rma_shared_counts()[0];
    assert_eq!(p.put(p.rw, 0, &data), 0);
    assert_eq!(p.e.rma_shared_counts()[0], done0 + 1, "through the mapping");
    p.ask(H_RETAG);
    let bad_tag = ReturnStatus::BadTag as u8;
    assert_eq!(p.put(p.rw, 0, &common::pattern(1 << 20, 9)), bad_tag);
    assert_eq!(p.get(p.rw, 0, 1 << 20).0, bad_tag);
    assert_eq!(
        p.e.rma_shared_counts()[0],
        done0 + 1,
        "not through the mapping"
    );
}

#[test]
fn the_owner_killed_does_not_harm_the_initiator() {
    if is_child() {
        return;
    }
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _w = common::watchdog("rma_shared::kill", Duration::from_secs(300));
    let mut p = peer(false);
    let data = common::pattern(1 << 20, 5);
    assert_eq!(p.put(p.rw, 0, &data), 0);
    assert_eq!(p.e.rma_shared_counts()[3], 1, "mapped");
    p.child.kill().unwrap();
    p.child.wait().unwrap();
    // the mapping stays memory until the ring's check drops it: a put
    // meanwhile lands in the dead file, never a fault here
    let _ = p.e.put(1, p.rw, 0, &data, None, false);
    common::waiting_for("the dead peer's ring to be dropped");
    while p.e.ring_ready(1) {
        p.b.poll().unwrap();
        p.b.wait_for_activity(5);
    }
    let done = p.e.rma_shared_counts()[0];
    // the dead peer's mapping is dropped without any operation to it
    common::waiting_for("the dead peer's mapping to be dropped");
    while p.e.rma_shared_counts()[3] != 0 {
        p.b.poll().unwrap();
        p.b.wait_for_activity(5);
    }
    // small: a chunk that waits for no window
    let op = p.e.put(1, p.rw, 0, &data[..8], None, true).unwrap();
    assert_eq!(p.e.rma_shared_counts()[0], done, "not through the mapping");
    // fails by the peer timeout (or later): not waited for here
    let _ = p.e.test_op(op);
}
