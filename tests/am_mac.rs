//! The job key's packet MAC over real UDP sockets: two endpoints with one
//! key exchange messages through a relay that checks every datagram
//! carries the MAC (handshake packets under the job key, the rest under
//! the association's key for its direction, derived from the tags the
//! relay reads in the handshake) and flips a bit in some DATA packets
//! (their tags intact): those are dropped and counted, the exchange stays
//! exactly-once. Different keys, or a key on one end only, never
//! associate: the requests come back with EUNREACHABLE.

mod common;

use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ramp::am::{self, handler, BundleMode, Data, EndpointName, Message, SegmentMemory};
use ramp::config::Config;
use ramp::wire::mac::MacKey;
use ramp::wire::{self, layout, Integrity, Packet};

const KEY_A: &str = "0123456789abcdef-job-A";
const KEY_B: &str = "0123456789abcdef-job-B";

fn config(key: Option<&str>, auth: Option<&str>) -> Config {
    Config::from_lookup(|k| match k {
        "RAMP_JOB_KEY" => key.map(str::to_string),
        "RAMP_AUTH" => auth.map(str::to_string),
        _ => None,
    })
    .unwrap()
}

/// `config` for an end that never associates: its requests fail after 5
/// retransmissions of at most 100 ms (not the default's many seconds).
fn config_quick_to_fail(key: Option<&str>, auth: Option<&str>) -> Config {
    let mut c = config(key, auth);
    c.proto.retry_limit = 5;
    c.proto.rto_max = 100 * ramp::time::MILLIS;
    c
}

/// What the relay saw.
#[derive(Default)]
struct Seen {
    job: u64,
    assoc: u64,
    flipped: u64,
    bad: u64,
}

/// The relay, joined, sent its last datagrams into `e1`'s socket (a
/// flipped copy of a fragment resent after the last message was handled
/// may be among them): `e1` reads until it has dropped the `flipped` ones
/// (the test's watchdog bounds a wait for one that never comes).
fn read_what_the_relay_passed_on(b: &am::Bundle, e1: &am::Endpoint, flipped: u64) {
    while e1.statistics().corrupt_dropped < flipped {
        b.poll().unwrap();
    }
}

/// Forwards e0 -> `a1` -> e1 and e1 -> `a0` -> e0 (so each end sees the
/// other at the relay's address), checking every datagram under `key`.
fn run_relay(
    key: &str,
    a0: UdpSocket,
    a1: UdpSocket,
    e0: std::net::SocketAddr,
    e1: std::net::SocketAddr,
    stop: Arc<AtomicBool>,
    flip: fn(u64, usize) -> Option<usize>,
) -> std::thread::JoinHandle<Seen> {
    let job = Integrity::job(&MacKey::from_job_key(key), [0; 12]);
    std::thread::spawn(move || {
        let mut seen = Seen::default();
        // tags: the INIT's (initiator, from e0) and the INIT_ACK's (responder)
        let (mut init_tag, mut resp_tag) = (0u64, 0u64);
        let mut keys: Option<(Integrity, Integrity)> = None;
        for s in [&a0, &a1] {
            s.set_read_timeout(Some(Duration::from_millis(1))).unwrap();
        }
        let mut buf = vec![0u8; 70000];
        let mut n_data = 0u64;
        while !stop.load(Ordering::SeqCst) {
            // a1 gets e0's datagrams (for e1), a0 gets e1's (for e0)
            for (from_e0, rx, tx, to) in [(true, &a1, &a0, e1), (false, &a0, &a1, e0)] {
                let Ok(n) = rx.recv(&mut buf) else { continue };
                let d = &mut buf[..n];
                // where each packet of the datagram lies (a bundle carries
                // several DATA, ACK, NACK; every one is checked)
                let mut spans = Vec::new();
                let mut off = 0;
                for p in wire::packets(&job, d) {
                    match p {
                        Ok(p) => {
                            spans.push((off, p.len()));
                            off += p.len();
                        }
                        Err(_) => {
                            seen.bad += 1;
                            break;
                        }
                    }
                }
                // at most one packet flipped per datagram: the receiver
                // counts the first bad one and drops the rest unframed
                let mut flipped = false;
                for (at, n) in spans {
                    let d = &mut d[at..at + n];
                    if let Ok(p) = wire::decode(&job, d) {
                        seen.job += 1;
                        match p {
                            Packet::Init { init_tag: t, .. } => init_tag = t,
                            Packet::InitAck { resp_tag: t, .. } => resp_tag = t,
                            Packet::Data { .. }
                            | Packet::More { .. }
                            | Packet::Ack { .. }
                            | Packet::Nack { .. } => seen.bad += 1,
                            _ => {}
                        }
                        if init_tag != 0 && resp_tag != 0 && keys.is_none() {
                            // e0's (sealing, opening) keys: the initiator's tag is its own
                            keys = Some(job.for_association(init_tag, resp_tag));
                        }
                    } else {
                        let ok = keys.as_ref().is_some_and(|(e0_tx, e0_rx)| {
                            let k = if from_e0 { e0_tx } else { e0_rx };
                            matches!(
                                wire::decode(k, d),
                                Ok(Packet::Data { .. }
                                    | Packet::More { .. }
                                    | Packet::Ack { .. }
                                    | Packet::Nack { .. })
                            )
                        });
                        if ok {
                            seen.assoc += 1;
                        } else {
                            seen.bad += 1;
                        }
                        if from_e0 && d[layout::TYPE_AT] == wire::PacketType::Data as u8 {
                            n_data += 1;
                            if let Some(at) = flip(n_data, n).filter(|_| !flipped) {
                                d[at] ^= 0x04;
                                seen.flipped += 1;
                                flipped = true;
                            }
                        }
                    }
                }
                tx.send_to(d, to).unwrap();
            }
        }
        seen
    })
}

