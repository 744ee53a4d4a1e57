//! A receive that stops before a long message's first fragment while a
//! message delivered ahead of it waits for its handler
//! (`Protocol::handle_datagram_holding`): what came before it in the
//! datagram is handled, nothing of it is, and handed again after the
//! dispatch it is placed (one copy) instead of gathered and copied again.
//! The stop reads an unchecked header: a forged or damaged fragment makes
//! its datagram wait one dispatch, then is refused and counted as any.

use super::tests::pair_with;
use super::*;
use crate::wire::mac::MacKey;
use crate::wire::{Category, MsgKind, CHANNEL_REQUEST};

const KEY: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
const LEN: usize = 100_000;

/// A segment that records every write; `between`: a dispatch runs
/// between receives (`Placement::dispatches_between`).
struct Seg {
    mem: Vec<u8>,
    claimed: u32,
    writes: usize,
    between: bool,
}

impl Placement<u32> for Seg {
    fn claim(&mut self, _: u32, _: u8, _: &MsgMeta, _: usize) -> Option<u32> {
        self.claimed += 1;
        Some(7)
    }
    fn write(&mut self, meta: &MsgMeta, at: usize, bytes: &[u8]) {
        let off = meta.dest_offset as usize + at;
        self.mem[off..off + bytes.len()].copy_from_slice(bytes);
        self.writes += 1;
    }
    fn dispatches_between(&self) -> bool {
        self.between
    }
}

fn seg(between: bool) -> Seg {
    Seg {
        mem: vec![0; 2 * LEN],
        claimed: 0,
        writes: 0,
        between,
    }
}

fn payload(k: usize) -> Vec<u8> {
    (0..LEN).map(|i| (i * 7 + i / 999 + k) as u8).collect()
}

/// The datagrams of two long messages of `LEN` bytes from node 0 to node
/// 1 under the MAC, sent back to back (the second to `LEN` in the
/// segment): the first's last fragment and the second's first share a
/// datagram, as a burst's do.
fn two_messages() -> (Vec<Vec<u8>>, [Protocol<u32>; 2]) {
    two_messages_of(LEN)
}

/// `two_messages`, the first `first` bytes long (at most `LEN`).
fn two_messages_of(first: usize) -> (Vec<Vec<u8>>, [Protocol<u32>; 2]) {
    let cfg = ProtoConfig {
        mac: Some(MacKey::from_job_key(KEY)),
        ..ProtoConfig::default()
    };
    let mut n = pair_with(cfg);
    for k in 0..2 {
        let mut meta = MsgMeta::new(MsgKind::User, Category::Long, 3, &[9]);
        meta.dest_offset = (k * LEN) as u64;
        let len = if k == 0 { first } else { LEN };
        let p = n[0].payload_summed(&payload(k)[..len], 0);
        n[0].send(Instant(1_000_000), 1, CHANNEL_REQUEST, meta, p);
    }
    let mut d = Vec::new();
    n[0].drain_transmits::<8>(|b| d.extend(b.iter().map(|(_, pieces)| pieces.concat())));
    (d, n)
}

/// The messages delivered (taken: a dispatch), each with the length it
/// was placed with (None: gathered, its bytes copied again).
fn dispatch(p: &mut Protocol<u32>) -> Vec<Option<u32>> {
    std::iter::from_fn(|| p.poll_event())
        .filter_map(|ev| match ev {
            Event::Delivered { meta, .. } => Some(meta.placed.map(|p| p.len)),
            _ => None,
        })
        .collect()
}

/// Feeds `d` as an endpoint's pump does: a datagram whose receive stops
/// is handed again, from where it stopped, after a dispatch. Returns
/// what was delivered and how many times a receive stopped.
fn pump(p: &mut Protocol<u32>, d: &[Vec<u8>], s: &mut Seg) -> (Vec<Option<u32>>, usize) {
    let (mut got, mut stops) = (Vec::new(), 0);
    for x in d {
        let now = Instant(1_000_000);
        match p.handle_datagram_holding(now, 0, x, s, true) {
            Some(at) => {
                stops += 1;
                got.extend(dispatch(p));
                assert_eq!(p.handle_datagram_holding(now, 0, &x[at..], s, false), None);
            }
            None => {}
        }
    }
    got.extend(dispatch(p));
    (got, stops)
}

