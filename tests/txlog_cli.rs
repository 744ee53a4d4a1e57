//! `ramp log FILE` over real log files: prints what a log holds, exits 0 for
//! a log ramp would open and 1, naming the file and the problem, for one it
//! would refuse.

use std::path::PathBuf;
use std::process::Command;

use ramp::txlog::record::{LoggedMsg, Record, TargetKey, TxnState};
use ramp::txlog::{Identity, TxLog};

fn ramp_log(path: &std::path::Path) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_ramp"))
        .arg("log")
        .arg(path)
        .output()
        .expect("run ramp log");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn msg(h: u8) -> LoggedMsg {
    LoggedMsg {
        handler: h,
        category: 1,
        args: vec![4, 5],
        dest_offset: 0,
        payload: b"hello".to_vec(),
    }
}

#[test]
fn ramp_log_prints_a_log_and_refuses_a_damaged_one() {
    let dir = std::env::temp_dir().join(format!("ramp-log-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let p: PathBuf = dir.join("ep0.log");
    let id = Identity {
        secret: [0xab; 32],
        addr: "10.9.8.7:4242".parse().unwrap(),
        created_unix_ns: 1,
    };
    let key = TargetKey {
        peer: "10.9.8.6:5000".parse().unwrap(),
        incarnation: 0x77,
        txn: 3,
    };
    {
        let (mut log, _) = TxLog::open(&p, || id.clone(), false).unwrap();
        let dest = "10.9.8.6:5000".parse().unwrap();
        log.append(&Record::Issued {
            txn: 1,
            dest,
            msg: msg(9),
        })
        .unwrap();
        let state = TxnState {
            ack: 1,
            progress: 3,
            abandon: 0,
            status: 0,
        };
        log.append(&Record::State { txn: 1, state }).unwrap();
        log.append(&Record::Acked { key, msg: msg(10) }).unwrap();
        log.append(&Record::Started { key }).unwrap();
        // the log is locked while open, but may be read
        let (code, out, err) = ramp_log(&p);
        assert_eq!(code, 0, "{out}{err}");
        assert!(out.contains("started, not finished"), "{out}");
    }
    let (code, out, err) = ramp_log(&p);
    assert_eq!(code, 0, "{out}{err}");
    for want in [
        "endpoint 10.9.8.7:4242",
        "4 record(s)",
        "txn 1 to 10.9.8.6:5000: ack 1 progress 3",
        "from 10.9.8.6:5000 (incarnation 0x77) txn 3: started, not finished",
        "log OK",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
    // a damaged header: refused, naming the file and the problem
    let mut bytes = std::fs::read(&p).unwrap();
    bytes[50] ^= 0xff;
    std::fs::write(&p, &bytes).unwrap();
    let (code, out, err) = ramp_log(&p);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains(p.to_str().unwrap()) && err.contains("checksum"),
        "{err}"
    );
    // something else entirely, and no file
    std::fs::write(&p, b"not a log at all").unwrap();
    let (code, _, err) = ramp_log(&p);
    assert_eq!(code, 1);
    assert!(err.contains("too short"), "{err}");
    let (code, _, err) = ramp_log(&dir.join("absent.log"));
    assert_eq!(code, 1);
    assert!(err.contains("cannot read"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn help_prints_the_usage_and_succeeds() {
    for args in [
        &["--help"][..],
        &["bench", "--help"],
        &["bench", "txn", "-h"],
        &["bench", "--loggp", "--help"],
        &["log", "--help"],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_ramp"))
            .args(args)
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{args:?}: {:?}", o.status);
        assert!(out.contains("usage: ramp bench"), "{args:?}: {out}");
    }
    // an unknown option is still an error, with the usage
    let o = Command::new(env!("CARGO_BIN_EXE_ramp"))
        .args(["bench", "--bogus"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown option \"--bogus\""));
    // and a bad value, also for `bench txn` (it exited 1, as a failed run)
    for args in [
        &["bench", "--iters", "0"][..],
        &["bench", "txn", "--iters", "0"],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_ramp"))
            .args(args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&o.stderr).contains("--iters needs a positive number"));
    }
}
