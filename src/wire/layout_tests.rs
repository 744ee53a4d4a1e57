//! The named offsets of `layout.rs` are where the encoder writes each
//! field and the decoder reads it: every packet type is encoded with a
//! distinct value in each field, then each field is read back at its
//! named offset (independently of the decoder) and compared with what was
//! encoded, and with what `decode` says. Encoder, decoder and names cannot
//! drift apart without one of these failing.

use super::layout::*;
use super::*;

const I: Integrity = Integrity::Crc32c;

fn u64_at(d: &[u8], at: usize) -> u64 {
    read_u64(d, at).expect("the field lies within the packet")
}

fn u32_at(d: &[u8], at: usize) -> u32 {
    read_u32(d, at).expect("the field lies within the packet")
}

fn u16_at(d: &[u8], at: usize) -> u16 {
    read_u16(d, at).expect("the field lies within the packet")
}

/// A common header whose every field differs from the others.
fn common() -> Common {
    Common {
        vtag: 0x0102_0304_0506_0708,
        channel: 1,
        epoch: 0x1112,
        seq: 0x2122_2324,
        unordered: false,
        acks: [
            AckField {
                valid: true,
                epoch: 0x3132,
                next: 0x4142_4344,
            },
            AckField {
                valid: false,
                epoch: 0x5152,
                next: 0x6162_6364,
            },
        ],
    }
}

/// The fields every packet starts with, and its length before the trailer.
fn check_start(d: &[u8], ptype: PacketType, vtag: u64, len: usize) {
    assert_eq!(d.len(), len + CRC_LEN, "{ptype:?}: length");
    assert_eq!(u16_at(d, MAGIC_AT), MAGIC, "{ptype:?}: magic");
    assert_eq!(d[VERSION_AT], VERSION, "{ptype:?}: version");
    assert_eq!(d[TYPE_AT], ptype as u8, "{ptype:?}: type");
    assert_eq!(u64_at(d, VTAG_AT), vtag, "{ptype:?}: vtag");
}

/// The common header of an association packet.
fn check_common(d: &[u8], ptype: PacketType, c: &Common, extra_flags: u8, len: usize) {
    check_start(d, ptype, c.vtag, len);
    assert_eq!(d[CHANNEL_AT], c.channel, "{ptype:?}: channel");
    assert_eq!(d[FLAGS_AT], FLAG_ACK_REQ | extra_flags, "{ptype:?}: flags");
    assert_eq!(u16_at(d, EPOCH_AT), c.epoch, "{ptype:?}: epoch");
    assert_eq!(u32_at(d, SEQ_AT), c.seq, "{ptype:?}: seq");
    for ch in 0..NUM_CHANNELS {
        assert_eq!(u32_at(d, ACK_NEXT_AT[ch]), c.acks[ch].next, "ack next {ch}");
        assert_eq!(
            u16_at(d, ACK_EPOCH_AT[ch]),
            c.acks[ch].epoch,
            "ack epoch {ch}"
        );
    }
    assert_eq!(association_vtag(d), Some(c.vtag), "{ptype:?}");
}

/// `FLAG_UNORDERED` on a DATA packet, read back; on an ACK or NACK it
/// means nothing.
#[test]
fn the_unordered_flag_is_a_data_flag() {
    let meta = MsgMeta::new(MsgKind::User, Category::Short, 1, &[]);
    let c = Common {
        unordered: true,
        ..common()
    };
    let mut d = Vec::new();
    encode_data(&mut d, &I, &c, &meta, 0, 0, &[]);
    check_common(&d, PacketType::Data, &c, FLAG_UNORDERED, ARGS_AT);
    match decode(&I, &d) {
        Ok(Packet::Data { common, .. }) => assert_eq!(common, c),
        other => panic!("{other:?}"),
    }
    let mut d = Vec::new();
    encode_nack(&mut d, &I, &c, false);
    match decode(&I, &d) {
        Ok(Packet::Nack { common, .. }) => assert!(!common.unordered),
        other => panic!("{other:?}"),
    }
}

