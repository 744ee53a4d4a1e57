//! Plain AM-2 requests as transactions (issue 10, `am/started.rs`): a
//! target process whose first handler never returns (it sleeps, so the
//! target stops polling) has `START_WINDOW + 8` more plain requests
//! queued behind it, and is then killed with SIGKILL. Every request comes
//! back to handler 0 with EUNREACHABLE, also the ones the target had
//! acknowledged; `ramp_ReturnedMayHaveRun` says 1 for the one that started
//! and 0 for every one from place `START_WINDOW` on among those that went
//! by the protocol (1 for one that took the express lane, which may pass
//! older requests in flight: am.h "Order"); a request it says 0 for never ran (the target writes "ran <arg>" to a file when a handler
//! starts). Under loss a request whole in one packet may run ahead of a
//! lost first one and be answered (am.h's Order): then each request is
//! answered or returned, and at most `START_WINDOW` returned may have run.
//!
//! The target is this test binary again (`RAMP_STARTED_CHILD=1`, only
//! `child_target` selected).

mod common;

use std::collections::HashMap;
use std::io::Write;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ramp::am::{self, handler, BundleMode, Data, Message, START_WINDOW};

const TAG: u64 = 0x57a7;
/// The argument of the request whose handler never returns.
const HANG: u32 = 0;

#[test]
fn child_target() {
    if std::env::var_os("RAMP_STARTED_CHILD").is_none() {
        return;
    }
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e = am::allocate_endpoint(&b).unwrap();
    e.set_tag(TAG);
    let parent = std::env::var("RAMP_STARTED_PARENT").unwrap();
    e.map(0, common::parse_name_hex(&parent), TAG).unwrap();
    e.set_expected_resources(2, 64).unwrap();
    let effects = std::env::var("RAMP_STARTED_EFFECTS").unwrap();
    e.set_handler(
        30,
        handler(move |h| {
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(&effects)
                .unwrap();
            f.write_all(format!("ran {}\n", h.args[0]).as_bytes())
                .unwrap();
            drop(f);
            if h.args[0] == HANG {
                // stops polling: the requests behind it wait
                std::thread::sleep(Duration::from_secs(600));
            }
        }),
    );
    println!("NAME {}", common::name_hex(&e.name()));
    // until killed, or its parent is gone (its standard input closes)
    common::serve_until_stdin_closes(&b);
}

#[test]
fn queued_plain_requests_of_a_killed_target_say_whether_they_may_have_run() {
    let _w = common::watchdog("plain_started", Duration::from_secs(120));
    if std::env::var_os("RAMP_STARTED_CHILD").is_some() {
        return;
    }
    killed_with_requests_queued(false);
}

/// The same with 5% loss, 2% duplication and 5% reordering at both ends.
#[test]
fn under_loss_too() {
    let _w = common::watchdog("plain_started (loss)", Duration::from_secs(120));
    if std::env::var_os("RAMP_STARTED_CHILD").is_some() {
        return;
    }
    killed_with_requests_queued(true);
}

