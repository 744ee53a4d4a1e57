//! Aliases (`alias.rs`): a peer's packets from another port of its host
//! are the peer's when they carry its association's tag and seal (under a
//! MAC; under CRC32C alone never); no other packet is, and each forged one
//! costs a bounded effort.

use std::net::SocketAddr;

use super::test_pair::{addr, pair, A, B};
use super::*;
use crate::wire::{Category, Integrity, MsgKind, Packet, CHANNEL_REQUEST};

/// The job key of the pairs that learn aliases.
const KEY: Option<&str> = Some("a job key of sixteen or more");

/// B's request `k` to A, as datagrams.
fn request_from_b(n: &mut [Protocol<SocketAddr>; 2], now: Instant, k: u32) -> Vec<Vec<u8>> {
    let meta = MsgMeta::new(MsgKind::User, Category::Short, 1, &[k]);
    n[1].send(now, addr(A), CHANNEL_REQUEST, meta, vec![7]);
    let mut b = Vec::new();
    std::iter::from_fn(|| n[1].poll_transmit(&mut b).map(|to| (to, b.clone())))
        .map(|(to, d)| {
            assert_eq!(to, addr(A));
            d
        })
        .collect()
}

/// B's request `k` to A under the tag `tag` (of no association of A's),
/// whole and sound.
fn request_from_b_tagged(
    n: &mut [Protocol<SocketAddr>; 2],
    now: Instant,
    k: u32,
    tag: u64,
) -> Vec<Vec<u8>> {
    let s = n[1].find_peer(&addr(A)).unwrap();
    let integ = n[1].cfg.integrity.clone();
    let a = &mut n[1].peers[s].assoc;
    let true_tag = std::mem::replace(&mut a.peer_tag, tag);
    a.keyed(&integ);
    let d = request_from_b(n, now, k);
    let a = &mut n[1].peers[s].assoc;
    a.peer_tag = true_tag;
    a.keyed(&integ);
    d
}

/// What A delivered: (sender, first argument).
fn delivered(p: &mut Protocol<SocketAddr>) -> Vec<(SocketAddr, u32)> {
    std::iter::from_fn(|| p.poll_event())
        .filter_map(|ev| match ev {
            Event::Delivered { from, meta, .. } => Some((from, meta.args()[0])),
            _ => None,
        })
        .collect()
}

fn feed(p: &mut Protocol<SocketAddr>, now: Instant, from: &str, dgrams: &[Vec<u8>]) {
    for d in dgrams {
        p.handle_datagram(now, addr(from), d);
    }
}

#[test]
fn a_peers_packet_from_another_port_of_its_host_is_the_peers() {
    {
        let key = KEY;
        let mut n = pair(key);
        let now = Instant(1_000_000);
        let d = request_from_b(&mut n, now, 5);
        feed(&mut n[0], now, "127.0.0.1:3000", &d);
        assert_eq!(delivered(&mut n[0]), [(addr(B), 5)], "{key:?}");
        assert_eq!(n[0].alias_counts(), (1, 1));
        // the next one is known at once; the peer is still found by its name
        let d = request_from_b(&mut n, now, 6);
        feed(&mut n[0], now, "127.0.0.1:3000", &d);
        assert_eq!(delivered(&mut n[0]), [(addr(B), 6)]);
        assert_eq!(
            n[0].find_peer(&addr(B)),
            n[0].find_peer(&addr("127.0.0.1:3000"))
        );
        assert_eq!(n[0].alias_counts(), (1, 1));
    }
}

/// Under CRC32C alone nothing proves where a packet comes from but its
/// address: one from another port is nobody's, even with the peer's tag
/// and a sound sum (a forger on the host who learnt the tag could make
/// any port the peer's: `tests/hostile_flood.rs`).
#[test]
fn without_a_mac_a_packet_from_another_port_is_nobodys() {
    let mut n = pair(None);
    let now = Instant(1_000_000);
    let d = request_from_b(&mut n, now, 5);
    let stale = n[0].stats().stale_dropped;
    feed(&mut n[0], now, "127.0.0.1:3000", &d);
    assert_eq!(delivered(&mut n[0]), []);
    assert_eq!(n[0].alias_counts(), (0, 0));
    assert_eq!(n[0].stats().stale_dropped, stale + 1);
    // from B's name it is B's
    feed(&mut n[0], now, B, &d);
    assert_eq!(delivered(&mut n[0]), [(addr(B), 5)]);
}

