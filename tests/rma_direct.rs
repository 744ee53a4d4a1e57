//! Large puts and gets between real processes over shared memory, copied
//! directly by the target (`process_vm_readv`/`writev`, `am/rma_direct.rs`):
//! contents of odd sizes and offsets, bounds and rights refused with
//! EBADSEGOFF, a deregistration racing a stream of puts, and the fallback
//! to chunks when the kernel refuses the copy (this process made
//! non-dumpable, the target without CAP_SYS_PTRACE).
//!
//! The target is this test binary again, run with `RAMP_DIRECT_CHILD` set
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

const TAG: u64 = 0xd1ec7;
const REGION: usize = 4 << 20;
const BAD_SEG: u8 = ReturnStatus::BadSegOff as u8;
/// Handlers of the target: deregister the read-write region (replies 31),
/// hash the region's memory (replies 31 with the hash).
const H_DEREGISTER: u8 = 20;
const H_HASH: u8 = 21;
const H_ANSWER: u8 = 31;

/// Tests change this process's dumpability and count its copies: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The target: a read-write and a read-only region, polled until stdin
/// closes.
#[test]
fn child() {
    if std::env::var("RAMP_DIRECT_CHILD").is_err() {
        return;
    }
    if std::env::var("RAMP_DIRECT_NO_PTRACE").is_ok() {
        common::drop_ptrace_capability();
    }
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e = am::allocate_endpoint(&b).unwrap();
    e.set_tag(TAG);
    let rw = VecSegment::new(REGION);
    let ro = VecSegment::new(1 << 20);
    let r_rw = e
        .register_region(rw.clone(), REGION_READ | REGION_WRITE)
        .unwrap();
    let r_ro = e.register_region(ro, REGION_READ).unwrap();
    let ep = Arc::downgrade(&e);
    e.set_handler(
        H_DEREGISTER,
        handler(move |h| {
            ep.upgrade().unwrap().deregister_region(r_rw).unwrap();
            am::reply(h.token, &Message::short(H_ANSWER, &[0])).unwrap();
        }),
    );
    e.set_handler(
        H_HASH,
        handler(move |h| {
            let v = common::hash(&rw.snapshot());
            am::reply(h.token, &Message::short(H_ANSWER, &[v])).unwrap();
        }),
    );
    common::serve_parent(
        &b,
        &e,
        "RAMP_DIRECT_PARENT",
        TAG,
        &format!(" {r_rw} {r_ro}"),
    );
}

struct Peer {
    _child: common::ChildGuard,
    b: Arc<am::Bundle>,
    e: Arc<Endpoint>,
    rw: u32,
    ro: u32,
    answer: Arc<AtomicU64>,
}

/// This process's endpoint (over shared memory) and a target process.
fn peer() -> Peer {
    peer_with(false)
}

