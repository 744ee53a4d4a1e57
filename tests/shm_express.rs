//! The express lane between real processes over shared memory
//! (`RAMP_TRANSPORT=shm`, `RAMP_SHM_EXPRESS` on): short requests and their
//! replies go straight into the rings (counted at both ends), correct
//! with many requests outstanding on few credits, also under a job key
//! both share; mixed with mediums and
//! puts (the protocol's path) every handler runs in the order its request
//! was sent and after the put before it; a peer killed, or alive but no
//! longer polling, with requests waiting in its ring returns them
//! EUNREACHABLE (nothing hangs); a request whose record the ring holds
//! back behind an unanswered one leaves at the sender's next call, while
//! it computes with the progress thread, and when it exits.
//!
//! The peer is this test binary again, run with `RAMP_EXPRESS_CHILD` set
//! and only `child` selected.

mod common;

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ramp::am::{self, handler, BundleMode, Data, EndpointName, Message, VecSegment};

const TAG: u64 = 0xe59e;
const SEG: usize = 1 << 16;

fn config(extra: &[(&str, &str)]) -> ramp::config::Config {
    ramp::config::Config::from_lookup(|k| {
        if k == "RAMP_TRANSPORT" {
            return Some("shm".into());
        }
        if k == "RAMP_SHM_EXPRESS" {
            return Some(std::env::var(k).unwrap_or("1".into()));
        }
        extra
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.to_string())
            .or_else(|| std::env::var(k).ok())
    })
    .unwrap()
}

/// The peer: handler 10 answers 11 with the sum of its arguments; 20
/// (short or medium) checks that its first argument is the next in the
/// sender's order and that the segment's first word is at least its second
/// argument (the count of puts sent before it), answering 21 with 1 for
/// each that holds; 14 stops polling for
/// good (its handler returns first: the automatic reply goes). At the end
/// (stdin closed) it prints its express counters.
#[test]
fn child() {
    if std::env::var_os("RAMP_EXPRESS_CHILD").is_none() {
        return;
    }
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e = am::allocate_endpoint_with(&b, &config(&[])).unwrap();
    e.set_tag(TAG);
    let seg = VecSegment::new(SEG);
    e.set_segment(Some(seg.clone()));
    e.set_handler(
        10,
        handler(|h| {
            let s = h.args.iter().sum::<u32>();
            am::reply(h.token, &Message::short(11, &[s])).unwrap();
        }),
    );
    let next = Arc::new(AtomicU64::new(0));
    e.set_handler(
        20,
        handler(move |h| {
            let in_order = next.fetch_add(1, Ordering::SeqCst) == h.args[0] as u64;
            let word = seg.snapshot()[..4].try_into().unwrap();
            // (a later put may be performed before it too: puts are
            // performed on arrival, handlers run from the queue)
            let put_seen = u32::from_le_bytes(word) >= h.args[1];
            let ok = [u32::from(in_order), u32::from(put_seen)];
            am::reply(h.token, &Message::short(21, &ok)).unwrap();
        }),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    e.set_handler(14, handler(move |_| s.store(true, Ordering::SeqCst)));
    let parent = common::parse_name_hex(&std::env::var("RAMP_EXPRESS_PARENT").unwrap());
    e.map(0, parent, TAG).unwrap();
    e.set_expected_resources(1, 8).unwrap();
    println!("NAME {}", common::name_hex(&e.name()));
    let done = common::stdin_closed();
    while !done.load(Ordering::SeqCst) {
        if stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(10));
            continue;
        }
        b.poll().unwrap();
    }
    let x = e.express_stats();
    println!(
        "EXPRESS {} {} {}",
        x.requests_received, x.replies_sent, x.dropped
    );
}

struct Peer {
    child: Child,
    name: EndpointName,
    lines: common::ChildLines,
}

fn spawn(parent: &EndpointName) -> Peer {
    spawn_keyed(parent, None)
}

