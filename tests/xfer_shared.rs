//! Long requests into a segment ramp allocated (`Endpoint::alloc_segment`,
//! `am/xfer_shared.rs`) between real processes over shared memory: once the
//! sender has the segment mapped, an Xfer is one memcpy by the sender and a
//! request carrying (n, the segment's state); the bytes arrive whole and the
//! handler runs once; past the segment nothing is written (refused); a
//! segment replaced while Xfers go: each either ran its handler on its own
//! bytes or was refused with EBADSEGOFF, and the new segment holds no byte
//! of a refused one; the target killed with -9 does not harm the sender.
//!
//! The target is this test binary again, run with `RAMP_XSEG_CHILD` set and
//! only `child` selected.

mod common;

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ramp::am::{self, handler, BundleMode, Data, Endpoint, Message};
use ramp::error::ReturnStatus;

const TAG: u64 = 0x7fe5;
const SEG: usize = 2 << 20;
const N: usize = 1 << 20;
/// Handlers of the target: an Xfer's (replies [hash of its bytes, runs so
/// far, nbytes]), the whole segment's hash (replies [hash, runs, replacements by
/// `H_REPLACER`]), a new
/// segment (replies [0, 0, 0] once it is in place).
const H_XFER: u8 = 20;
const H_SEG: u8 = 21;
const H_REPLACE: u8 = 22;
/// Starts a thread of the target that replaces its segment args[0] times,
/// one every args[1] us (handlers run under the endpoint's lock: never while
/// one reads the segment).
const H_REPLACER: u8 = 23;
const H_ANSWER: u8 = 31;

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The bytes at `addr`, `len` (memory the endpoint's segment holds while
/// the handler runs).
fn bytes(addr: usize, len: usize) -> &'static [u8] {
    // SAFETY: `addr` and `len` come from the endpoint (its segment, or a
    // long request's place inside it), alive while the handler that reads
    // them runs (this process replaces its segment only inside a handler).
    unsafe { std::slice::from_raw_parts(addr as *const u8, len) }
}

#[test]
fn child() {
    if std::env::var("RAMP_XSEG_CHILD").is_err() {
        return;
    }
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e = am::allocate_endpoint(&b).unwrap();
    e.set_tag(TAG);
    let (_, len) = e.alloc_segment(SEG).unwrap();
    assert_eq!(len, SEG);
    let runs = Arc::new(AtomicU64::new(0));
    // replacements made by H_REPLACER's threads
    let replaced = Arc::new(AtomicU64::new(0));
    let replaced_seen = replaced.clone();
    let r = runs.clone();
    e.set_handler(
        H_XFER,
        handler(move |h| {
            let n = r.fetch_add(1, Ordering::SeqCst) as u32 + 1;
            let Data::Long { addr, len } = h.data else {
                panic!("not a long request");
            };
            let v = common::hash(bytes(addr, len));
            am::reply(h.token, &Message::short(H_ANSWER, &[v, n, len as u32])).unwrap();
        }),
    );
    let ep = e.clone();
    e.set_handler(
        H_SEG,
        handler(move |h| {
            let (base, len) = ep.segment();
            let v = common::hash(bytes(base, len));
            let n = runs.load(Ordering::SeqCst) as u32;
            let k = replaced_seen.load(Ordering::SeqCst) as u32;
            am::reply(h.token, &Message::short(H_ANSWER, &[v, n, k])).unwrap();
        }),
    );
    let ep = e.clone();
    e.set_handler(
        H_REPLACE,
        handler(move |h| {
            ep.alloc_segment(SEG).unwrap();
            am::reply(h.token, &Message::short(H_ANSWER, &[0, 0, 0])).unwrap();
        }),
    );
    let ep = e.clone();
    e.set_handler(
        H_REPLACER,
        handler(move |h| {
            let (ep, n, us) = (ep.clone(), h.args[0], h.args[1]);
            let done = replaced.clone();
            std::thread::spawn(move || {
                for _ in 0..n {
                    std::thread::sleep(Duration::from_micros(us.into()));
                    ep.alloc_segment(SEG).unwrap();
                    done.fetch_add(1, Ordering::SeqCst);
                }
            });
        }),
    );
    common::serve_parent(&b, &e, "RAMP_XSEG_PARENT", TAG, "");
}

struct Peer {
    child: common::ChildGuard,
    b: Arc<am::Bundle>,
    e: Arc<Endpoint>,
    answers: Arc<std::sync::Mutex<Vec<[u32; 3]>>>,
    returned: Arc<std::sync::Mutex<Vec<ReturnStatus>>>,
}