fn killed_with_requests_queued(loss: bool) {
    let faults: Vec<(&str, String)> = if loss {
        vec![
            ("RAMP_FAULT_LOSS", "0.05".into()),
            ("RAMP_FAULT_DUP", "0.02".into()),
            ("RAMP_FAULT_REORDER", "0.05".into()),
            ("RAMP_FAULT_SEED", (std::process::id() % 10_000).to_string()),
        ]
    } else {
        Vec::new()
    };
    let dir = std::env::temp_dir().join(format!("ramp-started-{}-{loss}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let effects = dir.join("effects");
    let _ = std::fs::remove_file(&effects);
    let cfg = ramp::config::Config::from_lookup(|k| match k {
        "RAMP_PEER_TIMEOUT_MS" => Some("500".into()),
        _ => faults
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var(k).ok()),
    })
    .unwrap();
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e = am::allocate_endpoint_with(&b, &cfg).unwrap();
    let (mut child, _lines, name) = common::spawn_named(
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "child_target", "--nocapture", "--test-threads=1"])
            .env("RAMP_STARTED_CHILD", "1")
            .env("RAMP_STARTED_PARENT", common::name_hex(&e.name()))
            .env("RAMP_STARTED_EFFECTS", &effects)
            .envs(faults.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(std::process::Stdio::piped()),
    );
    e.set_tag(TAG);
    e.map(1, name, TAG).unwrap();
    let n = START_WINDOW as u32 + 8;
    e.set_expected_resources(2, n as i32 + 8).unwrap();
    // (arg, status, may have run) of every returned request
    let returned = Arc::new(Mutex::new(Vec::new()));
    let r = returned.clone();
    e.set_handler(
        0,
        handler(move |h| {
            if let Data::Returned { status, .. } = h.data {
                let may = am::returned_may_have_run(h.token).unwrap();
                r.lock()
                    .unwrap()
                    .push((h.args[0], format!("{status:?}"), may));
            }
        }),
    );
    // the requests that took the express lane (once the ring opens, one may
    // pass older ones still in flight: am.h "Order"; lost with the ring, it
    // may have run whatever its place, `am/messages/started.rs`)
    let mut express = std::collections::HashSet::new();
    let mut send = |k: u32| {
        let before = e.express_stats().requests_sent;
        e.request(1, &Message::short(30, &[k]), false).unwrap();
        if e.express_stats().requests_sent > before {
            express.insert(k);
        }
    };
    for k in 0..n {
        send(k);
    }
    // the first handler started (and sleeps): the target stops polling
    common::waiting_for("the target to run the first handler");
    while !std::fs::read_to_string(&effects)
        .unwrap_or_default()
        .contains("ran 0\n")
    {
        b.poll().unwrap();
        b.wait_for_activity(5);
    }
    // a moment for whatever else it would do (nothing below depends on
    // what it did meanwhile)
    let t1 = Instant::now();
    while t1.elapsed() < Duration::from_millis(200) {
        b.poll().unwrap();
        b.wait_for_activity(5);
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // one more request: something in flight, so the death is noticed
    send(n);
    // every request comes back, or (under loss) was answered: a request
    // whole in one packet may run ahead of a lost one (am.h's Order), so
    // some after a lost request 0 may have run and been answered before 0
    // started
    common::waiting_for("every request to come back or be answered");
    while e.unanswered_requests() > 0 || returned.lock().unwrap().is_empty() {
        b.poll().unwrap();
        b.wait_for_activity(5);
    }
    let ran: Vec<u32> = std::fs::read_to_string(&effects)
        .unwrap()
        .lines()
        .map(|l| l.trim_start_matches("ran ").parse().unwrap())
        .collect();
    let got: HashMap<u32, (String, bool)> = returned
        .lock()
        .unwrap()
        .iter()
        .map(|(a, s, m)| (*a, (s.clone(), *m)))
        .collect();
    eprintln!("ran at the target: {ran:?}");
    let mut may: Vec<u32> = got.iter().filter(|(_, v)| v.1).map(|(k, _)| *k).collect();
    may.sort();
    eprintln!("returned as 'may have run': {may:?}");
    let mut by_lane: Vec<u32> = express.iter().copied().collect();
    by_lane.sort();
    eprintln!("sent by the express lane: {by_lane:?}");
    assert_eq!(
        got.len(),
        returned.lock().unwrap().len(),
        "each returned once"
    );
    if !loss {
        // in order: request 0 started first and held every other
        assert_eq!(got.len(), n as usize + 1, "every request returned");
    }
    for (a, (status, m)) in &got {
        assert!(status.contains("Unreachable"), "{a}: {status}");
        if !m {
            assert!(
                !ran.contains(a),
                "{a} ran but was returned as 'did not run'"
            );
        }
    }
    assert!(
        got[&HANG].1,
        "the request whose handler started may have run"
    );
    if loss {
        // a place among the requests still waiting: at most START_WINDOW
        // of those that went by the protocol may have run
        let may_count = got
            .iter()
            .filter(|(k, v)| v.1 && !express.contains(k))
            .count();
        assert!(
            may_count <= START_WINDOW,
            "{may_count} returned as 'may have run'"
        );
    } else {
        // a request's place: among the requests before it that went by the
        // protocol (an express one has none: `am/messages/started.rs`)
        let mut place = 0;
        for k in 0..=n {
            if express.contains(&k) {
                assert!(got[&k].1, "{k}: by the express lane, it may have run");
                continue;
            }
            if place >= START_WINDOW {
                assert!(
                    !got[&k].1,
                    "{k}: behind the start window (place {place}), it cannot have run"
                );
            }
            place += 1;
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
