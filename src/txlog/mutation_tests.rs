//! A log file is hostile input: thousands of damaged and of crafted copies
//! of a real log, each opened (`TxLog::open`) and read (`inspect`, what
//! `ramp log` does). Damage (bytes changed, the file cut) is caught by the
//! checksums: what opens is the state of a prefix of what was written.
//! Crafted files (a record's or the header's bytes changed and its checksum
//! made right again: what someone who writes the file can do) get past the
//! checksums to the decoders and the state's checks. Either way: no panic,
//! a refusal names the file and leaves it as it was, the two readers agree,
//! and a log that opens takes a new record and reopens with it.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use super::area::{crc, FRAME_LEN};
use super::record::Record;
use super::state::LogState;
use super::tests::{dir, history, id, msg};
use super::*;
use crate::rng::Rng;

/// Cases per run, and the seed of their generator: fixed, so a failure
/// repeats (the crate reads `RAMP_*` variables only through `config`; to
/// explore, change them here: 20,000 cases at four other seeds passed).
const CASES: u64 = 1500;
const SEED: u64 = 0x10_9f11e;

/// A real log of `history()`: its bytes, each record's offset, and the
/// state after each prefix of the history (`prefix[k]`: after k records).
fn real_log(p: &Path) -> (Vec<u8>, Vec<usize>, Vec<LogState>) {
    let (mut log, _) = TxLog::open(p, id, false).unwrap();
    let mut offsets = Vec::new();
    for r in &history() {
        offsets.push(log.end);
        log.append(r).unwrap();
    }
    offsets.push(log.end);
    drop(log);
    let mut prefix = vec![LogState::default()];
    let mut st = LogState::default();
    for r in history() {
        let mut r = r;
        st.apply(&mut r).unwrap();
        prefix.push(st.clone());
    }
    (std::fs::read(p).unwrap(), offsets, prefix)
}

/// The record at `at` made whole again: its checksum over what it now
/// holds (its length field as it now says, when that fits the file).
fn reseal(b: &mut [u8], at: usize) {
    let len = u32::from_le_bytes(b[at + 8..at + 12].try_into().unwrap()) as usize;
    if let Some(body) = b.get(at + 8..at + FRAME_LEN + len) {
        let c = crc(body);
        b[at + 4..at + 8].copy_from_slice(&c.to_le_bytes());
    }
}

/// The header's checksum made right again.
fn reseal_header(b: &mut [u8]) {
    let c = crc32c::crc32c(&b[..HEADER_USED]);
    b[HEADER_USED..HEADER_USED + 4].copy_from_slice(&c.to_le_bytes());
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// Bytes changed, the checksums left as they were.
    Damaged,
    /// The file cut short.
    Cut,
    /// A record's bytes changed and its checksum made right.
    CraftedRecord,
    /// The header's bytes changed and its checksum made right.
    CraftedHeader,
}

/// One mutation of the real log `good`: the kind and the bytes.
fn mutate(rng: &mut Rng, good: &[u8], offsets: &[usize]) -> (Kind, Vec<u8>) {
    let mut b = good.to_vec();
    let records = offsets.len() - 1;
    let end = offsets[records];
    match rng.below(10) {
        0..=2 => {
            // anywhere in the header and the records written, and a little past
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(end as u64 + 64) as usize;
                b[at] ^= 1 << rng.below(8);
            }
            (Kind::Damaged, b)
        }
        3 => {
            let at = rng.below(end as u64 + 64) as usize;
            b[at] = rng.next_u64() as u8;
            (Kind::Damaged, b)
        }
        4 => {
            b.truncate(rng.below(good.len() as u64) as usize);
            (Kind::Cut, b)
        }
        5..=8 => {
            let r = rng.below(records as u64) as usize;
            let (at, next) = (offsets[r], offsets[r + 1]);
            match rng.below(5) {
                // the body's bytes
                0 | 1 => {
                    for _ in 0..1 + rng.below(3) {
                        let i = at + FRAME_LEN + rng.below((next - at - FRAME_LEN) as u64) as usize;
                        b[i] = rng.next_u64() as u8;
                    }
                }
                // the length: a little off, or anything
                2 => {
                    let len = u32::from_le_bytes(b[at + 8..at + 12].try_into().unwrap());
                    let new = if rng.chance(0.5) {
                        len.wrapping_add(rng.below(17) as u32).wrapping_sub(8)
                    } else {
                        rng.next_u64() as u32
                    };
                    b[at + 8..at + 12].copy_from_slice(&new.to_le_bytes());
                }
                // the kind
                3 => b[at + 12] = rng.below(12) as u8,
                // the sequence number
                _ => {
                    let s = rng.below(records as u64 + 3);
                    b[at + 16..at + 24].copy_from_slice(&s.to_le_bytes());
                }
            }
            reseal(&mut b, at);
            (Kind::CraftedRecord, b)
        }
        _ => {
            // capacity, generation, creation time, secret, address
            let at = 16 + rng.below((HEADER_USED - 16) as u64) as usize;
            if at < 24 && rng.chance(0.5) {
                // a capacity that looks possible
                let cap = 4096u64 << rng.below(12);
                b[16..24].copy_from_slice(&cap.to_le_bytes());
            } else {
                b[at] = rng.next_u64() as u8;
            }
            reseal_header(&mut b);
            (Kind::CraftedHeader, b)
        }
    }
}

