//! A live endpoint under a flood, over real sockets (item 7): while e0
//! exchanges requests and replies of every category (short, medium, long;
//! both ways) with e1 through a capturing relay, and with e2 (e1's
//! "restarted" incarnation: a new endpoint at a new port), a forger sends
//! `RAMP_FLOOD` datagrams (default 200,000) from 64 ports of its own:
//! random bytes, truncations of captured real datagrams, captured datagrams
//! replayed verbatim (from other ports, and to the restarted peer),
//! forged DATA/ACK/NACK/ABORT/COOKIE_ECHO with a valid CRC and random or
//! captured (real) tags, INITs, ALIAS and ALIAS_ACK naming the forger's
//! own port with a real tag (taken only from a peer's name: what else
//! makes no alias is `proto/alias_tests.rs`'s). The relay itself replays captured datagrams
//! in their own direction from the real addresses (late duplicates).
//!
//! Asserted: every request handled exactly once and every reply received
//! exactly once, no handler run for a forged packet (a handler on every
//! other id, and handler 0, count), RSS after the flood within
//! `RAMP_FLOOD_RSS_SLACK_KIB` (default 2048) of RSS after a warm-up flood.
//! The figures are printed (`-- --nocapture`).
//!
//! The relay and the forger use only what any process can do: plain UDP
//! sockets (no spoofed source addresses: the relay *is* the address its
//! side knows).

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use ramp::am::{self, handler, Bundle, BundleMode, Data, EndpointName, Message, VecSegment};
use ramp::sim::Rng;
use ramp::wire::{self, Category, Common, Integrity, MsgKind, MsgMeta};

const TAG: u64 = 77;
const I: Integrity = Integrity::Crc32c;
const MAGIC: u32 = 0x5EED;
/// Requests per sender in flight at most (the credits are 8 per peer).
const WINDOW: u64 = 6;

use common::{env_u64, rss_kib};

/// Datagrams seen by the relay: (direction 0 = e0 -> e1, 1 = e1 -> e0).
type Captured = Arc<Mutex<Vec<(u8, Vec<u8>)>>>;
const CAPTURE_MAX: usize = 4096;