/// With `no_ptrace`, a target the kernel refuses the copies of.
fn peer_with(no_ptrace: bool) -> Peer {
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
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env("RAMP_DIRECT_CHILD", "1")
        .env("RAMP_TRANSPORT", "shm")
        .env("RAMP_DIRECT_PARENT", common::name_hex(&e.name()))
        .env_remove("RAMP_DIRECT_NO_PTRACE")
        .stdin(Stdio::piped());
    if no_ptrace {
        cmd.env("RAMP_DIRECT_NO_PTRACE", "1");
    }
    let (child, lines, rest) = common::spawn_announced(&mut cmd);
    std::thread::spawn(move || lines.for_each(drop));
    let v: Vec<&str> = rest.split_whitespace().collect();
    let (name, rw, ro) = (
        common::parse_name_hex(v[0]),
        v[1].parse::<u32>().unwrap(),
        v[2].parse::<u32>().unwrap(),
    );
    e.map(1, name, TAG).unwrap();
    e.set_expected_resources(1, 8).unwrap();
    let p = Peer {
        _child: common::ChildGuard(child),
        b,
        e,
        rw,
        ro,
        answer,
    };
    // the first messages to a peer go by UDP while the shared-memory ring
    // is set up: small (chunked) puts until it is
    common::waiting_for("the ring to the target");
    while !p.e.ring_ready(1) {
        assert_eq!(p.put(p.rw, 0, &[0u8; 8]), 0);
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

    /// Runs `op` (a put or get that returns its status, checking its own
    /// bytes) again until it goes direct: one the target took too late
    /// (its descriptor's `TTL`, which a loaded machine may exceed) fell
    /// back to chunks, with the same outcome. How many fell back.
    fn until_direct(&self, what: &str, op: &mut dyn FnMut()) -> u64 {
        common::waiting_for(what);
        let mut fell = 0;
        loop {
            let [done0, back0, _] = self.e.rma_direct_counts();
            op();
            let [done, back, _] = self.e.rma_direct_counts();
            if done > done0 {
                assert_eq!((done - done0, back - back0), (1, 0));
                return fell;
            }
            assert_eq!(back - back0, 1, "{what}: neither direct nor fallen back");
            fell += 1;
        }
    }

    /// The region's bytes read in chunks below the direct path's threshold.
    fn get_chunked(&self, off: u64, n: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(n);
        for at in (0..n).step_by(60 << 10) {
            let (s, v) = self.get(self.rw, off + at as u64, (n - at).min(60 << 10));
            assert_eq!(s, 0);
            out.extend_from_slice(&v);
        }
        out
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

#[test]
fn large_puts_and_gets_of_odd_sizes_are_copied_directly_and_intact() {
    if std::env::var("RAMP_DIRECT_CHILD").is_ok() {
        return;
    }
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _w = common::watchdog("rma_direct::sizes", Duration::from_secs(300));
    let p = peer();
    let sizes = [64usize << 10, 1 << 20, (1 << 20) + 13, (3 << 20) + 7];
    let mut fell = 0;
    for (k, &n) in sizes.iter().enumerate() {
        let off = 5 + 3 * k as u64;
        let data = common::pattern(n, k as u32 + 1);
        fell += p.until_direct("a direct put", &mut || {
            assert_eq!(p.put(p.rw, off, &data), 0, "put of {n}");
            assert!(p.get_chunked(off, n) == data, "put of {n} bytes differs");
        });
        fell += p.until_direct("a direct get", &mut || {
            let (s, got) = p.get(p.rw, off, n);
            assert_eq!(s, 0, "get of {n}");
            assert!(got == data, "get of {n} bytes differs");
        });
    }
    eprintln!("every size went direct; {fell} fell back before");
    // a put with a handle-less call: returns once done, the fence sees it
    let data = common::pattern(1 << 20, 9);
    assert_eq!(p.e.put(1, p.rw, 0, &data, None, false).unwrap(), 0);
    p.e.fence().unwrap();
    assert!(p.get_chunked(0, 1 << 20) == data);
}

#[test]
fn out_of_bounds_and_without_rights_are_refused_and_write_nothing() {
    if std::env::var("RAMP_DIRECT_CHILD").is_ok() {
        return;
    }
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _w = common::watchdog("rma_direct::bounds", Duration::from_secs(300));
    let p = peer();
    let zeros = vec![0u8; 1 << 20];
    let data = common::pattern(1 << 20, 3);
    // refused, and final: no fall-back to chunks (the refusal comes within
    // the descriptor's TTL + GRACE, 100 ms, after which the initiator
    // would give it up and fall back)
    let refused = |what: &str, status: u8| {
        assert_eq!(status, BAD_SEG, "{what}");
        let [_, back, _] = p.e.rma_direct_counts();
        assert_eq!(back, 0, "{what}: refusals are final, not fall-backs");
    };
    refused(
        "past the end",
        p.put(p.rw, (REGION - (1 << 20) + 1) as u64, &data),
    );
    refused("far past the end", p.put(p.rw, u64::MAX / 2, &data));
    refused("a read-only region", p.put(p.ro, 0, &data));
    refused("no such region", p.put(p.rw + 100, 0, &data));
    refused(
        "a get past the end",
        p.get(p.rw, (REGION - 100) as u64, 1 << 20).0,
    );
    let (s, got) = p.get(p.ro, 0, 1 << 20);
    assert_eq!(s, 0, "a read-only region can be read");
    assert!(got == zeros);
    assert!(
        p.get_chunked(REGION as u64 - (1 << 20), 1 << 20) == zeros,
        "nothing written"
    );
}

#[test]
fn a_deregistration_racing_a_stream_of_puts_stops_every_later_write() {
    if std::env::var("RAMP_DIRECT_CHILD").is_ok() {
        return;
    }
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _w = common::watchdog("rma_direct::deregister", Duration::from_secs(300));
    let p = peer();
    let n = 1 << 20;
    p.until_direct("a direct put", &mut || {
        assert_eq!(p.put(p.rw, 0, &common::pattern(n, 0)), 0);
    });
    // the deregistration runs in the target's handler while puts stream in
    p.answer.store(u64::MAX, Ordering::SeqCst);
    p.e.request(1, &Message::short(H_DEREGISTER, &[]), false)
        .unwrap();
    let mut statuses = Vec::new();
    let mut last_ok = 0;
    for k in 1..=2000u32 {
        let s = p.put(p.rw, 0, &common::pattern(n, k));
        if s == 0 {
            last_ok = k;
        }
        statuses.push(s);
        if s != 0 && p.answer.load(Ordering::SeqCst) != u64::MAX {
            break;
        }
    }
    let first_bad = statuses
        .iter()
        .position(|&s| s != 0)
        .expect("refused at last");
    assert!(
        statuses[first_bad..].iter().all(|&s| s == BAD_SEG),
        "{statuses:?}"
    );
    // the memory holds the last accepted put: nothing was written after
    let h = p.ask(H_HASH) as u32;
    let expect = common::hash(&{
        let mut m = vec![0u8; REGION];
        m[..n].copy_from_slice(&common::pattern(n, last_ok));
        m
    });
    assert_eq!(h, expect, "last accepted put {last_ok}");
}

#[test]
fn refused_by_the_kernel_falls_back_to_chunks() {
    if std::env::var("RAMP_DIRECT_CHILD").is_ok() {
        return;
    }
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _w = common::watchdog("rma_direct::fallback", Duration::from_secs(300));
    let p = peer_with(true);
    // SAFETY: prctl with integer arguments only; undone below.
    assert_eq!(unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) }, 0);
    let [done0, back0, _] = p.e.rma_direct_counts();
    let data = common::pattern((1 << 20) + 5, 7);
    let put = p.put(p.rw, 1, &data);
    let (get, got) = p.get(p.rw, 1, data.len());
    // SAFETY: as above.
    assert_eq!(unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0) }, 0);
    assert_eq!((put, get), (0, 0));
    assert!(got == data, "the fallback's bytes differ");
    let [done, back, _] = p.e.rma_direct_counts();
    assert_eq!((done - done0, back - back0), (0, 2), "both fell back");
}
