//! A process that a launcher ramp cannot serve started (srun without
//! --mpi=pmi2/pmix, Open MPI without PMIx, PMI variables without a PMI
//! socket) stops with a message naming the launcher and what to pass or
//! install; it never becomes the master of a job of its own.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

fn hello() -> PathBuf {
    let p = PathBuf::from(env!("CARGO_BIN_EXE_ramp-run"))
        .parent()
        .unwrap()
        .join("examples")
        .join("spmd_hello");
    assert!(p.exists(), "{} is not built", p.display());
    p
}

fn run_with(env: &[(&str, &str)], expect: &[&str]) {
    let mut c = Command::new(hello());
    c.arg("4");
    for (k, _) in std::env::vars() {
        if k.starts_with("PMI")
            || k.starts_with("PMIX")
            || k.starts_with("RAMP_SPMD")
            || k.starts_with("SLURM")
            || k.starts_with("OMPI")
        {
            c.env_remove(k);
        }
    }
    c.envs(env.iter().copied());
    let o = common::output_within(&mut c, Duration::from_secs(180));
    let err = String::from_utf8_lossy(&o.stderr);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{env:?}: {out}\n{err}");
    assert!(!out.contains("barriers ok"), "{env:?}: a job ran:\n{out}");
    for e in expect {
        assert!(err.contains(e), "{env:?}: {e:?} not in: {err}");
    }
}

#[test]
fn foreign_launchers_are_refused_by_name() {
    let _watchdog = common::watchdog(
        "spmd_foreign::foreign_launchers_are_refused_by_name",
        Duration::from_secs(60),
    );
    run_with(
        &[
            ("SLURM_JOB_ID", "7"),
            ("SLURM_STEP_ID", "0"),
            ("SLURM_PROCID", "0"),
        ],
        &["started by srun", "--mpi=pmi2", "--mpi=pmix", "libpmix2"],
    );
    run_with(
        &[("OMPI_COMM_WORLD_SIZE", "2"), ("OMPI_COMM_WORLD_RANK", "0")],
        &["Open MPI's mpirun", "PMIX_RANK", "openmpi-bin"],
    );
    // PMIx variables without a server: an error, not a master
    run_with(
        &[("PMIX_RANK", "0"), ("PMIX_NAMESPACE", "nowhere")],
        &["PMIX_RANK/PMIX_NAMESPACE are set", "PMIx"],
    );
    run_with(
        &[("PMI_RANK", "0"), ("PMI_SIZE", "2")],
        &["neither PMI_FD nor PMI_PORT", "mpiexec"],
    );
}
