//! Unit tests of `codec.rs`.

use super::*;

const I: Integrity = Integrity::Crc32c;

fn sample_common() -> Common {
    Common {
        vtag: 0xdead_beef_0000_0007,
        channel: 1,
        epoch: 3,
        seq: 42,
        acks: [
            AckField {
                valid: true,
                epoch: 1,
                next: 9,
            },
            AckField::default(),
        ],
    }
}

#[test]
fn data_round_trip_every_arity() {
    for n in 0..=MAX_ARGS {
        let args: Vec<u32> = (0..n as u32).map(|k| 0xBABE_7001 + k).collect();
        let mut meta = MsgMeta::new(MsgKind::User, Category::Medium, 200, &args);
        meta.tag = 0x1234_5678_9abc_def0;
        meta.dest_offset = 77;
        meta.txn = 5;
        let payload: Vec<u8> = (0..n * 3).map(|i| i as u8).collect();
        let mut buf = Vec::new();
        encode_data(&mut buf, &I, &sample_common(), &meta, 1000, 10, &payload);
        match decode(&I, &buf).unwrap() {
            Packet::Data {
                common,
                meta: m,
                msg_len,
                frag_off,
                payload: p,
            } => {
                assert_eq!(common, sample_common());
                assert_eq!(m, meta);
                assert_eq!((msg_len, frag_off), (1000, 10));
                assert_eq!(p, &payload[..]);
            }
            other => panic!("not data: {other:?}"),
        }
    }
}

#[test]
fn a_gathered_data_packet_is_the_contiguous_one_in_pieces() {
    for n in [0usize, 3, MAX_ARGS] {
        let args: Vec<u32> = (0..n as u32).map(|k| 0xC0DE_0000 + k).collect();
        let meta = MsgMeta::new(MsgKind::User, Category::Long, 9, &args);
        let payload: Vec<u8> = (0..5000u32).map(|i| (i * 7) as u8).collect();
        let mut whole = vec![0xAA; 5]; // after an earlier datagram
        encode_data(
            &mut whole,
            &I,
            &sample_common(),
            &meta,
            9000,
            4000,
            &payload,
        );
        let mut buf = vec![0xAA; 5];
        let trailer =
            encode_data_gathered(&mut buf, &I, &sample_common(), &meta, 9000, 4000, &payload);
        let joined = [&buf[..trailer], &payload[..], &buf[trailer..]].concat();
        assert_eq!(joined, whole);
        assert!(decode(&I, &joined[5..]).is_ok());
    }
    // Under a MAC too: the gathered packet decodes (its own nonce), and a
    // payload byte changed in flight is refused.
    let key = crate::wire::mac::MacKey::from_job_key("0123456789abcdef0123456789abcdef");
    let mac = Integrity::job(&key, [3; 12]);
    let meta = MsgMeta::new(MsgKind::User, Category::Long, 9, &[1, 2]);
    let payload: Vec<u8> = (0..3000u32).map(|i| (i * 5) as u8).collect();
    let mut buf = vec![1, 2];
    let t = encode_data_gathered(&mut buf, &mac, &sample_common(), &meta, 3000, 0, &payload);
    let joined = [&buf[2..t], &payload[..], &buf[t..]].concat();
    match decode(&mac, &joined) {
        Ok(Packet::Data { payload: p, .. }) => assert_eq!(p, &payload[..]),
        other => panic!("{other:?}"),
    }
    let mut f = joined.clone();
    f[t - 2 + 1500] ^= 1;
    assert_eq!(decode(&mac, &f), Err(DecodeError::Checksum));
}

#[test]
fn ack_and_nack_round_trip() {
    let mut buf = Vec::new();
    encode_ack(&mut buf, &I, &sample_common(), 0xf0f0);
    assert_eq!(
        decode(&I, &buf).unwrap(),
        Packet::Ack {
            common: sample_common(),
            sack: 0xf0f0,
            dup: None
        }
    );
    buf.clear();
    encode_ack_dup(&mut buf, &I, &sample_common(), 3, Some(77));
    assert_eq!(
        decode(&I, &buf).unwrap(),
        Packet::Ack {
            common: sample_common(),
            sack: 3,
            dup: Some(77)
        }
    );
    for last in [false, true] {
        buf.clear();
        encode_nack(&mut buf, &I, &sample_common(), last);
        assert_eq!(
            decode(&I, &buf).unwrap(),
            Packet::Nack {
                common: sample_common(),
                last
            }
        );
    }
}

#[test]
fn every_single_bit_flip_and_truncation_is_rejected() {
    let meta = MsgMeta::new(MsgKind::User, Category::Short, 3, &[1, 2, 3]);
    let mut buf = Vec::new();
    encode_data(&mut buf, &I, &sample_common(), &meta, 5, 0, b"hello");
    for i in 0..buf.len() * 8 {
        let mut b = buf.clone();
        b[i / 8] ^= 1 << (i % 8);
        assert!(decode(&I, &b).is_err(), "bit {i} flip accepted");
    }
    for len in 0..buf.len() {
        assert!(
            decode(&I, &buf[..len]).is_err(),
            "truncation to {len} accepted"
        );
    }
}

