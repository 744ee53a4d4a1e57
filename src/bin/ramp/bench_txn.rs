//! `ramp bench`'s transaction part (issue 10): what the transaction log
//! costs. One process, one thread, two endpoint pairs over loopback UDP
//! in one bundle (the same as `benches/txn_cost.rs`): transactions
//! (`request_txn`, ack + reply, released when done) to a target without a
//! log and to a target that logs each one (memory-mapped records, no
//! msync), plus plain AM-2 requests as the floor. Round trip (one at a
//! time) and request rate (32 credits in flight, as `ramp bench`), rounds interleaved,
//! medians; the ratio logged / unlogged is the log's cost (target: the
//! log adds at most 15% to the round trip).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::role_util::median;
use ramp::am::{self, handler, Bundle, BundleMode, Endpoint, Message};

const DEPTH: i32 = 32;

struct Setup {
    bun: Arc<Bundle>,
    e0: Arc<Endpoint>,
    /// the targets without and with a log
    targets: [Arc<Endpoint>; 2],
    got: Arc<AtomicU64>,
    dir: std::path::PathBuf,
}

fn setup() -> Result<Setup, String> {
    let err = |e: ramp::error::Error| e.to_string();
    let cfg =
        ramp::config::Config::from_lookup(|k| std::env::var(k).ok()).map_err(|e| e.join("; "))?;
    let dir = std::env::temp_dir().join(format!("ramp-bench-txn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    am::init().map_err(err)?;
    let bun = am::allocate_bundle(BundleMode::Seq).map_err(err)?;
    let e0 = am::allocate_endpoint(&bun).map_err(err)?;
    // index 1: no log; index 2: the target logs
    let plain_t = am::allocate_endpoint(&bun).map_err(err)?;
    let logged_t = am::allocate_endpoint(&bun).map_err(err)?;
    logged_t
        .log_open(&dir.join("target.ramplog"), false, &cfg)
        .map_err(err)?;
    let all = [&e0, &plain_t, &logged_t];
    for e in all {
        e.set_tag(7);
        for (i, p) in all.iter().enumerate() {
            e.map(i as i64, p.name(), 7).map_err(err)?;
        }
        e.set_expected_resources(3, DEPTH).map_err(err)?;
        e.set_handler(
            10,
            handler(|h| {
                let _ = am::reply(h.token, &Message::short(11, &[]));
            }),
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
    Ok(Setup {
        bun,
        e0,
        targets: [plain_t, logged_t],
        got,
        dir,
    })
}

impl Setup {
    /// Nanoseconds per round trip to `dest`, one request at a time.
    fn round_trip(&self, dest: u32, txn: bool, n: usize) -> Result<f64, String> {
        let err = |e: ramp::error::Error| e.to_string();
        let t = Instant::now();
        for _ in 0..n {
            let want = self.got.load(Ordering::Relaxed) + 1;
            let id = if txn {
                Some(
                    self.e0
                        .request_txn(dest, &Message::short(10, &[]))
                        .map_err(err)?,
                )
            } else {
                self.e0
                    .request(dest, &Message::short(10, &[]), false)
                    .map_err(err)?;
                None
            };
            while self.got.load(Ordering::Relaxed) < want {
                self.bun.poll().map_err(err)?;
            }
            if let Some(id) = id {
                self.e0.txn_release(id).map_err(err)?;
            }
        }
        Ok(t.elapsed().as_nanos() as f64 / n as f64)
    }

    /// Requests per second to `dest` with `DEPTH` in flight (a request
    /// waits, polling, for a credit); transactions are released as they end.
    fn rate(&self, dest: u32, txn: bool, n: usize) -> Result<f64, String> {
        let err = |e: ramp::error::Error| e.to_string();
        let start = self.got.load(Ordering::Relaxed);
        let mut ids = VecDeque::new();
        let t = Instant::now();
        for _ in 0..n {
            if txn {
                ids.push_back(
                    self.e0
                        .request_txn(dest, &Message::short(10, &[]))
                        .map_err(err)?,
                );
                while let Some(&id) = ids.front() {
                    if !self.e0.txn_state(id).map_err(err)?.is_final() {
                        break;
                    }
                    self.e0.txn_release(id).map_err(err)?;
                    ids.pop_front();
                }
            } else {
                self.e0
                    .request(dest, &Message::short(10, &[]), false)
                    .map_err(err)?;
            }
        }
        while self.got.load(Ordering::Relaxed) < start + n as u64 {
            self.bun.poll().map_err(err)?;
        }
        let secs = t.elapsed().as_secs_f64();
        for id in ids {
            self.e0.txn_release(id).map_err(err)?;
        }
        Ok(n as f64 / secs)
    }
}

/// Prints the log's cost: round trip and request rate, log off and on.
pub fn run(iters: usize, runs: usize) -> Result<(), String> {
    let s = setup()?;
    let iters = iters.max(100);
    s.round_trip(1, true, iters / 10)?;
    s.round_trip(2, true, iters / 10)?;
    let mut v: [Vec<f64>; 6] = Default::default();
    for _ in 0..runs.max(1) {
        v[0].push(s.round_trip(1, false, iters)?);
        v[1].push(s.round_trip(1, true, iters)?);
        v[2].push(s.round_trip(2, true, iters)?);
        v[3].push(s.rate(1, false, iters)?);
        v[4].push(s.rate(1, true, iters)?);
        v[5].push(s.rate(2, true, iters)?);
    }
    let m: Vec<f64> = v.iter_mut().map(|x| median(x)).collect();
    println!(
        "transactions, one thread, one host (RAMP_TRANSPORT), medians of {} rounds of {iters}:",
        runs.max(1)
    );
    println!(
        "  round trip: plain {:7.0} ns, transaction log off {:7.0} ns, log on {:7.0} ns; \
         log on / off {:.3}x (target <= 1.15)",
        m[0],
        m[1],
        m[2],
        m[2] / m[1]
    );
    println!(
        "  request rate ({DEPTH} in flight): plain {:8.0} req/s, transaction log off {:8.0} req/s, \
         log on {:8.0} req/s; log off / on {:.3}x",
        m[3],
        m[4],
        m[5],
        m[4] / m[5]
    );
    // what the targets keep after every transaction above was released:
    // kept replies are freed as the initiator's floor passes them
    let done = iters / 10 + 2 * iters * runs.max(1); // to each target
    for (t, name) in s.targets.iter().zip(["log off", "log on"]) {
        let c = t.txn_target_counts();
        println!(
            "  kept at the target ({name}) after ~{done} transactions: {} entries, {} bytes of kept replies",
            c.entries, c.kept_bytes
        );
    }
    let log_bytes: u64 = std::fs::read_dir(&s.dir)
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0);
    println!("  the target's log: {log_bytes} bytes on disk");
    let _ = am::free_endpoint(&s.e0);
    std::fs::remove_dir_all(&s.dir).ok();
    Ok(())
}
