//! The two processes of `ramp bench`. Phases alternate between a raw UDP
//! echo and ramp request/reply; the client switches the server's phase with
//! an in-band message so that only one socket is polled at a time.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant as StdInstant;

use ramp::am::{self, handler, BundleMode, EndpointName, Message, VecSegment};

// the raw blast is also the remote-memory and LogGP roles'
pub(crate) use crate::bench_blast::{
    blast_receiver, blast_sender, PageBuf, BLAST_SIZE, BLAST_START, BLAST_WINDOW,
};
use crate::bench_integrity::integrity_ns_per_byte;

const H_ECHO: u8 = 10;
const H_PONG: u8 = 11;
const H_TO_RAW: u8 = 12;
const H_XFER: u8 = 13;
const H_XFER_ACK: u8 = 14;
const RAW_END: &[u8] = b"END";
/// Starts the raw ping-pong over connected sockets: the server answers
/// from a socket of its own connected to the sender, echoes there until
/// `RAW_END`.
const CONNECTED_START: &[u8] = b"CONNECTED";
/// Size of the raw ping-pong datagram: that of a ramp short request with no
/// argument, so both move the same bytes.
const RAW_SIZE: usize = 72;
pub(crate) const XFER_SIZE: usize = 64 * 1024;
const DEPTH: i32 = 32;

/// Ends this process (a role of `ramp bench`: its server, client, LogGP
/// or remote-memory roles) when the process that started it is gone: a
/// bench killed, or ended by a closed pipe (`ramp bench | head`), would
/// otherwise leave its roles polling on their cores for ever, and every
/// figure measured later on the host beside them. Looked at every 100 ms.
pub(crate) fn exit_with_parent() {
    let parent = std::os::unix::process::parent_id();
    std::thread::spawn(move || loop {
        std::thread::sleep(std::time::Duration::from_millis(100));
        if std::os::unix::process::parent_id() != parent {
            eprintln!("ramp: the benchmark that started this role is gone (it was process {parent}); ending");
            std::process::exit(3);
        }
    });
}

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

fn open_endpoint(role: &str) -> (Arc<am::Bundle>, Arc<am::Endpoint>) {
    let (b, e) = open_or_exit(role);
    e.set_tag(0xbe7c);
    (b, e)
}

/// A benchmark role's bundle and endpoint; when ramp cannot give them (a
/// bad `RAMP_*` variable, no socket), `ramp ROLE: why` and exit status 2,
/// which the parent reports (not a panic's backtrace).
pub(crate) fn open_or_exit(role: &str) -> (Arc<am::Bundle>, Arc<am::Endpoint>) {
    let opened = am::init().and_then(|()| {
        let b = am::allocate_bundle(BundleMode::Seq)?;
        let e = am::allocate_endpoint(&b)?;
        Ok((b, e))
    });
    opened.unwrap_or_else(|e| {
        eprintln!("ramp {role}: {e}");
        std::process::exit(2)
    })
}

/// The raw echo over a socket connected to `from` (made here, on `raw`'s
/// address): what a sender that looks its route up once gets.
fn connected_echo(raw: &UdpSocket, from: SocketAddr, stop: &AtomicBool) {
    let c = UdpSocket::bind(SocketAddr::new(raw.local_addr().unwrap().ip(), 0)).unwrap();
    c.connect(from).unwrap();
    c.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 2048];
    let _ = c.send(CONNECTED_START);
    while !stop.load(Ordering::Relaxed) {
        match c.recv(&mut buf) {
            Ok(n) if &buf[..n] == RAW_END => return,
            Ok(n) => {
                let _ = c.send(&buf[..n]);
            }
            Err(_) => std::hint::spin_loop(),
        }
    }
}

