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

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};

pub use crate::bench_roles::{client_main, server_main};

/// Options of `ramp bench`.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    pub iters: usize,
    pub runs: usize,
    pub xfer_mib: usize,
    pub pin: bool,
    /// `--repair`: the loss-repair figures only (`bench_repair.rs`).
    pub repair: bool,
    /// `--busy`: a neighbour spinning on the server's core (with `--repair`).
    pub busy: bool,
    /// `--against OLD`: another ramp binary's roles beside this one's.
    pub against: Option<String>,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            iters: 20_000,
            runs: 3,
            xfer_mib: 256,
            pin: true,
            repair: false,
            busy: false,
            against: None,
        }
    }
}

fn have_taskset() -> bool {
    Command::new("taskset")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn spawn_role(
    exe: &str,
    cpu: Option<usize>,
    args: &[String],
    env: &[(&str, String)],
) -> std::io::Result<Child> {
    let mut cmd = match cpu {
        Some(c) => {
            let mut c0 = Command::new("taskset");
            c0.arg("-c").arg(c.to_string()).arg(exe);
            c0
        }
        None => Command::new(exe),
    };
    cmd.args(args)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
}

fn read_line(r: &mut impl BufRead, who: &str) -> Result<String, String> {
    let mut l = String::new();
    match r.read_line(&mut l) {
        Ok(0) => Err(format!("the bench {who} exited before answering")),
        Ok(_) => Ok(l.trim_end().to_string()),
        Err(e) => Err(format!("reading from the bench {who}: {e}")),
    }
}

/// The client's figures: raw UDP, ramp 0 and 4 args round trips (us,
/// medians), Xfer bandwidth (MiB/s, median).
pub(crate) struct Figures {
    raw: f64,
    pub(crate) rt0: f64,
    pub(crate) rt4: f64,
    pub(crate) bw: f64,
    /// 0-argument requests per second, pipelined.
    pub(crate) rate: f64,
    /// Raw UDP blast, MiB/s.
    blast: f64,
}

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

/// One server and client pair with `env`; prints the client's lines.
pub(crate) fn run_pair(
    exe: &str,
    pin: bool,
    opts: &BenchOptions,
    env: &[(&str, String)],
) -> Result<Figures, String> {
    let (c_srv, c_cli) = if pin {
        (Some(1), Some(0))
    } else {
        (None, None)
    };
    let mut server =
        spawn_role(exe, c_srv, &["bench-server".into()], env).map_err(|e| e.to_string())?;
    let mut srv_out = BufReader::new(server.stdout.take().unwrap());
    let ready = read_line(&mut srv_out, "server")?;
    let mut args: Vec<String> = vec!["bench-client".into()];
    args.extend(ready.split_whitespace().map(String::from));
    args.extend([
        opts.iters.to_string(),
        opts.runs.to_string(),
        opts.xfer_mib.to_string(),
    ]);
    let mut client = spawn_role(exe, c_cli, &args, env).map_err(|e| e.to_string())?;
    let mut cli_out = BufReader::new(client.stdout.take().unwrap());
    let client_name = read_line(&mut cli_out, "client")?;
    let mut srv_in = server.stdin.take().unwrap();
    writeln!(srv_in, "{client_name}").map_err(|e| e.to_string())?;
    srv_in.flush().map_err(|e| e.to_string())?;
    let mut figures = None;
    loop {
        match read_line(&mut cli_out, "client") {
            Ok(l) if l == "DONE" => break,
            Ok(l) if l.starts_with("FIGURES ") => {
                let v: Vec<f64> = l
                    .split_whitespace()
                    .skip(1)
                    .filter_map(|x| x.parse().ok())
                    .collect();
                if let [raw, rt0, rt4, bw, rate, blast] = v[..] {
                    figures = Some(Figures {
                        raw,
                        rt0,
                        rt4,
                        bw,
                        rate,
                        blast,
                    });
                }
            }
            Ok(l) => println!("{l}"),
            Err(e) => {
                let _ = server.kill();
                return Err(e);
            }
        }
    }
    drop(srv_in);
    let cs = client.wait().map_err(|e| e.to_string())?;
    let ss = server.wait().map_err(|e| e.to_string())?;
    if !cs.success() || !ss.success() {
        return Err(format!("bench roles ended badly: client {cs}, server {ss}"));
    }
    figures.ok_or_else(|| "the bench client printed no figures".to_string())
}
