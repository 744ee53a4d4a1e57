//! SPMD jobs started by MPICH's Hydra (`mpiexec`) through the PMI wire
//! protocol, PMI-1 and PMI-2: rank, size, barriers, all-gather, ping,
//! exit codes. No MPI library is linked.
//!
//! Needs `mpiexec` (apt-get install mpich), so these tests are `#[ignore]`d:
//! scripts/test-all.sh (which installs mpich) runs them with `-- --ignored`
//! when mpiexec runs, and reports them as SKIPPED otherwise. Run by hand
//! without mpiexec they fail, they never pass.

mod common;

use std::time::Duration;

use std::path::PathBuf;
use std::process::{Command, Output};

use common::example;

fn need_mpiexec() {
    let ok = Command::new("mpiexec")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "mpiexec (MPICH Hydra) is not installed (apt-get install mpich); \
         scripts/test-all.sh installs it, or reports these tests as skipped"
    );
}

fn mpiexec(pmi: &str, n: usize, prog: &PathBuf, args: &[&str]) -> Output {
    let mut c = Command::new("timeout");
    c.args(["-k", "5", "90", "mpiexec", "-n", &n.to_string()])
        .arg(prog)
        .args(args);
    for (k, _) in std::env::vars() {
        if k.starts_with("PMI") || k.starts_with("RAMP_SPMD") || k.starts_with("SLURM") {
            c.env_remove(k);
        }
    }
    c.env("RAMP_PMI", pmi);
    c.output().expect("mpiexec runs")
}

#[test]
#[ignore = "needs mpiexec (MPICH); scripts/test-all.sh runs it when mpiexec is installed"]
fn hello_under_mpiexec_pmi1_and_pmi2() {
    let _watchdog = common::watchdog(
        "spmd_mpiexec::hello_under_mpiexec_pmi1_and_pmi2",
        Duration::from_secs(300),
    );
    need_mpiexec();
    let hello = example("spmd_hello");
    for pmi in ["1", "2"] {
        for n in [1usize, 2, 4, 8] {
            let o = mpiexec(pmi, n, &hello, &[]);
            let out = String::from_utf8_lossy(&o.stdout);
            assert!(
                o.status.success(),
                "PMI-{pmi} n={n}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            for r in 0..n {
                assert!(
                    out.contains(&format!("rank {r} of {n}: all-gather and 10 barriers ok")),
                    "PMI-{pmi} n={n}: rank {r} missing in\n{out}"
                );
            }
        }
    }
}

#[test]
#[ignore = "needs mpiexec (MPICH); scripts/test-all.sh runs it when mpiexec is installed"]
fn exit_code_reaches_mpiexec() {
    let _watchdog = common::watchdog(
        "spmd_mpiexec::exit_code_reaches_mpiexec",
        Duration::from_secs(300),
    );
    need_mpiexec();
    let hello = example("spmd_hello");
    for pmi in ["1", "2"] {
        let o = mpiexec(pmi, 3, &hello, &["7"]);
        assert_eq!(
            o.status.code(),
            Some(7),
            "PMI-{pmi}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

#[test]
#[ignore = "needs mpiexec (MPICH); scripts/test-all.sh runs it when mpiexec is installed"]
fn ping_barrier_allgather_with_16_processes() {
    let _watchdog = common::watchdog(
        "spmd_mpiexec::ping_barrier_allgather_with_16_processes",
        Duration::from_secs(300),
    );
    need_mpiexec();
    let scale = example("spmd_scale");
    let o = mpiexec("1", 16, &scale, &[]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        out.contains("16 processes: every rank pinged all 16 ranks"),
        "{out}"
    );
}

#[test]
#[ignore = "needs mpiexec (MPICH); scripts/test-all.sh runs it when mpiexec is installed"]
fn job_key_is_shared_through_pmi() {
    let _watchdog = common::watchdog(
        "spmd_mpiexec::job_key_is_shared_through_pmi",
        Duration::from_secs(300),
    );
    need_mpiexec();
    let prog = example("job_key");
    let fingerprints = |o: &Output, n: usize| -> Vec<String> {
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        (0..n)
            .map(|r| {
                let line = out
                    .lines()
                    .find(|l| l.starts_with(&format!("rank {r} fingerprint ")))
                    .unwrap_or_else(|| panic!("rank {r} missing in\n{out}"));
                // from the key-value space: neither on argv nor in the environment
                assert!(
                    line.ends_with("in-cmdline false in-environ false"),
                    "{line}"
                );
                line.split_whitespace().nth(3).unwrap().to_string()
            })
            .collect()
    };
    let mut seen = Vec::new();
    for pmi in ["1", "2"] {
        for n in [1usize, 4] {
            let f = fingerprints(&mpiexec(pmi, n, &prog, &[]), n);
            assert!(
                f.iter().all(|x| x == &f[0]) && f[0] != "none",
                "PMI-{pmi} n={n}: {f:?}"
            );
            assert!(!seen.contains(&f[0]), "PMI-{pmi} n={n}: a key came back");
            seen.push(f[0].clone());
        }
    }
}

/// Published endpoint names and handler names under Hydra's PMI-1 and
/// PMI-2 (examples/names.rs): with 3 ranks, rank 0 publishes "svc-zero",
/// the last "svc-last", and the others look both up with a 10 s timeout
/// and no barrier in between; a look-up that starts before its publish;
/// owners of every kind; a second publish refused. (Names travel as ramp
/// messages: a PMI key-value space shows a put only after a fence.)
#[test]
#[ignore = "needs mpiexec (MPICH); scripts/test-all.sh runs it when mpiexec is installed"]
fn names_publish_and_lookup_under_mpiexec_pmi1_and_pmi2() {
    let _watchdog = common::watchdog(
        "spmd_mpiexec::names_publish_and_lookup_under_mpiexec_pmi1_and_pmi2",
        Duration::from_secs(300),
    );
    need_mpiexec();
    let names = example("names");
    for pmi in ["1", "2"] {
        for n in [1usize, 3] {
            let o = mpiexec(pmi, n, &names, &[]);
            let out = String::from_utf8_lossy(&o.stdout);
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(o.status.success(), "PMI-{pmi} n={n}: {out}\n{err}");
            for r in 0..n {
                let line = format!("rank {r} of {n}: names ok");
                assert!(
                    out.contains(&line),
                    "PMI-{pmi} n={n}: no {line:?} in\n{out}\n{err}"
                );
            }
        }
    }
}
