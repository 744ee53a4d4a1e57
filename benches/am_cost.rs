//! CPU cost of a whole AM request/reply on one thread: two endpoints in one
//! process over real loopback sockets, beside the same pattern with two raw
//! UDP sockets. The difference is ramp's own work per round trip.
//! `ONE_WAY=1`: requests to a handler that does not reply, pipelined (the
//! credits come back in automatic replies): ramp's work per one-way
//! message, both ends (`THREADS=2`: the target polled by a thread of its
//! own on another core, a pipeline as between two processes).
//! `MEDIUM=n` (one way): medium requests of n payload bytes instead of
//! short ones (through the ring over shm: its room, not only its records'
//! cost, as `THREADS=2` shows). `THREADS=2` without `ONE_WAY`: round
//! trips between the two cores (the target's poller on core 1).
//! `BUNDLE=1` (one thread, round trip): polls of the bundle (AM_Poll)
//! instead of each endpoint's. `DEPTH=n`: the credits per peer (default
//! 16).

use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use ramp::am::{self, handler, BundleMode, Message};

/// Pins the calling thread (and the threads it starts after) to `cpu`.
fn pin(cpu: usize) {
    let tid = std::fs::read_link("/proc/thread-self")
        .ok()
        .and_then(|p| p.file_name()?.to_str()?.parse::<u32>().ok());
    if let Some(tid) = tid {
        let _ = std::process::Command::new("taskset")
            .args(["-cp", &cpu.to_string(), &tid.to_string()])
            .stdout(std::process::Stdio::null())
            .status();
    }
}

/// A raw UDP round trip over loopback on one thread, nanoseconds.
fn raw_udp(iters: usize) -> f64 {
    let a = UdpSocket::bind("127.0.0.1:0").unwrap();
    let b = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (aa, ba) = (a.local_addr().unwrap(), b.local_addr().unwrap());
    let mut buf = [0u8; 2048];
    let msg = [1u8; 72];
    let t = Instant::now();
    for _ in 0..iters {
        a.send_to(&msg, ba).unwrap();
        let (n, _) = b.recv_from(&mut buf).unwrap();
        b.send_to(&buf[..n], aa).unwrap();
        a.recv_from(&mut buf).unwrap();
    }
    t.elapsed().as_nanos() as f64 / iters as f64
}

/// A thread on core 1 polling an endpoint until stopped (the calling
/// thread then on core 0).
struct Poller {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<u64>,
}

fn poll_on_core_1(ep: &Arc<am::Endpoint>) -> Poller {
    let stop = Arc::new(AtomicBool::new(false));
    let (ep, flag) = (ep.clone(), stop.clone());
    pin(1);
    let thread = std::thread::spawn(move || {
        let mut polls = 0u64;
        while !flag.load(Ordering::Relaxed) {
            ep.poll().unwrap();
            polls += 1;
        }
        polls
    });
    pin(0);
    Poller { stop, thread }
}

