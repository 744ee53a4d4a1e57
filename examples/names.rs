//! Handler names and published endpoint names in an SPMD job (tests/names.rs).
//!
//! Every rank installs its handlers in its own order (other indices on
//! every rank), names them, then pings every other rank through the index
//! its `ramp_LookupHandler` finds there; checks that a missing name is
//! `BadArg`; publishes its endpoint name under `svc-<rank>`, and after a
//! barrier looks up every rank's. Prints `rank R of N: names ok`.
//!
//! Modes (first argument): `local` (ramp-run: also a second publish is
//! refused, a look-up times out, a late publish is found while waiting),
//! `pmi` (mpiexec: puts become visible after a barrier; nothing else),
//! `late` (only the late publish without a barrier: to try a launcher),
//! `nokv` (PMIx: handler names work, publish and look-up are `Resource`).
//! Run with: ramp-run -n 4 target/release/examples/names local

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ramp::am::{self, handler, Message};
use ramp::error::Error;
use ramp::spmd::{self, Role};

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "local".into());
    let boot = match spmd::detect_role() {
        Ok(Role::Worker(b)) => b,
        Ok(Role::Master) => {
            eprintln!("names: start me with ramp-run -n N (or mpiexec -n N)");
            std::process::exit(2);
        }
        Err(e) => {
            eprintln!("names: {e}");
            std::process::exit(1);
        }
    };
    let (b, ep, _pid) = spmd::start_worker(boot, 0).expect("start-up");
    let (rank, size) = (spmd::rank().unwrap(), spmd::size().unwrap());

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
    if rank % 2 == 0 {
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

    // -- published endpoint names
    let svc = format!("svc-{rank}");
    if mode == "nokv" {
        // a launcher without a key-value space ramp uses (PMIx)
        assert!(matches!(
            spmd::name_publish(&ep, svc.as_bytes()),
            Err(Error::Resource(_))
        ));
        assert!(matches!(
            spmd::name_lookup(svc.as_bytes(), 100),
            Err(Error::Resource(_))
        ));
        println!("rank {rank} of {size}: names ok");
        spmd::barrier().unwrap();
        let _ = spmd::exit(0);
    }
    spmd::name_publish(&ep, svc.as_bytes()).expect("publish");
    assert!(matches!(
        spmd::name_publish(&ep, b"bad service"),
        Err(Error::BadArg(_))
    ));
    spmd::barrier().unwrap(); // under PMI a put is visible after a barrier
    for peer in 0..size {
        let name = spmd::name_lookup(format!("svc-{peer}").as_bytes(), 10_000)
            .expect("lookup of a published name");
        let (mapped, _) = ep.translation(peer as i64).unwrap().unwrap();
        assert_eq!(name, mapped, "rank {peer}'s published name");
    }
    assert!(matches!(
        spmd::name_lookup(b"bad=svc", 0),
        Err(Error::BadArg(_))
    ));
    // nothing under a service: Resource once the timeout passed
    let t = Instant::now();
    assert!(matches!(
        spmd::name_lookup(b"never-published", 300),
        Err(Error::Resource(_))
    ));
    assert!(
        t.elapsed() >= Duration::from_millis(300),
        "the look-up did not wait"
    );
    if mode == "local" {
        assert!(
            matches!(
                spmd::name_publish(&ep, svc.as_bytes()),
                Err(Error::Resource(_))
            ),
            "a second publish of a service is refused"
        );
    }
    if mode == "local" || mode == "late" {
        // a name published later is found by a look-up already waiting
        if size > 1 {
            spmd::barrier().unwrap();
            if rank == size - 1 {
                std::thread::sleep(Duration::from_millis(300));
                spmd::name_publish(&ep, b"late").unwrap();
            } else {
                let n = spmd::name_lookup(b"late", 30_000).expect("the late name");
                let (last, _) = ep.translation(size as i64 - 1).unwrap().unwrap();
                assert_eq!(n, last);
            }
        }
    }
    println!("rank {rank} of {size}: names ok");
    spmd::barrier().unwrap();
    let _ = spmd::exit(0);
}
