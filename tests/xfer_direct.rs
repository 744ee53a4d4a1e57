//! Large long requests (AM_RequestXfer) between real processes over shared
//! memory, copied by the target straight into its segment
//! (`process_vm_readv`, `am/xfer_direct.rs`): the bytes land whole, the
//! handler runs once with (buf, nbytes); one past the segment comes back
//! EBADLENGTH to handler 0 with nothing written; when the kernel refuses
//! the copy, or the target does not take the descriptor in time (`TTL`),
//! it falls back to chunks, still one handler run. Whether a target on a
//! loaded machine takes a descriptor in time is not the tests' to say: an
//! Xfer meant to go direct is sent again until one does (each one that
//! fell back also lands whole and runs once).
//!
//! From `XFER_SPLIT_MIN` bytes the copy is split (`am/rma/xfer_split.rs`):
//! the sender writes the tail while the target reads the head; bytes
//! whole at the boundary and at odd sizes; into a target the kernel
//! refuses our writes to, the target copies it all.
//!
//! The target is this test binary again, run with `RAMP_XFER_CHILD` set
//! and only `child` selected, and `RAMP_XFER_STAGING=0` (it keeps no
//! staging area for us: `am/rma/xfer_staged.rs`).

mod common;

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ramp::am::{
    self, handler, BundleMode, Data, Endpoint, Message, SegmentMemory, VecSegment, XFER_DIRECT_MIN,
    XFER_SPLIT_MIN,
};
use ramp::error::ReturnStatus;

const TAG: u64 = 0x7fe4;
const SEG: usize = 2 << 20;
const N: usize = 1 << 20;
/// Handlers of the target: an Xfer's (replies [hash of its bytes, runs so
/// far, nbytes]), the whole segment's hash (replies [hash, runs]).
const H_XFER: u8 = 20;
const H_SEG: u8 = 21;
/// A request whose handler keeps the target from polling until the test
/// releases it (creates the file `RAMP_XFER_RELEASE` names).
const H_PAUSE: u8 = 22;
const H_ANSWER: u8 = 31;

/// Tests change this process's dumpability and count its copies: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The target: a segment, polled until stdin closes.
#[test]
fn child() {
    if std::env::var("RAMP_XFER_CHILD").is_err() {
        return;
    }
    if std::env::var("RAMP_XFER_NO_PTRACE").is_ok() {
        common::drop_ptrace_capability();
    }
    if std::env::var("RAMP_XFER_NOT_DUMPABLE").is_ok() {
        // SAFETY: prctl on this process.
        assert_eq!(unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) }, 0);
    }
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e = am::allocate_endpoint(&b).unwrap();
    e.set_tag(TAG);
    let seg = VecSegment::new(SEG);
    e.set_segment(Some(seg.clone()));
    let runs = Arc::new(AtomicU64::new(0));
    let (s, r) = (seg.clone(), runs.clone());
    e.set_handler(
        H_XFER,
        handler(move |h| {
            let n = r.fetch_add(1, Ordering::SeqCst) as u32 + 1;
            let Data::Long { addr, len } = h.data else {
                panic!("not a long request");
            };
            let off = addr - s.base();
            let v = common::hash(&s.snapshot()[off..off + len]);
            am::reply(h.token, &Message::short(H_ANSWER, &[v, n, len as u32])).unwrap();
        }),
    );
    e.set_handler(
        H_SEG,
        handler(move |h| {
            let v = common::hash(&seg.snapshot());
            let n = runs.load(Ordering::SeqCst) as u32;
            am::reply(h.token, &Message::short(H_ANSWER, &[v, n, 0])).unwrap();
        }),
    );
    let release = std::env::var("RAMP_XFER_RELEASE").unwrap();
    e.set_handler(
        H_PAUSE,
        handler(move |_| {
            while !std::path::Path::new(&release).exists() {
                std::thread::sleep(Duration::from_millis(1));
            }
        }),
    );
    common::serve_parent(&b, &e, "RAMP_XFER_PARENT", TAG, "");
}

struct Peer {
    _child: common::ChildGuard,
    /// The file whose creation ends the target's `H_PAUSE` handler.
    release: std::path::PathBuf,
    b: Arc<am::Bundle>,
    e: Arc<Endpoint>,
    answers: Arc<std::sync::Mutex<Vec<[u32; 3]>>>,
    returned: Arc<std::sync::Mutex<Vec<ReturnStatus>>>,
}

/// This process's endpoint (over shared memory) and a target process; with
/// `no_ptrace`, one the kernel refuses the copies of.
fn peer(no_ptrace: bool) -> Peer {
    peer_with(no_ptrace, false)
}

