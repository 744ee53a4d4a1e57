//! A long message's later fragments are checked as their payload is copied
//! where it goes (`Protocol::take_deferred`): into the segment of a placed
//! message or the reassembly buffer of a gathered one. The bytes delivered
//! are the sender's, once; a fragment whose sum fails is dropped as
//! corrupt, what it appended is taken back, and the sender's copy of it
//! then completes the message; damage anywhere in a packet (header,
//! arguments, payload, trailer) never delivers other bytes.

use super::tests::{long_message, pair, Seg};
use super::*;

const LEN: usize = 200_000;

fn payload() -> Vec<u8> {
    (0..LEN).map(|i| (i * 31 + i / 1000) as u8).collect()
}

/// The datagrams of one long message of `LEN` bytes from node 0 to node 1.
fn datagrams() -> (Vec<Vec<u8>>, [Protocol<u32>; 2]) {
    let mut n = pair();
    (long_message(&mut n, &payload()), n)
}

/// What node 1 delivered: (payload, placed length).
fn delivered(p: &mut Protocol<u32>) -> Vec<(Vec<u8>, Option<u32>)> {
    std::iter::from_fn(|| p.poll_event())
        .filter_map(|ev| match ev {
            Event::Delivered { meta, payload, .. } => Some((payload, meta.placed.map(|p| p.len))),
            _ => None,
        })
        .collect()
}

fn feed(p: &mut Protocol<u32>, d: &[u8], place: Option<&mut Seg>) {
    match place {
        Some(s) => p.handle_datagram_placing(Instant(1_000_000), 0, d, s),
        None => p.handle_datagram(Instant(1_000_000), 0, d),
    }
}

/// Whether this CPU checks in place (else the packets are checked first,
/// as any: the tests still hold, without the in-place count).
fn in_place() -> bool {
    let mut v = Vec::new();
    crate::wire::extend_sum(&mut v, &[0; 4096]).is_some()
}

#[test]
fn later_fragments_are_checked_where_they_are_copied_placed_or_gathered() {
    for placed in [true, false] {
        let (d, mut n) = datagrams();
        assert!(d.len() >= 4, "{} datagrams", d.len());
        let mut seg = Seg::new(LEN, true);
        for x in &d {
            feed(&mut n[1], x, placed.then_some(&mut seg));
        }
        let got = delivered(&mut n[1]);
        assert_eq!(got.len(), 1, "delivered once");
        if placed {
            assert_eq!(seg.claimed, 1);
            assert_eq!(got[0].1, Some(LEN as u32));
            assert!(seg.mem == payload(), "placed whole");
        } else {
            assert!(got[0].0 == payload(), "gathered whole");
        }
        // the first datagram's head is checked first (its header says
        // where the message goes); the fragments after it in place
        if in_place() {
            assert!(n[1].checked_in_place() >= 3, "{}", n[1].checked_in_place());
        }
        assert_eq!(n[1].stats().corrupt_dropped, 0);
    }
}

#[test]
fn a_fragment_damaged_anywhere_is_dropped_and_its_sound_copy_completes_the_message() {
    let (d, _) = datagrams();
    // the second datagram: one later fragment alone (its short header,
    // payload, trailer)
    let victim = 1;
    let len = d[victim].len();
    let header = crate::wire::MORE_HEADER_LEN;
    let at: Vec<usize> = [
        3,
        13,
        16,
        20,
        32,
        36,
        50,
        60,
        64,
        header - 1,
        header,
        len / 2,
        len - 5,
    ]
    .into_iter()
    .chain(len - 4..len)
    .collect();
    for placed in [true, false] {
        for &i in &at {
            let (d, mut n) = datagrams();
            let mut seg = Seg::new(LEN, true);
            let mut bad = d[victim].clone();
            bad[i] ^= 0x40;
            for x in &d[..victim] {
                feed(&mut n[1], x, placed.then_some(&mut seg));
            }
            let before = n[1].stats().corrupt_dropped;
            feed(&mut n[1], &bad, placed.then_some(&mut seg));
            assert_eq!(
                n[1].stats().corrupt_dropped,
                before + 1,
                "byte {i} (placed {placed}): dropped as corrupt"
            );
            assert!(delivered(&mut n[1]).is_empty(), "byte {i}: nothing yet");
            // the sound copy (the sender's retransmission), then the rest:
            // the message whole, once, its bytes the sender's
            for x in &d[victim..] {
                feed(&mut n[1], x, placed.then_some(&mut seg));
            }
            let got = delivered(&mut n[1]);
            assert_eq!(got.len(), 1, "byte {i} (placed {placed}): once");
            if placed {
                assert!(
                    seg.mem == payload(),
                    "byte {i}: the segment holds the sender's bytes"
                );
            } else {
                assert!(got[0].0 == payload(), "byte {i}: the sender's bytes");
            }
        }
    }
}

#[test]
fn a_repeated_fragment_is_a_duplicate_not_appended_twice() {
    for placed in [true, false] {
        let (d, mut n) = datagrams();
        let mut seg = Seg::new(LEN, true);
        for (k, x) in d.iter().enumerate() {
            feed(&mut n[1], x, placed.then_some(&mut seg));
            if k + 1 < d.len() {
                // each again, at once: a duplicate
                feed(&mut n[1], x, placed.then_some(&mut seg));
            }
        }
        let got = delivered(&mut n[1]);
        assert_eq!(got.len(), 1);
        if placed {
            assert!(seg.mem == payload());
        } else {
            assert!(got[0].0 == payload());
        }
        assert!(n[1].stats().duplicates_dropped >= d.len() as u64 - 1);
        assert_eq!(n[1].stats().corrupt_dropped, 0);
    }
}
