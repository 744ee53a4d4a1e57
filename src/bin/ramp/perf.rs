//! `ramp perf` (issue 40): performability, the model beside fault-injected
//! measurement.
//! - `measure`: the stage costs of serial requests (plain and transactions,
//!   short, medium and 64 KiB) between two processes, loss-free, and ramp's
//!   timer policy, written to a file (`--out`, default `ramp-perf-stages.txt`);
//! - `model`: `ramp::perf` solved on a stages file: mean and p99 response
//!   time against bit error rate, and against one component's failure
//!   probability at a time;
//! - `sweep` (`perf_sweep.rs`): the model beside real two-process jobs
//!   under the fault injector (`RAMP_FAULT_BER`), a table, `--csv`, `--plot`.
//!
//! The roles are `ramp bench --repair`'s (`bench_repair.rs`), pinned to
//! cores 1 (server) and 0 (client).

use std::collections::BTreeMap;

use crate::bench_repair::{run_roles, Pair, PairFigures};
use crate::role_util::median;
use ramp::perf::{self, Faults, Policy, Protocol, Stages};

/// The request sizes: short, medium, long (64 KiB).
pub const SIZES: [usize; 3] = [0, 1024, 65_536];
pub const PROTOCOLS: [Protocol; 2] = [Protocol::Plain, Protocol::Txn];
/// The bit error rates of the model and the sweep.
pub const BERS: [f64; 5] = [1e-7, 1e-6, 1e-5, 1e-4, 1e-3];
/// Component failure probabilities of the model's second table.
const COMPONENT_P: [f64; 3] = [0.001, 0.01, 0.05];
/// The bit error rate of a loss-free point (`run_median`): the injector on,
/// losing nothing measurable.
const PATH_BER: f64 = 1e-15;
/// Round trips per run of the full sweep and of `measure` (the p99's
/// run-to-run spread, printed beside each point, is then within 10% on a
/// quiet machine where the point's tail is not a single atom near 1%).
pub const ITERS: usize = 20_000;
/// A run's time cap, s.
pub const MAX_SECS: u32 = 3;
/// A stalled handler's time in the model's second table, us.
pub const STALL_US: f64 = 1000.0;

pub const USAGE: &str =
    "usage: ramp perf measure [--transport udp|shm] [--out FILE] [--iters N] [--runs N] [--no-pin]
       ramp perf model [--stages FILE]
       ramp perf sweep [--quick] [--csv FILE] [--plot FILE.png] [--iters N] [--runs N] [--no-pin]
                       [--font FILE.ttf]
  measure  stage costs of serial requests (plain, transactions with the log on and off; short,
           1 KiB, 64 KiB), the loss-free round trips' distribution,
           and the timer policy, written to FILE (default ramp-perf-stages.txt)
  model    mean and p99 response time against bit error rate and one component's failure
           probability, from the protocol's rules and a stages file
  sweep    the model beside two-process jobs under RAMP_FAULT_BER (udp, shm), with ratios
           (transactions with the log on), then one component failing at a time (send, wire,
           recv, handler_stall); --quick: udp, short requests, two rates, recv (CI); progress on
           stderr; --csv: the issue's columns, then component, fault_p, p99_spread, n";

/// Options of every `ramp perf` command.
#[derive(Clone, Debug)]
pub struct Opts {
    pub transport: &'static str,
    pub out: String,
    pub iters: usize,
    pub runs: usize,
    pub pin: bool,
    pub quick: bool,
    pub csv: Option<String>,
    pub plot: Option<String>,
    pub font: Option<String>,
}

impl Opts {
    /// Round trips timed per run (`--iters`; by default as many as
    /// `max_secs` allows, up to 20,000 (1,000 with `--quick`)).
    pub fn iters(&self) -> usize {
        match (self.iters, self.quick) {
            (0, true) => 1_000,
            (0, false) => ITERS,
            (n, _) => n,
        }
    }

