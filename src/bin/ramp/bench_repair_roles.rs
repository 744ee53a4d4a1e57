//! The processes of `ramp bench --repair` and `ramp perf` (started by
//! `bench_repair::run_roles`): the server that answers every request (its
//! handler may stall), the client that times serial requests (short,
//! medium or long, plain or transactions) and a pipelined burst, and the
//! busy neighbour that spins on the server's core.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant as StdInstant;

use crate::bench_repair::{DEPTH, H_ECHO, H_PONG, TAG};
use crate::role_util::{hex, name_from_hex};
use ramp::am::{self, handler, Message, VecSegment, MAX_LONG, MAX_MEDIUM};

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
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
    let stop = stop_when_stdin_closes();
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
/// mean absolute deviation; `n` round trips timed), then `DIST t:p ..`
/// (the serial round trips' distribution, `Dist::of_samples`).
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
    let serial = rt.clone();
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
    // the serial round trips' distribution, summed up (`ramp perf`'s model
    // convolves the loss-free one with the repairs)
    let atoms: Vec<String> = ramp::perf::Dist::of_samples(&serial)
        .atoms()
        .iter()
        .map(|(t, p)| format!("{t:.3}:{p:.6}"))
        .collect();
    println!("DIST {}", atoms.join(" "));
    0
}

/// The busy neighbour: spins until its stdin closes (or it is killed).
pub fn spin() -> i32 {
    let stop = stop_when_stdin_closes();
    let mut x = 0u64;
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..10_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
    0
}

/// A flag set once this role's stdin closes (the bench that runs it is
/// done with it), read by its loop.
fn stop_when_stdin_closes() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    std::thread::spawn(move || {
        let mut l = String::new();
        while std::io::stdin().read_line(&mut l).unwrap_or(0) > 0 {
            l.clear();
        }
        s.store(true, Ordering::Relaxed);
    });
    stop
}
