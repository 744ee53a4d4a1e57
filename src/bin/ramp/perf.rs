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
/// A stalled handler's time in the model's second table, us.
pub const STALL_US: f64 = 1000.0;

pub const USAGE: &str =
    "usage: ramp perf measure [--transport udp|shm] [--out FILE] [--iters N] [--runs N] [--no-pin]
       ramp perf model [--stages FILE]
       ramp perf sweep [--quick] [--csv FILE] [--plot FILE.png] [--iters N] [--runs N] [--no-pin]
                       [--font FILE.ttf]
  measure  stage costs of serial requests (plain, transactions; short, 1 KiB, 64 KiB), loss-free,
           and the timer policy, written to FILE (default ramp-perf-stages.txt)
  model    mean and p99 response time against bit error rate and one component's failure
           probability, from the protocol's rules and a stages file
  sweep    the model beside two-process jobs under RAMP_FAULT_BER (udp, shm), with ratios;
           --quick: udp, short requests, two rates (CI); progress on stderr";

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

/// One point (`pair`), `runs` times: the median of each figure.
pub fn run_median(o: &Opts, pair: &Pair) -> Result<PairFigures, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let exe = exe.to_str().ok_or("the ramp binary's path is not UTF-8")?;
    let (srv, cli) = cpus(o.pin);
    let mut all = Vec::new();
    for _ in 0..o.runs {
        all.push(run_roles(exe, srv, cli, pair)?);
    }
    let med = |f: fn(&PairFigures) -> f64| {
        let mut v: Vec<f64> = all.iter().map(f).collect();
        median(&mut v)
    };
    let mut m = all[0];
    m.round.mean = med(|f| f.round.mean);
    m.round.p99 = med(|f| f.round.p99);
    m.send_us = med(|f| f.send_us);
    m.mad_us = med(|f| f.mad_us);
    m.handler_us = med(|f| f.handler_us);
    m.n = all.iter().map(|f| f.n).sum();
    Ok(m)
}

/// Measured stage costs by (protocol, bytes), with the round trips' p99.
pub type StageTable = BTreeMap<(&'static str, usize), (Stages, f64)>;

/// Measures the loss-free stage costs over `o.transport` (progress on stderr).
pub fn measure(o: &Opts, sizes: &[usize]) -> Result<StageTable, String> {
    let mut table = StageTable::new();
    for proto in PROTOCOLS {
        let mut reply_way = None;
        for &bytes in sizes {
            eprintln!(
                "ramp perf measure: {} {} {bytes} bytes, loss-free, {} runs",
                o.transport,
                proto.name(),
                o.runs
            );
            let pair = Pair {
                transport: o.transport,
                iters: if o.iters > 0 { o.iters } else { 5000 },
                bytes,
                txn: proto == Protocol::Txn,
                max_secs: 2,
                ..Pair::default()
            };
            let f = run_median(o, &pair)?;
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
                rttvar: f.mad_us,
            };
            table.insert((proto.name(), bytes), (st, f.round.p99));
        }
    }
    Ok(table)
}

fn measure_to_file(o: &Opts) -> Result<(), String> {
    let p = policy()?;
    let table = measure(o, &SIZES)?;
    let text = stages_text(o.transport, o.runs, &p, &table);
    std::fs::write(&o.out, &text).map_err(|e| format!("{}: {e}", o.out))?;
    print!("{text}");
    println!("# written to {}", o.out);
    Ok(())
}

