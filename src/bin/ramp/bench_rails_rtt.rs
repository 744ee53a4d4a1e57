//! `ramp bench --rails --rtt N`: the short round trip over the rails the
//! job was given (issue 38's target: with rails configured no slower than
//! with one). Rank 1 times N round trips one by one (a 0-arg request, the
//! 0-arg reply its handler sends, both ranks busy polling, as `ramp
//! bench`'s round trip), after N/10 untimed, and prints their median and
//! p99; rank 0 answers until rank 1's end message. scripts/rails-bench.sh
//! runs it with `RAMP_RAILS` of one rail and of two, alternated.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;

use ramp::am::{self, handler, Message};
use ramp::spmd;

const H_PING: u8 = 22;
const H_PONG: u8 = 23;
const H_END: u8 = 24;

/// The `p` quantile (0..=1) of `v`, sorted here.
fn quantile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

/// Rank `rank`'s part of N round trips; true when it went through.
pub fn run(bundle: &am::Bundle, ep: &Arc<am::Endpoint>, rank: usize, n: usize) -> bool {
    let pongs = Arc::new(AtomicU64::new(0));
    let end = Arc::new(AtomicBool::new(false));
    let p = pongs.clone();
    ep.set_handler(
        H_PING,
        handler(|h| {
            if let Err(e) = am::reply(h.token, &Message::short(H_PONG, &[])) {
                eprintln!("bench-rails: rank 0: reply: {e}");
            }
        }),
    );
    ep.set_handler(
        H_PONG,
        handler(move |_| {
            p.fetch_add(1, Relaxed);
        }),
    );
    let e = end.clone();
    ep.set_handler(H_END, handler(move |_| e.store(true, Relaxed)));
    if spmd::barrier().is_err() {
        return false;
    }
    if rank == 0 {
        while !end.load(Relaxed) {
            if let Err(e) = bundle.poll() {
                eprintln!("bench-rails: rank 0: poll: {e}");
                return false;
            }
        }
        return true;
    }
    let once = || -> bool {
        let want = pongs.load(Relaxed) + 1;
        if let Err(e) = ep.request(0, &Message::short(H_PING, &[]), false) {
            eprintln!("bench-rails: rank 1: request: {e}");
            return false;
        }
        while pongs.load(Relaxed) < want {
            if bundle.poll().is_err() {
                return false;
            }
        }
        true
    };
    for _ in 0..n / 10 {
        if !once() {
            return false;
        }
    }
    let mut us = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        if !once() {
            return false;
        }
        us.push(t.elapsed().as_nanos() as f64 / 1e3);
    }
    let rails = ep.rail_statistics().len();
    println!(
        "bench-rails: rtt rails={rails} round_trips={n} median_us={:.2} p99_us={:.2}",
        quantile(&mut us, 0.5),
        quantile(&mut us, 0.99)
    );
    if let Err(e) = ep.request(0, &Message::short(H_END, &[]), false) {
        eprintln!("bench-rails: rank 1: end: {e}");
        return false;
    }
    while ep.unanswered_requests() > 0 {
        let _ = bundle.poll();
        bundle.wait_for_activity(5);
    }
    true
}
