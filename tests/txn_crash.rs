//! At-most-once across real crashes: the target keeps a transaction log
//! (`Endpoint::log_open`) and is killed with SIGKILL at random moments
//! while the initiator keeps transactions in flight, then restarted with
//! the same log (it comes back at the same name). Its handler appends
//! "ran <arg>" to a file outside ramp before it replies. Asserted: no
//! argument ran twice; every transaction ends PROCESSED (and ran exactly
//! once), except at most one TARGET_CRASHED per kill (it ran at most
//! once); none is given up NOT_ACKED or NO_REPLY: the target is back at
//! once, and what it had not acknowledged is sent to it again.
//!
//! The target is this test binary again (`RAMP_CRASH_CHILD=1`, only
//! `child_logged_target` selected).

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ramp::am::{self, handler, Abandon, Ack, BundleMode, EndpointName, Message, Progress};

const TAG: u64 = 0xc4a5;

#[test]
fn child_logged_target() {
    if std::env::var_os("RAMP_CRASH_CHILD").is_none() {
        return;
    }
    let cfg = ramp::config::Config::from_lookup(|k| std::env::var(k).ok()).unwrap();
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e = am::allocate_endpoint(&b).unwrap();
    let log = PathBuf::from(std::env::var("RAMP_CRASH_LOG").unwrap());
    e.log_open(&log, false, &cfg).unwrap();
    e.set_tag(TAG);
    e.map(
        0,
        common::parse_name_hex(&std::env::var("RAMP_CRASH_PARENT").unwrap()),
        TAG,
    )
    .unwrap();
    e.set_expected_resources(2, 16).unwrap();
    let effects = std::env::var("RAMP_CRASH_EFFECTS").unwrap();
    let spin = std::sync::atomic::AtomicU64::new(std::process::id() as u64);
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
            // a while between the side effect and the reply: kills land here too
            let r = spin
                .load(Ordering::Relaxed)
                .wrapping_mul(6364136223846793005)
                | 1;
            spin.store(r, Ordering::Relaxed);
            std::thread::sleep(Duration::from_micros(r >> 54));
            am::reply(h.token, &Message::short(31, &[h.args[0]])).unwrap();
        }),
    );
    println!("NAME {}", common::name_hex(&e.name()));
    // until killed, or its parent is gone (its standard input closes)
    common::serve_until_stdin_closes(&b);
}

/// `RAMP_FAULT_*` for both ends of a run under injected faults.
fn fault_env(loss: bool) -> Vec<(&'static str, String)> {
    if !loss {
        return Vec::new();
    }
    let seed = (std::process::id() % 10_000).to_string();
    vec![
        ("RAMP_FAULT_LOSS", "0.05".into()),
        ("RAMP_FAULT_DUP", "0.02".into()),
        ("RAMP_FAULT_REORDER", "0.05".into()),
        ("RAMP_FAULT_SEED", seed),
    ]
}

fn spawn(dir: &Path, parent: &EndpointName, loss: bool) -> (Child, EndpointName) {
    let (child, _lines, name) = common::spawn_named(
        Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "child_logged_target",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("RAMP_CRASH_CHILD", "1")
            .env("RAMP_CRASH_PARENT", common::name_hex(parent))
            .env("RAMP_CRASH_LOG", dir.join("target.ramplog"))
            .env("RAMP_CRASH_EFFECTS", dir.join("effects"))
            .envs(fault_env(loss))
            .stdin(Stdio::piped()),
    );
    (child, name)
}

/// Waits for transaction `t` to end, however long it takes (the test's
/// watchdog limits it): its status.
fn wait_ended(e: &Arc<am::Endpoint>, t: u64) -> ramp::am::TxnState {
    loop {
        let (done, st) = e.txn_wait(t, 1000).unwrap();
        if done {
            return st;
        }
    }
}

fn ran_counts(file: &Path) -> HashMap<u32, usize> {
    let mut m = HashMap::new();
    for l in std::fs::read_to_string(file).unwrap_or_default().lines() {
        let a: u32 = l.trim_start_matches("ran ").parse().unwrap();
        *m.entry(a).or_default() += 1;
    }
    m
}

