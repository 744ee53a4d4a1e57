//! Property and mutation tests of every parser of untrusted input (the
//! stable toolchain's stand-in for a coverage-guided fuzzer; `fuzz/` holds
//! the AFL targets): seeded random bytes and mutations (bit flips, byte
//! writes, truncations, extensions, splices) of real packets and messages,
//! with the CRC32C trailer recomputed or not. Here, the packet decoder
//! (`wire::decode`, the deferred check of large DATA, the walk of a
//! bundle): never panics; a damaged trailer is always refused. The
//! protocol core fed garbage: `fuzz_protocol.rs`; the PMI reply parsers
//! and the launcher's frame reader: `fuzz_spmd.rs`; the helpers they
//! share: `common/fuzz.rs`.
//!
//! Bounded for CI (about a second each). A longer run:
//! `RAMP_FUZZ_ITERS=10000000 cargo test --release --test fuzz_props -- --nocapture`
//! (likewise `--test fuzz_protocol`, `--test fuzz_spmd`; `RAMP_FUZZ_SEED=N`
//! picks another seed; a failure prints the seed and the iteration, and
//! the input).

mod common;
#[path = "common/fuzz.rs"]
mod fuzz_common;

use std::collections::HashSet;
use std::time::Duration;

use fuzz_common::*;
use ramp::sim::Rng;
use ramp::wire::{self, Category, MsgKind, MsgMeta};

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

/// Large DATA packets (full headers and later fragments' short ones),
/// mutated (resealed or not): `decode_deferred`, which
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
        // and a later fragment's short header (`Packet::More`)
        let mut d = Vec::new();
        wire::encode_more(&mut d, &I, &c, off, &p);
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
            if let Ok(wire::Packet::Data { payload, .. } | wire::Packet::More { payload, .. }) =
                &whole
            {
                assert!(
                    payload.len() < wire::DEFER_MIN,
                    "a large DATA packet not deferred"
                );
            }
            continue;
        };
        deferred += 1;
        let (wire::Packet::Data { payload, .. } | wire::Packet::More { payload, .. }) = &pkt else {
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