/// `spawn`, the child under the job key `key` (`RAMP_JOB_KEY`).
fn spawn_keyed(parent: &EndpointName, key: Option<&str>) -> Peer {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    if let Some(k) = key {
        cmd.env("RAMP_JOB_KEY", k);
    }
    let (child, lines, name) = common::spawn_named(
        cmd.args(["--exact", "child", "--nocapture", "--test-threads=1"])
            .env("RAMP_EXPRESS_CHILD", "1")
            .env("RAMP_EXPRESS_PARENT", common::name_hex(parent))
            .stdin(Stdio::piped()),
    );
    Peer { child, name, lines }
}

impl Peer {
    /// Closes its stdin; its express counters (requests received,
    /// replies sent, records dropped).
    fn finish(mut self) -> [u64; 3] {
        drop(self.child.stdin.take());
        let got = loop {
            let l = self.lines.next().expect("child output ended").unwrap();
            if let Some(v) = l.split("EXPRESS ").nth(1) {
                let v: Vec<u64> = v.split(' ').map(|x| x.parse().unwrap()).collect();
                break [v[0], v[1], v[2]];
            }
        };
        self.lines.for_each(drop);
        assert!(self.child.wait().unwrap().success());
        got
    }
}

fn counter(e: &Arc<am::Endpoint>, h: u8) -> Arc<AtomicU64> {
    let c = Arc::new(AtomicU64::new(0));
    let d = c.clone();
    e.set_handler(
        h,
        handler(move |m| {
            d.fetch_add(
                m.args.first().copied().unwrap_or(0) as u64,
                Ordering::SeqCst,
            );
        }),
    );
    c
}

#[test]
fn many_outstanding_requests_on_few_credits_go_express_both_ways() {
    let _watchdog = common::watchdog(
        "shm_express::many_outstanding_requests_on_few_credits_go_express_both_ways",
        Duration::from_secs(120),
    );
    if std::env::var_os("RAMP_EXPRESS_CHILD").is_some() {
        return;
    }
    many_outstanding(None);
}

/// The same under a job key both processes share (as every job that
/// ramp-run starts: the packet MAC on): the lane is open (each end of the
/// ring proved the key once, `net/shm_proof.rs`).
#[test]
fn under_a_shared_job_key_requests_go_express_both_ways() {
    let _watchdog = common::watchdog(
        "shm_express::under_a_shared_job_key_requests_go_express_both_ways",
        Duration::from_secs(120),
    );
    if std::env::var_os("RAMP_EXPRESS_CHILD").is_some() {
        return;
    }
    many_outstanding(Some("0123456789abcdef-shm-express-test-key"));
}

fn many_outstanding(key: Option<&str>) {
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let extra: Vec<(&str, &str)> = key.map(|k| ("RAMP_JOB_KEY", k)).into_iter().collect();
    let e = am::allocate_endpoint_with(&b, &config(&extra)).unwrap();
    let peer = spawn_keyed(&e.name(), key);
    e.set_tag(TAG);
    e.map(1, peer.name, TAG).unwrap();
    e.set_expected_resources(2, 8).unwrap();
    let sums = counter(&e, 11);
    let returned = counter(&e, 0);
    let n = 20_000u64;
    let mut want = 0;
    for k in 0..n {
        // 8 credits: the rest wait for replies
        e.request(1, &Message::short(10, &[k as u32, 3]), false)
            .unwrap();
        want += k + 3;
    }
    common::waiting_for("every answer");
    while e.unanswered_requests() > 0 {
        b.poll().unwrap();
    }
    assert_eq!(sums.load(Ordering::SeqCst), want);
    assert_eq!(returned.load(Ordering::SeqCst), 0);
    let x = e.express_stats();
    // the first requests go by the protocol while the ring is set up
    assert!(x.requests_sent > n / 2, "{x:?}");
    assert!(x.replies_received > n / 2, "{x:?}");
    assert_eq!(x.dropped, 0);
    assert_eq!(e.statistics().requests_sent[0], n);
    let [received, replied, dropped] = peer.finish();
    assert_eq!(received, x.requests_sent);
    assert_eq!(replied, x.replies_received);
    assert_eq!(dropped, 0);
    am::free_endpoint(&e).unwrap();
}

