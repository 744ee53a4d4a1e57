//! What a log refuses, over real files: a record without its commit word
//! (the end, overwritten), torn records, foreign and damaged files, what
//! is not a regular file, records that contradict the state, transaction
//! ids at the top of the range. A refusal names the file and leaves it as
//! it was.

use std::os::unix::fs::FileTypeExt;

use super::record::{Record, TxnState};
use super::tests::{dir, history, id, key, msg};
use super::*;

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