/// `peer`; with `not_dumpable`, a target that other processes without
/// CAP_SYS_PTRACE may not write into.
fn peer_with(no_ptrace: bool, not_dumpable: bool) -> Peer {
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e = am::allocate_endpoint(&b).unwrap();
    e.set_tag(TAG);
    let answers = Arc::new(std::sync::Mutex::new(Vec::new()));
    let a = answers.clone();
    e.set_handler(
        H_ANSWER,
        handler(move |h| a.lock().unwrap().push([h.args[0], h.args[1], h.args[2]])),
    );
    let returned = Arc::new(std::sync::Mutex::new(Vec::new()));
    let r = returned.clone();
    e.set_handler(
        0,
        handler(move |h| {
            if let Data::Returned { status, .. } = h.data {
                r.lock().unwrap().push(status);
            }
        }),
    );
    let release = std::env::temp_dir().join(format!("ramp-xfer-release-{}", std::process::id()));
    let _ = std::fs::remove_file(&release);
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env("RAMP_XFER_CHILD", "1")
        .env("RAMP_XFER_RELEASE", &release)
        .env("RAMP_TRANSPORT", "shm")
        // no staging area for us (`xfer_staged.rs`): Xfers of 32-128 KiB
        // go direct here
        .env("RAMP_XFER_STAGING", "0")
        .env("RAMP_XFER_PARENT", common::name_hex(&e.name()))
        .env_remove("RAMP_XFER_NO_PTRACE")
        .env_remove("RAMP_XFER_NOT_DUMPABLE")
        .stdin(Stdio::piped());
    if no_ptrace {
        cmd.env("RAMP_XFER_NO_PTRACE", "1");
    }
    if not_dumpable {
        cmd.env("RAMP_XFER_NOT_DUMPABLE", "1");
    }
    let (child, lines, name) = common::spawn_named(&mut cmd);
    std::thread::spawn(move || lines.for_each(drop));
    e.map(1, name, TAG).unwrap();
    e.set_expected_resources(1, 8).unwrap();
    let p = Peer {
        _child: common::ChildGuard(child),
        release,
        b,
        e,
        answers,
        returned,
    };
    // the first messages to a peer go by UDP while the ring is set up
    common::waiting_for("the ring to the target");
    while !p.e.ring_ready(1) {
        p.ask(&Message::short(H_SEG, &[]), false);
    }
    p
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.release);
    }
}

impl Peer {
    /// Sends `m` and waits for its handler's answer.
    fn ask(&self, m: &Message<'_>, nonblocking: bool) -> [u32; 3] {
        self.answers.lock().unwrap().clear();
        self.e.request(1, m, nonblocking).unwrap();
        self.answers(1)[0]
    }

    /// `ask` for the Xfer `m` (its handler answers [hash, runs so far,
    /// nbytes]) again until one goes direct: one the target took too late
    /// fell back to chunks, its bytes whole, its handler run once. The last
    /// answer, and how many fell back.
    fn ask_until_direct(&self, m: &Message<'_>, nonblocking: bool, data: &[u8]) -> ([u32; 3], u32) {
        common::waiting_for("an Xfer to go direct");
        let mut fell = 0;
        loop {
            let [done0, back0, _] = self.e.rma_direct_counts();
            let runs0 = self.ask(&Message::short(H_SEG, &[]), false)[1];
            let stale0 = self.e.statistics().stale_dropped;
            let a = self.ask(m, nonblocking);
            assert_eq!(
                a,
                [common::hash(data), runs0 + 1, data.len() as u32],
                "bytes, one run, nbytes"
            );
            let [done, back, _] = self.e.rma_direct_counts();
            if done > done0 {
                assert_eq!((done - done0, back - back0), (1, 0));
                // its call returned at the commit, before the target's
                // answer ("copied"), which came before the handler's reply
                // and was let go as known, not dropped as stale
                assert_eq!(self.e.statistics().stale_dropped, stale0, "answer dropped");
                return (a, fell);
            }
            assert_eq!(back - back0, 1, "neither direct nor fallen back");
            fell += 1;
        }
    }

    /// Waits for `n` answers.
    fn answers(&self, n: usize) -> Vec<[u32; 3]> {
        loop {
            let a = self.answers.lock().unwrap().clone();
            if a.len() >= n {
                return a;
            }
            self.b.poll().unwrap();
        }
    }
}

