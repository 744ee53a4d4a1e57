//! The log over real files: round trips, crash tails, corruption, foreign
//! files, locking, compaction.

use std::net::SocketAddr;
use std::os::unix::fs::FileTypeExt;
use std::path::PathBuf;

use super::record::{LoggedMsg, Record, TargetKey, TxnState};
use super::state::{LogState, TargetPhase};
use super::*;

pub(super) fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ramp-txlog-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

pub(super) fn id() -> Identity {
    Identity {
        secret: [7; 32],
        addr: "10.1.2.3:4567".parse().unwrap(),
        created_unix_ns: 42,
    }
}

pub(super) fn msg(h: u8, n: usize) -> LoggedMsg {
    LoggedMsg {
        handler: h,
        category: 1,
        args: vec![1, 2, 3],
        dest_offset: 0,
        payload: vec![h; n],
    }
}

fn key(txn: u64) -> TargetKey {
    TargetKey {
        peer: "[fe80::1]:9".parse::<SocketAddr>().unwrap(),
        incarnation: 99,
        txn,
    }
}

/// A few records of every kind.
pub(super) fn history() -> Vec<Record> {
    vec![
        Record::Issued {
            txn: 1,
            dest: "10.0.0.9:1".parse().unwrap(),
            msg: msg(5, 10),
        },
        Record::State {
            txn: 1,
            state: TxnState {
                ack: 1,
                progress: 2,
                abandon: 0,
                status: 0,
            },
        },
        Record::Issued {
            txn: 2,
            dest: "10.0.0.9:1".parse().unwrap(),
            msg: msg(6, 0),
        },
        Record::Released { txn: 1 },
        Record::Acked {
            key: key(10),
            msg: msg(7, 3),
        },
        Record::Started { key: key(10) },
        Record::Finished {
            key: key(10),
            reply: Some(msg(8, 2)),
        },
        Record::Acked {
            key: key(11),
            msg: msg(7, 1),
        },
        Record::Acked {
            key: key(12),
            msg: msg(7, 1),
        },
        Record::Started { key: key(12) },
        Record::Acked {
            key: key(13),
            msg: msg(7, 1),
        },
        Record::Forgotten { key: key(13) },
        Record::Acked {
            key: key(15),
            msg: msg(7, 1),
        },
        Record::Acked {
            key: key(16),
            msg: msg(7, 1),
        },
        Record::AckedStarted {
            key: key(14),
            msg: msg(7, 2),
            forgotten: vec![15, 16],
        },
    ]
}