#[test]
fn handlers_run_in_order_after_the_puts_and_mediums_before_them() {
    let _watchdog = common::watchdog(
        "shm_express::handlers_run_in_order_after_the_puts_and_mediums_before_them",
        Duration::from_secs(120),
    );
    if std::env::var_os("RAMP_EXPRESS_CHILD").is_some() {
        return;
    }
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e = am::allocate_endpoint_with(&b, &config(&[])).unwrap();
    let peer = spawn(&e.name());
    e.set_tag(TAG);
    e.map(1, peer.name, TAG).unwrap();
    e.set_expected_resources(2, 8).unwrap();
    let (in_order, put_seen) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (o, p) = (in_order.clone(), put_seen.clone());
    e.set_handler(
        21,
        handler(move |m| {
            o.fetch_add(m.args[0] as u64, Ordering::SeqCst);
            p.fetch_add(m.args[1] as u64, Ordering::SeqCst);
        }),
    );
    let returned = counter(&e, 0);
    let n = 6000u32;
    let mut value = 0u32;
    let mut puts = Vec::new();
    for k in 0..n {
        // a put now and then, whose value the next requests must see
        if k % 7 == 3 {
            value += 1;
            let op = e
                .put(1, am::SEGMENT_REGION, 0, &value.to_le_bytes(), None, true)
                .unwrap();
            puts.push(op);
        }
        let msg_args = [k, value];
        if k % 5 == 1 {
            e.request(1, &Message::medium(20, &msg_args, &[1u8; 100]), false)
                .unwrap();
        } else {
            e.request(1, &Message::short(20, &msg_args), false).unwrap();
        }
    }
    common::waiting_for("every answer");
    while e.unanswered_requests() > 0 {
        b.poll().unwrap();
    }
    assert_eq!(returned.load(Ordering::SeqCst), 0);
    for op in puts {
        assert_eq!(e.wait_op(op).unwrap(), 0);
    }
    // everything answered and acknowledged: the next shorts go express
    // (whatever the timing above let through)
    let tail = 50u32;
    for k in n..n + tail {
        e.request(1, &Message::short(20, &[k, value]), false)
            .unwrap();
    }
    common::waiting_for("the tail's answers");
    while e.unanswered_requests() > 0 {
        b.poll().unwrap();
    }
    let n = n + tail;
    assert_eq!(
        in_order.load(Ordering::SeqCst),
        n as u64,
        "a handler ran out of order"
    );
    assert_eq!(
        put_seen.load(Ordering::SeqCst),
        n as u64,
        "a handler ran before the put sent before its request"
    );
    let x = e.express_stats();
    assert!(x.requests_sent > 0, "no request went express: {x:?}");
    let [received, _, _] = peer.finish();
    assert_eq!(received, x.requests_sent);
    am::free_endpoint(&e).unwrap();
}

#[test]
fn a_killed_peer_returns_the_express_requests_in_its_ring() {
    let _watchdog = common::watchdog(
        "shm_express::a_killed_peer_returns_the_express_requests_in_its_ring",
        Duration::from_secs(120),
    );
    if std::env::var_os("RAMP_EXPRESS_CHILD").is_some() {
        return;
    }
    returned_when_the_peer_stops(true);
}

/// A peer alive that stops polling: its ring is dropped after the peer
/// timeout (as the protocol gives up on a peer that does not answer).
#[test]
fn a_peer_that_stops_polling_returns_them_after_the_peer_timeout() {
    let _watchdog = common::watchdog(
        "shm_express::a_peer_that_stops_polling_returns_them_after_the_peer_timeout",
        Duration::from_secs(120),
    );
    if std::env::var_os("RAMP_EXPRESS_CHILD").is_some() {
        return;
    }
    returned_when_the_peer_stops(false);
}