#[test]
fn forged_packets_from_new_ports_are_nobodys() {
    for key in [None, Some("a job key of sixteen or more")] {
        let mut n = pair(key);
        let now = Instant(1_000_000);
        let d = request_from_b(&mut n, now, 5);
        let stale = n[0].stats().stale_dropped;
        // another host's port, with the right tag: not B's
        feed(&mut n[0], now, "127.0.0.2:3000", &d);
        // the tag of no association
        let wrong = request_from_b_tagged(&mut n, now, 9, 0xEE);
        feed(&mut n[0], now, "127.0.0.1:3001", &wrong);
        assert_eq!(delivered(&mut n[0]), [], "{key:?}");
        assert_eq!(n[0].alias_counts(), (0, 0));
        assert_eq!(n[0].stats().stale_dropped, stale + 2);
        if key.is_some() {
            // B's tag, another body: the seal fails, nothing is learnt
            let mut forged = d.clone();
            let last = forged[0].len() - 20;
            forged[0][last] ^= 1;
            feed(&mut n[0], now, "127.0.0.1:3002", &forged);
            assert_eq!(delivered(&mut n[0]), []);
            assert_eq!(n[0].alias_counts(), (0, 0));
        }
        // B's own packet from B's host still gets through (with a MAC
        // that proves it B's)
        feed(&mut n[0], now, "127.0.0.1:3003", &d);
        let b = if key.is_some() {
            vec![(addr(B), 5)]
        } else {
            vec![]
        };
        assert_eq!(delivered(&mut n[0]), b);
    }
}

#[test]
fn a_peer_has_one_alias_and_a_peer_made_at_it_takes_it_back() {
    let mut n = pair(KEY);
    let now = Instant(1_000_000);
    let d = request_from_b(&mut n, now, 1);
    feed(&mut n[0], now, "127.0.0.1:3000", &d);
    let d = request_from_b(&mut n, now, 2);
    feed(&mut n[0], now, "127.0.0.1:3001", &d);
    assert_eq!(delivered(&mut n[0]), [(addr(B), 1), (addr(B), 2)]);
    // the second replaced the first
    assert_eq!(n[0].alias_counts(), (2, 1));
    assert_eq!(n[0].find_peer(&addr("127.0.0.1:3000")), None);
    // a peer of its own at the alias (a new process bound to the port):
    // the alias is B's no more, and B is still B
    n[0].connect(now, addr("127.0.0.1:3001"));
    assert_eq!(n[0].alias_counts(), (2, 0));
    let (b, c) = (
        n[0].find_peer(&addr(B)),
        n[0].find_peer(&addr("127.0.0.1:3001")),
    );
    assert!(b.is_some() && c.is_some() && b != c);
}

/// Unknown tags from new ports walk the peers at most at the rate of
/// unsolicited answers, and a flood of them keeps no peer's packets from
/// a new port out.
#[test]
fn a_flood_of_unknown_tags_walks_the_peers_at_a_bounded_rate() {
    let cfg = ProtoConfig {
        unsolicited_rate: 1,
        unsolicited_burst: 3,
        mac: KEY.map(crate::wire::mac::MacKey::from_job_key),
        ..ProtoConfig::default()
    };
    let mut n = [
        Protocol::new(cfg.clone(), &[0x10; 32]),
        Protocol::new(cfg, &[0x20; 32]),
    ];
    n[0].associate(addr(B), 0xA0, 0xB1);
    n[1].associate(addr(A), 0xB1, 0xA0);
    let now = Instant(1_000_000);
    // (from another pair: the request's sequence number is B's first)
    let wrong = request_from_b_tagged(&mut pair(KEY), now, 9, 0xEE);
    for port in 3000..3100 {
        feed(&mut n[0], now, &format!("127.0.0.1:{port}"), &wrong);
    }
    assert_eq!(n[0].tag_walks(), 3, "the burst, then none");
    // B's packet from a new port: its tag is in the map
    let d = request_from_b(&mut n, now, 1);
    feed(&mut n[0], now, "127.0.0.1:3100", &d);
    assert_eq!(delivered(&mut n[0]), [(addr(B), 1)]);
    // a peer associated after the last walk waits for the next one
    n[0].associate(addr("127.0.0.1:4000"), 0xC0, 0xD1);
    let mut c = pair(KEY);
    c[1].associate(addr(A), 0xD1, 0xC0);
    let d = request_from_b(&mut c, now, 2);
    feed(&mut n[0], now, "127.0.0.1:4001", &d);
    assert_eq!(delivered(&mut n[0]), []);
    feed(
        &mut n[0],
        Instant(now.0 + 1_000_000_000),
        "127.0.0.1:4001",
        &d,
    );
    assert_eq!(delivered(&mut n[0]), [(addr("127.0.0.1:4000"), 2)]);
    assert_eq!(n[0].tag_walks(), 4);
}

