//! The two processes of `ramp bench`. Phases alternate between a raw UDP
//! echo and ramp request/reply; the client switches the server's phase with
//! an in-band message so that only one socket is polled at a time.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant as StdInstant;

use ramp::am::{self, handler, BundleMode, EndpointName, Message, VecSegment};

const H_ECHO: u8 = 10;
const H_PONG: u8 = 11;
const H_TO_RAW: u8 = 12;
const H_XFER: u8 = 13;
const H_XFER_ACK: u8 = 14;
const RAW_END: &[u8] = b"END";
/// Size of the raw ping-pong datagram: that of a ramp short request with no
/// argument, so both move the same bytes.
const RAW_SIZE: usize = 72;
const XFER_SIZE: usize = 64 * 1024;
const DEPTH: i32 = 32;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok())
        .collect()
}

fn name_from_hex(s: &str) -> Option<EndpointName> {
    let v = unhex(s)?;
    let a: [u8; 32] = v.try_into().ok()?;
    Some(EndpointName(a))
}

fn open_endpoint() -> (Arc<am::Bundle>, Arc<am::Endpoint>) {
    am::init().expect("ramp configuration");
    let b = am::allocate_bundle(BundleMode::Seq).expect("bundle");
    let e = am::allocate_endpoint(b.id).expect("endpoint");
    e.set_tag(0xbe7c);
    (b, e)
}

fn udp_near(ep: &am::Endpoint) -> UdpSocket {
    let s = UdpSocket::bind(SocketAddr::new(ep.addr().ip(), 0)).expect("udp socket");
    s.set_nonblocking(true).unwrap();
    s
}

/// The server: echoes raw datagrams, then answers ramp requests.
pub fn server_main() -> i32 {
    let (b, ep) = open_endpoint();
    let raw = udp_near(&ep);
    println!("{} {}", raw.local_addr().unwrap(), hex(&ep.name().0));
    let mut line = String::new();
    if std::io::stdin().read_line(&mut line).unwrap_or(0) == 0 {
        return 1;
    }
    let Some(client) = name_from_hex(line.trim()) else {
        eprintln!("bench server: bad client name");
        return 1;
    };
    ep.map(0, ep.name(), 0xbe7c).unwrap();
    ep.map(1, client, 0xbe7c).unwrap();
    ep.set_expected_resources(2, DEPTH).unwrap();
    let seg = VecSegment::new(XFER_SIZE * 2);
    ep.set_segment(Some(seg));
    ep.set_handler(
        H_ECHO,
        handler(|h| am::reply(h.token, &Message::short(H_PONG, h.args)).unwrap()),
    );
    let to_raw = Arc::new(AtomicBool::new(true));
    let t = to_raw.clone();
    ep.set_handler(H_TO_RAW, handler(move |_| t.store(true, Ordering::SeqCst)));
    ep.set_handler(
        H_XFER,
        handler(|h| am::reply(h.token, &Message::short(H_XFER_ACK, &[])).unwrap()),
    );
    let mut buf = [0u8; 2048];
    let stop = stdin_closed_flag();
    while !stop.load(Ordering::Relaxed) {
        if to_raw.load(Ordering::SeqCst) {
            // raw echo phase: busy-poll the plain socket only
            loop {
                match raw.recv_from(&mut buf) {
                    Ok((n, from)) => {
                        if &buf[..n] == RAW_END {
                            break;
                        }
                        let _ = raw.send_to(&buf[..n], from);
                    }
                    Err(_) => {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        std::hint::spin_loop();
                    }
                }
            }
            to_raw.store(false, Ordering::SeqCst);
        } else {
            b.poll().unwrap();
        }
    }
    let st = ep.statistics();
    if ramp::config::global().is_ok_and(|c| c.bench_server_stats) {
        eprintln!("{}", st.report(false));
    }
    let (sent, retx) = (st.packets_sent, st.packets_retransmitted);
    eprintln!(
        "server packets sent {sent} retransmitted {retx} ({})",
        rate(retx, sent)
    );
    0
}

