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
//! The measuring parts are in `perf_measure.rs` (the roles of `ramp bench
//! --repair`, pinned to cores 1 (server) and 0 (client)).

use crate::perf_measure::{components, measure, policy, Opts, BERS, SIZES};
use ramp::perf::{self, Faults, Protocol};

/// Component failure probabilities of the model's second table.
const COMPONENT_P: [f64; 3] = [0.001, 0.01, 0.05];

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
