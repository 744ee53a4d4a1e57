//! The outbox's tests: order, batches, bundles, gathered datagrams.
use super::*;

/// The path to peer `to` (the one of today).
fn on(to: u32) -> Path<u32> {
    Path::from_name(to)
}

#[test]
fn drained_in_order_in_batches_then_empty() {
    let mut o: Outbox<u32> = Outbox::new(65507);
    for n in [1usize, 70] {
        for i in 0..n {
            let s = o.start();
            o.bytes.extend(std::iter::repeat_n(i as u8, i + 1));
            o.push(on(i as u32), s);
        }
        let mut sizes = Vec::new();
        let mut next = 0u32;
        o.drain_batches::<32>(|b| {
            sizes.push(b.len());
            for &(to, d) in b {
                assert_eq!(to, on(next));
                assert_eq!(d[0], &vec![next as u8; next as usize + 1][..]);
                assert!(d[1].is_empty() && d[2].is_empty());
                next += 1;
            }
        });
        assert_eq!(next as usize, n);
        assert_eq!(sizes, if n == 1 { vec![1] } else { vec![32, 32, 6] });
        assert!(!o.has_transmits() && o.bytes.is_empty());
    }
    o.drain_batches::<32>(|_| panic!("nothing to drain"));
}

/// An association packet (a NACK) of `seq` to be queued for `to`.
fn nack(o: &mut Outbox<u32>, to: u32, seq: u32) {
    let s = o.start();
    let c = crate::wire::Common {
        seq,
        ..Default::default()
    };
    crate::wire::encode_nack(&mut o.bytes, &crate::wire::Integrity::Crc32c, &c, false);
    o.push(on(to), s);
}

#[test]
fn small_packets_to_one_peer_are_joined_up_to_the_bounds() {
    use crate::wire::{decode, packets, Integrity, Packet};
    let integ = Integrity::Crc32c;
    // 70 to peer 1, 3 to peer 2, 1 to peer 1; a handshake packet alone
    let mut o: Outbox<u32> = Outbox::new(65507);
    for seq in 0..70 {
        nack(&mut o, 1, seq);
    }
    for seq in 70..73 {
        nack(&mut o, 2, seq);
    }
    nack(&mut o, 1, 73);
    let s = o.start();
    crate::wire::encode_abort(&mut o.bytes, &integ, 5);
    o.push(on(1), s);
    nack(&mut o, 1, 74);
    let want: Vec<(u32, Vec<u32>)> = vec![
        (1, (0..32).collect()),
        (1, (32..64).collect()),
        (1, (64..70).collect()),
        (2, (70..73).collect()),
        (1, vec![73]),
        (1, vec![]), // the ABORT
        (1, vec![74]),
    ];
    let seqs = |d: &[u8]| -> Vec<u32> {
        packets(&integ, d)
            .filter_map(|p| match decode(&integ, p.unwrap()).unwrap() {
                Packet::Nack { common, .. } => Some(common.seq),
                _ => None,
            })
            .collect()
    };
    let mut got = Vec::new();
    o.drain_batches::<4>(|b| {
        for &(to, p) in b {
            assert!(p[1].is_empty() && p[2].is_empty());
            got.push((to.remote, seqs(p[0])));
        }
    });
    assert_eq!(got, want);
    assert_eq!(o.stats.packets_sent, 76);
    // the simulator's pop joins them alike
    let mut o: Outbox<u32> = Outbox::new(65507);
    for seq in 0..70 {
        nack(&mut o, 1, seq);
    }
    let mut buf = Vec::new();
    let mut got = Vec::new();
    while let Some(to) = o.pop(&mut buf) {
        got.push((to, seqs(&buf)));
    }
    assert_eq!(got, want[..3]);
    // and never past max_datagram: a NACK is 36 bytes
    let mut o: Outbox<u32> = Outbox::new(100);
    for seq in 0..5 {
        nack(&mut o, 1, seq);
    }
    let mut sizes = Vec::new();
    o.drain_batches::<8>(|b| sizes.extend(b.iter().map(|(_, p)| p[0].len())));
    assert_eq!(sizes, [72, 72, 36]);
}

#[test]
fn gathered_datagrams_come_out_in_their_pieces_and_pop_joined() {
    use crate::proto::event::MsgId;
    use crate::wire::{Category, MsgKind, MsgMeta};
    let m = Arc::new(OutMsg {
        id: 1 as MsgId,
        meta: MsgMeta::new(MsgKind::User, Category::Long, 0, &[]),
        payload: (0..100u8).collect(),
        sums: Vec::new(),
        digest: None,
    });
    let mut o: Outbox<u32> = Outbox::new(65507);
    for (to, off) in [(1u32, 0u32), (2, 50)] {
        let s = o.start();
        o.bytes.extend_from_slice(b"head");
        let t = o.bytes.len();
        o.bytes.extend_from_slice(b"tl");
        let piece = Piece {
            msg: m.clone(),
            off,
            len: 50,
        };
        o.push_gathered(on(to), s, t, piece);
    }
    let s = o.start();
    o.bytes.extend_from_slice(b"plain");
    o.push(on(3), s);
    assert_eq!(o.stats.total_bytes_sent, 2 * 56 + 5);
    let mut seen = Vec::new();
    o.drain_batches::<2>(|b| {
        for &(to, p) in b {
            seen.push((to.remote, p.concat()));
        }
    });
    let mid = |off: usize| [&b"head"[..], &m.payload[off..off + 50], b"tl"].concat();
    assert_eq!(
        seen,
        vec![(1, mid(0)), (2, mid(50)), (3, b"plain".to_vec())]
    );
    assert_eq!(Arc::strong_count(&m), 1, "the outbox let the message go");
    // the simulator's pop joins the pieces
    let s = o.start();
    o.bytes.extend_from_slice(b"head");
    let t = o.bytes.len();
    let piece = Piece {
        msg: m.clone(),
        off: 10,
        len: 5,
    };
    o.push_gathered(on(7), s, t, piece);
    let mut buf = Vec::new();
    assert_eq!(o.pop(&mut buf), Some(7));
    assert_eq!(buf, [&b"head"[..], &m.payload[10..15]].concat());
    assert_eq!(o.pop(&mut buf), None);
}