#[test]
fn a_logged_target_killed_at_random_runs_no_handler_twice() {
    let _w = common::watchdog("txn_crash", Duration::from_secs(240));
    if std::env::var_os("RAMP_CRASH_CHILD").is_some()
        || std::env::var_os("RAMP_CRASH_INIT").is_some()
    {
        return;
    }
    kill_at_random(false, 600);
}

/// The same under injected faults at both ends (`RAMP_FAULT_LOSS=0.05`,
/// `DUP=0.02`, `REORDER=0.05`, as c-tests/run.sh's loss pass).
#[test]
fn a_logged_target_killed_at_random_under_loss_runs_no_handler_twice() {
    let _w = common::watchdog("txn_crash (loss)", Duration::from_secs(300));
    if std::env::var_os("RAMP_CRASH_CHILD").is_some()
        || std::env::var_os("RAMP_CRASH_INIT").is_some()
    {
        return;
    }
    kill_at_random(true, 600);
}

/// Enough transactions that the target's log is compacted (its live state
/// written into its other record area) several times between and after
/// the kills: a restarted target reads the area of the latest generation
/// and nothing an area held before.
#[test]
fn a_logged_target_killed_at_random_through_compactions_runs_no_handler_twice() {
    let _w = common::watchdog("txn_crash (compactions)", Duration::from_secs(300));
    if std::env::var_os("RAMP_CRASH_CHILD").is_some()
        || std::env::var_os("RAMP_CRASH_INIT").is_some()
    {
        return;
    }
    kill_at_random(false, 12_000);
}

