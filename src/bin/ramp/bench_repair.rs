//! `ramp bench --repair`: how fast ramp repairs random loss (issue 37,
//! item 0). Two processes over UDP with ramp's fault injector
//! (`RAMP_TRANSPORT=udp`, `RAMP_FAULT_LOSS=p` in both), pinned to cores 1
//! (server) and 0 (client), both busy-polling:
//! - a serial ping-pong of short requests (one outstanding) at loss 0,
//!   0.001, 0.01 and 0.05: mean and p99 of `--iters` round trips, and the
//!   mean as a multiple of the loss-free mean of the same round (targets:
//!   <= 1.5x at 1%, <= 3x at 5%);
//! - 20,000 short requests kept 32 outstanding, each answered at once, at
//!   loss 0 and 0.01: p50, p99 and p99.9 of each request's latency
//!   (target: p99.9 under 1 ms at 1%).
//!
//! `--busy` adds a neighbour that spins on the server's core for the whole
//! run (as `yes > /dev/null` pinned there): the server is then descheduled
//! for whole time slices, as on an oversubscribed host. `--against OLD`
//! runs the same roles of another `ramp` binary (an older build) in every
//! round beside this one, alternating, and prints the ratios new / old per
//! round (their median): a same-run A/B. Every figure is the median of
//! `--runs` rounds. The processes are in `bench_repair_roles.rs`.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};

use crate::role_util::median;

pub(crate) const TAG: u64 = 0xbe7e;
pub(crate) const H_ECHO: u8 = 10;
pub(crate) const H_PONG: u8 = 11;
/// Requests outstanding in the pipelined figure.
pub(crate) const DEPTH: usize = 32;
/// Requests per pipelined figure.
const PIPE_REQUESTS: usize = 20_000;
/// Loss rates of the serial ping-pong; the pipelined figure runs at the
/// first and third.
const LOSSES: [f64; 4] = [0.0, 0.001, 0.01, 0.05];
const PIPE_LOSSES: [f64; 2] = [0.0, 0.01];

fn read_line(r: &mut impl BufRead, who: &str) -> Result<String, String> {
    let mut l = String::new();
    match r.read_line(&mut l) {
        Ok(0) => Err(format!("the repair bench {who} exited before answering")),
        Ok(_) => Ok(l.trim_end().to_string()),
        Err(e) => Err(format!("reading from the repair bench {who}: {e}")),
    }
}

/// One round's figures of one binary at one loss rate.
#[derive(Clone, Copy, Debug, Default)]
pub struct Round {
    /// Serial ping-pong: mean and p99, us.
    pub mean: f64,
    pub p99: f64,
    /// Pipelined: p50, p99, p99.9, us (0 when not measured).
    pub pipe: [f64; 3],
}

/// A spinning process pinned to `cpu` (the busy neighbour), ended on drop.
struct Neighbour(Child);

impl Neighbour {
    fn start(exe: &str, cpu: Option<usize>) -> Result<Neighbour, String> {
        let mut c = match cpu {
            Some(cpu) => {
                let mut c = Command::new("taskset");
                c.arg("-c").arg(cpu.to_string()).arg(exe);
                c
            }
            None => Command::new(exe),
        };
        c.arg("bench-repair-spin")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .map(Neighbour)
            .map_err(|e| format!("cannot start the busy neighbour: {e}"))
    }
}

