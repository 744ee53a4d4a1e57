//! The end of an association under a hostile sender, over real sockets: a
//! plain UDP socket opens associations of its own with a live endpoint and
//! tries to bring them back after their end by replaying its COOKIE_ECHO
//! (after an ABORT, after a SHUTDOWN exchange), and forges SHUTDOWNs
//! (guessed tags; the right tag from another port; a flood) at an
//! association it holds: none may end it, nothing may be re-created, the
//! answers to a flood stay within the rate limit, and the endpoint keeps
//! serving its real peer, nothing lost or run twice.

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ramp::am::{self, handler, BundleMode, Message};
use ramp::wire::{self, Integrity, Packet};

const I: Integrity = Integrity::Crc32c;

/// Runs the handshake from `s` with `to` offering `my_tag`, sending the
/// INIT again after each read timeout for as long as it takes (the test's
/// watchdog limits it): returns its tag and the COOKIE_ECHO sent.
fn handshake(s: &UdpSocket, to: SocketAddr, my_tag: u64) -> (u64, Vec<u8>) {
    let mut init = Vec::new();
    wire::encode_init(&mut init, &I, my_tag);
    let mut buf = [0u8; 2048];
    loop {
        s.send_to(&init, to).unwrap();
        let Ok((n, _)) = s.recv_from(&mut buf) else {
            continue;
        };
        if let Ok(Packet::InitAck {
            vtag,
            resp_tag,
            cookie,
            ..
        }) = wire::decode(&I, &buf[..n])
        {
            assert_eq!(vtag, my_tag);
            let mut echo = Vec::new();
            wire::encode_cookie_echo(&mut echo, &I, resp_tag, cookie);
            s.send_to(&echo, to).unwrap();
            assert_eq!(
                answers(s, to).cookie_acks,
                1,
                "no COOKIE_ACK for the first echo"
            );
            return (resp_tag, echo);
        }
    }
}

#[derive(Default, Debug)]
struct Answers {
    cookie_acks: u64,
    shutdown_acks: Vec<(u64, u64)>,
    heartbeat_acks: Vec<u64>,
    other: u64,
}

/// What came back to `s` (its read timeout set) for everything it sent to
/// `to` so far, whatever the speed: it sends a probe, an INIT with a tag
/// of its own (always answered: the handshake keeps no state), and reads
/// until the probe's INIT_ACK comes. The endpoint takes `s`'s datagrams
/// in the order sent and answers in the order taken, so the answer to
/// anything sent before the probe came before the probe's. The probe goes
/// again after each read timeout (it may have met a full socket or the
/// rate limit).
fn answers(s: &UdpSocket, to: SocketAddr) -> Answers {
    static PROBE: AtomicU64 = AtomicU64::new(0x7000_0000_0000_0001);
    let probe = PROBE.fetch_add(2, Ordering::SeqCst);
    let init = packet(|b| wire::encode_init(b, &I, probe));
    let mut a = Answers::default();
    let mut buf = [0u8; 2048];
    s.send_to(&init, to).unwrap();
    loop {
        let Ok((n, _)) = s.recv_from(&mut buf) else {
            s.send_to(&init, to).unwrap();
            continue;
        };
        match wire::decode(&I, &buf[..n]) {
            Ok(Packet::InitAck { vtag, .. }) if vtag == probe => return a,
            Ok(Packet::CookieAck { .. }) => a.cookie_acks += 1,
            Ok(Packet::ShutdownAck { vtag, nonce }) => a.shutdown_acks.push((vtag, nonce)),
            Ok(Packet::HeartbeatAck { vtag, .. }) => a.heartbeat_acks.push(vtag),
            _ => a.other += 1,
        }
    }
}

fn packet(f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut b = Vec::new();
    f(&mut b);
    b
}

/// Whether the association (`theirs`) still stands: a HEARTBEAT is answered.
fn alive(s: &UdpSocket, to: SocketAddr, theirs: u64, mine: u64) -> bool {
    s.send_to(
        &packet(|b| wire::encode_heartbeat(b, &I, theirs, false, 7)),
        to,
    )
    .unwrap();
    answers(s, to).heartbeat_acks.contains(&mine)
}