#[test]
fn same_key_every_packet_carries_the_mac_and_flipped_ones_are_dropped() {
    let _watchdog = common::watchdog(
        "am_mac::same_key_every_packet_carries_the_mac_and_flipped_ones_are_dropped",
        Duration::from_secs(120),
    );
    am::init().unwrap();
    let cfg = config(Some(KEY_A), None);
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e0 = am::allocate_endpoint_with(&b, &cfg).unwrap();
    let e1 = am::allocate_endpoint_with(&b, &cfg).unwrap();
    let a0 = UdpSocket::bind("127.0.0.1:0").unwrap();
    let a1 = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (addr0, addr1) = (a0.local_addr().unwrap(), a1.local_addr().unwrap());
    // e0 reaches e1 at a1, e1 reaches e0 at a0
    e0.set_tag(5);
    e1.set_tag(5);
    e0.map(1, EndpointName::from_addr(addr1), 5).unwrap();
    e1.map(0, EndpointName::from_addr(addr0), 5).unwrap();
    for e in [&e0, &e1] {
        e.set_expected_resources(2, 8).unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let r = run_relay(
        KEY_A,
        a0,
        a1,
        e0.name().to_addr().unwrap(),
        e1.name().to_addr().unwrap(),
        stop.clone(),
        // every fifth DATA: a payload (or header) bit, tags left intact
        |n_data, n| {
            n_data
                .is_multiple_of(5)
                .then(|| 40 + (n_data as usize * 7) % (n - 40 - 28))
        },
    );
    let n = 60u32;
    let handled = Arc::new(parking_lot::Mutex::new(vec![0u32; n as usize]));
    let h2 = handled.clone();
    e1.set_handler(
        20,
        handler(move |h| {
            let k = h.args[0];
            if let Data::Medium(buf) = &mut h.data {
                assert_eq!(buf.len(), (k as usize * 131) % 3000);
                assert!(buf.iter().all(|&x| x == k as u8));
            }
            h2.lock()[k as usize] += 1;
            am::reply(h.token, &Message::short(21, &[k])).unwrap();
        }),
    );
    let replies = Arc::new(AtomicU64::new(0));
    let r2 = replies.clone();
    e0.set_handler(
        21,
        handler(move |_| {
            r2.fetch_add(1, Ordering::SeqCst);
        }),
    );
    e0.set_handler(0, handler(|h| panic!("returned: {:?}", h.args)));
    for k in 0..n {
        let payload = vec![k as u8; (k as usize * 131) % 3000];
        e0.request(1, &Message::medium(20, &[k], &payload), false)
            .unwrap();
    }
    common::waiting_for("the replies");
    while replies.load(Ordering::SeqCst) < n as u64 {
        b.poll().unwrap();
    }
    stop.store(true, Ordering::SeqCst);
    let seen = r.join().unwrap();
    assert!(handled.lock().iter().all(|&c| c == 1), "exactly once");
    assert_eq!(seen.bad, 0, "a datagram without the right MAC");
    assert!(seen.job >= 4, "handshake: {}", seen.job);
    assert!(seen.assoc >= n as u64 * 2, "association: {}", seen.assoc);
    assert!(seen.flipped >= 5);
    read_what_the_relay_passed_on(&b, &e1, seen.flipped);
    assert_eq!(e1.statistics().corrupt_dropped, seen.flipped);
    assert_eq!(e0.statistics().corrupt_dropped, 0);
}

/// Long messages of 60 KiB under the MAC travel in large fragments whose
/// payload is sent gathered, where it lies (`Integrity::seal_gathered`):
/// every third large DATA packet gets one payload byte changed by the
/// relay (header and trailer intact); each is dropped and counted, resent,
/// and every message lands in the segment whole, exactly once.
#[test]
fn a_changed_payload_byte_of_a_large_gathered_packet_is_refused() {
    let _watchdog = common::watchdog(
        "am_mac::a_changed_payload_byte_of_a_large_gathered_packet_is_refused",
        Duration::from_secs(120),
    );
    am::init().unwrap();
    let cfg = config(Some(KEY_A), None);
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e0 = am::allocate_endpoint_with(&b, &cfg).unwrap();
    let e1 = am::allocate_endpoint_with(&b, &cfg).unwrap();
    let a0 = UdpSocket::bind("127.0.0.1:0").unwrap();
    let a1 = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (addr0, addr1) = (a0.local_addr().unwrap(), a1.local_addr().unwrap());
    e0.set_tag(5);
    e1.set_tag(5);
    e0.map(1, EndpointName::from_addr(addr1), 5).unwrap();
    e1.map(0, EndpointName::from_addr(addr0), 5).unwrap();
    for e in [&e0, &e1] {
        e.set_expected_resources(2, 8).unwrap();
    }
    const LEN: usize = 60 << 10;
    let seg = am::VecSegment::new(LEN);
    e1.set_segment(Some(seg.clone()));
    let stop = Arc::new(AtomicBool::new(false));
    let r = run_relay(
        KEY_A,
        a0,
        a1,
        e0.name().to_addr().unwrap(),
        e1.name().to_addr().unwrap(),
        stop.clone(),
        // a large packet's payload byte: past the header and arguments
        // (at most 32 + 36 + 64 bytes), before the trailer (28)
        |n_data, n| {
            (n > 4096 && n_data % 3 == 0).then(|| 200 + (n_data as usize * 977) % (n - 400))
        },
    );
    let n = 12u32;
    let handled = Arc::new(parking_lot::Mutex::new(vec![0u32; n as usize]));
    let h2 = handled.clone();
    e1.set_handler(
        30,
        handler(move |h| {
            let k = h.args[0];
            let Data::Long { addr, len } = h.data else {
                panic!("not a long message")
            };
            assert_eq!(len, LEN);
            // the handler runs with the whole message in the segment
            let _ = addr;
            h2.lock()[k as usize] += 1;
        }),
    );
    e0.set_handler(0, handler(|h| panic!("returned: {:?}", h.args)));
    let seg_check = seg.clone();
    for k in 0..n {
        let payload: Vec<u8> = (0..LEN).map(|i| (i as u32 * 7 + k) as u8).collect();
        e0.request(1, &Message::long(30, &[k], &payload, 0), false)
            .unwrap();
        common::waiting_for("the long request's handler");
        while handled.lock()[k as usize] == 0 {
            b.poll().unwrap();
        }
        assert!(
            seg_check.read(0, LEN) == payload,
            "message {k} in the segment whole"
        );
    }
    stop.store(true, Ordering::SeqCst);
    let seen = r.join().unwrap();
    assert!(handled.lock().iter().all(|&c| c == 1), "exactly once");
    assert_eq!(seen.bad, 0, "a datagram without the right MAC");
    assert!(seen.flipped >= 4, "flipped {}", seen.flipped);
    read_what_the_relay_passed_on(&b, &e1, seen.flipped);
    assert_eq!(e1.statistics().corrupt_dropped, seen.flipped);
}

/// Requests from an endpoint configured `a` to one configured `b` come back
/// with EUNREACHABLE; nothing reaches the handler.
fn never_associate(a: &Config, b_cfg: &Config) {
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e0 = am::allocate_endpoint_with(&b, a).unwrap();
    let e1 = am::allocate_endpoint_with(&b, b_cfg).unwrap();
    for e in [&e0, &e1] {
        e.set_tag(3);
        e.map(0, e0.name(), 3).unwrap();
        e.map(1, e1.name(), 3).unwrap();
        e.set_expected_resources(2, 4).unwrap();
    }
    e1.set_handler(20, handler(|_| panic!("handled across keys")));
    let returned = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let r = returned.clone();
    e0.set_handler(
        0,
        handler(move |h| {
            if let Data::Returned { status, .. } = h.data {
                r.lock().push(status);
            }
        }),
    );
    for k in 0..3 {
        e0.request(1, &Message::short(20, &[k]), false).unwrap();
    }
    common::waiting_for("the requests to come back EUNREACHABLE");
    while returned.lock().len() < 3 {
        b.poll().unwrap();
    }
    let st = returned.lock().clone();
    assert!(
        st.iter()
            .all(|s| format!("{s:?}").to_uppercase().contains("UNREACHABLE")),
        "{st:?}"
    );
    assert!(
        e1.statistics().corrupt_dropped >= 3,
        "{:?}",
        e1.statistics()
    );
}

#[test]
fn different_keys_never_associate() {
    let _watchdog = common::watchdog(
        "am_mac::different_keys_never_associate",
        Duration::from_secs(120),
    );
    never_associate(
        &config_quick_to_fail(Some(KEY_A), None),
        &config_quick_to_fail(Some(KEY_B), None),
    );
}

#[test]
fn key_on_one_end_only_never_associates() {
    let _watchdog = common::watchdog(
        "am_mac::key_on_one_end_only_never_associates",
        Duration::from_secs(120),
    );
    never_associate(
        &config_quick_to_fail(Some(KEY_A), None),
        &config_quick_to_fail(None, None),
    );
    never_associate(
        &config_quick_to_fail(None, None),
        &config_quick_to_fail(Some(KEY_A), None),
    );
    // RAMP_AUTH=off with a key: CRC32C, as a key-less end
    never_associate(
        &config_quick_to_fail(Some(KEY_A), None),
        &config_quick_to_fail(Some(KEY_A), Some("off")),
    );
}

#[test]
fn auth_off_on_both_ends_exchanges_with_the_crc() {
    let _watchdog = common::watchdog(
        "am_mac::auth_off_on_both_ends_exchanges_with_the_crc",
        Duration::from_secs(120),
    );
    am::init().unwrap();
    let cfg = config(Some(KEY_A), Some("off"));
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e0 = am::allocate_endpoint_with(&b, &cfg).unwrap();
    let e1 = am::allocate_endpoint_with(&b, &cfg).unwrap();
    for e in [&e0, &e1] {
        e.set_tag(4);
        e.map(0, e0.name(), 4).unwrap();
        e.map(1, e1.name(), 4).unwrap();
        e.set_expected_resources(2, 4).unwrap();
    }
    e1.set_handler(
        20,
        handler(|h| am::reply(h.token, &Message::short(21, &[h.args[0]])).unwrap()),
    );
    let replies = Arc::new(AtomicU64::new(0));
    let r = replies.clone();
    e0.set_handler(
        21,
        handler(move |_| {
            r.fetch_add(1, Ordering::SeqCst);
        }),
    );
    e0.set_handler(0, handler(|h| panic!("returned: {:?}", h.args)));
    e0.request(1, &Message::short(20, &[1]), false).unwrap();
    common::waiting_for("the reply");
    while replies.load(Ordering::SeqCst) < 1 {
        b.poll().unwrap();
    }
    // (that this is the CRC32C and not the MAC: key_on_one_end_only_never_associates)
    assert_eq!(e1.statistics().corrupt_dropped, 0);
}