/// A peer's packet replayed from a new port (its seal holds) moves the
/// alias there but delivers nothing twice, and the peer's next packet
/// from its own port is its own again.
#[test]
fn a_replay_from_a_new_port_delivers_nothing_twice() {
    {
        let key = KEY;
        let mut n = pair(key);
        let now = Instant(1_000_000);
        let d = request_from_b(&mut n, now, 1);
        feed(&mut n[0], now, "127.0.0.1:3000", &d);
        assert_eq!(delivered(&mut n[0]), [(addr(B), 1)]);
        feed(&mut n[0], now, "127.0.0.1:3999", &d);
        assert_eq!(delivered(&mut n[0]), [], "{key:?}");
        assert!(n[0].stats().duplicates_dropped >= 1);
        let d = request_from_b(&mut n, now, 2);
        feed(&mut n[0], now, "127.0.0.1:3000", &d);
        assert_eq!(delivered(&mut n[0]), [(addr(B), 2)]);
        assert_eq!(n[0].alias_counts(), (3, 1));
    }
}

/// The datagrams `p` has to send, with where they go.
fn out(p: &mut Protocol<SocketAddr>) -> Vec<(SocketAddr, Vec<u8>)> {
    let mut b = Vec::new();
    std::iter::from_fn(|| p.poll_transmit(&mut b).map(|to| (to, b.clone()))).collect()
}

/// Without a MAC, a port is announced from the name that proves it: B's
/// ALIAS, from B's name with A's tag, makes the port B's at A, which
/// answers to the name; B hands the taking up (for its transport) once,
/// with the tag its packets to A carry; then B's packets from the port
/// are B's.
#[test]
fn without_a_mac_an_alias_announced_from_the_name_is_taken_and_answered() {
    let mut n = pair(None);
    let now = Instant(1_000_000);
    assert!(n[1].announce_alias(&addr(A), 3000));
    let alias = out(&mut n[1]);
    assert_eq!(alias.len(), 1);
    assert_eq!(alias[0].0, addr(A));
    assert_eq!(
        wire::decode(&Integrity::Crc32c, &alias[0].1),
        Ok(Packet::Alias {
            vtag: 0xA0,
            port: 3000
        })
    );
    feed(&mut n[0], now, B, &[alias[0].1.clone()]);
    assert_eq!(n[0].alias_counts(), (1, 1));
    let ack = out(&mut n[0]);
    assert_eq!(ack.len(), 1);
    assert_eq!(ack[0].0, addr(B), "answered to the name");
    assert_eq!(n[1].take_accepted_alias(), None);
    feed(&mut n[1], now, A, &[ack[0].1.clone()]);
    assert_eq!(n[1].take_accepted_alias(), Some((addr(A), 3000, 0xA0)));
    assert_eq!(n[1].take_accepted_alias(), None);
    // the same answer again frees nothing more
    feed(&mut n[1], now, A, &[ack[0].1.clone()]);
    assert_eq!(n[1].take_accepted_alias(), None);
    let d = request_from_b(&mut n, now, 5);
    feed(&mut n[0], now, "127.0.0.1:3000", &d);
    assert_eq!(delivered(&mut n[0]), [(addr(B), 5)]);
}

