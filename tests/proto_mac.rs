//! The job key's packet MAC in the protocol core (simulated network, no
//! sockets): with one key both ends associate and every packet carries the
//! MAC trailer (handshake packets under the job key, the rest under the
//! association's key per direction); different keys, or a key on one end
//! only, never associate and the messages fail as unreachable; a packet
//! changed in flight, even with the right tags, is dropped and counted.

mod common;

use std::time::Duration;

use ramp::proto::{Event, FailReason, ProtoConfig, Protocol};
use ramp::sim::{FaultConfig, SimNet};
use ramp::time::{Instant, Nanos, MILLIS};
use ramp::wire::mac::MacKey;
use ramp::wire::{self, layout, Category, Integrity, MsgKind, MsgMeta, Packet, CHANNEL_REQUEST};

const SECOND: Nanos = 1000 * MILLIS;
const KEY_A: &str = "job key A: 0123456789abcdef";
const KEY_B: &str = "job key B: 0123456789abcdef";

fn keyed(key: Option<&str>) -> ProtoConfig {
    ProtoConfig {
        mac: key.map(MacKey::from_job_key),
        retry_limit: 4,
        rto_max: 50 * MILLIS,
        ..Default::default()
    }
}

fn meta(k: u32, len: usize) -> MsgMeta {
    MsgMeta::new(MsgKind::User, Category::Medium, 7, &[k, len as u32])
}

/// Two nodes joined by hand; every datagram is recorded.
struct Pair {
    p: [Protocol<u32>; 2],
    now: Instant,
    seen: Vec<(usize, Vec<u8>)>,
}

impl Pair {
    fn new(a: ProtoConfig, b: ProtoConfig) -> Pair {
        Pair {
            p: [Protocol::new(a, &[0x11; 32]), Protocol::new(b, &[0x22; 32])],
            now: Instant(1_000_000),
            seen: Vec::new(),
        }
    }

    fn out(&mut self, i: usize) -> Vec<Vec<u8>> {
        let mut v = Vec::new();
        let mut b = Vec::new();
        while self.p[i].poll_transmit(&mut b).is_some() {
            v.push(b.clone());
        }
        v
    }

    fn feed(&mut self, to: usize, d: &[u8]) {
        let now = self.now;
        self.p[to].handle_datagram(now, 1 - to as u32, d);
        self.p[to].handle_timeout(now);
    }

    /// Moves every datagram (through `tamper`) and fires timers, until
    /// both are idle with nothing to send or `limit` passes.
    fn run(&mut self, limit: Nanos, mut tamper: impl FnMut(usize, &mut Vec<u8>)) {
        let end = self.now.plus(limit);
        while self.now < end {
            let mut moved = false;
            for i in 0..2 {
                for mut d in self.out(i) {
                    self.seen.push((i, d.clone()));
                    tamper(i, &mut d);
                    self.feed(1 - i, &d);
                    moved = true;
                }
            }
            if !moved {
                match self.p.iter().filter_map(|p| p.next_timeout()).min() {
                    Some(t) => {
                        self.now = self.now.max(t);
                        let now = self.now;
                        self.p.iter_mut().for_each(|p| p.handle_timeout(now));
                    }
                    None => return,
                }
            }
        }
    }

    fn events(&mut self, i: usize) -> Vec<Event<u32>> {
        std::iter::from_fn(|| self.p[i].poll_event()).collect()
    }
}

fn delivered(evs: &[Event<u32>]) -> usize {
    evs.iter()
        .filter(|e| matches!(e, Event::Delivered { .. }))
        .count()
}

fn unreachable(evs: &[Event<u32>]) -> usize {
    evs.iter()
        .filter(|e| {
            matches!(
                e,
                Event::Failed {
                    reason: FailReason::PeerUnreachable,
                    ..
                }
            )
        })
        .count()
}

#[test]
fn same_key_associates_and_every_packet_carries_the_mac() {
    let mut n = Pair::new(keyed(Some(KEY_A)), keyed(Some(KEY_A)));
    let now = n.now;
    for k in 0..5 {
        n.p[0].send(now, 1, CHANNEL_REQUEST, meta(k, 3000), vec![k as u8; 3000]);
    }
    n.run(SECOND, |_, _| {});
    assert_eq!(delivered(&n.events(1)), 5);
    let (a, b) = n.p[0].association(&1).expect("associated");
    assert_eq!(n.p[1].association(&0), Some((b, a)));
    assert!(n.seen.len() >= 8, "{} datagrams", n.seen.len());
    let job = Integrity::job(&MacKey::from_job_key(KEY_A), [0; 12]);
    // the association's key per direction, as each end derives it
    let (a_tx, a_rx) = job.for_association(a, b);
    let mut data = 0;
    for (from, d) in &n.seen {
        // never the CRC32C; under exactly one of the three keys
        assert!(wire::decode(&Integrity::Crc32c, d).is_err());
        let by_job = wire::decode(&job, d);
        let by_assoc = wire::decode(if *from == 0 { &a_tx } else { &a_rx }, d);
        let by_other = wire::decode(if *from == 0 { &a_rx } else { &a_tx }, d);
        assert!(by_other.is_err(), "a direction's key opens only its own");
        match (by_job, by_assoc) {
            (Ok(p), Err(_)) => assert!(
                !matches!(
                    p,
                    Packet::Data { .. }
                        | Packet::More { .. }
                        | Packet::Ack { .. }
                        | Packet::Nack { .. }
                ),
                "{p:?} under the job key"
            ),
            (Err(_), Ok(p)) => {
                data += matches!(p, Packet::Data { .. }) as usize;
            }
            r => panic!("from {from}: {r:?}"),
        }
    }
    assert!(data >= 5);
    let s = n.p[1].stats();
    assert_eq!(s.corrupt_dropped, 0);
}

