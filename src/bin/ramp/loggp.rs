//! `ramp bench --loggp` (also `ramp loggp`): a LogGP micro-benchmark
//! (Culler et al.'s method, `loggp_measure.rs`) of ramp over UDP and over
//! shared memory, beside raw baselines written for it and measured in the
//! same run (busy-polled raw UDP echo, raw shared-memory echo:
//! `loggp_raw.rs`; memcpy) and UCX's `ucx_perftest` when installed
//! (`loggp_ucx.rs`). Prints a table of medians over the runs, the targets
//! as ratios (printed, not asserted), and with `--plot FILE.png` draws cost
//! per message against burst size and bandwidth against message size
//! (`loggp_plot.rs`). Client and server are pinned to cores 0 and 1.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::loggp_measure::{median, memcpy_bw, Figures, Params};
use crate::loggp_plot::Line;

const USAGE: &str = "usage: ramp bench --loggp [--plot FILE.png] [--iters N] [--runs N] \
[--mib N] [--max-burst N] [--no-pin] [--font FILE.ttf]";

/// Options of the LogGP mode.
#[derive(Clone, Debug)]
pub struct Options {
    pub iters: usize,
    pub runs: usize,
    /// MiB moved per bandwidth point.
    pub mib: usize,
    pub max_burst: usize,
    pub pin: bool,
    pub plot: Option<String>,
    /// The plot's TrueType font (default: DejaVu Sans where Debian puts it).
    pub font: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            iters: 20_000,
            runs: 3,
            mib: 128,
            max_burst: 1024,
            pin: true,
            plot: None,
            font: None,
        }
    }
}

/// Message sizes of the bandwidth curves: above a short message, up to
/// ramp's largest long message.
const SIZES: &[usize] = &[128, 512, 2048, 8192, 32768, 65536, 262144, 1 << 20];

/// The lines of the table, in order.
const NAMES: &[&str] = &[
    "ramp udp",
    "ramp shm",
    "raw udp",
    "raw shm",
    "memcpy",
    "ucx posix",
];

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut num = |name: &str| -> Result<usize, String> {
            it.next()
                .and_then(|v| v.parse::<usize>().ok())
                .filter(|&v| v > 0)
                .ok_or(format!("{name} needs a positive number"))
        };
        match a.as_str() {
            "--loggp" => {}
            "--iters" => o.iters = num("--iters")?,
            "--runs" => o.runs = num("--runs")?,
            "--mib" => o.mib = num("--mib")?,
            "--max-burst" => o.max_burst = num("--max-burst")?,
            "--no-pin" => o.pin = false,
            "--plot" => o.plot = Some(it.next().ok_or("--plot needs a file name")?.clone()),
            "--font" => o.font = Some(it.next().ok_or("--font needs a file name")?.clone()),
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    Ok(o)
}

/// `ramp loggp ARGS` / `ramp bench --loggp ARGS`: the exit code.
pub fn main(args: &[String]) -> i32 {
    match parse(args) {
        Ok(o) => match run(&o) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("ramp bench --loggp: {e}");
                1
            }
        },
        Err(e) => {
            eprintln!("ramp bench --loggp: {e}\n{USAGE}");
            2
        }
    }
}

fn pinnable() -> bool {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    cores >= 2
        && Command::new("taskset")
            .arg("-V")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
}

fn read_line(r: &mut impl BufRead, who: &str) -> Result<String, String> {
    let mut l = String::new();
    match r.read_line(&mut l) {
        Ok(0) => Err(format!("the loggp {who} exited before answering")),
        Ok(_) => Ok(l.trim_end().to_string()),
        Err(e) => Err(format!("reading from the loggp {who}: {e}")),
    }
}