impl Drop for Neighbour {
    fn drop(&mut self) {
        drop(self.0.stdin.take());
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `ramp bench --repair`; prints the figures on stdout.
pub fn run(
    exe: &str,
    pin: bool,
    iters: usize,
    runs: usize,
    busy: bool,
    against: Option<&str>,
) -> Result<(), String> {
    if let Some(old) = against {
        if !std::path::Path::new(old).is_file() {
            return Err(format!("--against {old:?}: no such file"));
        }
    }
    let (srv_cpu, cli_cpu) = if pin {
        (Some(1), Some(0))
    } else {
        (None, None)
    };
    println!(
        "ramp bench --repair: serial ping-pong of short requests ({iters} round trips) at loss {LOSSES:?}, \
         {PIPE_REQUESTS} requests {DEPTH} outstanding at loss {PIPE_LOSSES:?}; UDP with the fault \
         injector (RAMP_FAULT_LOSS in both processes){}{}, {runs} rounds",
        if pin { ", pinned to cores 1 (server) and 0 (client)" } else { ", not pinned" },
        if busy { ", a busy neighbour spinning on the server's core" } else { "" },
    );
    let _neighbour = if busy {
        Some(Neighbour::start(exe, srv_cpu)?)
    } else {
        None
    };
    let bins: Vec<(&str, &str)> = match against {
        Some(old) => vec![("new", exe), ("old", old)],
        None => vec![("this", exe)],
    };
    // rounds[bin][loss] for every round
    let mut all: Vec<Vec<Vec<Round>>> = vec![vec![Vec::new(); LOSSES.len()]; bins.len()];
    for r in 1..=runs {
        for (li, &loss) in LOSSES.iter().enumerate() {
            let pipe = PIPE_LOSSES.contains(&loss);
            for (bi, &(name, bin)) in bins.iter().enumerate() {
                let f = run_pair(bin, srv_cpu, cli_cpu, iters, pipe, loss)?;
                println!(
                    "round {r}/{runs} {name:<4} loss {loss:<5}: serial mean {:7.1} us p99 {:7.1} us{}",
                    f.mean,
                    f.p99,
                    if pipe {
                        format!(
                            "; {DEPTH} outstanding p50 {:6.1} p99 {:7.1} p99.9 {:8.1} us",
                            f.pipe[0], f.pipe[1], f.pipe[2]
                        )
                    } else {
                        String::new()
                    }
                );
                all[bi][li].push(f);
            }
        }
    }
    println!("== medians of {runs} rounds (ratio: mean / the loss-free mean of the same round)");
    for (bi, &(name, _)) in bins.iter().enumerate() {
        for (li, &loss) in LOSSES.iter().enumerate() {
            let rounds = &all[bi][li];
            let mut ratio: Vec<f64> = rounds
                .iter()
                .zip(&all[bi][0])
                .map(|(x, z)| x.mean / z.mean)
                .collect();
            let mut mean: Vec<f64> = rounds.iter().map(|x| x.mean).collect();
            let mut p99: Vec<f64> = rounds.iter().map(|x| x.p99).collect();
            let target = if loss == 0.01 {
                " (target <= 1.5x)"
            } else if loss == 0.05 {
                " (target <= 3x)"
            } else {
                ""
            };
            println!(
                "{name:<4} serial loss {loss:<5}: mean {:7.1} us, p99 {:7.1} us, {:5.2}x loss-free{target}",
                median(&mut mean),
                median(&mut p99),
                median(&mut ratio)
            );
        }
        for &loss in &PIPE_LOSSES {
            let li = LOSSES.iter().position(|&l| l == loss).unwrap_or(0);
            let rounds = &all[bi][li];
            let q = |i: usize| {
                let mut v: Vec<f64> = rounds.iter().map(|x| x.pipe[i]).collect();
                median(&mut v)
            };
            let target = if loss > 0.0 {
                " (target p99.9 < 1000 us)"
            } else {
                ""
            };
            println!(
                "{name:<4} {DEPTH} outstanding loss {loss:<5}: p50 {:6.1} us, p99 {:7.1} us, p99.9 {:8.1} us{target}",
                q(0),
                q(1),
                q(2)
            );
        }
    }
    if bins.len() == 2 {
        println!("== new / old (median of per-round ratios)");
        for (li, &loss) in LOSSES.iter().enumerate() {
            let mut v: Vec<f64> = all[0][li]
                .iter()
                .zip(&all[1][li])
                .map(|(n, o)| n.mean / o.mean)
                .collect();
            let mut line = format!("loss {loss:<5}: serial mean {:.3}x", median(&mut v));
            if PIPE_LOSSES.contains(&loss) {
                for (i, q) in ["p50", "p99", "p99.9"].iter().enumerate() {
                    let mut v: Vec<f64> = all[0][li]
                        .iter()
                        .zip(&all[1][li])
                        .map(|(n, o)| n.pipe[i] / o.pipe[i])
                        .collect();
                    line += &format!(", {DEPTH} outstanding {q} {:.3}x", median(&mut v));
                }
            }
            println!("{line}");
        }
    }
    Ok(())
}

/// What one pair of roles runs (`ramp bench --repair`, `ramp perf`).
#[derive(Clone, Debug, Default)]
pub struct Pair {
    /// `RAMP_TRANSPORT` of both.
    pub transport: &'static str,
    /// `RAMP_*` settings of each process (the fault injector's).
    pub client_env: Vec<(&'static str, String)>,
    pub server_env: Vec<(&'static str, String)>,
    pub iters: usize,
    /// Requests of the pipelined figure (0: none).
    pub pipe: usize,
    /// The request's payload (0: a short request; up to 65,000 bytes a
    /// medium one, else long) and whether it is a transaction.
    pub bytes: usize,
    pub txn: bool,
    /// The serial figure stops after this long, warm-up included (at least
    /// 100 round trips timed).
    pub max_secs: u32,
    /// The handler stalls with this probability for `stall_us`.
    pub stall: f64,
    pub stall_us: u64,
    /// Both processes keep a transaction log (`RAMP_LOG_DIR`, a fresh
    /// directory each, removed after).
    pub log: bool,
}

/// The client's and server's figures of one pair.
#[derive(Clone, Debug, Default)]
pub struct PairFigures {
    pub round: Round,
    /// The request call, us (mean).
    pub send_us: f64,
    /// Mean absolute deviation of the round trips, us.
    pub mad_us: f64,
    /// Round trips timed.
    pub n: usize,
    /// The server's handler with its reply, us (mean).
    pub handler_us: f64,
    /// The serial round trips' distribution (us).
    pub dist: ramp::perf::Dist,
}

/// A fresh directory for one process's transaction log, removed on drop.
struct LogDir(std::path::PathBuf);

impl LogDir {
    fn new(who: &str) -> Result<LogDir, String> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let d = std::env::temp_dir().join(format!(
            "ramp-perf-log-{}-{}-{who}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir(&d).map_err(|e| format!("{}: {e}", d.display()))?;
        Ok(LogDir(d))
    }

    fn env(&self) -> (&'static str, String) {
        (ramp::config::LOG_DIR, self.0.to_string_lossy().into_owned())
    }
}

impl Drop for LogDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Parses a `DIST t:p ..` line.
fn parse_dist(line: &str) -> Option<ramp::perf::Dist> {
    let atoms = line
        .strip_prefix("DIST")?
        .split_whitespace()
        .map(|a| {
            let (t, p) = a.split_once(':')?;
            Some((t.parse().ok()?, p.parse().ok()?))
        })
        .collect::<Option<Vec<(f64, f64)>>>()?;
    Some(ramp::perf::Dist::normalized(atoms))
}

fn spawn(
    bin: &str,
    cpu: Option<usize>,
    args: &[String],
    transport: &str,
    env: &[(&str, String)],
) -> Result<Child, String> {
    let mut c = match cpu {
        Some(cpu) => {
            let mut c = Command::new("taskset");
            c.arg("-c").arg(cpu.to_string()).arg(bin);
            c
        }
        None => Command::new(bin),
    };
    c.args(args)
        .env(ramp::config::TRANSPORT, transport)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start {bin}: {e}"))
}

/// One server and client of binary `bin` at `loss`: the client's figures.
fn run_pair(
    bin: &str,
    srv_cpu: Option<usize>,
    cli_cpu: Option<usize>,
    iters: usize,
    pipe: bool,
    loss: f64,
) -> Result<Round, String> {
    let env = vec![(ramp::config::FAULT_LOSS, loss.to_string())];
    let pair = Pair {
        transport: "udp",
        client_env: env.clone(),
        server_env: env,
        iters,
        pipe: if pipe { PIPE_REQUESTS } else { 0 },
        ..Pair::default()
    };
    run_roles(bin, srv_cpu, cli_cpu, &pair).map(|f| f.round)
}

/// Runs one server and one client of binary `bin` as `pair` says.
pub fn run_roles(
    bin: &str,
    srv_cpu: Option<usize>,
    cli_cpu: Option<usize>,
    pair: &Pair,
) -> Result<PairFigures, String> {
    let srv_args = vec![
        "bench-repair-server".into(),
        pair.stall.to_string(),
        pair.stall_us.to_string(),
    ];
    let logs = if pair.log {
        Some((LogDir::new("server")?, LogDir::new("client")?))
    } else {
        None
    };
    let with_log = |env: &[(&'static str, String)], d: Option<&LogDir>| {
        let mut env = env.to_vec();
        env.extend(d.map(LogDir::env));
        env
    };
    let server_env = with_log(&pair.server_env, logs.as_ref().map(|l| &l.0));
    let client_env = with_log(&pair.client_env, logs.as_ref().map(|l| &l.1));
    let mut server = spawn(bin, srv_cpu, &srv_args, pair.transport, &server_env)?;
    let mut srv_out = BufReader::new(server.stdout.take().unwrap());
    let srv_name = read_line(&mut srv_out, "server")?;
    let args = vec![
        "bench-repair-client".into(),
        srv_name,
        pair.iters.to_string(),
        pair.pipe.to_string(),
        pair.bytes.to_string(),
        u8::from(pair.txn).to_string(),
        pair.max_secs.to_string(),
    ];
    let mut client = spawn(bin, cli_cpu, &args, pair.transport, &client_env)?;
    let mut cli_out = BufReader::new(client.stdout.take().unwrap());
    let cli_name = read_line(&mut cli_out, "client")?;
    let mut srv_in = server.stdin.take().unwrap();
    writeln!(srv_in, "{cli_name}").map_err(|e| e.to_string())?;
    srv_in.flush().map_err(|e| e.to_string())?;
    let line = read_line(&mut cli_out, "client");
    let dist_line = read_line(&mut cli_out, "client");
    drop(srv_in);
    let srv_line = read_line(&mut srv_out, "server");
    let cs = client.wait().map_err(|e| e.to_string())?;
    let ss = server.wait().map_err(|e| e.to_string())?;
    let (line, srv_line, dist_line) = (line?, srv_line?, dist_line?);
    let dist =
        parse_dist(&dist_line).ok_or(format!("the repair bench client said {dist_line:?}"))?;
    if !cs.success() || !ss.success() {
        return Err(format!(
            "repair bench roles ended badly: client {cs}, server {ss}"
        ));
    }
    let v: Vec<f64> = line
        .strip_prefix("REPAIR ")
        .unwrap_or("")
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    let handler_us = srv_line
        .strip_prefix("HANDLER ")
        .and_then(|x| x.trim().parse().ok())
        .ok_or(format!("the repair bench server said {srv_line:?}"))?;
    match v[..] {
        [mean, p99, p50, q99, q999, send_us, mad_us, n] => Ok(PairFigures {
            round: Round {
                mean,
                p99,
                pipe: [p50, q99, q999],
            },
            send_us,
            mad_us,
            n: n as usize,
            handler_us,
            dist,
        }),
        _ => Err(format!("the repair bench client said {line:?}")),
    }
}
