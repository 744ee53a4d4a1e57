//! SPMD jobs started by Slurm's `srun`: `--mpi=pmi2` (ramp's PMI-2 wire
//! client) at 1, 2, 4 and 16 tasks on one node (`-O`: more tasks than
//! CPUs), the exit code of `SPMDExit` as srun's status, and a rank killed
//! with SIGKILL ending the job.
//!
//! Needs a running Slurm (`bash scripts/slurm.sh up` brings up a one-node
//! cluster), so these tests are `#[ignore]`d: scripts/test-all.sh brings
//! Slurm up, runs them with `-- --ignored` when `scripts/slurm.sh check`
//! succeeds, and reports them as SKIPPED otherwise. Run by hand without
//! Slurm they fail, they never pass.

mod common;

use std::process::{Command, Output};
use std::time::Duration;

use common::example;

fn need_slurm() {
    let root = env!("CARGO_MANIFEST_DIR");
    let o = Command::new("bash")
        .arg(format!("{root}/scripts/slurm.sh"))
        .arg("check")
        .output()
        .expect("run scripts/slurm.sh check");
    assert!(
        o.status.success(),
        "no working Slurm here (bash scripts/slurm.sh up starts one): {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `srun -O --mpi=MPI -n N [extra] prog args`, without the launcher
/// variables of whatever started the test.
fn srun(mpi: &str, n: usize, extra: &[&str], prog: &[&str]) -> Output {
    let mut c = Command::new("srun");
    c.args(["-O", &format!("--mpi={mpi}"), "-n", &n.to_string()])
        .args(extra)
        .args(prog);
    for (k, _) in std::env::vars() {
        if k.starts_with("PMI") || k.starts_with("RAMP_SPMD") || k.starts_with("SLURM") {
            c.env_remove(k);
        }
    }
    common::output_within(&mut c, Duration::from_secs(120))
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The 1-2-4-16 rank job under `srun --mpi=MPI`.
fn hello_under_srun(mpi: &str) {
    let _watchdog = common::watchdog(
        &format!("spmd_slurm::hello_under_srun_{mpi}"),
        Duration::from_secs(400),
    );
    need_slurm();
    let hello = example("spmd_hello");
    let hello = hello.to_str().unwrap();
    for n in [1usize, 2, 4, 16] {
        let o = srun(mpi, n, &[], &[hello]);
        let (out, err) = text(&o);
        assert!(o.status.success(), "n={n}: {:?}\n{err}", o.status);
        for r in 0..n {
            assert!(
                out.contains(&format!("rank {r} of {n}: all-gather and 10 barriers ok")),
                "n={n}: rank {r} missing in\n{out}\n{err}"
            );
        }
    }
}

/// The last rank calls SPMDExit(3); the others are told and exit with 0:
/// srun's status is 3 and no task was killed.
fn exit_code_is_srun_status(mpi: &str) {
    let _watchdog = common::watchdog(
        &format!("spmd_slurm::exit_code_is_srun_status_{mpi}"),
        Duration::from_secs(400),
    );
    need_slurm();
    let hello = example("spmd_hello");
    let hello = hello.to_str().unwrap();
    for (n, extra) in [(1usize, &[][..]), (4, &[]), (4, &["-K"]), (16, &[])] {
        let o = srun(mpi, n, extra, &[hello, "3"]);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(3), "n={n} {extra:?}: {err}");
        assert!(
            !err.contains("Killed"),
            "n={n} {extra:?}: a task was killed: {err}"
        );
    }
}

#[test]
#[ignore = "needs slurm; scripts/test-all.sh runs it when scripts/slurm.sh check succeeds"]
fn hello_under_srun_pmi2() {
    hello_under_srun("pmi2");
}

#[test]
#[ignore = "needs slurm; scripts/test-all.sh runs it when scripts/slurm.sh check succeeds"]
fn exit_code_is_srun_status_pmi2() {
    exit_code_is_srun_status("pmi2");
}

#[test]
#[ignore = "needs slurm; scripts/test-all.sh runs it when scripts/slurm.sh check succeeds"]
fn hello_under_srun_pmix() {
    hello_under_srun("pmix");
}

#[test]
#[ignore = "needs slurm; scripts/test-all.sh runs it when scripts/slurm.sh check succeeds"]
fn exit_code_is_srun_status_pmix() {
    exit_code_is_srun_status("pmix");
}

#[test]
#[ignore = "needs slurm; scripts/test-all.sh runs it when scripts/slurm.sh check succeeds"]
fn rank_killed_by_sigkill_ends_the_job() {
    let _watchdog = common::watchdog(
        "spmd_slurm::rank_killed_by_sigkill_ends_the_job",
        Duration::from_secs(200),
    );
    need_slurm();
    let hello = example("spmd_hello");
    // rank 1 dies by SIGKILL before start-up: the others wait for it in the
    // name exchange until srun -K (--kill-on-bad-exit) ends the step
    let script = format!(
        "if [ \"$SLURM_PROCID\" = 1 ]; then kill -KILL $$; fi; exec {}",
        hello.display()
    );
    let o = srun("pmi2", 4, &["-K"], &["bash", "-c", &script]);
    let (_, err) = text(&o);
    assert!(!o.status.success(), "{err}");
    // srun keeps the highest signal of any task: the survivors' SIGTERM
    assert!(
        matches!(o.status.code(), Some(137) | Some(143)),
        "{:?}: {err}",
        o.status
    );
    assert!(err.contains("task 1: Killed"), "{err}");
}

#[test]
#[ignore = "needs slurm; scripts/test-all.sh runs it when scripts/slurm.sh check succeeds"]
fn every_rank_gets_the_job_key_under_srun() {
    let _watchdog = common::watchdog(
        "spmd_slurm::every_rank_gets_the_job_key_under_srun",
        Duration::from_secs(300),
    );
    need_slurm();
    let prog = example("job_key");
    let prog = prog.to_str().unwrap();
    for mpi in ["pmi2", "pmix"] {
        let run = || {
            let o = srun(mpi, 3, &[], &[prog]);
            let (out, err) = text(&o);
            assert!(o.status.success(), "{mpi}: {:?}\n{err}", o.status);
            common::one_fingerprint(&out, &err, 3)
        };
        let (a, b) = (run(), run());
        assert_ne!(a, b, "{mpi}: two jobs share a key");
    }
}

/// Published endpoint names and handler names under `srun --mpi=MPI`
/// (examples/names.rs): with 3 ranks, rank 0 publishes "svc-zero", the
/// last "svc-last", and the others look both up with a 10 s timeout and no
/// barrier in between; a look-up that starts before its publish; owners
/// of every kind; a second publish refused. The same under PMI-2 and PMIx.
fn names_under_srun(mpi: &str) {
    let _watchdog = common::watchdog(
        &format!("spmd_slurm::names_under_srun_{mpi}"),
        Duration::from_secs(300),
    );
    need_slurm();
    let names = example("names");
    let names = names.to_str().unwrap();
    for n in [1usize, 3] {
        let o = srun(mpi, n, &[], &[names]);
        let (out, err) = text(&o);
        assert!(o.status.success(), "n={n}: {:?}\n{out}\n{err}", o.status);
        for r in 0..n {
            assert!(
                out.contains(&format!("rank {r} of {n}: names ok")),
                "n={n}: rank {r} missing in\n{out}\n{err}"
            );
        }
    }
}

#[test]
#[ignore = "needs slurm; scripts/test-all.sh runs it when scripts/slurm.sh check succeeds"]
fn names_under_srun_pmi2() {
    names_under_srun("pmi2");
}

#[test]
#[ignore = "needs slurm; scripts/test-all.sh runs it when scripts/slurm.sh check succeeds"]
fn names_under_srun_pmix() {
    names_under_srun("pmix");
}