/// Kills the logged target at random moments (4 times) while `total`
/// transactions go to it; checks every handler ran at most once, every
/// PROCESSED one and every acknowledged one exactly once unless the target
/// crashed while it ran (TARGET_CRASHED). A moment is a point of the
/// exchange, not of the clock: the kill comes after a random number of
/// batches, while the next batch is in flight, after a random number of
/// polls (so it lands before, during or after the target's handlers):
/// whatever the speed, the target is killed 4 times with transactions in
/// flight.
fn kill_at_random(loss: bool, total: u32) {
    let tag = match (loss, total) {
        (true, _) => "loss",
        (false, 600) => "plain",
        _ => "long",
    };
    let dir = std::env::temp_dir().join(format!("ramp-crash-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let faults = fault_env(loss);
    let cfg = ramp::config::Config::from_lookup(|k| match k {
        "RAMP_PEER_TIMEOUT_MS" => Some("5000".into()),
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
    let me = e.name();
    let (child, name) = spawn(&dir, &me, loss);
    e.set_tag(TAG);
    e.map(1, name, TAG).unwrap();
    e.set_expected_resources(2, 8).unwrap();
    e.set_handler(31, handler(|_| {}));

    // the kills: after which batches (4 of the first half's), and how many
    // polls into the batch
    let seed = std::process::id() as u64 ^ 0x9e37_79b9_7f4a_7c15;
    eprintln!("txn_crash: seed {seed:#x}");
    let mut r = seed;
    let mut rand = move || {
        r = r
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        r >> 33
    };
    let batches = u64::from(total).div_ceil(8);
    let mut kill_at: Vec<(u64, u64)> = (0..4)
        .map(|_| (rand() % (batches / 2).max(1), rand() % 2000))
        .collect();
    kill_at.sort_unstable();
    let mut child = child;
    let mut kills = 0;

    let mut outcome: HashMap<u32, (Abandon, Ack)> = HashMap::new();
    let mut processed = 0;
    let mut next = 0u32;
    let mut batch_no = 0u64;
    while next < total {
        let mut batch = Vec::new();
        for a in next..total.min(next + 8) {
            batch.push((a, e.request_txn(1, &Message::short(30, &[a])).unwrap()));
        }
        next = total.min(next + 8);
        while kill_at.first().is_some_and(|k| k.0 == batch_no) {
            let (_, polls) = kill_at.remove(0);
            for _ in 0..polls {
                b.poll().unwrap();
            }
            child.kill().unwrap(); // SIGKILL
            child.wait().unwrap();
            let (n, again) = spawn(&dir, &me, loss);
            assert_eq!(again, name, "the restarted target has another name");
            child = n;
            kills += 1;
        }
        batch_no += 1;
        common::waiting_for("the transactions of a batch to end");
        for (a, t) in batch {
            let st = wait_ended(&e, t);
            e.txn_release(t).unwrap();
            if st.progress == Progress::Processed {
                processed += 1;
                outcome.insert(a, (Abandon::None, st.ack));
            } else {
                outcome.insert(a, (st.abandon, st.ack));
            }
        }
    }
    let st = e.statistics();
    eprintln!(
        "txn_crash ({tag}): {} packets sent, {} retransmitted, {} duplicates dropped",
        st.packets_sent, st.packets_retransmitted, st.duplicates_dropped
    );
    if loss {
        // the faults were there (5% of the datagrams lost each way)
        assert!(st.packets_retransmitted > 0, "no retransmission under loss");
    }
    child.kill().ok();
    child.wait().ok();
    let log = ramp::txlog::inspect(&dir.join("target.ramplog"));
    let (_, _, report) = log.unwrap_or_else(|e| panic!("the target's log: {e}"));
    eprintln!(
        "txn_crash ({tag}): the target's log is of generation {} (compactions)",
        report.generation
    );
    if total > 10_000 {
        assert!(report.generation >= 2, "{report:?}");
    }
    let ran = ran_counts(&dir.join("effects"));
    let mut crashed = 0;
    for (a, n) in &ran {
        assert!(*n <= 1, "the handler of {a} ran {n} times");
    }
    for (a, (o, ack)) in &outcome {
        let n = ran.get(a).copied().unwrap_or(0);
        if *ack == Ack::Acked && *o != Abandon::TargetCrashed {
            // acked: the target logged its start before the ack; it ran
            assert_eq!(n, 1, "{a} acked ({o:?}) but ran {n} times");
        }
        match o {
            Abandon::None => assert_eq!(n, 1, "{a} PROCESSED but ran {n} times"),
            Abandon::TargetCrashed => {
                crashed += 1;
                assert!(n <= 1)
            }
            other => panic!("{a} ended {other:?} (acked: {ack:?}), ran {n} times"),
        }
    }
    eprintln!(
        "txn_crash ({tag}): {kills} kills, {processed} processed, {crashed} target crashed, {} others",
        outcome.len() - processed - crashed
    );
    assert_eq!(kills, 4, "the target was killed 4 times");
    assert!(crashed <= kills, "{crashed} TARGET_CRASHED, {kills} kills");
    std::fs::remove_dir_all(&dir).ok();
}

/// A logged initiator: issues transactions (handler 40, argument i) in
/// batches of 8 until killed; with `RAMP_CRASH_RESUME=1` it reopens its
/// log, lists what it had unfinished, waits for each (they are sent
/// again) and prints how each ended.
#[test]
fn child_logged_initiator() {
    if std::env::var_os("RAMP_CRASH_INIT").is_none() {
        return;
    }
    let cfg = ramp::config::Config::from_lookup(|k| std::env::var(k).ok()).unwrap();
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e = am::allocate_endpoint(&b).unwrap();
    e.log_open(
        Path::new(&std::env::var("RAMP_CRASH_LOG").unwrap()),
        false,
        &cfg,
    )
    .unwrap();
    e.set_tag(TAG);
    e.map(
        1,
        common::parse_name_hex(&std::env::var("RAMP_CRASH_PARENT").unwrap()),
        TAG,
    )
    .unwrap();
    e.set_expected_resources(2, 8).unwrap();
    e.set_handler(41, handler(|_| {}));
    println!("NAME {}", common::name_hex(&e.name()));
    if std::env::var_os("RAMP_CRASH_RESUME").is_some() {
        let mut open = Vec::new();
        for p in [
            Progress::NotSent,
            Progress::RequestSent,
            Progress::Processing,
        ] {
            open.extend(e.txn_list(p));
        }
        println!("LISTED {}", open.len());
        for t in open {
            let st = wait_ended(&e, t);
            println!("OUT {t} true {:?} {:?}", st.progress, st.abandon);
        }
        println!("END");
        return;
    }
    for i in 0..100_000u32 {
        let batch: Vec<u64> = (0..8)
            .map(|k| e.request_txn(1, &Message::short(40, &[i * 8 + k])).unwrap())
            .collect();
        for t in batch {
            wait_ended(&e, t);
            e.txn_release(t).unwrap();
        }
    }
}

#[test]
fn a_logged_initiator_killed_at_random_resumes_its_transactions() {
    let _w = common::watchdog("txn_crash_init", Duration::from_secs(240));
    if std::env::var_os("RAMP_CRASH_INIT").is_some()
        || std::env::var_os("RAMP_CRASH_CHILD").is_some()
    {
        return;
    }
    let dir = std::env::temp_dir().join(format!("ramp-crash-init-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e = am::allocate_endpoint(&b).unwrap();
    // replies to the killed initiator come back here: expected
    e.set_handler(0, handler(|_| {}));
    let runs: Arc<Mutex<HashMap<u32, usize>>> = Default::default();
    let r = runs.clone();
    e.set_handler(
        40,
        handler(move |h| {
            *r.lock().unwrap().entry(h.args[0]).or_default() += 1;
            am::reply(h.token, &Message::short(41, &[])).unwrap();
        }),
    );
    let start = |resume: bool| {
        let mut c = Command::new(std::env::current_exe().unwrap());
        c.args([
            "--exact",
            "child_logged_initiator",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("RAMP_CRASH_INIT", "1")
        .env("RAMP_CRASH_PARENT", common::name_hex(&e.name()))
        .env("RAMP_CRASH_LOG", dir.join("init.ramplog"))
        .stdout(Stdio::piped());
        if resume {
            c.env("RAMP_CRASH_RESUME", "1");
        }
        let mut child = c.spawn().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        (child, lines)
    };
    let (mut child, mut lines) = start(false);
    let name = loop {
        let l = lines.next().expect("child output ended").unwrap();
        if let Some(h) = l.split("NAME ").nth(1) {
            break common::parse_name_hex(h);
        }
    };
    e.set_tag(TAG);
    e.map(0, name, TAG).unwrap();
    e.set_expected_resources(2, 16).unwrap();
    // killed at a random point of its work: once 1 to 400 of its
    // transactions ran here (then a random number of polls more)
    let seed = std::process::id() as u64;
    let ran_before_kill = 1 + (seed % 400) as usize;
    common::waiting_for("the initiator's transactions to run");
    while runs.lock().unwrap().values().sum::<usize>() < ran_before_kill {
        b.poll().unwrap();
    }
    for _ in 0..(seed >> 9) % 1000 {
        b.poll().unwrap();
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before: usize = runs.lock().unwrap().values().sum();
    let (mut child, lines) = start(true);
    // poll while the restarted initiator resumes
    let out = std::thread::spawn(move || lines.map(|l| l.unwrap()).collect::<Vec<String>>());
    while !out.is_finished() {
        b.poll().unwrap();
    }
    child.wait().unwrap();
    let out = out.join().unwrap();
    let name2 = out
        .iter()
        .find_map(|l| l.split("NAME ").nth(1))
        .map(common::parse_name_hex);
    assert_eq!(
        name2,
        Some(name),
        "the restarted initiator has another name"
    );
    assert!(out.iter().any(|l| l == "END"), "{out:?}");
    let listed: usize = out
        .iter()
        .find_map(|l| l.strip_prefix("LISTED ").map(|n| n.parse().unwrap()))
        .unwrap();
    for l in out.iter().filter(|l| l.starts_with("OUT ")) {
        assert!(
            l.contains(" true Processed None"),
            "a resumed transaction: {l}"
        );
    }
    let runs = runs.lock().unwrap();
    for (a, n) in runs.iter() {
        assert!(*n <= 1, "the handler of {a} ran {n} times");
    }
    let after: usize = runs.values().sum();
    eprintln!("txn_crash_init: {before} ran before the kill, {listed} resumed, {after} ran in all");
    assert!(
        before > 0,
        "nothing ran before the kill: the test proved nothing"
    );
    std::fs::remove_dir_all(&dir).ok();
}
