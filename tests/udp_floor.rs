//! `scripts/udp-floor.c`, the floor `scripts/amudp-compare.sh` prints beside
//! testbulk: built with the C compiler as the script builds it, run between
//! two real processes over loopback UDP. Asserts what holds at any speed: a
//! figure is printed for both kinds of floor, and bad arguments are refused
//! with exit status 2 and a message, never a run.

use std::path::PathBuf;
use std::process::Command;

/// Built into a file of its own for each test (they run at once).
fn built(test: &str) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let exe = std::env::temp_dir().join(format!("udp-floor-{test}-{}", std::process::id()));
    let cc = std::env::var("CC").unwrap_or("cc".into());
    let o = Command::new(&cc)
        .args(["-O2", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg(root.join("scripts/udp-floor.c"))
        .output()
        .expect("cc runs");
    assert!(
        o.status.success(),
        "{cc} failed on scripts/udp-floor.c: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    exe
}

/// The MB/s figure of one run's output, if it printed one.
fn figure(out: &str) -> Option<u64> {
    out.lines()
        .find_map(|l| l.strip_prefix("udp-floor: ")?.strip_suffix(" MB/s"))
        .and_then(|n| n.parse().ok())
}

#[test]
fn the_floor_prints_a_figure_with_and_without_the_copies() {
    let exe = built("figure");
    for copy in ["0", "1"] {
        let o = Command::new(&exe)
            .args(["300", "65000", copy])
            .output()
            .expect("udp-floor runs");
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "copy {copy}: {out} {:?}", o.stderr);
        let mbs = figure(&out).unwrap_or_else(|| panic!("copy {copy}: no figure in {out:?}"));
        assert!(mbs > 0, "copy {copy}: {out}");
    }
    let _ = std::fs::remove_file(exe);
}

#[test]
fn bad_arguments_are_refused_with_a_message() {
    let exe = built("refused");
    for args in [
        &[][..],
        &["10", "65000"],
        &["0", "65000", "1"],
        &["10", "65508", "0"],
        &["10", "15", "0"],
        &["10", "65000", "2"],
        &["ten", "65000", "1"],
    ] {
        let o = Command::new(&exe)
            .args(args)
            .output()
            .expect("udp-floor runs");
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(o.stdout.is_empty(), "{args:?}: ran");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("udp-floor"),
            "{args:?}: no message"
        );
    }
    let _ = std::fs::remove_file(exe);
}

/// The processes `pid` started, from /proc.
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|c| c.parse().ok())
        .collect()
}

#[test]
fn a_killed_sender_leaves_no_receiver_behind() {
    let exe = built("killed");
    let mut sender = Command::new(&exe)
        .args(["100000000", "65000", "1"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("udp-floor runs");
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let receiver = loop {
        if let Some(&c) = children(sender.id()).first() {
            break c;
        }
        assert!(std::time::Instant::now() < until, "no receiving process");
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    sender.kill().unwrap(); // SIGKILL: the sender alone
    sender.wait().unwrap();
    let alive = || {
        std::fs::read_to_string(format!("/proc/{receiver}/stat")).is_ok_and(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
    };
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while alive() {
        if std::time::Instant::now() > until {
            kill_left_behind(receiver);
            panic!("the receiving process {receiver} outlived its sender");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let _ = std::fs::remove_file(exe);
}

/// Ends a process left behind (by the `kill` command: no unsafe here).
fn kill_left_behind(pid: u32) {
    let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
}