impl Poller {
    /// Stops the thread: the polls it made.
    fn stop(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}

/// A flag pair between cores 0 and 1 (each side's flag on a line of its
/// own, busy-polled): the floor of a round trip, nanoseconds (the
/// median of batches of 256).
fn flag_pair(iters: usize) -> f64 {
    #[repr(align(128))]
    struct Line(AtomicU64);
    let flags = Arc::new([Line(AtomicU64::new(0)), Line(AtomicU64::new(0))]);
    let f = flags.clone();
    let n = iters as u64;
    pin(1);
    let echo = std::thread::spawn(move || {
        for i in 1..=n {
            while f[0].0.load(Ordering::Acquire) < i {
                std::hint::spin_loop();
            }
            f[1].0.store(i, Ordering::Release);
        }
    });
    pin(0);
    // medians of batches of 256 (the host preempts for milliseconds)
    let mut v = Vec::new();
    let mut i = 0;
    while i + 256 <= n {
        let t = Instant::now();
        for _ in 0..256 {
            i += 1;
            flags[0].0.store(i, Ordering::Release);
            while flags[1].0.load(Ordering::Acquire) != i {
                std::hint::spin_loop();
            }
        }
        v.push(t.elapsed().as_nanos() as f64 / 256.0);
    }
    while i < n {
        i += 1;
        flags[0].0.store(i, Ordering::Release);
    }
    echo.join().unwrap();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// What a loss-free ping-pong should not need: packets resent (each end's
/// timers fired before the answer came) and ACKs sent on their own.
fn resent_and_acks(e0: &am::Endpoint, e1: &am::Endpoint) -> String {
    let (a, b) = (e0.statistics(), e1.statistics());
    format!(
        "requester: packets sent {} resent {} standalone ACKs {}; target: packets sent {} resent {} standalone ACKs {}",
        a.packets_sent,
        a.packets_retransmitted,
        a.acks_sent,
        b.packets_sent,
        b.packets_retransmitted,
        b.acks_sent
    )
}

/// The numeric knob `name` (its default when unset); a value that is not a
/// number stops the benchmark with a message (never a silent default).
fn knob<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Err(_) => default,
        Ok(v) => v.trim().parse().unwrap_or_else(|_| {
            eprintln!("am_cost: {name}={v:?} is not a number");
            std::process::exit(2)
        }),
    }
}