/// ramp over `transport`: a server and a client process; the client's
/// figures.
fn ramp_pair(
    exe: &str,
    pin: bool,
    transport: &str,
    p: &Params,
    progress: &dyn Fn(&str),
) -> Result<Figures, String> {
    let spawn = |cpu: usize, args: Vec<String>| {
        let mut c = if pin {
            let mut c = Command::new("taskset");
            c.arg("-c").arg(cpu.to_string()).arg(exe);
            c
        } else {
            Command::new(exe)
        };
        c.args(args)
            .env(ramp::config::AUTH, "off")
            .env(ramp::config::TRANSPORT, transport)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("{exe}: {e}"))
    };
    let max = SIZES.iter().max().unwrap().to_string();
    let sizes: Vec<String> = p.sizes.iter().map(|s| s.to_string()).collect();
    let mut server = spawn(1, vec!["loggp-server".into(), max])?;
    let mut client = spawn(
        0,
        vec![
            "loggp-client".into(),
            p.iters.to_string(),
            p.max_burst.to_string(),
            p.total_bytes.to_string(),
            sizes.join(","),
        ],
    )?;
    let mut srv_out = BufReader::new(server.stdout.take().unwrap());
    let mut srv_in = server.stdin.take().unwrap();
    let mut cli_out = BufReader::new(client.stdout.take().unwrap());
    let mut cli_in = client.stdin.take().unwrap();
    let result = (|| -> Result<Figures, String> {
        let srv_name = read_line(&mut srv_out, "server")?;
        let cli_name = read_line(&mut cli_out, "client")?;
        writeln!(srv_in, "{cli_name}").map_err(|e| e.to_string())?;
        srv_in.flush().map_err(|e| e.to_string())?;
        let region = read_line(&mut srv_out, "server")?;
        writeln!(cli_in, "{srv_name} {region}").map_err(|e| e.to_string())?;
        cli_in.flush().map_err(|e| e.to_string())?;
        let mut f = Figures::default();
        loop {
            let l = read_line(&mut cli_out, "client")?;
            if l == "DONE" {
                return Ok(f);
            }
            if let Some(what) = l.strip_prefix("PROGRESS ") {
                progress(what);
            } else if !crate::loggp_roles::from_line(&mut f, &l) {
                println!("{l}");
            }
        }
    })();
    drop(srv_in);
    drop(cli_in);
    if result.is_err() {
        let _ = client.kill();
        let _ = server.kill();
    }
    let cs = client.wait().map_err(|e| e.to_string())?;
    let ss = server.wait().map_err(|e| e.to_string())?;
    let f = result?;
    if !cs.success() || !ss.success() {
        return Err(format!("loggp roles ended badly: client {cs}, server {ss}"));
    }
    Ok(f)
}

/// The medians over the runs, field by field and point by point.
fn combine(runs: &[Figures]) -> Figures {
    let m = |f: fn(&Figures) -> Option<f64>| {
        let v: Vec<f64> = runs.iter().filter_map(f).collect();
        (!v.is_empty()).then(|| median(v))
    };
    let curve = |f: fn(&Figures) -> &Vec<(usize, f64)>| {
        let xs = runs
            .iter()
            .find(|r| !f(r).is_empty())
            .map(|r| f(r).iter().map(|p| p.0).collect::<Vec<_>>());
        xs.unwrap_or_default()
            .into_iter()
            .map(|x| {
                let v = runs
                    .iter()
                    .filter_map(|r| f(r).iter().find(|p| p.0 == x).map(|p| p.1))
                    .collect();
                (x, median(v))
            })
            .collect()
    };
    Figures {
        rtt: m(|f| f.rtt),
        o_s: m(|f| f.o_s),
        o_r: m(|f| f.o_r),
        g: m(|f| f.g),
        g1: m(|f| f.g1),
        put1m: m(|f| f.put1m),
        get1m: m(|f| f.get1m),
        put1m_reg: m(|f| f.put1m_reg),
        get1m_reg: m(|f| f.get1m_reg),
        burst: curve(|f| &f.burst),
        bw: curve(|f| &f.bw),
    }
}

fn cell(x: Option<f64>, width: usize, prec: usize) -> String {
    match x {
        Some(v) if v.is_finite() => format!("{v:>width$.prec$}"),
        _ => format!("{:>width$}", "-"),
    }
}

/// Prints the table of medians.
pub fn print_table(lines: &[(&str, Figures)]) {
    println!(
        "{:<10} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9} {:>8} {:>9} {:>9} {:>9} {:>9}",
        "line",
        "RTT us",
        "L us",
        "o_s us",
        "o_r us",
        "g us",
        "Mmsg/s",
        "1-way M/s",
        "G ns/B",
        "64K MiB/s",
        "1M MiB/s",
        "put 1M",
        "get 1M"
    );
    for (name, f) in lines {
        println!(
            "{:<10} {} {} {} {} {} {} {} {} {} {} {} {}",
            name,
            cell(f.rtt, 8, 3),
            cell(f.latency(), 8, 3),
            cell(f.o_s, 8, 3),
            cell(f.o_r, 8, 3),
            cell(f.g, 8, 3),
            cell(f.g.map(|g| 1.0 / g), 9, 3),
            cell(f.g1.map(|g| 1.0 / g), 9, 3),
            cell(f.big_g(), 8, 4),
            cell(f.bw_at(65536), 9, 0),
            cell(f.bw_at(1 << 20), 9, 0),
            cell(f.put1m, 9, 0),
            cell(f.get1m, 9, 0),
        );
    }
}