#[test]
fn a_burst_of_long_messages_is_placed_with_one_copy_each() {
    let (d, mut n) = two_messages();
    let mut s = seg(true);
    let (got, stops) = pump(&mut n[1], &d, &mut s);
    assert_eq!(got, [Some(LEN as u32), Some(LEN as u32)], "both placed");
    assert_eq!(stops, 1, "one stop: before the second message");
    assert_eq!(s.claimed, 2);
    assert!(s.mem[..LEN] == payload(0)[..] && s.mem[LEN..] == payload(1)[..]);
    // as many writes as when every datagram is followed by a dispatch
    // (nothing waits at any start): one per fragment, one copy
    let (d2, mut m) = two_messages();
    let mut each = seg(true);
    for x in &d2 {
        m[1].handle_datagram_holding(Instant(1_000_000), 0, x, &mut each, true);
        dispatch(&mut m[1]);
    }
    assert_eq!(each.claimed, 2);
    assert_eq!(s.writes, each.writes, "one write per fragment: one copy");
    assert_eq!(n[1].stats().corrupt_dropped, 0);
}

#[test]
fn the_second_message_starts_behind_the_first_in_one_datagram() {
    // (what the stop is for: else it is gathered, and copied again)
    // the first's last fragment small: it shares a datagram with the
    // second's first
    let cfg = ProtoConfig {
        mac: Some(MacKey::from_job_key(KEY)),
        ..ProtoConfig::default()
    };
    let first = cfg.fragment_capacity(1) + 500;
    let (d, mut n) = two_messages_of(first);
    let mut s = seg(true);
    let mut stopped_inside = false;
    for x in &d {
        match n[1].handle_datagram_holding(Instant(1_000_000), 0, x, &mut s, true) {
            Some(at) => {
                stopped_inside |= at > 0;
                assert_eq!(
                    dispatch(&mut n[1]),
                    [Some(first as u32)],
                    "the first, whole"
                );
                n[1].handle_datagram_holding(Instant(1_000_000), 0, &x[at..], &mut s, false);
            }
            None => {}
        }
    }
    assert!(
        stopped_inside,
        "a datagram held the first's end and the second's start"
    );
}

#[test]
fn without_a_dispatch_between_receives_nothing_stops() {
    let (d, mut n) = two_messages();
    let mut s = seg(false);
    let (got, stops) = pump(&mut n[1], &d, &mut s);
    assert_eq!(stops, 0);
    // the second came behind the first's delivery: gathered, as before
    assert_eq!(got, [Some(LEN as u32), None]);
    assert_eq!(s.claimed, 1);
}

#[test]
fn nothing_stops_when_nothing_delivered_waits() {
    let (d, mut n) = two_messages();
    let mut s = seg(true);
    let mut stops = 0;
    for x in &d {
        // a dispatch after every datagram: nothing waits at any start
        stops += usize::from(
            n[1].handle_datagram_holding(Instant(1_000_000), 0, x, &mut s, true)
                .is_some(),
        );
        dispatch(&mut n[1]);
    }
    assert_eq!(stops, 0);
    assert_eq!(s.claimed, 2);
}

#[test]
fn a_damaged_first_fragment_waits_once_then_writes_and_delivers_nothing() {
    let (d, mut n) = two_messages();
    // the datagram where the second message starts, its last byte (the
    // second's tag) flipped
    let at = (0..d.len())
        .find(|&i| {
            let mut s = seg(true);
            let (d2, mut m) = two_messages();
            d2[..i].iter().for_each(|x| {
                m[1].handle_datagram_holding(Instant(1_000_000), 0, x, &mut s, false);
            });
            m[1].handle_datagram_holding(Instant(1_000_000), 0, &d2[i], &mut s, true)
                .is_some()
        })
        .expect("a datagram the receive stops at");
    let mut s = seg(true);
    for x in &d[..at] {
        n[1].handle_datagram_holding(Instant(1_000_000), 0, x, &mut s, true);
    }
    let mut bad = d[at].clone();
    *bad.last_mut().unwrap() ^= 0x40;
    let stop = n[1].handle_datagram_holding(Instant(1_000_000), 0, &bad, &mut s, true);
    let stop = stop.expect("the claim read unchecked: it waits one dispatch");
    assert_eq!(dispatch(&mut n[1]), [Some(LEN as u32)]);
    let (writes, claimed, mem) = (s.writes, s.claimed, s.mem.clone());
    let before = n[1].stats().corrupt_dropped;
    // handed again: it may not stop again; checked, refused, counted
    let again = n[1].handle_datagram_holding(Instant(1_000_000), 0, &bad[stop..], &mut s, false);
    assert_eq!(again, None);
    assert_eq!(
        n[1].stats().corrupt_dropped,
        before + 1,
        "counted as corrupt"
    );
    assert_eq!(
        (s.writes, s.claimed),
        (writes, claimed),
        "nothing claimed nor written"
    );
    assert!(s.mem == mem, "the segment untouched");
    assert!(dispatch(&mut n[1]).is_empty(), "nothing delivered");
    // the sender's copy, then the rest: the message whole, once, placed
    let (got, _) = pump(&mut n[1], &d[at..], &mut s);
    assert_eq!(got, [Some(LEN as u32)]);
    assert!(s.mem[LEN..] == payload(1)[..]);
}
