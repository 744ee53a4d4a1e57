//! Property and mutation tests of the protocol core as untrusted input
//! reaches it (see `fuzz_props.rs` for the family): a `Protocol` with an
//! established association, fed seeded garbage and mutations of real
//! packets from its real peer's address and from strangers', while a real
//! exchange of every category goes on: no panic, no event from garbage,
//! nothing lost or delivered twice, no state for strangers; a reflected
//! DATA; mutations that keep valid tags.
//!
//! Bounded for CI. A longer run:
//! `RAMP_FUZZ_ITERS=10000000 cargo test --release --test fuzz_protocol -- --nocapture`

mod common;
#[path = "common/fuzz.rs"]
mod fuzz_common;

use std::collections::HashMap;
use std::time::Duration;

use fuzz_common::*;
use ramp::proto::{Event, ProtoConfig, Protocol};
use ramp::sim::Rng;
use ramp::time::{Instant, MILLIS};
use ramp::wire::{self, Category, MsgKind, MsgMeta, CHANNEL_REPLY, CHANNEL_REQUEST};

/// Two protocol cores joined by hand (addresses 0 and 1); datagrams to any
/// other address (answers to strangers) are counted and dropped.
struct Duo {
    p: [Protocol<u32>; 2],
    now: Instant,
    /// Every datagram sent between 0 and 1: (to, bytes).
    captured: Vec<(u32, Vec<u8>)>,
    to_strangers: u64,
    /// Per (receiver, channel): k of each real message delivered, in order.
    got: HashMap<(u32, u8), Vec<u32>>,
    sent: HashMap<(u32, u8), u32>,
    garbage_events: Vec<String>,
}

const MAGIC: u32 = 0x00C0_FFEE;

fn real_payload(from: u32, ch: u8, k: u32, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32 ^ k.rotate_left(5) ^ from << 3 ^ ch as u32) as u8)
        .collect()
}

impl Duo {
    fn new(seed: u64) -> Duo {
        let cfg = ProtoConfig::default();
        let mut r = Rng::new(seed);
        Duo {
            p: [
                Protocol::new(cfg.clone(), &ramp::sim::secret(&mut r)),
                Protocol::new(cfg, &ramp::sim::secret(&mut r)),
            ],
            now: Instant(1_000_000),
            captured: Vec::new(),
            to_strangers: 0,
            got: HashMap::new(),
            sent: HashMap::new(),
            garbage_events: Vec::new(),
        }
    }

    /// A real message of every category on both channels, each way.
    fn send_real(&mut self, rng: &mut Rng) {
        for from in 0..2u32 {
            for ch in [CHANNEL_REQUEST, CHANNEL_REPLY] {
                for cat in [Category::Short, Category::Medium, Category::Long] {
                    let k = self.sent.entry((1 - from, ch)).or_insert(0);
                    let len = match cat {
                        Category::Short => 0,
                        // now and then larger than a datagram: fragments
                        _ if rng.chance(0.1) => 70_000 + rng.below(5000) as usize,
                        _ => rng.below(2000) as usize,
                    };
                    let mut m = MsgMeta::new(MsgKind::User, cat, 3, &[MAGIC, *k, len as u32]);
                    m.txn = *k;
                    let p = real_payload(from, ch, *k, len);
                    let now = self.now;
                    self.p[from as usize].send(now, 1 - from, ch, m, p);
                    *k += 1;
                }
            }
        }
    }

    fn take_events(&mut self) {
        for i in 0..2u32 {
            while let Some(ev) = self.p[i as usize].poll_event() {
                match ev {
                    Event::Delivered {
                        from,
                        channel,
                        meta,
                        payload,
                    } => {
                        let a = meta.args();
                        let real = from == 1 - i
                            && a.len() == 3
                            && a[0] == MAGIC
                            && payload == real_payload(from, channel, a[1], a[2] as usize);
                        if real {
                            self.got.entry((i, channel)).or_default().push(a[1]);
                        } else {
                            self.garbage_events.push(format!(
                                "at {i} from {from} ch {channel}: {meta:?} ({} bytes)",
                                payload.len()
                            ));
                        }
                    }
                    ev @ Event::Failed { .. } => {
                        self.garbage_events.push(format!("at {i}: {ev:?}"))
                    }
                }
            }
        }
    }