/// The median over the runs of a ratio taken within each run.
fn per_run(
    a: &[Figures],
    b: &[Figures],
    fa: fn(&Figures) -> Option<f64>,
    fb: fn(&Figures) -> Option<f64>,
) -> Option<f64> {
    let v: Vec<f64> = a
        .iter()
        .zip(b)
        .filter_map(|(x, y)| Some(fa(x)? / fb(y)?))
        .collect();
    (!v.is_empty()).then(|| median(v))
}

fn show(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.3}"))
}

fn print_targets(all: &[Vec<Figures>], med: &[(&str, Figures)]) {
    let (shm, raw_shm, mcpy, ucx) = (&all[1], &all[3], &all[4], &all[5]);
    let (shm_m, ucx_m) = (&med[1].1, &med[5].1);
    println!("== targets (printed, not asserted; ratios taken within each run, their median)");
    // the one-way rate against UCX's: medians over the runs (UCX's
    // `ucp_am_bw`'s whole-run rate, itself the median of its runs:
    // `loggp_ucx.rs`), not a ratio per run, which one preemption of a
    // UCX run made 20-60x
    let rate = |f: &Figures| f.g1.map(|g| 1.0 / g);
    let ucx_rate = rate(ucx_m).filter(|_| !ucx.is_empty());
    println!(
        "shm short round trip {} us: / UCX's {} us = {} (target < 1; target < 0.55 us here); \
         / raw shm ping-pong = {} (target <= 2.5)",
        show(shm_m.rtt),
        show(ucx_m.rtt),
        show(per_run(shm, ucx, |f| f.rtt, |f| f.rtt)),
        show(per_run(shm, raw_shm, |f| f.rtt, |f| f.rtt)),
    );
    println!(
        "shm message rate, one way {} Mmsg/s (short requests whose handler does not reply, \
         {} outstanding) / UCX's {} Mmsg/s (ucp_am_bw, 8 B, one way, overall) = {} \
         (medians over the runs; target > 1); / raw shm ring one way = {}",
        show(rate(shm_m)),
        crate::loggp_measure::WINDOW,
        show(ucx_rate),
        show(rate(shm_m).zip(ucx_rate).map(|(a, b)| a / b)),
        show(per_run(raw_shm, shm, |f| f.g1, |f| f.g1)),
    );
    println!(
        "shm request + reply rate {} Mmsg/s (each request answered by its handler's reply, \
         {} outstanding) / raw shm echo = {}",
        show(shm_m.g.map(|g| 1.0 / g)),
        crate::loggp_measure::WINDOW,
        show(per_run(raw_shm, shm, |f| f.g, |f| f.g)),
    );
    let m1 = |f: &Figures| f.bw_at(1 << 20);
    for (i, name) in [(0, "udp"), (1, "shm")] {
        println!(
            "ramp {name} 1 MiB / memcpy 1 MiB: put {}, get {}, Xfer {} (target >= 0.70)",
            show(per_run(&all[i], mcpy, |f| f.put1m, m1)),
            show(per_run(&all[i], mcpy, |f| f.get1m, m1)),
            show(per_run(&all[i], mcpy, m1, m1)),
        );
    }
    println!(
        "ramp shm 1 MiB to registered user memory (not ramp_AllocRegion's) / memcpy 1 MiB: \
         put {}, get {}",
        show(per_run(shm, mcpy, |f| f.put1m_reg, m1)),
        show(per_run(shm, mcpy, |f| f.get1m_reg, m1)),
    );
}