fn mode_of(p: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// A log holds the endpoint's secret (its association tags and cookies
/// are derived from it) and its transactions' messages: its owner's alone,
/// whatever the umask; one left readable by others (an older version made
/// them 0644) is closed to them when opened.
#[test]
fn a_log_is_readable_by_its_owner_alone() {
    use std::os::unix::fs::PermissionsExt;
    let d = dir("mode");
    let p = d.join("ep.log");
    drop(TxLog::open(&p, id, false).unwrap());
    assert_eq!(mode_of(&p), 0o600);
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    drop(TxLog::open(&p, || panic!(), false).unwrap());
    assert_eq!(mode_of(&p), 0o600);
}

#[test]
fn records_survive_a_reopen_and_rebuild_the_state() {
    let d = dir("reopen");
    let p = d.join("ep.log");
    let (mut log, rep) = TxLog::open(&p, id, false).unwrap();
    assert_eq!(rep.records, 0);
    for r in history() {
        log.append(&r).unwrap();
    }
    let want = log.state().clone();
    drop(log);
    let (log, rep) = TxLog::open(&p, || panic!("exists"), false).unwrap();
    assert_eq!(log.identity(), &id());
    assert_eq!(rep.records, history().len() as u64);
    assert_eq!(rep.torn_tail_at, None);
    assert_eq!(log.state(), &want);
    let s = log.state();
    assert_eq!(s.next_txn, 3);
    assert_eq!(s.issued.keys().copied().collect::<Vec<_>>(), vec![2]);
    assert_eq!(s.target[&key(10)], TargetPhase::Finished(Some(msg(8, 2))));
    assert_eq!(s.target[&key(11)], TargetPhase::Acked(msg(7, 1)));
    assert_eq!(s.target[&key(12)], TargetPhase::Started);
    assert!(!s.target.contains_key(&key(13)));
    assert_eq!(s.target[&key(14)], TargetPhase::Started);
    assert!(!s.target.contains_key(&key(15)) && !s.target.contains_key(&key(16)));
    // read-only inspection agrees
    let (i, st, r) = inspect(&p).unwrap();
    assert_eq!((i, &st, r.records), (id(), &want, rep.records));
}

/// The bytes every record kind encodes to, pinned: the layout is the
/// file format (version 3), which an encoder may not change silently.
#[test]
fn the_record_layout_is_the_files_version_3() {
    let mut all = history();
    let v4: SocketAddr = "10.0.0.9:1".parse().unwrap();
    let k4 = TargetKey {
        peer: v4,
        incarnation: 1 << 40,
        txn: u64::MAX - 3,
    };
    let full = LoggedMsg {
        handler: 255,
        category: 2,
        args: (0..16).map(|i| 0x0101_0101 * i).collect(),
        dest_offset: 1 << 33,
        payload: (0..=255).collect(),
    };
    all.extend([
        Record::AckedStarted {
            key: k4,
            msg: full.clone(),
            forgotten: vec![],
        },
        Record::AckedStarted {
            key: k4,
            msg: msg(0, 0),
            forgotten: vec![7],
        },
        Record::Finished {
            key: k4,
            reply: None,
        },
        Record::Finished {
            key: k4,
            reply: Some(full),
        },
        Record::TxnFloor { next: 1 << 50 },
    ]);
    let mut bytes = Vec::new();
    for r in &all {
        bytes.push(r.kind());
        let at = bytes.len();
        r.encode(&mut bytes);
        let n = (bytes.len() - at) as u32;
        bytes.extend_from_slice(&n.to_le_bytes());
    }
    assert_eq!(
        (bytes.len(), crc32c::crc32c(&bytes)),
        (1752, 2_161_552_461),
        "the encoding changed"
    );
    // one record in full: a finished transaction without a reply
    let mut b = Vec::new();
    Record::Finished {
        key: k4,
        reply: None,
    }
    .encode(&mut b);
    let mut want = vec![4, 10, 0, 0, 9];
    want.extend_from_slice(&[0; 12]);
    want.extend_from_slice(&1u16.to_le_bytes());
    want.extend_from_slice(&(1u64 << 40).to_le_bytes());
    want.extend_from_slice(&(u64::MAX - 3).to_le_bytes());
    want.push(0);
    assert_eq!(b, want);
}

#[test]
fn every_record_kind_round_trips_and_bad_bodies_are_refused() {
    for r in history() {
        let mut b = Vec::new();
        r.encode(&mut b);
        assert_eq!(Record::decode(r.kind(), &b), Some(r.clone()));
        // any shorter or longer body is not that record
        assert_eq!(Record::decode(r.kind(), &b[..b.len() - 1]), None, "{r:?}");
        let mut longer = b.clone();
        longer.push(0);
        assert_eq!(Record::decode(r.kind(), &longer), None, "{r:?}");
    }
    assert_eq!(Record::decode(0, &[]), None);
    assert_eq!(Record::decode(200, &[0; 64]), None);
}

#[test]
fn a_record_without_its_commit_word_is_the_end_and_is_overwritten() {
    let d = dir("uncommitted");
    let p = d.join("ep.log");
    let (mut log, _) = TxLog::open(&p, id, false).unwrap();
    for r in &history()[..3] {
        log.append(r).unwrap();
    }
    let end = log.end;
    drop(log);
    // a process killed while writing record 4: everything but the commit word
    let mut bytes = std::fs::read(&p).unwrap();
    let mut body = Vec::new();
    history()[3].encode(&mut body);
    bytes[end + 8..end + 12].copy_from_slice(&(body.len() as u32).to_le_bytes());
    bytes[end + 24..end + 24 + body.len()].copy_from_slice(&body);
    std::fs::write(&p, &bytes).unwrap();
    let (mut log, rep) = TxLog::open(&p, || panic!(), false).unwrap();
    assert_eq!(rep.records, 3);
    assert_eq!(rep.torn_tail_at, None);
    log.append(&history()[3]).unwrap();
    drop(log);
    let (_, rep) = TxLog::open(&p, || panic!(), false).unwrap();
    assert_eq!(rep.records, 4);
}

#[test]
fn a_torn_last_record_is_dropped_and_a_torn_middle_refuses_the_file() {
    let d = dir("torn");
    let p = d.join("ep.log");
    let (mut log, _) = TxLog::open(&p, id, false).unwrap();
    let mut offsets = Vec::new();
    for r in &history()[..4] {
        offsets.push(log.end);
        log.append(r).unwrap();
    }
    drop(log);
    let good = std::fs::read(&p).unwrap();
    // the last record's body torn (its commit word written, a page not)
    let mut bytes = good.clone();
    bytes[offsets[3] + 24] ^= 0xff;
    std::fs::write(&p, &bytes).unwrap();
    let (log, rep) = TxLog::open(&p, || panic!(), false).unwrap();
    assert_eq!(rep.records, 3);
    assert_eq!(rep.torn_tail_at, Some(offsets[3]));
    assert!(
        log.state().issued.contains_key(&1),
        "the release was dropped"
    );
    drop(log);
    // a corrupt record with good ones after it: refused, never trusted
    let mut bytes = good.clone();
    bytes[offsets[1] + 30] ^= 0x01;
    std::fs::write(&p, &bytes).unwrap();
    let e = TxLog::open(&p, || panic!(), false).err().unwrap();
    assert!(
        e.to_string().contains("is corrupt and records follow it"),
        "{e}"
    );
    assert!(e.to_string().contains(p.to_str().unwrap()), "{e}");
    assert!(inspect(&p).is_err());
}

#[test]
fn foreign_and_damaged_files_are_refused_with_the_reason() {
    let d = dir("foreign");
    let p = d.join("ep.log");
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"#!/bin/sh\necho not a log\n".to_vec(), "too short"),
        (vec![0x55; 8192], "not a ramp transaction log"),
    ];
    for (bytes, why) in cases {
        std::fs::write(&p, &bytes).unwrap();
        let e = TxLog::open(&p, || panic!(), false).err().unwrap();
        assert!(e.to_string().contains(why), "{e}");
        // and the file is left as it was
        assert_eq!(std::fs::read(&p).unwrap(), bytes);
    }
    // a real log with one header byte changed, another version, a cut file
    let _ = std::fs::remove_file(&p);
    drop(TxLog::open(&p, id, false).unwrap());
    let good = std::fs::read(&p).unwrap();
    for (at, why) in [(45usize, "checksum"), (8, "version")] {
        let mut b = good.clone();
        b[at] ^= 1;
        std::fs::write(&p, &b).unwrap();
        let e = TxLog::open(&p, || panic!(), false).err().unwrap();
        assert!(e.to_string().contains(why), "{at}: {e}");
    }
    std::fs::write(&p, &good[..HEADER_LEN + 100]).unwrap();
    let e = TxLog::open(&p, || panic!(), false).err().unwrap();
    assert!(e.to_string().contains("truncated"), "{e}");
}

