//! `ramp perf sweep`: the model (`ramp::perf`) beside real two-process jobs
//! under the fault injector at bit error rates 1e-7 .. 1e-3 (both
//! processes' `RAMP_FAULT_BER`), for short, 1 KiB and 64 KiB requests,
//! plain and transactions, over udp and shm (the injector wraps the rings;
//! the express lane is off under it). Each transport's stage costs are
//! measured first, loss-free, in the same run; the model is solved on
//! them, never fitted to the lossy points. A point whose model mean passes
//! `MAX_MODEL_US` (or that is given up now and then) is skipped, and says
//! so: a run would take minutes and its p99 is the retry limit's.
//!
//! Prints the table (model, measured, ratio model / measured), then one
//! component at a time (full sweep only); `--csv FILE` writes one row per
//! point; `--plot FILE.png` the response time against the bit error rate.

use std::io::Write;

use crate::bench_repair::Pair;
use crate::perf::{components, measure, policy, run_median, Opts, BERS, PROTOCOLS, SIZES};
use ramp::perf::{self, Faults, Outcome, Protocol};

/// Points whose model mean is above this (us) are skipped: datagrams are
/// lost so often that a run takes minutes, and the association's handshake
/// itself may not complete within the peer timeout (at BER 1e-3, 45% of
/// short datagrams are lost: a first request came back unreachable).
const MAX_MODEL_US: f64 = 5_000.0;
/// The CSV's header.
pub const CSV_HEADER: &str =
    "transport,protocol,bytes,ber,model_mean_us,measured_mean_us,model_p99_us,measured_p99_us";

/// One point of the sweep.
#[derive(Clone, Debug)]
pub struct Row {
    pub transport: &'static str,
    pub protocol: Protocol,
    pub bytes: usize,
    pub ber: f64,
    pub model: Outcome,
    pub mean: f64,
    pub p99: f64,
    pub n: usize,
}

fn header() {
    println!(
        "{:<4} {:<5} {:>6} {:>7} | {:>9} {:>9} {:>6} | {:>9} {:>9} {:>6} | {:>6}",
        "tr",
        "proto",
        "bytes",
        "ber",
        "model",
        "measured",
        "ratio",
        "model",
        "measured",
        "ratio",
        "n"
    );
    println!(
        "{:<4} {:<5} {:>6} {:>7} | {:>26} | {:>26} |",
        "", "", "", "", "mean response us", "p99 response us"
    );
}

fn print_row(r: &Row) {
    println!(
        "{:<4} {:<5} {:>6} {:>7.0e} | {:>9.1} {:>9.1} {:>6.2} | {:>9.1} {:>9.1} {:>6.2} | {:>6}",
        r.transport,
        r.protocol.name(),
        r.bytes,
        r.ber,
        r.model.mean_us,
        r.mean,
        r.model.mean_us / r.mean,
        r.model.p99_us,
        r.p99,
        r.model.p99_us / r.p99,
        r.n
    );
}