#[test]
fn a_large_xfer_goes_direct_lands_whole_and_runs_its_handler_once() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _w = common::watchdog("xfer_direct::direct", Duration::from_secs(300));
    let p = peer(false);
    let data = common::pattern(N, 3);
    let off = 4096 + 3;
    let (_, fell) = p.ask_until_direct(&Message::long(H_XFER, &[], &data, off), false, &data);
    // one byte shorter than the smallest direct one goes by the ring:
    // neither copied direct nor fallen back
    let below = common::pattern(XFER_DIRECT_MIN as usize - 1, 11);
    let counts0 = p.e.rma_direct_counts();
    let b = p.ask(&Message::long(H_XFER, &[], &below, 1), false);
    assert_eq!((b[0], b[2]), (common::hash(&below), below.len() as u32));
    assert_eq!(p.e.rma_direct_counts(), counts0, "not direct");
    // the smallest direct one, by the non-blocking form (a credit is free)
    let small = common::pattern(XFER_DIRECT_MIN as usize, 9);
    let (a, fell_small) = p.ask_until_direct(&Message::long(H_XFER, &[], &small, 1), true, &small);
    eprintln!("{fell} and {fell_small} fell back before one went direct");
    // the segment holds both, and nothing else
    let mut seg = vec![0u8; SEG];
    seg[off as usize..off as usize + N].copy_from_slice(&data);
    seg[1..1 + small.len()].copy_from_slice(&small);
    let s = p.ask(&Message::short(H_SEG, &[]), false);
    assert_eq!(s[..2], [common::hash(&seg), a[1]]);
}

#[test]
fn an_xfer_past_the_segment_is_refused_with_nothing_written() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _w = common::watchdog("xfer_direct::bounds", Duration::from_secs(300));
    let p = peer(false);
    let before = p.ask(&Message::short(H_SEG, &[]), false);
    let [done0, back0, _] = p.e.rma_direct_counts();
    let data = common::pattern(N, 5);
    for off in [(SEG - N + 1) as u64, SEG as u64] {
        p.returned.lock().unwrap().clear();
        p.e.request(1, &Message::long(H_XFER, &[], &data, off), false)
            .unwrap();
        // a direct one returns once the refusal is in: handler 0 ran
        assert_eq!(
            *p.returned.lock().unwrap(),
            [ReturnStatus::BadLength],
            "offset {off}"
        );
    }
    // an offset + length that wraps goes in chunks, refused the same way
    p.returned.lock().unwrap().clear();
    p.e.request(1, &Message::long(H_XFER, &[], &data, u64::MAX - 10), false)
        .unwrap();
    while p.returned.lock().unwrap().is_empty() {
        p.b.poll().unwrap();
    }
    assert_eq!(*p.returned.lock().unwrap(), [ReturnStatus::BadLength]);
    let after = p.ask(&Message::short(H_SEG, &[]), false);
    assert_eq!(after, before, "nothing written, no handler ran");
    let [done, back, _] = p.e.rma_direct_counts();
    assert_eq!(
        (done - done0, back - back0),
        (0, 0),
        "refused, not fallen back"
    );
}

#[test]
fn an_xfer_the_kernel_refuses_to_copy_falls_back_to_chunks() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _w = common::watchdog("xfer_direct::refused", Duration::from_secs(300));
    let p = peer(true);
    // SAFETY: prctl on this process; restored below.
    assert_eq!(unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) }, 0);
    let [done0, back0, _] = p.e.rma_direct_counts();
    let data = common::pattern(N, 11);
    let a = p.ask(&Message::long(H_XFER, &[], &data, 7), false);
    // SAFETY: as above.
    assert_eq!(unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0) }, 0);
    assert_eq!(
        a,
        [common::hash(&data), 1, N as u32],
        "bytes, one run, nbytes"
    );
    let [done, back, _] = p.e.rma_direct_counts();
    assert_eq!((done - done0, back - back0), (0, 1), "fell back");
}

#[test]
fn an_xfer_lands_after_the_handlers_of_earlier_requests_ran() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _w = common::watchdog("xfer_direct::order", Duration::from_secs(300));
    let p = peer(false);
    // (again, other bytes each time, until the Xfer goes direct: one the
    // target took too late fell back to chunks, in order all the same)
    common::waiting_for("an Xfer behind a request to go direct");
    for k in 0.. {
        let before = p.ask(&Message::short(H_SEG, &[]), false);
        let [done0, _, _] = p.e.rma_direct_counts();
        let data = common::pattern(N, 13 + k);
        // the segment's hash asked first, then the Xfer over the same
        // bytes: the first handler sees the segment as it was (as with
        // chunks)
        p.answers.lock().unwrap().clear();
        p.e.request(1, &Message::short(H_SEG, &[]), false).unwrap();
        p.e.request(1, &Message::long(H_XFER, &[], &data, 0), false)
            .unwrap();
        let a = p.answers(2);
        assert_eq!(a[0], before, "the earlier handler saw the Xfer's bytes");
        assert_eq!(a[1][..2], [common::hash(&data), before[1] + 1]);
        if p.e.rma_direct_counts()[0] > done0 {
            break;
        }
    }
}

