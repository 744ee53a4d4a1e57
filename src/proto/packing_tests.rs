//! A long message's small last fragment and the next message's first
//! share one full datagram (`send::cut_to_room`, `Outbox::open_room`,
//! `Outbox::drain_batches_keeping`): drained either way (the AM layer's
//! `drain_transmits`, the simulator's `poll_transmit`), the datagrams are
//! the same, all full but the last and one of ~2 KiB every few messages
//! (a last fragment that grew past `GATHER_MIN` goes alone), and the
//! receiver takes every message whole, once, in order. (Congestion
//! control off: a burst of 20 such messages goes at once, past the
//! initial window.)

use super::tests::pair_with;
use super::*;
use crate::wire::{Category, MsgKind, CHANNEL_REQUEST};

const MAX: usize = 65_507;

fn pair() -> [Protocol<u32>; 2] {
    pair_with(ProtoConfig {
        congestion: false,
        ..ProtoConfig::default()
    })
}

fn long(k: u32, nargs: usize) -> MsgMeta {
    let args: Vec<u32> = (0..nargs as u32).map(|i| k + i).collect();
    MsgMeta::new(MsgKind::User, Category::Long, 3, &args)
}

fn payload(k: u32, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32 ^ k.wrapping_mul(0x9e37)) as u8)
        .collect()
}

/// The datagrams `drain_transmits` hands out, each joined from its pieces.
fn drained(p: &mut Protocol<u32>) -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    p.drain_transmits::<8>(|b| v.extend(b.iter().map(|(_, pieces)| pieces.concat())));
    v
}

/// Sends `lens` (with `nargs` arguments each) from node 0 in one go; the
/// datagrams, drained (`poll`: by the simulator's `poll_transmit`).
fn burst(lens: &[usize], nargs: usize, poll: bool) -> (Vec<Vec<u8>>, [Protocol<u32>; 2]) {
    burst_of(lens, nargs, poll, false)
}

/// `burst`, each payload copied with its block sums when `summed`
/// (`Protocol::payload_summed`).
fn burst_of(
    lens: &[usize],
    nargs: usize,
    poll: bool,
    summed: bool,
) -> (Vec<Vec<u8>>, [Protocol<u32>; 2]) {
    let mut n = pair();

    let now = Instant(1_000_000);
    for (k, &len) in lens.iter().enumerate() {
        let meta = long(k as u32, nargs);
        let bytes = payload(k as u32, len);
        if summed {
            let p = n[0].payload_summed(&bytes, 0);
            n[0].send(now, 1, CHANNEL_REQUEST, meta, p);
        } else {
            n[0].send(now, 1, CHANNEL_REQUEST, meta, bytes);
        }
    }
    let d = if poll {
        let mut b = Vec::new();
        std::iter::from_fn(|| n[0].poll_transmit(&mut b).map(|_| b.clone())).collect()
    } else {
        drained(&mut n[0])
    };
    (d, n)
}

/// The payloads node 1 takes from `dgrams`, in order, and their first
/// arguments (when they have one).
fn taken(n: &mut [Protocol<u32>; 2], dgrams: &[Vec<u8>]) -> Vec<(Option<u32>, Vec<u8>)> {
    let now = Instant(1_000_000);
    for d in dgrams {
        n[1].handle_datagram(now, 0, d);
    }
    std::iter::from_fn(|| n[1].poll_event())
        .map(|ev| match ev {
            Event::Delivered { meta, payload, .. } => (meta.args().first().copied(), payload),
            other => panic!("{other:?}"),
        })
        .collect()
}

/// Whether `got` is the messages `lens` (as `burst` sends them), in order.
fn whole(got: &[(Option<u32>, Vec<u8>)], lens: &[usize], nargs: usize) -> bool {
    got.len() == lens.len()
        && got
            .iter()
            .zip(lens)
            .enumerate()
            .all(|(k, ((arg, bytes), &len))| {
                *arg == (nargs > 0).then_some(k as u32) && *bytes == payload(k as u32, len)
            })
}

fn sizes(d: &[Vec<u8>]) -> Vec<usize> {
    d.iter().map(Vec::len).collect()
}