/// Bytes 12..32 of a handshake packet are zero.
fn check_handshake_zeros(d: &[u8]) {
    assert!(d[CHANNEL_AT..COMMON_LEN].iter().all(|&b| b == 0));
    assert_eq!(association_vtag(d), None);
}

#[test]
fn every_data_field_lies_at_its_named_offset() {
    let args: Vec<u32> = (0..5).map(|k| 0x7170_0000 + k).collect();
    let mut meta = MsgMeta::new(MsgKind::Put, Category::Long, 0x81, &args);
    meta.txn = 0x9192_9394;
    meta.status = 0xa1;
    meta.tag = 0xb1b2_b3b4_b5b6_b7b8;
    meta.dest_offset = 0xc1c2_c3c4_c5c6_c7c8;
    meta.returned_request = true;
    let payload: Vec<u8> = (0..13).collect();
    let (msg_len, frag_off) = (0x0001_0000, 0x0000_0100);
    let c = common();
    let mut d = Vec::new();
    encode_data(&mut d, &I, &c, &meta, msg_len, frag_off, &payload);
    let len = ARGS_AT + 4 * args.len() + payload.len();
    check_common(&d, PacketType::Data, &c, FLAG_RETURNED_REQUEST, len);
    assert_eq!(u32_at(&d, TXN_AT), meta.txn);
    assert_eq!(d[HANDLER_AT], meta.handler);
    assert_eq!(
        d[KIND_CATEGORY_AT],
        (MsgKind::Put as u8) << 4 | Category::Long as u8
    );
    assert_eq!(d[NARGS_AT] as usize, args.len());
    assert_eq!(d[STATUS_AT], meta.status);
    assert_eq!(u64_at(&d, TAG_AT), meta.tag);
    assert_eq!(u64_at(&d, DEST_OFFSET_AT), meta.dest_offset);
    assert_eq!(u32_at(&d, MSG_LEN_AT), msg_len);
    assert_eq!(u32_at(&d, FRAG_OFF_AT), frag_off);
    assert_eq!(u32_at(&d, FRAG_LEN_AT) as usize, payload.len());
    for (i, &a) in args.iter().enumerate() {
        assert_eq!(u32_at(&d, ARGS_AT + 4 * i), a, "argument {i}");
    }
    assert_eq!(&d[ARGS_AT + 4 * args.len()..len], &payload[..]);
    // and the decoder reads the same
    let Ok(Packet::Data {
        common: dc,
        meta: dm,
        msg_len: dl,
        frag_off: df,
        payload: dp,
    }) = decode(&I, &d)
    else {
        panic!("not a DATA");
    };
    assert_eq!(
        (dc, dm, dl, df, dp),
        (c, meta, msg_len, frag_off, &payload[..])
    );
}

#[test]
fn every_ack_and_nack_field_lies_at_its_named_offset() {
    let c = common();
    let sack = 0xd1d2_d3d4_d5d6_d7d8;
    for dup in [None, Some(0xe1e2_e3e4)] {
        let mut d = Vec::new();
        encode_ack_dup(&mut d, &I, &c, sack, dup);
        let (flag, len) = match dup {
            Some(_) => (FLAG_DUP, ACK_DUP_LEN),
            None => (0, ACK_LEN),
        };
        check_common(&d, PacketType::Ack, &c, flag, len);
        assert_eq!(u64_at(&d, SACK_AT), sack);
        if let Some(s) = dup {
            assert_eq!(u32_at(&d, DUP_AT), s);
        }
        let want = Packet::Ack {
            common: c,
            sack,
            dup,
        };
        assert_eq!(decode(&I, &d), Ok(want));
    }
    for last in [false, true] {
        let mut d = Vec::new();
        encode_nack(&mut d, &I, &c, last);
        let flag = if last { FLAG_FINAL } else { 0 };
        check_common(&d, PacketType::Nack, &c, flag, NACK_LEN);
        assert_eq!(decode(&I, &d), Ok(Packet::Nack { common: c, last }));
    }
}