/// Express requests wait in the ring of a peer that stopped polling; it
/// is killed (`kill`) or left alone: they come back to handler 0,
/// EUNREACHABLE, "may have run", their credits free.
fn returned_when_the_peer_stops(kill: bool) {
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e = am::allocate_endpoint_with(&b, &config(&[("RAMP_PEER_TIMEOUT_MS", "500")])).unwrap();
    let mut peer = spawn(&e.name());
    e.set_tag(TAG);
    e.map(1, peer.name, TAG).unwrap();
    e.set_expected_resources(2, 8).unwrap();
    let sums = counter(&e, 11);
    let unreachable = Arc::new(AtomicU64::new(0));
    let may_run = Arc::new(AtomicU64::new(0));
    let (u, m) = (unreachable.clone(), may_run.clone());
    e.set_handler(
        0,
        handler(move |h| {
            if let Data::Returned { status, .. } = h.data {
                assert!(format!("{status:?}").contains("Unreachable"), "{status:?}");
                if am::returned_may_have_run(h.token).unwrap() {
                    m.fetch_add(1, Ordering::SeqCst);
                }
                u.fetch_add(1, Ordering::SeqCst);
            }
        }),
    );
    // until requests go express
    common::waiting_for("requests to go express");
    while e.express_stats().requests_sent < 100 {
        e.request(1, &Message::short(10, &[1]), false).unwrap();
        b.poll().unwrap();
    }
    while e.unanswered_requests() > 0 {
        b.poll().unwrap();
    }
    let before = sums.load(Ordering::SeqCst);
    // the peer stops polling after this one's handler
    e.request(1, &Message::short(14, &[]), false).unwrap();
    while e.unanswered_requests() > 0 {
        b.poll().unwrap();
    }
    let sent0 = e.express_stats().requests_sent;
    for k in 0..8 {
        e.request(1, &Message::short(10, &[k]), true).unwrap();
    }
    let express = e.express_stats().requests_sent - sent0;
    assert!(express > 0, "none went express");
    // nobody answers them (the peer timeout may end them meanwhile: they
    // come back, below); the peer dies holding them
    for _ in 0..100 {
        b.poll().unwrap();
    }
    assert_eq!(
        sums.load(Ordering::SeqCst),
        before,
        "no reply after the stop"
    );
    if kill {
        peer.child.kill().unwrap();
        peer.child.wait().unwrap();
    }
    common::waiting_for("the 8 to come back EUNREACHABLE");
    while unreachable.load(Ordering::SeqCst) < 8 {
        b.poll().unwrap();
        b.wait_for_activity(5);
    }
    assert_eq!(unreachable.load(Ordering::SeqCst), 8);
    assert!(
        may_run.load(Ordering::SeqCst) >= express,
        "an express request may have run"
    );
    assert_eq!(e.express_stats().lost, express);
    assert_eq!(e.unanswered_requests(), 0);
    assert_eq!(
        sums.load(Ordering::SeqCst),
        before,
        "no reply after the stop"
    );
    if !kill {
        // alive all along: it ends when told
        drop(peer.child.stdin.take());
        assert!(peer.child.wait().unwrap().success());
    }
    am::free_endpoint(&e).unwrap();
}

/// The sender of `held_records_leave_when_the_program_exits` (run by it as
/// a child process; returns at once otherwise): round trips until its
/// requests go express, then a slow request and a quick one whose record
/// its ring holds back behind it (`TxRing::hold`), then exit(0) without
/// another call.
#[test]
fn child_exits_with_a_held_record() {
    let Some(parent) = std::env::var_os("RAMP_EXPRESS_EXIT_PARENT") else {
        return;
    };
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e = am::allocate_endpoint_with(&b, &config(&[])).unwrap();
    e.set_tag(TAG);
    e.map(0, common::parse_name_hex(parent.to_str().unwrap()), TAG)
        .unwrap();
    e.set_expected_resources(1, 8).unwrap();
    e.set_handler(11, handler(|_| {}));
    println!("NAME {}", common::name_hex(&e.name()));
    let mut go = String::new();
    std::io::stdin().read_line(&mut go).unwrap();
    while e.express_stats().requests_sent == 0 {
        e.request(0, &Message::short(10, &[0]), false).unwrap();
        while e.unanswered_requests() > 0 {
            b.poll().unwrap();
        }
    }
    let sent = e.express_stats().requests_sent;
    e.request(0, &Message::short(13, &[]), false).unwrap();
    e.request(0, &Message::short(10, &[7]), false).unwrap();
    // both taken by the lane (the second held: counted as sent)
    assert_eq!(e.express_stats().requests_sent, sent + 2);
    std::process::exit(0);
}