#[test]
fn different_keys_or_one_key_never_associate() {
    for (ka, kb) in [
        (Some(KEY_A), Some(KEY_B)),
        (Some(KEY_A), None),
        (None, Some(KEY_A)),
    ] {
        let mut n = Pair::new(keyed(ka), keyed(kb));
        let now = n.now;
        for k in 0..3 {
            n.p[0].send(now, 1, CHANNEL_REQUEST, meta(k, 10), vec![1; 10]);
        }
        n.run(60 * SECOND, |_, _| {});
        let ev0 = n.events(0);
        assert_eq!(unreachable(&ev0), 3, "{ka:?}/{kb:?}: {ev0:?}");
        assert!(n.events(1).is_empty(), "{ka:?}/{kb:?}: no event at all");
        assert_eq!(n.p[0].association(&1), None);
        assert_eq!(n.p[1].association(&0), None);
        // every INIT the other end got was dropped as corrupt, none answered
        let inits = n.seen.iter().filter(|(from, _)| *from == 0).count() as u64;
        assert!(inits >= 4);
        assert_eq!(n.p[1].stats().corrupt_dropped, inits, "{ka:?}/{kb:?}");
        assert!(n.seen.iter().all(|(from, _)| *from == 0), "never answered");
    }
}

#[test]
fn a_flipped_packet_with_the_right_tags_is_dropped_and_counted() {
    let mut n = Pair::new(keyed(Some(KEY_A)), keyed(Some(KEY_A)));
    let now = n.now;
    n.p[0].send(now, 1, CHANNEL_REQUEST, meta(0, 100), vec![5; 100]);
    n.run(SECOND, |_, _| {});
    assert_eq!(delivered(&n.events(1)), 1);
    n.p[1].reset_stats();
    // every DATA from 0 has one payload bit flipped (tags intact) the
    // first time; the retransmissions pass
    let mut flipped = 0;
    let now = n.now;
    for k in 1..4 {
        n.p[0].send(now, 1, CHANNEL_REQUEST, meta(k, 100), vec![k as u8; 100]);
    }
    let mut seen_once = std::collections::HashSet::new();
    n.run(10 * SECOND, |from, d| {
        // DATA: its seq (the retransmission has the same)
        let is_data = d[layout::TYPE_AT] == wire::PacketType::Data as u8;
        if from == 0 && is_data && seen_once.insert(layout::read_u32(d, layout::SEQ_AT)) {
            d[100] ^= 0x10;
            flipped += 1;
        }
    });
    let ev = n.events(1);
    assert_eq!(delivered(&ev), 3, "{ev:?}");
    assert!(flipped >= 1);
    assert_eq!(n.p[1].stats().corrupt_dropped, flipped);
    // a forged trailer (a valid-looking nonce, a zero tag) on a packet
    // with the right tags: dropped, no event
    let (_, b) = n.p[0].association(&1).unwrap();
    let (tx, _) = Integrity::Crc32c.for_association(0, 0);
    let mut forged = Vec::new();
    let c = wire::Common {
        vtag: b,
        ..Default::default()
    };
    wire::encode_ack(&mut forged, &tx, &c, 0);
    forged.truncate(forged.len() - 4);
    forged.extend_from_slice(&[0; 28]);
    let before = n.p[1].stats().corrupt_dropped;
    n.feed(1, &forged);
    assert_eq!(n.p[1].stats().corrupt_dropped, before + 1);
    assert!(n.events(1).is_empty());
}

#[test]
fn exactly_once_under_faults_with_the_mac() {
    let _watchdog = common::watchdog(
        "proto_mac::exactly_once_under_faults_with_the_mac",
        Duration::from_secs(120),
    );
    let faults = FaultConfig {
        seed: 7,
        loss: 0.05,
        dup: 0.02,
        corrupt: 0.05,
        ..ramp::sim::lan()
    };
    let mut net = SimNet::new(
        3,
        ProtoConfig {
            mac: Some(MacKey::from_job_key(KEY_A)),
            max_datagram: 700,
            ..Default::default()
        },
        faults,
    );
    let mut sent = 0;
    for from in 0..3u32 {
        for to in 0..3u32 {
            if from != to {
                for k in 0..20u32 {
                    let len = (k as usize * 131) % 1800;
                    net.send(from, to, CHANNEL_REQUEST, meta(k, len), vec![k as u8; len]);
                    sent += 1;
                }
            }
        }
    }
    let mut got = 0;
    let done = net.run_until(600 * SECOND, |net| {
        for i in 0..3 {
            while let Some(e) = net.poll_event(i) {
                match e {
                    Event::Delivered { meta, payload, .. } => {
                        let k = meta.args()[0];
                        assert_eq!(payload, vec![k as u8; meta.args()[1] as usize]);
                        got += 1;
                    }
                    e => panic!("{e:?}"),
                }
            }
        }
        got == sent
    });
    assert!(done, "{got}/{sent}; {:?}", net.stats);
    assert!(net.stats.corrupted > 0);
    let corrupt: u64 = (0..3).map(|i| net.node(i).stats().corrupt_dropped).sum();
    assert!(corrupt > 0);
}
