//! Under the packet MAC a long message's fragments are placed into the
//! segment only after their MAC holds (`Protocol::decode_sealed`, then
//! `Placement::write`): the GHASH pass reads the bytes the kernel has just
//! written (in cache) and the copy follows it. Nothing of a forged or
//! damaged fragment is ever written, not even where the message's next
//! bytes go: a segment is the program's memory, which it may read while a
//! message is on its way, and a forger must not write there (CRC32C,
//! which authenticates nothing, copies first and checks as it copies:
//! `deferred_tests.rs`). The forged packet is counted as corrupt, nothing
//! is delivered, and the sender's copy then completes the message once.

use super::tests::{long_message, pair_with, Seg};
use super::*;
use crate::wire::mac::MacKey;

const KEY: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
const LEN: usize = 200_000;

fn payload() -> Vec<u8> {
    (0..LEN).map(|i| (i * 7 + i / 999) as u8).collect()
}

fn sealed(key: &str) -> [Protocol<u32>; 2] {
    pair_with(ProtoConfig {
        mac: Some(MacKey::from_job_key(key)),
        ..ProtoConfig::default()
    })
}

/// The datagrams of one long message of `LEN` bytes from node 0 to node 1
/// of a pair under `key`.
fn datagrams(key: &str) -> (Vec<Vec<u8>>, [Protocol<u32>; 2]) {
    let mut n = sealed(key);
    (long_message(&mut n, &payload()), n)
}

fn feed(p: &mut Protocol<u32>, d: &[u8], s: &mut Seg) {
    p.handle_datagram_placing(Instant(1_000_000), 0, d, s);
}

fn delivered(p: &mut Protocol<u32>) -> Vec<Option<u32>> {
    std::iter::from_fn(|| p.poll_event())
        .filter_map(|ev| match ev {
            Event::Delivered { meta, .. } => Some(meta.placed.map(|p| p.len)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_sealed_long_message_is_placed_whole_after_each_fragment_is_checked() {
    let (d, mut n) = datagrams(KEY);
    assert!(d.len() >= 4, "{} datagrams", d.len());
    let mut s = Seg::new(LEN, false);
    for x in &d {
        feed(&mut n[1], x, &mut s);
    }
    assert_eq!(delivered(&mut n[1]), [Some(LEN as u32)]);
    assert_eq!(s.claimed, 1);
    assert_eq!(s.writes, d.len(), "one write per fragment: one copy");
    assert!(s.mem == payload());
    // checked before written, never as copied
    assert_eq!(n[1].checked_in_place(), 0);
    assert_eq!(n[1].stats().corrupt_dropped, 0);
}

#[test]
fn a_forged_fragment_writes_nothing_delivers_nothing_and_is_counted() {
    let (d, _) = datagrams(KEY);
    // the same message sealed under another key: a forger's
    let (other, _) = datagrams("ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100");
    for victim in 0..d.len() {
        let len = d[victim].len();
        let mut forged: Vec<(&str, Vec<u8>)> = [
            ("a payload byte", len / 2),
            ("a header byte", 50),
            ("the tag", len - 1),
        ]
        .into_iter()
        .map(|(what, i)| {
            let mut b = d[victim].clone();
            b[i] ^= 0x40;
            (what, b)
        })
        .collect();
        // another key's packet, its payload all forged bytes
        let mut b = other[victim].clone();
        let body = crate::wire::DATA_HEADER_LEN + 4..b.len() - crate::wire::MAC_TRAILER_LEN;
        b[body].fill(0xEE);
        forged.push(("another key's seal", b));
        for (what, bad) in &forged {
            let (d, mut n) = datagrams(KEY);
            let mut s = Seg::new(LEN, false);
            for x in &d[..victim] {
                feed(&mut n[1], x, &mut s);
            }
            let (mem, writes, claimed) = (s.mem.clone(), s.writes, s.claimed);
            let before = n[1].stats().corrupt_dropped;
            feed(&mut n[1], bad, &mut s);
            assert_eq!(
                n[1].stats().corrupt_dropped,
                before + 1,
                "fragment {victim}, {what}: counted as corrupt"
            );
            assert_eq!(
                s.writes, writes,
                "fragment {victim}, {what}: nothing written"
            );
            assert_eq!(
                s.claimed, claimed,
                "fragment {victim}, {what}: nothing claimed"
            );
            assert!(
                s.mem == mem,
                "fragment {victim}, {what}: the segment untouched"
            );
            assert!(delivered(&mut n[1]).is_empty(), "{what}: nothing delivered");
            // the sender's copy, then the rest: the message whole, once
            for x in &d[victim..] {
                feed(&mut n[1], x, &mut s);
            }
            assert_eq!(delivered(&mut n[1]), [Some(LEN as u32)], "{what}");
            assert!(
                s.mem == payload(),
                "fragment {victim}, {what}: the sender's bytes"
            );
        }
    }
}
