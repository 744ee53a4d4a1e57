//! Unit tests of encoding, framing and decoding (`encode.rs`, `frame.rs`,
//! `decode.rs`).
#![allow(clippy::single_range_in_vec_init)] // a walk of one packet

use super::layout::{FRAG_LEN_AT, NARGS_AT, PORT_AT, VERSION_AT, VTAG_AT};
use super::*;

const I: Integrity = Integrity::Crc32c;

/// A common header with an ACK of the request channel (`more_tests` too).
pub(super) fn sample_common() -> Common {
    Common {
        vtag: 0xdead_beef_0000_0007,
        channel: 1,
        epoch: 3,
        seq: 42,
        unordered: false,
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
        let piece = PayloadPiece::plain(&payload);
        let trailer =
            encode_data_gathered(&mut buf, &I, &sample_common(), &meta, 9000, 4000, piece);
        let joined = [&buf[..trailer], &payload[..], &buf[trailer..]].concat();
        assert_eq!(joined, whole);
        assert!(decode(&I, &joined[5..]).is_ok());
    }
    // The same from a payload copied with its block sums, for pieces
    // starting and ending inside blocks and on their edges: the trailer is
    // the one summed directly, and a byte changed is refused.
    let meta = MsgMeta::new(MsgKind::User, Category::Long, 9, &[4]);
    let src: Vec<u8> = (0..70_000u32).map(|i| (i * 13 + i / 251) as u8).collect();
    let (mut copy, mut sums) = (Vec::new(), Vec::new());
    crate::wire::copy_summed(&mut copy, &src, &mut sums);
    assert_eq!(copy, src);
    for (off, len) in [
        (0, 65_000),
        (100, 8192),
        (4096, 8192),
        (5000, 60_000),
        (69_000, 1000),
    ] {
        let mut whole = Vec::new();
        let p = &src[off..off + len];
        encode_data(
            &mut whole,
            &I,
            &sample_common(),
            &meta,
            70_000,
            off as u32,
            p,
        );
        let mut buf = Vec::new();
        let piece = PayloadPiece::summed(&copy, &sums, off, len);
        let t = encode_data_gathered(
            &mut buf,
            &I,
            &sample_common(),
            &meta,
            70_000,
            off as u32,
            piece,
        );
        let joined = [&buf[..t], p, &buf[t..]].concat();
        assert_eq!(joined, whole, "{len} bytes at {off}");
        let mut f = joined.clone();
        f[t + len / 2] ^= 0x10;
        assert_eq!(decode(&I, &f), Err(DecodeError::Checksum));
    }
    // Under a MAC too: the gathered packet decodes (its own nonce), and a
    // payload byte changed in flight is refused.
    let key = crate::wire::mac::MacKey::from_job_key("0123456789abcdef0123456789abcdef");
    let mac = Integrity::job(&key, [3; 12]);
    let meta = MsgMeta::new(MsgKind::User, Category::Long, 9, &[1, 2]);
    let payload: Vec<u8> = (0..3000u32).map(|i| (i * 5) as u8).collect();
    let mut buf = vec![1, 2];
    let piece = PayloadPiece::plain(&payload);
    let t = encode_data_gathered(&mut buf, &mac, &sample_common(), &meta, 3000, 0, piece);
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
    assert_eq!(
        decode(&I, &init).unwrap(),
        Packet::Init {
            init_tag: 42,
            addrs: Addrs::NONE
        }
    );
    assert_eq!(
        decode(&I, &ack).unwrap(),
        Packet::InitAck {
            vtag: 42,
            resp_tag: 77,
            cookie: &cookie,
            addrs: Addrs::NONE
        }
    );
    let mut b = Vec::new();
    encode_cookie_echo(&mut b, &I, 77, &cookie);
    assert_eq!(
        decode(&I, &b).unwrap(),
        Packet::CookieEcho {
            vtag: 77,
            cookie: &cookie,
            addrs: Addrs::NONE
        }
    );
    b.clear();
    encode_cookie_ack(&mut b, &I, 42);
    assert_eq!(decode(&I, &b).unwrap(), Packet::CookieAck { vtag: 42 });
    b.clear();
    encode_unknown_cookie(&mut b, &I, 42, 77);
    assert_eq!(
        decode(&I, &b).unwrap(),
        Packet::UnknownCookie {
            vtag: 42,
            resp_tag: 77
        }
    );
    assert!(b.len() < init.len(), "smaller than the echo it answers");
    b.clear();
    encode_unknown_cookie(&mut b, &I, 42, 0);
    assert_eq!(decode(&I, &b), Err(DecodeError::Malformed));
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
        b.clear();
        encode_alias(&mut b, &I, 11, ack, 40000);
        let want = if ack {
            Packet::AliasAck { vtag, port: 40000 }
        } else {
            Packet::Alias { vtag, port: 40000 }
        };
        assert_eq!(decode(&I, &b).unwrap(), want);
        // the port field holds a port, not 0 or more than 16 bits; a tag
        // (the port: a u64 at PORT_AT, its low 16 bits at PORT_AT + 6)
        for (at, v) in [(PORT_AT + 5, 1u8), (PORT_AT + 6, 0), (VTAG_AT, 0)] {
            let mut f = b.clone();
            if at == PORT_AT + 6 {
                f[PORT_AT + 6] = 0;
                f[PORT_AT + 7] = 0;
            } else if at == VTAG_AT {
                f[VTAG_AT..VTAG_AT + 8].fill(0);
            } else {
                f[at] = v;
            }
            let n = f.len() - CRC_LEN;
            let crc = crate::wire::crc32c(&f[..n]);
            f[n..].copy_from_slice(&crc.to_be_bytes());
            assert_eq!(decode(&I, &f), Err(DecodeError::Malformed), "field at {at}");
        }
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
                            &mut buf,
                            integ,
                            &c,
                            &meta,
                            65_000,
                            0,
                            PayloadPiece::plain(&payload),
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

/// A bundle: DATA of several arities and payloads, ACK with and without
/// dup, NACK, back to back; and where each packet starts.
fn bundle(integ: &Integrity) -> (Vec<u8>, Vec<usize>) {
    let mut d = Vec::new();
    let mut starts = Vec::new();
    let c = sample_common();
    for k in 0..4u32 {
        starts.push(d.len());
        let args: Vec<u32> = (0..k * 5).collect();
        let meta = MsgMeta::new(MsgKind::User, Category::Medium, 7, &args);
        let payload = vec![k as u8; 10 * k as usize];
        let c = Common { seq: k, ..c };
        encode_data(&mut d, integ, &c, &meta, 100, 3, &payload);
    }
    starts.push(d.len());
    encode_ack_dup(&mut d, integ, &c, 0b101, None);
    starts.push(d.len());
    encode_ack_dup(&mut d, integ, &c, 0b11, Some(40));
    starts.push(d.len());
    encode_nack(&mut d, integ, &c, true);
    (d, starts)
}

/// The packets `packets` yields, as byte ranges; and the error that ended
/// the walk, if any.
fn walk(integ: &Integrity, d: &[u8]) -> (Vec<std::ops::Range<usize>>, Option<DecodeError>) {
    let base = d.as_ptr() as usize;
    let mut v = Vec::new();
    for p in packets(integ, d) {
        match p {
            Ok(p) => {
                let at = p.as_ptr() as usize - base;
                v.push(at..at + p.len());
            }
            Err(e) => return (v, Some(e)),
        }
    }
    (v, None)
}

#[test]
fn a_bundle_splits_into_exactly_its_packets_each_checked() {
    for integ in [I, test_job_mac()] {
        let (d, starts) = bundle(&integ);
        let (got, err) = walk(&integ, &d);
        assert_eq!(err, None);
        let mut ends = starts[1..].to_vec();
        ends.push(d.len());
        let want: Vec<_> = starts.iter().zip(&ends).map(|(&s, &e)| s..e).collect();
        assert_eq!(got, want);
        for (k, r) in got.iter().enumerate() {
            match decode(&integ, &d[r.clone()]).unwrap() {
                Packet::Data {
                    common, payload, ..
                } => {
                    assert_eq!(common.seq, k as u32);
                    assert_eq!(payload, &vec![k as u8; 10 * k][..]);
                }
                Packet::Ack { dup, .. } => assert_eq!(dup, (k == 5).then_some(40)),
                Packet::Nack { last, .. } => assert!(last && k == 6),
                other => panic!("{other:?}"),
            }
        }
        // the whole datagram is no one packet
        assert!(decode(&integ, &d).is_err());
        // a packet alone is a datagram of one
        assert_eq!(walk(&integ, &d[got[2].clone()]).0, vec![0..got[2].len()]);
    }
}

/// An `Integrity` that seals under a MAC (an association's key).
fn test_job_mac() -> Integrity {
    let job = Integrity::job(
        &super::mac::MacKey::from_job_key("bundle test key"),
        [1; 12],
    );
    job.for_association(5, 6).0
}

#[test]
fn garbage_after_packets_a_truncated_last_packet_and_a_long_frag_len_end_the_walk() {
    let (d, starts) = bundle(&I);
    // garbage after valid packets: they come out, then the garbage refused
    for junk in [&[0u8][..], &[0xff; 40], &d[..3], &d[..40]] {
        let mut b = d.clone();
        b.extend_from_slice(junk);
        let (got, err) = walk(&I, &b);
        assert_eq!(got.len(), 7);
        assert!(err.is_some(), "{junk:?} accepted");
    }
    // the last packet cut at every length: the ones before it come out
    for cut in starts[6] + 1..d.len() {
        let (got, err) = walk(&I, &d[..cut]);
        assert_eq!(got.len(), 6, "cut at {cut}");
        assert!(err.is_some());
    }
    // packet 2 (a DATA) claims a fragment past the datagram's end
    for frag_len in [d.len() as u32, u32::MAX, (d.len() - starts[2]) as u32] {
        let mut b = d.clone();
        b[starts[2] + FRAG_LEN_AT..][..4].copy_from_slice(&frag_len.to_be_bytes());
        let (got, err) = walk(&I, &b);
        assert_eq!(got.len(), 2);
        assert_eq!(err, Some(DecodeError::Truncated));
    }
    // or more arguments than any packet carries
    let mut b = d.clone();
    b[starts[1] + NARGS_AT] = MAX_ARGS as u8 + 1;
    assert_eq!(
        walk(&I, &b),
        (vec![starts[0]..starts[1]], Some(DecodeError::Malformed))
    );
}

#[test]
fn a_flipped_byte_refuses_its_packet_only_and_a_walk_never_panics() {
    let (d, starts) = bundle(&I);
    // a payload byte of packet 2 (index 1... its arguments and payload
    // follow the header): its framing holds, its checksum does not
    let mut b = d.clone();
    b[starts[1] + DATA_HEADER_LEN + 2] ^= 0x10;
    let (got, err) = walk(&I, &b);
    assert_eq!(err, None);
    let ok: Vec<bool> = got
        .iter()
        .map(|r| decode(&I, &b[r.clone()]).is_ok())
        .collect();
    assert_eq!(ok, [true, false, true, true, true, true, true]);
    // every bit flip and cut of the bundle: no panic, and packets that
    // decode are byte for byte ones of the original
    let originals: Vec<&[u8]> = (0..7)
        .map(|k| &d[starts[k]..*starts.get(k + 1).unwrap_or(&d.len())])
        .collect();
    for i in 0..d.len() * 8 {
        let mut b = d.clone();
        b[i / 8] ^= 1 << (i % 8);
        for p in packets(&I, &b).flatten() {
            if decode(&I, p).is_ok() {
                assert!(originals.contains(&p), "bit {i}: a changed packet decoded");
            }
        }
        let _ = walk(&I, &b[..i / 8]);
    }
}

#[test]
fn at_most_max_bundle_packets_and_no_handshake_packet_inside_a_bundle() {
    let c = sample_common();
    let mut d = Vec::new();
    for _ in 0..MAX_BUNDLE + 3 {
        encode_nack(&mut d, &I, &c, false);
    }
    let (got, err) = walk(&I, &d);
    assert_eq!(got.len(), MAX_BUNDLE);
    assert_eq!(err, Some(DecodeError::Malformed));
    assert_eq!(
        packets(&I, &d).count(),
        MAX_BUNDLE + 1,
        "nothing after the refusal"
    );
    // a handshake packet after a DATA, ACK or NACK is refused
    let mut d = Vec::new();
    encode_nack(&mut d, &I, &c, false);
    let first = d.len();
    encode_heartbeat(&mut d, &I, 9, false, 1);
    let (got, err) = walk(&I, &d);
    assert_eq!(got, vec![0..first]);
    assert_eq!(err, Some(DecodeError::Malformed));
    // one in front is the whole datagram, which is no packet
    let mut d = Vec::new();
    encode_heartbeat(&mut d, &I, 9, false, 1);
    let alone = d.clone();
    encode_nack(&mut d, &I, &c, false);
    let p: Vec<_> = packets(&I, &d).collect();
    assert_eq!(p, [Ok(&d[..])]);
    assert!(decode(&I, &d).is_err());
    assert!(matches!(decode(&I, &alone), Ok(Packet::Heartbeat { .. })));
    // an empty datagram: one refusal
    assert_eq!(
        packets(&I, &[])
            .map(|p| p.and_then(|p| decode(&I, p)))
            .collect::<Vec<_>>(),
        [Err(DecodeError::Truncated)]
    );
}

#[test]
fn a_version_2_packet_is_foreign() {
    let mut d = Vec::new();
    encode_nack(&mut d, &I, &sample_common(), false);
    d[VERSION_AT] = 2;
    let n = d.len();
    I.open(&d).unwrap_err();
    // resealed as a version-2 sender would
    d.truncate(n - crate::wire::CRC_LEN);
    I.seal(&mut d, 0);
    let p: Vec<_> = packets(&I, &d).collect();
    assert_eq!(p, [Ok(&d[..])]);
    assert_eq!(decode(&I, &d), Err(DecodeError::Foreign));
}
