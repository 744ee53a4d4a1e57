//! Several messages to a datagram over real UDP sockets (`am/batch.rs`,
//! `proto/outbox.rs`): a burst of replies, a burst of requests and a
//! request held behind an unanswered one (sent by the next call, by the
//! progress thread, and at the program's exit), streams of 64 KiB long
//! requests whose last fragment waits for the next one's first, also
//! under loss, duplication and reordering.

#[path = "common/am_pair.rs"]
mod am_pair;
mod common;

use am_pair::*;

use std::time::Duration;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ramp::am::{self, handler, BundleMode, Data, Message, VecSegment};

/// A burst of replies over real UDP sockets: 16 requests sent at once to
/// a replier that is not polled; the polls that take them run 16
/// handlers whose replies leave, several packets to a datagram as the
/// replier's receives found them together (a relay between the two
/// endpoints counts datagrams and the packets in them, printed); each
/// reply runs its handler once. How many the receives find together
/// depends on how far the burst got (the relay is a thread of a loaded
/// machine): that a burst waiting at the replier is answered in fewer
/// datagrams than packets is shown on virtual time
/// (`src/am/timing_world_tests.rs`).
#[test]
fn a_burst_of_replies_runs_each_reply_once() {
    let _watchdog = common::watchdog(
        "am_udp_batch::a_burst_of_replies_runs_each_reply_once",
        Duration::from_secs(120),
    );
    let mut cfg = ramp::config::Config::from_lookup(|_| None).unwrap();
    cfg.transport = ramp::config::TransportChoice::Udp;
    // each request its own datagram, at once (`a_burst_of_requests_...`
    // tests their batch)
    cfg.request_batch = 0;
    am::init().unwrap();
    // one bundle each: the replier is polled only when its requests wait
    let b0 = am::allocate_bundle(BundleMode::Seq).unwrap();
    let b1 = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e0 = am::allocate_endpoint_with(&b0, &cfg).unwrap();
    let e1 = am::allocate_endpoint_with(&b1, &cfg).unwrap();
    let relay = Relay::start(&e0, &e1);
    e0.set_tag(9);
    e1.set_tag(9);
    e0.map(1, am::EndpointName::from_addr(relay.to_e1), 9)
        .unwrap();
    e1.map(0, am::EndpointName::from_addr(relay.to_e0), 9)
        .unwrap();
    for e in [&e0, &e1] {
        e.set_expected_resources(2, 32).unwrap();
    }
    let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let s = seen.clone();
    e0.set_handler(
        11,
        handler(move |h| {
            s.lock().push(h.args[0]);
        }),
    );
    e1.set_handler(
        10,
        handler(|h| am::reply(h.token, &Message::short(11, &[h.args[0]])).unwrap()),
    );
    e0.set_handler(0, handler(|h| panic!("returned: {:?}", h.args)));
    let wait = |what: &str, done: &dyn Fn() -> bool| {
        common::waiting_for(what);
        while !done() {
            b0.poll().unwrap();
            b1.poll().unwrap();
        }
    };
    // the association and a first round trip
    e0.request(1, &Message::short(10, &[1000]), false).unwrap();
    wait("the first reply", &|| seen.lock().len() == 1);
    // 16 requests, each its own datagram (sent at once, not from a
    // handler), forwarded by the relay while the replier is not polled
    let sent_before = relay.counts()[0];
    for k in 0..16 {
        e0.request(1, &Message::short(10, &[k]), false).unwrap();
    }
    common::waiting_for("the relay to forward the requests");
    while relay.counts()[0] < sent_before + 16 {
        std::thread::yield_now();
    }
    let [_, _, d0, p0] = relay.counts();
    // the replier takes them and answers
    common::waiting_for("the replies");
    while e1.statistics().replies_sent.iter().sum::<u64>() < 17 {
        b1.poll().unwrap();
    }
    wait("the replies to arrive", &|| seen.lock().len() == 17);
    let [_, _, d1, p1] = relay.counts();
    let (d, p) = (d1 - d0, p1 - p0);
    drop(relay);
    eprintln!("16 replies: {p} packets in {d} datagrams");
    let mut got = seen.lock().clone();
    got.sort_unstable();
    let want: Vec<u32> = (0..16).chain([1000]).collect();
    assert_eq!(got, want, "each reply once");
    assert!(p >= 16, "{p} packets");
}

