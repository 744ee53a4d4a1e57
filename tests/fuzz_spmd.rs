//! Property and mutation tests of the job start-up's parsers of untrusted
//! input (see `fuzz_props.rs` for the family): the PMI-1 and PMI-2 reply
//! parsers and the local launcher's frame reader, fed seeded random bytes
//! and mutations of real replies and frames: no panic, nothing accepted
//! that breaks their invariants.
//!
//! Bounded for CI. A longer run:
//! `RAMP_FUZZ_ITERS=10000000 cargo test --release --test fuzz_spmd -- --nocapture`

mod common;
#[path = "common/fuzz.rs"]
mod fuzz_common;

use std::time::Duration;

use fuzz_common::*;
use ramp::sim::Rng;
use ramp::spmd::fuzz;

#[test]
fn pmi_parsers_survive_random_and_mutated_replies() {
    let _w = common::watchdog("fuzz_spmd::pmi", Duration::from_secs(600));
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
    let _w = common::watchdog("fuzz_spmd::frames", Duration::from_secs(600));
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
