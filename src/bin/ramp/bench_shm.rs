//! `ramp bench`, transports: ramp's round trip and Xfer bandwidth over UDP
//! and over shared memory (`RAMP_TRANSPORT=udp|shm`, no MAC), beside a raw
//! shared-memory ping-pong measured in the same run (two threads
//! busy-polling a pair of flags on cache lines of their own: the floor any
//! shared-memory transport pays for a round trip between two cores).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::bench_pair::{run_pair, BenchOptions, Figures};

#[repr(align(128))]
struct Line(AtomicU64);

/// Pins the calling thread to `cpu` (taskset on its thread id), as the
/// benchmark's processes are.
pub(crate) fn pin_thread(cpu: Option<usize>) {
    let Some(cpu) = cpu else { return };
    let tid = std::fs::read_link("/proc/thread-self")
        .ok()
        .and_then(|p| p.file_name()?.to_str()?.parse::<u32>().ok());
    if let Some(tid) = tid {
        let _ = std::process::Command::new("taskset")
            .args(["-cp", &cpu.to_string(), &tid.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    }
}

/// Microseconds per round trip of a raw flag ping-pong (median of 5), the
/// two threads on cores 0 and 1 when `pin`.
fn raw_shm_pingpong(iters: u64, pin: bool) -> f64 {
    let mut v: Vec<f64> = (0..5)
        .map(|_| {
            let f = Arc::new([Line(AtomicU64::new(0)), Line(AtomicU64::new(0))]);
            let g = f.clone();
            let warm = iters / 10;
            let peer = std::thread::spawn(move || {
                pin_thread(pin.then_some(1));
                for i in 1..=warm + iters {
                    while g[0].0.load(Ordering::Acquire) != i {
                        std::hint::spin_loop();
                    }
                    g[1].0.store(i, Ordering::Release);
                }
            });
            let main = std::thread::spawn(move || {
                pin_thread(pin.then_some(0));
                let mut t0 = std::time::Instant::now();
                for i in 1..=warm + iters {
                    if i == warm + 1 {
                        t0 = std::time::Instant::now();
                    }
                    f[0].0.store(i, Ordering::Release);
                    while f[1].0.load(Ordering::Acquire) != i {
                        std::hint::spin_loop();
                    }
                }
                t0.elapsed().as_secs_f64() * 1e6 / iters as f64
            });
            let us = main.join().unwrap();
            peer.join().unwrap();
            us
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

pub fn run(exe: &str, pin: bool, opts: &BenchOptions) -> Result<(), String> {
    let one = BenchOptions {
        runs: 1,
        ..opts.clone()
    };
    let env = |t: &str| {
        vec![
            (ramp::config::AUTH, "off".to_string()),
            (ramp::config::TRANSPORT, t.to_string()),
        ]
    };
    let (mut raw, mut udp, mut shm) = (Vec::new(), Vec::new(), Vec::new());
    for r in 1..=opts.runs {
        println!("-- round {r}/{}: raw shared-memory ping-pong", opts.runs);
        let x = raw_shm_pingpong(200_000, pin);
        println!("raw shared-memory ping-pong: {x:.3} us round trip");
        raw.push(x);
        println!(
            "-- round {r}/{}: ramp over UDP (RAMP_TRANSPORT=udp)",
            opts.runs
        );
        udp.push(run_pair(exe, pin, &one, &env("udp"))?);
        println!(
            "-- round {r}/{}: ramp over shared memory (RAMP_TRANSPORT=shm)",
            opts.runs
        );
        shm.push(run_pair(exe, pin, &one, &env("shm"))?);
    }
    let med = |mut x: Vec<f64>| {
        x.sort_by(f64::total_cmp);
        x[x.len() / 2]
    };
    let fig = |v: &[Figures], f: fn(&Figures) -> f64| med(v.iter().map(f).collect());
    // ratios per round (neighbours in time), their median
    let per_round = |f: &dyn Fn(usize) -> f64| med((0..raw.len()).map(f).collect());
    println!(
        "== transports, medians of {} rounds (RAMP_AUTH=off):",
        opts.runs
    );
    println!("raw shared-memory ping-pong {:.3} us", med(raw.clone()));
    for (name, v) in [("udp", &udp), ("shm", &shm)] {
        println!(
            "ramp over {name}: round trip 0 args {:7.3} us, 4 args {:7.3} us, \
             0-arg request rate {:9.0} req/s, Xfer 64 KiB {:8.1} MiB/s",
            fig(v, |f| f.rt0),
            fig(v, |f| f.rt4),
            fig(v, |f| f.rate),
            fig(v, |f| f.bw)
        );
    }
    println!(
        "shm round trip / raw shm ping-pong {:.2} (target <= 2.5; shm round trip {:.3} us, target < 0.55); \
         round trip udp / shm {:.1}x; shm / udp: request rate {:.2}x, Xfer {:.2}x",
        per_round(&|i| shm[i].rt0 / raw[i]),
        fig(&shm, |f| f.rt0),
        per_round(&|i| udp[i].rt0 / shm[i].rt0),
        per_round(&|i| shm[i].rate / udp[i].rate),
        per_round(&|i| shm[i].bw / udp[i].bw),
    );
    Ok(())
}