pub fn run(o: &Opts) -> Result<(), String> {
    let p = policy()?;
    let mut o = o.clone();
    let (transports, sizes, bers): (&[&'static str], &[usize], &[f64]) = if o.quick {
        (&["udp"], &[0], &[1e-5, 1e-4])
    } else {
        (&["udp", "shm"], &SIZES, &BERS)
    };
    if o.quick {
        o.runs = 1;
    }
    let iters = if o.iters > 0 {
        o.iters
    } else if o.quick {
        1000
    } else {
        5000
    };
    let max_secs = if o.quick { 1 } else { 2 };
    let started = std::time::Instant::now();
    eprintln!(
        "ramp perf sweep{}: {} transports, {} sizes, bit error rates {bers:?}, {} runs per point, \
         up to {iters} round trips ({max_secs} s) each{}",
        if o.quick { " --quick" } else { "" },
        transports.len(),
        sizes.len(),
        o.runs,
        if o.pin {
            ", pinned to cores 1 (server) and 0 (client)"
        } else {
            ""
        }
    );
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for &transport in transports {
        o.transport = transport;
        // a long request to a same-host peer is copied, not sent through
        // the rings: the injector does not see it
        let sizes: Vec<usize> = sizes
            .iter()
            .copied()
            .filter(|&b| transport == "udp" || b <= ramp::am::MAX_MEDIUM)
            .collect();
        let stages = measure(&o, &sizes)?;
        for proto in PROTOCOLS {
            for &bytes in &sizes {
                let (st, p99) = &stages[&(proto.name(), bytes)];
                let free = perf::outcome(proto, bytes, st, &Faults::default(), &p);
                rows.push(Row {
                    transport,
                    protocol: proto,
                    bytes,
                    ber: 0.0,
                    model: free,
                    mean: st.round_trip(),
                    p99: *p99,
                    n: 0,
                });
                for &ber in bers {
                    let f = Faults {
                        ber,
                        ..Faults::default()
                    };
                    let model = perf::outcome(proto, bytes, st, &f, &p);
                    if model.mean_us > MAX_MODEL_US || model.lost > 1e-9 {
                        skipped.push(format!(
                            "{transport} {} {bytes} ber {ber:e}: model mean {:.0} us, p99 {:.0} us",
                            proto.name(),
                            model.mean_us,
                            model.p99_us
                        ));
                        eprintln!(
                            "  {transport} {} {bytes} ber {ber:e}: skipped (model mean {:.0} us, \
                             given up {:.1e})",
                            proto.name(),
                            model.mean_us,
                            model.lost
                        );
                        continue;
                    }
                    eprintln!(
                        "  {transport} {} {bytes} ber {ber:e} ({:.0} s so far)",
                        proto.name(),
                        started.elapsed().as_secs_f64()
                    );
                    let env = vec![(ramp::config::FAULT_BER, ber.to_string())];
                    let pair = Pair {
                        transport,
                        client_env: env.clone(),
                        server_env: env,
                        iters,
                        bytes,
                        txn: proto == Protocol::Txn,
                        max_secs,
                        ..Pair::default()
                    };
                    let m = run_median(&o, &pair)?;
                    rows.push(Row {
                        transport,
                        protocol: proto,
                        bytes,
                        ber,
                        model,
                        mean: m.round.mean,
                        p99: m.round.p99,
                        n: m.n,
                    });
                }
            }
        }
    }
    println!(
        "ramp perf sweep: serial requests between two processes under RAMP_FAULT_BER; model \
         from the protocol's rules and the stage costs measured loss-free in this run (ber 0 \
         rows: the measured round trip); medians of {} runs; ratio = model / measured \
         (targets: mean within 10%, p99 within 25%)",
        o.runs
    );
    header();
    for r in &rows {
        print_row(r);
    }
    for s in &skipped {
        println!("skipped (model mean past {MAX_MODEL_US} us): {s}");
    }
    if !o.quick {
        components_table(&o, &p)?;
    }
    if let Some(path) = &o.csv {
        write_csv(path, &rows)?;
        println!("csv: {path}");
    }
    if let Some(path) = &o.plot {
        match crate::perf_plot::write(path, o.font.as_deref(), &rows)? {
            Some(font) => println!("plot: {path} (font {font})"),
            None => println!("plot: {path} (no font found: lines without text; --font FILE.ttf)"),
        }
    }
    eprintln!(
        "ramp perf sweep: done in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Short plain requests over udp with one component failing at a time.
fn components_table(o: &Opts, p: &ramp::perf::Policy) -> Result<(), String> {
    let mut o = o.clone();
    o.transport = "udp";
    let stages = measure(&o, &[0])?;
    let (st, _) = &stages[&("plain", 0)];
    println!("one component failing at a time: udp, plain short requests, f = 0.01");
    println!(
        "{:<28} | {:>9} {:>9} {:>6} | {:>9} {:>9} {:>6}",
        "component", "model", "mean", "ratio", "model", "p99", "ratio"
    );
    for (what, f) in components(0.01) {
        eprintln!("  component: {what}");
        let model = perf::outcome(Protocol::Plain, 0, st, &f, p);
        let loss = |x: f64| vec![(ramp::config::FAULT_LOSS, x.to_string())];
        let pair = Pair {
            transport: "udp",
            client_env: loss(f.initiator_loss),
            server_env: loss(f.target_loss),
            iters: 5000,
            max_secs: 3,
            stall: f.stall,
            stall_us: f.stall_us as u64,
            ..Pair::default()
        };
        let m = run_median(&o, &pair)?;
        println!(
            "{what:<28} | {:>9.1} {:>9.1} {:>6.2} | {:>9.1} {:>9.1} {:>6.2}",
            model.mean_us,
            m.round.mean,
            model.mean_us / m.round.mean,
            model.p99_us,
            m.round.p99,
            model.p99_us / m.round.p99
        );
    }
    Ok(())
}

fn write_csv(path: &str, rows: &[Row]) -> Result<(), String> {
    let mut f = std::fs::File::create(path).map_err(|e| format!("{path}: {e}"))?;
    let mut s = format!("{CSV_HEADER}\n");
    for r in rows {
        s += &format!(
            "{},{},{},{:e},{:.3},{:.3},{:.3},{:.3}\n",
            r.transport,
            r.protocol.name(),
            r.bytes,
            r.ber,
            r.model.mean_us,
            r.mean,
            r.model.p99_us,
            r.p99
        );
    }
    f.write_all(s.as_bytes())
        .map_err(|e| format!("{path}: {e}"))
}