/// A FIFO, a device or a directory under a log's name is refused at once
/// by both readers (reading a FIFO waited for a writer, /dev/zero never
/// ended and grew the reader's memory), and left as it was.
#[test]
fn what_is_not_a_regular_file_is_refused_without_reading_it() {
    let d = dir("not-a-file");
    let fifo = d.join("fifo.log");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let zero = std::path::Path::new("/dev/zero");
    for p in [fifo.as_path(), zero, d.as_path()] {
        let e = inspect(p).err().unwrap();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let e = TxLog::open(p, || panic!("no log is made there"), false)
            .err()
            .unwrap();
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }
    assert!(fifo.symlink_metadata().unwrap().file_type().is_fifo());
}

#[test]
fn records_that_contradict_the_state_are_refused() {
    let d = dir("contradict");
    let p = d.join("ep.log");
    let (mut log, _) = TxLog::open(&p, id, false).unwrap();
    // a handler cannot finish before it started, nor start twice
    assert!(log
        .append(&Record::Finished {
            key: key(1),
            reply: None
        })
        .is_err());
    log.append(&Record::Acked {
        key: key(1),
        msg: msg(1, 0),
    })
    .unwrap();
    log.append(&Record::Started { key: key(1) }).unwrap();
    let before = log.state().clone();
    assert!(log.append(&Record::Started { key: key(1) }).is_err());
    assert_eq!(log.state(), &before, "a refused record changes nothing");
    // a start that forgets what was never acked, or one id twice
    // (with 1 started and 2 acked)
    let cases = [
        (3, vec![1, 1]),
        (3, vec![4]),
        (3, vec![2, 4]),
        (3, vec![2, 1]),
        (3, vec![3]),
        (1, vec![2]),
        (1, vec![]),
    ];
    log.append(&Record::Acked {
        key: key(2),
        msg: msg(1, 0),
    })
    .unwrap();
    let before = log.state().clone();
    for (k, forgotten) in cases {
        let r = Record::AckedStarted {
            key: key(k),
            msg: msg(1, 0),
            forgotten,
        };
        assert!(log.append(&r).is_err(), "{r:?}");
        assert_eq!(log.state(), &before, "a refused record changes nothing");
    }
    assert!(log
        .append(&Record::Acked {
            key: key(1),
            msg: msg(1, 0)
        })
        .is_err());
    assert!(log
        .append(&Record::State {
            txn: 5,
            state: TxnState::default()
        })
        .is_err());
    log.append(&Record::Issued {
        txn: 5,
        dest: id().addr,
        msg: msg(1, 0),
    })
    .unwrap();
    assert!(log
        .append(&Record::Issued {
            txn: 5,
            dest: id().addr,
            msg: msg(1, 0)
        })
        .is_err());
    assert!(log
        .append(&Record::Issued {
            txn: 4,
            dest: id().addr,
            msg: msg(1, 0)
        })
        .is_err());
    drop(log);
    let (_, rep) = TxLog::open(&p, || panic!(), false).unwrap();
    assert_eq!(rep.records, 4, "refused records were not written");
}