/// Requests held for a batch over real UDP sockets (`am/batch.rs`): in a
/// burst to a peer each request runs once; a request held behind an unanswered one waits for
/// the sender's next call without a progress thread, and leaves while the
/// sender computes with one (woken by the earlier request's answer).
#[test]
fn a_burst_of_requests_leaves_in_few_datagrams_and_the_progress_thread_sends_a_held_one() {
    let _watchdog = common::watchdog(
        "am_udp_batch::a_burst_of_requests_leaves_in_few_datagrams_and_the_progress_thread_sends_a_held_one",
        Duration::from_secs(120),
    );
    let mut cfg = ramp::config::Config::from_lookup(|_| None).unwrap();
    cfg.transport = ramp::config::TransportChoice::Udp;
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
    let answered = Arc::new(AtomicU64::new(0));
    let a = answered.clone();
    e0.set_handler(
        11,
        handler(move |_| {
            a.fetch_add(1, Ordering::SeqCst);
        }),
    );
    e0.set_handler(0, handler(|h| panic!("returned: {:?}", h.args)));
    let target = common::poll_on_thread(&b1);
    let wait_until = |what: &str, done: &dyn Fn() -> bool| {
        common::waiting_for(what);
        while !done() {
            b0.poll().unwrap();
        }
    };
    // the association
    e0.request(1, &Message::short(10, &[0]), false).unwrap();
    wait_until("the first answer", &|| answered.load(Ordering::SeqCst) == 1);

    // a burst of 2,000 requests, in batches (the datagrams are counted
    // over the in-memory network: `am/batch_tests.rs`): each runs once
    let before = e1.statistics().requests_received[0];
    let n = 2000u64;
    for k in 0..n {
        e0.request(1, &Message::short(10, &[k as u32]), false)
            .unwrap();
    }
    wait_until("the burst's answers", &|| {
        answered.load(Ordering::SeqCst) == 1 + n
    });
    assert_eq!(e1.statistics().requests_received[0] - before, n);
    assert_eq!(ran.load(Ordering::SeqCst), 1 + n, "each request ran once");

    // a slow request, then a quick one held behind it: it waits for our
    // next call, or leaves with the progress thread while we compute
    common::a_held_request_waits_for_a_call_or_the_progress_thread(&b0, &e0, &e1, &ran);
    target.stop();
}

/// The sender of `held_requests_leave_when_the_program_exits` (run by it
/// as a child process; returns at once otherwise): a round trip, then a
/// slow request and a quick one held behind it (`am/batch.rs`), then
/// exit(0) without another call.
#[test]
fn child_exits_with_a_held_request() {
    let Some((b, e)) = udp_child("RAMP_EXIT_PARENT", 8) else {
        return;
    };
    e.set_handler(11, handler(|_| {}));
    println!("NAME {}", common::name_hex(&e.name()));
    let mut go = String::new();
    std::io::stdin().read_line(&mut go).unwrap();
    // the association, by a round trip
    e.request(0, &Message::short(10, &[0]), false).unwrap();
    while e.unanswered_requests() > 0 {
        b.poll().unwrap();
    }
    e.request(0, &Message::short(13, &[]), false).unwrap();
    e.request(0, &Message::short(10, &[7]), false).unwrap();
    std::process::exit(0);
}

/// A request held for a batch behind an unanswered one still leaves when
/// the program exits (through exit, without AM_Terminate) right after
/// sending it: ramp sends what it holds at exit.
#[test]
fn held_requests_leave_when_the_program_exits() {
    if std::env::var_os("RAMP_EXIT_PARENT").is_some() {
        return;
    }
    let _watchdog = common::watchdog(
        "am_udp_batch::held_requests_leave_when_the_program_exits",
        Duration::from_secs(120),
    );
    let (b, e, mut child, lines) =
        udp_parent("child_exits_with_a_held_request", "RAMP_EXIT_PARENT", 8);
    let quick = common::held_request_target(&e, child.id());
    use std::io::Write;
    writeln!(child.stdin.as_mut().unwrap(), "go").unwrap();
    common::waiting_for("the held request, sent at the child's exit");
    while quick.lock().len() < 2 {
        b.poll().unwrap();
    }
    assert_eq!(*quick.lock(), [0, 7]);
    drop(lines);
    assert!(child.wait().unwrap().success());
}

/// Byte `i` of long request `k`.
fn pattern(k: u32, i: usize) -> u8 {
    (i as u32)
        .wrapping_mul(13)
        .wrapping_add(k.wrapping_mul(101)) as u8
}

