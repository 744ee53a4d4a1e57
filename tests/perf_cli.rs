//! `ramp perf` with tiny counts (plumbing, no timing checked): `sweep
//! --quick` runs real two-process jobs under the fault injector, prints its
//! table and writes the CSV (exactly the columns, every row
//! parsing) and the PNG; `measure` writes a stages file that `model` reads;
//! bad options and a bad stages file are refused with a clear error.

mod common;

use std::process::Command;
use std::time::Duration;

fn ramp(args: &[&str]) -> std::process::Output {
    common::output_within(
        Command::new(env!("CARGO_BIN_EXE_ramp"))
            .args(args)
            .env_remove("RAMP_FAULT_LOSS")
            .env_remove("RAMP_FAULT_BER"),
        Duration::from_secs(240),
    )
}

#[test]
fn sweep_quick_writes_a_csv_whose_columns_parse_and_a_png() {
    let _w = common::watchdog("perf_sweep_quick", Duration::from_secs(300));
    let dir = std::env::temp_dir();
    let id = std::process::id();
    let (csv, png) = (
        dir.join(format!("ramp-perf-{id}.csv")),
        dir.join(format!("ramp-perf-{id}.png")),
    );
    let o = ramp(&[
        "perf",
        "sweep",
        "--quick",
        "--no-pin",
        "--iters",
        "300",
        "--csv",
        csv.to_str().unwrap(),
        "--plot",
        png.to_str().unwrap(),
    ]);
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "ramp perf sweep failed\n{out}\n{err}");
    assert!(
        err.contains("ramp perf sweep --quick"),
        "no progress on stderr:\n{err}"
    );
    assert!(out.contains("ratio"), "no table:\n{out}");
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    // the columns first, then the component's and the sampling's
    assert_eq!(
        lines.next(),
        Some(
            "transport,protocol,bytes,ber,model_mean_us,measured_mean_us,model_p99_us,measured_p99_us,\
             component,fault_p,p99_spread,n"
        )
    );
    let mut seen = std::collections::BTreeSet::new();
    let mut components = Vec::new();
    for l in lines {
        let c: Vec<&str> = l.split(',').collect();
        assert_eq!(c.len(), 12, "{l}");
        let fault_p: f64 = c[9].parse().unwrap_or_else(|_| panic!("{l}"));
        c[10].parse::<f64>().unwrap_or_else(|_| panic!("{l}"));
        c[11].parse::<usize>().unwrap_or_else(|_| panic!("{l}"));
        if c[8] != "none" {
            // a component's point: ber 0, its probability set
            assert_eq!((c[3], fault_p), ("0e0", 0.01), "{l}");
            components.push(c[8].to_string());
        }
        assert!(["udp", "shm"].contains(&c[0]), "{l}");
        assert!(["plain", "txn"].contains(&c[1]), "{l}");
        c[2].parse::<usize>().unwrap();
        let ber: f64 = c[3].parse().unwrap();
        assert!((0.0..=1e-3).contains(&ber), "{l}");
        for v in &c[4..8] {
            let x: f64 = v.parse().unwrap_or_else(|_| panic!("{l}"));
            assert!(x.is_finite() && x > 0.0, "{l}");
        }
        if c[8] == "none" {
            seen.insert((c[1].to_string(), c[3].to_string()));
        }
    }
    // --quick measures one component: the target's receive dropping
    assert_eq!(components, ["recv"], "{text}");
    assert!(out.contains("udp plain 0 recv 0.01"), "{out}");
    // plain and transactions, loss-free and two rates each: a row, or a
    // point skipped because the model puts it past its bound (a machine
    // so loaded that the loss-free round trip is milliseconds) and said so
    for proto in ["plain", "txn"] {
        assert!(
            seen.contains(&(proto.to_string(), "0e0".to_string())),
            "{text}"
        );
        for ber in ["1e-5", "1e-4"] {
            let skipped = format!("udp {proto} 0 ber {ber}");
            assert!(
                seen.contains(&(proto.to_string(), ber.to_string()))
                    || out
                        .lines()
                        .any(|l| l.starts_with("skipped") && l.contains(&skipped)),
                "{proto} {ber} neither measured nor skipped:\n{text}\n{out}"
            );
        }
    }
    let png_bytes = std::fs::read(&png).unwrap();
    assert_eq!(&png_bytes[..8], b"\x89PNG\r\n\x1a\n");
    let _ = std::fs::remove_file(&csv);
    let _ = std::fs::remove_file(&png);
}

#[test]
fn measure_writes_stages_the_model_reads() {
    let _w = common::watchdog("perf_measure_model", Duration::from_secs(300));
    let stages = std::env::temp_dir().join(format!("ramp-perf-stages-{}.txt", std::process::id()));
    let path = stages.to_str().unwrap();
    let o = ramp(&[
        "perf", "measure", "--no-pin", "--runs", "1", "--iters", "200", "--out", path,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&stages).unwrap();
    assert!(
        text.contains("policy rto_initial_us 20000 rto_min_us 5000"),
        "{text}"
    );
    for row in ["stage plain 0 ", "stage plain 65536 ", "stage txn 1024 "] {
        assert!(text.contains(row), "no {row:?}:\n{text}");
    }
    let o = ramp(&["perf", "model", "--stages", path]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let row = |w: &[&str]| {
        out.lines()
            .any(|l| l.split_whitespace().take(w.len()).eq(w.iter().copied()))
    };
    assert!(row(&["plain", "65536", "1e-7"]), "{out}");
    assert!(row(&["txn", "0", "1e-3"]), "{out}");
    assert!(out.contains("handler stalls"), "{out}");
    // a damaged stages file is refused, naming the file and the line
    std::fs::write(&stages, text.replace("send ", "sned ")).unwrap();
    let o = ramp(&["perf", "model", "--stages", path]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(path) && err.contains("not a stages line"),
        "{err}"
    );
    let _ = std::fs::remove_file(&stages);
}

#[test]
fn bad_options_are_refused() {
    for args in [
        &["perf", "sweep", "--runs", "0"][..],
        &["perf", "measure", "--transport", "tcp"],
        &["perf", "model", "--frobnicate"],
        &["perf", "fly"],
    ] {
        let o = ramp(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("usage: ramp perf"),
            "{args:?}"
        );
    }
}