    /// Moves datagrams between 0 and 1 (instantly), fires timers, for `ms`
    /// of virtual time in 100 µs steps.
    fn run(&mut self, ms: u64) {
        let mut b = Vec::new();
        let end = self.now.plus(ms * MILLIS);
        while self.now < end {
            let mut moved = true;
            while moved {
                moved = false;
                for i in 0..2u32 {
                    while let Some(to) = self.p[i as usize].poll_transmit(&mut b) {
                        if to == 1 - i {
                            self.captured.push((to, b.clone()));
                            let now = self.now;
                            self.p[to as usize].handle_datagram(now, i, &b);
                            moved = true;
                        } else {
                            self.to_strangers += 1;
                        }
                    }
                }
                self.take_events();
            }
            self.now = self.now.plus(MILLIS / 10);
            let now = self.now;
            for p in &mut self.p {
                if p.next_timeout().is_some_and(|t| t <= now) {
                    p.handle_timeout(now);
                }
            }
        }
        self.take_events();
    }

    fn drop_transmits(&mut self) {
        let mut b = Vec::new();
        for i in 0..2u32 {
            while let Some(to) = self.p[i as usize].poll_transmit(&mut b) {
                if to > 1 {
                    self.to_strangers += 1;
                } else {
                    // (answers to garbage between the two go through)
                    let now = self.now;
                    self.p[to as usize].handle_datagram(now, i, &b);
                }
            }
        }
    }

    fn check_exactly_once(&self) {
        for (&(to, ch), &n) in &self.sent {
            let got = self.got.get(&(to, ch)).cloned().unwrap_or_default();
            let want: Vec<u32> = (0..n).collect();
            assert!(
                got == want,
                "at {to} channel {ch}: {} of {n} delivered, in order and once: {:?}...",
                got.len(),
                &got[..got.len().min(20)]
            );
        }
    }
}

#[test]
fn protocol_survives_garbage_from_its_peer_and_strangers() {
    let _w = common::watchdog("fuzz_protocol::protocol", Duration::from_secs(600));
    let mut rng = Rng::new(seed() ^ 1);
    let mut duo = Duo::new(seed());
    duo.send_real(&mut rng);
    duo.run(50);
    let (t1, t0) = duo.p[1].association(&0).expect("established");
    let mut corpus: Vec<Vec<u8>> = duo.captured.iter().map(|(_, b)| b.clone()).collect();
    corpus.extend(packet_corpus());
    let n = iters(200_000);
    let batch = 500;
    let (mut from_peer, mut from_strangers) = (0u64, 0u64);
    let strangers_max = 5000u32;
    for it in 0..n {
        let mut v = mutate(&mut rng, &corpus);
        let kind = rng.below(3);
        let now = duo.now;
        let (to, from) = match kind {
            // the real peer's address, the trailer left damaged (or random)
            0 => {
                let to = rng.below(2) as u32;
                (to, 1 - to)
            }
            // the real peer's address, resealed, with a tag that is not
            // the association's
            1 => {
                if v.len() >= 12 {
                    let mut g = rng.next_u64();
                    if g == t0 || g == t1 {
                        g ^= 1;
                    }
                    let at = wire::layout::VTAG_AT;
                    v[at..at + 8].copy_from_slice(&g.to_be_bytes());
                }
                reseal(&mut v);
                let to = rng.below(2) as u32;
                (to, 1 - to)
            }
            // strangers (other ports): anything, resealed, real tags kept:
            // replays of the real exchange from elsewhere
            _ => {
                if rng.chance(0.5) {
                    reseal(&mut v);
                }
                from_strangers += 1;
                (
                    rng.below(2) as u32,
                    2 + rng.below(strangers_max as u64) as u32,
                )
            }
        };
        if kind < 2 {
            from_peer += 1;
        }
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            duo.p[to as usize].handle_datagram(now, from, &v)
        }));
        if r.is_err() {
            panic!(
                "handle_datagram panicked: seed {} iteration {it} kind {kind}: {}",
                seed(),
                hex(&v)
            );
        }
        duo.drop_transmits();
        duo.take_events();
        assert!(
            duo.p[1].association(&0) == Some((t1, t0))
                && duo.p[0].association(&1) == Some((t0, t1)),
            "the association changed (seed {} iteration {it}, kind {kind}, to {to} from {from}, \
             input {}): now {:?} / {:?}",
            seed(),
            hex(&v),
            duo.p[0].association(&1),
            duo.p[1].association(&0)
        );
        assert!(
            duo.garbage_events.is_empty(),
            "an event from garbage (seed {} iteration {it}, kind {kind}, input {}): {:?}",
            seed(),
            hex(&v),
            duo.garbage_events
        );
        if it % batch == batch - 1 {
            duo.send_real(&mut rng);
            duo.run(2);
            for p in &duo.p {
                assert_eq!(p.peer_count(), 1, "state kept for a stranger");
            }
        }
    }
    duo.run(3000);
    assert!(duo.garbage_events.is_empty(), "{:?}", duo.garbage_events);
    duo.check_exactly_once();
    assert_eq!(
        duo.p[1].association(&0),
        Some((t1, t0)),
        "association changed"
    );
    for p in &duo.p {
        assert_eq!(p.peer_count(), 1);
        assert!(p.is_idle(), "not idle after the exchange");
    }
    let real: usize = duo.got.values().map(|v| v.len()).sum();
    eprintln!(
        "protocol: {n} garbage datagrams ({from_peer} from the peer's address, \
         {from_strangers} from {strangers_max} strangers), {real} real messages exactly once, {} answers to strangers, {} \
         unsolicited answers suppressed",
        duo.to_strangers,
        duo.p[0].suppressed_answers() + duo.p[1].suppressed_answers()
    );
}

