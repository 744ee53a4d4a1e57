//! Rails on real links from C and Python (issue 38, "Done when"): a
//! two-rank job whose ranks sit in two network namespaces joined by two
//! links (the bridge, eth0, and a direct veth pair, rail1), with
//! `RAMP_RAILS=eth0,rail1`, the job key's MAC on (`RAMP_AUTH=on`: no
//! endpoint opens without the job's key, the launcher's or the one rank 0
//! shares through PMI), streams 64 KiB long requests with
//! sequence numbers from rank 1 into rank 0 while the rail that carries
//! them goes down and comes back. From C (`c-tests/rails_stream.c`,
//! compiled against `include/` and linked with `libramp.so` as a user
//! builds) under MPICH's `mpiexec` (Hydra, PMI), and from Python
//! (`python/tests/scripts/rails_stream.py`, the `ramp` package) under
//! `ramp-run`. Asserted: data keeps arriving after each step (within the
//! watchdog), every message ran exactly once (the program's `PASS`),
//! nothing came back, the job exits 0. No timing.
//!
//! Needs root (namespaces), `cc`, `python3`, `mpiexec` (MPICH) and
//! `target/release/libramp.so` (built when missing), so the tests are
//! `#[ignore]`d:
//! scripts/test-all.sh runs them with `--ignored` where `netns.sh check`
//! succeeds and mpiexec runs. Namespaces rlx0 and rlx1 on the bridge
//! rlxbr0, 10.96.0.0/24, rail1 on 10.96.1.0/24, never another suite's; a
//! guard removes them when a test ends.

mod common;
#[path = "common/netns.rs"]
mod netns;
#[path = "common/progress.rs"]
mod progress;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use ramp::config::{AUTH, RAILS, TRANSPORT};

const NETNS_OPTS: [&str; 4] = ["-p", "rlx", "-s", "10.96.0"];
const MASTER_IP: &str = "10.96.0.1";
const MIB: u64 = 1024 * 1024;
/// The file whose existence ends the sending (rails_stream's).
const STOP_VAR: &str = "RAILS_STREAM_STOP";

/// This file's namespaces (rlx0, rlx1).
static NETNS: netns::Netns = netns::Netns::new(&NETNS_OPTS);

/// Where libramp.so is (the one `cargo build --release` makes; built here
/// when missing, as python/tests/conftest.py does: test-all's step 3
/// comes before its build step).
fn lib_dir() -> PathBuf {
    let d = netns::root().join("target/release");
    let so = d.join("libramp.so");
    if !so.exists() {
        let cargo = std::env::var("CARGO").unwrap_or("cargo".into());
        let st = Command::new(&cargo)
            .args(["build", "--release", "-j", "2", "--lib"])
            .current_dir(netns::root())
            .status()
            .expect("cargo runs");
        assert!(st.success(), "{cargo} build --release --lib failed");
    }
    assert!(
        so.exists(),
        "{} missing after cargo build --release",
        so.display()
    );
    // the soname, for the loader (c-tests/run.sh makes it too)
    let _ = std::os::unix::fs::symlink("libramp.so", d.join("libramp.so.0"));
    d
}

/// Runs `job` (its output piped) while the rail that carries the data
/// goes down and up; then creates the stop file and checks the end.
fn run(what: &str, mut job: Command, stop: &Path) {
    let mut child = job
        .env(STOP_VAR, stop)
        .env(TRANSPORT, "udp")
        .env(RAILS, "eth0,rail1")
        // the MAC: an endpoint without the job's key would not open
        .env(AUTH, "on")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the job starts");
    let (mut progress, out) = progress::read(child.stdout.take().unwrap(), "rails_stream");
    let mut err = child.stderr.take().unwrap();
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    // waits until 16 MiB more have arrived, counted from rank 0's first
    // progress line after the call; the bytes sent on eth0 and rail1
    let mut more = |step: &str| -> [u64; 2] {
        let before = ["eth0", "rail1"].map(|d| netns::tx_bytes("rlx1", d));
        common::waiting_for(&format!("{what}: 16 MiB more delivered {step}"));
        if progress.more(16 * MIB).is_none() {
            panic!("{what}: the job ended while waiting for data {step}")
        }
        let after = ["eth0", "rail1"].map(|d| netns::tx_bytes("rlx1", d));
        eprintln!("link_rails_langs: {what}: 16 MiB more delivered {step}");
        [after[0] - before[0], after[1] - before[1]]
    };
    let sent = more("with both rails up");
    let down = if sent[0] >= sent[1] { "0" } else { "1" };
    eprintln!("link_rails_langs: {what}: the data went out on rail {down}; taking it down");
    NETNS.ok(&["rail", down, "down"]);
    more(&format!("after rail {down} went down"));
    NETNS.ok(&["rail", down, "up"]);
    more(&format!("after rail {down} came back"));
    std::fs::write(stop, b"stop").expect("the stop file");
    common::waiting_for(&format!("{what}: the job's end"));
    let status = child.wait().expect("wait for the job");
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    let _ = std::fs::remove_file(stop);
    eprintln!("{out}");
    assert!(
        status.success() && out.contains("rails_stream: PASS"),
        "{what}: the job failed ({status:?}): a message lost, run twice or returned\n--- \
         stdout\n{out}--- stderr\n{err}"
    );
    assert!(
        !out.contains("came back") && !err.contains("came back"),
        "{what}: a message came back\n--- stdout\n{out}--- stderr\n{err}"
    );
}

