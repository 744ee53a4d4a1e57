//! `scripts/udp-floor.c` and `scripts/shm-floor.c`, the floors
//! `scripts/amudp-compare.sh` prints beside testbulk: built with the C
//! compiler as the script builds them, run between two real processes (over
//! loopback UDP; through shared memory and the kernel's cross-memory calls).
//! Asserts what holds at any speed: a figure is printed for each kind of
//! floor, bad arguments are refused with exit status 2 and a message, never
//! a run, and a killed sender leaves no receiving process behind.

use std::path::PathBuf;
use std::process::Command;

/// `scripts/{prog}.c` built into a file of its own for each test (they run
/// at once).
fn built(prog: &str, test: &str) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let exe = std::env::temp_dir().join(format!("{prog}-{test}-{}", std::process::id()));
    let cc = std::env::var("CC").unwrap_or("cc".into());
    let o = Command::new(&cc)
        .args(["-O2", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg(root.join(format!("scripts/{prog}.c")))
        .output()
        .expect("cc runs");
    assert!(
        o.status.success(),
        "{cc} failed on scripts/{prog}.c: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    exe
}

/// The MB/s figure of one run's output of `prog`, if it printed one.
fn figure(prog: &str, out: &str) -> Option<u64> {
    let prefix = format!("{prog}: ");
    out.lines()
        .find_map(|l| l.strip_prefix(&prefix)?.strip_suffix(" MB/s"))
        .and_then(|n| n.parse().ok())
}

/// Runs `prog` (built) with each of `modes` as its last argument after
/// `args`: each run succeeds and prints a figure.
fn prints_figures(prog: &str, args: &[&str], modes: &[&str]) {
    let exe = built(prog, "figure");
    for mode in modes {
        let o = Command::new(&exe)
            .args(args)
            .arg(mode)
            .output()
            .expect("the floor runs");
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{prog} {mode}: {out} {:?}", o.stderr);
        let mbs =
            figure(prog, &out).unwrap_or_else(|| panic!("{prog} {mode}: no figure in {out:?}"));
        assert!(mbs > 0, "{prog} {mode}: {out}");
    }
    let _ = std::fs::remove_file(exe);
}

#[test]
fn the_udp_floor_prints_a_figure_with_and_without_the_copies() {
    prints_figures("udp-floor", &["300", "65000"], &["0", "1"]);
}

#[test]
fn the_shm_floor_prints_a_figure_through_the_ring_and_split() {
    // 1 MiB too: the ring's 8 slots, and a split not on a page boundary
    prints_figures("shm-floor", &["300", "65000"], &["ring", "cma"]);
    prints_figures("shm-floor", &["20", "1048577"], &["ring", "cma"]);
}

/// Runs `prog` (built) with each of `bad`: each is refused, exit status 2,
/// a message naming the program, nothing run.
fn refuses(prog: &str, bad: &[&[&str]]) {
    let exe = built(prog, "refused");
    for args in bad {
        let o = Command::new(&exe)
            .args(*args)
            .output()
            .expect("the floor runs");
        assert_eq!(o.status.code(), Some(2), "{prog} {args:?}");
        assert!(o.stdout.is_empty(), "{prog} {args:?}: ran");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(prog),
            "{prog} {args:?}: no message"
        );
    }
    let _ = std::fs::remove_file(exe);
}

#[test]
fn bad_arguments_are_refused_with_a_message() {
    refuses(
        "shm-floor",
        &[
            &[],
            &["10", "65000"],
            &["0", "65000", "ring"],
            &["10", "0", "cma"],
            &["10", "67108865", "ring"],
            &["10", "65000", "both"],
            &["ten", "65000", "cma"],
            &["10", "64k", "ring"],
        ],
    );
    refuses(
        "udp-floor",
        &[
            &[][..],
            &["10", "65000"],
            &["0", "65000", "1"],
            &["10", "65508", "0"],
            &["10", "15", "0"],
            &["10", "65000", "2"],
            &["ten", "65000", "1"],
        ],
    );
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
    killed_sender_leaves_no_receiver("udp-floor", &["100000000", "65000", "1"]);
    killed_sender_leaves_no_receiver("shm-floor", &["100000000", "65000", "ring"]);
    killed_sender_leaves_no_receiver("shm-floor", &["100000000", "65000", "cma"]);
}

/// Starts `prog` (built) with `args` (a run far longer than the test),
/// kills the sending process alone once its receiver exists: the receiver
/// must end too (udp-floor's by its PR_SET_PDEATHSIG alone; shm-floor's by
/// that, else by its own 5 s without word from the sender).
fn killed_sender_leaves_no_receiver(prog: &str, args: &[&str]) {
    let exe = built(prog, "killed");
    let mut sender = Command::new(&exe)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the floor runs");
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
            panic!("{prog} {args:?}: the receiving process {receiver} outlived its sender");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let _ = std::fs::remove_file(exe);
}

/// Ends a process left behind (by the `kill` command: no unsafe here).
fn kill_left_behind(pid: u32) {
    let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
}
