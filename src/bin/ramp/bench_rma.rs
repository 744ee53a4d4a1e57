//! `ramp bench`'s remote memory figures: put and get bandwidth of 64 KiB
//! and 1 MiB operations between two processes on loopback, beside the AM
//! Xfer bandwidth (64 KiB long requests) measured in the same run (the
//! floor the ratios are taken to), and the 1 MiB put beside a raw UDP
//! blast measured just before it in each run (`bench_roles`' blast). The
//! server busy-polls; the client keeps up to `WINDOW` operations
//! outstanding.

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant as StdInstant;

use crate::bench_roles;
use crate::role_util::{hex, median, name_from_hex};
use ramp::am::{self, handler, Message, SegmentMemory, VecSegment, REGION_READ, REGION_WRITE};

const TAG: u64 = 0xbe7d;
const DEPTH: i32 = 32;
const H_XFER: u8 = 13;
const H_XFER_ACK: u8 = 14;
/// Switches the server to the raw socket for one blast.
const H_TO_RAW: u8 = 15;
const XFER_SIZE: usize = 64 << 10;
/// Operations outstanding at once.
const WINDOW: usize = 16;
/// Bytes moved per figure and run.
const TOTAL: usize = 128 << 20;
const REGION: usize = 2 << 20;

fn read_line(r: &mut impl BufRead, who: &str) -> Result<String, String> {
    let mut l = String::new();
    match r.read_line(&mut l) {
        Ok(0) => Err(format!("the rma bench {who} exited before answering")),
        Ok(_) => Ok(l.trim_end().to_string()),
        Err(e) => Err(format!("reading from the rma bench {who}: {e}")),
    }
}

/// Runs the pair over UDP (`RAMP_TRANSPORT=udp`) without the packet MAC
/// (`RAMP_AUTH=off`: the same setting as the plain rounds), or with it
/// under job key `key` (ramp's default), and prints its lines (called by
/// `ramp bench`, once each way).
pub fn run(exe: &str, pin: bool, runs: usize, key: Option<&str>) -> Result<(), String> {
    let auth = match key {
        None => format!("{}=off", ramp::config::AUTH),
        Some(_) => format!(
            "{}=on, a random {}: AES-128-GMAC",
            ramp::config::AUTH,
            ramp::config::JOB_KEY
        ),
    };
    println!(
        "-- remote memory over UDP (RAMP_TRANSPORT=udp, {auth}): put/get bandwidth, \
         {WINDOW} operations outstanding, beside AM Xfer"
    );
    let spawn = |cpu: usize, args: &[String]| {
        let mut c = if pin {
            let mut c = Command::new("taskset");
            c.arg("-c").arg(cpu.to_string()).arg(exe);
            c
        } else {
            Command::new(exe)
        };
        c.args(args).env(ramp::config::TRANSPORT, "udp");
        match key {
            None => c.env(ramp::config::AUTH, "off"),
            Some(k) => c
                .env(ramp::config::AUTH, "on")
                .env(ramp::config::JOB_KEY, k),
        };
        c.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| e.to_string())
    };
    let mut server = spawn(1, &["bench-rma-server".into()])?;
    let mut srv_out = BufReader::new(server.stdout.take().unwrap());
    let mut srv_in = server.stdin.take().unwrap();
    let mut client = spawn(0, &["bench-rma-client".into(), runs.to_string()])?;
    let mut cli_out = BufReader::new(client.stdout.take().unwrap());
    let mut cli_in = client.stdin.take().unwrap();
    // names crosswise, then the server's region id and raw socket to the client
    let srv_name = read_line(&mut srv_out, "server")?;
    let cli_name = read_line(&mut cli_out, "client")?;
    writeln!(srv_in, "{cli_name}").map_err(|e| e.to_string())?;
    let region_raw = read_line(&mut srv_out, "server")?;
    writeln!(cli_in, "{srv_name} {region_raw}").map_err(|e| e.to_string())?;
    cli_in.flush().map_err(|e| e.to_string())?;
    srv_in.flush().map_err(|e| e.to_string())?;
    loop {
        match read_line(&mut cli_out, "client") {
            Ok(l) if l == "DONE" => break,
            Ok(l) => println!("{l}"),
            Err(e) => {
                let _ = server.kill();
                return Err(e);
            }
        }
    }
    drop(srv_in);
    drop(cli_in);
    let cs = client.wait().map_err(|e| e.to_string())?;
    let ss = server.wait().map_err(|e| e.to_string())?;
    if !cs.success() || !ss.success() {
        return Err(format!("rma bench ended badly: client {cs}, server {ss}"));
    }
    Ok(())
}