/// Runs everything; prints the table; draws the plot.
pub fn run(o: &Options) -> Result<(), String> {
    crate::bench::check_config()?;
    // the plot's file can be written (made now if it is not there): said
    // before minutes of measuring, not after them (a font that cannot be
    // read only leaves the plot without text, said at the end)
    if let Some(path) = &o.plot {
        // (the drawing library picks the format by the name's extension)
        if !path.to_ascii_lowercase().ends_with(".png") {
            return Err(format!("--plot {path}: the plot is a PNG: give a FILE.png"));
        }
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| format!("--plot {path}: {e}"))?;
    }
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find this program: {e}"))?
        .to_string_lossy()
        .into_owned();
    let pin = o.pin && pinnable();
    let p = Params {
        iters: o.iters,
        max_burst: o.max_burst,
        total_bytes: o.mib << 20,
        sizes: SIZES.to_vec(),
    };
    let ucx = crate::loggp_ucx::installed();
    println!(
        "ramp bench --loggp: {} runs, {} round trips per figure, bursts 1..{}, {} MiB per bandwidth point, {}{}",
        o.runs,
        o.iters,
        o.max_burst,
        o.mib,
        if pin { "client on core 0, server on core 1" } else { "not pinned" },
        if ucx { "; UCX ucx_perftest found (UCX_TLS=posix,self)" } else { "" }
    );
    // (without it: one line, `MISSING`)
    if !ucx {
        println!("{}", crate::loggp_ucx::MISSING);
    }
    let start = Instant::now();
    let mut all: Vec<Vec<Figures>> = vec![vec![]; NAMES.len()];
    for r in 1..=o.runs {
        for (i, name) in NAMES.iter().enumerate() {
            let stage = |what: &str| {
                eprintln!(
                    "[{:7.1} s] run {r}/{}: {name}: {what}",
                    start.elapsed().as_secs_f64(),
                    o.runs
                )
            };
            stage("start");
            let f = match i {
                0 => Some(ramp_pair(&exe, pin, "udp", &p, &stage)?),
                1 => Some(ramp_pair(&exe, pin, "shm", &p, &stage)?),
                2 => Some(crate::loggp_raw::raw_udp(&p, pin, &stage)),
                3 => Some(crate::loggp_raw::raw_shm(&p, pin, &stage)),
                4 => Some(Figures {
                    bw: memcpy_bw(&p),
                    ..Figures::default()
                }),
                _ if ucx => crate::loggp_ucx::measure(pin, o.iters, p.total_bytes),
                _ => None,
            };
            if let Some(f) = f {
                all[i].push(f);
            } else if i == 5 && ucx {
                stage("ucx_perftest failed: no figures");
                // (a run of its own all the same: ratios per run pair
                // UCX's run k with ramp's run k)
                all[i].push(Figures::default());
            }
        }
    }
    let med: Vec<(&str, Figures)> = NAMES
        .iter()
        .zip(&all)
        .map(|(n, runs)| (*n, combine(runs)))
        .collect();
    // no UCX: its line is not in the table (the line above said why)
    let shown: Vec<(&str, Figures)> = med
        .iter()
        .zip(&all)
        .filter(|(_, runs)| !runs.is_empty())
        .map(|(m, _)| m.clone())
        .collect();
    println!(
        "== LogGP, medians of {} runs (us; RTT: median of batches of 32 (raw shm: a flag pair); \
         L = RTT/2 - o_s - o_r; o_s: burst of 8; g: steady state, request + reply (Mmsg/s = 1/g); 1-way: requests answered by nothing (ramp: an automatic reply); \
         G: 1 MiB messages (raw udp: its largest datagram); bandwidth in MiB/s)",
        o.runs
    );
    print_table(&shown);
    println!("== cost per message (us) by burst size");
    for (name, f) in &med {
        if !f.burst.is_empty() {
            let v: Vec<String> = f.burst.iter().map(|(k, x)| format!("{k}:{x:.3}")).collect();
            println!("{name:<10} {}", v.join(" "));
        }
    }
    // (memcpy's line too: a warm copy's speed at every size, the floor
    // the "of memcpy" ratios divide by)
    println!("== bandwidth (MiB/s) by message size");
    for (name, f) in &med {
        if !f.bw.is_empty() {
            let v: Vec<String> = f.bw.iter().map(|(k, x)| format!("{k}:{x:.0}")).collect();
            println!("{name:<10} {}", v.join(" "));
        }
    }
    let (trap, ours, clear) = crate::loggp_measure::memcpy_trap();
    println!(
        "memcpy 64 KiB, the destination 16 bytes past a page from the source: glibc {trap:.0} \
         MiB/s, ramp's copy {ours:.0} (glibc 256 past: {clear:.0}; glibc's rep movsb is slow at \
         1-63 past on AMD Zen, sys/copy.rs)"
    );
    print_targets(&all, &med);
    if let Some(path) = &o.plot {
        let lines = |f: fn(&Figures) -> &Vec<(usize, f64)>| -> Vec<Line> {
            med.iter()
                .map(|(n, fig)| Line {
                    name: n.to_string(),
                    points: f(fig).iter().map(|&(x, y)| (x as f64, y)).collect(),
                })
                .filter(|l| !l.points.is_empty())
                .collect()
        };
        match crate::loggp_plot::write(
            path,
            o.font.as_deref(),
            &lines(|f| &f.burst),
            &lines(|f| &f.bw),
        )? {
            Some(font) => println!("plot written to {path} (font {font})"),
            None => println!(
                "plot written to {path} WITHOUT text: no TrueType font found \
                 (Debian: apt-get install fonts-dejavu-core)"
            ),
        }
    }
    Ok(())
}
