//! `ramp perf`'s measuring parts (issue 40), used by `perf.rs` (the
//! commands), `perf_sweep.rs` and `perf_stages.rs`: the sizes, protocols
//! and bit error rates; the options; a point run `runs` times through the
//! fault injector (`run_median`, `run_paired`) with the roles of `ramp
//! bench --repair` (`bench_repair.rs`); the loss-free stage costs
//! (`measure`); one component failing at a time (`components`).

use std::collections::BTreeMap;

use crate::bench_repair::{run_roles, Pair, PairFigures};
use crate::role_util::median;
use ramp::perf::{Faults, Outcome, Policy, Protocol, Stages};

/// The request sizes: short, medium, long (64 KiB).
pub const SIZES: [usize; 3] = [0, 1024, 65_536];

pub const PROTOCOLS: [Protocol; 2] = [Protocol::Plain, Protocol::Txn];

/// The bit error rates of the model and the sweep.
pub const BERS: [f64; 5] = [1e-7, 1e-6, 1e-5, 1e-4, 1e-3];

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

/// One point of the sweep (`perf_sweep.rs`), as its table and plot
/// (`perf_plot.rs`) show it.
#[derive(Clone, Debug)]
pub struct Row {
    pub transport: &'static str,
    pub protocol: Protocol,
    pub bytes: usize,
    pub ber: f64,
    pub model: Outcome,
    pub mean: f64,
    pub p99: f64,
    /// The measured p99's run-to-run spread, (max - min) / median.
    pub spread: f64,
    pub n: usize,
    /// `none`, or the component failing (`components`) with `fault_p`.
    pub component: &'static str,
    pub fault_p: f64,
}