/// Forwards between e0 (which knows `r0` as e1) and e1 (which knows `r1`
/// as e0), keeping copies, and now and then replays a copy in its own
/// direction from the real address.
fn relay(
    r0: UdpSocket,
    r1: UdpSocket,
    e0: SocketAddr,
    e1: SocketAddr,
    cap: Captured,
    stop: Arc<AtomicBool>,
) -> (u64, u64) {
    r0.set_nonblocking(true).unwrap();
    r1.set_nonblocking(true).unwrap();
    let mut buf = vec![0u8; 70_000];
    let (mut fwd, mut replays) = (0u64, 0u64);
    let mut rng = Rng::new(3);
    while !stop.load(Ordering::Relaxed) {
        let mut idle = true;
        for dir in 0..2u8 {
            let (from, to_sock, to) = if dir == 0 {
                (&r0, &r1, e1)
            } else {
                (&r1, &r0, e0)
            };
            while let Ok((n, _)) = from.recv_from(&mut buf) {
                idle = false;
                let _ = to_sock.send_to(&buf[..n], to);
                fwd += 1;
                let mut c = cap.lock();
                if c.len() < CAPTURE_MAX {
                    c.push((dir, buf[..n].to_vec()));
                }
                if fwd.is_multiple_of(16) && !c.is_empty() {
                    // an old datagram again, in its own direction, from its
                    // real address: a late duplicate
                    let (d, ref b) = c[rng.below(c.len() as u64) as usize];
                    let (s, t) = if d == 0 { (&r1, e1) } else { (&r0, e0) };
                    let _ = s.send_to(b, t);
                    replays += 1;
                }
            }
        }
        if idle {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
    (fwd, replays)
}

fn reseal(v: &mut Vec<u8>) {
    let n = v.len().saturating_sub(I.trailer_len());
    v.truncate(n);
    I.seal(v, 0);
}

/// Sends `count` hostile datagrams to `targets` from `socks`.
fn flood(
    socks: &[UdpSocket],
    targets: &[SocketAddr],
    restarted: SocketAddr,
    cap: &Captured,
    count: u64,
    rng: &mut Rng,
) -> [u64; 8] {
    let mut kinds = [0u64; 8];
    let mut buf = vec![0u8; 2048];
    let mut sent = 0u64;
    while sent < count {
        let s = &socks[rng.below(socks.len() as u64) as usize];
        let to = targets[rng.below(targets.len() as u64) as usize];
        let pick = {
            let c = cap.lock();
            (!c.is_empty()).then(|| c[rng.below(c.len() as u64) as usize].1.clone())
        };
        let k = rng.below(8) as usize;
        // a real tag, for forged announcements
        let real_tag = pick
            .as_ref()
            .and_then(|p| wire::layout::read_u64(p, wire::layout::VTAG_AT));
        let (d, to) = match (k, pick) {
            (0, _) | (1..=3, None) => (
                (0..rng.below(1500))
                    .map(|_| rng.next_u64() as u8)
                    .collect::<Vec<u8>>(),
                to,
            ),
            (1, Some(mut p)) => {
                p.truncate(rng.below(p.len() as u64) as usize);
                (p, to)
            }
            // a real datagram replayed from another port
            (2, Some(p)) => (p, to),
            // the old association's datagram, to the restarted peer
            (3, Some(p)) => (p, restarted),
            // forged DATA with a valid CRC: a random or a real (captured) tag
            (4 | 5, p) => {
                let vtag = match p {
                    Some(p) if k == 5 && p.len() >= 12 => {
                        wire::layout::read_u64(&p, wire::layout::VTAG_AT).unwrap()
                    }
                    _ => rng.next_u64(),
                };
                let c = Common {
                    vtag,
                    channel: (rng.next_u64() & 1) as u8,
                    seq: rng.below(64) as u32,
                    ..Default::default()
                };
                let cat =
                    [Category::Short, Category::Medium, Category::Long][rng.below(3) as usize];
                let kind =
                    [MsgKind::User, MsgKind::AutoReply, MsgKind::Returned][rng.below(3) as usize];
                let mut m = MsgMeta::new(kind, cat, rng.below(256) as u8, &[rng.below(50) as u32]);
                m.txn = rng.below(64) as u32;
                m.tag = TAG;
                m.dest_offset = rng.below(4096);
                let p = vec![0xEE; rng.below(200) as usize];
                let mut d = Vec::new();
                wire::encode_data(&mut d, &I, &c, &m, p.len() as u32, 0, &p);
                (d, to)
            }
            // a captured datagram with its fields changed, resealed
            (6, Some(mut p)) if p.len() > 20 => {
                let i = 12 + rng.below(p.len() as u64 - 16) as usize;
                p[i] ^= 1 << rng.below(8);
                reseal(&mut p);
                (p, to)
            }
            // handshake and control packets with random tags
            _ => {
                let mut d = Vec::new();
                let c = Common {
                    vtag: rng.next_u64(),
                    ..Default::default()
                };
                // an ALIAS or its answer naming the forger's own port,
                // with a real tag: taken only from a peer's name
                let port = s.local_addr().unwrap().port();
                let tag = real_tag.unwrap_or_else(|| rng.next_u64() | 1);
                match rng.below(7) {
                    5 => wire::encode_alias(&mut d, &I, tag, false, port),
                    6 => wire::encode_alias(&mut d, &I, tag, true, port),
                    0 | 1 => wire::encode_init(&mut d, &I, rng.next_u64() | 1),
                    2 => wire::encode_ack(&mut d, &I, &c, rng.next_u64()),
                    3 => wire::encode_abort(&mut d, &I, rng.next_u64()),
                    _ => {
                        let mut cookie = [0u8; 48];
                        cookie.iter_mut().for_each(|c| *c = rng.next_u64() as u8);
                        wire::encode_cookie_echo(&mut d, &I, rng.next_u64(), &cookie)
                    }
                }
                (d, to)
            }
        };
        kinds[k] += 1;
        let _ = s.send_to(&d, to);
        sent += 1;
        if sent.is_multiple_of(64) {
            // the answers: read and dropped
            for s in socks.iter().take(4) {
                while s.recv_from(&mut buf).is_ok() {}
            }
        }
        if sent.is_multiple_of(256) {
            std::thread::yield_now();
        }
    }
    kinds
}

/// Counters of one sender -> receiver exchange, by k.
struct Ledger {
    handled: Vec<AtomicU64>,
    replied: Vec<AtomicU64>,
    /// The sum of `replied`.
    replies: AtomicU64,
}

impl Ledger {
    fn new(n: usize) -> Arc<Ledger> {
        Arc::new(Ledger {
            handled: (0..n).map(|_| AtomicU64::new(0)).collect(),
            replied: (0..n).map(|_| AtomicU64::new(0)).collect(),
            replies: AtomicU64::new(0),
        })
    }
    fn replies(&self) -> u64 {
        self.replies.load(Ordering::SeqCst)
    }
}

const MAXN: usize = 100_000;
/// Real requests per flow (4 flows) by the end of the warm-up flood, and
/// during the measured one: the exchange goes on under fire, bounded so that
/// it does not take the cores from the forger (nor grow the test's own
/// ledgers into the RSS figure).
const WARM_REQUESTS: u64 = 3_000;
const FLOOD_REQUESTS: u64 = 10_000;

/// Sets the handlers of `e`: request handlers 10/11/12 (short, medium, long;
/// args [MAGIC, k, sender id]) reply with the same category on 20/21/22;
/// every other handler counts as a forgery.
fn handlers(e: &am::Endpoint, ledgers: Vec<Arc<Ledger>>, bad: Arc<AtomicU64>) {
    for h in 0..=255u8 {
        let b = bad.clone();
        e.set_handler(
            h,
            handler(move |a| {
                eprintln!("forged handler {h} ran: {:?}", a.args);
                b.fetch_add(1, Ordering::SeqCst);
            }),
        );
    }
    for cat in 0..3u8 {
        let (l, b) = (ledgers.clone(), bad.clone());
        e.set_handler(
            10 + cat,
            handler(move |a| {
                let ok = a.args.len() == 3 && a.args[0] == MAGIC;
                let Some(c) = ok
                    .then(|| l.get(a.args[2] as usize))
                    .flatten()
                    .and_then(|l| l.handled.get(a.args[1] as usize))
                else {
                    b.fetch_add(1, Ordering::SeqCst);
                    return;
                };
                let k = a.args[1];
                match (&a.data, cat) {
                    (Data::None, 0) => {}
                    (Data::Medium(p), 1) => {
                        if !p.iter().all(|&x| x == k as u8) {
                            b.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                    (Data::Long { len, .. }, 2) => assert_eq!(*len, 64),
                    _ => {
                        b.fetch_add(1, Ordering::SeqCst);
                    }
                }
                c.fetch_add(1, Ordering::SeqCst);
                let args = [MAGIC, k, a.args[2]];
                let p = vec![k as u8; 64];
                let m = match cat {
                    0 => Message::short(20, &args),
                    1 => Message::medium(21, &args, &p),
                    _ => Message::long(22, &args, &p, 2048 + (k as u64 % 32) * 64),
                };
                am::reply(a.token, &m).unwrap();
            }),
        );
        let (l, b) = (ledgers.clone(), bad.clone());
        e.set_handler(
            20 + cat,
            handler(move |a| {
                let ok = a.args.len() == 3 && a.args[0] == MAGIC;
                match ok
                    .then(|| l.get(a.args[2] as usize))
                    .flatten()
                    .and_then(|l| Some((l, l.replied.get(a.args[1] as usize)?)))
                {
                    Some((l, c)) => {
                        c.fetch_add(1, Ordering::SeqCst);
                        l.replies.fetch_add(1, Ordering::SeqCst);
                    }
                    None => {
                        b.fetch_add(1, Ordering::SeqCst);
                    }
                }
            }),
        );
    }
}

/// One direction of the exchange: `from` sends to its entry `to` with the
/// ledger `id`; keeps at most WINDOW outstanding.
struct Flow {
    from: Arc<am::Endpoint>,
    to: u32,
    id: u32,
    ledger: Arc<Ledger>,
    next: u64,
}

impl Flow {
    /// Sends while fewer than WINDOW are outstanding, up to `upto` in all.
    fn pump(&mut self, upto: u64) {
        while self.next < upto.min(MAXN as u64) && self.next < self.ledger.replies() + WINDOW {
            let k = self.next as u32;
            let args = [MAGIC, k, self.id];
            let p = vec![k as u8; 64];
            let m = match k % 3 {
                0 => Message::short(10, &args),
                1 => Message::medium(11, &args, &p),
                _ => Message::long(12, &args, &p, (k as u64 % 32) * 64),
            };
            self.from.request(self.to, &m, false).unwrap();
            self.next += 1;
        }
    }
    fn done(&self) -> bool {
        self.ledger.replies() == self.next
    }
    fn check(&self) {
        for k in 0..self.next as usize {
            let (h, r) = (
                self.ledger.handled[k].load(Ordering::SeqCst),
                self.ledger.replied[k].load(Ordering::SeqCst),
            );
            assert!(
                h == 1 && r == 1,
                "flow {}: request {k} handled {h} times, its reply received {r} times",
                self.id
            );
        }
    }
}

/// Runs the exchange until every flow has sent `upto` and all are answered.
fn run_to(b: &Bundle, flows: &mut [Flow], upto: u64) {
    common::waiting_for("the real exchange under the flood");
    while !flows.iter().all(|f| f.next >= upto && f.done()) {
        for f in flows.iter_mut() {
            f.pump(upto);
        }
        b.poll().unwrap();
    }
}

#[test]
fn a_live_endpoint_keeps_serving_under_a_flood() {
    let _watchdog = common::watchdog(
        "hostile_flood::a_live_endpoint_keeps_serving_under_a_flood",
        Duration::from_secs(240),
    );
    let count = env_u64("RAMP_FLOOD", 200_000);
    let slack = env_u64("RAMP_FLOOD_RSS_SLACK_KIB", 2048);
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e0 = am::allocate_endpoint(&b).unwrap();
    let e1 = am::allocate_endpoint(&b).unwrap();
    let e2 = am::allocate_endpoint(&b).unwrap();
    let r0 = UdpSocket::bind("127.0.0.1:0").unwrap();
    let r1 = UdpSocket::bind("127.0.0.1:0").unwrap();
    let name = |s: &UdpSocket| EndpointName::from_addr(s.local_addr().unwrap());
    // e0: entry 1 is e1 (behind the relay), entry 2 is e2; e1 and e2 know
    // e0 as entry 0 (e1: the relay's other side)
    e0.map(1, name(&r0), TAG).unwrap();
    e0.map(2, e2.name(), TAG).unwrap();
    e1.map(0, name(&r1), TAG).unwrap();
    e2.map(0, e0.name(), TAG).unwrap();
    let segs = [
        VecSegment::new(4096),
        VecSegment::new(4096),
        VecSegment::new(4096),
    ];
    // ledgers: 0 e0->e1, 1 e1->e0, 2 e0->e2, 3 e2->e0
    let ls: Vec<Arc<Ledger>> = (0..4).map(|_| Ledger::new(MAXN)).collect();
    let bad = Arc::new(AtomicU64::new(0));
    for (e, seg) in [&e0, &e1, &e2].into_iter().zip(&segs) {
        e.set_tag(TAG);
        e.set_expected_resources(3, 8).unwrap();
        e.set_segment(Some(seg.clone()));
        handlers(e, ls.clone(), bad.clone());
    }
    let mut flows = vec![
        Flow {
            from: e0.clone(),
            to: 1,
            id: 0,
            ledger: ls[0].clone(),
            next: 0,
        },
        Flow {
            from: e1.clone(),
            to: 0,
            id: 1,
            ledger: ls[1].clone(),
            next: 0,
        },
        Flow {
            from: e0.clone(),
            to: 2,
            id: 2,
            ledger: ls[2].clone(),
            next: 0,
        },
        Flow {
            from: e2.clone(),
            to: 0,
            id: 3,
            ledger: ls[3].clone(),
            next: 0,
        },
    ];
    let cap: Captured = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let relay_t = {
        let (c, s, a0, a1) = (cap.clone(), stop.clone(), e0.addr(), e1.addr());
        std::thread::spawn(move || relay(r0, r1, a0, a1, c, s))
    };
    let targets = [e0.addr(), e1.addr(), e2.addr()];
    let restarted = e2.addr();

    // The forger: a warm-up flood, then the measured one, each started by
    // the main thread (RSS is read in between).
    let (go_tx, go_rx) = std::sync::mpsc::channel::<u64>();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<([u64; 8], Duration)>();
    let forger = {
        let cap = cap.clone();
        std::thread::spawn(move || {
            let socks: Vec<UdpSocket> = (0..64)
                .map(|_| {
                    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
                    s.set_nonblocking(true).unwrap();
                    s
                })
                .collect();
            let mut rng = Rng::new(0xF100D);
            while let Ok(n) = go_rx.recv() {
                let t = Instant::now();
                let k = flood(&socks, &targets, restarted, &cap, n, &mut rng);
                done_tx.send((k, t.elapsed())).unwrap();
            }
        })
    };
    // warm-up: a first exchange (captures), then a flood of a quarter size
    let t_start = Instant::now();
    run_to(&b, &mut flows, 300);
    go_tx.send(count / 4).unwrap();
    common::waiting_for("the warm-up flood to end");
    let (_, warm_took) = loop {
        // (the exchange goes on, a few at a time)
        for f in flows.iter_mut() {
            f.pump(WARM_REQUESTS);
        }
        b.poll().unwrap();
        if let Ok(r) = done_rx.try_recv() {
            break r;
        }
    };
    let most = flows.iter().map(|f| f.next).max().unwrap();
    run_to(&b, &mut flows, most);
    eprintln!(
        "flood: warm-up: {} datagrams in {:.2} s, {} real requests so far",
        count / 4,
        warm_took.as_secs_f64(),
        flows.iter().map(|f| f.next).sum::<u64>()
    );
    let rss_warm = rss_kib();
    let before: Vec<u64> = flows.iter().map(|f| f.next).collect();
    go_tx.send(count).unwrap();
    common::waiting_for("the flood to end");
    let (kinds, took) = loop {
        for f in flows.iter_mut() {
            f.pump(WARM_REQUESTS + FLOOD_REQUESTS);
        }
        b.poll().unwrap();
        if let Ok(r) = done_rx.try_recv() {
            break r;
        }
    };
    let most = flows.iter().map(|f| f.next).max().unwrap();
    run_to(&b, &mut flows, most);
    let under_fire: u64 = flows.iter().zip(&before).map(|(f, b)| f.next - b).sum();
    // a little quiet polling (what is left of the flood in the sockets
    // taken), then the figures
    for _ in 0..10_000 {
        b.poll().unwrap();
    }
    let rss_end = rss_kib();
    eprintln!("flood: the whole test took {:?}", t_start.elapsed());
    drop(go_tx);
    forger.join().unwrap();
    stop.store(true, Ordering::SeqCst);
    let (fwd, replays) = relay_t.join().unwrap();
    for _ in 0..100 {
        b.poll().unwrap();
    }

    let st: Vec<_> = [&e0, &e1, &e2].iter().map(|e| e.statistics()).collect();
    eprintln!(
        "flood: {count} datagrams in {:.2} s ({:.0}/s) by kind [random, truncated, replayed \
         other port, replayed to the restarted peer, forged DATA random tag, forged DATA real \
         tag, mutated+resealed, handshake/control] = {kinds:?}",
        took.as_secs_f64(),
        count as f64 / took.as_secs_f64()
    );
    eprintln!(
        "flood: relay forwarded {fwd}, replayed {replays} from the real addresses; real \
         requests: {} total, {under_fire} during the measured flood, each handled once and \
         answered once",
        flows.iter().map(|f| f.next).sum::<u64>()
    );
    for (i, s) in st.iter().enumerate() {
        eprintln!(
            "flood: e{i}: received {} packets, corrupt dropped {}, stale dropped {}, \
             duplicates dropped {}, retransmitted {}, returned {}",
            s.packets_received,
            s.corrupt_dropped,
            s.stale_dropped,
            s.duplicates_dropped,
            s.packets_retransmitted,
            s.returned_messages
        );
    }
    eprintln!(
        "flood: VmRSS after warm-up {rss_warm} KiB, after the flood {rss_end} KiB ({:+} KiB; \
         slack {slack} KiB)",
        rss_end as i64 - rss_warm as i64
    );

    for f in &flows {
        f.check();
    }
    assert_eq!(bad.load(Ordering::SeqCst), 0, "a handler ran for a forgery");
    assert_eq!(st.iter().map(|s| s.returned_messages).sum::<u64>(), 0);
    assert!(st
        .iter()
        .all(|s| s.stale_dropped > 0 && s.corrupt_dropped > 0));
    assert!(
        rss_end <= rss_warm + slack,
        "memory grew under the flood: {rss_warm} KiB -> {rss_end} KiB"
    );
}