/// The client's end of `connected_echo`: a socket beside `raw`, connected
/// to the server's echo socket.
fn connected_to_echo(raw: &UdpSocket, raw_addr: SocketAddr) -> UdpSocket {
    let c = UdpSocket::bind(SocketAddr::new(raw.local_addr().unwrap().ip(), 0)).unwrap();
    c.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 64];
    loop {
        c.send_to(CONNECTED_START, raw_addr).unwrap();
        let t = StdInstant::now();
        while t.elapsed().as_millis() < 100 {
            if let Ok((n, echo)) = c.recv_from(&mut buf) {
                if &buf[..n] == CONNECTED_START {
                    c.connect(echo).unwrap();
                    return c;
                }
            }
        }
    }
}

/// A plain UDP socket beside the endpoint, with kernel buffers as large as
/// ramp asks for its own (`RAMP_SOCKET_BUFFER`): the raw figures and ramp's
/// have the same room.
pub(crate) fn udp_near(ep: &am::Endpoint) -> UdpSocket {
    use socket2::{Domain, Protocol, Socket, Type};
    let addr = SocketAddr::new(ep.addr().ip(), 0);
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))
        .expect("udp socket");
    let buffer = ramp::config::global().map_or(4 << 20, |c| c.socket_buffer);
    let _ = s.set_recv_buffer_size(buffer);
    let _ = s.set_send_buffer_size(buffer);
    s.bind(&addr.into()).expect("udp bind");
    let s: UdpSocket = s.into();
    s.set_nonblocking(true).unwrap();
    s
}