/// The stages file: the policy, then one line per (protocol, bytes).
pub fn stages_text(transport: &str, runs: usize, p: &Policy, t: &StageTable) -> String {
    let mut s = format!(
        "# ramp perf measure: stage costs (us) of serial requests between two processes, \
         loss-free, medians of {runs} runs\n\
         # send: the request call; request_way/reply_way: wire, receive and dispatch each way;\n\
         # handler: the handler with its reply; rttvar: the round trips' mean absolute deviation\n\
         transport {transport}\n\
         policy rto_initial_us {} rto_min_us {} rto_max_us {} ack_delay_us {} retry_limit {} burst_us_per_byte {}\n\
         # tail-loss probe max(2 srtt, srtt + 4 rttvar) + 2 ack_delay (at most the RTO); a first copy\n\
         # lost again in a flight of <= 2 packets: a second probe (2 pto); then RTO, doubling;\n\
         # RACK: a packet before one SACKed is resent max(srtt/2, 4 rttvar) after it was sent\n",
        p.rto_initial_us, p.rto_min_us, p.rto_max_us, p.ack_delay_us, p.retry_limit, p.burst_us_per_byte
    );
    for ((proto, bytes), (st, p99)) in t {
        let rt = st.round_trip();
        s += &format!(
            "stage {proto} {bytes} send {:.3} request_way {:.3} handler {:.3} reply_way {:.3} rttvar {:.3} \
             # round trip {rt:.2} p99 {p99:.2} pto {:.1} rto {:.0}\n",
            st.send,
            st.request_way,
            st.handler,
            st.reply_way,
            st.rttvar,
            p.pto(rt, st.rttvar),
            p.rto(rt, st.rttvar)
        );
    }
    s
}

/// Reads a stages file: its transport and stages.
pub fn read_stages(path: &str) -> Result<(String, StageTable), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{path}: {e} (write it with `ramp perf measure --out {path}`)"))?;
    let mut transport = None;
    let mut table = StageTable::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        let w: Vec<&str> = line.split_whitespace().collect();
        let bad = || format!("{path}:{}: not a stages line: {line:?}", n + 1);
        match w.first() {
            None | Some(&"policy") => {}
            Some(&"transport") => transport = w.get(1).map(|t| t.to_string()),
            Some(&"stage") if w.len() == 13 => {
                let proto = match w[1] {
                    "plain" => "plain",
                    "txn" => "txn",
                    _ => return Err(bad()),
                };
                let bytes: usize = w[2].parse().map_err(|_| bad())?;
                let mut v = [0.0; 5];
                for (i, name) in ["send", "request_way", "handler", "reply_way", "rttvar"]
                    .iter()
                    .enumerate()
                {
                    if w[3 + 2 * i] != *name {
                        return Err(bad());
                    }
                    v[i] = w[4 + 2 * i]
                        .parse::<f64>()
                        .ok()
                        .filter(|x| x.is_finite() && *x >= 0.0)
                        .ok_or_else(bad)?;
                }
                let st = Stages {
                    send: v[0],
                    request_way: v[1],
                    handler: v[2],
                    reply_way: v[3],
                    rttvar: v[4],
                };
                table.insert((proto, bytes), (st, 0.0));
            }
            _ => return Err(bad()),
        }
    }
    let transport = transport.ok_or(format!("{path}: no transport line"))?;
    if table.is_empty() {
        return Err(format!("{path}: no stage lines"));
    }
    Ok((transport, table))
}

fn protocol(name: &str) -> Protocol {
    if name == "txn" {
        Protocol::Txn
    } else {
        Protocol::Plain
    }
}

fn model(o: &Opts) -> Result<(), String> {
    let (transport, table) = read_stages(&o.out)?;
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
    for (&(name, bytes), (st, _)) in &table {
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
        let Some((st, _)) = table.get(&(name, 0)) else {
            continue;
        };
        for f in COMPONENT_P {
            for (what, faults) in components(f) {
                let out = perf::outcome(protocol(name), 0, st, &faults, &p);
                println!(
                    "{name:<6} {f:>6} {what:<28} {:>10.1} {:>10.1}",
                    out.mean_us, out.p99_us
                );
            }
        }
    }
    Ok(())
}

/// One component failing with probability `f`, the others sound.
pub fn components(f: f64) -> Vec<(String, Faults)> {
    vec![
        (
            "initiator send / wire out".into(),
            Faults {
                initiator_loss: f,
                ..Faults::default()
            },
        ),
        (
            "target send / wire back".into(),
            Faults {
                target_loss: f,
                ..Faults::default()
            },
        ),
        (
            format!("handler stalls {STALL_US} us"),
            Faults {
                stall: f,
                stall_us: STALL_US,
                ..Faults::default()
            },
        ),
    ]
}
