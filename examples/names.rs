//! Published endpoint names and handler names in an SPMD job: the same
//! program under every launcher (ramp-run: tests/names.rs; mpiexec PMI-1
//! and PMI-2: tests/spmd_mpiexec.rs; srun --mpi=pmi2 and pmix:
//! tests/spmd_slurm.rs; Open MPI's mpirun: tests/spmd_openmpi.rs).
//!
//! Published names first, right after start-up, with no barrier between
//! any publish and the look-ups:
//! - rank 0 publishes "svc-zero", the last rank "svc-last"; the other
//!   ranks look both up with a 10 s timeout (then every rank does);
//! - every rank r publishes "own-r-o-k" for each rank o, a service that
//!   rank o keeps (`spmd::service_owner`), and every rank looks all of
//!   them up: owners that are the looker, the publisher or a third rank;
//! - a second publish of a service is refused (`Resource`), by its
//!   publisher and by another rank;
//! - a look-up that starts before the publish: the last rank publishes
//!   "svc-late" only after every other rank answered, from a handler run
//!   inside its waiting `name_lookup`, that it is waiting;
//! - a never-published service: `Resource` once the timeout passed; a bad
//!   one: `BadArg`.
//!
//! Then handler names: every rank installs its handlers in its own order
//! (other indices on every rank), names them, then pings every other rank
//! through the index its `ramp_LookupHandler` finds there; a missing name
//! is `BadArg`. Prints `rank R of N: names ok`.
//! Run with: ramp-run -n 3 target/release/examples/names

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ramp::am::{self, handler, Endpoint, EndpointName, Message};
use ramp::error::Error;
use ramp::spmd::{self, Role};

/// "Are you waiting in your look-up of svc-late?" and its answer (indices
/// no rank uses below).
const ASK_WAITING: u8 = 240;
const WAITING_ANSWER: u8 = 241;

fn main() {
    let boot = match spmd::detect_role() {
        Ok(Role::Worker(b)) => b,
        Ok(Role::Master) => {
            eprintln!("names: start me with ramp-run -n N (or mpiexec, srun, mpirun -n N)");
            std::process::exit(2);
        }
        Err(e) => {
            eprintln!("names: {e}");
            std::process::exit(1);
        }
    };
    let (b, ep, _pid) = spmd::start_worker(boot, 0).expect("start-up");
    let (rank, size) = (spmd::rank().unwrap(), spmd::size().unwrap());
    published_names(&b, &ep, rank, size);
    spmd::barrier().unwrap();
    handler_names(&b, &ep, rank, size);
    println!("rank {rank} of {size}: names ok");
    spmd::barrier().unwrap();
    let _ = spmd::exit(0);
}

/// The name of rank `r` (its translation entry in the job endpoint).
fn name_of(ep: &Endpoint, r: usize) -> EndpointName {
    ep.translation(r as i64).unwrap().unwrap().0
}

/// The first "own-P-O-K" that rank `o` keeps in a job of `size`.
fn owned_by(p: usize, o: usize, size: usize) -> String {
    (0..)
        .map(|k| format!("own-{p}-{o}-{k}"))
        .find(|s| spmd::service_owner(s.as_bytes(), size) == o)
        .unwrap()
}

