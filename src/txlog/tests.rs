//! The log over real files: round trips, the record layout, locking,
//! sync mode, wide ids, an old version refused; the helpers the other
//! tests of the log share. What a log refuses: `damage_tests.rs`;
//! compaction: `compaction_tests.rs`; hostile copies: `mutation_tests.rs`.

use std::net::SocketAddr;
use std::path::PathBuf;

use super::record::{LoggedMsg, Record, TargetKey, TxnState};
use super::state::TargetPhase;
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

pub(super) fn key(txn: u64) -> TargetKey {
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

pub(super) fn mode_of(p: &std::path::Path) -> u32 {
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
fn a_log_is_used_by_one_process_at_a_time() {
    let d = dir("lock");
    let p = d.join("ep.log");
    let (_log, _) = TxLog::open(&p, id, false).unwrap();
    // a second open (another descriptor: flock excludes it like another process)
    let e = TxLog::open(&p, || panic!(), false).err().unwrap();
    assert!(e.to_string().contains("in use by another process"), "{e}");
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
