//! Later fragments with the short header (`wire::Packet::More`): what one
//! says is only an offset and a length, so the receiver gives it a meaning
//! only in sequence order, as the next bytes of the message it is
//! reassembling. Fragments that arrive ahead of their message's first
//! packet (striping over paths of unequal delay) are held, unwritten and
//! within the window and the peer's budget, and complete the message once
//! its first packet came; fragments whose first packet never comes cost
//! at most the window; forged ones (no message, a wrong offset, past the
//! message's end, another association's tag) never deliver, place or
//! write anything. Under CRC32C and the job key's MAC, placed or gathered.

use super::tests::pair_with;
use super::*;
use crate::wire::{Category, Common, Integrity, MsgKind, CHANNEL_REQUEST};

/// A segment that records what is claimed and written (every long
/// message is claimed, at its `dest_offset`).
struct Seg {
    mem: Vec<u8>,
    claimed: u32,
    writes: u32,
}

impl Seg {
    fn new() -> Seg {
        Seg {
            mem: vec![0; LEN + 4096],
            claimed: 0,
            writes: 0,
        }
    }
}

impl Placement<u32> for Seg {
    fn claim(&mut self, _: u32, _: u8, meta: &MsgMeta, len: usize) -> Option<u32> {
        assert!(
            meta.dest_offset as usize + len <= self.mem.len(),
            "claimed in bounds"
        );
        self.claimed += 1;
        Some(7)
    }
    fn write(&mut self, meta: &MsgMeta, at: usize, bytes: &[u8]) {
        self.writes += 1;
        let off = meta.dest_offset as usize + at;
        self.mem[off..off + bytes.len()].copy_from_slice(bytes);
    }
}

const LEN: usize = 60_000;
/// A path of an Ethernet MTU's datagrams.
const MTU_DATAGRAM: usize = 1472;

fn payload() -> Vec<u8> {
    (0..LEN).map(|i| (i * 13 + i / 977) as u8).collect()
}

/// 1472-byte datagrams; the packet window alone (the whole message
/// leaves at once).
fn cfg(mac: bool) -> ProtoConfig {
    ProtoConfig {
        max_datagram: MTU_DATAGRAM,
        congestion: false,
        mac: mac.then(|| crate::wire::mac::MacKey::from_job_key("more tests")),
        ..ProtoConfig::default()
    }
}

/// The datagrams of one long message of `LEN` bytes with two arguments
/// from node 0 to node 1 on 1472-byte datagrams, and the pair.
fn datagrams(mac: bool) -> (Vec<Vec<u8>>, [Protocol<u32>; 2]) {
    let mut n = pair_with(cfg(mac));
    let mut meta = MsgMeta::new(MsgKind::User, Category::Long, 3, &[9, 10]);
    meta.dest_offset = 1000;
    let p = n[0].payload_summed(&payload(), 0);
    n[0].send(Instant(1_000_000), 1, CHANNEL_REQUEST, meta, p);
    let mut d = Vec::new();
    n[0].drain_transmits::<8>(|b| d.extend(b.iter().map(|(_, pieces)| pieces.concat())));
    (d, n)
}

/// What node 1 delivered: (args, payload, placed length).
fn delivered(p: &mut Protocol<u32>) -> Vec<(Vec<u32>, Vec<u8>, Option<u32>)> {
    std::iter::from_fn(|| p.poll_event())
        .filter_map(|ev| match ev {
            Event::Delivered { meta, payload, .. } => {
                Some((meta.args().to_vec(), payload, meta.placed.map(|p| p.len)))
            }
            _ => None,
        })
        .collect()
}

fn feed(p: &mut Protocol<u32>, d: &[u8], seg: &mut Seg, placed: bool) {
    let now = Instant(1_000_000);
    if placed {
        p.handle_datagram_placing(now, 0, d, seg);
    } else {
        p.handle_datagram(now, 0, d);
    }
}

fn held(p: &mut Protocol<u32>) -> (usize, usize) {
    let s = p.slots[&0] as usize;
    let rx = &p.peers[s].rx[CHANNEL_REQUEST as usize];
    (rx.held.len(), rx.held_bytes)
}

