//! Ping-pongs over UDP, in one process and between two processes
//! busy-polling as `ramp bench` runs: every round trip completes, and the
//! datagrams each end sent are printed. That the ACKs ride on the next
//! request and reply (about one datagram per message) holds while a round
//! trip is shorter than the ACK delay, which a loaded machine does not
//! promise: it is shown on virtual time
//! (`src/am/timing_world_tests.rs`, `a_ping_pongs_acks_ride_on_its_requests_and_replies`).

#[path = "common/am_pair.rs"]
mod am_pair;
mod common;

use am_pair::*;

use std::time::Duration;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ramp::am::{self, handler, Message};

/// A ping-pong over UDP in one process: every round trip completes; the
/// datagrams are printed (about one per message while a round trip is
/// shorter than the ACK delay: the express lane's ACK flush before a
/// record, once also done for UDP peers, made it 1,504 datagrams from the
/// requester for 500 round trips).
#[test]
fn ping_pong_round_trips_complete() {
    let _watchdog = common::watchdog(
        "am_udp_acks::ping_pong_round_trips_complete",
        Duration::from_secs(120),
    );
    let mut cfg = ramp::config::Config::from_lookup(|_| None).unwrap();
    cfg.transport = ramp::config::TransportChoice::Udp;
    let (b, e0, e1) = pair_with(&cfg);
    let replies = Arc::new(AtomicU64::new(0));
    let r = replies.clone();
    e0.set_handler(
        11,
        handler(move |_| {
            r.fetch_add(1, Ordering::SeqCst);
        }),
    );
    e1.set_handler(
        10,
        handler(|h| am::reply(h.token, &Message::short(11, &[])).unwrap()),
    );
    // the association, and the first round trips
    for _ in 0..10 {
        e0.request(1, &Message::short(10, &[]), false).unwrap();
    }
    while replies.load(Ordering::SeqCst) < 10 {
        b.poll().unwrap();
    }
    const N: u64 = 500;
    // DATA packets and standalone ACKs
    let sent = |e: &am::Endpoint| {
        let s = e.statistics();
        s.packets_sent + s.acks_sent
    };
    let (s0, s1) = (sent(&e0), sent(&e1));
    for i in 0..N {
        e0.request(1, &Message::short(10, &[]), false).unwrap();
        while replies.load(Ordering::SeqCst) < 11 + i {
            b.poll().unwrap();
        }
    }
    let (d0, d1) = (sent(&e0) - s0, sent(&e1) - s1);
    eprintln!("{N} round trips: {d0} datagrams from the requester, {d1} from the replier");
    assert_eq!(replies.load(Ordering::SeqCst), 10 + N);
    // a message a datagram at least
    assert!(
        d0 >= N && d1 >= N,
        "{d0} and {d1} datagrams for {N} round trips"
    );
}

/// The replier of `ping_pong_between_processes_round_trips_complete`
/// (run by it as a child process; returns at once otherwise).
#[test]
fn child_replier() {
    let Some((b, e)) = udp_child("RAMP_ACKS_PARENT", 4) else {
        return;
    };
    e.set_handler(
        10,
        handler(|h| am::reply(h.token, &Message::short(11, &[])).unwrap()),
    );
    println!("NAME {}", common::name_hex(&e.name()));
    // busy, as a benchmark's server: the round trip stays far below the ACK delay
    let done = common::stdin_closed();
    while !done.load(Ordering::SeqCst) {
        b.poll().unwrap();
    }
    let s = e.statistics();
    println!("SENT {}", s.packets_sent + s.acks_sent);
}

/// `ping_pong_round_trips_complete` between two processes over UDP, both
/// busy-polling, as `ramp bench` runs (the express lane's ACK flush, once
/// done for UDP peers too, made it 6,008 datagrams from the requester for
/// 2,000 round trips: `am/express.rs::try_express`).
#[test]
fn ping_pong_between_processes_round_trips_complete() {
    if std::env::var_os("RAMP_ACKS_PARENT").is_some() {
        return;
    }
    let _watchdog = common::watchdog(
        "am_udp_acks::ping_pong_between_processes_round_trips_complete",
        Duration::from_secs(120),
    );
    let (b, e, mut child, mut lines) = udp_parent("child_replier", "RAMP_ACKS_PARENT", 4);
    let replies = Arc::new(AtomicU64::new(0));
    let r = replies.clone();
    e.set_handler(
        11,
        handler(move |_| {
            r.fetch_add(1, Ordering::SeqCst);
        }),
    );
    let round_trips = |n: u64| {
        for _ in 0..n {
            let want = replies.load(Ordering::SeqCst) + 1;
            e.request(1, &Message::short(10, &[]), false).unwrap();
            while replies.load(Ordering::SeqCst) < want {
                b.poll().unwrap();
            }
        }
    };
    // the association, and the first round trips
    round_trips(10);
    const N: u64 = 2000;
    let sent = || {
        let s = e.statistics();
        s.packets_sent + s.acks_sent
    };
    let s0 = sent();
    round_trips(N);
    let d0 = sent() - s0;
    drop(child.stdin.take());
    let d1 = loop {
        let l = lines.next().expect("child output ended").unwrap();
        if let Some(v) = l.split("SENT ").nth(1) {
            break v.trim().parse::<u64>().unwrap();
        }
    };
    lines.for_each(drop);
    assert!(child.wait().unwrap().success());
    eprintln!("{N} round trips: {d0} datagrams from the requester, {d1} from the replier in all");
    assert_eq!(replies.load(Ordering::SeqCst), 10 + N);
    // a message a datagram at least (the replier's count includes its 10
    // first replies and what the association took)
    assert!(
        d0 >= N && d1 >= N + 10,
        "{d0} and {d1} datagrams for {N} round trips"
    );
}
