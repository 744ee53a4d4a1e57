//! A later fragment's short header (`FLAG_MORE`, `Packet::More`): where
//! its fields lie, that it round-trips whole and gathered under CRC32C and
//! the MAC, that a bundle frames it, and that every malformed one is
//! refused (an offset of 0, a full header's flag, a length that lies, a
//! header cut short, a flipped bit).

use super::layout::*;
use super::*;

const I: Integrity = Integrity::Crc32c;

// the common header the codec tests use (`codec_tests::sample_common`)
use super::codec_tests::sample_common as common;

/// An `Integrity` that seals under a MAC (an association's key).
fn job_mac() -> Integrity {
    let job = Integrity::job(&mac::MacKey::from_job_key("more test key"), [1; 12]);
    job.for_association(5, 6).0
}

fn more(integ: &Integrity, frag_off: u32, payload: &[u8]) -> Vec<u8> {
    let mut d = Vec::new();
    encode_more(&mut d, integ, &common(), frag_off, payload);
    d
}

#[test]
fn every_later_fragment_field_lies_at_its_named_offset() {
    let payload: Vec<u8> = (0..13).collect();
    let d = more(&I, 0x0102_0304, &payload);
    assert_eq!(d.len(), MORE_HEADER_LEN + payload.len() + CRC_LEN);
    assert_eq!(read_u16(&d, MAGIC_AT), Some(MAGIC));
    assert_eq!(d[VERSION_AT], VERSION);
    assert_eq!(d[TYPE_AT], PacketType::Data as u8);
    assert_eq!(read_u64(&d, VTAG_AT), Some(common().vtag));
    assert_eq!(d[FLAGS_AT], FLAG_MORE | FLAG_ACK_REQ);
    assert_eq!(read_u32(&d, SEQ_AT), Some(common().seq));
    assert_eq!(read_u32(&d, MORE_OFF_AT), Some(0x0102_0304));
    assert_eq!(read_u32(&d, MORE_LEN_AT), Some(payload.len() as u32));
    assert_eq!(&d[MORE_HEADER_LEN..d.len() - CRC_LEN], &payload[..]);
    assert_eq!(association_vtag(&d), Some(common().vtag));
    assert_eq!(
        decode(&I, &d),
        Ok(Packet::More {
            common: common(),
            frag_off: 0x0102_0304,
            payload: &payload,
        })
    );
    // 28 bytes fewer than the full header without arguments, 28 + 4 * n with n
    assert_eq!(DATA_HEADER_LEN - MORE_HEADER_LEN, 28);
}

#[test]
fn a_later_fragment_round_trips_whole_and_gathered_under_crc_and_mac() {
    let msg: Vec<u8> = (0..20_000u32).map(|k| (k * 7) as u8).collect();
    let mut sums = Vec::new();
    let mut copy = Vec::new();
    copy_summed(&mut copy, &msg, &mut sums);
    for integ in [I, job_mac()] {
        for (off, len) in [(1usize, 10usize), (4096, 4096), (5000, 9000), (64, 19_936)] {
            let whole = more(&integ, off as u32, &msg[off..off + len]);
            let mut g = Vec::new();
            let piece = PayloadPiece::summed(&copy, &sums, off, len);
            let trailer = encode_more_gathered(&mut g, &integ, &common(), off as u32, piece);
            assert_eq!(trailer, MORE_HEADER_LEN);
            // the gathered datagram: header, the payload where it lies, trailer
            let mut joined = g[..trailer].to_vec();
            joined.extend_from_slice(&msg[off..off + len]);
            joined.extend_from_slice(&g[trailer..]);
            if matches!(integ, Integrity::Crc32c) {
                assert_eq!(joined, whole, "({off}, {len}): gathered as whole");
            }
            for d in [&whole, &joined] {
                let Ok(Packet::More {
                    common: c,
                    frag_off,
                    payload,
                }) = decode(&integ, d)
                else {
                    panic!("({off}, {len}): not a later fragment");
                };
                assert_eq!(
                    (c, frag_off as usize, payload),
                    (common(), off, &msg[off..off + len])
                );
            }
        }
    }
}

#[test]
fn a_deferred_later_fragment_is_checked_by_its_sum() {
    let payload = vec![0xa5u8; 2 * DEFER_MIN];
    let d = more(&I, 777, &payload);
    let Some((
        Packet::More {
            frag_off,
            payload: p,
            ..
        },
        check,
    )) = decode_deferred(&d)
    else {
        panic!("a large later fragment is deferred");
    };
    assert_eq!((frag_off, p), (777, &payload[..]));
    let mut buf = Vec::new();
    let Some(sum) = extend_sum(&mut buf, p) else {
        // a CPU that cannot sum in the copy (no AVX-512): nothing copied,
        // the receiver checks the whole datagram the usual way instead
        // (`Protocol::take_deferred`'s caller)
        assert!(buf.is_empty());
        eprintln!("this CPU does not sum in the copy: the deferred check is not used");
        return;
    };
    assert!(check.holds(sum));
    assert!(!check.holds(sum ^ 1), "another sum fails");
}