#[test]
fn an_xfer_to_a_target_that_does_not_poll_is_withdrawn_and_its_handler_runs_once() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _w = common::watchdog("xfer_direct::withdrawn", Duration::from_secs(300));
    let p = peer(false);
    let [done0, back0, _] = p.e.rma_direct_counts();
    // the target sits in a handler until released: the Xfer's descriptor
    // waits past its expiry and grace, the sender withdraws its claim and
    // sends the chunks (only then does its call return); the target,
    // released, finds the descriptor withdrawn (no copy, no handler), then
    // runs the chunks' handler once
    p.answers.lock().unwrap().clear();
    p.e.request(1, &Message::short(H_PAUSE, &[]), false)
        .unwrap();
    let data = common::pattern(N, 17);
    p.e.request(1, &Message::long(H_XFER, &[], &data, 5), false)
        .unwrap();
    let [done, back, _] = p.e.rma_direct_counts();
    assert_eq!((done - done0, back - back0), (0, 1), "withdrawn, fell back");
    std::fs::write(&p.release, b"").unwrap();
    let a = p.answers(1)[0];
    assert_eq!(
        a,
        [common::hash(&data), 1, N as u32],
        "bytes, one run, nbytes"
    );
    // no second run of the handler shows up later
    let a = p.ask(&Message::short(H_SEG, &[]), false);
    assert_eq!(a[1], 1, "the Xfer's handler ran once");
}

/// Sends Xfer `m` of `data` until its copy is split (the sender wrote the
/// tail: it may not have looked while the target held the grant, on a
/// loaded host), each time checking the bytes and the one run; how many
/// went whole first.
fn ask_until_split(p: &Peer, m: &Message<'_>, data: &[u8]) -> u32 {
    let mut whole = 0;
    loop {
        let [w0, r0, _] = p.e.xfer_split_counts();
        p.ask_until_direct(m, false, data);
        let [w, r, _] = p.e.xfer_split_counts();
        assert_eq!(r, r0, "refused");
        if w > w0 {
            assert_eq!(w - w0, 1);
            return whole;
        }
        whole += 1;
    }
}

#[test]
fn a_split_xfer_lands_whole_at_the_boundary_and_at_odd_sizes() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _w = common::watchdog("xfer_direct::split", Duration::from_secs(300));
    let p = peer(false);
    common::waiting_for("an Xfer's copy to be split");
    let mut seg = vec![0u8; SEG];
    // not multiples of a page nor of the split's alignment, at odd offsets
    let split = XFER_SPLIT_MIN as usize;
    for (n, off, seed) in [
        (N - 13, 4099, 23),
        (split, 1, 29),
        (split + 1, SEG - split - 1, 31),
        (3 * split / 2 + 77, 64 + 5, 37),
    ] {
        let data = common::pattern(n, seed);
        let whole = ask_until_split(&p, &Message::long(H_XFER, &[], &data, off as u64), &data);
        eprintln!("{n} bytes at {off}: {whole} went whole first");
        seg[off..off + n].copy_from_slice(&data);
    }
    // the segment holds them all (the last over the others), nothing else
    let s = p.ask(&Message::short(H_SEG, &[]), false);
    assert_eq!(s[0], common::hash(&seg));
    // one below the split's threshold is never split
    let below = common::pattern(split - 1, 41);
    let c0 = p.e.xfer_split_counts();
    for _ in 0..3 {
        p.ask_until_direct(&Message::long(H_XFER, &[], &below, 3), false, &below);
    }
    assert_eq!(p.e.xfer_split_counts(), c0, "split below the threshold");
}

#[test]
fn a_split_the_kernel_refuses_is_copied_whole_by_the_target() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _w = common::watchdog("xfer_direct::split_refused", Duration::from_secs(300));
    // a target we may not write into (not dumpable, and this thread
    // without CAP_SYS_PTRACE: capabilities are per thread), which may
    // read us
    common::drop_ptrace_capability();
    let p = peer_with(false, true);
    common::waiting_for("a split Xfer's tail to be refused");
    let mut k = 0;
    loop {
        let data = common::pattern(N - 7, 43 + k);
        k += 1;
        p.ask_until_direct(&Message::long(H_XFER, &[], &data, 11), false, &data);
        let [w, r, _] = p.e.xfer_split_counts();
        assert_eq!(w, 0, "written into a target that refuses");
        if r > 0 {
            assert_eq!(r, 1);
            break;
        }
    }
    // refused once: no split offered to it again, each one whole
    for k in 0..3 {
        let data = common::pattern(N - 1 - k, 47 + k as u32);
        p.ask_until_direct(&Message::long(H_XFER, &[], &data, 11), false, &data);
    }
    assert_eq!(p.e.xfer_split_counts()[..2], [0, 1]);
}
