//! The main job of the README: a small SPMD job under ramp's local launcher
//! that shows ramp working and prints figures.
//!   cargo build --release --bins --examples && target/release/ramp-run -n 4 target/release/examples/demo
//! Rank 0 and 1 measure the short request/reply round trip and the long
//! (Xfer) bandwidth; every rank pings every rank; barriers are timed; the
//! job's statistics are summed on rank 0.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use ramp::am::{self, handler, Message, Statistics, VecSegment};
use ramp::spmd::{self, Role};

const PING: u8 = 10;
const PONG: u8 = 11;
const BULK: u8 = 12;
const BULK_ACK: u8 = 13;
const DONE: u8 = 14;
const XFER: usize = 64 * 1024;

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let boot = match spmd::detect_role() {
        Ok(Role::Worker(b)) => b,
        Ok(Role::Master) => {
            eprintln!(
                "demo: start it as a job: ramp-run -n 4 {}",
                std::env::args().next().unwrap_or_default()
            );
            std::process::exit(2);
        }
        Err(e) => {
            eprintln!("demo: {e}");
            std::process::exit(1);
        }
    };
    let (bundle, ep, _) = spmd::start_worker(boot, 0).expect("start-up");
    let (rank, size) = (spmd::rank().unwrap(), spmd::size().unwrap());
    let seg = VecSegment::new(2 * XFER);
    ep.set_segment(Some(seg));
    let pongs = Arc::new(AtomicU64::new(0));
    let acks = Arc::new(AtomicU64::new(0));
    ep.set_handler(
        PING,
        handler(|h| am::reply(h.token, &Message::short(PONG, h.args)).unwrap()),
    );
    let p = pongs.clone();
    ep.set_handler(
        PONG,
        handler(move |_| {
            p.fetch_add(1, Ordering::Relaxed);
        }),
    );
    ep.set_handler(
        BULK,
        handler(|h| am::reply(h.token, &Message::short(BULK_ACK, &[])).unwrap()),
    );
    let done = Arc::new(AtomicU64::new(0));
    let d = done.clone();
    ep.set_handler(
        DONE,
        handler(move |_| {
            d.fetch_add(1, Ordering::Relaxed);
        }),
    );
    let a = acks.clone();
    ep.set_handler(
        BULK_ACK,
        handler(move |_| {
            a.fetch_add(1, Ordering::Relaxed);
        }),
    );
    spmd::barrier().unwrap();
    if rank == 0 {
        println!(
            "demo: {size} processes started by {}",
            if ramp::config::global().is_ok_and(|c| c.spmd.master.is_some()) {
                "ramp-run"
            } else {
                "a PMI launcher"
            }
        );
    }

    // 1. round trip rank 0 <-> rank 1
    if rank == 0 && size > 1 {
        let mut rt = Vec::with_capacity(10_000);
        for i in 0..11_000u64 {
            let t = Instant::now();
            ep.request(1, &Message::short(PING, &[1, 2, 3, 4]), false)
                .unwrap();
            while pongs.load(Ordering::Relaxed) <= i {
                bundle.poll().unwrap();
            }
            if i >= 1000 {
                rt.push(t.elapsed().as_nanos() as f64 / 1000.0);
            }
        }
        println!(
            "demo: short request/reply round trip rank 0 <-> 1: median {:.2} us over 10000",
            median(&mut rt)
        );
        // 2. bandwidth rank 0 -> rank 1
        let src = vec![0xa5u8; XFER];
        let n = 2048u64;
        let t = Instant::now();
        for i in 0..n {
            ep.request(
                1,
                &Message::long(BULK, &[], &src, (i % 2) * XFER as u64),
                false,
            )
            .unwrap();
        }
        while acks.load(Ordering::Relaxed) < n {
            bundle.poll().unwrap();
        }
        let secs = t.elapsed().as_secs_f64();
        println!(
            "demo: Xfer bandwidth rank 0 -> 1, 64 KiB messages: {:.0} MiB/s ({} MiB in {:.3} s)",
            (n as f64 * XFER as f64) / secs / (1 << 20) as f64,
            (n * XFER as u64) >> 20,
            secs
        );
    }
    if rank == 0 && size > 1 {
        ep.request(1, &Message::short(DONE, &[]), false).unwrap();
    }
    if rank == 1 {
        // busy-poll (as an AM_Poll loop does) while rank 0 measures
        while done.load(Ordering::Relaxed) == 0 {
            bundle.poll().unwrap();
        }
    }
    spmd::barrier().unwrap();

    // 3. every rank pings every rank, 100 times
    let before = pongs.load(Ordering::Relaxed);
    let t = Instant::now();
    for round in 0..100u32 {
        for peer in 0..size {
            ep.request(peer as u32, &Message::short(PING, &[round]), false)
                .unwrap();
        }
    }
    while pongs.load(Ordering::Relaxed) < before + 100 * size as u64 {
        bundle.poll().unwrap();
    }
    let all_to_all = t.elapsed().as_secs_f64();
    spmd::barrier().unwrap();

    // 4. barriers
    let mut bt = Vec::new();
    for _ in 0..200 {
        let t = Instant::now();
        spmd::barrier().unwrap();
        bt.push(t.elapsed().as_nanos() as f64 / 1000.0);
    }

    // 5. statistics of the whole job, summed on every rank through an all-gather
    let s = ep.statistics();
    let mine: Vec<u8> = [
        s.requests_sent.iter().sum::<u64>(),
        s.requests_received.iter().sum::<u64>(),
        s.packets_sent,
        s.packets_retransmitted,
        s.duplicates_dropped,
        (all_to_all * 1e6) as u64,
    ]
    .iter()
    .flat_map(|v| v.to_be_bytes())
    .collect();
    let all = spmd::allgather(&mine).unwrap();
    if rank == 0 {
        let mut sum = Statistics::initial();
        let mut slowest = 0u64;
        for c in all.chunks_exact(48) {
            let f = |k: usize| u64::from_be_bytes(c[8 * k..8 * k + 8].try_into().unwrap());
            sum.requests_sent[0] += f(0);
            sum.requests_received[0] += f(1);
            sum.packets_sent += f(2);
            sum.packets_retransmitted += f(3);
            sum.duplicates_dropped += f(4);
            slowest = slowest.max(f(5));
        }
        println!(
            "demo: all-to-all: {} ranks x {} pings each answered in {:.1} ms (slowest rank)",
            size,
            100 * size,
            slowest as f64 / 1000.0
        );
        println!("demo: barrier: median {:.1} us over 200", median(&mut bt));
        println!(
            "demo: job totals: {} requests sent, {} received, {} packets sent, {} retransmitted, {} duplicates dropped",
            sum.requests_sent[0],
            sum.requests_received[0],
            sum.packets_sent,
            sum.packets_retransmitted,
            sum.duplicates_dropped
        );
        assert_eq!(
            sum.requests_sent[0], sum.requests_received[0],
            "every request arrived exactly once"
        );
        println!("demo: ok");
    }
    spmd::barrier().unwrap();
    let _ = spmd::exit(0);
}