/// Node 1's own DATA (carrying node 0's tag), reflected back to node 1 from
/// node 0's address, must be dropped without a word: it used to be answered
/// with an ABORT carrying node 0's tag, which node 0 took (an ABORT with its
/// own tag), failing everything it had queued. SCTP (RFC 9260 8.5) drops
/// such a packet silently.
#[test]
fn a_reflected_data_ends_the_association() {
    let mut rng = Rng::new(7);
    let mut duo = Duo::new(7);
    duo.send_real(&mut rng);
    duo.run(50);
    let (t1, t0) = duo.p[1].association(&0).expect("established");
    // a DATA node 1 sent to node 0 (vtag t0)
    // (a packet of a datagram: a bundle's first)
    let d = duo
        .captured
        .iter()
        .filter(|(to, _)| *to == 0)
        .filter_map(|(_, b)| wire::packets(&I, b).next()?.ok())
        .find(|p| matches!(wire::decode(&I, p), Ok(wire::Packet::Data { .. })))
        .expect("a DATA to 0")
        .to_vec();
    // reflected: to node 1, "from" node 0
    let now = duo.now;
    duo.p[1].handle_datagram(now, 0, &d);
    duo.drop_transmits();
    assert_eq!(
        duo.p[0].association(&1),
        Some((t0, t1)),
        "node 0's association ended by the ABORT its peer sent"
    );
}

/// Inside the association (valid tag and trailer: what a CRC cannot tell
/// from the real peer, see ARCHITECTURE.md): no panic, no state growth.
#[test]
fn protocol_survives_mutations_with_valid_tags() {
    let _w = common::watchdog("fuzz_protocol::valid_tags", Duration::from_secs(600));
    let mut rng = Rng::new(seed() ^ 2);
    let mut duo = Duo::new(seed() ^ 3);
    duo.send_real(&mut rng);
    duo.run(50);
    let corpus: Vec<Vec<u8>> = duo.captured.iter().map(|(_, b)| b.clone()).collect();
    let bundles = corpus
        .iter()
        .filter(|d| wire::packets(&I, d).count() > 1)
        .count();
    assert!(bundles > 0, "no bundle among the real datagrams");
    let n = iters(100_000);
    let mut events = 0u64;
    for it in 0..n {
        let mut v = mutate(&mut rng, &corpus);
        reseal(&mut v);
        let to = rng.below(2) as usize;
        let now = duo.now;
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            duo.p[to].handle_datagram(now, 1 - to as u32, &v)
        }));
        if r.is_err() {
            panic!(
                "handle_datagram panicked: seed {} iteration {it}: {}",
                seed(),
                hex(&v)
            );
        }
        if it % 64 == 0 {
            duo.now = duo.now.plus(MILLIS);
            let now = duo.now;
            for p in &mut duo.p {
                p.handle_timeout(now);
            }
        }
        duo.drop_transmits();
        for p in &mut duo.p {
            while p.poll_event().is_some() {
                events += 1;
            }
            assert!(p.peer_count() <= 1);
        }
    }
    eprintln!("protocol, valid tags: {n} forged datagrams, {events} events (allowed), no panic");
}