/// `ramp bench-rma-server` / `ramp bench-rma-client RUNS [ONLY]`.
pub fn role(args: &[String]) -> i32 {
    match args.first().map(String::as_str) {
        Some("bench-rma-server") => server(),
        Some("bench-rma-client") => client(
            args.get(1).and_then(|r| r.parse().ok()).unwrap_or(3),
            args.get(2).map(String::as_str),
        ),
        _ => 2,
    }
}

fn stdin_line() -> Option<String> {
    let mut l = String::new();
    match std::io::stdin().read_line(&mut l) {
        Ok(n) if n > 0 => Some(l),
        _ => None,
    }
}

fn server() -> i32 {
    // the endpoint's name first: open with a placeholder peer, map it later
    let (b, ep) = crate::bench_roles::open_or_exit("bench-rma-server");
    println!("{}", hex(&ep.name().0));
    let Some(peer) = stdin_line().and_then(|l| name_from_hex(&l)) else {
        return 1;
    };
    ep.set_tag(TAG);
    ep.map(0, ep.name(), TAG).unwrap();
    ep.map(1, peer, TAG).unwrap();
    ep.set_expected_resources(2, DEPTH).unwrap();
    ep.set_segment(Some(VecSegment::new(2 * XFER_SIZE)));
    ep.set_handler(
        H_XFER,
        handler(|h| am::reply(h.token, &Message::short(H_XFER_ACK, &[])).unwrap()),
    );
    let region = ep
        .register_region(VecSegment::new(REGION), REGION_READ | REGION_WRITE)
        .unwrap();
    let raw = bench_roles::udp_near(&ep);
    println!("{region} {}", raw.local_addr().unwrap());
    let to_raw = Arc::new(AtomicBool::new(false));
    let t = to_raw.clone();
    ep.set_handler(H_TO_RAW, handler(move |_| t.store(true, Ordering::Relaxed)));
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    std::thread::spawn(move || {
        while stdin_line().is_some() {}
        s.store(true, Ordering::Relaxed);
    });
    let mut buf = vec![0u8; 65536];
    while !stop.load(Ordering::Relaxed) {
        if to_raw.load(Ordering::Relaxed) {
            // one raw blast: busy-poll the plain socket only until it ends
            while !stop.load(Ordering::Relaxed) {
                match raw.recv_from(&mut buf) {
                    Ok((n, from)) if &buf[..n] == bench_roles::BLAST_START => {
                        bench_roles::blast_receiver(&raw, from, &stop);
                        break;
                    }
                    Ok(_) => {}
                    Err(_) => std::hint::spin_loop(),
                }
            }
            to_raw.store(false, Ordering::Relaxed);
        } else {
            b.poll().unwrap();
        }
    }
    0
}

/// MiB/s of `TOTAL` bytes moved by `issue(i)` calls, `WINDOW` outstanding.
fn bandwidth(ep: &Arc<am::Endpoint>, size: usize, mut issue: impl FnMut(usize) -> u64) -> f64 {
    let n = (TOTAL / size).max(WINDOW);
    let mut ops = std::collections::VecDeque::new();
    let t = StdInstant::now();
    for i in 0..n {
        if ops.len() == WINDOW {
            let op = ops.pop_front().unwrap();
            assert_eq!(ep.wait_op(op).unwrap(), 0);
        }
        ops.push_back(issue(i));
    }
    for op in ops {
        assert_eq!(ep.wait_op(op).unwrap(), 0);
    }
    (n * size) as f64 / t.elapsed().as_secs_f64() / (1024.0 * 1024.0)
}