/// The message came whole, once, with its arguments (from its first
/// packet: no later one carries them).
fn check_whole(got: &[(Vec<u32>, Vec<u8>, Option<u32>)], seg: &Seg, placed: bool, what: &str) {
    assert_eq!(got.len(), 1, "{what}: delivered once");
    assert_eq!(got[0].0, [9, 10], "{what}: the first packet's arguments");
    if placed {
        assert_eq!(got[0].2, Some(LEN as u32), "{what}");
        assert!(
            seg.mem[1000..1000 + LEN] == payload()[..],
            "{what}: placed whole"
        );
    } else {
        assert!(got[0].1 == payload(), "{what}: gathered whole");
    }
}

#[test]
fn every_datagram_after_the_first_carries_the_short_header_and_is_full() {
    use wire::layout::{read_u32, FLAGS_AT, FLAG_MORE, MORE_LEN_AT};
    for mac in [false, true] {
        let (d, _) = datagrams(mac);
        let trailer = if mac {
            wire::MAC_TRAILER_LEN
        } else {
            wire::CRC_LEN
        };
        // 1472 less the short header and the trailer: 28 + 4 per argument
        // (two here) more than the full header leaves
        let full = MTU_DATAGRAM - wire::MORE_HEADER_LEN - trailer;
        let old = MTU_DATAGRAM - wire::DATA_HEADER_LEN - 8 - trailer;
        assert_eq!(full - old, 36);
        let mut later = 0;
        for (k, x) in d.iter().enumerate().skip(1) {
            assert_eq!(
                x[FLAGS_AT] & FLAG_MORE,
                FLAG_MORE,
                "datagram {k}: short header"
            );
            let len = read_u32(x, MORE_LEN_AT).unwrap() as usize;
            assert_eq!(x.len(), wire::MORE_HEADER_LEN + len + trailer);
            if k + 1 < d.len() {
                // every one as long (GSO sends them in one call)
                assert_eq!((x.len(), len), (MTU_DATAGRAM, full), "datagram {k}");
            }
            later += len;
        }
        assert_eq!(d[0].len(), MTU_DATAGRAM, "the first datagram is full too");
        // the first datagram carries the rest (under CRC32C the 64-byte
        // head and a later fragment bundled, `ProtoConfig::cut`)
        let first = LEN - later;
        assert!(first < full, "{first}");
        assert_eq!(
            d.len(),
            1 + (LEN - first).div_ceil(full),
            "{} datagrams",
            d.len()
        );
    }
}

#[test]
fn later_fragments_ahead_of_their_first_wait_unwritten_then_complete_it() {
    for mac in [false, true] {
        for placed in [true, false] {
            let what = format!("mac {mac} placed {placed}");
            let (d, mut n) = datagrams(mac);
            let mut seg = Seg::new();
            // every later one first, newest first (another path's, faster)
            for x in d[1..].iter().rev() {
                feed(&mut n[1], x, &mut seg, placed);
            }
            assert!(delivered(&mut n[1]).is_empty(), "{what}: nothing yet");
            assert_eq!((seg.claimed, seg.writes), (0, 0), "{what}: nothing placed");
            assert!(seg.mem.iter().all(|&b| b == 0), "{what}: nothing written");
            let (count, bytes) = held(&mut n[1]);
            assert_eq!(count, d.len() - 1, "{what}: held within the window");
            assert!(bytes <= n[1].cfg.peer_buffer, "{what}");
            // then the first: the message whole, once
            feed(&mut n[1], &d[0], &mut seg, placed);
            check_whole(&delivered(&mut n[1]), &seg, placed, &what);
            assert_eq!(held(&mut n[1]), (0, 0), "{what}: nothing held after");
            assert_eq!(n[1].stats().corrupt_dropped, 0, "{what}");
        }
    }
}

