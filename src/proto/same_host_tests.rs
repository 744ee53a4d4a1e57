//! Same-host rings (`Protocol::set_same_host`, `handle_ring_datagram`):
//! toward a peer reached by a ring whose ends proved one job, DATA, ACK and
//! NACK carry an unchecked trailer of zeros (`wire::Integrity::SameHost`);
//! the receiver opens them so only when they came through such a ring.
//! The same datagrams by any other way fail their check; a forged one
//! (another tag) is refused there too; a peer's sealed datagrams pass both
//! ways.

use std::net::SocketAddr;

use super::test_pair::{addr, pair, A, B};
use super::*;
use crate::wire::{Category, MsgKind, CHANNEL_REQUEST};

/// B's request `k` to A with `len` bytes of payload, as datagrams.
fn request(n: &mut [Protocol<SocketAddr>; 2], now: Instant, k: u32, len: usize) -> Vec<Vec<u8>> {
    let meta = MsgMeta::new(MsgKind::User, Category::Medium, 1, &[k]);
    n[1].send(now, addr(A), CHANNEL_REQUEST, meta, vec![7; len]);
    let mut b = Vec::new();
    std::iter::from_fn(|| n[1].poll_transmit(&mut b).map(|_| b.clone())).collect()
}

fn delivered(p: &mut Protocol<SocketAddr>) -> Vec<(u32, usize)> {
    std::iter::from_fn(|| p.poll_event())
        .filter_map(|ev| match ev {
            Event::Delivered { meta, payload, .. } => Some((meta.args()[0], payload.len())),
            _ => None,
        })
        .collect()
}

#[test]
fn unsealed_datagrams_pass_only_through_a_proven_ring() {
    for key in [None, Some("a job key of sixteen or more")] {
        let mut n = pair(key);
        let trailer = n[1].cfg.integrity.trailer_len();
        let now = Instant(1_000_000);
        n[1].set_same_host(addr(A), true);
        // a short one and a long one (gathered from its payload)
        for (k, len) in [(1, 10), (2, 20_000)] {
            let d = request(&mut n, now, k, len);
            assert!(!d.is_empty());
            assert!(
                d.iter()
                    .all(|d| d[d.len() - trailer..].iter().all(|&b| b == 0)),
                "{key:?}: unsealed"
            );
            // by UDP: every one fails its check, nothing is delivered
            let dropped = n[0].stats().corrupt_dropped;
            for x in &d {
                n[0].handle_datagram(now, addr(B), x);
            }
            assert_eq!(
                n[0].stats().corrupt_dropped - dropped,
                d.len() as u64,
                "{key:?}"
            );
            assert!(delivered(&mut n[0]).is_empty());
            // another association's tag through the ring: refused
            for x in &d {
                let mut f = x.clone();
                f[wire::layout::VTAG_AT] ^= 1;
                n[0].handle_ring_datagram(now, addr(B), &f, &mut NoPlacement);
            }
            assert!(delivered(&mut n[0]).is_empty());
            // through the ring: delivered
            for x in &d {
                n[0].handle_ring_datagram(now, addr(B), x, &mut NoPlacement);
            }
            assert_eq!(delivered(&mut n[0]), [(k, len)], "{key:?}");
        }
        // sealed again (the ring dropped): both ways take them
        n[1].set_same_host(addr(A), false);
        let d = request(&mut n, now, 3, 10);
        assert!(d
            .iter()
            .all(|d| d[d.len() - trailer..].iter().any(|&b| b != 0)));
        for x in &d {
            n[0].handle_ring_datagram(now, addr(B), x, &mut NoPlacement);
        }
        assert_eq!(delivered(&mut n[0]), [(3, 10)], "{key:?}");
        let d = request(&mut n, now, 4, 10);
        for x in &d {
            n[0].handle_datagram(now, addr(B), x);
        }
        assert_eq!(delivered(&mut n[0]), [(4, 10)], "{key:?}");
    }
}