#[test]
fn a_bundle_frames_later_fragments_beside_full_packets() {
    for integ in [I, job_mac()] {
        let mut d = Vec::new();
        let meta = MsgMeta::new(MsgKind::User, Category::Long, 3, &[1, 2]);
        encode_data(&mut d, &integ, &common(), &meta, 300, 0, &[9; 100]);
        let a = d.len();
        encode_more(&mut d, &integ, &common(), 100, &[8; 150]);
        let b = d.len();
        encode_more(&mut d, &integ, &common(), 250, &[7; 50]);
        let framed: Vec<_> = packets(&integ, &d).collect();
        assert_eq!(framed, [Ok(&d[..a]), Ok(&d[a..b]), Ok(&d[b..])]);
        assert!(matches!(
            decode(&integ, &d[a..b]),
            Ok(Packet::More { frag_off: 100, .. })
        ));
        assert!(matches!(
            decode(&integ, &d[b..]),
            Ok(Packet::More { frag_off: 250, .. })
        ));
    }
}

/// `d` (a later fragment before its trailer) changed by `f`, resealed.
fn forged(f: impl Fn(&mut Vec<u8>)) -> Vec<u8> {
    let mut d = more(&I, 100, &[1; 40]);
    d.truncate(d.len() - CRC_LEN);
    f(&mut d);
    I.seal(&mut d, 0);
    d
}

#[test]
fn malformed_later_fragments_are_refused_whole() {
    // an offset of 0: a message starts with its full header
    let d = forged(|d| d[MORE_OFF_AT..][..4].copy_from_slice(&[0; 4]));
    assert_eq!(decode(&I, &d), Err(DecodeError::Malformed));
    // a full header's flags beside FLAG_MORE: no sender writes them
    for flag in [FLAG_UNORDERED, FLAG_RETURNED_REQUEST] {
        let d = forged(|d| d[FLAGS_AT] |= flag);
        assert_eq!(decode(&I, &d), Err(DecodeError::Malformed), "flag {flag}");
    }
    // a length longer or shorter than the payload
    for len in [41u32, 39, u32::MAX] {
        let d = forged(|d| d[MORE_LEN_AT..][..4].copy_from_slice(&len.to_be_bytes()));
        assert_eq!(decode(&I, &d), Err(DecodeError::Truncated), "length {len}");
        let walked: Vec<_> = packets(&I, &d).collect();
        assert!(
            len < 40 || walked == [Err(DecodeError::Truncated)],
            "a length past the datagram ends the walk: {walked:?}"
        );
    }
    // a header cut short: the short header's fields missing
    let d = forged(|d| d.truncate(MORE_HEADER_LEN - 2));
    assert_eq!(decode(&I, &d), Err(DecodeError::Truncated));
    assert_eq!(
        packets(&I, &d).collect::<Vec<_>>(),
        [Err(DecodeError::Truncated)]
    );
    // FLAG_MORE taken off: the bytes read as a full header, which they
    // are not (too short for one, or lengths that do not agree)
    let d = forged(|d| d[FLAGS_AT] &= !FLAG_MORE);
    assert!(!matches!(decode(&I, &d), Ok(Packet::More { .. })));
    // FLAG_MORE on a full header: its bytes read as a short one, whose
    // length is then wrong
    let mut d = Vec::new();
    let meta = MsgMeta::new(MsgKind::User, Category::Long, 3, &[]);
    encode_data(&mut d, &I, &common(), &meta, 1000, 0, &[5; 100]);
    d.truncate(d.len() - CRC_LEN);
    d[FLAGS_AT] |= FLAG_MORE;
    I.seal(&mut d, 0);
    assert!(decode(&I, &d).is_err());
}

#[test]
fn every_bit_flip_of_a_later_fragment_is_refused() {
    for integ in [I, job_mac()] {
        let d = more(&integ, 4242, &[0x3c; 64]);
        for bit in 0..d.len() * 8 {
            let mut x = d.clone();
            x[bit / 8] ^= 1 << (bit % 8);
            assert!(decode(&integ, &x).is_err(), "bit {bit} flipped");
            // and a walk over it never panics nor reads past it
            let _ = packets(&integ, &x).count();
        }
    }
}
