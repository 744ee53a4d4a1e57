//! `ramp bench --loggp` with tiny counts (a smoke test, no timing checked):
//! it runs ramp over UDP and shared memory (real processes), the raw
//! baselines and memcpy, prints a table with every line and every target,
//! and writes a PNG.

mod common;

use std::process::Command;
use std::time::Duration;

#[test]
fn loggp_mode_prints_every_row_and_writes_a_png() {
    let _w = common::watchdog("loggp_mode", Duration::from_secs(300));
    let png = std::env::temp_dir().join(format!("ramp-loggp-{}.png", std::process::id()));
    let _ = std::fs::remove_file(&png);
    let o = common::output_within(
        Command::new(env!("CARGO_BIN_EXE_ramp"))
            .args([
                "bench", "--loggp", "--no-pin", "--runs", "1", "--iters", "40",
            ])
            .args(["--mib", "1", "--max-burst", "4", "--plot"])
            .arg(&png),
        Duration::from_secs(240),
    );
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success(),
        "ramp bench --loggp failed\n{out}\n{err}"
    );
    let table: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("== LogGP"))
        .take_while(|l| !l.starts_with("== cost per message"))
        .collect();
    assert!(table.len() >= 2, "no table:\n{out}");
    for col in [
        "RTT us",
        "L us",
        "o_s us",
        "o_r us",
        "g us",
        "1-way M/s",
        "G ns/B",
        "put 1M",
    ] {
        assert!(table[1].contains(col), "no column {col:?}:\n{out}");
    }
    for row in [
        "ramp udp",
        "ramp shm",
        "raw udp",
        "raw shm",
        "memcpy",
        "ucx posix",
    ] {
        let line = table
            .iter()
            .find(|l| l.starts_with(row))
            .unwrap_or_else(|| panic!("no row {row:?}:\n{out}"));
        // every line has its 12 cells, figures or "-"
        assert_eq!(line[row.len()..].split_whitespace().count(), 12, "{line}");
    }
    // ramp's lines have figures in every LogGP cell (a number, not "-"),
    // and a one-way rate but raw UDP's (no flow control to count by)
    for row in ["ramp udp", "ramp shm", "raw udp", "raw shm"] {
        let line = table.iter().find(|l| l.starts_with(row)).unwrap();
        let cells: Vec<&str> = line[row.len()..].split_whitespace().collect();
        let one_way = (row != "raw udp") as usize;
        for c in &cells[..6 + one_way] {
            assert!(
                c.parse::<f64>().is_ok(),
                "{row}: cell {c:?} is no number: {line}"
            );
        }
    }
    // bandwidth by message size, memcpy's line at every size too (a warm
    // copy, the floor of the "of memcpy" ratios): size:MiB/s cells
    let bw: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("== bandwidth (MiB/s) by message size"))
        .skip(1)
        .take_while(|l| !l.starts_with("=="))
        .collect();
    let memcpy = bw
        .iter()
        .find(|l| l.starts_with("memcpy"))
        .unwrap_or_else(|| panic!("no memcpy bandwidth line:\n{out}"));
    let cells: Vec<(usize, f64)> = memcpy["memcpy".len()..]
        .split_whitespace()
        .map(|c| {
            let (k, v) = c
                .split_once(':')
                .unwrap_or_else(|| panic!("cell {c:?}: {memcpy}"));
            (k.parse().unwrap(), v.parse().unwrap())
        })
        .collect();
    assert_eq!(cells.len(), 8, "every size: {memcpy}");
    assert!(cells.iter().all(|&(k, v)| k >= 128 && v > 0.0), "{memcpy}");
    for row in ["ramp udp", "ramp shm"] {
        assert!(
            bw.iter().any(|l| l.starts_with(row)),
            "no {row} bandwidth:\n{out}"
        );
    }
    for target in [
        "shm short round trip",
        "shm message rate",
        "ramp shm 1 MiB / memcpy",
    ] {
        assert!(out.contains(target), "no target line {target:?}:\n{out}");
    }
    assert!(
        err.contains("run 1/1: ramp shm: bursts"),
        "no progress:\n{err}"
    );
    let bytes = std::fs::read(&png).expect("the PNG is written");
    assert!(
        bytes.starts_with(b"\x89PNG\r\n\x1a\n") && bytes.len() > 1000,
        "not a PNG ({} bytes)",
        bytes.len()
    );
    let _ = std::fs::remove_file(&png);
}