/// Retransmitted packets per packet sent, in percent.
fn rate(retx: u64, sent: u64) -> String {
    format!("{:.2}%", 100.0 * retx as f64 / sent.max(1) as f64)
}

/// Packets sent and retransmitted, accumulated over the runs of one phase.
#[derive(Default)]
struct Retx {
    sent: u64,
    retx: u64,
}

impl Retx {
    /// Adds what was sent between the statistics `before` and now.
    fn add_since(&mut self, ep: &am::Endpoint, before: &am::Statistics) {
        let now = ep.statistics();
        self.sent += now.packets_sent - before.packets_sent;
        self.retx += now.packets_retransmitted - before.packets_retransmitted;
    }

    fn show(&self, name: &str) -> String {
        format!(
            "{name} {}/{} ({})",
            self.retx,
            self.sent,
            rate(self.retx, self.sent)
        )
    }
}

fn stdin_closed_flag() -> Arc<AtomicBool> {
    let f = Arc::new(AtomicBool::new(false));
    let g = f.clone();
    std::thread::spawn(move || {
        let mut s = String::new();
        while std::io::stdin().read_line(&mut s).unwrap_or(0) > 0 {
            s.clear();
        }
        g.store(true, Ordering::Relaxed);
    });
    f
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

/// (median, p99) in microseconds of `iters` round trips timed one by one.
fn time_round_trips(iters: usize, mut once: impl FnMut()) -> (f64, f64) {
    for _ in 0..iters / 10 {
        once();
    }
    let mut s = Vec::with_capacity(iters);
    for _ in 0..iters {
        let t = StdInstant::now();
        once();
        s.push(t.elapsed().as_nanos() as f64 / 1000.0);
    }
    let m = median(&mut s);
    (m, percentile(&mut s, 0.99))
}

/// The client: runs every phase and prints one line per figure.
pub fn client_main(args: &[String]) -> i32 {
    if args.len() < 5 {
        eprintln!("usage: ramp bench-client RAW_ADDR SERVER_NAME ITERS RUNS XFER_MIB");
        return 2;
    }
    let raw_addr: SocketAddr = args[0].parse().expect("raw address");
    let server = name_from_hex(&args[1]).expect("server name");
    let iters: usize = args[2].parse().expect("iters");
    let runs: usize = args[3].parse::<usize>().expect("runs").max(1);
    let xfer_mib: usize = args[4].parse().expect("xfer MiB");
    let (b, ep) = open_endpoint();
    println!("{}", hex(&ep.name().0));
    ep.map(0, ep.name(), 0xbe7c).unwrap();
    ep.map(1, server, 0xbe7c).unwrap();
    ep.set_expected_resources(2, DEPTH).unwrap();
    let pongs = Arc::new(AtomicU64::new(0));
    let p = pongs.clone();
    ep.set_handler(
        H_PONG,
        handler(move |_| {
            p.fetch_add(1, Ordering::Relaxed);
        }),
    );
    let acks = Arc::new(AtomicU64::new(0));
    let a = acks.clone();
    ep.set_handler(
        H_XFER_ACK,
        handler(move |_| {
            a.fetch_add(1, Ordering::Relaxed);
        }),
    );
    let raw = udp_near(&ep);
    let mut buf = [0u8; 2048];
    let ping = [7u8; RAW_SIZE];

    let (mut raw_m, mut raw_p) = (vec![], vec![]);
    let (mut r0_m, mut r0_p) = (vec![], vec![]);
    let (mut r4_m, mut r4_p) = (vec![], vec![]);
    let (mut r0_retx, mut r4_retx, mut xfer_retx) =
        (Retx::default(), Retx::default(), Retx::default());
    let mut in_raw = true; // the server starts in the raw phase
    for _ in 0..runs {
        if !in_raw {
            ep.request(1, &Message::short(H_TO_RAW, &[]), false)
                .unwrap();
            // let the switch take effect before timing
            let t = StdInstant::now();
            while t.elapsed().as_millis() < 20 {
                b.poll().unwrap();
            }
        }
        let (m, p99) = time_round_trips(iters, || {
            raw.send_to(&ping, raw_addr).unwrap();
            loop {
                if let Ok((n, _)) = raw.recv_from(&mut buf) {
                    if n == RAW_SIZE {
                        break;
                    }
                }
                std::hint::spin_loop();
            }
        });
        raw_m.push(m);
        raw_p.push(p99);
        raw.send_to(RAW_END, raw_addr).unwrap();
        in_raw = false;
        for (args, ms, ps, rx) in [
            (&[][..], &mut r0_m, &mut r0_p, &mut r0_retx),
            (&[1u32, 2, 3, 4][..], &mut r4_m, &mut r4_p, &mut r4_retx),
        ] {
            let before = ep.statistics();
            let (m, p99) = time_round_trips(iters, || {
                let want = pongs.load(Ordering::Relaxed) + 1;
                ep.request(1, &Message::short(H_ECHO, args), false).unwrap();
                while pongs.load(Ordering::Relaxed) < want {
                    b.poll().unwrap();
                }
            });
            ms.push(m);
            ps.push(p99);
            rx.add_since(&ep, &before);
        }
    }
    let raw_med = median(&mut raw_m);
    let line = |name: &str, m: &mut Vec<f64>, p: &mut Vec<f64>| {
        let mm = median(m);
        println!(
            "{name:<34} median {mm:7.2} us   p99 {:7.2} us   ratio to raw UDP {:.2}x",
            median(p),
            mm / raw_med
        );
    };
    line(
        "raw UDP ping-pong (72 B, busy-poll)",
        &mut raw_m,
        &mut raw_p,
    );
    line("ramp short request/reply, 0 args", &mut r0_m, &mut r0_p);
    line("ramp short request/reply, 4 args", &mut r4_m, &mut r4_p);

    // Xfer bandwidth: 64 KiB long requests, up to DEPTH outstanding.
    let src = vec![0x5au8; XFER_SIZE];
    let total = (xfer_mib * 1024 * 1024 / XFER_SIZE).max(16);
    let mut bw = vec![];
    for _ in 0..runs {
        let base = acks.load(Ordering::Relaxed);
        let before = ep.statistics();
        let t = StdInstant::now();
        for i in 0..total {
            ep.request(
                1,
                &Message::long(H_XFER, &[], &src, ((i % 2) * XFER_SIZE) as u64),
                false,
            )
            .unwrap();
        }
        while acks.load(Ordering::Relaxed) < base + total as u64 {
            b.poll().unwrap();
        }
        let secs = t.elapsed().as_secs_f64();
        xfer_retx.add_since(&ep, &before);
        bw.push((total * XFER_SIZE) as f64 / secs / (1024.0 * 1024.0));
    }
    let s = ep.statistics();
    let bw_med = median(&mut bw);
    println!(
        "{:<34} median {:7.1} MiB/s ({} x 64 KiB per run)",
        "ramp Xfer bandwidth, 64 KiB", bw_med, total
    );
    println!(
        "client packets sent {} retransmitted {} acks sent {} (standalone)",
        s.packets_sent, s.packets_retransmitted, s.acks_sent
    );
    println!(
        "client retransmitted/sent: {}, {}, {}, all {}",
        r0_retx.show("0 args"),
        r4_retx.show("4 args"),
        xfer_retx.show("Xfer"),
        rate(s.packets_retransmitted, s.packets_sent)
    );
    // for the parent (not shown): the figures it compares across runs
    println!(
        "FIGURES {} {} {} {}",
        raw_med,
        median(&mut r0_m),
        median(&mut r4_m),
        bw_med
    );
    println!("DONE");
    0
}
