//! Rails on real links (issue 38, item 8): a two-rank job of
//! `examples/link_load` (rank 1 streams long requests, 64 KiB, and short
//! requests with sequence numbers into rank 0) whose workers sit in two
//! network namespaces joined by two links: the bridge (eth0, also the
//! launcher's network) and one direct veth pair (rail1), with
//! `RAMP_RAILS=eth0,rail1`. While the job streams, the test takes rail 1
//! down, brings it back, then takes both links down for 3 s (less than
//! `RAMP_PEER_TIMEOUT_MS`, 10 s by default) and brings them back; after
//! each step it waits until 32 MiB more have arrived after it (the job
//! moves on: four times what 128 credits of 64 KiB hold in flight).
//! Then it ends the sending (link_load's `--stop-file`).
//!
//! What is asserted holds at any speed: data keeps arriving after each
//! step (within the watchdog), every message runs exactly once at the
//! receiver with its payload where it belongs, nothing comes back, the
//! statistics agree with what the program counted (link_load's `PASS`) and
//! the job exits 0. A second test takes down whichever rail carries the
//! data (eth0, rail 0, or rail1): it must go out on the other meanwhile
//! (the kernel's counters); a third makes it drop every frame silently
//! (a neighbour entry with a MAC nobody has: no error, the link up), the
//! same must hold. A fourth runs the job with `RAMP_VERBOSE` and waits for
//! its path lines: "failed" when the carrying rail goes down, "recovered"
//! when it comes back, "partitioned" when both are down, "rejoined" when
//! they return. No timing:
//! `scripts/rails-bench.sh` measures failover, recovery and partition
//! resume times.
//!
//! Needs root (or CAP_NET_ADMIN + CAP_SYS_ADMIN) and iproute2, so the test
//! is `#[ignore]`d: scripts/test-all.sh runs it with `--ignored` when
//! `scripts/netns.sh check` says namespaces can be made here and reports it
//! as SKIPPED otherwise. Its namespaces are rlr0 and rlr1 on the bridge
//! rlrbr0, 10.94.0.0/24, rail1 on 10.94.1.0/24 (`netns.sh -p rlr -s
//! 10.94.0`), never those of another suite; a guard removes them (and
//! kills what a killed job left inside) when the test ends, also by a panic.

mod common;
#[path = "common/netns.rs"]
mod netns;
#[path = "common/progress.rs"]
mod progress;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use ramp::config::{RAILS, TRANSPORT, VERBOSE};

const NETNS_OPTS: [&str; 4] = ["-p", "rlr", "-s", "10.94.0"];
const MASTER_IP: &str = "10.94.0.1";
const MIB: u64 = 1024 * 1024;

/// This file's namespaces (rlr0, rlr1).
static NETNS: netns::Netns = netns::Netns::new(&NETNS_OPTS);

/// A link_load job streaming from rlr1 (rank 1) into rlr0 (rank 0) over
/// `RAMP_RAILS=eth0,rail1`, in fresh namespaces; `finish` ends it.
struct Running {
    child: std::process::Child,
    out: std::thread::JoinHandle<String>,
    err: std::thread::JoinHandle<String>,
    progress: progress::Progress,
    /// stderr's `RAMP_VERBOSE` path lines ("ramp: path rail .."), as they come
    path_lines: mpsc::Receiver<String>,
    stop: PathBuf,
    limit: String,
    // last: the namespaces go after the job's end
    _net: netns::Net,
}

fn start() -> Running {
    start_with(&[])
}

/// `start` with more variables for the job (`-x K=V`).
fn start_with(env: &[(&str, &str)]) -> Running {
    let net = NETNS.fresh(&[&["up", "2"], &["rails", "1"]]);
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
            netns::script().display(),
            NETNS_OPTS.join(" ")
        ))
        .args(["-x", &format!("{TRANSPORT}=udp")])
        .args(["-x", &format!("{RAILS}=eth0,rail1")])
        .args(
            env.iter()
                .flat_map(|(k, v)| ["-x".to_string(), format!("{k}={v}")]),
        )
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
    let (progress, out) = progress::read(child.stdout.take().unwrap(), "link_load");
    let err = child.stderr.take().unwrap();
    let (ptx, path_lines) = mpsc::channel();
    let err = std::thread::spawn(move || {
        let mut all = String::new();
        for l in BufReader::new(err).lines().map_while(Result::ok) {
            if l.contains("ramp: path ") {
                let _ = ptx.send(l.clone());
            }
            all.push_str(&l);
            all.push('\n');
        }
        all
    });
    Running {
        child,
        out,
        err,
        progress,
        path_lines,
        stop,
        limit,
        _net: net,
    }
}

