//! `ramp perf sweep`: the model (`ramp::perf`) beside real two-process jobs
//! under the fault injector at bit error rates 1e-7 .. 1e-3 (both
//! processes' `RAMP_FAULT_BER`), for short, 1 KiB and 64 KiB requests,
//! plain and transactions, over udp and shm (the injector wraps the rings;
//! the express lane is off under it). Each transport's stage costs and
//! loss-free round trips are measured first, in the same run and through
//! the same injector (`perf::run_median`); each lossy point's runs
//! alternate with loss-free runs of the same request (`perf::run_paired`),
//! whose round trips' distribution the model at that point is solved on:
//! a shared host's load changes between the first runs and the later
//! points, and the loss-free distribution carries it. The model is never
//! fitted to the lossy runs. A point where the model's repairs add
//! more than `MAX_MODEL_US` to the mean (or that is given up now and then)
//! is skipped, and says so: a run would take minutes and its p99 is the
//! retry limit's.
//!
//! Transactions run with the transaction log on (`RAMP_LOG_DIR`, a fresh
//! directory per process), whose cost `measure` takes.
//!
//! Prints the table (model, measured, ratio model / measured, the p99's
//! run-to-run spread), then one component failing at a time (udp, short
//! requests, probability `COMPONENT_F`; `--quick`: the target's receive
//! only); `--csv FILE` writes one row per point: the columns, then
//! `component` (`none` for a bit error rate's point, else `send`, `wire`,
//! `recv` or `handler_stall`, whose rows have ber 0), `fault_p` (the
//! component's probability), `p99_spread` and `n` (round trips timed, all
//! runs); `--plot FILE.png` the response time against the bit error rate.

use std::io::Write;

use crate::bench_repair::Pair;
use crate::perf_measure::{
    components, measure, policy, run_paired, Opts, Row, BERS, PROTOCOLS, SIZES,
};
use ramp::perf::{self, Faults, Protocol, Stages};

/// Points where the model's repairs add more than this (us) to the mean
/// are skipped: datagrams are lost so often that a run takes minutes, and
/// the association's handshake
/// itself may not complete within the peer timeout (at BER 1e-3, 45% of
/// short datagrams are lost: a first request came back unreachable).
const MAX_MODEL_US: f64 = 5_000.0;
/// The CSV's header.
pub const CSV_HEADER: &str =
    "transport,protocol,bytes,ber,model_mean_us,measured_mean_us,model_p99_us,measured_p99_us,\
     component,fault_p,p99_spread,n";
/// Each component's failure probability in the sweep.
const COMPONENT_F: f64 = 0.01;

fn header(first: &str) {
    println!(
        "{first:<20} | {:>9} {:>9} {:>6} | {:>9} {:>9} {:>6} {:>6} | {:>6}",
        "model", "measured", "ratio", "model", "measured", "ratio", "spread", "n"
    );
    println!(
        "{:<20} | {:>26} | {:>33} |",
        "", "mean response us", "p99 response us"
    );
}