#[test]
fn garbage_never_panics() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for len in 0..300 {
        let v: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let _ = decode(&I, &v);
    }
}

#[test]
fn handshake_round_trip_and_init_is_never_smaller_than_its_answer() {
    let cookie = [0xa5u8; COOKIE_LEN];
    let mut init = Vec::new();
    encode_init(&mut init, &I, 42);
    let mut ack = Vec::new();
    encode_init_ack(&mut ack, &I, 42, 77, &cookie);
    assert!(init.len() >= ack.len(), "{} < {}", init.len(), ack.len());
    assert_eq!(decode(&I, &init).unwrap(), Packet::Init { init_tag: 42 });
    assert_eq!(
        decode(&I, &ack).unwrap(),
        Packet::InitAck {
            vtag: 42,
            resp_tag: 77,
            cookie: &cookie
        }
    );
    let mut b = Vec::new();
    encode_cookie_echo(&mut b, &I, 77, &cookie);
    assert_eq!(
        decode(&I, &b).unwrap(),
        Packet::CookieEcho {
            vtag: 77,
            cookie: &cookie
        }
    );
    b.clear();
    encode_cookie_ack(&mut b, &I, 42);
    assert_eq!(decode(&I, &b).unwrap(), Packet::CookieAck { vtag: 42 });
    b.clear();
    encode_abort(&mut b, &I, 9);
    assert_eq!(decode(&I, &b).unwrap(), Packet::Abort { vtag: 9 });
    for ack in [false, true] {
        b.clear();
        encode_heartbeat(&mut b, &I, 11, ack, 0xfeed);
        let (vtag, nonce) = (11, 0xfeed);
        let want = if ack {
            Packet::HeartbeatAck { vtag, nonce }
        } else {
            Packet::Heartbeat { vtag, nonce }
        };
        assert_eq!(decode(&I, &b).unwrap(), want);
        b.clear();
        encode_shutdown(&mut b, &I, 11, ack, 0xfeed);
        let want = if ack {
            Packet::ShutdownAck { vtag, nonce }
        } else {
            Packet::Shutdown { vtag, nonce }
        };
        assert_eq!(decode(&I, &b).unwrap(), want);
        b.truncate(b.len() - 5);
        assert!(decode(&I, &b).is_err(), "short");
    }
    b.clear();
    encode_shutdown(&mut b, &I, 0, false, 1);
    assert_eq!(
        decode(&I, &b),
        Err(DecodeError::Malformed),
        "shutdown tag 0"
    );
    b.clear();
    encode_init(&mut b, &I, 0);
    assert_eq!(decode(&I, &b), Err(DecodeError::Malformed), "tag 0");
}

/// The send side's cost per byte of a 64 KiB fragment under the packet
/// MAC: encoded whole (the payload copied, then the MAC) against gathered
/// (the MAC over the pieces, no copy); and the CRC32C's. A figure, not a
/// check: `cargo test --release --lib -- --ignored --nocapture send_cost`.
#[test]
#[ignore]
fn send_cost_per_byte_whole_and_gathered() {
    let key = crate::wire::mac::MacKey::from_job_key("0123456789abcdef0123456789abcdef");
    let (mac, _) = Integrity::job(&key, [3; 12]).for_association(1, 2);
    let meta = MsgMeta::new(MsgKind::User, Category::Long, 9, &[]);
    let payload = vec![0x5au8; 65_000];
    let mut buf = Vec::with_capacity(70_000);
    let rounds = 20_000;
    for (name, integ) in [("MAC", &mac), ("CRC32C", &I)] {
        let mut best = [f64::MAX; 2];
        for _ in 0..3 {
            for (i, gathered) in [false, true].into_iter().enumerate() {
                let t = std::time::Instant::now();
                for _ in 0..rounds {
                    buf.clear();
                    if gathered {
                        let c = sample_common();
                        std::hint::black_box(encode_data_gathered(
                            &mut buf, integ, &c, &meta, 65_000, 0, &payload,
                        ));
                    } else {
                        encode_data(
                            &mut buf,
                            integ,
                            &sample_common(),
                            &meta,
                            65_000,
                            0,
                            &payload,
                        );
                    }
                    std::hint::black_box(&buf);
                }
                let ns = t.elapsed().as_nanos() as f64 / (rounds as f64 * 65_000.0);
                best[i] = best[i].min(ns);
            }
        }
        println!(
            "{name}: encoded whole {:.3} ns/byte, gathered {:.3} ns/byte",
            best[0], best[1]
        );
    }
}