/// `only`: one figure alone (`xfer`, `put64`, `get64`, `put1m`, `get1m`),
/// for profiling a phase by itself (`ramp bench-rma-client RUNS ONLY`).
fn client(runs: usize, only: Option<&str>) -> i32 {
    let wanted = |what: &str| only.is_none_or(|o| o == what);
    let (b, ep) = crate::bench_roles::open_or_exit("bench-rma-client");
    println!("{}", hex(&ep.name().0));
    let Some(line) = stdin_line() else {
        return 1;
    };
    let mut it = line.split_whitespace();
    let (Some(peer), Some(region), Some(srv_raw)) = (
        it.next().and_then(name_from_hex),
        it.next().and_then(|r| r.parse::<u32>().ok()),
        it.next().and_then(|a| a.parse::<SocketAddr>().ok()),
    ) else {
        return 1;
    };
    let raw = bench_roles::udp_near(&ep);
    let blast_total = (TOTAL / bench_roles::BLAST_SIZE) as u64;
    let (mut blasts, mut put_ratios) = (vec![], vec![]);
    ep.set_tag(TAG);
    ep.map(0, ep.name(), TAG).unwrap();
    ep.map(1, peer, TAG).unwrap();
    ep.set_expected_resources(2, DEPTH).unwrap();
    let acks = Arc::new(AtomicU64::new(0));
    let a = acks.clone();
    ep.set_handler(
        H_XFER_ACK,
        handler(move |_| {
            a.fetch_add(1, Ordering::Relaxed);
        }),
    );
    let src = vec![0x5au8; 1 << 20];
    let (mut xfer, mut figs) = (vec![], vec![vec![]; 4]);
    for _ in 0..runs {
        // the floor: AM Xfer of 64 KiB, up to DEPTH outstanding
        if wanted("xfer") {
            let n = TOTAL / XFER_SIZE;
            let base = acks.load(Ordering::Relaxed);
            let t = StdInstant::now();
            for i in 0..n {
                let off = ((i % 2) * XFER_SIZE) as u64;
                let m = Message::long(H_XFER, &[], &src[..XFER_SIZE], off);
                ep.request(1, &m, false).unwrap();
            }
            while acks.load(Ordering::Relaxed) < base + n as u64 {
                b.poll().unwrap();
            }
            xfer.push(TOTAL as f64 / t.elapsed().as_secs_f64() / (1024.0 * 1024.0));
        }
        for (k, size) in [64 << 10, 1 << 20].into_iter().enumerate() {
            let slots = REGION / size;
            let label = if k == 0 { "64" } else { "1m" };
            if wanted(&format!("put{label}")) {
                // the 1 MiB put right after a raw UDP blast (the host's
                // state drifts between phases: each run's own ratio)
                let blast = (k == 1).then(|| {
                    ep.request(1, &Message::short(H_TO_RAW, &[]), false)
                        .unwrap();
                    bench_roles::blast_sender(&raw, srv_raw, blast_total)
                });
                let put = bandwidth(&ep, size, |i| {
                    let off = ((i % slots) * size) as u64;
                    ep.put(1, region, off, &src[..size], None, true).unwrap()
                });
                figs[2 * k].push(put);
                if let Some(bl) = blast {
                    blasts.push(bl);
                    put_ratios.push(put / bl);
                }
            }
            if wanted(&format!("get{label}")) {
                let dsts: Vec<_> = (0..WINDOW + 1).map(|_| VecSegment::new(size)).collect();
                // written once first: the figure is the get's, not the first
                // touch of fresh pages (as `loggp_roles.rs` does)
                for d in &dsts {
                    d.write(0, &src[..size]);
                }
                figs[2 * k + 1].push(bandwidth(&ep, size, |i| {
                    let off = ((i % slots) * size) as u64;
                    let dst = dsts[i % dsts.len()].clone();
                    ep.get(1, region, off, dst, true).unwrap()
                }));
            }
        }
    }
    if only.is_some() {
        for v in std::iter::once(&mut xfer).chain(figs.iter_mut()) {
            if !v.is_empty() {
                println!("{:.1} MiB/s (median of {})", median(v), v.len());
            }
        }
        println!("DONE");
        return 0;
    }
    let floor = median(&mut xfer);
    println!(
        "{:<30} median {floor:8.1} MiB/s (the floor)",
        "AM Xfer 64 KiB"
    );
    let names = ["put 64 KiB", "get 64 KiB", "put 1 MiB", "get 1 MiB"];
    for (name, v) in names.iter().zip(figs.iter_mut()) {
        let m = median(v);
        println!(
            "{name:<30} median {m:8.1} MiB/s   ratio to Xfer {:.2}x",
            m / floor
        );
        if *name == "put 1 MiB" && !put_ratios.is_empty() {
            let each: Vec<String> = put_ratios.iter().map(|r| format!("{r:.2}")).collect();
            println!(
                "put 1 MiB / raw UDP blast just before it (median {:.1} MiB/s): {:.2} \
                 (target >= 0.70; each run: {})",
                median(&mut blasts),
                median(&mut put_ratios),
                each.join(", ")
            );
        }
    }
    println!("DONE");
    0
}