/// A request whose record a ring holds back behind an unanswered one still
/// leaves when the program exits (through exit, without AM_Terminate)
/// right after sending it: ramp writes what it holds at exit.
#[test]
fn held_records_leave_when_the_program_exits() {
    if std::env::var_os("RAMP_EXPRESS_EXIT_PARENT").is_some() {
        return;
    }
    let _watchdog = common::watchdog(
        "shm_express::held_records_leave_when_the_program_exits",
        Duration::from_secs(120),
    );
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e = am::allocate_endpoint_with(&b, &config(&[])).unwrap();
    let (mut child, lines, name) = common::spawn_named(
        Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "child_exits_with_a_held_record",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("RAMP_EXPRESS_EXIT_PARENT", common::name_hex(&e.name()))
            .stdin(Stdio::piped()),
    );
    e.set_tag(TAG);
    e.map(1, name, TAG).unwrap();
    e.set_expected_resources(2, 8).unwrap();
    let quick = common::held_request_target(&e, child.id());
    use std::io::Write;
    writeln!(child.stdin.as_mut().unwrap(), "go").unwrap();
    common::waiting_for("the held request, written at the child's exit");
    while quick.lock().last() != Some(&7) {
        b.poll().unwrap();
    }
    assert!(quick.lock().iter().rev().skip(1).all(|&a| a == 0));
    drop(lines);
    assert!(child.wait().unwrap().success());
    am::free_endpoint(&e).unwrap();
}

/// Over shared memory as over UDP (`tests/am_udp_batch.rs`): a request held
/// behind an unanswered one (its record in the ring's sender) waits for
/// the sender's next call without a progress thread, and leaves while the
/// sender computes with one (woken by the earlier request's answer).
#[test]
fn the_progress_thread_writes_a_held_record_while_the_program_computes() {
    let _watchdog = common::watchdog(
        "shm_express::the_progress_thread_writes_a_held_record_while_the_program_computes",
        Duration::from_secs(120),
    );
    let cfg = config(&[]);
    // the target in a bundle of its own, polled by a thread of its own
    let (b0, e0, b1, e1) = common::two_bundles(&cfg, 9, 64);
    let ran = Arc::new(AtomicU64::new(0));
    let r = ran.clone();
    e1.set_handler(
        10,
        handler(move |h| {
            r.fetch_add(1, Ordering::SeqCst);
            am::reply(h.token, &Message::short(11, &[h.args[0]])).unwrap();
        }),
    );
    e0.set_handler(11, handler(|_| {}));
    e0.set_handler(0, handler(|h| panic!("returned: {:?}", h.args)));
    let target = common::poll_on_thread(&b1);
    let wait_until = |what: &str, done: &dyn Fn() -> bool| {
        common::waiting_for(what);
        while !done() {
            b0.poll().unwrap();
        }
    };
    // round trips until the lane is open
    while e0.express_stats().requests_sent == 0 {
        e0.request(1, &Message::short(10, &[0]), false).unwrap();
        wait_until("an answer", &|| e0.unanswered_requests() == 0);
    }
    // a slow request, then a quick one held behind it (its record in
    // the ring's sender): it waits for our next call, or leaves with the
    // progress thread while we compute; both pairs by the lane
    let x0 = e0.express_stats().requests_sent;
    common::a_held_request_waits_for_a_call_or_the_progress_thread(&b0, &e0, &e1, &ran);
    assert_eq!(e0.express_stats().requests_sent, x0 + 4, "all by the lane");
    target.stop();
}
