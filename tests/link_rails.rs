//! Rails on real links (issue 38, item 8): a two-rank job of
//! `examples/link_load` (rank 1 streams long requests, 64 KiB, and short
//! requests with sequence numbers into rank 0) whose workers sit in two
//! network namespaces joined by two links: the bridge (eth0, also the
//! launcher's network) and one direct veth pair (rail1), with
//! `RAMP_RAILS=eth0,rail1`. While the job streams, the test takes rail 1
//! down, brings it back, then takes both links down for 3 s (less than
//! `RAMP_PEER_TIMEOUT_MS`, 10 s by default) and brings them back; after
//! each step it waits until 32 MiB more have arrived (the job moves on:
//! four times what 128 credits of 64 KiB hold in flight).
//! Then it ends the sending (link_load's `--stop-file`).
//!
//! What is asserted holds at any speed: data keeps arriving after each
//! step (within the watchdog), every message runs exactly once at the
//! receiver with its payload where it belongs, nothing comes back, the
//! statistics agree with what the program counted (link_load's `PASS`) and
//! the job exits 0. A second test takes eth0 (the name's rail) down alone:
//! the data must go out on rail1 meanwhile. No timing: `scripts/rails-bench.sh` measures failover,
//! recovery and partition resume times.
//!
//! Needs root (or CAP_NET_ADMIN + CAP_SYS_ADMIN) and iproute2, so the test
//! is `#[ignore]`d: scripts/test-all.sh runs it with `--ignored` when
//! `scripts/netns.sh check` says namespaces can be made here and reports it
//! as SKIPPED otherwise. Its namespaces are rlr0 and rlr1 on the bridge
//! rlrbr0, 10.94.0.0/24, rail1 on 10.94.1.0/24 (`netns.sh -p rlr -s
//! 10.94.0`), never those of another suite; a guard removes them (and
//! kills what a killed job left inside) when the test ends, also by a panic.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::{mpsc, Mutex, MutexGuard};
use std::time::Duration;

use ramp::config::{RAILS, TRANSPORT};

const NETNS_OPTS: [&str; 4] = ["-p", "rlr", "-s", "10.94.0"];
const MASTER_IP: &str = "10.94.0.1";
const MIB: u64 = 1024 * 1024;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn netns(args: &[&str]) -> Output {
    Command::new("bash")
        .arg(root().join("scripts/netns.sh"))
        .args(NETNS_OPTS)
        .args(args)
        .output()
        .expect("bash runs")
}