#[test]
fn messages_of_64_kib_share_full_datagrams_and_arrive_whole() {
    // (three packets each, the first 64 bytes alone, `ProtoConfig::cut`:
    // 20 of them in the window of 64 packets)
    let lens = [65_536usize; 20];
    for nargs in [0, 16] {
        let (d, mut n) = burst(&lens, nargs, false);
        // unpacked: two datagrams each (65,507 bytes and a small one);
        // packed: full ones, but for one of ~2 KiB every few messages (a
        // last fragment grown past `GATHER_MIN` goes alone)
        assert!(d.iter().all(|x| x.len() <= MAX));
        assert!(
            d.len() <= lens.len() * 5 / 4 + 1,
            "{nargs} args: {:?}",
            sizes(&d)
        );
        let full = d.iter().filter(|x| x.len() == MAX).count();
        assert!(full >= lens.len() - 1, "{nargs} args: {:?}", sizes(&d));
        let (p, _) = burst(&lens, nargs, true);
        assert_eq!(p, d, "poll_transmit joins as drain_transmits does");
        assert!(
            whole(&taken(&mut n, &d), &lens, nargs),
            "every message whole, once, in order"
        );
    }
}

#[test]
fn a_message_of_several_full_fragments_is_not_cut_and_its_tail_is_joined() {
    // 1 MiB (its first 64 bytes alone, `ProtoConfig::cut`, riding with
    // the first of 16 full fragments, and a small last one), then 64 KiB
    // twice, then a short one: only a fragment before a message's small
    // last one is cut (the full ones of the 1 MiB message go as they are)
    let lens = [1 << 20, 65_536, 65_536, 10];
    let (d, mut n) = burst(&lens, 2, false);
    assert!(d.iter().all(|x| x.len() <= MAX));
    // the 1 MiB's last fragment (~1.2 KiB: its later fragments' short
    // headers left it under `GATHER_MIN`) rides with the next message
    assert!(d[..18].iter().all(|x| x.len() == MAX), "{:?}", sizes(&d));
    // unpacked: 18 + 3 + 3 + 1
    assert_eq!(d.len(), 19, "{:?}", sizes(&d));
    let (p, _) = burst(&lens, 2, true);
    assert_eq!(p, d);
    assert!(
        whole(&taken(&mut n, &d), &lens, 2),
        "every message whole, once, in order"
    );
}

#[test]
fn a_held_last_fragment_stays_until_the_next_drain_and_the_queue_does_not_grow() {
    let mut n = pair();

    let now = Instant(1_000_000);
    let (mut all, mut kept, mut one_full) = (Vec::new(), 0, 0);
    for k in 0..20u32 {
        n[0].send(now, 1, CHANNEL_REQUEST, long(k, 1), payload(k, 65_536));
        let mut v = Vec::new();
        if n[0].drain_transmits_keeping::<8>(1, |b| v.extend(b.iter().map(|(_, p)| p.concat()))) {
            kept += 1;
        }
        // what stays is one small fragment: the queue's bytes do not grow
        assert!(n[0].out.bytes.len() < 4096, "{}", n[0].out.bytes.len());
        if sizes(&v) == [MAX] {
            // the one before's last fragment went with this one's first
            one_full += 1;
        }
        all.extend(v);
    }
    // (every few messages a last fragment past `GATHER_MIN` goes alone,
    // and the next message's first is not cut)
    assert!(
        kept >= 16 && one_full >= 14,
        "kept {kept}, one full datagram {one_full}"
    );
    all.extend(drained(&mut n[0]));
    assert!(!n[0].out.has_transmits());
    let lens = [65_536; 20];
    assert!(
        whole(&taken(&mut n, &all), &lens, 1),
        "every message whole, once, in order"
    );
}

#[test]
fn payloads_copied_with_their_block_sums_go_out_as_the_same_datagrams() {
    // 64 KiB messages cut where the datagrams fall (inside 4 KiB blocks),
    // odd lengths, one shorter than a block
    let lens = [65_536usize, 65_536, 100_000, 4095, 9_000, 65_536, 200_001];
    for nargs in [0, 5] {
        let (plain, _) = burst_of(&lens, nargs, false, false);
        let (d, mut n) = burst_of(&lens, nargs, false, true);
        assert_eq!(
            d, plain,
            "{nargs} args: the trailers from the sums are the direct ones"
        );
        assert!(whole(&taken(&mut n, &d), &lens, nargs));
        assert_eq!(n[1].stats().corrupt_dropped, 0);
        // acknowledged, the sums' vectors are kept for the next messages
        // (where this CPU makes sums)
        assert!(n[0].spare_msgs.sums.is_empty());
        n[1].handle_timeout(Instant(1_500_000_000));
        let acks = drained(&mut n[1]);
        assert!(!acks.is_empty());
        for a in &acks {
            n[0].handle_datagram(Instant(1_500_000_000), 1, a);
        }
        let kept = n[0].spare_msgs.sums.len();
        let p = n[0].payload_summed(&[7; 8192], 0);
        if !p.sums.is_empty() {
            assert!(kept >= 4, "{kept} sums' vectors kept");
            assert_eq!(n[0].spare_msgs.sums.len(), kept - 1, "one taken again");
        }
    }
}
