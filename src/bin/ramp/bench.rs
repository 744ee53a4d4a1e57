//! `ramp bench`: round trip and bandwidth between two processes on loopback,
//! measured side by side with a raw UDP ping-pong baseline in the same run.
//!
//! The parent starts a server and a client process (pinned to different
//! cores with `taskset` when there are two), relays the endpoint names
//! between them, and prints the client's figures. Both sides busy-poll.
//! It does so twice: without the packet MAC (`RAMP_AUTH=off`: CRC32C) and
//! with it (a fresh random `RAMP_JOB_KEY`, `RAMP_AUTH=on`), then prints
//! the ratios of the two (round trip and Xfer bandwidth, MAC / plain), all
//! over UDP (`RAMP_TRANSPORT=udp`); then UDP against shared memory beside a
//! raw shared-memory ping-pong (`bench_shm.rs`).

pub use crate::bench_pair::BenchOptions;
use crate::bench_pair::{have_taskset, run_pair, Figures};
pub use crate::bench_roles::{client_main, server_main};

/// A fresh job key: 64 random hex digits (the library's one source of
/// randomness).
fn random_job_key() -> Result<String, String> {
    ramp::bench_support::random_job_key().map_err(|e| format!("no randomness for a job key: {e}"))
}

/// Whether ramp's `RAMP_*` configuration is good (ramp prints what is
/// wrong with it), before any role starts: said once, by the parent.
pub(crate) fn check_config() -> Result<(), String> {
    ramp::am::init().map_err(|e| format!("{e}"))
}

/// Runs the whole benchmark; prints the figures on stdout.
pub fn run(opts: &BenchOptions) -> Result<(), String> {
    check_config()?;
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find this program: {e}"))?
        .to_string_lossy()
        .into_owned();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pin = opts.pin && cores >= 2 && have_taskset();
    println!(
        "ramp bench: two processes on loopback{}, {} round trips per figure, {} rounds",
        if pin {
            " pinned to cores 1 (server) and 0 (client)"
        } else {
            " (not pinned)"
        },
        opts.iters,
        opts.runs
    );
    // The machine drifts (other load) more than the MAC costs: the pairs
    // alternate, plain then MAC, one run each, and the ratios are taken
    // per round (neighbours in time), their median printed.
    let key = random_job_key()?;
    let one = BenchOptions {
        runs: 1,
        ..opts.clone()
    };
    let (mut plain, mut mac) = (Vec::new(), Vec::new());
    for r in 1..=opts.runs {
        println!(
            "-- round {r}/{}: without the packet MAC (RAMP_AUTH=off: CRC32C)",
            opts.runs
        );
        plain.push(run_pair(
            &exe,
            pin,
            &one,
            &[
                (ramp::config::AUTH, "off".into()),
                (ramp::config::TRANSPORT, "udp".into()),
            ],
        )?);
        println!(
            "-- round {r}/{}: with the packet MAC (a random RAMP_JOB_KEY, RAMP_AUTH=on: AES-128-GMAC)",
            opts.runs
        );
        mac.push(run_pair(
            &exe,
            pin,
            &one,
            &[
                (ramp::config::AUTH, "on".into()),
                (ramp::config::JOB_KEY, key.clone()),
                (ramp::config::TRANSPORT, "udp".into()),
            ],
        )?);
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    let ratio = |f: fn(&Figures) -> f64| {
        let mut v: Vec<f64> = plain.iter().zip(&mac).map(|(p, m)| f(m) / f(p)).collect();
        med(&mut v)
    };
    let fig = |v: &[Figures], f: fn(&Figures) -> f64| {
        let mut x: Vec<f64> = v.iter().map(f).collect();
        med(&mut x)
    };
    println!("== medians of {} rounds:", opts.runs);
    for (name, v) in [("plain (CRC32C)", &plain), ("MAC (GMAC)    ", &mac)] {
        println!(
            "{name}: raw UDP ping-pong {:6.2} us, ramp round trip 0 args {:6.2} us, 4 args {:6.2} us, Xfer 64 KiB {:7.1} MiB/s",
            fig(v, |f| f.raw),
            fig(v, |f| f.rt0),
            fig(v, |f| f.rt4),
            fig(v, |f| f.bw)
        );
    }
    for (name, v) in [("plain (CRC32C)", &plain), ("MAC (GMAC)    ", &mac)] {
        let per_round = |f: fn(&Figures) -> f64| {
            let mut x: Vec<f64> = v.iter().map(f).collect();
            med(&mut x)
        };
        println!(
            "{name}: 0-arg request rate {:9.0} req/s, raw UDP blast {:7.1} MiB/s; \
             Xfer / blast {:.2} (target >= 0.70), round trip 0 args / raw ping-pong {:.2} (target <= 1.10)",
            fig(v, |f| f.rate),
            fig(v, |f| f.blast),
            per_round(|f| f.bw / f.blast),
            per_round(|f| f.rt0 / f.raw)
        );
    }
    println!(
        "MAC / plain (median of per-round ratios): round trip 0 args {:.3}x, 4 args {:.3}x; \
         Xfer 64 KiB bandwidth {:.3}x; raw UDP ping-pong {:.3}x (the noise floor)",
        ratio(|f| f.rt0),
        ratio(|f| f.rt4),
        ratio(|f| f.bw),
        ratio(|f| f.raw)
    );
    crate::bench_shm::run(&exe, pin, opts)?;
    crate::bench_rma::run(&exe, pin, opts.runs, None)?;
    crate::bench_rma::run(&exe, pin, opts.runs, Some(&key))?;
    crate::bench_txn::run(opts.iters, opts.runs)
}

/// `ramp bench --repair` (`bench_repair.rs`): 5000 round trips per figure
/// unless `--iters` says otherwise.
pub fn run_repair(opts: &BenchOptions) -> Result<(), String> {
    check_config()?;
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find this program: {e}"))?
        .to_string_lossy()
        .into_owned();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pin = opts.pin && cores >= 2 && have_taskset();
    let iters = if opts.iters == BenchOptions::default().iters {
        5000
    } else {
        opts.iters
    };
    crate::bench_repair::run(
        &exe,
        pin,
        iters,
        opts.runs,
        opts.busy,
        opts.against.as_deref(),
    )
}