fn main() {
    let iters: usize = knob("ITERS", 200_000);
    let one_way = std::env::var("ONE_WAY").is_ok_and(|v| v == "1");
    // RAW=0: ramp alone (a profile of ramp's work, not the kernel's)
    let no_raw = std::env::var("RAW").is_ok_and(|v| v == "0");
    let raw = if one_way || no_raw {
        0.0
    } else {
        raw_udp(iters)
    };

    // THREADS=2 (one way only): the target polled by a thread of its own
    // on core 1, the sender's on core 0: the pipeline of two processes,
    // each side's cost apart (perf record --per-thread)
    // (the round trip's THREADS=2 too: each end in a bundle of its own, so
    // a request's poll of its bundle never polls the other thread's end)
    let threads = std::env::var("THREADS").is_ok_and(|v| v == "2");
    am::init().unwrap();
    let bun = am::allocate_bundle(BundleMode::Seq).unwrap();
    let bun1 = if threads {
        am::allocate_bundle(BundleMode::Seq).unwrap()
    } else {
        bun.clone()
    };
    let e0 = am::allocate_endpoint(&bun).unwrap();
    let e1 = am::allocate_endpoint(&bun1).unwrap();
    // DEPTH=n: each end's credits per peer (AMX programs run with 128)
    let depth: i32 = knob("DEPTH", 16);
    for e in [&e0, &e1] {
        e.set_tag(5);
        e.map(0, e0.name(), 5).unwrap();
        e.map(1, e1.name(), 5).unwrap();
        e.set_expected_resources(2, depth).unwrap();
    }
    e1.set_handler(
        10,
        handler(|h| am::reply(h.token, &Message::short(11, &[])).unwrap()),
    );
    let got = Arc::new(AtomicU64::new(0));
    let g = got.clone();
    e0.set_handler(
        11,
        handler(move |_| {
            g.fetch_add(1, Ordering::Relaxed);
        }),
    );
    // EMPTY_POLLS=k: k polls that find nothing per round trip (their cost
    // is what a busy-polling receiver spends between arrivals)
    let empty: usize = knob("EMPTY_POLLS", 0);
    if one_way {
        e1.set_handler(12, handler(|_| {}));
        let target = threads.then(|| poll_on_core_1(&e1));
        let medium: usize = knob("MEDIUM", 0);
        let payload = vec![7u8; medium];
        let msg = if medium > 0 {
            Message::medium(12, &[], &payload)
        } else {
            Message::short(12, &[])
        };
        // (the sender's polls while no credit is free, the target's polls:
        // which end waits for the other)
        let mut waits = 0u64;
        let t = Instant::now();
        for _ in 0..iters {
            while e0.request(1, &msg, true).is_err() {
                if !threads {
                    e1.poll().unwrap();
                }
                e0.poll().unwrap();
                waits += 1;
            }
        }
        while e0.unanswered_requests() > 0 {
            if !threads {
                e1.poll().unwrap();
            }
            e0.poll().unwrap();
        }
        let ns = t.elapsed().as_nanos() as f64 / iters as f64;
        let target_polls = target.map(Poller::stop);
        let x = e0.express_stats();
        let who = if threads {
            "two threads"
        } else {
            "one thread (both ends)"
        };
        if medium > 0 {
            println!(
                "{who}, one way, medium of {medium} B: ramp {ns:.0} ns per request, {:.0} MiB/s",
                medium as f64 * 1e9 / ns / (1 << 20) as f64
            );
            return;
        }
        println!(
            "{who}, one way: ramp {ns:.0} ns per request (express requests {}, \
             answers {} in {} records)",
            x.requests_sent,
            x.replies_received,
            e0.statistics().packets_received
        );
        if let Some(p) = target_polls {
            // per request: the sender's polls for want of a credit (the
            // target the slower end), the target's polls (above 1/batch:
            // it waits for the sender)
            println!(
                "per request: sender polls waiting for a credit {:.2}, target polls {:.2} \
                 (records taken fast {})",
                waits as f64 / iters as f64,
                p as f64 / iters as f64,
                e1.express_stats().fast
            );
        }
        return;
    }
    if threads {
        // the target polled by a thread of its own on core 1, the
        // requester on core 0: a round trip between two cores, as between
        // two processes (medians of batches of 1000)
        let target = poll_on_core_1(&e1);
        let flag = flag_pair(iters);
        let mut batches = Vec::new();
        let mut i = 0u64;
        for _ in 0..(iters / 1000).max(1) {
            let t = Instant::now();
            for _ in 0..1000 {
                e0.request(1, &Message::short(10, &[]), false).unwrap();
                while got.load(Ordering::Relaxed) <= i {
                    e0.poll().unwrap();
                }
                i += 1;
            }
            batches.push(t.elapsed().as_nanos() as f64 / 1000.0);
        }
        let _ = target.stop();
        batches.sort_by(f64::total_cmp);
        let q = |f: f64| batches[((batches.len() - 1) as f64 * f) as usize];
        println!(
            "two threads (cores 0 and 1), round trip: ramp median {:.0} ns (p10 {:.0}, p90 {:.0}); \
             a flag pair {flag:.0} ns; ratio {:.2}",
            q(0.5),
            q(0.1),
            q(0.9),
            q(0.5) / flag
        );
        println!("{}", resent_and_acks(&e0, &e1));
        return;
    }
    // BUNDLE=1: every poll AM_Poll's, of the bundle holding both ends
    // (`Bundle::poll`: its endpoint list), not each endpoint's own
    let whole = std::env::var("BUNDLE").is_ok_and(|v| v == "1");
    let t = Instant::now();
    for i in 0..iters as u64 {
        for _ in 0..empty {
            if whole {
                bun.poll().unwrap();
            } else {
                e1.poll().unwrap();
            }
        }
        e0.request(1, &Message::short(10, &[]), false).unwrap();
        while got.load(Ordering::Relaxed) <= i {
            if whole {
                bun.poll().unwrap();
            } else {
                e1.poll().unwrap();
                e0.poll().unwrap();
            }
        }
    }
    let rampt = t.elapsed().as_nanos() as f64 / iters as f64;
    println!("one thread, loopback: raw UDP {raw:.0} ns per round trip, ramp {rampt:.0} ns, ramp's own work {:.0} ns", rampt - raw);
    println!("{}", resent_and_acks(&e0, &e1));
}
