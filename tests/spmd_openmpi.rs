//! SPMD jobs started by Open MPI's `mpirun` (Debian's openmpi-bin), whose
//! workers bootstrap through PMIx (the system's libpmix, loaded at run
//! time): sizes 1, 2, 4 and 16, the exit code of `SPMDExit`, and
//! published endpoint names and handler names.
//!
//! Open MPI's launcher is called by its own name, `/usr/bin/mpirun.openmpi`
//! (Debian's `mpirun`/`mpiexec` alternatives may point at MPICH's Hydra,
//! which tests/spmd_mpiexec.rs needs). These tests are `#[ignore]`d:
//! scripts/test-all.sh runs them with `-- --ignored` when
//! `mpirun.openmpi` runs, and reports them as SKIPPED otherwise.

mod common;

use std::process::{Command, Output};
use std::time::Duration;

const MPIRUN: &str = "/usr/bin/mpirun.openmpi";

use common::example;

fn mpirun(n: usize, args: &[&str]) -> Output {
    assert!(
        std::path::Path::new(MPIRUN).exists(),
        "{MPIRUN} is not installed (apt-get install openmpi-bin)"
    );
    let mut c = Command::new(MPIRUN);
    c.args([
        "--allow-run-as-root",
        "--oversubscribe",
        "-n",
        &n.to_string(),
    ])
    .args(args);
    for (k, _) in std::env::vars() {
        if k.starts_with("PMI") || k.starts_with("RAMP_SPMD") || k.starts_with("SLURM") {
            c.env_remove(k);
        }
    }
    common::output_within(&mut c, Duration::from_secs(120))
}

#[test]
#[ignore = "needs Open MPI (openmpi-bin); scripts/test-all.sh runs it when mpirun.openmpi runs"]
fn hello_under_mpirun() {
    let _watchdog = common::watchdog("spmd_openmpi::hello_under_mpirun", Duration::from_secs(400));
    let hello = example("spmd_hello");
    let hello = hello.to_str().unwrap();
    for n in [1usize, 2, 4, 16] {
        let o = mpirun(n, &[hello]);
        let out = String::from_utf8_lossy(&o.stdout);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "n={n}: {:?}\n{err}", o.status);
        for r in 0..n {
            assert!(
                out.contains(&format!("rank {r} of {n}: all-gather and 10 barriers ok")),
                "n={n}: rank {r} missing in\n{out}\n{err}"
            );
        }
    }
}

#[test]
#[ignore = "needs Open MPI (openmpi-bin); scripts/test-all.sh runs it when mpirun.openmpi runs"]
fn exit_code_reaches_mpirun() {
    let _watchdog = common::watchdog(
        "spmd_openmpi::exit_code_reaches_mpirun",
        Duration::from_secs(300),
    );
    let hello = example("spmd_hello");
    let hello = hello.to_str().unwrap();
    for n in [1usize, 4] {
        let o = mpirun(n, &[hello, "3"]);
        assert_eq!(
            o.status.code(),
            Some(3),
            "n={n}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

#[test]
#[ignore = "needs Open MPI (openmpi-bin); scripts/test-all.sh runs it when mpirun.openmpi runs"]
fn every_rank_gets_the_job_key_under_mpirun() {
    let _watchdog = common::watchdog(
        "spmd_openmpi::every_rank_gets_the_job_key_under_mpirun",
        Duration::from_secs(300),
    );
    let prog = example("job_key");
    let prog = prog.to_str().unwrap();
    let run = || {
        let o = mpirun(3, &[prog]);
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{:?}\n{err}", o.status);
        common::one_fingerprint(&out, &err, 3)
    };
    let (a, b) = (run(), run());
    assert_ne!(a, b, "two jobs share a key");
}

#[test]
#[ignore = "needs Open MPI (openmpi-bin); scripts/test-all.sh runs it when mpirun.openmpi runs"]
fn rank_killed_by_sigkill_ends_the_job() {
    let _watchdog = common::watchdog(
        "spmd_openmpi::rank_killed_by_sigkill_ends_the_job",
        Duration::from_secs(200),
    );
    let hello = example("spmd_hello");
    // rank 1 dies by SIGKILL before start-up: mpirun notices, ends the
    // others and exits non-zero within the time limit
    let script = format!(
        "if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then kill -KILL $$; fi; exec {}",
        hello.display()
    );
    let o = mpirun(4, &["bash", "-c", &script]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{:?}: {err}", o.status);
    // (which process mpirun names depends on the order it sees them end:
    // rank 1's signal 9, or a survivor whose collective failed)
    assert!(
        err.contains("signal 9") || err.contains("non-zero exit code"),
        "{err}"
    );
}

/// Published endpoint names and handler names under PMIx
/// (examples/names.rs): with 3 ranks, rank 0 publishes "svc-zero", the
/// last "svc-last", and the others look both up with a 10 s timeout and no
/// barrier in between; a look-up that starts before its publish; owners of
/// every kind; a second publish refused.
#[test]
#[ignore = "needs Open MPI (openmpi-bin); scripts/test-all.sh runs it when mpirun.openmpi runs"]
fn names_under_mpirun() {
    let _watchdog = common::watchdog("spmd_openmpi::names_under_mpirun", Duration::from_secs(300));
    let names = example("names");
    let names = names.to_str().unwrap();
    for n in [1usize, 3] {
        let o = mpirun(n, &[names]);
        let out = String::from_utf8_lossy(&o.stdout);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "n={n}: {:?}\n{out}\n{err}", o.status);
        for r in 0..n {
            assert!(
                out.contains(&format!("rank {r} of {n}: names ok")),
                "n={n}: rank {r} missing in\n{out}\n{err}"
            );
        }
    }
}