fn peer() -> Peer {
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
    let (child, lines, name) = common::spawn_named(
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "child", "--nocapture", "--test-threads=1"])
            .env("RAMP_XSEG_CHILD", "1")
            .env("RAMP_TRANSPORT", "shm")
            .env("RAMP_XSEG_PARENT", common::name_hex(&e.name()))
            .stdin(Stdio::piped()),
    );
    std::thread::spawn(move || lines.for_each(drop));
    e.map(1, name, TAG).unwrap();
    e.set_expected_resources(1, 8).unwrap();
    let p = Peer {
        child: common::ChildGuard(child),
        b,
        e,
        answers,
        returned,
    };
    common::waiting_for("the ring to the target");
    while !p.e.ring_ready(1) {
        p.ask(&Message::short(H_SEG, &[]));
    }
    p
}

impl Peer {
    /// Sends the long request `m`, then polls until its handler answered
    /// or it came back: (whether it was copied in place, the answers, the
    /// returned statuses).
    fn settle(&self, m: &Message<'_>) -> (bool, Vec<[u32; 3]>, Vec<ReturnStatus>) {
        let placed = self.in_place();
        self.e.request(1, m, false).unwrap();
        let went_in_place = self.in_place() > placed;
        loop {
            self.b.poll().unwrap();
            let a = self.answers.lock().unwrap().clone();
            let r = self.returned.lock().unwrap().clone();
            if a.len() + r.len() >= 1 {
                return (went_in_place, a, r);
            }
        }
    }

    fn ask(&self, m: &Message<'_>) -> [u32; 3] {
        self.answers.lock().unwrap().clear();
        self.e.request(1, m, false).unwrap();
        self.answers(1)[0]
    }

    fn answers(&self, n: usize) -> Vec<[u32; 3]> {
        loop {
            let a = self.answers.lock().unwrap().clone();
            if a.len() >= n {
                return a;
            }
            self.b.poll().unwrap();
        }
    }

    /// Xfers sent in place so far.
    fn in_place(&self) -> u64 {
        self.e.rma_shared_counts()[0]
    }