#[test]
fn ended_associations_stay_ended_and_forged_shutdowns_end_nothing() {
    let _watchdog = common::watchdog(
        "hostile_shutdown::ended_associations_stay_ended_and_forged_shutdowns_end_nothing",
        Duration::from_secs(120),
    );
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e0 = am::allocate_endpoint(&b).unwrap();
    let e1 = am::allocate_endpoint(&b).unwrap();
    for e in [&e0, &e1] {
        e.set_tag(5);
        e.map(0, e0.name(), 5).unwrap();
        e.map(1, e1.name(), 5).unwrap();
        e.set_expected_resources(2, 8).unwrap();
    }
    const N: usize = 200;
    let handled: Arc<Vec<AtomicU64>> = Arc::new((0..N).map(|_| AtomicU64::new(0)).collect());
    let replied = Arc::new(AtomicU64::new(0));
    let h = handled.clone();
    e1.set_handler(
        10,
        handler(move |a| {
            h[a.args[0] as usize % N].fetch_add(1, Ordering::SeqCst);
            am::reply(a.token, &Message::short(11, &[a.args[0]])).unwrap();
        }),
    );
    let r = replied.clone();
    e0.set_handler(
        11,
        handler(move |_| {
            r.fetch_add(1, Ordering::SeqCst);
        }),
    );
    let returned = Arc::new(AtomicU64::new(0));
    for e in [&e0, &e1] {
        let rt = returned.clone();
        e.set_handler(
            0,
            handler(move |_| {
                rt.fetch_add(1, Ordering::SeqCst);
            }),
        );
    }
    let a0 = e0.addr();
    let done = Arc::new(AtomicBool::new(false));
    let d = done.clone();
    let attacker = std::thread::spawn(move || {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        s.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let other = UdpSocket::bind("127.0.0.1:0").unwrap();
        other
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();

        // 1. ended by its ABORT, then its COOKIE_ECHO again: no COOKIE_ACK
        let mine = 0x1111_2222_3333_4444;
        let (theirs, echo) = handshake(&s, a0, mine);
        s.send_to(&packet(|b| wire::encode_abort(b, &I, theirs)), a0)
            .unwrap();
        s.send_to(&echo, a0).unwrap();
        let a = answers(&s, a0);
        assert_eq!(a.cookie_acks, 0, "re-created after ABORT: {a:?}");
        assert!(!alive(&s, a0, theirs, mine));

        // 2. ended by a SHUTDOWN exchange, then the echo again
        let mine = 0x5555_6666_7777_8888;
        let (theirs, echo) = handshake(&s, a0, mine);
        s.send_to(
            &packet(|b| wire::encode_shutdown(b, &I, theirs, false, 1)),
            a0,
        )
        .unwrap();
        let a = answers(&s, a0);
        assert_eq!(a.shutdown_acks, vec![(mine, 1)], "{a:?}");
        s.send_to(&echo, a0).unwrap();
        let a = answers(&s, a0);
        assert_eq!(a.cookie_acks, 0, "re-created after SHUTDOWN: {a:?}");
        assert!(!alive(&s, a0, theirs, mine));

        // 3. forged SHUTDOWNs at a live association end nothing
        let mine = 0x9999_aaaa_bbbb_cccc;
        let (theirs, _) = handshake(&s, a0, mine);
        let mut g = 0x9e37_79b9_7f4a_7c15u64;
        for k in 0..10_000u64 {
            g ^= g << 13;
            g ^= g >> 7;
            g ^= g << 17;
            // guessed tags from its address
            let _ = s.send_to(&packet(|b| wire::encode_shutdown(b, &I, g, false, k)), a0);
            // the right tag from another port
            let _ = other.send_to(
                &packet(|b| wire::encode_shutdown(b, &I, theirs, false, k + 1)),
                a0,
            );
            // its own tag reflected, and SHUTDOWN_ACKs nobody asked for
            let _ = s.send_to(
                &packet(|b| wire::encode_shutdown(b, &I, mine, false, k)),
                a0,
            );
            let _ = s.send_to(
                &packet(|b| wire::encode_shutdown(b, &I, theirs, true, k)),
                a0,
            );
        }
        let on_s = answers(&s, a0);
        let on_other = answers(&other, a0);
        assert!(on_s.shutdown_acks.is_empty(), "{on_s:?}");
        assert!(alive(&s, a0, theirs, mine), "a forged SHUTDOWN ended it");
        d.store(true, Ordering::SeqCst);
        on_other.shutdown_acks.len()
    });

    // The endpoint polls, and serves a real peer all along.
    common::waiting_for("the attacker's checks and the real exchange");
    let mut k = 0;
    while !attacker.is_finished() || (replied.load(Ordering::SeqCst) as usize) < k {
        if k < N && !done.load(Ordering::SeqCst) {
            e0.request(1, &Message::short(10, &[k as u32]), false)
                .unwrap();
            k += 1;
        }
        b.poll().unwrap();
        std::thread::sleep(Duration::from_micros(200));
    }
    let reflected = attacker.join().expect("the attacker's checks failed");
    eprintln!("{k} real requests; 10000 SHUTDOWNs from an unassociated port: {reflected} answers");
    assert!(reflected <= 4096, "{reflected} answers");
    for (i, c) in handled.iter().enumerate().take(k) {
        assert_eq!(c.load(Ordering::SeqCst), 1, "request {i}");
    }
    assert_eq!(replied.load(Ordering::SeqCst) as usize, k);
    assert_eq!(returned.load(Ordering::SeqCst), 0, "handler 0 ran");
}
