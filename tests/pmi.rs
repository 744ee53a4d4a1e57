//! ramp's PMI-1 and PMI-2 clients under a real launcher: MPICH's Hydra
//! `mpiexec` runs `examples/pmi_probe` (built here with
//! `cargo build --release --example pmi_probe`) on 1, 2, 4 and 8 ranks.
//! The tests that need `mpiexec` (`apt-get install mpich`) are `#[ignore]`d:
//! scripts/test-all.sh runs them with `-- --ignored` when mpiexec runs and
//! reports them as SKIPPED otherwise; run by hand without mpiexec they fail,
//! they never pass. Every run is bounded by a timeout, so a hang fails the
//! test instead of stalling it.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Longest a single `mpiexec` run may take.
const LIMIT: Duration = Duration::from_secs(60);

/// One job at a time: the barrier timing check wants an unloaded machine.
static SERIAL: Mutex<()> = Mutex::new(());

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// `mpiexec`; a failure naming `test` when it is not installed.
fn mpiexec(test: &str) -> PathBuf {
    which("mpiexec").unwrap_or_else(|| {
        panic!(
            "{test}: mpiexec not found in PATH (install MPICH: apt-get install mpich); \
             scripts/test-all.sh reports this test as skipped instead"
        )
    })
}

/// Builds the probe once (release, as a cargo example) and returns its path.
fn probe() -> &'static Path {
    static PROBE: OnceLock<PathBuf> = OnceLock::new();
    PROBE.get_or_init(|| {
        let cargo = std::env::var("CARGO")
            .ok()
            .or_else(|| option_env!("CARGO").map(str::to_string))
            .unwrap_or_else(|| "cargo".to_string());
        let out = Command::new(&cargo)
            .args([
                "build",
                "--release",
                "--example",
                "pmi_probe",
                "--message-format=json-render-diagnostics",
            ])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stderr(Stdio::inherit())
            .output()
            .unwrap_or_else(|e| panic!("running {cargo} build: {e}"));
        assert!(out.status.success(), "building examples/pmi_probe failed");
        let text = String::from_utf8_lossy(&out.stdout);
        let from_json = text
            .lines()
            .filter(|l| l.contains("\"compiler-artifact\"") && l.contains("pmi_probe"))
            .filter_map(|l| {
                let i = l.find("\"executable\":\"")? + "\"executable\":\"".len();
                let rest = &l[i..];
                Some(PathBuf::from(&rest[..rest.find('"')?]))
            })
            .next_back();
        let fallback =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/examples/pmi_probe");
        let exe = from_json.unwrap_or(fallback);
        assert!(
            exe.is_file(),
            "built pmi_probe not found at {}",
            exe.display()
        );
        exe
    })
}

struct Run {
    status: Option<i32>,
    stdout: String,
    stderr: String,
    elapsed: Duration,
    what: String,
}

impl Run {
    fn lines(&self) -> Vec<&str> {
        self.stdout
            .lines()
            .filter(|l| l.starts_with("pmi_probe: "))
            .collect()
    }

    fn context(&self) -> String {
        format!(
            "{} -> status {:?} after {:?}\n--- stdout\n{}--- stderr\n{}",
            self.what, self.status, self.elapsed, self.stdout, self.stderr
        )
    }
}

/// Runs `mpiexec [extra] -n np pmi_probe args` with `RAMP_PMI=version`,
/// killing it if it outlives [`LIMIT`].
fn run(mpiexec: &Path, version: u8, np: usize, extra: &[&str], args: &[&str]) -> Run {
    let mut cmd = match which("timeout") {
        // coreutils' timeout sends SIGTERM first, which Hydra turns into a
        // clean-up of the whole job.
        Some(t) => {
            let mut c = Command::new(t);
            c.args(["-k", "5", &LIMIT.as_secs().to_string()])
                .arg(mpiexec);
            c
        }
        None => Command::new(mpiexec),
    };
    cmd.args(extra)
        .args(["-n", &np.to_string()])
        .arg(probe())
        .args(args);
    // Whatever launcher runs this test must not leak into the job.
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("PMI") || k.starts_with("SLURM_") || k.starts_with("RAMP_") {
            cmd.env_remove(&k);
        }
    }
    cmd.env("RAMP_PMI", version.to_string());
    let what = format!(
        "RAMP_PMI={version} mpiexec {} -n {np} pmi_probe {}",
        extra.join(" "),
        args.join(" ")
    );
    let start = Instant::now();
    // A backstop for when `timeout` is missing or itself stuck.
    let o = common::output_within(&mut cmd, LIMIT + Duration::from_secs(10));
    Run {
        status: o.status.code(),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        elapsed: start.elapsed(),
        what,
    }
}