#[test]
fn every_handshake_field_lies_at_its_named_offset() {
    let (vtag, tag) = (0x0a0b_0c0d_0e0f_1011, 0x1213_1415_1617_1819);
    let cookie: [u8; COOKIE_LEN] = std::array::from_fn(|i| 0x40 + i as u8);
    let mut d = Vec::new();

    encode_init(&mut d, &I, tag);
    check_start(&d, PacketType::Init, 0, INIT_LEN);
    check_handshake_zeros(&d);
    assert_eq!(u64_at(&d, INIT_TAG_AT), tag);
    assert!(
        d[INIT_TAG_AT + 8..INIT_LEN].iter().all(|&b| b == 0),
        "padding"
    );
    assert_eq!(
        decode(&I, &d),
        Ok(Packet::Init {
            init_tag: tag,
            addrs: Addrs::NONE
        })
    );

    d.clear();
    encode_init_ack(&mut d, &I, vtag, tag, &cookie);
    check_start(&d, PacketType::InitAck, vtag, INIT_ACK_LEN);
    check_handshake_zeros(&d);
    assert_eq!(u64_at(&d, RESP_TAG_AT), tag);
    assert_eq!(&d[INIT_ACK_COOKIE_AT..][..COOKIE_LEN], &cookie);
    let want = Packet::InitAck {
        vtag,
        resp_tag: tag,
        cookie: &cookie,
        addrs: Addrs::NONE,
    };
    assert_eq!(decode(&I, &d), Ok(want));

    d.clear();
    encode_cookie_echo(&mut d, &I, vtag, &cookie);
    check_start(&d, PacketType::CookieEcho, vtag, COOKIE_ECHO_LEN);
    check_handshake_zeros(&d);
    assert_eq!(&d[ECHO_COOKIE_AT..][..COOKIE_LEN], &cookie);
    let want = Packet::CookieEcho {
        vtag,
        cookie: &cookie,
        addrs: Addrs::NONE,
    };
    assert_eq!(decode(&I, &d), Ok(want));

    d.clear();
    encode_cookie_ack(&mut d, &I, vtag);
    check_start(&d, PacketType::CookieAck, vtag, BARE_LEN);
    check_handshake_zeros(&d);
    assert_eq!(decode(&I, &d), Ok(Packet::CookieAck { vtag }));

    d.clear();
    encode_unknown_cookie(&mut d, &I, vtag, tag);
    check_start(&d, PacketType::UnknownCookie, vtag, UNKNOWN_COOKIE_LEN);
    check_handshake_zeros(&d);
    assert_eq!(u64_at(&d, UNKNOWN_TAG_AT), tag);
    let want = Packet::UnknownCookie {
        vtag,
        resp_tag: tag,
    };
    assert_eq!(decode(&I, &d), Ok(want));

    d.clear();
    encode_abort(&mut d, &I, vtag);
    check_start(&d, PacketType::Abort, vtag, BARE_LEN);
    check_handshake_zeros(&d);
    assert_eq!(decode(&I, &d), Ok(Packet::Abort { vtag }));

    let nonce = 0x2122_2324_2526_2728;
    for (ptype, shutdown, ack) in [
        (PacketType::Heartbeat, false, false),
        (PacketType::HeartbeatAck, false, true),
        (PacketType::Shutdown, true, false),
        (PacketType::ShutdownAck, true, true),
    ] {
        d.clear();
        if shutdown {
            encode_shutdown(&mut d, &I, vtag, ack, nonce);
        } else {
            encode_heartbeat(&mut d, &I, vtag, ack, nonce);
        }
        check_start(&d, ptype, vtag, NONCE_LEN);
        check_handshake_zeros(&d);
        assert_eq!(u64_at(&d, NONCE_AT), nonce);
        let want = match ptype {
            PacketType::Heartbeat => Packet::Heartbeat { vtag, nonce },
            PacketType::HeartbeatAck => Packet::HeartbeatAck { vtag, nonce },
            PacketType::Shutdown => Packet::Shutdown { vtag, nonce },
            _ => Packet::ShutdownAck { vtag, nonce },
        };
        assert_eq!(decode(&I, &d), Ok(want));
    }

    let port = 0xf1f2;
    for (ptype, ack) in [(PacketType::Alias, false), (PacketType::AliasAck, true)] {
        d.clear();
        encode_alias(&mut d, &I, vtag, ack, port);
        check_start(&d, ptype, vtag, ALIAS_LEN);
        check_handshake_zeros(&d);
        assert_eq!(u64_at(&d, PORT_AT), u64::from(port));
        let want = if ack {
            Packet::AliasAck { vtag, port }
        } else {
            Packet::Alias { vtag, port }
        };
        assert_eq!(decode(&I, &d), Ok(want));
    }
}