    /// Sends Xfers of `data` at `off` until one goes in place (the first
    /// asks for the segment's file and goes the usual way); each must run
    /// its handler once on its bytes.
    fn until_mapped(&self, data: &[u8], off: u64) {
        common::waiting_for("the target's segment to be mapped");
        loop {
            let before = self.in_place();
            let a = self.ask(&Message::long(H_XFER, &[], data, off));
            assert_eq!((a[0], a[2]), (common::hash(data), data.len() as u32));
            if self.in_place() > before {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
fn xfers_into_an_allocated_segment_land_whole_and_run_once() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _w = common::watchdog(
        "xfer_shared::xfers_into_an_allocated_segment_land_whole_and_run_once",
        Duration::from_secs(300),
    );
    let p = peer();
    let data = common::pattern(N, 3);
    p.until_mapped(&data, 0);
    let runs0 = p.ask(&Message::short(H_SEG, &[]))[1];
    // odd sizes and offsets, each in place, each handler once on its bytes
    let mut seg = vec![0u8; SEG];
    seg[..N].copy_from_slice(&data);
    let mut runs = runs0;
    for (i, (off, n)) in [(1usize, N), (4093, 16 << 10), (SEG - N, N), (777, 100_003)]
        .into_iter()
        .enumerate()
    {
        let d = common::pattern(n, 10 + i as u32);
        let before = p.in_place();
        let a = p.ask(&Message::long(H_XFER, &[], &d, off as u64));
        runs += 1;
        assert_eq!(a, [common::hash(&d), runs, n as u32], "Xfer {i}");
        assert_eq!(p.in_place(), before + 1, "Xfer {i} went in place");
        seg[off..off + n].copy_from_slice(&d);
    }
    // a stream of them, several queued at once (non-blocking: they wait
    // for each other's answers)
    p.answers.lock().unwrap().clear();
    let d = common::pattern(N, 99);
    let mut sent = 0;
    while sent < 20 {
        match p.e.request(1, &Message::long(H_XFER, &[], &d, 0), true) {
            Ok(()) => sent += 1,
            Err(_) => p.b.poll().unwrap(),
        }
    }
    let a = p.answers(20);
    for (k, x) in a.iter().enumerate() {
        assert_eq!(x[0], common::hash(&d), "stream {k}");
        assert_eq!(x[1], runs + 1 + k as u32, "each ran once, in order");
    }
    seg[..N].copy_from_slice(&d);
    let s = p.ask(&Message::short(H_SEG, &[]));
    assert_eq!(s[..2], [common::hash(&seg), runs + 20], "the segment");
    assert!(p.returned.lock().unwrap().is_empty());
}

#[test]
fn an_xfer_lands_after_the_handlers_of_earlier_requests_ran() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _w = common::watchdog(
        "xfer_shared::an_xfer_lands_after_the_handlers_of_earlier_requests_ran",
        Duration::from_secs(300),
    );
    let p = peer();
    let data = common::pattern(N, 13);
    p.until_mapped(&data, 0);
    let before = p.ask(&Message::short(H_SEG, &[]));
    let placed = p.in_place();
    // the segment's hash asked first, then an Xfer over the same bytes:
    // the first handler sees the segment as it was (the Xfer's copy waits
    // for its answer)
    let d = common::pattern(N, 14);
    p.answers.lock().unwrap().clear();
    p.e.request(1, &Message::short(H_SEG, &[]), false).unwrap();
    p.e.request(1, &Message::long(H_XFER, &[], &d, 0), false)
        .unwrap();
    let a = p.answers(2);
    assert_eq!(a[0], before, "the earlier handler saw the Xfer's bytes");
    assert_eq!(a[1][0], common::hash(&d));
    assert_eq!(p.in_place(), placed + 1, "in place");
    // the non-blocking form says InUse meanwhile instead of copying
    p.e.request(1, &Message::short(H_SEG, &[]), false).unwrap();
    let r = p.e.request(1, &Message::long(H_XFER, &[], &d, 0), true);
    assert!(
        matches!(r, Err(ramp::error::Error::InUse(_))),
        "AsyncM behind a request: {r:?}"
    );
    assert_eq!(p.in_place(), placed + 1);
}

#[test]
fn an_xfer_past_the_segment_is_refused_with_nothing_written() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _w = common::watchdog(
        "xfer_shared::an_xfer_past_the_segment_is_refused_with_nothing_written",
        Duration::from_secs(300),
    );
    let p = peer();
    let data = common::pattern(N, 5);
    p.until_mapped(&data, 0);
    let before = p.ask(&Message::short(H_SEG, &[]));
    let placed = p.in_place();
    for off in [(SEG - N + 1) as u64, SEG as u64, u64::MAX - 10] {
        p.returned.lock().unwrap().clear();
        p.e.request(1, &Message::long(H_XFER, &[], &data, off), false)
            .unwrap();
        while p.returned.lock().unwrap().is_empty() {
            p.b.poll().unwrap();
        }
        assert_eq!(
            *p.returned.lock().unwrap(),
            [ReturnStatus::BadLength],
            "offset {off}"
        );
    }
    assert_eq!(p.in_place(), placed, "none went in place");
    // inside, in place, to a handler the target does not have: returned
    // once, no handler run (the bytes are in its segment: as a chunked
    // one's would be, nothing the target's program is told of)
    p.returned.lock().unwrap().clear();
    let small = common::pattern(N, 6);
    p.e.request(1, &Message::long(H_ANSWER + 50, &[], &small, 0), false)
        .unwrap();
    assert_eq!(p.in_place(), placed + 1, "in place");
    while p.returned.lock().unwrap().is_empty() {
        p.b.poll().unwrap();
    }
    assert_eq!(*p.returned.lock().unwrap(), [ReturnStatus::BadHandler]);
    let before = [before[0], before[1], 0];
    let mut seg = vec![0u8; SEG];
    seg[..N].copy_from_slice(&data);
    assert_eq!(before[0], common::hash(&seg), "the segment before");
    seg[..N].copy_from_slice(&small);
    let before = [common::hash(&seg), before[1], 0];
    let after = p.ask(&Message::short(H_SEG, &[]));
    assert_eq!(after, before, "nothing written, no handler ran");
}

#[test]
fn a_segment_replaced_while_xfers_go_takes_no_byte_of_a_refused_one() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _w = common::watchdog(
        "xfer_shared::a_segment_replaced_while_xfers_go_takes_no_byte_of_a_refused_one",
        Duration::from_secs(300),
    );
    let p = peer();
    let zero = common::hash(&vec![0u8; SEG]);
    let data = common::pattern(N, 7);
    let mut outcomes = [0u32; 3]; // [ran in place, ran the usual way, refused]
    let mut replaced = p.ask(&Message::short(H_SEG, &[]))[2];
    for i in 0..40u32 {
        p.until_mapped(&data, 0);
        let d = common::pattern(N, 100 + i);
        // a thread of the target replaces the segment 0..350 us after
        // this is answered, while the Xfer is copied (1 MiB): the copy
        // lands in the old segment before (then the handler runs there, or
        // the request, naming it, is refused) or sees the revocation and
        // goes the usual way into the new one
        p.answers.lock().unwrap().clear();
        p.returned.lock().unwrap().clear();
        p.e.request(1, &Message::short(H_REPLACER, &[1, (i % 8) * 50]), false)
            .unwrap();
        let (went_in_place, ran, refused) = p.settle(&Message::long(H_XFER, &[], &d, 0));
        // the new segment, once the replacement returned
        replaced += 1;
        common::waiting_for("the segment's replacement");
        let seg = loop {
            let s = p.ask(&Message::short(H_SEG, &[]));
            if s[2] == replaced {
                break s[0];
            }
        };
        let mut with_d = vec![0u8; SEG];
        with_d[..N].copy_from_slice(&d);
        if refused.is_empty() {
            assert_eq!(ran[0][0], common::hash(&d), "round {i}: its bytes");
            // ran before the replacement (the new one untouched) or after
            // it, the usual way, into the new one
            assert!(
                seg == zero || (seg == common::hash(&with_d) && !went_in_place),
                "round {i}: the new segment"
            );
            outcomes[usize::from(!went_in_place)] += 1;
        } else {
            assert_eq!(refused, [ReturnStatus::BadSegOff], "round {i}");
            assert!(went_in_place, "only one copied in place is refused");
            assert!(ran.is_empty(), "round {i}: a handler ran");
            assert_eq!(seg, zero, "round {i}: nothing in the new segment");
            outcomes[2] += 1;
        }
    }
    eprintln!("in place / usual way / refused: {outcomes:?}");
}