fn netns_ok(args: &[&str]) {
    let o = netns(args);
    assert!(
        o.status.success(),
        "netns.sh {} (status {:?}; 2 = namespaces cannot be made here): {}",
        args.join(" "),
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Removes this file's namespaces, links and bridge when dropped.
struct Namespaces;

impl Namespaces {
    fn down(when: &str) {
        let o = netns(&["down"]);
        if !o.status.success() {
            eprintln!(
                "netns.sh down ({when}) failed: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            );
        }
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        Namespaces::down("after the test");
    }
}

/// Bytes sent and received on `dev` in namespace `ns` (the kernel's
/// counters), for the log.
fn link_bytes(ns: &str, dev: &str) -> (u64, u64) {
    let o = Command::new("ip")
        .args(["-n", ns, "-s", "-j", "link", "show", dev])
        .output()
        .expect("ip runs");
    let s = String::from_utf8_lossy(&o.stdout);
    let field = |key: &str| -> u64 {
        s.find(key).map_or(0, |at| {
            let t = &s[at..];
            let b = t.find("\"bytes\":").map_or(t.len(), |b| b + 8);
            t[b..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .unwrap_or(0)
        })
    };
    (field("\"tx\""), field("\"rx\""))
}

/// rank 0's progress: the bytes delivered so far, from its progress lines.
struct Progress {
    lines: mpsc::Receiver<u64>,
    delivered: u64,
}

impl Progress {
    /// Waits until at least `more` bytes beyond what had arrived when it
    /// was called (the progress lines read so far) have arrived (no limit
    /// of its own: the watchdog's). `more` is far above what can be in
    /// flight, so most of it crossed the network after the call.
    fn more(&mut self, more: u64, what: &str) {
        common::waiting_for(&format!("{more} more bytes delivered {what}"));
        while let Ok(d) = self.lines.try_recv() {
            self.delivered = self.delivered.max(d);
        }
        let goal = self.delivered + more;
        while self.delivered < goal {
            match self.lines.recv() {
                Ok(d) => self.delivered = self.delivered.max(d),
                Err(_) => panic!("the job ended while waiting for data {what}"),
            }
        }
        eprintln!("link_rails: {} bytes delivered {what}", self.delivered);
    }
}

/// A link_load job streaming from rlr1 (rank 1) into rlr0 (rank 0) over
/// `RAMP_RAILS=eth0,rail1`, in fresh namespaces; `finish` ends it.
struct Running {
    child: std::process::Child,
    out: std::thread::JoinHandle<String>,
    err: std::thread::JoinHandle<String>,
    progress: Progress,
    stop: PathBuf,
    limit: String,
    // last: the namespaces go after the job's end
    _cleanup: Namespaces,
    _turn: MutexGuard<'static, ()>,
}

/// The namespaces are machine-wide: the tests of this file take turns.
static TURN: Mutex<()> = Mutex::new(());

fn start() -> Running {
    let turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    // leftovers of an earlier run that was killed before its guard ran
    Namespaces::down("stale, before the test");
    let cleanup = Namespaces;
    netns_ok(&["up", "2"]);
    netns_ok(&["rails", "1"]);
    let stop = std::env::temp_dir().join(format!("link_rails-stop-{}", std::process::id()));
    let _ = std::fs::remove_file(&stop);
    let limit = common::scaled(Duration::from_secs(240))
        .as_secs()
        .to_string();
    let mut child = Command::new("timeout")
        // timeout leads a process group: a kill reaches the workers
        .args(["-k", "5", &limit])
        .arg(env!("CARGO_BIN_EXE_ramp-run"))
        .args(["-n", "2", "--master-ip", MASTER_IP, "--wrap"])
        .arg(format!(
            "bash {} {} pick 0,1 {{rank}}",
            root().join("scripts/netns.sh").display(),
            NETNS_OPTS.join(" ")
        ))
        .args(["-x", &format!("{TRANSPORT}=udp")])
        .args(["-x", &format!("{RAILS}=eth0,rail1")])
        .arg(common::example("link_load"))
        .args([
            "--secs",
            "100000",
            "--xfer",
            "65536",
            "--progress-ms",
            "100",
        ])
        .arg("--stop-file")
        .arg(&stop)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("timeout and ramp-run run");
    let (tx, rx) = mpsc::channel();
    let out = child.stdout.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut all = String::new();
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            if let Some(d) = l
                .strip_prefix("link_load: progress ")
                .and_then(|r| r.split(' ').find_map(|kv| kv.strip_prefix("delivered=")))
                .and_then(|d| d.parse::<u64>().ok())
            {
                let _ = tx.send(d);
            }
            all.push_str(&l);
            all.push('\n');
        }
        all
    });
    let mut err = child.stderr.take().unwrap();
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    Running {
        child,
        out,
        err,
        progress: Progress {
            lines: rx,
            delivered: 0,
        },
        stop,
        limit,
        _cleanup: cleanup,
        _turn: turn,
    }
}

impl Running {
    /// `Progress::more`, then the sender's link counters for the log.
    fn more(&mut self, what: &str) {
        self.progress.more(32 * MIB, what);
        for dev in ["eth0", "rail1"] {
            let (t, r) = link_bytes("rlr1", dev);
            eprintln!("link_rails: {what}: rlr1 {dev} tx_bytes={t} rx_bytes={r}");
        }
    }

    /// Ends the sending; the job must exit 0 with link_load's PASS (every
    /// message handled once, statistics agree) and nothing returned.
    fn finish(mut self) {
        std::fs::write(&self.stop, b"stop").expect("the stop file");
        common::waiting_for("the job's end");
        let status = self.child.wait().expect("wait for the job");
        let out = self.out.join().unwrap();
        let err = self.err.join().unwrap();
        let _ = std::fs::remove_file(&self.stop);
        let summary: Vec<&str> = out.lines().filter(|l| !l.contains(" progress ")).collect();
        eprintln!("{}", summary.join("\n"));
        let limit = &self.limit;
        assert!(
            status.code() != Some(124) && status.code() != Some(137),
            "the job did not finish within {limit} s (killed)\n--- stdout\n{out}--- stderr\n{err}"
        );
        assert!(
            status.success() && out.contains("link_load: PASS"),
            "the job failed ({status:?}): a message lost, run twice or returned, or a \
             rank gave up\n--- stdout\n{out}--- stderr\n{err}"
        );
        assert!(
            !out.contains("came back") && !err.contains("came back"),
            "a message came back\n--- stdout\n{out}--- stderr\n{err}"
        );
    }
}

fn watchdog(test: &str) -> common::Watchdog {
    common::watchdog(&format!("link_rails::{test}"), Duration::from_secs(300))
}

/// The sequence of the issue: rail 1 down, up, both down for 3 s, up;
/// every message handled once, none returned, the job exits 0.
#[test]
#[ignore = "needs network namespaces (root or CAP_NET_ADMIN); scripts/test-all.sh runs it when `scripts/netns.sh check` succeeds"]
fn failover_recovery_and_partition_every_message_once() {
    let _w = watchdog("failover_recovery_and_partition_every_message_once");
    let mut job = start();
    job.more("with both rails up");
    netns_ok(&["rail", "1", "down"]);
    job.more("after rail 1 went down");
    netns_ok(&["rail", "1", "up"]);
    job.more("after rail 1 came back");
    common::waiting_for("a partition of 3 s");
    netns_ok(&["rail", "0", "down"]);
    netns_ok(&["rail", "1", "down"]);
    std::thread::sleep(Duration::from_secs(3));
    netns_ok(&["rail", "0", "up"]);
    netns_ok(&["rail", "1", "up"]);
    job.more("after the partition");
    job.finish();
}

/// The name's rail (eth0, rail 0: the address peers know first) goes down
/// while rail 1 stays up: the traffic moves to rail 1, then eth0 comes back;
/// every message handled once, none returned, the job exits 0.
#[test]
#[ignore = "needs network namespaces (root or CAP_NET_ADMIN); scripts/test-all.sh runs it when `scripts/netns.sh check` succeeds"]
fn the_names_rail_down_traffic_moves_to_the_other() {
    let _w = watchdog("the_names_rail_down_traffic_moves_to_the_other");
    let mut job = start();
    job.more("with both rails up");
    netns_ok(&["rail", "0", "down"]);
    let before = link_bytes("rlr1", "rail1").0;
    job.more("after eth0 went down");
    let moved = link_bytes("rlr1", "rail1").0 - before;
    assert!(
        moved >= 32 * MIB,
        "only {moved} bytes went out on rail1 while eth0 was down and 32 MiB arrived"
    );
    netns_ok(&["rail", "0", "up"]);
    job.more("after eth0 came back");
    job.finish();
}