/// The server: echoes raw datagrams, then answers ramp requests.
pub fn server_main() -> i32 {
    let (b, ep) = open_endpoint("bench-server");
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
    let mut buf = vec![0u8; 65536];
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
                        if &buf[..n] == BLAST_START {
                            blast_receiver(&raw, from, &stop);
                            continue;
                        }
                        if &buf[..n] == CONNECTED_START {
                            connected_echo(&raw, from, &stop);
                            continue;
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
    let (b, ep) = open_endpoint("bench-client");
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
    let (mut rawc_m, mut rawc_p) = (vec![], vec![]);
    let (mut r0_m, mut r0_p) = (vec![], vec![]);
    let (mut rt_m, mut rt_p) = (vec![], vec![]);
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
        // the same over connected sockets (as ramp's, `net/udp_conns.rs`)
        let c = connected_to_echo(&raw, raw_addr);
        let (m, p99) = time_round_trips(iters, || {
            c.send(&ping).unwrap();
            loop {
                if let Ok(n) = c.recv(&mut buf) {
                    if n == RAW_SIZE {
                        break;
                    }
                }
                std::hint::spin_loop();
            }
        });
        rawc_m.push(m);
        rawc_p.push(p99);
        c.send(RAW_END).unwrap();
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
        // the same 0-arg round trip as a kept transaction (issue 10)
        let (m, p99) = time_round_trips(iters, || {
            let want = pongs.load(Ordering::Relaxed) + 1;
            let t = ep.request_txn(1, &Message::short(H_ECHO, &[])).unwrap();
            while pongs.load(Ordering::Relaxed) < want {
                b.poll().unwrap();
            }
            ep.txn_release(t).unwrap();
        });
        rt_m.push(m);
        rt_p.push(p99);
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
    line("raw UDP ping-pong, connected", &mut rawc_m, &mut rawc_p);
    line("ramp short request/reply, 0 args", &mut r0_m, &mut r0_p);
    line("ramp short request/reply, 4 args", &mut r4_m, &mut r4_p);
    let (rt_med, r0_med) = (median(&mut rt_m), median(&mut r0_m));
    println!(
        "ramp 0-arg round trip / raw connected ping-pong {:.2}x (ramp sends through connected sockets: RAMP_UDP_CONNECT)",
        r0_med / median(&mut rawc_m)
    );
    println!(
        "{:<34} median {rt_med:7.2} us   p99 {:7.2} us   ratio to the plain 0-arg {:.2}x",
        "ramp transaction round trip, 0 args",
        median(&mut rt_p),
        rt_med / r0_med
    );

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

    // What the integrity check costs each end of the Xfer: one pass over
    // every byte sent (sender) or received (receiver).
    let cost = integrity_ns_per_byte(XFER_SIZE);
    let gmac_ns = cost.gmac;
    let xfer_ns_per_byte = 1e9 / (bw_med * 1024.0 * 1024.0);
    let per_byte = format!(
        "integrity per byte (64 KiB): CRC32C {} {:.4} ns \
         at the sender, {:.4} ns at the receiver (a whole datagram summed apart: {:.3} ns, \
         {:.1} GB/s), GMAC {:.3} ns ({:.1} GB/s)",
        if cost.crc_folded {
            "summed in the copy each end makes anyway"
        } else {
            "summed apart from the copy (this CPU has no AVX-512 to fold it in)"
        },
        cost.crc_sender,
        cost.crc_receiver,
        cost.crc_whole,
        1.0 / cost.crc_whole,
        gmac_ns,
        1.0 / gmac_ns,
    );
    if std::env::var(ramp::config::TRANSPORT).is_ok_and(|t| t == "shm") {
        // a 64 KiB Xfer to a peer on this host is copied into its segment
        // in place (`xfer_shared.rs`, `xfer_direct.rs`): no packet, no sum
        println!("{per_byte}; not on this path (over shm a 64 KiB Xfer is copied in place)");
    } else {
        println!(
            "{per_byte}; share of each end's Xfer time: CRC32C {:.1}% at the sender, {:.1}% \
             at the receiver, GMAC {:.1}% (target < 5%)",
            100.0 * cost.crc_sender / xfer_ns_per_byte,
            100.0 * cost.crc_receiver / xfer_ns_per_byte,
            100.0 * gmac_ns / xfer_ns_per_byte
        );
    }

    // 0-argument request rate: requests one way, pipelined (up to DEPTH
    // outstanding, as AMX testping), each answered by a short reply.
    let n_rate = (iters * 5).max(1000);
    let mut rates = vec![];
    for _ in 0..runs {
        let base = pongs.load(Ordering::Relaxed);
        let t = StdInstant::now();
        for _ in 0..n_rate {
            ep.request(1, &Message::short(H_ECHO, &[]), false).unwrap();
        }
        while pongs.load(Ordering::Relaxed) < base + n_rate as u64 {
            b.poll().unwrap();
        }
        rates.push(n_rate as f64 / t.elapsed().as_secs_f64());
    }
    let rate_med = median(&mut rates);
    println!(
        "{:<34} median {:9.0} req/s ({} requests per run, {} outstanding at most)",
        "ramp 0-arg request rate, pipelined", rate_med, n_rate, DEPTH
    );

    // Raw UDP blast of datagrams as large as an Xfer's, to the busy
    // server, a window of BLAST_WINDOW: the floor for the Xfer bandwidth.
    ep.request(1, &Message::short(H_TO_RAW, &[]), false)
        .unwrap();
    let t = StdInstant::now();
    while t.elapsed().as_millis() < 20 {
        b.poll().unwrap();
    }
    let blast_total = (total * XFER_SIZE / BLAST_SIZE) as u64;
    let mut blast = vec![];
    for _ in 0..runs {
        blast.push(blast_sender(&raw, raw_addr, blast_total));
    }
    let blast_med = median(&mut blast);
    println!(
        "{:<34} median {:7.1} MiB/s ({} x {} B per run, window {})",
        "raw UDP blast (busy receiver)", blast_med, blast_total, BLAST_SIZE, BLAST_WINDOW
    );
    println!(
        "Xfer 64 KiB / raw UDP blast: {:.2} (target >= 0.70)",
        bw_med / blast_med
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
    println!(
        "client congestion: reductions {} random losses {} timeouts {} (undone {}) paced {}",
        s.cc_reductions, s.cc_random_losses, s.cc_timeouts, s.cc_undone, s.cc_paced
    );
    print!("client {}", ep.paths_report());
    // for the parent (not shown): the figures it compares across runs
    println!(
        "FIGURES {} {} {} {} {} {}",
        raw_med,
        median(&mut r0_m),
        median(&mut r4_m),
        bw_med,
        rate_med,
        blast_med
    );
    println!("DONE");
    0
}
