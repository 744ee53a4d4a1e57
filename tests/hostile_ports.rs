//! RSS with 50,000 distinct forged source ports: one datagram from each
//! of `RAMP_PORTS_COUNT` (default 50,000) distinct source ports (bound and
//! closed in turn, ports 10000 and up) to a live endpoint, half INITs, half
//! DATA with a guessed tag and a valid CRC, while the endpoint polls. The
//! endpoint keeps no state for any of them (the handshake is stateless and
//! DATA outside an association is dropped), so its process stays within
//! `RAMP_PORTS_RSS_SLACK_KIB` (default 4096) of the idle figure; a real
//! exchange still completes afterwards. The figures are printed
//! (`-- --nocapture`).

mod common;

use std::net::UdpSocket;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ramp::am::{self, handler, BundleMode, Message};
use ramp::sim::Rng;
use ramp::wire::{self, Category, Common, Integrity, MsgKind, MsgMeta};

const TAG: u64 = 77;
const I: Integrity = Integrity::Crc32c;

use common::{env_u64, rss_kib};

#[test]
fn rss_stays_flat_with_50000_forged_source_ports() {
    let _watchdog = common::watchdog(
        "hostile_ports::rss_stays_flat_with_50000_forged_source_ports",
        Duration::from_secs(180),
    );
    let want = env_u64("RAMP_PORTS_COUNT", 50_000);
    let slack = env_u64("RAMP_PORTS_RSS_SLACK_KIB", 4096);
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e0 = am::allocate_endpoint(&b).unwrap();
    let e1 = am::allocate_endpoint(&b).unwrap();
    for e in [&e0, &e1] {
        e.set_tag(TAG);
        e.map(0, e0.name(), TAG).unwrap();
        e.map(1, e1.name(), TAG).unwrap();
        e.set_expected_resources(2, 8).unwrap();
    }
    let pongs = Arc::new(AtomicU64::new(0));
    let forged = Arc::new(AtomicU64::new(0));
    e1.set_handler(
        10,
        handler(|a| am::reply(a.token, &Message::short(11, a.args)).unwrap()),
    );
    let p = pongs.clone();
    e0.set_handler(
        11,
        handler(move |_| {
            p.fetch_add(1, Ordering::SeqCst);
        }),
    );
    for e in [&e0, &e1] {
        for h in [0u8, 1, 2, 3, 9, 12, 200] {
            let f = forged.clone();
            e.set_handler(
                h,
                handler(move |_| {
                    f.fetch_add(1, Ordering::SeqCst);
                }),
            );
        }
    }
    let ping = |n: u64| {
        let start = pongs.load(Ordering::SeqCst);
        for k in 0..n {
            e0.request(1, &Message::short(10, &[k as u32]), false)
                .unwrap();
        }
        common::waiting_for("the exchange's answers");
        while pongs.load(Ordering::SeqCst) < start + n {
            b.poll().unwrap();
        }
    };
    // idle: the association is up, a warm-up of the same traffic from a
    // few hundred ports done (allocator and buffers at their working size)
    ping(100);
    let target = e0.addr();
    let mut rng = Rng::new(50_000);
    let send_from = |port: u16, rng: &mut Rng| -> bool {
        let Ok(s) = UdpSocket::bind(("127.0.0.1", port)) else {
            return false;
        };
        let mut d = Vec::new();
        if port.is_multiple_of(2) {
            wire::encode_init(&mut d, &I, rng.next_u64() | 1);
        } else {
            let c = Common {
                vtag: rng.next_u64(),
                channel: (port % 4 / 2) as u8,
                seq: rng.below(64) as u32,
                ..Default::default()
            };
            let mut m = MsgMeta::new(MsgKind::User, Category::Short, 12, &[port as u32]);
            m.tag = TAG;
            m.txn = rng.below(64) as u32;
            wire::encode_data(&mut d, &I, &c, &m, 0, 0, &[]);
        }
        s.send_to(&d, target).is_ok()
    };
    let received = |e: &am::Endpoint| e.statistics().packets_received;
    let mut port = 9000u16;
    for _ in 0..500 {
        send_from(port, &mut rng);
        port += 1;
        b.poll().unwrap();
    }
    for _ in 0..1000 {
        b.poll().unwrap();
    }
    ping(100);
    let rss_idle = rss_kib();
    let r0 = received(&e0);

    let t = Instant::now();
    let (mut sent, mut busy) = (0u64, 0u64);
    port = 10_000;
    while sent < want && port < u16::MAX {
        if send_from(port, &mut rng) {
            sent += 1;
        } else {
            busy += 1;
        }
        port += 1;
        // the endpoint reads as it goes (else the kernel would drop most)
        if sent.is_multiple_of(64) {
            b.poll().unwrap();
        }
    }
    let took = t.elapsed();
    // what waits in the socket taken: polled until polls find nothing new
    // (nobody else sends to e0 now)
    let mut quiet = 0;
    while quiet < 100 {
        let before = received(&e0);
        b.poll().unwrap();
        quiet = if received(&e0) == before {
            quiet + 1
        } else {
            0
        };
    }
    let got = received(&e0) - r0;
    let rss_after = rss_kib();
    ping(100);
    let s0 = e0.statistics();
    eprintln!(
        "ports: {sent} distinct source ports ({busy} ports in use skipped) in {:.2} s, half \
         INIT, half DATA with a guessed tag; the endpoint read {got} of them \
         (stale dropped {}, corrupt dropped {})",
        took.as_secs_f64(),
        s0.stale_dropped,
        s0.corrupt_dropped
    );
    eprintln!(
        "ports: VmRSS idle {rss_idle} KiB, after {rss_after} KiB ({:+} KiB; slack {slack} KiB)",
        rss_after as i64 - rss_idle as i64
    );
    assert!(sent >= want.min(50_000), "only {sent} ports could be bound");
    assert!(
        got >= sent * 9 / 10,
        "the endpoint read only {got} of {sent} datagrams: the test did not test"
    );
    assert_eq!(
        forged.load(Ordering::SeqCst),
        0,
        "a handler ran for a forgery"
    );
    assert_eq!(s0.returned_messages, 0);
    assert!(
        rss_after <= rss_idle + slack,
        "memory grew with the forged ports: {rss_idle} KiB -> {rss_after} KiB"
    );
}
