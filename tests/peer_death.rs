//! A receiver process killed with SIGKILL (finding 7): with
//! `RAMP_PEER_TIMEOUT_MS=500` every request to it returns to handler 0
//! with EUNREACHABLE, queued ones and new ones alike, while `AM_Request`
//! blocks for credits. How long after the kill is printed; that the last
//! comes back within a small multiple of the timeout is shown on virtual
//! time (`src/am/timing_world_tests.rs`), where a loaded machine cannot
//! stretch it.
//!
//! The receiver is this test binary again, run with `RAMP_LIFE_CHILD=1`
//! and only `child_receiver` selected.

mod common;

use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ramp::am::{self, handler, BundleMode, Data, Message};

const TAG: u64 = 0x11fe;

/// The receiver: prints its name, then polls (handler 20 takes requests)
/// until it is killed (or 60 s pass).
#[test]
fn child_receiver() {
    if std::env::var_os("RAMP_LIFE_CHILD").is_none() {
        return;
    }
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e = am::allocate_endpoint(&b).unwrap();
    e.set_tag(TAG);
    let parent = std::env::var("RAMP_LIFE_PARENT").unwrap();
    e.map(0, common::parse_name_hex(&parent), TAG).unwrap();
    e.set_expected_resources(2, 64).unwrap();
    e.set_handler(20, handler(|_| {}));
    println!("NAME {}", common::name_hex(&e.name()));
    // until killed, or its parent is gone (its standard input closes)
    common::serve_until_stdin_closes(&b);
}

#[test]
fn receiver_killed_every_request_returns_unreachable() {
    let _watchdog = common::watchdog(
        "peer_death::receiver_killed_every_request_returns_unreachable",
        Duration::from_secs(120),
    );
    if std::env::var_os("RAMP_LIFE_CHILD").is_some() {
        return;
    }
    let timeout_ms = 500u64;
    let t = timeout_ms.to_string();
    let cfg = ramp::config::Config::from_lookup(|k| match k {
        "RAMP_PEER_TIMEOUT_MS" => Some(t.clone()),
        _ => std::env::var(k).ok(),
    })
    .unwrap();
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e = am::allocate_endpoint_with(&b, &cfg).unwrap();
    let (mut child, _lines, name) = common::spawn_named(
        Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "child_receiver",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("RAMP_LIFE_CHILD", "1")
            .env("RAMP_LIFE_PARENT", common::name_hex(&e.name()))
            .stdin(std::process::Stdio::piped()),
    );

    e.set_tag(TAG);
    e.map(1, name, TAG).unwrap();
    e.set_expected_resources(2, 16).unwrap();
    let returned = Arc::new(AtomicU64::new(0));
    let unreachable = Arc::new(AtomicU64::new(0));
    let (r, u) = (returned.clone(), unreachable.clone());
    e.set_handler(
        0,
        handler(move |h| {
            if let Data::Returned { status, .. } = h.data {
                if format!("{status:?}").contains("Unreachable") {
                    u.fetch_add(1, Ordering::SeqCst);
                }
            }
            r.fetch_add(1, Ordering::SeqCst);
        }),
    );
    // one request that gets through (answered): the association is up
    e.request(1, &Message::short(20, &[0]), false).unwrap();
    common::waiting_for("the first request's answer");
    while e.unanswered_requests() > 0 {
        b.poll().unwrap();
        b.wait_for_activity(5);
    }
    assert_eq!(returned.load(Ordering::SeqCst), 0);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let killed = Instant::now();
    let n = 400u64;
    for k in 0..n {
        // blocks (polling) while the 16 credits are out
        e.request(1, &Message::medium(20, &[k as u32], &[7u8; 200]), false)
            .unwrap();
    }
    let issued = killed.elapsed();
    common::waiting_for("every request to come back");
    while returned.load(Ordering::SeqCst) < n {
        b.poll().unwrap();
        b.wait_for_activity(5);
    }
    let last = killed.elapsed();
    eprintln!(
        "SIGKILL -> {n} requests issued after {} ms, last returned after {} ms \
         (RAMP_PEER_TIMEOUT_MS={timeout_ms}); {} of them EUNREACHABLE",
        issued.as_millis(),
        last.as_millis(),
        unreachable.load(Ordering::SeqCst)
    );
    assert_eq!(returned.load(Ordering::SeqCst), n);
    assert_eq!(unreachable.load(Ordering::SeqCst), n);
}