    /// A run's time cap, s (the client stops past it, at least 100
    /// round trips timed).
    pub fn max_secs(&self) -> u32 {
        if self.quick {
            1
        } else {
            MAX_SECS
        }
    }
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        transport: "udp",
        out: "ramp-perf-stages.txt".into(),
        iters: 0,
        runs: 3,
        pin: true,
        quick: false,
        csv: None,
        plot: None,
        font: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = |name: &str| it.next().cloned().ok_or(format!("{name} needs a value"));
        let num = |name: &str, v: String| {
            v.parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or(format!("{name} needs a positive number, not {v:?}"))
        };
        match a.as_str() {
            "--transport" => {
                o.transport = match val("--transport")?.as_str() {
                    "udp" => "udp",
                    "shm" => "shm",
                    t => return Err(format!("--transport: udp or shm, not {t:?}")),
                }
            }
            "--out" | "--stages" => o.out = val(a)?,
            "--iters" => o.iters = num("--iters", val("--iters")?)?,
            "--runs" => o.runs = num("--runs", val("--runs")?)?,
            "--no-pin" => o.pin = false,
            "--quick" => o.quick = true,
            "--csv" => o.csv = Some(val("--csv")?),
            "--plot" => o.plot = Some(val("--plot")?),
            "--font" => o.font = Some(val("--font")?),
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    Ok(o)
}

pub fn main(args: &[String]) -> i32 {
    let sub = args.first().map(String::as_str);
    let opts = match parse(args.get(1..).unwrap_or(&[])) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("ramp perf: {e}\n{USAGE}");
            return 2;
        }
    };
    let r = match sub {
        Some("measure") => measure_to_file(&opts),
        Some("model") => model(&opts),
        Some("sweep") => crate::perf_sweep::run(&opts),
        _ => {
            eprintln!("{USAGE}");
            return 2;
        }
    };
    match r {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("ramp perf: {e}");
            1
        }
    }
}

/// This process's configuration's timer policy (`RAMP_RTO_*_US`, ...).
pub fn policy() -> Result<Policy, String> {
    ramp::config::Config::from_lookup(|k| std::env::var(k).ok())
        .map(|c| Policy::of(&c))
        .map_err(|e| e.join("; "))
}

/// The cores of the server and the client.
pub fn cpus(pin: bool) -> (Option<usize>, Option<usize>) {
    if pin {
        (Some(1), Some(0))
    } else {
        (None, None)
    }
}

/// A point's figures (medians) and its p99's run-to-run spread.
pub type Point = (PairFigures, f64);

/// One point (`pair`), `runs` times: the median of each figure, the round
/// trips' distribution of the median run, and the p99's run-to-run spread
/// ((max - min) / median).
pub fn run_median(o: &Opts, pair: &Pair) -> Result<Point, String> {
    let mut all = Vec::new();
    for _ in 0..o.runs {
        all.push(run_once(o, pair)?);
    }
    Ok(reduce(all))
}

/// A lossy point and its loss-free twin (`lossy` without its faults),
/// run alternately `runs` times (free, lossy, free, lossy, ...): each as
/// `run_median` gives it. The model is set beside a lossy point on the
/// loss-free round trips of the same minutes: the load of a shared host
/// changes between a sweep's first loss-free runs and its later points,
/// and the loss-free distribution carries it.
pub fn run_paired(o: &Opts, free: &Pair, lossy: &Pair) -> Result<(Point, Point), String> {
    let (mut frees, mut lossies) = (Vec::new(), Vec::new());
    for _ in 0..o.runs {
        frees.push(run_once(o, free)?);
        lossies.push(run_once(o, lossy)?);
    }
    Ok((reduce(frees), reduce(lossies)))
}

/// One run of `pair`, pinned as `o` says, through the fault injector.
fn run_once(o: &Opts, pair: &Pair) -> Result<PairFigures, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let exe = exe.to_str().ok_or("the ramp binary's path is not UTF-8")?;
    let (srv, cli) = cpus(o.pin);
    // every process through the injector, also loss-free: the lossy
    // points' path (no express lane, no connected UDP ports), at a bit
    // error rate that loses a datagram of 64 KiB once in 2e9
    let mut pair = pair.clone();
    for env in [&mut pair.client_env, &mut pair.server_env] {
        if !env.iter().any(|(k, _)| *k == ramp::config::FAULT_BER) {
            env.push((ramp::config::FAULT_BER, PATH_BER.to_string()));
        }
    }
    run_roles(exe, srv, cli, &pair)
}

