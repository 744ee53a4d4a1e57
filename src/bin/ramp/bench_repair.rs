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
//! `--runs` rounds.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant as StdInstant;

use crate::role_util::{hex, median, name_from_hex};
use ramp::am::{self, handler, Message, VecSegment, MAX_LONG, MAX_MEDIUM};

const TAG: u64 = 0xbe7e;
const H_ECHO: u8 = 10;
const H_PONG: u8 = 11;
/// Requests outstanding in the pipelined figure.
const DEPTH: usize = 32;
/// Requests per pipelined figure.
const PIPE_REQUESTS: usize = 20_000;
/// Loss rates of the serial ping-pong; the pipelined figure runs at the
/// first and third.
const LOSSES: [f64; 4] = [0.0, 0.001, 0.01, 0.05];
const PIPE_LOSSES: [f64; 2] = [0.0, 0.01];

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

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
}

/// The client's and server's figures of one pair.
#[derive(Clone, Copy, Debug, Default)]
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
    let mut server = spawn(bin, srv_cpu, &srv_args, pair.transport, &pair.server_env)?;
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
    let mut client = spawn(bin, cli_cpu, &args, pair.transport, &pair.client_env)?;
    let mut cli_out = BufReader::new(client.stdout.take().unwrap());
    let cli_name = read_line(&mut cli_out, "client")?;
    let mut srv_in = server.stdin.take().unwrap();
    writeln!(srv_in, "{cli_name}").map_err(|e| e.to_string())?;
    srv_in.flush().map_err(|e| e.to_string())?;
    let line = read_line(&mut cli_out, "client");
    drop(srv_in);
    let srv_line = read_line(&mut srv_out, "server");
    let cs = client.wait().map_err(|e| e.to_string())?;
    let ss = server.wait().map_err(|e| e.to_string())?;
    let (line, srv_line) = (line?, srv_line?);
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
        }),
        _ => Err(format!("the repair bench client said {line:?}")),
    }
}

fn open(role: &str) -> (Arc<am::Bundle>, Arc<am::Endpoint>) {
    let (b, e) = crate::bench_roles::open_or_exit(role);
    e.set_tag(TAG);
    (b, e)
}