#[test]
fn later_fragments_whose_first_never_comes_cost_at_most_the_window() {
    for mac in [false, true] {
        let (d, mut n) = datagrams(mac);
        let mut seg = Seg::new();
        // the first is lost for good; the rest arrive, twice
        for _ in 0..2 {
            for x in &d[1..] {
                feed(&mut n[1], x, &mut seg, true);
            }
        }
        let (count, bytes) = held(&mut n[1]);
        assert!(count <= crate::proto::limits::MAX_WINDOW, "{count} held");
        assert!(bytes <= n[1].cfg.peer_buffer);
        assert!(delivered(&mut n[1]).is_empty());
        assert_eq!((seg.claimed, seg.writes), (0, 0), "nothing placed");
        // forged ones far ahead (CRC32C: anyone with the tag can) are not held
        if !mac {
            let before = count;
            for seq in 65..400u32 {
                let c = Common {
                    vtag: 0xB1,
                    seq,
                    ..Default::default()
                };
                let mut f = Vec::new();
                wire::encode_more(&mut f, &Integrity::Crc32c, &c, 1 + seq * 1000, &[1; 1400]);
                feed(&mut n[1], &f, &mut seg, true);
            }
            assert_eq!(held(&mut n[1]).0, before, "none beyond the window held");
        }
    }
}

#[test]
fn forged_later_fragments_never_deliver_place_or_write_outside_their_message() {
    // CRC32C: a forger that knows the tag can seal anything; what a short
    // header says (offset, length) is judged against the message being
    // reassembled, never believed
    let (d, _) = datagrams(false);
    let forge = |seq: u32, off: u32, len: usize, vtag: u64| {
        let c = Common {
            vtag,
            seq,
            ..Default::default()
        };
        let mut f = Vec::new();
        wire::encode_more(&mut f, &Integrity::Crc32c, &c, off, &vec![0xEE; len]);
        f
    };
    // the first datagram's first packet (under CRC32C the 64-byte head,
    // a later fragment bundled after it: seq 1)
    let Some(Ok(head)) = wire::packets(&Integrity::Crc32c, &d[0]).next() else {
        panic!("a first packet");
    };
    let head = head.to_vec();
    let Ok(wire::Packet::Data { payload: p, .. }) = wire::decode(&Integrity::Crc32c, &head) else {
        panic!("the first packet has the full header");
    };
    let first_len = p.len() as u32;
    for placed in [true, false] {
        // (what, the forged packet in the second packet's place)
        let cases = [
            ("a wrong offset", forge(1, first_len + 100, 500, 0xB1)),
            ("an offset before", forge(1, 1, 500, 0xB1)),
            ("past the end", forge(1, first_len, LEN, 0xB1)),
            ("another tag", forge(1, first_len, 500, 0xB2)),
        ];
        for (what, f) in cases {
            let mut n = datagrams(false).1;
            let mut seg = Seg::new();
            feed(&mut n[1], &head, &mut seg, placed);
            let writes = seg.writes;
            feed(&mut n[1], &f, &mut seg, placed);
            assert_eq!(seg.writes, writes, "{what}: nothing written by it");
            assert!(
                seg.mem[1000 + first_len as usize..].iter().all(|&b| b == 0),
                "{what}: nothing past the first packet's bytes"
            );
            // the rest of the real message: whatever the forgery did, no
            // delivery of bytes other than the sender's
            for x in &d {
                feed(&mut n[1], x, &mut seg, placed);
            }
            let got = delivered(&mut n[1]);
            assert!(got.len() <= 1, "{what}: at most once");
            if what == "another tag" {
                check_whole(&got, &seg, placed, what);
            }
            for (args, bytes, placed_len) in got {
                assert_eq!(args, [9, 10], "{what}");
                if placed {
                    assert_eq!(placed_len, Some(LEN as u32));
                    assert!(seg.mem[1000..1000 + LEN] == payload()[..], "{what}");
                } else {
                    assert!(bytes == payload(), "{what}: the sender's bytes");
                }
            }
        }
    }
}