fn fresh_namespaces() -> netns::Net {
    NETNS.fresh(&[&["up", "2"], &["rails", "1"]])
}

fn stop_file(what: &str) -> PathBuf {
    let stop = std::env::temp_dir().join(format!("link_rails_langs-{what}-{}", std::process::id()));
    let _ = std::fs::remove_file(&stop);
    stop
}

/// Seconds a job may take before `timeout` ends it (the watchdog's bound
/// is above it).
fn limit() -> String {
    common::scaled(Duration::from_secs(200))
        .as_secs()
        .to_string()
}

/// C under mpiexec: c-tests/rails_stream.c built against include/ and
/// libramp.so, each rank placed in its namespace by a wrapper that reads
/// Hydra's PMI_RANK.
#[test]
#[ignore = "needs network namespaces (root), cc and mpiexec (MPICH); scripts/test-all.sh runs it when `netns.sh check` succeeds and mpiexec runs"]
fn c_under_mpiexec_two_rails_a_rail_down_and_up_every_message_once() {
    let _w = common::watchdog(
        "link_rails_langs::c_under_mpiexec",
        Duration::from_secs(300),
    );
    let lib = lib_dir();
    let exe = std::env::temp_dir().join(format!("rails_stream-{}", std::process::id()));
    let cc = std::env::var("CC").unwrap_or("cc".into());
    let o = Command::new(&cc)
        .args(["-O2", "-Wall", "-Werror", "-o"])
        .arg(&exe)
        .arg(netns::root().join("c-tests/rails_stream.c"))
        .arg(format!("-I{}", netns::root().join("include").display()))
        .arg(format!("-L{}", lib.display()))
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-lramp")
        .output()
        .expect("cc runs");
    assert!(
        o.status.success(),
        "{cc} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let _ns = fresh_namespaces();
    let place = format!(
        "exec bash {} {} pick 0,1 \"$PMI_RANK\" {}",
        netns::script().display(),
        NETNS_OPTS.join(" "),
        exe.display()
    );
    let mut job = Command::new("timeout");
    job.args([
        "-k",
        "5",
        &limit(),
        "mpiexec",
        "-n",
        "2",
        "bash",
        "-c",
        &place,
    ]);
    for (k, _) in std::env::vars() {
        if k.starts_with("PMI") || k.starts_with("RAMP_SPMD") || k.starts_with("SLURM") {
            job.env_remove(k);
        }
    }
    run("C under mpiexec", job, &stop_file("c"));
    let _ = std::fs::remove_file(&exe);
}

/// Python under ramp-run: python/tests/scripts/rails_stream.py with the
/// package from python/ and the library from target/release.
#[test]
#[ignore = "needs network namespaces (root) and python3; scripts/test-all.sh runs it when `netns.sh check` succeeds and mpiexec runs"]
fn python_under_ramp_run_two_rails_a_rail_down_and_up_every_message_once() {
    let _w = common::watchdog(
        "link_rails_langs::python_under_ramp_run",
        Duration::from_secs(300),
    );
    let lib = lib_dir();
    let _ns = fresh_namespaces();
    let mut job = Command::new("timeout");
    job.args(["-k", "5", &limit()])
        .arg(env!("CARGO_BIN_EXE_ramp-run"))
        .args(["-n", "2", "--master-ip", MASTER_IP, "--wrap"])
        .arg(format!(
            "bash {} {} pick 0,1 {{rank}}",
            netns::script().display(),
            NETNS_OPTS.join(" ")
        ))
        .args(["python3", "-u"])
        .arg(netns::root().join("python/tests/scripts/rails_stream.py"))
        .env("PYTHONPATH", netns::root().join("python"))
        // the package finds libramp.so.0 through the loader's path
        .env("LD_LIBRARY_PATH", &lib);
    run("Python under ramp-run", job, &stop_file("py"));
}
