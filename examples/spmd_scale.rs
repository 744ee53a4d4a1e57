//! Scale check of an SPMD job on one host: every rank pings every other
//! rank (request/reply), then barrier and all-gather; rank 0 prints the
//! job's resident memory per process (VmRSS) with all peers mapped.
//! Run: ramp-run -n 64 target/release/examples/spmd_scale

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ramp::am::{self, handler, Message};
use ramp::spmd::{self, Role};

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

fn main() {
    let boot = match spmd::detect_role() {
        Ok(Role::Worker(b)) => b,
        _ => {
            eprintln!("spmd_scale: start me with ramp-run -n N");
            std::process::exit(2);
        }
    };
    let t0 = std::time::Instant::now();
    let (bundle, ep, _) = spmd::start_worker(boot, 0).expect("start-up");
    let startup = t0.elapsed();
    let (rank, size) = (spmd::rank().unwrap(), spmd::size().unwrap());
    let pongs = Arc::new(AtomicU64::new(0));
    let p = pongs.clone();
    ep.set_handler(
        10,
        handler(|h| am::reply(h.token, &Message::short(11, h.args)).unwrap()),
    );
    ep.set_handler(
        11,
        handler(move |h| {
            assert_eq!(h.args.len(), 1);
            p.fetch_add(1, Ordering::Relaxed);
        }),
    );
    spmd::barrier().expect("barrier");
    let t1 = std::time::Instant::now();
    for peer in 0..size {
        ep.request(peer as u32, &Message::short(10, &[rank as u32]), false)
            .expect("request");
    }
    while pongs.load(Ordering::Relaxed) < size as u64 {
        bundle.poll().expect("poll");
    }
    let ping = t1.elapsed();
    spmd::barrier().expect("barrier");
    let mut mine = Vec::new();
    mine.extend_from_slice(&rss_kib().to_be_bytes());
    mine.extend_from_slice(&(startup.as_micros() as u64).to_be_bytes());
    mine.extend_from_slice(&(ping.as_micros() as u64).to_be_bytes());
    let all = spmd::allgather(&mine).expect("allgather");
    if rank == 0 {
        let col = |k: usize| -> Vec<u64> {
            let mut v: Vec<u64> = all
                .chunks_exact(24)
                .map(|c| u64::from_be_bytes(c[8 * k..8 * k + 8].try_into().unwrap()))
                .collect();
            v.sort();
            v
        };
        let (rss, st, pg) = (col(0), col(1), col(2));
        let mut hosts: Vec<String> = (0..size)
            .filter_map(|i| ep.translation(i as i64).ok().flatten())
            .filter_map(|(n, _)| n.to_addr().map(|a| a.ip().to_string()))
            .collect();
        hosts.sort();
        hosts.dedup();
        println!("spmd_scale: endpoint addresses: {}", hosts.join(" "));
        let med = |v: &Vec<u64>| v[v.len() / 2];
        println!(
            "spmd_scale: {size} processes: every rank pinged all {size} ranks; barrier and all-gather ok\n  \
             resident memory per process (VmRSS): min {} KiB, median {} KiB, max {} KiB\n  \
             start-up (name exchange) median {} ms; all-to-all ping median {} ms",
            rss[0],
            med(&rss),
            rss[rss.len() - 1],
            med(&st) / 1000,
            med(&pg) / 1000
        );
    }
    spmd::barrier().expect("barrier");
    let _ = spmd::exit(0);
}