/// The server: `bench-repair-server [STALL_PROB STALL_US]`: answers
/// every request at once (its handler stalls, spinning, for `STALL_US`
/// with probability `STALL_PROB`) until its stdin closes; then prints
/// `HANDLER mean` (us: the handler with its reply).
pub fn server(args: &[String]) -> i32 {
    let stall = (|| {
        let p: f64 = args.first()?.parse().ok()?;
        let us: u64 = args.get(1)?.parse().ok()?;
        Some((p, us)).filter(|_| (0.0..=1.0).contains(&p))
    })();
    let (stall, stall_us) = match (args.is_empty(), stall) {
        (true, _) => (0.0, 0),
        (false, Some(s)) => s,
        (false, None) => {
            eprintln!("usage: ramp bench-repair-server [STALL_PROB STALL_US]");
            return 2;
        }
    };
    let (b, ep) = open("bench-repair-server");
    println!("{}", hex(&ep.name().0));
    let mut line = String::new();
    if std::io::stdin().read_line(&mut line).unwrap_or(0) == 0 {
        return 1;
    }
    let Some(client) = name_from_hex(&line) else {
        eprintln!("ramp bench-repair-server: bad client name");
        return 1;
    };
    ep.map(0, client, TAG).unwrap();
    ep.set_expected_resources(1, DEPTH as i32).unwrap();
    // long requests land here (a transaction's trailer after them)
    ep.set_segment(Some(VecSegment::new(2 * 65_536)));
    let spent = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
    let sp = spent.clone();
    // a seeded stream decides the stalls (xorshift)
    let rng = AtomicU64::new(0x9e37_79b9_7f4a_7c15);
    ep.set_handler(
        H_ECHO,
        handler(move |h| {
            let t = StdInstant::now();
            if stall > 0.0 {
                let mut x = rng.load(Ordering::Relaxed);
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                rng.store(x, Ordering::Relaxed);
                if ((x >> 11) as f64 / (1u64 << 53) as f64) < stall {
                    while t.elapsed().as_micros() < stall_us as u128 {
                        std::hint::spin_loop();
                    }
                }
            }
            am::reply(h.token, &Message::short(H_PONG, h.args)).unwrap();
            sp.0.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
            sp.1.fetch_add(1, Ordering::Relaxed);
        }),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    std::thread::spawn(move || {
        let mut l = String::new();
        while std::io::stdin().read_line(&mut l).unwrap_or(0) > 0 {
            l.clear();
        }
        s.store(true, Ordering::Relaxed);
    });
    while !stop.load(Ordering::Relaxed) {
        b.poll().unwrap();
    }
    let n = spent.1.load(Ordering::Relaxed).max(1);
    println!(
        "HANDLER {:.3}",
        spent.0.load(Ordering::Relaxed) as f64 / n as f64 / 1000.0
    );
    0
}

/// The client: `bench-repair-client SERVER_NAME ITERS PIPE_REQUESTS
/// [BYTES TXN MAX_SECS]`: serial requests of `BYTES` (0: short; up to
/// 65,000 medium, else long), transactions when `TXN` is 1, for at most
/// `MAX_SECS` (0: no limit; at least 100 round trips); prints `REPAIR mean
/// p99 p50 p99 p99.9 send mad n` (us; the pipelined three 0 without the
/// pipelined figure; `send`: the request call; `mad`: the round trips'
/// mean absolute deviation; `n` round trips timed).
pub fn client(args: &[String]) -> i32 {
    let parsed = (|| {
        let server = name_from_hex(args.first()?)?;
        let iters: usize = args.get(1)?.parse().ok()?;
        let pipe: usize = args.get(2)?.parse().ok()?;
        let num = |i: usize| -> Option<u64> { args.get(i).map_or(Some(0), |v| v.parse().ok()) };
        let (bytes, txn, secs) = (num(3)?, num(4)?, num(5)?);
        (bytes <= MAX_LONG as u64 && txn <= 1).then_some(())?;
        Some((server, iters.max(1), pipe, bytes as usize, txn == 1, secs))
    })();
    let Some((server, iters, pipe, bytes, txn, max_secs)) = parsed else {
        eprintln!(
            "usage: ramp bench-repair-client SERVER_NAME ITERS PIPE_REQUESTS [BYTES TXN MAX_SECS]"
        );
        return 2;
    };
    let payload = vec![0x5au8; bytes];
    let (b, ep) = open("bench-repair-client");
    println!("{}", hex(&ep.name().0));
    ep.map(1, server, TAG).unwrap();
    ep.set_expected_resources(2, DEPTH as i32).unwrap();
    let start = StdInstant::now();
    let slots = (iters + iters / 10).max(pipe);
    let answered: Arc<Vec<AtomicU64>> = Arc::new((0..slots).map(|_| AtomicU64::new(0)).collect());
    let pongs = Arc::new(AtomicU64::new(0));
    let (a, p) = (answered.clone(), pongs.clone());
    ep.set_handler(
        H_PONG,
        handler(move |h| {
            if let Some(s) = h.args.first().and_then(|&i| a.get(i as usize)) {
                s.store(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
            }
            p.fetch_add(1, Ordering::Relaxed);
        }),
    );
    // serial: one outstanding; a tenth more first as warm-up (at most
    // 100: the estimator has settled long before)
    let warm = (iters / 10).min(100);
    let began = StdInstant::now();
    let mut rt = Vec::with_capacity(iters);
    let mut send_ns = 0u128;
    for i in 0..warm + iters {
        let t = StdInstant::now();
        let want = pongs.load(Ordering::Relaxed) + 1;
        let arg = [i as u32];
        let msg = match bytes {
            0 => Message::short(H_ECHO, &arg),
            1..=MAX_MEDIUM => Message::medium(H_ECHO, &arg, &payload),
            _ => Message::long(H_ECHO, &arg, &payload, 0),
        };
        let id = if txn {
            Some(ep.request_txn(1, &msg).unwrap())
        } else {
            ep.request(1, &msg, false).unwrap();
            None
        };
        let sent = t.elapsed().as_nanos();
        // past ten times the cap the run ends without this round trip (a
        // point whose round trips take seconds: `n` says how many there were)
        let mut cut = false;
        while pongs.load(Ordering::Relaxed) < want && !cut {
            b.poll().unwrap();
            cut = max_secs > 0 && began.elapsed().as_secs() >= 10 * max_secs;
        }
        if cut {
            break;
        }
        if i >= warm {
            rt.push(t.elapsed().as_nanos() as f64 / 1000.0);
            send_ns += sent;
            if max_secs > 0 && rt.len() >= 100 && began.elapsed().as_secs() >= max_secs {
                break;
            }
        }
        if let Some(id) = id {
            ep.txn_release(id).unwrap();
        }
    }
    let mean = rt.iter().sum::<f64>() / rt.len() as f64;
    let mad = rt.iter().map(|r| (r - mean).abs()).sum::<f64>() / rt.len() as f64;
    let send_us = send_ns as f64 / rt.len() as f64 / 1000.0;
    rt.sort_by(|a, b| a.total_cmp(b));
    // none timed (cut): NaN figures, n 0
    let p99 = if rt.is_empty() {
        f64::NAN
    } else {
        percentile(&rt, 0.99)
    };
    // pipelined: DEPTH outstanding, each request's own latency
    let mut q = [0.0; 3];
    if pipe > 0 {
        for s in answered.iter() {
            s.store(0, Ordering::Relaxed);
        }
        let base = pongs.load(Ordering::Relaxed);
        let mut sent_at = vec![0u64; pipe];
        for (i, at) in sent_at.iter_mut().enumerate() {
            while (i as u64) - (pongs.load(Ordering::Relaxed) - base) >= DEPTH as u64 {
                b.poll().unwrap();
            }
            *at = start.elapsed().as_nanos() as u64;
            ep.request(1, &Message::short(H_ECHO, &[i as u32]), false)
                .unwrap();
        }
        while pongs.load(Ordering::Relaxed) < base + pipe as u64 {
            b.poll().unwrap();
        }
        let mut lat: Vec<f64> = sent_at
            .iter()
            .zip(answered.iter())
            .map(|(&s, a)| a.load(Ordering::Relaxed).saturating_sub(s) as f64 / 1000.0)
            .collect();
        lat.sort_by(|a, b| a.total_cmp(b));
        q = [
            percentile(&lat, 0.5),
            percentile(&lat, 0.99),
            percentile(&lat, 0.999),
        ];
    }
    println!(
        "REPAIR {mean:.3} {p99:.3} {:.3} {:.3} {:.3} {send_us:.3} {mad:.3} {}",
        q[0],
        q[1],
        q[2],
        rt.len()
    );
    0
}

/// The busy neighbour: spins until its stdin closes (or it is killed).
pub fn spin() -> i32 {
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    std::thread::spawn(move || {
        let mut l = String::new();
        while std::io::stdin().read_line(&mut l).unwrap_or(0) > 0 {
            l.clear();
        }
        s.store(true, Ordering::Relaxed);
    });
    let mut x = 0u64;
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..10_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
    0
}