impl Running {
    /// Waits until 32 MiB more have arrived (`progress::Progress::more`); the bytes the sender's eth0 and rail1 sent
    /// meanwhile (the kernel's counters), logged too.
    fn more(&mut self, what: &str) -> [u64; 2] {
        let before = ["eth0", "rail1"].map(|d| netns::tx_bytes("rlr1", d));
        common::waiting_for(&format!("32 MiB more delivered {what}"));
        let Some(d) = self.progress.more(32 * MIB) else {
            panic!("the job ended while waiting for data {what}")
        };
        eprintln!("link_rails: {d} bytes delivered (32 MiB {what})");
        let sent = ["eth0", "rail1"].map(|d| netns::tx_bytes("rlr1", d));
        let sent = [sent[0] - before[0], sent[1] - before[1]];
        eprintln!(
            "link_rails: {what}: sent on eth0 {} bytes, on rail1 {}",
            sent[0], sent[1]
        );
        sent
    }

    /// Waits for a `RAMP_VERBOSE` path line that `want` accepts (no limit
    /// of its own: the watchdog's); the line.
    fn path_line(&mut self, what: &str, want: impl Fn(&str) -> bool) -> String {
        common::waiting_for(&format!("a RAMP_VERBOSE line: {what}"));
        loop {
            match self.path_lines.recv() {
                Ok(l) if want(&l) => {
                    eprintln!("link_rails: {what}: {l}");
                    return l;
                }
                Ok(_) => {}
                Err(_) => panic!("the job ended before a RAMP_VERBOSE line: {what}"),
            }
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
        eprintln!("{out}");
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
    NETNS.ok(&["rail", "1", "down"]);
    job.more("after rail 1 went down");
    NETNS.ok(&["rail", "1", "up"]);
    job.more("after rail 1 came back");
    common::waiting_for("a partition of 3 s");
    NETNS.ok(&["rail", "0", "down"]);
    NETNS.ok(&["rail", "1", "down"]);
    std::thread::sleep(Duration::from_secs(3));
    NETNS.ok(&["rail", "0", "up"]);
    NETNS.ok(&["rail", "1", "up"]);
    job.more("after the partition");
    job.finish();
}

/// `RAMP_VERBOSE` tells a path's news (issue 38, item 7): the job runs
/// with it set; the rail that carries the data goes down: a line says its
/// path failed; it comes back: a line says the path recovered; both links
/// go down: a line says the peer is partitioned; they come back: a line
/// says it rejoined. Each step waits for its line (the watchdog's limit,
/// no other); then every message handled once, none returned, exit 0.
#[test]
#[ignore = "needs network namespaces (root or CAP_NET_ADMIN); scripts/test-all.sh runs it when `scripts/netns.sh check` succeeds"]
fn verbose_lines_tell_a_rail_failed_recovered_and_a_partition() {
    let _w = watchdog("verbose_lines_tell_a_rail_failed_recovered_and_a_partition");
    let mut job = start_with(&[(VERBOSE, "1")]);
    let sent = job.more("with both rails up");
    let down = if sent[0] >= sent[1] { 0 } else { 1 };
    let on = format!("ramp: path rail {down} ");
    NETNS.ok(&["rail", &down.to_string(), "down"]);
    job.path_line(&format!("rail {down}'s path failed"), |l| {
        l.contains(&on) && l.ends_with(" failed")
    });
    NETNS.ok(&["rail", &down.to_string(), "up"]);
    job.path_line(&format!("rail {down}'s path recovered"), |l| {
        l.contains(&on) && l.ends_with(" recovered")
    });
    job.more(&format!("after rail {down} came back"));
    NETNS.ok(&["rail", "0", "down"]);
    NETNS.ok(&["rail", "1", "down"]);
    job.path_line("the peer partitioned", |l| l.ends_with("(partitioned)"));
    NETNS.ok(&["rail", "0", "up"]);
    NETNS.ok(&["rail", "1", "up"]);
    job.path_line("the peer rejoined", |l| l.ends_with("(rejoined)"));
    job.more("after the partition");
    job.finish();
}

/// The rail that carries the data (eth0, the name's, or rail1: whichever
/// the protocol chose) goes down while the other stays up: the data goes
/// out on the other until 32 MiB more have arrived; then the rail comes
/// back. Every message handled once, none returned, the job exits 0.
#[test]
#[ignore = "needs network namespaces (root or CAP_NET_ADMIN); scripts/test-all.sh runs it when `scripts/netns.sh check` succeeds"]
fn the_carrying_rail_down_traffic_moves_to_the_other() {
    let _w = watchdog("the_carrying_rail_down_traffic_moves_to_the_other");
    let mut job = start();
    let sent = job.more("with both rails up");
    let (down, other) = if sent[0] >= sent[1] { (0, 1) } else { (1, 0) };
    eprintln!("link_rails: the data went out on rail {down}; taking it down");
    NETNS.ok(&["rail", &down.to_string(), "down"]);
    let moved = job.more(&format!("after rail {down} went down"))[other];
    // of the 32 MiB that arrived, at most what 128 credits of 64 KiB hold
    // (8 MiB) was sent before the rail went down
    assert!(
        moved >= 16 * MIB,
        "only {moved} bytes went out on rail {other} while rail {down} was down and 32 MiB \
         arrived"
    );
    NETNS.ok(&["rail", &down.to_string(), "up"]);
    job.more(&format!("after rail {down} came back"));
    job.finish();
}

/// Rail `k` (0: eth0) drops every frame without an error, both ways (each
/// end's neighbour entry for the other names a MAC nobody has: the link
/// stays up and sends succeed), or (`on` false) works again.
fn silent(k: usize, on: bool) {
    let (dev, addrs) = match k {
        0 => ("eth0".to_string(), ["10.94.0.10", "10.94.0.11"]),
        _ => (format!("rail{k}"), ["10.94.1.1", "10.94.1.2"]),
    };
    for i in 0..2 {
        let (ns, peer) = (format!("rlr{i}"), addrs[1 - i]);
        let mac = format!("02:00:00:00:00:0{i}");
        let mut args = vec!["-n", &ns, "neigh"];
        match on {
            true => args.extend(["replace", peer, "lladdr", &mac, "dev", &dev]),
            false => args.extend(["del", peer, "dev", &dev]),
        }
        if on {
            args.extend(["nud", "permanent"]);
        }
        let o = Command::new("ip").args(&args).output().expect("ip runs");
        assert!(
            o.status.success() || !on,
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// The rail that carries the data fails silently (no error, no link down:
/// only missing acknowledgements tell): the data goes out on the other
/// until 32 MiB more have arrived; then the rail works again. Every message
/// handled once, none returned, the job exits 0.
#[test]
#[ignore = "needs network namespaces (root or CAP_NET_ADMIN); scripts/test-all.sh runs it when `scripts/netns.sh check` succeeds"]
fn the_carrying_rail_fails_silently_traffic_moves_to_the_other() {
    let _w = watchdog("the_carrying_rail_fails_silently_traffic_moves_to_the_other");
    let mut job = start();
    let sent = job.more("with both rails up");
    let (bad, other) = if sent[0] >= sent[1] { (0, 1) } else { (1, 0) };
    eprintln!("link_rails: the data went out on rail {bad}; making it drop everything");
    silent(bad, true);
    let moved = job.more(&format!("while rail {bad} drops everything"))[other];
    // as in the_carrying_rail_down_traffic_moves_to_the_other
    assert!(
        moved >= 16 * MIB,
        "only {moved} bytes went out on rail {other} while rail {bad} dropped everything and \
         32 MiB arrived"
    );
    silent(bad, false);
    job.more(&format!("after rail {bad} works again"));
    job.finish();
}