/// Asserts a run of `np` ranks went through every step.
fn check_success(r: &Run, version: u8, np: usize) {
    let ctx = r.context();
    assert_eq!(r.status, Some(0), "{ctx}");
    let lines = r.lines();
    let mut ranks = BTreeSet::new();
    let mut jobs = BTreeSet::new();
    for l in &lines {
        // pmi_probe: rank R of N pmi V job J
        let w: Vec<&str> = l.split_whitespace().collect();
        if w.len() == 9 && w[3] == "of" {
            let rank: usize = w[2].parse().unwrap();
            assert_eq!(w[4], np.to_string(), "size: {ctx}");
            assert_eq!(w[6], version.to_string(), "PMI version: {ctx}");
            assert!(ranks.insert(rank), "rank {rank} twice: {ctx}");
            jobs.insert(w[8].to_string());
        }
    }
    assert_eq!(ranks, (0..np).collect(), "ranks: {ctx}");
    assert_eq!(jobs.len(), 1, "every rank must see the same job id: {ctx}");
    for step in [
        format!("allgather ok ({np} slots)"),
        "barriers ok".to_string(),
        "done".to_string(),
    ] {
        let n = lines.iter().filter(|l| l.ends_with(&step)).count();
        assert_eq!(n, np, "{np} lines ending {step:?} expected: {ctx}");
    }
}

fn sizes(version: u8, test: &str) {
    let m = mpiexec(test);
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for np in [1, 2, 4, 8] {
        let r = run(&m, version, np, &[], &[]);
        check_success(&r, version, np);
        println!("{test}: {} ok in {:?}", r.what, r.elapsed);
    }
    // Hydra's PMI_PORT model: a TCP connection and, for PMI-1, the
    // initack handshake.
    let r = run(&m, version, 4, &["-pmi-port"], &[]);
    check_success(&r, version, 4);
    println!("{test}: {} ok in {:?}", r.what, r.elapsed);
}

#[test]
#[ignore = "needs mpiexec (MPICH); scripts/test-all.sh runs it when mpiexec is installed"]
fn pmi1_under_mpiexec() {
    // the probe's cargo build first: outside the watchdog, which bounds the test
    probe();
    let _watchdog = common::watchdog("pmi::pmi1_under_mpiexec", Duration::from_secs(300));
    sizes(1, "pmi1_under_mpiexec");
}

#[test]
#[ignore = "needs mpiexec (MPICH); scripts/test-all.sh runs it when mpiexec is installed"]
fn pmi2_under_mpiexec() {
    // the probe's cargo build first: outside the watchdog, which bounds the test
    probe();
    let _watchdog = common::watchdog("pmi::pmi2_under_mpiexec", Duration::from_secs(300));
    sizes(2, "pmi2_under_mpiexec");
}

#[test]
#[ignore = "needs mpiexec (MPICH); scripts/test-all.sh runs it when mpiexec is installed"]
fn abort_ends_the_job() {
    // the probe's cargo build first: outside the watchdog, which bounds the test
    probe();
    let _watchdog = common::watchdog("pmi::abort_ends_the_job", Duration::from_secs(300));
    let m = mpiexec("abort_ends_the_job");
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for version in [1, 2] {
        for extra in [&[][..], &["-pmi-port"][..]] {
            let r = run(&m, version, 4, extra, &["fail", "2"]);
            let ctx = r.context();
            assert_ne!(r.status, Some(0), "abort must fail the job: {ctx}");
            assert_ne!(r.status, Some(124), "the job hung after the abort: {ctx}");
            // Hydra ends the job with the abort's exit code.
            assert_eq!(r.status, Some(3), "{ctx}");
            assert!(
                !r.lines().iter().any(|l| l.ends_with(" done")),
                "no rank may finish: {ctx}"
            );
            println!(
                "abort_ends_the_job: {} -> {:?} in {:?}",
                r.what, r.status, r.elapsed
            );
        }
    }
}

#[test]
#[ignore = "needs mpiexec (MPICH); scripts/test-all.sh runs it when mpiexec is installed"]
fn rank_exit_without_abort_fails_the_job() {
    // the probe's cargo build first: outside the watchdog, which bounds the test
    probe();
    let _watchdog = common::watchdog(
        "pmi::rank_exit_without_abort_fails_the_job",
        Duration::from_secs(300),
    );
    let m = mpiexec("rank_exit_without_abort_fails_the_job");
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for version in [1, 2] {
        let r = run(&m, version, 4, &[], &["exit", "1"]);
        let ctx = r.context();
        assert_ne!(r.status, Some(0), "{ctx}");
        assert_ne!(r.status, Some(124), "the job hung: {ctx}");
        println!(
            "rank_exit_without_abort_fails_the_job: {} -> {:?} in {:?}",
            r.what, r.status, r.elapsed
        );
    }
}

/// Without a launcher the probe says so and exits 2 (no mpiexec needed).
#[test]
fn probe_outside_a_launcher() {
    // the probe's cargo build first: outside the watchdog, which bounds the test
    probe();
    let _watchdog = common::watchdog("pmi::probe_outside_a_launcher", Duration::from_secs(300));
    let mut cmd = Command::new(probe());
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("PMI") || k.starts_with("RAMP_") {
            cmd.env_remove(&k);
        }
    }
    let out = cmd.output().expect("run pmi_probe");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("not started by a PMI launcher"), "{err}");
}