/// What makes no alias: an ALIAS from anywhere but a peer's name (a
/// forger's port, or the alias itself), with another tag, naming the
/// sender's own name, or before an association; an ALIAS_ACK that answers nothing we
/// asked (unasked, another port, from a stranger). Each is dropped and
/// counted, and B's packets from the port stay nobody's.
#[test]
fn without_a_mac_no_other_alias_or_answer_counts() {
    let mut n = pair(None);
    let now = Instant(1_000_000);
    let alias = |tag: u64, port: u16| {
        let mut b = Vec::new();
        wire::encode_alias(&mut b, &Integrity::Crc32c, tag, false, port);
        b
    };
    for (from, tag, port) in [
        ("127.0.0.1:3000", 0xA0, 3000),
        ("127.0.0.1:4000", 0xA0, 3000),
        (B, 0xA1, 3000),
        (B, 0xA0, 2000),
    ] {
        let stale = n[0].stats().stale_dropped;
        feed(&mut n[0], now, from, &[alias(tag, port)]);
        assert_eq!(
            n[0].stats().stale_dropped,
            stale + 1,
            "{from} {tag:x} {port}"
        );
    }
    assert_eq!(n[0].alias_counts(), (0, 0));
    assert!(out(&mut n[0]).is_empty(), "nothing answered");
    let d = request_from_b(&mut n, now, 5);
    feed(&mut n[0], now, "127.0.0.1:3000", &d);
    assert_eq!(delivered(&mut n[0]), []);
    // answers to nothing asked
    let ack = |tag: u64, port: u16| {
        let mut b = Vec::new();
        wire::encode_alias(&mut b, &Integrity::Crc32c, tag, true, port);
        b
    };
    feed(&mut n[1], now, A, &[ack(0xB1, 3000)]);
    assert!(n[1].announce_alias(&addr(A), 3000));
    let _ = out(&mut n[1]);
    feed(&mut n[1], now, A, &[ack(0xB1, 3001)]);
    feed(&mut n[1], now, "127.0.0.1:5000", &[ack(0xB1, 3000)]);
    feed(&mut n[1], now, A, &[ack(0xB2, 3000)]);
    assert_eq!(n[1].take_accepted_alias(), None);
    // no association, no announcement
    let mut lone = Protocol::<SocketAddr>::new(ProtoConfig::default(), &[0x30; 32]);
    assert!(!lone.announce_alias(&addr(A), 3000));
    assert!(out(&mut lone).is_empty());
    let stale = lone.stats().stale_dropped;
    feed(&mut lone, now, B, &[alias(0xA0, 3000)]);
    assert_eq!(lone.stats().stale_dropped, stale + 1);
    assert_eq!(lone.alias_counts(), (0, 0));
}

/// Without a MAC, a port that is one peer's alias is not another's: C,
/// another peer on the same host, naming B's announced port is dropped
/// (it would take B's packets from it), and B's packets from the port
/// stay B's.
#[test]
fn without_a_mac_a_peers_announced_port_is_not_anothers() {
    let mut n = pair(None);
    let now = Instant(1_000_000);
    const C: &str = "127.0.0.1:5000";
    n[0].associate(addr(C), 0xA2, 0xC3);
    let alias = |tag: u64, port: u16| {
        let mut b = Vec::new();
        wire::encode_alias(&mut b, &Integrity::Crc32c, tag, false, port);
        b
    };
    feed(&mut n[0], now, B, &[alias(0xA0, 3000)]);
    assert_eq!(n[0].alias_counts(), (1, 1));
    let _ = out(&mut n[0]);
    let stale = n[0].stats().stale_dropped;
    feed(&mut n[0], now, C, &[alias(0xA2, 3000)]);
    assert_eq!(n[0].stats().stale_dropped, stale + 1);
    assert!(out(&mut n[0]).is_empty(), "not answered");
    assert_eq!(n[0].alias_counts(), (1, 1));
    let d = request_from_b(&mut n, now, 5);
    feed(&mut n[0], now, "127.0.0.1:3000", &d);
    assert_eq!(delivered(&mut n[0]), [(addr(B), 5)]);
    // B naming its own port again: still its, answered again
    feed(&mut n[0], now, B, &[alias(0xA0, 3000)]);
    assert_eq!(out(&mut n[0]).len(), 1);
    assert_eq!(n[0].alias_counts(), (1, 1));
}