/// Opens and reads the file `p` holding `bytes`; checks what the module
/// doc promises. `prefix`: the states a damaged file may open with.
fn check(p: &Path, kind: Kind, bytes: &[u8], prefix: &[LogState], case: u64) {
    let name = p.to_str().unwrap();
    let inspected = inspect(p);
    match TxLog::open(
        p,
        || panic!("case {case}: a fresh identity for a file that exists"),
        false,
    ) {
        Err(e) => {
            assert!(e.to_string().contains(name), "case {case} {kind:?}: {e}");
            assert_eq!(
                std::fs::read(p).unwrap(),
                bytes,
                "case {case} {kind:?}: a refused file was changed"
            );
            let ie = inspected.err().unwrap_or_else(|| {
                panic!("case {case} {kind:?}: open refused ({e}), inspect read it")
            });
            assert!(ie.to_string().contains(name), "case {case} {kind:?}: {ie}");
        }
        Ok((mut log, rep)) => {
            let (_, ist, irep) = inspected.unwrap_or_else(|e| {
                panic!("case {case} {kind:?}: open read it, inspect refused: {e}")
            });
            assert_eq!(&ist, log.state(), "case {case} {kind:?}");
            assert_eq!(irep, rep, "case {case} {kind:?}");
            if matches!(kind, Kind::Damaged | Kind::Cut) {
                let k = rep.records as usize;
                assert!(
                    k < prefix.len() && log.state() == &prefix[k],
                    "case {case} {kind:?}: a damaged log opened with a state no prefix of its records has ({k} records)"
                );
            }
            // still a log: a new record is kept across a reopening
            let n = rep.records;
            // (an id above any a crafted record issued)
            let txn = log.state().next_txn.max(1 << 40);
            log.append(&Record::Issued {
                txn,
                dest: "10.0.0.9:1".parse().unwrap(),
                msg: msg(9, 4),
            })
            .unwrap_or_else(|e| panic!("case {case} {kind:?}: {e}"));
            drop(log);
            let (log, rep) = TxLog::open(p, || panic!(), false)
                .unwrap_or_else(|e| panic!("case {case} {kind:?}: reopening: {e}"));
            assert!(
                log.state().issued.contains_key(&txn),
                "case {case} {kind:?}"
            );
            assert!(
                rep.records == n + 1 || rep.generation > irep.generation,
                "case {case} {kind:?}"
            );
        }
    }
}

#[test]
fn damaged_and_crafted_log_files_are_refused_or_read_as_a_consistent_log() {
    let d = dir("mutations");
    let p = d.join("ep.log");
    let (good, offsets, prefix) = real_log(&p);
    let mut rng = Rng::new(SEED);
    let mut outcomes = std::collections::HashMap::new();
    for case in 0..CASES {
        let (kind, bytes) = mutate(&mut rng, &good, &offsets);
        std::fs::write(&p, &bytes).unwrap();
        let r = catch_unwind(AssertUnwindSafe(|| check(&p, kind, &bytes, &prefix, case)));
        if let Err(e) = r {
            let why = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!(
                "case {case} ({kind:?}, seed {SEED:#x}): {why}; the file is kept at {}",
                p.display()
            );
        }
        let accepted = std::fs::read(&p).map(|b| b != bytes).unwrap_or(false);
        *outcomes.entry((kind_name(kind), accepted)).or_insert(0u32) += 1;
    }
    eprintln!("outcomes (kind, accepted): {outcomes:?}");
    // each kind was tried, and both outcomes came of the crafted records
    for k in ["damaged", "cut", "crafted record", "crafted header"] {
        assert!(outcomes.keys().any(|(n, _)| *n == k), "{k} never tried");
    }
    assert!(outcomes.contains_key(&("crafted record", true)));
    assert!(outcomes.contains_key(&("crafted record", false)));
    let _ = std::fs::remove_dir_all(&d);
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Damaged => "damaged",
        Kind::Cut => "cut",
        Kind::CraftedRecord => "crafted record",
        Kind::CraftedHeader => "crafted header",
    }
}
