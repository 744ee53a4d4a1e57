//! The `ramp` command: `ramp bench` (round trip and bandwidth beside raw UDP),
//! `ramp log FILE` (print and check a transaction log), `ramp perf`
//! (performability: the model beside fault-injected measurement).

use std::process::ExitCode;

mod bench;
mod bench_blast;
mod bench_integrity;
mod bench_links;
mod bench_pair;
mod bench_rails;
mod bench_rails_plot;
mod bench_rails_rtt;
mod bench_rails_trace;
mod bench_repair;
mod bench_repair_roles;
mod bench_rma;
mod bench_roles;
mod bench_shm;
mod bench_txn;
mod log;
mod loggp;
mod loggp_measure;
mod loggp_plot;
mod loggp_raw;
mod loggp_roles;
mod loggp_ucx;
mod perf;
mod perf_measure;
mod perf_plot;
mod perf_stages;
mod perf_sweep;
mod plot_lines;
mod role_util;

use bench::BenchOptions;

const USAGE: &str = "usage: ramp bench [--iters N] [--runs N] [--xfer-mib N] [--no-pin]
       ramp bench --repair [--iters N] [--runs N] [--busy] [--against OLD_RAMP] [--no-pin]
       ramp bench txn [--iters N] [--runs N]
       ramp bench --rails [--secs S] [--sample-ms MS] [--plot FILE.png] [--font FILE.ttf]
       ramp bench --loggp [--plot FILE.png] [--iters N] [--runs N] [--mib N] [--max-burst N]
                    [--no-pin] [--font FILE.ttf]
       ramp log FILE
       ramp perf measure|model|sweep [options]   (ramp perf --help)
  bench     round trip of short requests and Xfer bandwidth between two processes
            on loopback, beside a raw UDP ping-pong measured in the same run;
            --loggp: LogGP parameters (L, o_s, o_r, g, G) of ramp over udp and shm
            beside raw UDP, raw shared memory, memcpy and UCX's ucx_perftest (when
            installed), a table and with --plot a PNG (also `ramp loggp`)
            --repair: loss repair over UDP with the fault injector: serial ping-pong
            mean/p99 at loss 0, 0.001, 0.01, 0.05 and 32 outstanding p50/p99/p99.9 at
            0 and 0.01 (--iters round trips, default 5000); --busy: a neighbour spins on
            the server's core; --against: another ramp binary's roles alternated (A/B)
            --rails: under ramp-run -n 2, rank 1 streams 1 MiB messages to rank 0 over
            RAMP_RAILS: Mbit/s per path every 50 ms, path events, with --plot a PNG
  bench txn what the transaction log costs (log off and on; also the end of ramp bench)
  log       print a transaction log and check it (exit 1 when ramp would refuse it)
  perf      performability: response time as faults grow, the model beside measurement";

fn parse_bench(args: &[String]) -> Result<BenchOptions, String> {
    let mut o = BenchOptions::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut num = |name: &str| -> Result<usize, String> {
            it.next()
                .and_then(|v| v.parse::<usize>().ok())
                .filter(|&v| v > 0)
                .ok_or(format!("{name} needs a positive number"))
        };
        match a.as_str() {
            "--iters" => o.iters = num("--iters")?,
            "--runs" => o.runs = num("--runs")?,
            "--xfer-mib" => o.xfer_mib = num("--xfer-mib")?,
            "--no-pin" => o.pin = false,
            "--repair" => o.repair = true,
            "--busy" => o.busy = true,
            "--against" => {
                o.against = Some(it.next().ok_or("--against needs a ramp binary")?.clone())
            }
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    Ok(o)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let help = |a: &String| matches!(a.as_str(), "-h" | "--help");
    let role = args.first().map(String::as_str);
    if role.is_some_and(|r| r.starts_with("bench-") || r.starts_with("loggp-")) {
        bench_roles::exit_with_parent();
    }
    let code = match role {
        // `ramp bench --help`, `ramp log -h`: the usage, not an error
        Some("bench" | "loggp" | "log") if args.iter().any(help) => {
            println!("{USAGE}");
            0
        }
        Some("bench") if args.iter().any(|a| a == "--loggp") => loggp::main(&args[1..]),
        Some("bench") if args.iter().any(|a| a == "--rails") => bench_rails::main(&args[1..]),
        Some("loggp") => loggp::main(&args[1..]),
        Some("perf") if args.iter().any(help) => {
            println!("{}", perf::USAGE);
            0
        }
        Some("perf") => perf::main(&args[1..]),
        Some("loggp-server") => loggp_roles::server(&args[1..]),
        Some("loggp-client") => loggp_roles::client(&args[1..]),
        Some("bench") if args.get(1).map(String::as_str) == Some("txn") => {
            match parse_bench(&args[2..]) {
                Ok(o) => match bench_txn::run(o.iters, o.runs) {
                    Ok(()) => 0,
                    Err(e) => {
                        eprintln!("ramp bench txn: {e}");
                        1
                    }
                },
                // a usage error, as `ramp bench`'s
                Err(e) => {
                    eprintln!("ramp bench txn: {e}\n{USAGE}");
                    2
                }
            }
        }
        Some("bench") => match parse_bench(&args[1..]) {
            Ok(o) => match if o.repair {
                bench::run_repair(&o)
            } else {
                bench::run(&o)
            } {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("ramp bench: {e}");
                    1
                }
            },
            Err(e) => {
                eprintln!("ramp bench: {e}\n{USAGE}");
                2
            }
        },
        Some("log") => match &args[1..] {
            [path] => log::run(path),
            _ => {
                eprintln!("ramp log: give one log file\n{USAGE}");
                2
            }
        },
        Some("bench-server") => bench::server_main(),
        Some("bench-client") => bench::client_main(&args[1..]),
        Some("bench-repair-server") => bench_repair_roles::server(&args[1..]),
        Some("bench-repair-client") => bench_repair_roles::client(&args[1..]),
        Some("bench-repair-spin") => bench_repair_roles::spin(),
        Some(r) if r.starts_with("bench-rma-") => bench_rma::role(&args),
        Some("-h") | Some("--help") | Some("help") => {
            println!("{USAGE}");
            0
        }
        _ => {
            eprintln!("{USAGE}");
            2
        }
    };
    ExitCode::from(code as u8)
}
