//! The two processes of `ramp bench --loggp` over ramp (`ramp loggp-server`,
//! `ramp loggp-client`): the server answers short requests with a short
//! reply and long ones (Xfer) with an acknowledgement, and holds a region
//! for put/get; the client runs `loggp_measure.rs` over its endpoint and
//! the remote memory figures, and prints the figures as lines for the
//! parent (`loggp.rs`).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use ramp::am::{
    self, handler, EndpointName, Message, SegmentMemory, VecSegment, REGION_READ, REGION_WRITE,
};
use ramp::error::Error;

use crate::loggp_measure::{measure, Chan, Figures, Params, SHORT, WINDOW};

const TAG: u64 = 0x1099;
const H_ECHO: u8 = 20;
const H_PONG: u8 = 21;
const H_XFER: u8 = 22;
const H_ACK: u8 = 23;
/// One way: the server's handler answers nothing (the request's credit
/// comes back in ramp's automatic reply).
const H_SINK: u8 = 24;
const RMA_SIZE: usize = 1 << 20;
/// Put/get operations outstanding at once (as `bench_rma.rs`).
const RMA_WINDOW: usize = 16;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn name_from_hex(s: &str) -> Option<EndpointName> {
    let s = s.trim();
    let mut n = [0u8; 32];
    if s.len() != 64 {
        return None;
    }
    for (i, b) in n.iter_mut().enumerate() {
        *b = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(EndpointName(n))
}

fn stdin_line() -> Option<String> {
    let mut l = String::new();
    match std::io::stdin().read_line(&mut l) {
        Ok(n) if n > 0 => Some(l),
        _ => None,
    }
}

fn open(role: &str) -> (Arc<am::Bundle>, Arc<am::Endpoint>) {
    let (b, e) = crate::bench_roles::open_or_exit(role);
    println!("{}", hex(&e.name().0));
    (b, e)
}

fn map_peer(ep: &am::Endpoint, peer: EndpointName) {
    ep.set_tag(TAG);
    ep.map(0, ep.name(), TAG).unwrap();
    ep.map(1, peer, TAG).unwrap();
    ep.set_expected_resources(2, WINDOW as i32).unwrap();
}

/// `ramp loggp-server MAX_SIZE`: prints its name, reads the client's,
/// prints its region, answers until its standard input closes.
pub fn server(args: &[String]) -> i32 {
    let max: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(1 << 20);
    let (b, ep) = open("loggp-server");
    let Some(peer) = stdin_line().and_then(|l| name_from_hex(&l)) else {
        return 1;
    };
    map_peer(&ep, peer);
    // the segment in memory ramp allocates: a same-host client's Xfer is
    // then one memcpy into it (`ramp_AllocSegment`)
    ep.alloc_segment(2 * max).unwrap();
    ep.set_handler(
        H_ECHO,
        handler(|h| am::reply(h.token, &Message::short(H_PONG, &[])).unwrap()),
    );
    ep.set_handler(H_SINK, handler(|_| {}));
    ep.set_handler(
        H_XFER,
        handler(|h| am::reply(h.token, &Message::short(H_ACK, &[])).unwrap()),
    );
    // memory ramp allocates (same-host peers map it: one memcpy per put or
    // get), and user memory registered (copied by the kernel or in chunks)
    let (alloc, _, _) = ep
        .alloc_region(2 * RMA_SIZE, REGION_READ | REGION_WRITE)
        .unwrap();
    let region = ep
        .register_region(VecSegment::new(2 * RMA_SIZE), REGION_READ | REGION_WRITE)
        .unwrap();
    println!("{alloc} {region}");
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    std::thread::spawn(move || {
        while stdin_line().is_some() {}
        s.store(true, Ordering::Relaxed);
    });
    while !stop.load(Ordering::Relaxed) {
        b.poll().unwrap();
    }
    0
}

/// ramp's endpoint as a `Chan`: short requests and Xfer (long requests
/// into the server's segment), answers counted by their handlers.
struct RampChan {
    b: Arc<am::Bundle>,
    ep: Arc<am::Endpoint>,
    answers: Arc<AtomicU64>,
    seen: u64,
    sent: u64,
    max: usize,
}

impl RampChan {
    /// `msg` to the server if a credit is free now: whether it went.
    fn request(&mut self, msg: &Message<'_>) -> bool {
        match self.ep.request(1, msg, true) {
            Ok(()) => {
                self.sent += 1;
                true
            }
            Err(Error::InUse(_)) => false,
            Err(e) => panic!("request: {e}"),
        }
    }
}

impl Chan for RampChan {
    fn try_send(&mut self, data: &[u8]) -> bool {
        let msg = if data.len() <= SHORT {
            Message::short(H_ECHO, &[])
        } else {
            let off = (self.sent % 2) * self.max as u64;
            Message::long(H_XFER, &[], data, off)
        };
        self.request(&msg)
    }

    fn poll(&mut self) -> usize {
        self.b.poll().unwrap();
        let now = self.answers.load(Ordering::Relaxed);
        let n = now - self.seen;
        self.seen = now;
        n as usize
    }

    fn has_one_way(&self) -> bool {
        true
    }

    fn try_post(&mut self) -> bool {
        self.request(&Message::short(H_SINK, &[]))
    }

    fn posted_done(&mut self) -> u64 {
        // every request answered (the caller counts from its own start)
        self.sent - self.ep.unanswered_requests() as u64
    }
}

/// MiB/s of `RMA_SIZE` operations, `RMA_WINDOW` outstanding.
fn rma_bw(ep: &Arc<am::Endpoint>, n: usize, mut issue: impl FnMut(usize) -> u64) -> f64 {
    let mut ops = VecDeque::new();
    let t = Instant::now();
    for i in 0..n {
        if ops.len() == RMA_WINDOW {
            assert_eq!(ep.wait_op(ops.pop_front().unwrap()).unwrap(), 0);
        }
        ops.push_back(issue(i));
    }
    for op in ops {
        assert_eq!(ep.wait_op(op).unwrap(), 0);
    }
    (n * RMA_SIZE) as f64 / t.elapsed().as_secs_f64() / (1024.0 * 1024.0)
}

/// `ramp loggp-client ITERS MAX_BURST TOTAL_BYTES SIZES`: prints its name,
/// reads "SERVER_NAME REGION", measures, prints the figures.
pub fn client(args: &[String]) -> i32 {
    let num = |i: usize| args.get(i).and_then(|a| a.parse::<usize>().ok());
    let (Some(iters), Some(max_burst), Some(total_bytes)) = (num(0), num(1), num(2)) else {
        eprintln!("usage: ramp loggp-client ITERS MAX_BURST TOTAL_BYTES SIZES");
        return 2;
    };
    let sizes: Vec<usize> = args
        .get(3)
        .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_default();
    let p = Params {
        iters,
        max_burst,
        total_bytes,
        sizes,
    };
    let (b, ep) = open("loggp-client");
    let Some(line) = stdin_line() else {
        return 1;
    };
    let mut it = line.split_whitespace();
    let (Some(peer), Some(region)) = (
        it.next().and_then(name_from_hex),
        it.next().and_then(|r| r.parse::<u32>().ok()),
    ) else {
        return 1;
    };
    let registered = it.next().and_then(|r| r.parse::<u32>().ok());
    map_peer(&ep, peer);
    let answers = Arc::new(AtomicU64::new(0));
    for h in [H_PONG, H_ACK] {
        let a = answers.clone();
        ep.set_handler(
            h,
            handler(move |_| {
                a.fetch_add(1, Ordering::Relaxed);
            }),
        );
    }
    let max = p.sizes.iter().copied().max().unwrap_or(SHORT);
    let mut ch = RampChan {
        b,
        ep: ep.clone(),
        answers,
        seen: 0,
        sent: 0,
        max,
    };
    let progress = |what: &str| println!("PROGRESS {what}");
    let mut f = measure(&mut ch, &p, am::MAX_LONG, &progress);
    progress("put/get 1 MiB");
    let n = (p.total_bytes / RMA_SIZE).max(RMA_WINDOW);
    let src = vec![0x5au8; RMA_SIZE];
    // Two destinations, as the put reads one source into two slots of the
    // region: the gets land in memory as hot as memcpy's baseline buffers
    // (17 distinct ones, one per outstanding get, made the figure that of
    // 17 MiB of cache misses: a plain copy that way runs at ~0.55 of the
    // hot memcpy). The outstanding gets share them: only time is measured
    // here, the contents are `tests/rma_*`'s business.
    let dsts: Vec<_> = (0..2).map(|_| VecSegment::new(RMA_SIZE)).collect();
    // written once before, as memcpy's destination is: the figure is the
    // get's, not the first touch of fresh pages
    for d in &dsts {
        d.write(0, &src);
    }
    // the allocated region's file is handed over after the first
    // operation to it (over a ring only): mapped before measuring (the
    // segment's file may have been mapped already, by the Xfers)
    let made0 = ep.rma_shared_counts()[1];
    let t0 = Instant::now();
    while ep.ring_ready(1)
        && ep.rma_shared_counts()[1] == made0
        && t0.elapsed() < std::time::Duration::from_secs(2)
    {
        let op = ep.put(1, region, 0, &src[..8], None, true).unwrap();
        assert_eq!(ep.wait_op(op).unwrap(), 0);
        ch.b.wait_for_activity(1);
    }
    let pair = |region: u32| {
        let put = rma_bw(&ep, n, |i| {
            let off = ((i % 2) * RMA_SIZE) as u64;
            ep.put(1, region, off, &src, None, true).unwrap()
        });
        let get = rma_bw(&ep, n, |i| {
            let off = ((i % 2) * RMA_SIZE) as u64;
            ep.get(1, region, off, dsts[i % dsts.len()].clone(), true)
                .unwrap()
        });
        (Some(put), Some(get))
    };
    (f.put1m, f.get1m) = pair(region);
    if let Some(r) = registered {
        (f.put1m_reg, f.get1m_reg) = pair(r);
    }
    for l in to_lines(&f) {
        println!("{l}");
    }
    println!("DONE");
    0
}

/// The figures as lines ("FIG name value", "BURST k us", "BW size MiB/s").
pub fn to_lines(f: &Figures) -> Vec<String> {
    let mut v = vec![];
    for (k, x) in [
        ("rtt", f.rtt),
        ("o_s", f.o_s),
        ("o_r", f.o_r),
        ("g", f.g),
        ("g1", f.g1),
        ("put1m", f.put1m),
        ("get1m", f.get1m),
        ("put1m_reg", f.put1m_reg),
        ("get1m_reg", f.get1m_reg),
    ] {
        if let Some(x) = x {
            v.push(format!("FIG {k} {x}"));
        }
    }
    v.extend(f.burst.iter().map(|(k, x)| format!("BURST {k} {x}")));
    v.extend(f.bw.iter().map(|(s, x)| format!("BW {s} {x}")));
    v
}

/// Reads one line of `to_lines` into `f`; false if it is not one.
pub fn from_line(f: &mut Figures, l: &str) -> bool {
    let w: Vec<&str> = l.split_whitespace().collect();
    let (Some(&kind), Some(a), Some(x)) = (w.first(), w.get(1), w.get(2)) else {
        return false;
    };
    let Ok(x) = x.parse::<f64>() else {
        return false;
    };
    match (kind, *a) {
        ("FIG", "rtt") => f.rtt = Some(x),
        ("FIG", "o_s") => f.o_s = Some(x),
        ("FIG", "o_r") => f.o_r = Some(x),
        ("FIG", "g") => f.g = Some(x),
        ("FIG", "g1") => f.g1 = Some(x),
        ("FIG", "put1m") => f.put1m = Some(x),
        ("FIG", "get1m") => f.get1m = Some(x),
        ("FIG", "put1m_reg") => f.put1m_reg = Some(x),
        ("FIG", "get1m_reg") => f.get1m_reg = Some(x),
        ("BURST", k) => match k.parse() {
            Ok(k) => f.burst.push((k, x)),
            Err(_) => return false,
        },
        ("BW", s) => match s.parse() {
            Ok(s) => f.bw.push((s, x)),
            Err(_) => return false,
        },
        _ => return false,
    }
    true
}
