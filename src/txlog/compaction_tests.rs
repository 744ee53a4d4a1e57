//! Compaction of a full log, over real files: the live state rewritten
//! into the other area (the two in turn, the file keeping its size), the
//! file grown when the live state needs it, a compaction cut short.

use super::record::Record;
use super::state::LogState;
use super::tests::{dir, id, key, mode_of, msg};
use super::*;

#[test]
fn a_full_log_is_compacted_and_grows_when_the_live_state_needs_it() {
    let d = dir("compact");
    let p = d.join("ep.log");
    let (mut log, _) = TxLog::open(&p, id, false).unwrap();
    // 60 MiB of short-lived transactions through a 16 MiB area, while a few
    // stay open (and the open ones grow past half of the area)
    let mut next = 0u64;
    for round in 0..120u64 {
        for _ in 0..8 {
            log.append(&Record::Issued {
                txn: next,
                dest: id().addr,
                msg: msg(2, 60_000),
            })
            .unwrap();
            log.append(&Record::Released { txn: next }).unwrap();
            next += 1;
        }
        if round % 4 == 0 {
            log.append(&Record::Issued {
                txn: next,
                dest: id().addr,
                msg: msg(3, 300_000),
            })
            .unwrap();
            next += 1;
        }
    }
    assert!(log.generation > 0, "compacted");
    let want = log.state().clone();
    assert_eq!(want.issued.len(), 30);
    assert_eq!(want.next_txn, next);
    let cap = log.area_end - log.area;
    assert!(cap as u64 > DEFAULT_CAPACITY, "grew: {cap}");
    // the larger file that replaced it is its owner's alone too
    assert_eq!(mode_of(&p), 0o600);
    drop(log);
    let (log, rep) = TxLog::open(&p, || panic!(), false).unwrap();
    assert_eq!(log.state(), &want);
    assert!(rep.generation > 0);
    assert!(!p.with_extension("compacting").exists());
}

/// Short-lived target transactions as a logging target writes them, with
/// `open` of them left unfinished; returns the log's state before each
/// compaction (the generation it left).
fn churn(log: &mut TxLog, n: u64, open: u64) -> Vec<(u64, LogState)> {
    let mut before = Vec::new();
    let mut append = |log: &mut TxLog, r: Record| {
        let g = log.generation;
        let prev = log.state().clone();
        log.append(&r).unwrap();
        if log.generation != g {
            before.push((g, prev));
        }
    };
    for t in 0..n {
        let k = key(t);
        append(
            log,
            Record::AckedStarted {
                key: k,
                msg: msg(1, 16),
                forgotten: Vec::new(),
            },
        );
        if t % (n / open.max(1)) == 0 {
            continue; // stays started
        }
        let reply = Some(msg(2, 8));
        append(log, Record::Finished { key: k, reply });
        append(log, Record::Forgotten { key: k });
    }
    before
}

#[test]
fn compactions_write_over_the_two_areas_in_turn_and_the_file_keeps_its_size() {
    let d = dir("areas");
    let p = d.join("ep.log");
    let (mut log, _) = TxLog::open(&p, id, false).unwrap();
    let len = std::fs::metadata(&p).unwrap().len();
    assert_eq!(len, HEADER_LEN as u64 + 2 * DEFAULT_CAPACITY);
    let before = churn(&mut log, 40_000, 20);
    assert!(before.len() >= 4, "compacted {} times", before.len());
    assert_eq!(log.generation, before.len() as u64);
    assert_eq!(std::fs::metadata(&p).unwrap().len(), len, "no new file");
    let want = log.state().clone();
    assert_eq!(want.target.len(), 20);
    drop(log);
    // what the other area holds from two generations ago is not read
    let (log, rep) = TxLog::open(&p, || panic!("exists"), false).unwrap();
    assert_eq!(log.state(), &want);
    assert_eq!(rep.generation, before.len() as u64);
    assert_eq!(rep.torn_tail_at, None);
    assert_eq!(inspect(&p).unwrap().1, want);
}

#[test]
fn a_compaction_cut_short_before_its_epoch_leaves_the_old_area_live() {
    let d = dir("cut");
    let p = d.join("ep.log");
    let (mut log, _) = TxLog::open(&p, id, false).unwrap();
    let before = churn(&mut log, 12_000, 5);
    let (g, at_compaction) = before.last().cloned().unwrap();
    let (live, next) = (log.area, log.generation);
    assert_eq!(next, g + 1);
    drop(log);
    // killed after writing the new area's records, before its epoch's
    // commit word: the area written before stays the live one, whole
    let mut bytes = std::fs::read(&p).unwrap();
    bytes[live..live + 4].fill(0);
    std::fs::write(&p, &bytes).unwrap();
    let (log, rep) = TxLog::open(&p, || panic!("exists"), false).unwrap();
    assert_eq!(rep.generation, g);
    assert_eq!(log.state(), &at_compaction);
    assert_ne!(log.area, live);
    drop(log);
    // no area with a whole epoch frame: refused, not read as empty
    let cap = DEFAULT_CAPACITY as usize;
    bytes[HEADER_LEN..HEADER_LEN + 4].fill(0);
    bytes[HEADER_LEN + cap..HEADER_LEN + cap + 4].fill(0);
    std::fs::write(&p, &bytes).unwrap();
    let e = TxLog::open(&p, || panic!(), false).err().unwrap();
    assert!(e.to_string().contains("epoch frame"), "{e}");
    assert!(e.to_string().contains(p.to_str().unwrap()), "{e}");
}