#[test]
fn a_later_fragment_replayed_or_of_another_association_is_refused_under_the_mac() {
    let (d, mut n) = datagrams(true);
    let mut seg = Seg::new();
    for x in &d[..5] {
        feed(&mut n[1], x, &mut seg, true);
    }
    // replayed: duplicates, not written again
    let writes = seg.writes;
    for x in &d[1..5] {
        feed(&mut n[1], x, &mut seg, true);
    }
    assert_eq!(seg.writes, writes, "a replay writes nothing");
    assert!(n[1].stats().duplicates_dropped >= 4);
    // another association's (another key): refused unread
    let (other, _) = {
        let mut m = pair_with(ProtoConfig {
            mac: Some(crate::wire::mac::MacKey::from_job_key("another job")),
            ..cfg(true)
        });
        let mut meta = MsgMeta::new(MsgKind::User, Category::Long, 3, &[9, 10]);
        meta.dest_offset = 1000;
        let p = m[0].payload_summed(&payload(), 0);
        m[0].send(Instant(1_000_000), 1, CHANNEL_REQUEST, meta, p);
        let mut d = Vec::new();
        m[0].drain_transmits::<8>(|b| d.extend(b.iter().map(|(_, pieces)| pieces.concat())));
        (d, m)
    };
    let corrupt = n[1].stats().corrupt_dropped;
    for x in &other[5..10] {
        feed(&mut n[1], x, &mut seg, true);
    }
    assert_eq!(seg.writes, writes, "another key's writes nothing");
    assert_eq!(n[1].stats().corrupt_dropped, corrupt + 5);
    // the real rest completes the message
    for x in &d[5..] {
        feed(&mut n[1], x, &mut seg, true);
    }
    check_whole(&delivered(&mut n[1]), &seg, true, "mac");
}

/// The bytes of each datagram of a 1 MiB Xfer (a Long request with three
/// arguments, as `examples/link_load.rs` sends) and of an 8 KiB Medium on
/// 1472-byte datagrams, under the job key's MAC (as the rails bench runs)
/// and CRC32C: what the first packet and a later one spend on headers,
/// printed (`--nocapture`), and a later fragment's payload at least 25
/// bytes more than the full header left (28 + 4 per argument).
#[test]
fn a_later_fragment_of_an_xfer_or_a_medium_carries_at_least_25_bytes_more() {
    use wire::layout::{read_u32, FLAGS_AT, FLAG_MORE, FRAG_LEN_AT, MORE_LEN_AT};
    for mac in [true, false] {
        let c = cfg(mac);
        let trailer = if mac {
            wire::MAC_TRAILER_LEN
        } else {
            wire::CRC_LEN
        };
        for (what, cat, len) in [
            ("1 MiB Xfer", Category::Long, 1 << 20),
            ("8 KiB Medium", Category::Medium, 8192),
        ] {
            let mut n = pair_with(c.clone());
            let meta = MsgMeta::new(MsgKind::User, cat, 3, &[1, 2, 3]);
            let p = n[0].payload_summed(&vec![7; len], 0);
            n[0].send(Instant(1_000_000), 1, CHANNEL_REQUEST, meta, p);
            let mut d = Vec::new();
            n[0].drain_transmits::<8>(|b| d.extend(b.iter().map(|(_, p)| p.concat())));
            // the old format: every fragment with the full header
            let old = MTU_DATAGRAM - wire::DATA_HEADER_LEN - 12 - trailer;
            let x = &d[1];
            assert_eq!(x[FLAGS_AT] & FLAG_MORE, FLAG_MORE, "{what}");
            let later = read_u32(x, MORE_LEN_AT).unwrap() as usize;
            let first = read_u32(&d[0], FRAG_LEN_AT).unwrap() as usize;
            eprintln!(
                "{what}, {}: {} datagrams of {} bytes; first packet: header {} + args 12 + \
                 payload {first} + trailer {trailer}; later: header {} + payload {later} + \
                 trailer {trailer} (was {old}: +{})",
                if mac { "MAC" } else { "CRC32C" },
                d.len(),
                x.len(),
                wire::DATA_HEADER_LEN,
                wire::MORE_HEADER_LEN,
                later - old
            );
            assert_eq!(x.len(), MTU_DATAGRAM, "{what}");
            assert_eq!(later - old, 28 + 12, "{what}");
            assert!(later - old >= 25);
        }
    }
}
