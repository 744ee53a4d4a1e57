//! Transactions across crashes, in the simulated world (ramp-ext.md
//! section 3): an initiator issues short `request_txn`s to a target; both
//! keep a transaction log; either is killed (as by `kill -9`) at random
//! moments of the exchange, between any two steps of the world or inside
//! its handler (the target's after its side effect, the initiator's reply
//! handler), and restarted at once from its log: the target comes back at
//! its name, the initiator lists its transactions (`txn_list`, which
//! resumes the unfinished ones) and waits for them. Asserted, for every
//! seed: no request call waits for ever on a target that is alive (a
//! credit lent to an association that ended comes back; a watchdog fails
//! a call that waits 10 s); every transaction ends PROCESSED, except at
//! most one TARGET_CRASHED per kill inside a target's handler; none ends
//! NOT_ACKED; no handler ran twice, and every PROCESSED one ran exactly
//! once.

use std::collections::{BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::am::{handler, Abandon, EndpointName, Message, Progress};
use crate::config::Config;
use crate::rng::Rng;
use crate::sim::{crash_here, lan, seeds, FaultConfig, Node, World};
use crate::time::{Instant, Nanos, MICROS, MILLIS};

const TAG: u64 = 0xc4a5;
const WORK: u8 = 30;
const DONE: u8 = 31;
/// The initiator's translation index of the target.
const TARGET: u32 = 1;
/// The initiator's credits per destination.
const DEPTH: i32 = 8;
/// A request call that waits longer than this (virtual) fails the test.
const CALL_LIMIT: Nanos = 10_000 * MILLIS;

/// One run's shape.
#[derive(Clone)]
struct Scenario {
    name: &'static str,
    total: u32,
    /// Transactions issued and not yet waited for, at most: beyond
    /// `DEPTH`, request calls wait for credits.
    window: usize,
    kills: u32,
    /// The initiator is killed too (else only the target).
    initiator_too: bool,
    faults: FaultConfig,
}

/// What survives the processes (their "files"), and what the kills did.
#[derive(Default)]
struct Shared {
    /// The target's handler's side effect: its argument, once per run.
    effects: Mutex<Vec<u32>>,
    /// The next handler run kills its node (the target's after its side
    /// effect; the initiator's reply handler).
    target_in_handler: AtomicBool,
    initiator_in_handler: AtomicBool,
    /// Kills inside a target's handler that happened.
    target_handler_kills: AtomicUsize,
    /// Restarts of the initiator.
    initiator_restarts: AtomicUsize,
    /// The nodes now.
    target: AtomicUsize,
    initiator: AtomicUsize,
    /// When the request call in progress began (the watchdog's).
    call_since: Mutex<Option<Instant>>,
}

/// The initiator program's own file: what it issued and how each ended.
#[derive(Default)]
struct Prog {
    /// The argument of the next transaction.
    next: u32,
    /// A request call for `next` was made: a kill may have cut it.
    calling: bool,
    /// Issued and not yet ended, oldest first: (id, argument).
    waiting: VecDeque<(u64, u32)>,
    /// Ended and recorded (released unless a kill came first).
    recorded: BTreeSet<u64>,
    processed: Vec<u32>,
    crashed: Vec<u32>,
    longest_call: Nanos,
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
fn start_target(w: &World, log: &Path, initiator: EndpointName, sh: &Arc<Shared>) -> usize {
    let n = w.node(&cfg());
    n.ep.log_open(log, false, &cfg()).unwrap();
    n.ep.set_tag(TAG);
    n.ep.map(0, initiator, TAG).unwrap();
    n.ep.set_expected_resources(2, 16).unwrap();
    // (a reply to an initiator that restarted comes back: its log keeps it)
    n.ep.set_handler(0, handler(|_| {}));
    let sh = sh.clone();
    n.ep.set_handler(
        WORK,
        handler(move |h| {
            sh.effects.lock().push(h.args[0]);
            if sh.target_in_handler.swap(false, Ordering::SeqCst) {
                sh.target_handler_kills.fetch_add(1, Ordering::SeqCst);
                crash_here();
            }
            crate::am::reply(h.token, &Message::short(DONE, &[h.args[0]])).unwrap();
        }),
    );
    n.index
}

/// Starts the initiator (again) from its log at `log`.
fn open_initiator(w: &World, log: &Path) -> Node {
    let n = w.node(&cfg());
    n.ep.log_open(log, false, &cfg()).unwrap();
    n
}

/// The initiator maps the target and takes its replies.
fn ready_initiator(n: &Node, target: EndpointName, sh: &Arc<Shared>) {
    n.ep.set_tag(TAG);
    n.ep.map(TARGET as i64, target, TAG).unwrap();
    n.ep.set_expected_resources(2, DEPTH).unwrap();
    let sh = sh.clone();
    n.ep.set_handler(
        DONE,
        handler(move |_| {
            if sh.initiator_in_handler.swap(false, Ordering::SeqCst) {
                crash_here();
            }
        }),
    );
}

/// Kills a node `left` more times, each a few ms after the last: the
/// target (half of the time inside its next handler run), or, with
/// `initiator_too`, as often the initiator (half of the time inside its
/// next reply handler).
fn schedule_kills(w: &World, rng: Arc<Mutex<Rng>>, left: u32, sh: Arc<Shared>, both: bool) {
    if left == 0 {
        return;
    }
    let gap = 2 * MILLIS + rng.lock().below(8 * MILLIS);
    let at = w.now().plus(gap);
    w.at(at, move |w| {
        let kind = rng.lock().below(if both { 4 } else { 2 });
        match kind {
            0 => sh.target_in_handler.store(true, Ordering::SeqCst),
            1 => w.kill(sh.target.load(Ordering::SeqCst)),
            2 => sh.initiator_in_handler.store(true, Ordering::SeqCst),
            _ => w.kill(sh.initiator.load(Ordering::SeqCst)),
        }
        schedule_kills(w, rng, left - 1, sh, both);
    });
}

/// Fails the test when a request call has waited `CALL_LIMIT`.
fn watchdog(w: &World, sh: Arc<Shared>) {
    let at = w.now().plus(1_000 * MILLIS);
    w.at(at, move |w| {
        if let Some(t0) = *sh.call_since.lock() {
            let waited = w.now().since(t0);
            assert!(
                waited < CALL_LIMIT,
                "seed {}: a request call has waited {waited} ns",
                w.seed()
            );
        }
        watchdog(w, sh);
    });
}

/// A restarted initiator takes up its transactions: it lists them (which
/// resumes the unfinished ones); one it does not know is the one whose
/// request call a kill cut (after the log had it).
fn take_up(n: &Node, prog: &Mutex<Prog>, seed: u64) {
    let mut listed = Vec::new();
    for p in [
        Progress::NotSent,
        Progress::RequestSent,
        Progress::Processing,
        Progress::Processed,
    ] {
        listed.extend(n.ep.txn_list(p));
    }
    let mut p = prog.lock();
    for &(id, a) in &p.waiting {
        assert!(
            listed.contains(&id),
            "seed {seed}: {a}'s id {id} not listed"
        );
    }
    for id in listed {
        if p.recorded.contains(&id) {
            n.ep.txn_release(id).unwrap();
        } else if !p.waiting.iter().any(|&(t, _)| t == id) {
            assert!(p.calling, "seed {seed}: id {id} listed, never issued");
            let a = p.next;
            p.waiting.push_back((id, a));
            p.next += 1;
            p.calling = false;
        }
    }
    // (a call the kill cut before the log had it is made again)
    p.calling = false;
}

/// One run of the initiator's program, until every transaction ended.
fn program(w: &World, n: &Node, sh: &Shared, prog: &Mutex<Prog>, sc: &Scenario, seed: u64) {
    loop {
        let (issue, oldest) = {
            let p = prog.lock();
            let issue = p.waiting.len() < sc.window && p.next < sc.total;
            (issue.then_some(p.next), p.waiting.front().copied())
        };
        if let Some(a) = issue {
            prog.lock().calling = true;
            let t0 = w.now();
            *sh.call_since.lock() = Some(t0);
            let txn =
                n.ep.request_txn(TARGET, &Message::short(WORK, &[a]))
                    .unwrap();
            *sh.call_since.lock() = None;
            let mut p = prog.lock();
            p.longest_call = p.longest_call.max(w.now().since(t0));
            p.calling = false;
            p.waiting.push_back((txn, a));
            p.next += 1;
            continue;
        }
        let Some((txn, a)) = oldest else {
            return;
        };
        let (done, st) = n.ep.txn_wait(txn, 60_000).unwrap();
        assert!(done, "seed {seed}: transaction of {a} not ended: {st:?}");
        {
            let mut p = prog.lock();
            p.waiting.pop_front();
            match (st.progress, st.abandon) {
                (Progress::Processed, _) => p.processed.push(a),
                (_, Abandon::TargetCrashed) => p.crashed.push(a),
                _ => panic!("seed {seed}: transaction of {a} ended {st:?}"),
            }
            p.recorded.insert(txn);
        }
        n.ep.txn_release(txn).unwrap();
    }
}

fn run(sc: &Scenario, seed: u64) {
    let w = World::new(FaultConfig {
        seed,
        ..sc.faults.clone()
    });
    let d = dir(sc.name, seed);
    let sh = Arc::new(Shared::default());
    let ilog = d.join("initiator.ramplog");
    let mut n0 = open_initiator(&w, &ilog);
    sh.initiator.store(n0.index, Ordering::SeqCst);
    let me = n0.ep.name();
    let tlog = d.join("target.ramplog");
    let t = start_target(&w, &tlog, me, &sh);
    sh.target.store(t, Ordering::SeqCst);
    let target_name = w.node_name(t);
    ready_initiator(&n0, target_name, &sh);
    // a killed target is restarted at once, from its log
    {
        let (sh, log) = (sh.clone(), tlog.clone());
        w.on_kill(move |w, i| {
            if i == sh.target.load(Ordering::SeqCst) {
                let n = start_target(w, &log, me, &sh);
                sh.target.store(n, Ordering::SeqCst);
            }
        });
    }
    let rng = Arc::new(Mutex::new(Rng::new(seed ^ 0x6b11)));
    schedule_kills(&w, rng, sc.kills, sh.clone(), sc.initiator_too);
    watchdog(&w, sh.clone());

    let prog = Mutex::new(Prog::default());
    let mut restarted = false;
    loop {
        let ran = w.run_program(n0.index, || {
            if restarted {
                take_up(&n0, &prog, seed);
            }
            program(&w, &n0, &sh, &prog, sc, seed)
        });
        if ran.is_some() {
            break;
        }
        // the initiator was killed: restarted at once, from its log
        sh.initiator_restarts.fetch_add(1, Ordering::SeqCst);
        *sh.call_since.lock() = None;
        // (its endpoint, and with it the log's lock, goes first)
        drop(n0);
        n0 = open_initiator(&w, &ilog);
        ready_initiator(&n0, target_name, &sh);
        sh.initiator.store(n0.index, Ordering::SeqCst);
        restarted = true;
    }

    let p = prog.lock();
    let mut count = vec![0u32; sc.total as usize];
    for &a in sh.effects.lock().iter() {
        count[a as usize] += 1;
    }
    for &a in &p.processed {
        assert_eq!(
            count[a as usize], 1,
            "seed {seed}: {a} PROCESSED ran {} times",
            count[a as usize]
        );
    }
    for &a in &p.crashed {
        assert!(count[a as usize] <= 1, "seed {seed}: {a} ran twice");
    }
    assert_eq!(
        p.processed.len() + p.crashed.len(),
        sc.total as usize,
        "seed {seed}: every transaction ended"
    );
    let kills_inside = sh.target_handler_kills.load(Ordering::SeqCst);
    assert!(
        p.crashed.len() <= kills_inside,
        "seed {seed}: {} TARGET_CRASHED, {kills_inside} kills inside a handler",
        p.crashed.len()
    );
    assert!(
        p.longest_call < CALL_LIMIT,
        "seed {seed}: a request call waited {} ns",
        p.longest_call
    );
    let _ = std::fs::remove_dir_all(&d);
}

fn lossy() -> FaultConfig {
    FaultConfig {
        loss: 0.05,
        dup: 0.02,
        reorder: 0.05,
        jitter: 5 * MICROS,
        ..lan()
    }
}

fn target_only(name: &'static str, total: u32, window: usize, faults: FaultConfig) -> Scenario {
    Scenario {
        name,
        total,
        window,
        kills: 4,
        initiator_too: false,
        faults,
    }
}

#[test]
fn a_logged_target_killed_at_random_ends_every_transaction() {
    let sc = target_only("txn-crash", 600, DEPTH as usize, lan());
    for seed in seeds(8) {
        run(&sc, seed);
    }
}

#[test]
fn a_logged_target_killed_at_random_under_loss_ends_every_transaction() {
    let sc = target_only("txn-crash-loss", 600, DEPTH as usize, lossy());
    for seed in seeds(8) {
        run(&sc, seed);
    }
}

/// The issue's initiator: 3,000 requests back to back (each call waits
/// for a credit the ones before it hold), then waited for.
#[test]
fn a_stream_of_requests_to_a_logged_target_killed_at_random_never_waits_for_ever() {
    let sc = target_only("txn-crash-stream", 3000, 3000, lan());
    for seed in seeds(4) {
        run(&sc, seed);
    }
    let sc = target_only("txn-crash-stream-loss", 3000, 3000, lossy());
    for seed in seeds(4) {
        run(&sc, seed);
    }
}

#[test]
fn both_ends_killed_at_random_end_every_transaction() {
    for (name, faults) in [("txn-crash-both", lan()), ("txn-crash-both-loss", lossy())] {
        let sc = Scenario {
            name,
            total: 600,
            window: 64,
            kills: 8,
            initiator_too: true,
            faults,
        };
        for seed in seeds(8) {
            run(&sc, seed);
        }
    }
}