fn published_names(b: &Arc<am::Bundle>, ep: &Arc<Endpoint>, rank: usize, size: usize) {
    let last = size - 1;
    // every rank tells whether it waits in its look-up of svc-late
    let waiting = Arc::new(AtomicBool::new(false));
    let w = waiting.clone();
    ep.set_handler(
        ASK_WAITING,
        handler(move |h| {
            let now = w.load(Ordering::SeqCst) as u32;
            let me = spmd::rank().unwrap() as u32;
            am::reply(h.token, &Message::short(WAITING_ANSWER, &[me, now])).unwrap();
        }),
    );
    let seen: Arc<Vec<AtomicU64>> = Arc::new((0..size).map(|_| AtomicU64::new(0)).collect());
    let s = seen.clone();
    ep.set_handler(
        WAITING_ANSWER,
        handler(move |h| {
            // 1 + the answer: 1 "not yet", 2 "waiting"
            s[h.args[0] as usize].store(1 + h.args[1] as u64, Ordering::SeqCst);
        }),
    );

    // -- the case: publish, then look up at once, no barrier
    if rank == 0 {
        spmd::name_publish(ep, b"svc-zero").expect("publish svc-zero");
    }
    if rank == last {
        spmd::name_publish(ep, b"svc-last").expect("publish svc-last");
    }
    let find = |svc: &str| {
        spmd::name_lookup(svc.as_bytes(), 10_000)
            .unwrap_or_else(|e| panic!("rank {rank}: look-up of {svc}: {e:?}"))
    };
    if rank != 0 && rank != last {
        assert_eq!(find("svc-zero"), name_of(ep, 0), "svc-zero");
        assert_eq!(find("svc-last"), name_of(ep, last), "svc-last");
    }
    // -- owners of every kind
    for o in 0..size {
        spmd::name_publish(ep, owned_by(rank, o, size).as_bytes()).expect("publish own-");
    }
    for p in 0..size {
        for o in 0..size {
            let svc = owned_by(p, o, size);
            assert_eq!(find(&svc), name_of(ep, p), "{svc}");
        }
    }
    assert_eq!(find("svc-zero"), name_of(ep, 0), "svc-zero");
    assert_eq!(find("svc-last"), name_of(ep, last), "svc-last");
    // -- a second publish is refused, by anyone; the first name stays
    for svc in [&b"svc-zero"[..], b"svc-last"] {
        assert!(
            matches!(spmd::name_publish(ep, svc), Err(Error::Resource(_))),
            "a second publish of a service was accepted"
        );
    }
    assert_eq!(find("svc-zero"), name_of(ep, 0), "svc-zero after");
    // -- a look-up that starts before the publish
    if size > 1 {
        if rank == last {
            for r in 0..last {
                // ask until rank r answers from inside its look-up
                loop {
                    seen[r].store(0, Ordering::SeqCst);
                    ep.request(r as u32, &Message::short(ASK_WAITING, &[]), false)
                        .unwrap();
                    let t0 = Instant::now();
                    while seen[r].load(Ordering::SeqCst) == 0 {
                        b.poll().unwrap();
                        assert!(t0.elapsed() < Duration::from_secs(60), "rank {r} silent");
                    }
                    if seen[r].load(Ordering::SeqCst) == 2 {
                        break;
                    }
                    b.wait_for_activity(5);
                }
            }
            spmd::name_publish(ep, b"svc-late").expect("publish svc-late");
        } else {
            waiting.store(true, Ordering::SeqCst);
            // (a hang guard: every rank reaches its look-up long before)
            let n = spmd::name_lookup(b"svc-late", 120_000).expect("the late name");
            waiting.store(false, Ordering::SeqCst);
            assert_eq!(n, name_of(ep, last), "svc-late");
        }
    }
    // -- errors
    let t = Instant::now();
    assert!(matches!(
        spmd::name_lookup(b"never-published", 300),
        Err(Error::Resource(_))
    ));
    assert!(
        t.elapsed() >= Duration::from_millis(300),
        "the look-up did not wait"
    );
    assert!(matches!(
        spmd::name_lookup(b"bad=svc", 0),
        Err(Error::BadArg(_))
    ));
    assert!(matches!(
        spmd::name_publish(ep, b"bad service"),
        Err(Error::BadArg(_))
    ));
}

fn handler_names(b: &Arc<am::Bundle>, ep: &Arc<Endpoint>, rank: usize, size: usize) {
    // -- handler names: each rank installs at its own indices, in its own order
    let pings = Arc::new(AtomicU64::new(0));
    let pongs = Arc::new(AtomicU64::new(0));
    let ping_at = (10 + 17 * rank) as u8;
    let pong_at = (200 - 13 * rank) as u8;
    let install_ping = || {
        let p = pings.clone();
        ep.set_handler(
            ping_at,
            handler(move |h| {
                p.fetch_add(1, Ordering::SeqCst);
                // the asker says where its pong handler is
                let pong = h.args[0] as u8;
                am::reply(h.token, &Message::short(pong, &[1])).unwrap();
            }),
        );
        ep.set_handler_name(ping_at, b"ping").unwrap();
    };
    let install_pong = || {
        let p = pongs.clone();
        ep.set_handler(
            pong_at,
            handler(move |_| {
                p.fetch_add(1, Ordering::SeqCst);
            }),
        );
        ep.set_handler_name(pong_at, b"pong").unwrap();
    };
    if rank.is_multiple_of(2) {
        install_ping();
        install_pong();
    } else {
        install_pong();
        install_ping();
    }
    // errors: a bad name, a handler not installed
    assert!(matches!(
        ep.set_handler_name(ping_at, b""),
        Err(Error::BadArg(_))
    ));
    assert!(matches!(
        ep.set_handler_name(ping_at, &[b'n'; 64]),
        Err(Error::BadArg(_))
    ));
    assert!(matches!(
        ep.set_handler_name(ping_at, b"a\nb"),
        Err(Error::BadArg(_))
    ));
    assert!(matches!(
        ep.set_handler_name(ping_at + 1, b"x"),
        Err(Error::BadArg(_))
    ));
    spmd::barrier().unwrap(); // every rank has named its handlers
    for peer in 0..size {
        let h = ep
            .lookup_handler(peer as u32, b"ping")
            .expect("lookup ping");
        assert_eq!(h as usize, 10 + 17 * peer, "rank {peer}'s ping index");
        ep.request(peer as u32, &Message::short(h, &[pong_at as u32]), false)
            .unwrap();
        // a missing name is BadArg, every time (not cached)
        for _ in 0..2 {
            assert!(matches!(
                ep.lookup_handler(peer as u32, b"no such handler"),
                Err(Error::BadArg(_))
            ));
        }
        assert!(matches!(
            ep.lookup_handler(peer as u32, b"bad\x7f"),
            Err(Error::BadArg(_))
        ));
    }
    let t0 = Instant::now();
    while pongs.load(Ordering::SeqCst) < size as u64 {
        b.poll().unwrap();
        assert!(t0.elapsed() < Duration::from_secs(60), "pongs missing");
    }
    spmd::barrier().unwrap(); // every ping has been answered
    assert_eq!(pings.load(Ordering::SeqCst), size as u64);
}
