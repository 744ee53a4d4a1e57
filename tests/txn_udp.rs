//! Transactions over real UDP between two processes, the target killed
//! with SIGKILL: while its handler runs (the initiator had the ack: it
//! ends NO_REPLY, "may have run", noticed by the probe although nothing
//! else was in flight), or before the request reached it (no ack; NO_REPLY,
//! "may have run": from the initiator this looks like a target whose ack
//! was lost before it died, so NOT_ACKED, "never ran", cannot be said).
//! The handler's side effect is a line appended to a file outside ramp:
//! it ran exactly once, or not at all.
//!
//! The target is this test binary again, run with `RAMP_TXN_CHILD=1` and
//! only `child_target` selected.

mod common;

use std::io::Write;
use std::process::{Child, Command};
use std::sync::Arc;
use std::time::Duration;

use ramp::am::{self, handler, Abandon, Ack, Bundle, BundleMode, Endpoint, Message, Progress};

const TAG: u64 = 0x7a11;

/// The target: handler 20 replies; handler 21 appends a line to
/// `RAMP_TXN_FILE` and then never returns (until killed).
#[test]
fn child_target() {
    if std::env::var_os("RAMP_TXN_CHILD").is_none() {
        return;
    }
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e = am::allocate_endpoint(&b).unwrap();
    e.set_tag(TAG);
    e.map(
        0,
        common::parse_name_hex(&std::env::var("RAMP_TXN_PARENT").unwrap()),
        TAG,
    )
    .unwrap();
    e.set_expected_resources(2, 16).unwrap();
    e.set_handler(
        20,
        handler(|h| am::reply(h.token, &Message::short(22, &[h.args[0]])).unwrap()),
    );
    e.set_handler(
        21,
        handler(|_| {
            let path = std::env::var("RAMP_TXN_FILE").unwrap();
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(path)
                .unwrap();
            writeln!(f, "ran").unwrap();
            drop(f);
            loop {
                std::thread::sleep(Duration::from_millis(100));
            }
        }),
    );
    println!("NAME {}", common::name_hex(&e.name()));
    // until killed, or its parent is gone (its standard input closes)
    common::serve_until_stdin_closes(&b);
}

/// The initiator (peer timeout 500 ms) and its target child, mapped at 1,
/// with one transaction through (the association is up).
fn setup(file: &std::path::Path) -> (Arc<Bundle>, Arc<Endpoint>, Child) {
    let cfg = ramp::config::Config::from_lookup(|k| match k {
        "RAMP_PEER_TIMEOUT_MS" => Some("500".into()),
        _ => std::env::var(k).ok(),
    })
    .unwrap();
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e = am::allocate_endpoint_with(&b, &cfg).unwrap();
    let (child, _lines, name) = common::spawn_named(
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "child_target", "--nocapture", "--test-threads=1"])
            .env("RAMP_TXN_CHILD", "1")
            .env("RAMP_TXN_PARENT", common::name_hex(&e.name()))
            .env("RAMP_TXN_FILE", file)
            .stdin(std::process::Stdio::piped()),
    );
    e.set_tag(TAG);
    e.map(1, name, TAG).unwrap();
    e.set_expected_resources(2, 16).unwrap();
    e.set_handler(22, handler(|_| {}));
    let t = e.request_txn(1, &Message::short(20, &[1])).unwrap();
    let (done, st) = loop {
        let (done, st) = e.txn_wait(t, 1000).unwrap();
        if done {
            break (done, st);
        }
    };
    assert!(done && st.progress == Progress::Processed, "{st:?}");
    e.txn_release(t).unwrap();
    (b, e, child)
}

fn side_effects(file: &std::path::Path) -> usize {
    std::fs::read_to_string(file).map_or(0, |s| s.lines().count())
}

#[test]
fn a_target_killed_while_its_handler_runs_ends_no_reply_and_ran_once() {
    let _w = common::watchdog("txn_udp::killed_while_running", Duration::from_secs(120));
    if std::env::var_os("RAMP_TXN_CHILD").is_some() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("ramp-txn-{}-a", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("effects");
    let (_b, e, mut child) = setup(&file);
    let t = e.request_txn(1, &Message::short(21, &[])).unwrap();
    // until the ack: the handler started. (The target stops polling while
    // its handler runs: past the peer timeout the initiator may end the
    // transaction before the kill, the same way.)
    common::waiting_for("the ack of the transaction whose handler never returns");
    loop {
        let (done, st) = e.txn_wait(t, 50).unwrap();
        if done || st.progress == Progress::Processing {
            assert_eq!(st.ack, Ack::Acked, "{st:?}");
            break;
        }
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    common::waiting_for("the transaction to end after the kill");
    let (done, st) = loop {
        let (done, st) = e.txn_wait(t, 1000).unwrap();
        if done {
            break (done, st);
        }
    };
    assert!(done, "{st:?}");
    assert_eq!(st.ack, Ack::Acked);
    assert_eq!(st.abandon, Abandon::NoReply, "{st:?}");
    assert_eq!(st.status, ramp::error::ReturnStatus::Unreachable as i32);
    assert_eq!(side_effects(&file), 1, "the handler ran once");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_target_killed_before_the_request_ends_unacked_no_reply_and_never_ran() {
    let _w = common::watchdog("txn_udp::killed_before", Duration::from_secs(120));
    if std::env::var_os("RAMP_TXN_CHILD").is_some() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("ramp-txn-{}-b", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("effects");
    let (_b, e, mut child) = setup(&file);
    child.kill().unwrap();
    child.wait().unwrap();
    let ts: Vec<u64> = (0..20)
        .map(|_| e.request_txn(1, &Message::short(21, &[])).unwrap())
        .collect();
    common::waiting_for("the transactions to the killed target to end");
    for t in ts {
        let (done, st) = loop {
            let (done, st) = e.txn_wait(t, 1000).unwrap();
            if done {
                break (done, st);
            }
        };
        assert!(done, "{st:?}");
        assert_eq!(st.ack, Ack::None, "{st:?}");
        // given up in the network: it may have arrived (its ack lost), so
        // never NOT_ACKED here
        assert_eq!(st.abandon, Abandon::NoReply, "{st:?}");
        assert_eq!(st.status, ramp::error::ReturnStatus::Unreachable as i32);
        assert_eq!(st.progress, Progress::RequestSent);
    }
    assert_eq!(side_effects(&file), 0, "nothing ran");
    assert!(e.txn_list(Progress::RequestSent).len() == 20);
    std::fs::remove_dir_all(&dir).ok();
}
