//! Property and mutation tests of every parser of untrusted input (the
//! stable toolchain's stand-in for a coverage-guided fuzzer; `fuzz/` holds
//! the AFL targets): seeded random bytes and mutations (bit flips, byte
//! writes, truncations, extensions, splices) of real packets and messages,
//! with the CRC32C trailer recomputed or not, into
//! - the packet decoder (`wire::decode`): never panics; a damaged trailer
//!   is always refused;
//! - a `Protocol` with an established association, fed from its real peer's
//!   address and from strangers', while a real exchange of every category
//!   goes on: no panic, no event from garbage, nothing lost or delivered
//!   twice, no state for strangers;
//! - the PMI-1/PMI-2 reply parsers and the local launcher's frame reader.
//!
//! Bounded for CI (about a second each). A longer run:
//! `RAMP_FUZZ_ITERS=10000000 cargo test --release --test fuzz_props -- --nocapture`
//! (`RAMP_FUZZ_SEED=N` picks another seed; a failure prints the seed and
//! the iteration, and the input).

mod common;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use ramp::proto::{Event, ProtoConfig, Protocol};
use ramp::sim::Rng;
use ramp::spmd::fuzz;
use ramp::time::{Instant, MILLIS};
use ramp::wire::{
    self, Category, Common, Integrity, MsgKind, MsgMeta, CHANNEL_REPLY, CHANNEL_REQUEST,
};

const I: Integrity = Integrity::Crc32c;