#[test]
fn readers_stop_at_the_end_of_the_bytes() {
    let d = [0u8; 10];
    assert_eq!(read_u64(&d, 2), Some(0));
    assert_eq!(read_u64(&d, 3), None);
    assert_eq!(read_u32(&d, 7), None);
    assert_eq!(read_u16(&d, 9), None);
    assert_eq!(read_u16(&d, 11), None);
}

/// A listed address of `family` numbered `k`.
fn entry(family: u8, k: u8) -> [u8; ADDR_LEN] {
    let mut e = [0u8; ADDR_LEN];
    e[0] = family;
    e[1] = k;
    e[18] = 7;
    e
}

#[test]
fn handshake_packets_list_addresses_at_their_offsets() {
    let cookie = [0x5au8; COOKIE_LEN];
    let list = Addrs::encode(&[entry(4, 1), entry(6, 2), entry(1, 3)]);
    let mut d = Vec::new();
    encode_init_listing(&mut d, &I, 9, &list);
    assert_eq!(&d[INIT_ADDRS_AT..][..ADDRS_LEN], &list);
    let Ok(Packet::Init { addrs, .. }) = decode(&I, &d) else {
        panic!("INIT listing addresses refused");
    };
    let got: Vec<_> = addrs.iter().copied().collect();
    assert_eq!(got, [entry(4, 1), entry(6, 2), entry(1, 3)]);
    d.clear();
    encode_init_ack_listing(&mut d, &I, 9, 10, &cookie, &list);
    assert_eq!(&d[INIT_ADDRS_AT..][..ADDRS_LEN], &list);
    assert!(matches!(decode(&I, &d), Ok(Packet::InitAck { addrs, .. }) if addrs.0 == &list));
    d.clear();
    encode_cookie_echo_listing(&mut d, &I, 10, &cookie, &list);
    assert_eq!(&d[ECHO_ADDRS_AT..][..ADDRS_LEN], &list);
    assert!(matches!(decode(&I, &d), Ok(Packet::CookieEcho { addrs, .. }) if addrs.0 == &list));
    // never more than MAX_LISTED are written
    let five = [entry(4, 1); 5];
    assert_eq!(Addrs::encode(&five)[0] as usize, MAX_LISTED);
}

/// An INIT listing too many addresses, an unknown family, or bytes past
/// its count is malformed: refused whole (and counted by the receiver).
#[test]
fn a_malformed_address_list_is_refused() {
    let good = Addrs::encode(&[entry(4, 1)]);
    let mut bad = Vec::new();
    let mut too_many = good;
    too_many[0] = MAX_LISTED as u8 + 1;
    bad.push(too_many);
    let mut family = good;
    family[1] = 5;
    bad.push(family);
    let mut trailing = good;
    trailing[1 + ADDR_LEN + 3] = 1;
    bad.push(trailing);
    let mut count_over_zeros = good;
    count_over_zeros[0] = 2;
    bad.push(count_over_zeros);
    for (i, list) in bad.iter().enumerate() {
        let mut d = Vec::new();
        encode_init_listing(&mut d, &I, 9, list);
        assert_eq!(decode(&I, &d), Err(DecodeError::Malformed), "list {i}");
        d.clear();
        encode_cookie_echo_listing(&mut d, &I, 9, &[1; COOKIE_LEN], list);
        assert_eq!(decode(&I, &d), Err(DecodeError::Malformed), "echo list {i}");
    }
}