/// The median of each figure of `all` (not empty), the distribution of
/// the median run, and the p99's run-to-run spread.
fn reduce(all: Vec<PairFigures>) -> Point {
    let med = |f: fn(&PairFigures) -> f64| {
        let mut v: Vec<f64> = all.iter().map(f).collect();
        median(&mut v)
    };
    let mut m = all[0].clone();
    m.round.mean = med(|f| f.round.mean);
    m.round.p99 = med(|f| f.round.p99);
    m.send_us = med(|f| f.send_us);
    m.mad_us = med(|f| f.mad_us);
    m.handler_us = med(|f| f.handler_us);
    m.n = all.iter().map(|f| f.n).sum();
    // the distribution of the run whose mean is the median (a run off
    // the CPU for long would weigh on a pooled one as it does not on the
    // median figures the model is set beside)
    if let Some(mid) = all.iter().min_by(|a, b| {
        let d = |f: &PairFigures| (f.round.mean - m.round.mean).abs();
        d(a).total_cmp(&d(b))
    }) {
        m.dist = mid.dist.clone();
    }
    let p99s = all.iter().map(|f| f.round.p99);
    let (lo, hi) = p99s.fold((f64::INFINITY, 0.0f64), |(l, h), x| (l.min(x), h.max(x)));
    let spread = (hi - lo) / m.round.p99;
    (m, spread)
}