#[test]
fn transaction_ids_at_the_top_of_the_range_are_refused_also_in_a_crafted_file() {
    use super::area::{commit_word, stage_fields, write_staged, FIELDS_LEN};
    use super::state::MAX_TXN_ID;
    let d = dir("top-ids");
    let p = d.join("ep.log");
    let (mut log, _) = TxLog::open(&p, id, false).unwrap();
    let issued = |txn| Record::Issued {
        txn,
        dest: id().addr,
        msg: msg(1, 0),
    };
    // the endpoint's counter (`take_txn_id`) adds one to the id a log gives
    // it: from the top of the range it would wrap to ids already used
    for r in [
        issued(u64::MAX),
        issued(MAX_TXN_ID),
        Record::TxnFloor { next: u64::MAX },
        Record::TxnFloor {
            next: MAX_TXN_ID + 1,
        },
    ] {
        let e = log.append(&r).err().unwrap();
        assert!(e.to_string().contains("2^63"), "{r:?}: {e}");
    }
    log.append(&Record::TxnFloor { next: MAX_TXN_ID }).unwrap();
    assert_eq!(log.state().next_txn, MAX_TXN_ID);
    assert!(
        log.append(&issued(MAX_TXN_ID - 1)).is_err(),
        "below the floor"
    );
    let end = log.end;
    drop(log);
    // the same record written by hand, whole and with its checksum
    let mut bytes = std::fs::read(&p).unwrap();
    let mut staged = vec![0u8; FIELDS_LEN];
    let r = issued(u64::MAX);
    r.encode(&mut staged);
    stage_fields(&mut staged, r.kind(), 2);
    let area_end = HEADER_LEN + DEFAULT_CAPACITY as usize;
    write_staged(&mut bytes, end, area_end, commit_word(0), &staged);
    std::fs::write(&p, &bytes).unwrap();
    let e = TxLog::open(&p, || panic!(), false).err().unwrap();
    assert!(
        e.to_string().contains("record 2") && e.to_string().contains("2^63"),
        "{e}"
    );
    assert!(inspect(&p).is_err());
    assert_eq!(
        std::fs::read(&p).unwrap(),
        bytes,
        "a refused file is left as it was"
    );
}