/// B streams 65,000-byte requests to A; A takes each packet at once and
/// acknowledges it. Through a proven ring B never has more in flight than
/// the ring surely holds (`ProtoConfig::same_host_flight`, set from
/// `net::RING_FLIGHT`) and one packet more (the window lets one go while
/// room is left), whatever its congestion window allows: a full ring loses
/// what it refuses (`Transports::send_batch`). By UDP the same window lets
/// more go at once. Every message arrives either way.
#[test]
fn a_ring_peer_is_sent_no_more_than_its_ring_holds() {
    const COUNT: u32 = 16;
    // a ring's worth (the AM layer sets `net::RING_FLIGHT`; the protocol
    // sits below the transports and takes any bound)
    let flight: u64 = 327_488;
    let packet = ProtoConfig::default().max_datagram as u64 + congestion::PACKET_OVERHEAD;
    for ring in [true, false] {
        let mut n = pair(None);
        for p in &mut n {
            p.cfg.same_host_flight = flight;
        }
        n[1].set_same_host(addr(A), ring);
        let mut now = Instant(1_000_000);
        for k in 0..COUNT {
            let meta = MsgMeta::new(MsgKind::User, Category::Medium, 1, &[k]);
            n[1].send(now, addr(A), CHANNEL_REQUEST, meta, vec![7; 65_000]);
        }
        let (mut most, mut got, mut b) = (0, Vec::new(), Vec::new());
        for _ in 0..10_000 {
            let d: Vec<_> =
                std::iter::from_fn(|| n[1].poll_transmit(&mut b).map(|_| b.clone())).collect();
            most = most.max(n[1].paths().map(|(_, _, f)| f).sum::<u64>());
            n[1].check_invariants();
            for x in &d {
                if ring {
                    n[0].handle_ring_datagram(now, addr(B), x, &mut NoPlacement);
                } else {
                    n[0].handle_datagram(now, addr(B), x);
                }
            }
            got.extend(delivered(&mut n[0]));
            let acks: Vec<_> =
                std::iter::from_fn(|| n[0].poll_transmit(&mut b).map(|_| b.clone())).collect();
            for x in &acks {
                n[1].handle_datagram(now, addr(A), x);
            }
            if got.len() == COUNT as usize {
                break;
            }
            now = now.plus(10 * crate::time::MICROS);
            n[0].handle_timeout(now);
            n[1].handle_timeout(now);
        }
        let want: Vec<_> = (0..COUNT).map(|k| (k, 65_000)).collect();
        assert_eq!(got, want, "ring {ring}");
        if ring {
            assert!(
                most <= flight + packet,
                "{most} bytes in flight through a ring"
            );
        } else {
            assert!(most > flight + packet, "{most} bytes in flight by UDP");
        }
    }
}

/// `express_quiet` answers `express_ready`'s question without acting: a
/// peer with nothing of ours unfinished is quiet; with a user request in
/// flight to it as well (an express record may pass that); not with a put
/// in flight (which keeps its place); an ACK owed to it is told (and only `express_ready` sends
/// it, after which the peer is quiet with nothing owed).
#[test]
fn express_quiet_asks_what_express_ready_asks_without_sending() {
    let mut n = pair(None);
    let now = Instant(1_000_000);
    assert_eq!(n[1].express_quiet(&addr(A)), Some(false));
    // a peer we have no association with: nothing unfinished there
    let stranger: SocketAddr = "127.0.0.1:9".parse().unwrap();
    assert_eq!(n[1].express_quiet(&stranger), Some(false));
    assert!(n[1].express_ready(&stranger));
    // B's user request in flight to A: an express record may pass it
    // (`MsgMeta::may_be_overtaken`), nothing owed
    let mut d = request(&mut n, now, 1, 10);
    assert_eq!(n[1].express_quiet(&addr(A)), Some(false));
    // a put behind it keeps its place: not quiet, and express_ready agrees
    let put = MsgMeta::new(MsgKind::Put, Category::Medium, 0, &[2]);
    n[1].send(now, addr(A), CHANNEL_REQUEST, put, vec![7; 10]);
    let mut b = Vec::new();
    d.extend(std::iter::from_fn(|| {
        n[1].poll_transmit(&mut b).map(|_| b.clone())
    }));
    assert_eq!(n[1].express_quiet(&addr(A)), None);
    assert!(!n[1].express_ready(&addr(A)));
    // A took them and owes B its ACK: told, nothing sent by the question
    for x in &d {
        n[0].handle_datagram(now, addr(B), x);
    }
    assert_eq!(delivered(&mut n[0]), [(1, 10), (2, 10)]);
    while n[0].poll_transmit(&mut b).is_some() {}
    assert_eq!(n[0].express_quiet(&addr(B)), Some(true));
    assert_eq!(n[0].express_quiet(&addr(B)), Some(true));
    assert!(!n[0].has_transmits(), "the question sent nothing");
    // express_ready sends it: one ACK, then nothing is owed
    assert!(n[0].express_ready(&addr(B)));
    let acks: Vec<Vec<u8>> =
        std::iter::from_fn(|| n[0].poll_transmit(&mut b).map(|_| b.clone())).collect();
    assert_eq!(acks.len(), 1);
    assert_eq!(n[0].express_quiet(&addr(B)), Some(false));
    // B takes the ACK: its request is finished, B is quiet toward A
    n[1].handle_datagram(now, addr(A), &acks[0]);
    assert_eq!(n[1].express_quiet(&addr(A)), Some(false));
    assert!(n[1].express_ready(&addr(A)));
}
