//! SPMD jobs started by MPICH's Hydra (`mpiexec`) through the PMI wire
//! protocol, PMI-1 and PMI-2: rank, size, barriers, all-gather, ping,
//! exit codes. No MPI library is linked. Skips (with a message) only when
//! mpiexec is not installed; the README test command installs it.

use std::path::PathBuf;
use std::process::{Command, Output};

fn example(name: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_BIN_EXE_ramp-run"))
        .parent()
        .unwrap()
        .join("examples")
        .join(name);
    assert!(p.exists(), "{} is not built", p.display());
    p
}

fn have_mpiexec() -> bool {
    let ok = Command::new("mpiexec")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!(
            "SKIPPED: mpiexec (MPICH Hydra) is not installed; scripts/test-all.sh installs it"
        );
    }
    ok
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
fn hello_under_mpiexec_pmi1_and_pmi2() {
    if !have_mpiexec() {
        return;
    }
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
fn exit_code_reaches_mpiexec() {
    if !have_mpiexec() {
        return;
    }
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
fn ping_barrier_allgather_with_16_processes() {
    if !have_mpiexec() {
        return;
    }
    let scale = example("spmd_scale");
    let o = mpiexec("1", 16, &scale, &[]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        out.contains("16 processes: every rank pinged all 16 ranks"),
        "{out}"
    );
}