#[test]
fn a_log_is_used_by_one_process_at_a_time() {
    let d = dir("lock");
    let p = d.join("ep.log");
    let (_log, _) = TxLog::open(&p, id, false).unwrap();
    // a second open (another descriptor: flock excludes it like another process)
    let e = TxLog::open(&p, || panic!(), false).err().unwrap();
    assert!(e.to_string().contains("in use by another process"), "{e}");
}

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

#[test]
fn sync_mode_writes_the_same_log() {
    let d = dir("sync");
    let p = d.join("ep.log");
    let (mut log, _) = TxLog::open(&p, id, true).unwrap();
    for r in history() {
        log.append(&r).unwrap();
    }
    let want = log.state().clone();
    drop(log);
    assert_eq!(inspect(&p).unwrap().1, want);
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

#[test]
fn sixty_four_bit_ids_come_back_the_same_on_reopening() {
    let d = dir("wide");
    let p = d.join("ep.log");
    let big = (5u64 << 32) + 7;
    let lap = 1u64 << 32;
    let (mut log, _) = TxLog::open(&p, id, false).unwrap();
    let dest: SocketAddr = "10.9.9.9:9".parse().unwrap();
    log.append(&Record::Issued {
        txn: big,
        dest,
        msg: msg(1, 4),
    })
    .unwrap();
    log.append(&Record::State {
        txn: big,
        state: TxnState {
            ack: 1,
            progress: 3,
            abandon: 0,
            status: 0,
        },
    })
    .unwrap();
    // at the target: the same wire id a lap apart, the older forgotten
    log.append(&Record::AckedStarted {
        key: key(big),
        msg: msg(2, 3),
        forgotten: vec![],
    })
    .unwrap();
    log.append(&Record::Finished {
        key: key(big),
        reply: Some(msg(3, 2)),
    })
    .unwrap();
    log.append(&Record::AckedStarted {
        key: key(big + lap),
        msg: msg(2, 3),
        forgotten: vec![big],
    })
    .unwrap();
    let want = log.state().clone();
    assert_eq!(want.next_txn, big + 1);
    assert!(want.issued.contains_key(&big));
    assert!(want.target.contains_key(&key(big + lap)));
    assert!(!want.target.contains_key(&key(big)));
    drop(log);
    let (log, _) = TxLog::open(&p, || panic!(), false).unwrap();
    assert_eq!(log.state(), &want);
}

#[test]
fn a_version_2_log_is_refused_naming_the_file_and_its_version() {
    let d = dir("v2");
    let p = d.join("old.log");
    drop(TxLog::open(&p, id, false).unwrap());
    let mut b = std::fs::read(&p).unwrap();
    b[8..12].copy_from_slice(&2u32.to_le_bytes());
    std::fs::write(&p, &b).unwrap();
    let e = TxLog::open(&p, || panic!(), false)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains(&p.display().to_string()), "{e}");
    assert!(e.contains("version 2, this library reads 3"), "{e}");
    assert_eq!(std::fs::read(&p).unwrap(), b, "the file is left as it was");
}
