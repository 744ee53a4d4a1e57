//! What transactions and the transaction log cost per round trip: two
//! endpoints in one process over real loopback sockets, one thread, the
//! same 0-argument request/reply as a plain AM-2 request, as a kept
//! transaction (ack + reply), and as a transaction to a target that logs
//! it (memory-mapped records; and with `sync`, an msync per record).
//! Rounds interleave the series; medians of the rounds are printed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use ramp::am::{self, handler, BundleMode, Endpoint, Message};

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let iters: usize = std::env::var("ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let cfg = ramp::config::Config::from_lookup(|k| std::env::var(k).ok()).unwrap();
    let dir = std::env::temp_dir().join(format!("ramp-txn-cost-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    am::init().unwrap();
    let bun = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e0 = am::allocate_endpoint(&bun).unwrap();
    let targets: Vec<Arc<Endpoint>> = (0..3)
        .map(|i| {
            let e = am::allocate_endpoint(&bun).unwrap();
            if i > 0 {
                e.log_open(&dir.join(format!("t{i}.ramplog")), i == 2, &cfg)
                    .unwrap();
            }
            e
        })
        .collect();
    let all: Vec<&Arc<Endpoint>> = std::iter::once(&e0).chain(targets.iter()).collect();
    for e in &all {
        e.set_tag(5);
        for (i, p) in all.iter().enumerate() {
            e.map(i as i64, p.name(), 5).unwrap();
        }
        e.set_expected_resources(4, 16).unwrap();
        e.set_handler(
            10,
            handler(|h| am::reply(h.token, &Message::short(11, &[])).unwrap()),
        );
    }
    let got = Arc::new(AtomicU64::new(0));
    let g = got.clone();
    e0.set_handler(
        11,
        handler(move |_| {
            g.fetch_add(1, Ordering::Relaxed);
        }),
    );
    let run = |dest: u32, txn: bool, n: usize| -> f64 {
        let t = Instant::now();
        for _ in 0..n {
            let want = got.load(Ordering::Relaxed) + 1;
            let id = if txn {
                Some(e0.request_txn(dest, &Message::short(10, &[])).unwrap())
            } else {
                e0.request(dest, &Message::short(10, &[]), false).unwrap();
                None
            };
            while got.load(Ordering::Relaxed) < want {
                bun.poll().unwrap();
            }
            if let Some(id) = id {
                e0.txn_release(id).unwrap();
            }
        }
        t.elapsed().as_nanos() as f64 / n as f64
    };
    let (mut plain, mut txn, mut logged, mut synced) = (vec![], vec![], vec![], vec![]);
    run(1, true, iters / 10);
    for _ in 0..3 {
        plain.push(run(1, false, iters));
        txn.push(run(1, true, iters));
        logged.push(run(2, true, iters));
        synced.push(run(3, true, (iters / 50).max(20)));
    }
    let (p, t, l, s) = (
        median(&mut plain),
        median(&mut txn),
        median(&mut logged),
        median(&mut synced),
    );
    println!("one thread, loopback, medians of 3 rounds of {iters} round trips:");
    println!("  plain AM-2 request/reply          {:8.0} ns", p);
    println!(
        "  transaction (ack + reply)         {:8.0} ns  ({:.2}x plain)",
        t,
        t / p
    );
    println!(
        "  transaction, target logs it       {:8.0} ns  (log: +{:.1}% of the transaction round trip)",
        l,
        100.0 * (l - t) / t
    );
    println!(
        "  transaction, log with msync/record {:8.0} ns  (RAMP_LOG_SYNC=1; {}x fewer round trips)",
        s,
        iters / (iters / 50).max(20)
    );
    std::fs::remove_dir_all(&dir).ok();
}
