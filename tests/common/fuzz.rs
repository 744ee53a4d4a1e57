//! Helpers of the property and mutation tests of the parsers of untrusted
//! input (`fuzz_props.rs`, `fuzz_protocol.rs`, `fuzz_spmd.rs`, each of
//! which includes this file): the run's length and seed from the
//! environment, seeded mutations of a corpus, resealing a datagram as a
//! forger would, and a corpus of one real packet of each type.
#![allow(dead_code)]

use ramp::sim::Rng;
use ramp::wire::{self, Category, Common, Integrity, MsgKind, MsgMeta};

pub const I: Integrity = Integrity::Crc32c;

pub fn iters(default: u64) -> u64 {
    std::env::var("RAMP_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

pub fn seed() -> u64 {
    std::env::var("RAMP_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed_f00d)
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// One mutation of `corpus[..]`: the result, and whether it may still
/// carry a valid trailer by construction (never, unless `fix`).
pub fn mutate(rng: &mut Rng, corpus: &[Vec<u8>]) -> Vec<u8> {
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
pub fn reseal(v: &mut Vec<u8>) {
    let n = v.len().saturating_sub(I.trailer_len());
    v.truncate(n);
    I.seal(v, 0);
}

/// The association fields of the corpus's packets.
pub fn corpus_common() -> Common {
    Common {
        vtag: 0x1122_3344_5566_7788,
        channel: 1,
        seq: 7,
        epoch: 1,
        ..Default::default()
    }
}

/// One real packet of each type, DATA of each category and kind.
pub fn packet_corpus() -> Vec<Vec<u8>> {
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