/// `n` long requests of 64 KiB from e0 to e1 over UDP, each behind
/// unanswered ones (a long request's last fragment then waits for the
/// next one's first, in one datagram: `am/batch.rs`, `proto/outbox.rs`):
/// each handler sees its own bytes whole, once, in order.
fn xfer_stream(
    b: &am::Bundle,
    e0: &Arc<am::Endpoint>,
    e1: &Arc<am::Endpoint>,
    n: u32,
) -> (am::Statistics, am::Statistics) {
    const LEN: usize = 65_536;
    let seg = VecSegment::new(8 * LEN);
    e1.set_segment(Some(seg.clone()));
    let ran = Arc::new(AtomicU64::new(0));
    let r = ran.clone();
    e1.set_handler(
        30,
        handler(move |h| {
            let k = h.args[0];
            let Data::Long { addr, len } = h.data else {
                panic!("a long request")
            };
            assert_eq!(len, LEN);
            let off = addr - ramp::am::SegmentMemory::base(&*seg);
            let bytes = seg.snapshot()[off..off + len].to_vec();
            assert!(
                bytes.iter().enumerate().all(|(i, &x)| x == pattern(k, i)),
                "long request {k}: its own bytes, whole"
            );
            assert_eq!(r.load(Ordering::SeqCst), u64::from(k), "in order, once");
            r.fetch_add(1, Ordering::SeqCst);
            am::reply(h.token, &Message::short(31, &[k])).unwrap();
        }),
    );
    let answers = Arc::new(AtomicU64::new(0));
    let a = answers.clone();
    e0.set_handler(
        31,
        handler(move |_| {
            a.fetch_add(1, Ordering::SeqCst);
        }),
    );
    for k in 0..n {
        let data: Vec<u8> = (0..LEN).map(|i| pattern(k, i)).collect();
        let at = u64::from(k % 8) * LEN as u64;
        e0.request(1, &Message::long(30, &[k], &data, at), false)
            .unwrap();
    }
    common::waiting_for("every answer");
    while answers.load(Ordering::SeqCst) < u64::from(n) {
        b.poll().unwrap();
    }
    assert_eq!(ran.load(Ordering::SeqCst), u64::from(n));
    (e0.statistics(), e1.statistics())
}

#[test]
fn a_stream_of_64_kib_long_requests_arrives_whole_over_udp() {
    let _watchdog = common::watchdog(
        "am_udp_batch::a_stream_of_64_kib_long_requests_arrives_whole_over_udp",
        Duration::from_secs(120),
    );
    let cfg =
        ramp::config::Config::from_lookup(|k| (k == "RAMP_TRANSPORT").then(|| "udp".to_string()))
            .unwrap();
    let (b, e0, e1, relay) = pair_via_relay(&cfg);
    let before = relay.counts();
    let t0 = std::time::Instant::now();
    let (s0, _) = xfer_stream(&b, &e0, &e1, 300);
    let took = t0.elapsed();
    let after = relay.counts();
    drop(relay);
    let (datagrams, packets) = (after[0] - before[0], after[1] - before[1]);
    eprintln!(
        "300 long requests of 64 KiB in {took:?}: {packets} packets in {datagrams} datagrams"
    );
    // two DATA packets a request at least. How many of the small last
    // fragments left with the next one's first depends on the sender's
    // pauses (a held one leaves alone after `TAIL_HOLD`): shown on virtual
    // time (`src/am/timing_world_tests.rs`).
    assert!(s0.packets_sent >= 600, "{}", s0.packets_sent);
    assert!(packets >= 600, "{packets} packets");
}

#[test]
fn a_stream_of_64_kib_long_requests_survives_loss_duplication_and_reordering() {
    let _watchdog = common::watchdog(
        "am_udp_batch::a_stream_of_64_kib_long_requests_survives_loss_duplication_and_reordering",
        Duration::from_secs(120),
    );
    let cfg = ramp::config::Config::from_lookup(|k| {
        match k {
            "RAMP_FAULT_LOSS" => Some("0.05"),
            "RAMP_FAULT_DUP" => Some("0.05"),
            "RAMP_FAULT_CORRUPT" => Some("0.02"),
            "RAMP_FAULT_REORDER" => Some("0.1"),
            "RAMP_FAULT_SEED" => Some("7"),
            "RAMP_TRANSPORT" => Some("udp"),
            _ => None,
        }
        .map(String::from)
    })
    .unwrap();
    let (b, e0, e1) = pair_with(&cfg);
    let (s0, s1) = xfer_stream(&b, &e0, &e1, 150);
    assert!(s0.packets_retransmitted > 0, "loss was injected");
    assert!(
        s1.duplicates_dropped + s0.duplicates_dropped > 0,
        "duplicates were injected"
    );
}
