//! Transactions across crashes, in the simulated world (ramp-ext.md
//! section 3): an initiator issues short `request_txn`s to a target; both
//! keep a transaction log; the target is killed (as by `kill -9`) at
//! random moments of the exchange, between any two steps of the world or
//! inside its handler after the side effect, and restarted at once from
//! its log. Asserted, for every seed: no request call waits for ever on a
//! target that is alive (a credit lent to an association that ended comes
//! back); every transaction ends PROCESSED, except at most one
//! TARGET_CRASHED per kill inside a handler; none ends NOT_ACKED; no
//! handler ran twice, and every PROCESSED one ran exactly once.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{handler, Abandon, EndpointName, Message, Progress};
use crate::config::Config;
use crate::rng::Rng;
use crate::sim::{crash_here, lan, seeds, FaultConfig, World};
use crate::time::{MICROS, MILLIS};

const TAG: u64 = 0xc4a5;
const WORK: u8 = 30;
const DONE: u8 = 31;
/// The initiator's translation index of the target.
const TARGET: u32 = 1;

/// What the target's handler did, across its incarnations: its argument,
/// once per run (the side effect "in a file", kept by the test).
type Effects = Arc<Mutex<Vec<u32>>>;

struct Crash {
    effects: Effects,
    /// The next handler run kills its node after its side effect.
    in_handler: Arc<AtomicBool>,
    /// Kills inside a handler that happened.
    handler_kills: Arc<AtomicUsize>,
    /// The target's node now.
    target: Arc<AtomicUsize>,
}

fn cfg() -> Config {
    let mut c = Config::from_lookup(|_| None).unwrap();
    c.proto.peer_timeout = 5_000 * MILLIS;
    c
}

fn dir(name: &str, seed: u64) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ramp-sim-{name}-{}-{seed}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Starts the target (again) from its log at `log`: it comes back at the
/// logged address, as the same endpoint.
fn start_target(w: &World, log: &Path, initiator: EndpointName, c: &Crash) -> usize {
    let n = w.node(&cfg());
    n.ep.log_open(log, false, &cfg()).unwrap();
    n.ep.set_tag(TAG);
    n.ep.map(0, initiator, TAG).unwrap();
    n.ep.set_expected_resources(2, 16).unwrap();
    let (effects, crash, kills) = (
        c.effects.clone(),
        c.in_handler.clone(),
        c.handler_kills.clone(),
    );
    n.ep.set_handler(
        WORK,
        handler(move |h| {
            effects.lock().push(h.args[0]);
            if crash.swap(false, Ordering::SeqCst) {
                kills.fetch_add(1, Ordering::SeqCst);
                crash_here();
            }
            super::reply(h.token, &Message::short(DONE, &[h.args[0]])).unwrap();
        }),
    );
    n.index
}

/// Kills the target `left` more times, each a few ms after the last: half
/// of them inside its next handler run, half between steps.
fn schedule_kills(w: &World, rng: Arc<Mutex<Rng>>, left: u32, c: Arc<Crash>) {
    if left == 0 {
        return;
    }
    let gap = {
        let mut r = rng.lock();
        2 * MILLIS + r.below(8 * MILLIS)
    };
    let at = w.now().plus(gap);
    w.at(at, move |w| {
        let inside = rng.lock().chance(0.5);
        if inside {
            c.in_handler.store(true, Ordering::SeqCst);
        } else {
            w.kill(c.target.load(Ordering::SeqCst));
        }
        schedule_kills(w, rng, left - 1, c);
    });
}

fn run(name: &str, seed: u64, faults: FaultConfig, total: u32) {
    let w = World::new(FaultConfig { seed, ..faults });
    let d = dir(name, seed);
    let n0 = w.node(&cfg());
    n0.ep
        .log_open(&d.join("initiator.ramplog"), false, &cfg())
        .unwrap();
    let crash = Arc::new(Crash {
        effects: Default::default(),
        in_handler: Default::default(),
        handler_kills: Default::default(),
        target: Default::default(),
    });
    let tlog = d.join("target.ramplog");
    let t = start_target(&w, &tlog, n0.ep.name(), &crash);
    crash.target.store(t, Ordering::SeqCst);
    let target_name = w.node_name(t);
    n0.ep.set_tag(TAG);
    n0.ep.map(TARGET as i64, target_name, TAG).unwrap();
    n0.ep.set_expected_resources(2, 8).unwrap();
    n0.ep.set_handler(DONE, handler(|_| {}));
    // a killed target is restarted at once, from its log
    {
        let (c, log, me) = (crash.clone(), tlog.clone(), n0.ep.name());
        w.on_kill(move |w, i| {
            if i == c.target.load(Ordering::SeqCst) {
                let n = start_target(w, &log, me, &c);
                c.target.store(n, Ordering::SeqCst);
            }
        });
    }
    let rng = Arc::new(Mutex::new(Rng::new(seed ^ 0x6b11)));
    schedule_kills(&w, rng, 4, crash.clone());

    let mut processed = Vec::new();
    let mut crashed = Vec::new();
    let mut longest_call = 0;
    let mut next = 0u32;
    while next < total {
        let mut batch = Vec::new();
        for _ in 0..8.min(total - next) {
            let t0 = w.now();
            let txn = n0
                .ep
                .request_txn(TARGET, &Message::short(WORK, &[next]))
                .unwrap();
            longest_call = longest_call.max(w.now().since(t0));
            batch.push((next, txn));
            next += 1;
        }
        for (a, txn) in batch {
            let (done, st) = n0.ep.txn_wait(txn, 60_000).unwrap();
            assert!(done, "seed {seed}: transaction of {a} not ended: {st:?}");
            n0.ep.txn_release(txn).unwrap();
            match (st.progress, st.abandon) {
                (Progress::Processed, _) => processed.push(a),
                (_, Abandon::TargetCrashed) => crashed.push(a),
                _ => panic!("seed {seed}: transaction of {a} ended {st:?}"),
            }
        }
    }
    let ran = crash.effects.lock().clone();
    let mut count = vec![0u32; total as usize];
    for a in ran {
        count[a as usize] += 1;
    }
    for &a in &processed {
        assert_eq!(
            count[a as usize], 1,
            "seed {seed}: {a} PROCESSED ran {} times",
            count[a as usize]
        );
    }
    for &a in &crashed {
        assert!(count[a as usize] <= 1, "seed {seed}: {a} ran twice");
    }
    let kills_inside = crash.handler_kills.load(Ordering::SeqCst);
    assert!(
        crashed.len() <= kills_inside,
        "seed {seed}: {} TARGET_CRASHED, {kills_inside} kills inside a handler",
        crashed.len()
    );
    assert!(
        longest_call < 10_000 * MILLIS,
        "seed {seed}: a request call waited {longest_call} ns"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_logged_target_killed_at_random_ends_every_transaction() {
    for seed in seeds(8) {
        run("txn-crash", seed, lan(), 600);
    }
}

#[test]
fn a_logged_target_killed_at_random_under_loss_ends_every_transaction() {
    let faults = FaultConfig {
        loss: 0.05,
        dup: 0.02,
        reorder: 0.05,
        jitter: 5 * MICROS,
        ..lan()
    };
    for seed in seeds(8) {
        run("txn-crash-loss", seed, faults.clone(), 600);
    }
}