/// Without a font the plot is drawn without text, and the output says so.
#[test]
fn loggp_plot_without_a_font_has_no_text_but_is_a_png() {
    let _w = common::watchdog("loggp_no_font", Duration::from_secs(300));
    let png = std::env::temp_dir().join(format!("ramp-loggp-nofont-{}.png", std::process::id()));
    let _ = std::fs::remove_file(&png);
    let o = common::output_within(
        Command::new(env!("CARGO_BIN_EXE_ramp"))
            .args([
                "loggp", "--no-pin", "--runs", "1", "--iters", "20", "--mib", "1",
            ])
            .args([
                "--max-burst",
                "2",
                "--font",
                "/nonexistent/font.ttf",
                "--plot",
            ])
            .arg(&png),
        Duration::from_secs(240),
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("WITHOUT text"), "{out}");
    let bytes = std::fs::read(&png).expect("the PNG is written");
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    let _ = std::fs::remove_file(&png);
}

#[test]
fn loggp_mode_refuses_bad_options() {
    for args in [
        &["--plot"][..],
        &["--font"],
        &["--iters", "0"],
        &["--frobnicate"],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_ramp"))
            .args(["bench", "--loggp"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("usage"),
            "{args:?}"
        );
    }
}

/// A plot that cannot be written is said at once, before any measuring
/// (the run takes minutes; the plot was its last step).
#[test]
fn an_unwritable_plot_fails_before_measuring() {
    for (args, what) in [
        (
            &["--plot", "/nonexistent/dir/x.png"][..],
            "--plot /nonexistent/dir/x.png",
        ),
        (&["--plot", "plot.txt"], "the plot is a PNG"),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_ramp"))
            .args(["bench", "--loggp"])
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(what), "{err}");
        // nothing was measured: no progress line, no table
        assert!(!err.contains("run 1/") && o.stdout.is_empty(), "{err}");
    }
}

/// A bad `RAMP_*` variable: each benchmark says what is wrong once, before
/// any role starts, and fails; a role started by hand with it says so and
/// exits 2. Never a panic.
#[test]
fn benchmarks_refuse_a_bad_configuration_without_a_panic() {
    for args in [
        &["bench", "--runs", "1", "--iters", "10"][..],
        &["bench", "--loggp", "--runs", "1", "--iters", "10"],
        &["bench", "txn", "--runs", "1", "--iters", "10"],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_ramp"))
            .args(args)
            .env("RAMP_JOB_KEY", "zz")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("RAMP_JOB_KEY"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(
            !String::from_utf8_lossy(&o.stdout).contains("round 1/1"),
            "{args:?}: no role may start"
        );
    }
    for role in ["bench-server", "loggp-server", "bench-rma-server"] {
        let o = Command::new(env!("CARGO_BIN_EXE_ramp"))
            .arg(role)
            .env("RAMP_JOB_KEY", "zz")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{role}: {err}");
        assert!(err.contains("bad RAMP_* configuration"), "{role}: {err}");
        assert!(!err.contains("panicked"), "{role}: {err}");
    }
}

/// A benchmark role whose parent is gone ends by itself: one left behind
/// (its bench killed, or ended by `ramp bench | head`) polled on its core
/// for ever, beside every figure measured on the host after it. The
/// client here waits for a raw echo from an address nobody answers
/// (TEST-NET-1), as one whose server died does.
#[test]
fn a_bench_role_ends_with_the_process_that_started_it() {
    let name = format!("0100{:04x}{}", 9, "0".repeat(56));
    let out = Command::new("sh")
        .arg("-c")
        // the shell ends once the role watches it: its watcher thread (the
        // first thing the role starts) is running, whatever the speed
        .arg(concat!(
            r#""$0" bench-client 192.0.2.1:9 "$1" 1000000 1 1 >/dev/null 2>&1 & p=$!; "#,
            r#"while [ "$(ls /proc/$p/task 2>/dev/null | wc -l)" -lt 2 ]; do sleep 0.01; done; echo $p"#
        ))
        .arg(env!("CARGO_BIN_EXE_ramp"))
        .arg(&name)
        .output()
        .unwrap();
    let pid: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    let proc_dir = format!("/proc/{pid}");
    // (a watchdog: a role that never ends is killed after minutes, and
    // the test fails)
    let limit = common::scaled(Duration::from_secs(180));
    let t = std::time::Instant::now();
    while std::path::Path::new(&proc_dir).exists() && t.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(50));
    }
    let alive = std::path::Path::new(&proc_dir).exists();
    if alive {
        let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
    }
    assert!(
        !alive,
        "the orphaned bench client {pid} still runs {limit:?} after its parent"
    );
}