#[test]
fn a_segment_replaced_by_another_thread_while_xfers_stream() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _w = common::watchdog(
        "xfer_shared::a_segment_replaced_by_another_thread_while_xfers_stream",
        Duration::from_secs(300),
    );
    let p = peer();
    let data = common::pattern(N, 8);
    p.until_mapped(&data, 0);
    p.e.request(1, &Message::short(H_REPLACER, &[100, 1000]), false)
        .unwrap();
    // each Xfer either ran its handler once on its own bytes, or (copied
    // into a segment replaced meanwhile) came back EBADSEGOFF; never a
    // handler on other bytes, never both
    let mut outcomes = [0u32; 3]; // [ran in place, ran the usual way, refused]
    let mut runs = p.ask(&Message::short(H_SEG, &[]))[1];
    for i in 0..1000u32 {
        let d = common::pattern(64 << 10, 300 + i);
        p.answers.lock().unwrap().clear();
        p.returned.lock().unwrap().clear();
        let (went_in_place, ran, refused) = p.settle(&Message::long(H_XFER, &[], &d, 4096));
        if let [a] = ran[..] {
            assert!(refused.is_empty(), "Xfer {i}: ran and refused");
            runs += 1;
            assert_eq!(a, [common::hash(&d), runs, d.len() as u32], "Xfer {i}");
            outcomes[usize::from(!went_in_place)] += 1;
        } else {
            assert_eq!(refused, [ReturnStatus::BadSegOff], "Xfer {i}");
            assert!(went_in_place, "Xfer {i}: refused, not in place");
            outcomes[2] += 1;
        }
    }
    eprintln!(
        "in place / usual way / refused: {outcomes:?}, counts {:?}",
        p.e.rma_shared_counts()
    );
    assert_eq!(p.ask(&Message::short(H_SEG, &[]))[1], runs, "no late run");
    assert!(p.returned.lock().unwrap().is_empty(), "no late refusal");
}

#[test]
fn the_target_killed_does_not_harm_the_sender() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _w = common::watchdog("xfer_shared::kill", Duration::from_secs(300));
    let mut p = peer();
    let data = common::pattern(N, 9);
    p.until_mapped(&data, 0);
    assert_eq!(p.e.rma_shared_counts()[3], 1, "mapped");
    p.child.kill().unwrap();
    p.child.wait().unwrap();
    // the mapping is still memory (the dead file): a copy into it never
    // faults; the request is never answered
    let _ = p.e.request(1, &Message::long(H_XFER, &[], &data, 0), true);
    common::waiting_for("the dead target's ring and mapping to be dropped");
    while p.e.ring_ready(1) || p.e.rma_shared_counts()[3] != 0 {
        p.b.poll().unwrap();
        p.b.wait_for_activity(5);
    }
    let placed = p.in_place();
    let _ = p.e.request(1, &Message::long(H_XFER, &[], &data, 0), true);
    assert_eq!(p.in_place(), placed, "not through the mapping");
}