fn print_row(r: &Row) {
    let point = if r.component == "none" {
        format!("{:.0e}", r.ber)
    } else {
        format!("{} {}", r.component, r.fault_p)
    };
    let first = format!("{} {} {} {point}", r.transport, r.protocol.name(), r.bytes);
    println!(
        "{first:<20} | {:>9.1} {:>9.1} {:>6.2} | {:>9.1} {:>9.1} {:>6.2} {:>6.2} | {:>6}",
        r.model.mean_us,
        r.mean,
        r.model.mean_us / r.mean,
        r.model.p99_us,
        r.p99,
        r.model.p99_us / r.p99,
        r.spread,
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
    let started = std::time::Instant::now();
    eprintln!(
        "ramp perf sweep{}: {} transports, {} sizes, bit error rates {bers:?}, {} runs per point, \
         up to {} round trips ({} s) each{}",
        if o.quick { " --quick" } else { "" },
        transports.len(),
        sizes.len(),
        o.runs,
        o.iters(),
        o.max_secs(),
        if o.pin {
            ", pinned to cores 1 (server) and 0 (client)"
        } else {
            ""
        }
    );
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    let mut udp_stages = None;
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
        if transport == "udp" {
            udp_stages = Some(stages.clone());
        }
        for proto in PROTOCOLS {
            for &bytes in &sizes {
                let (st, p99, spread, n) = &stages[&(proto.name(), bytes)];
                let point = |ber, model, mean, p99, spread, n| Row {
                    transport,
                    protocol: proto,
                    bytes,
                    ber,
                    model,
                    mean,
                    p99,
                    spread,
                    n,
                    component: "none",
                    fault_p: 0.0,
                };
                let free = perf::outcome(proto, bytes, st, &Faults::default(), &p);
                rows.push(point(0.0, free, st.round_trip(), *p99, *spread, *n));
                for &ber in bers {
                    let f = Faults {
                        ber,
                        ..Faults::default()
                    };
                    let planned = perf::outcome(proto, bytes, st, &f, &p);
                    if planned.mean_us - free.mean_us > MAX_MODEL_US || planned.lost > 1e-9 {
                        skipped.push(format!(
                            "{transport} {} {bytes} ber {ber:e}: model mean {:.0} us, p99 {:.0} us",
                            proto.name(),
                            planned.mean_us,
                            planned.p99_us
                        ));
                        eprintln!(
                            "  {transport} {} {bytes} ber {ber:e}: skipped (model mean {:.0} us, \
                             given up {:.1e})",
                            proto.name(),
                            planned.mean_us,
                            planned.lost
                        );
                        continue;
                    }
                    eprintln!(
                        "  {transport} {} {bytes} ber {ber:e} ({:.0} s so far)",
                        proto.name(),
                        started.elapsed().as_secs_f64()
                    );
                    let env = vec![(ramp::config::FAULT_BER, ber.to_string())];
                    let free_pair = Pair {
                        transport,
                        iters: o.iters(),
                        bytes,
                        txn: proto == Protocol::Txn,
                        log: proto == Protocol::Txn,
                        max_secs: o.max_secs(),
                        ..Pair::default()
                    };
                    let pair = Pair {
                        client_env: env.clone(),
                        server_env: env,
                        ..free_pair.clone()
                    };
                    // the model on the loss-free round trips of the same
                    // minutes (`run_paired`), the other stages as measured
                    let ((twin, _), (m, spread)) = run_paired(&o, &free_pair, &pair)?;
                    let st = Stages {
                        rttvar: twin.mad_us,
                        loss_free: Some(twin.dist.clone()),
                        ..st.clone()
                    };
                    let model = perf::outcome(proto, bytes, &st, &f, &p);
                    rows.push(point(ber, model, m.round.mean, m.round.p99, spread, m.n));
                }
            }
        }
    }
    let bers_done = rows.len();
    let udp_stages = match udp_stages {
        Some(s) => s,
        None => measure(
            &Opts {
                transport: "udp",
                ..o.clone()
            },
            &[0],
        )?,
    };
    components_rows(&o, &p, &udp_stages, &mut rows, started)?;
    println!(
        "ramp perf sweep: serial requests between two processes under RAMP_FAULT_BER \
         (transactions with the transaction log on); model from the protocol's rules, the stage \
         costs and the loss-free round trip's distribution measured in this run (ber 0 rows: \
         the model is that distribution); medians of {} runs; ratio = model / measured \
         (targets: mean within 10%, p99 within 25%); spread: the measured p99's run-to-run \
         (max - min) / median",
        o.runs
    );
    header("point");
    for r in &rows[..bers_done] {
        print_row(r);
    }
    for s in &skipped {
        println!("skipped (model repairs past {MAX_MODEL_US} us on the mean): {s}");
    }
    println!(
        "\none component failing at a time (probability {COMPONENT_F}; udp, short requests; \
         component: send = the initiator's send drops, wire = both ways drop, recv = the \
         target's receive drops, handler_stall = the handler spins {} us)",
        crate::perf_measure::STALL_US
    );
    header("component");
    for r in &rows[bers_done..] {
        print_row(r);
    }
    if let Some(path) = &o.csv {
        write_csv(path, &rows)?;
        println!("csv: {path}");
    }
    if let Some(path) = &o.plot {
        let bers: Vec<Row> = rows[..bers_done].to_vec();
        match crate::perf_plot::write(path, o.font.as_deref(), &bers)? {
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

/// Short requests over udp with one component failing at a time
/// (`--quick`: plain, the target's receive only), on the stage costs
/// measured loss-free over udp in this run.
fn components_rows(
    o: &Opts,
    p: &ramp::perf::Policy,
    stages: &crate::perf_measure::StageTable,
    rows: &mut Vec<Row>,
    started: std::time::Instant,
) -> Result<(), String> {
    let mut o = o.clone();
    o.transport = "udp";
    let protocols: &[Protocol] = if o.quick {
        &[Protocol::Plain]
    } else {
        &PROTOCOLS
    };
    for &proto in protocols {
        let (st, ..) = &stages[&(proto.name(), 0)];
        for c in components(COMPONENT_F) {
            if o.quick && c.key != "recv" {
                continue;
            }
            eprintln!(
                "  udp {} 0 component {} {COMPONENT_F} ({:.0} s so far)",
                proto.name(),
                c.key,
                started.elapsed().as_secs_f64()
            );
            let free_pair = Pair {
                transport: "udp",
                iters: o.iters(),
                txn: proto == Protocol::Txn,
                log: proto == Protocol::Txn,
                max_secs: o.max_secs(),
                ..Pair::default()
            };
            let pair = Pair {
                client_env: c.client_env.clone(),
                server_env: c.server_env.clone(),
                stall: c.faults.stall,
                stall_us: c.faults.stall_us as u64,
                ..free_pair.clone()
            };
            // as the bit error rates' points: beside its loss-free twin
            let ((twin, _), (m, spread)) = run_paired(&o, &free_pair, &pair)?;
            let st = Stages {
                rttvar: twin.mad_us,
                loss_free: Some(twin.dist.clone()),
                ..st.clone()
            };
            let model = perf::outcome(proto, 0, &st, &c.faults, p);
            rows.push(Row {
                transport: "udp",
                protocol: proto,
                bytes: 0,
                ber: 0.0,
                model,
                mean: m.round.mean,
                p99: m.round.p99,
                spread,
                n: m.n,
                component: c.key,
                fault_p: COMPONENT_F,
            });
        }
    }
    Ok(())
}

fn write_csv(path: &str, rows: &[Row]) -> Result<(), String> {
    let mut f = std::fs::File::create(path).map_err(|e| format!("{path}: {e}"))?;
    let mut s = format!("{CSV_HEADER}\n");
    for r in rows {
        s += &format!(
            "{},{},{},{:e},{:.3},{:.3},{:.3},{:.3},{},{},{:.3},{}\n",
            r.transport,
            r.protocol.name(),
            r.bytes,
            r.ber,
            r.model.mean_us,
            r.mean,
            r.model.p99_us,
            r.p99,
            r.component,
            r.fault_p,
            r.spread,
            r.n
        );
    }
    f.write_all(s.as_bytes())
        .map_err(|e| format!("{path}: {e}"))
}