/// Measured stage costs by (protocol, bytes), with the round trips' p99,
/// its run-to-run spread and the round trips timed.
pub type StageTable = BTreeMap<(&'static str, usize), (Stages, f64, f64, usize)>;

/// The loss-free serial round trips of `proto` and `bytes` (transactions
/// with the log on when `log`), as `run_median` gives them.
fn loss_free(
    o: &Opts,
    proto: Protocol,
    bytes: usize,
    log: bool,
) -> Result<(PairFigures, f64), String> {
    eprintln!(
        "ramp perf measure: {} {}{} {bytes} bytes, loss-free, {} runs",
        o.transport,
        proto.name(),
        if log {
            " (log on)"
        } else if proto == Protocol::Txn {
            " (log off)"
        } else {
            ""
        },
        o.runs
    );
    let pair = Pair {
        transport: o.transport,
        iters: o.iters(),
        bytes,
        txn: proto == Protocol::Txn,
        log,
        max_secs: o.max_secs(),
        ..Pair::default()
    };
    run_median(o, &pair)
}

/// Measures the loss-free stage costs over `o.transport` (progress on
/// stderr). Transactions run with the transaction log on (`RAMP_LOG_DIR`,
/// as the sweep's do) and off: the log's cost is the difference of their
/// mean round trips, the other stages the run without it.
pub fn measure(o: &Opts, sizes: &[usize]) -> Result<StageTable, String> {
    let mut table = StageTable::new();
    for proto in PROTOCOLS {
        let mut reply_way = None;
        for &bytes in sizes {
            let (f, spread) = loss_free(o, proto, bytes, false)?;
            let (on, spread, log) = if proto == Protocol::Txn {
                let (on, spread) = loss_free(o, proto, bytes, true)?;
                let log = (on.round.mean - f.round.mean).max(0.0);
                (on, spread, log)
            } else {
                (f.clone(), spread, 0.0)
            };
            let ways = (f.round.mean - f.send_us - f.handler_us).max(0.0);
            // the reply is short: its way is the short request's half (at
            // most half of this size's: a noisy short run must not leave
            // the request a negative way)
            let back = reply_way.get_or_insert(ways / 2.0).min(ways / 2.0);
            let st = Stages {
                send: f.send_us,
                request_way: ways - back,
                handler: f.handler_us,
                reply_way: back,
                log,
                rttvar: on.mad_us,
                loss_free: Some(on.dist.clone()),
            };
            table.insert((proto.name(), bytes), (st, on.round.p99, spread, on.n));
        }
    }
    Ok(table)
}

fn measure_to_file(o: &Opts) -> Result<(), String> {
    let p = policy()?;
    let table = measure(o, &SIZES)?;
    let text = crate::perf_stages::text(o.transport, o.runs, &p, &table);
    std::fs::write(&o.out, &text).map_err(|e| format!("{}: {e}", o.out))?;
    print!("{text}");
    println!("# written to {}", o.out);
    Ok(())
}

fn protocol(name: &str) -> Protocol {
    if name == "txn" {
        Protocol::Txn
    } else {
        Protocol::Plain
    }
}

fn model(o: &Opts) -> Result<(), String> {
    let (transport, table) = crate::perf_stages::read(&o.out)?;
    let p = policy()?;
    println!(
        "ramp perf model ({transport}, stages from {}): serial requests, response time (us) against \
         bit error rate; the request carries the bytes, the reply is short",
        o.out
    );
    println!(
        "{:<6} {:>6} {:>8} {:>10} {:>10} {:>10}",
        "proto", "bytes", "ber", "mean", "p99", "given up"
    );
    for (&(name, bytes), (st, ..)) in &table {
        for ber in std::iter::once(0.0).chain(BERS) {
            let f = Faults {
                ber,
                ..Faults::default()
            };
            let out = perf::outcome(protocol(name), bytes, st, &f, &p);
            println!(
                "{name:<6} {bytes:>6} {ber:>8.0e} {:>10.1} {:>10.1} {:>10.1e}",
                out.mean_us, out.p99_us, out.lost
            );
        }
    }
    println!("\none component failing at a time (short requests): probability f of");
    println!(
        "{:<6} {:>6} {:<28} {:>10} {:>10}",
        "proto", "f", "component", "mean", "p99"
    );
    for name in ["plain", "txn"] {
        let Some((st, ..)) = table.get(&(name, 0)) else {
            continue;
        };
        for f in COMPONENT_P {
            for c in components(f) {
                let out = perf::outcome(protocol(name), 0, st, &c.faults, &p);
                println!(
                    "{name:<6} {f:>6} {:<28} {:>10.1} {:>10.1}",
                    c.what, out.mean_us, out.p99_us
                );
            }
        }
    }
    Ok(())
}

/// One component failing at a time (`ramp perf model`, the sweep's
/// component points): its name in the CSV's `component` column, what it
/// is, the model's faults, and the injector's settings that make it.
pub struct Component {
    pub key: &'static str,
    pub what: &'static str,
    pub faults: Faults,
    /// `RAMP_FAULT_*` of the client (initiator) and of the server (target).
    pub client_env: Vec<(&'static str, String)>,
    pub server_env: Vec<(&'static str, String)>,
}

/// Each component failing with probability `f`, the others sound: the
/// initiator's send (`RAMP_FAULT_LOSS` at the client), the wire both ways
/// (`RAMP_FAULT_LOSS` at both), the target's receive
/// (`RAMP_FAULT_RECV_LOSS` at the server: the same datagrams as the
/// initiator's send, dropped after they arrived), a handler that stalls
/// `STALL_US` (the server's handler spins).
pub fn components(f: f64) -> Vec<Component> {
    let loss = |k: &'static str| vec![(k, f.to_string())];
    vec![
        Component {
            key: "send",
            what: "initiator's send drops",
            faults: Faults {
                initiator_loss: f,
                ..Faults::default()
            },
            client_env: loss(ramp::config::FAULT_LOSS),
            server_env: vec![],
        },
        Component {
            key: "wire",
            what: "the wire drops, both ways",
            faults: Faults {
                initiator_loss: f,
                target_loss: f,
                ..Faults::default()
            },
            client_env: loss(ramp::config::FAULT_LOSS),
            server_env: loss(ramp::config::FAULT_LOSS),
        },
        Component {
            key: "recv",
            what: "target's receive drops",
            faults: Faults {
                initiator_loss: f,
                ..Faults::default()
            },
            client_env: vec![],
            server_env: loss(ramp::config::FAULT_RECV_LOSS),
        },
        Component {
            key: "handler_stall",
            what: "handler stalls 1 ms",
            faults: Faults {
                stall: f,
                stall_us: STALL_US,
                ..Faults::default()
            },
            client_env: vec![],
            server_env: vec![],
        },
    ]
}