fn iters(default: u64) -> u64 {
    std::env::var("RAMP_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn seed() -> u64 {
    std::env::var("RAMP_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed_f00d)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// One mutation of `corpus[..]`: the result, and whether it may still
/// carry a valid trailer by construction (never, unless `fix`).
fn mutate(rng: &mut Rng, corpus: &[Vec<u8>]) -> Vec<u8> {
    let pick = |rng: &mut Rng| corpus[rng.below(corpus.len() as u64) as usize].clone();
    let mut v = pick(rng);
    let rounds = 1 + rng.below(4);
    for _ in 0..rounds {
        match rng.below(8) {
            0 if !v.is_empty() => {
                // bit flip
                let i = rng.below(v.len() as u64) as usize;
                v[i] ^= 1 << rng.below(8);
            }
            1 if !v.is_empty() => {
                // a byte set to an interesting value
                let i = rng.below(v.len() as u64) as usize;
                v[i] = [0, 1, 0x7f, 0x80, 0xff, rng.next_u64() as u8][rng.below(6) as usize];
            }
            2 => {
                // truncation
                let n = rng.below(v.len() as u64 + 1) as usize;
                v.truncate(n);
            }
            3 => {
                // extension with random bytes
                for _ in 0..rng.below(64) {
                    v.push(rng.next_u64() as u8);
                }
            }
            4 => {
                // splice: our head, another packet's tail
                let w = pick(rng);
                let a = rng.below(v.len() as u64 + 1) as usize;
                let b = rng.below(w.len() as u64 + 1) as usize;
                v.truncate(a);
                v.extend_from_slice(&w[b..]);
            }
            5 if v.len() >= 8 => {
                // a 16/32/64-bit field overwritten (lengths, counts, tags)
                let i = rng.below(v.len() as u64 - 7) as usize;
                let x = rng.next_u64().to_be_bytes();
                let w = [2, 4, 8][rng.below(3) as usize];
                v[i..i + w].copy_from_slice(&x[..w]);
            }
            6 => {
                // pure random bytes
                v = (0..rng.below(200)).map(|_| rng.next_u64() as u8).collect();
            }
            _ if v.len() > 1 => {
                // a range duplicated
                let a = rng.below(v.len() as u64) as usize;
                let b = a + rng.below((v.len() - a) as u64) as usize;
                let seg = v[a..b].to_vec();
                v.splice(a..a, seg);
            }
            _ => {}
        }
    }
    v
}

/// Recomputes the trailer of a (mutated) datagram, as a forger would.
fn reseal(v: &mut Vec<u8>) {
    let n = v.len().saturating_sub(I.trailer_len());
    v.truncate(n);
    I.seal(v, 0);
}

/// The association fields of the corpus's packets.
fn corpus_common() -> Common {
    Common {
        vtag: 0x1122_3344_5566_7788,
        channel: 1,
        seq: 7,
        epoch: 1,
        ..Default::default()
    }
}

/// One real packet of each type, DATA of each category and kind.
fn packet_corpus() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let c = corpus_common();
    for (kind, cat) in [
        (MsgKind::User, Category::Short),
        (MsgKind::User, Category::Medium),
        (MsgKind::User, Category::Long),
        (MsgKind::AutoReply, Category::Short),
        (MsgKind::Returned, Category::Medium),
    ] {
        for nargs in [0usize, 1, 16] {
            let args: Vec<u32> = (0..nargs as u32).collect();
            let mut m = MsgMeta::new(kind, cat, 9, &args);
            m.txn = 5;
            m.tag = 77;
            m.dest_offset = 128;
            let p = vec![0xAB; if cat == Category::Short { 0 } else { 100 }];
            let mut d = Vec::new();
            wire::encode_data(&mut d, &I, &c, &m, 300, 100, &p);
            out.push(d);
        }
    }
    let mut a = Vec::new();
    wire::encode_ack(&mut a, &I, &c, 0xF0F0);
    out.push(a);
    for last in [false, true] {
        let mut a = Vec::new();
        wire::encode_nack(&mut a, &I, &c, last);
        out.push(a);
    }
    let mut a = Vec::new();
    wire::encode_init(&mut a, &I, 42);
    out.push(a);
    let cookie = [7u8; 48];
    let mut a = Vec::new();
    wire::encode_init_ack(&mut a, &I, 42, 43, &cookie);
    out.push(a);
    let mut a = Vec::new();
    wire::encode_cookie_echo(&mut a, &I, 43, &cookie);
    out.push(a);
    let mut a = Vec::new();
    wire::encode_cookie_ack(&mut a, &I, 42);
    out.push(a);
    let mut a = Vec::new();
    wire::encode_abort(&mut a, &I, 42);
    out.push(a);
    out
}

#[test]
fn decode_survives_random_and_mutated_packets() {
    let _w = common::watchdog("fuzz_props::decode", Duration::from_secs(600));
    let corpus = packet_corpus();
    for p in &corpus {
        assert!(wire::decode(&I, p).is_ok(), "corpus packet refused");
    }
    let known: HashSet<Vec<u8>> = corpus.iter().cloned().collect();
    let n = iters(300_000);
    let mut rng = Rng::new(seed());
    let (mut ok, mut refused_bad_trailer, mut sealed) = (0u64, 0u64, 0u64);
    for it in 0..n {
        let mut v = mutate(&mut rng, &corpus);
        let fix = rng.chance(0.5);
        if fix {
            reseal(&mut v);
            sealed += 1;
        }
        let r = std::panic::catch_unwind(|| wire::decode(&I, &v).is_ok());
        let Ok(accepted) = r else {
            panic!(
                "decode panicked: seed {} iteration {it}: input {}",
                seed(),
                hex(&v)
            );
        };
        ok += accepted as u64;
        // A damaged trailer is always refused (unless the mutation gave
        // back a real packet, e.g. a splice of two with the same head).
        if !fix && !known.contains(&v) && v.len() >= 4 {
            let tail = &v[v.len() - 4..];
            let body = &v[..v.len() - 4];
            if wire::crc32c(body).to_be_bytes() != tail {
                assert!(!accepted, "a bad trailer accepted: {}", hex(&v));
                refused_bad_trailer += 1;
            }
        }
    }
    eprintln!(
        "decode: {n} inputs (seed {}), {sealed} resealed, {ok} accepted, \
         {refused_bad_trailer} with a bad trailer all refused",
        seed()
    );
}

/// Large DATA packets, mutated (resealed or not): `decode_deferred`, which
/// parses a packet before its trailer is checked (the payload is checked
/// as it is copied where it goes), never panics, takes every large DATA
/// packet `decode` takes, parsed the same, and its check of the payload's
/// sum agrees with `decode`'s: a damaged packet never passes it.
#[test]
fn a_deferred_check_agrees_with_decode() {
    let _w = common::watchdog("fuzz_props::deferred", Duration::from_secs(600));
    let c = corpus_common();
    let mut corpus = Vec::new();
    for (len, off, nargs) in [
        (4096usize, 64u32, 0usize),
        (65_235, 64, 2),
        (9000, 4096, 16),
    ] {
        let args: Vec<u32> = (0..nargs as u32).collect();
        let m = MsgMeta::new(MsgKind::User, Category::Long, 9, &args);
        let p: Vec<u8> = (0..len).map(|i| (i * 7 + i / 300) as u8).collect();
        let mut d = Vec::new();
        wire::encode_data(&mut d, &I, &c, &m, 200_000, off, &p);
        corpus.push(d);
    }
    let n = iters(20_000);
    let mut rng = Rng::new(seed() ^ 7);
    let (mut deferred, mut held, mut scratch) = (0u64, 0u64, Vec::new());
    for it in 0..n {
        let mut v = mutate(&mut rng, &corpus);
        if rng.chance(0.5) {
            reseal(&mut v);
        }
        let r = std::panic::catch_unwind(|| wire::decode_deferred(&v).is_some());
        if r.is_err() {
            panic!("decode_deferred panicked: seed {} iteration {it}", seed());
        }
        let whole = wire::decode(&I, &v);
        let Some((pkt, check)) = wire::decode_deferred(&v) else {
            if let Ok(wire::Packet::Data { payload, .. }) = &whole {
                assert!(
                    payload.len() < wire::DEFER_MIN,
                    "a large DATA packet not deferred"
                );
            }
            continue;
        };
        deferred += 1;
        let wire::Packet::Data { payload, .. } = &pkt else {
            panic!("deferred: not DATA");
        };
        scratch.resize(payload.len(), 0);
        let Some(sum) = wire::copy_sum(&mut scratch, payload) else {
            continue; // this CPU sums first (`decode`), never in place
        };
        let holds = check.holds(sum);
        assert_eq!(holds, whole.is_ok(), "seed {} iteration {it}", seed());
        if holds {
            held += 1;
            assert_eq!(whole.as_ref().ok(), Some(&pkt));
        }
    }
    eprintln!(
        "deferred: {n} inputs (seed {}), {deferred} parsed before the check, {held} held",
        seed()
    );
}

/// Bundles (2 to 6 DATA, ACK, NACK packets back to back, sometimes a
/// handshake packet among them), mutated, with every packet the walk
/// frames resealed or not: the walk never panics nor yields more than
/// `MAX_BUNDLE` packets and a refusal, and without resealing every packet
/// that decodes is one of the originals, byte for byte (a damaged packet
/// is never taken).
#[test]
fn bundles_survive_mutations_and_no_damaged_packet_decodes() {
    let _w = common::watchdog("fuzz_props::bundles", Duration::from_secs(600));
    let singles = packet_corpus();
    let assoc: Vec<&Vec<u8>> = singles
        .iter()
        .filter(|p| wire::association_vtag(p).is_some())
        .collect();
    let mut rng = Rng::new(seed() ^ 7);
    let corpus: Vec<Vec<u8>> = (0..64)
        .map(|_| {
            let mut b = Vec::new();
            for _ in 0..2 + rng.below(5) {
                b.extend_from_slice(assoc[rng.below(assoc.len() as u64) as usize]);
            }
            if rng.chance(0.2) {
                b.extend_from_slice(&singles[singles.len() - 1 - rng.below(5) as usize]);
            }
            b
        })
        .collect();
    let known: HashSet<&[u8]> = singles.iter().map(|p| &p[..]).collect();
    let n = iters(200_000);
    let (mut taken, mut refused) = (0u64, 0u64);
    for it in 0..n {
        let mut v = mutate(&mut rng, &corpus);
        let fix = rng.chance(0.3);
        if fix {
            // a forger resealing each packet the walk frames
            let spans: Vec<(usize, usize)> = wire::packets(&I, &v)
                .map_while(Result::ok)
                .map(|p| (p.as_ptr() as usize - v.as_ptr() as usize, p.len()))
                .collect();
            for (at, len) in spans {
                if len >= 4 {
                    let crc = wire::crc32c(&v[at..at + len - 4]);
                    v[at + len - 4..at + len].copy_from_slice(&crc.to_be_bytes());
                }
            }
        }
        let r = std::panic::catch_unwind(|| {
            let mut out = Vec::new();
            for p in wire::packets(&I, &v) {
                out.push(p.map(|p| (p.to_vec(), wire::decode(&I, p).is_ok())));
            }
            out
        });
        let Ok(walk) = r else {
            panic!("walk panicked: seed {} iteration {it}: {}", seed(), hex(&v));
        };
        assert!(walk.len() <= wire::MAX_BUNDLE + 1, "{}", hex(&v));
        assert!(
            walk.iter()
                .take(walk.len().saturating_sub(1))
                .all(Result::is_ok),
            "the walk went on after a refusal"
        );
        let mut at = 0;
        for w in &walk {
            let Ok((p, ok)) = w else {
                refused += 1;
                continue;
            };
            assert_eq!(&v[at..at + p.len()], &p[..], "packets back to back");
            at += p.len();
            if *ok {
                taken += 1;
                assert!(
                    fix || known.contains(&p[..]),
                    "a damaged packet decoded: seed {} iteration {it}: {}",
                    seed(),
                    hex(p)
                );
            }
        }
    }
    eprintln!("bundles: {n} mutated, {taken} packets taken, {refused} walks refused");
}

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
    let _w = common::watchdog("fuzz_props::protocol", Duration::from_secs(600));
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
    let _w = common::watchdog("fuzz_props::valid_tags", Duration::from_secs(600));
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

#[test]
fn pmi_parsers_survive_random_and_mutated_replies() {
    let _w = common::watchdog("fuzz_props::pmi", Duration::from_secs(600));
    let v1 = [
        "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0",
        "cmd=get_result rc=0 msg=success value=a\\ b\\=c",
        "cmd=my_kvsname kvsname=kvs_123_0",
        "cmd=barrier_out",
        "cmd=get_maxes kvsname_max=256 keylen_max=64 vallen_max=1024",
    ];
    let v2 = [
        "cmd=fullinit-response;pmi-version=2;pmi-subversion=0;rank=0;size=2;appnum=0;rc=0;",
        "cmd=kvs-get-response;found=TRUE;value=0a1b2c;rc=0;",
        "cmd=kvs-fence-response;rc=0;",
        "cmd=info-getjobattr-response;found=TRUE;value=kvs_1;rc=0;",
    ];
    for l in v1 {
        assert!(fuzz::pmi_parse_v1(l).is_some(), "{l}");
    }
    for l in v2 {
        assert!(fuzz::pmi_parse_v2(l).is_some(), "{l}");
    }
    let corpus: Vec<Vec<u8>> = v1
        .iter()
        .chain(&v2)
        .map(|s| s.as_bytes().to_vec())
        .collect();
    let alphabet = b"cmd=;\\ \t\n=rc0a\xc3\xa9\xff";
    let n = iters(300_000);
    let mut rng = Rng::new(seed() ^ 4);
    let mut ok = 0u64;
    for it in 0..n {
        let v = if rng.chance(0.3) {
            (0..rng.below(80))
                .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
                .collect()
        } else {
            mutate(&mut rng, &corpus)
        };
        let s = String::from_utf8_lossy(&v);
        let r = std::panic::catch_unwind(|| (fuzz::pmi_parse_v1(&s), fuzz::pmi_parse_v2(&s)));
        let Ok((a, b)) = r else {
            panic!(
                "a PMI parser panicked: seed {} iteration {it}: {s:?}",
                seed()
            );
        };
        for (cmd, pairs) in a.iter().chain(&b) {
            ok += 1;
            assert!(!cmd.is_empty(), "{s:?}");
            assert!(pairs.len() <= s.len(), "{s:?}");
        }
        if let Some((_, pairs)) = &b {
            assert!(pairs
                .iter()
                .all(|(k, v)| !k.contains(';') && !v.contains(';')));
        }
    }
    eprintln!("pmi: {n} inputs, {ok} parses accepted, no panic");
}

fn frame(kind: u8, payload: &[u8]) -> Vec<u8> {
    let mut b = ((payload.len() + 1) as u32).to_be_bytes().to_vec();
    b.push(kind);
    b.extend_from_slice(payload);
    b
}

#[test]
fn launcher_frame_reader_survives_random_and_mutated_streams() {
    let _w = common::watchdog("fuzz_props::frames", Duration::from_secs(600));
    let n = iters(100_000);
    let mut rng = Rng::new(seed() ^ 5);
    let mut corpus = Vec::new();
    for k in 1..=7u8 {
        corpus.push(frame(k, &vec![k; k as usize * 3]));
    }
    let (mut frames, mut errors) = (0u64, 0u64);
    for it in 0..n {
        // a valid stream in random pieces: the same frames whatever the cut
        let picks: Vec<Vec<u8>> = (0..1 + rng.below(6))
            .map(|_| {
                let k = 1 + rng.below(7) as u8;
                let p: Vec<u8> = (0..rng.below(300)).map(|_| rng.next_u64() as u8).collect();
                frame(k, &p)
            })
            .collect();
        let stream: Vec<u8> = picks.concat();
        let chunk = 1 + rng.below(stream.len() as u64 + 1) as usize;
        let (got, err) = fuzz::launcher_frames(&stream, chunk);
        assert!(err.is_none(), "a valid stream refused: {err:?}");
        assert_eq!(got.len(), picks.len());
        for (g, p) in got.iter().zip(&picks) {
            assert_eq!(g.0, p[4]);
            assert_eq!(&g.1[..], &p[5..]);
        }
        // a mutated one: no panic, no frame larger than what was sent
        let mut m = mutate(&mut rng, &corpus);
        if rng.chance(0.5) {
            m.splice(0..0, stream.iter().copied());
        }
        let chunk = 1 + rng.below(m.len() as u64 + 1) as usize;
        let r = std::panic::catch_unwind(|| fuzz::launcher_frames(&m, chunk));
        let Ok((got, err)) = r else {
            panic!(
                "the frame reader panicked: seed {} iteration {it}: {}",
                seed(),
                hex(&m)
            );
        };
        frames += got.len() as u64;
        errors += err.is_some() as u64;
        let total: usize = got.iter().map(|f| f.1.len() + 5).sum();
        assert!(total <= m.len());
    }
    eprintln!("frames: {n} valid and {n} mutated streams, {frames} frames, {errors} refused");
}
