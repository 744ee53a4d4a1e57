//! Exercises ramp's PMI clients under a real launcher:
//! `mpiexec -n 4 target/release/examples/pmi_probe [fail|exit R]`.
//!
//! Every rank prints `pmi_probe: rank R of N pmi V job J`, all-gathers 40
//! bytes that encode its rank and checks every slot, does 10 barriers,
//! checks `getenv_master("PATH")`, finalizes and exits 0. With `fail R`,
//! rank R aborts the job with code 3 after the first barrier; with
//! `exit R` it just exits with 3 there, without telling the launcher.
//! `RAMP_PMI=2` selects PMI-2 under Hydra.

use std::os::fd::RawFd;
use std::process::exit;

use ramp::spmd::pmi1;

/// The 40 bytes rank `r` contributes.
fn pattern(r: usize) -> [u8; 40] {
    let mut p = [0u8; 40];
    p[..8].copy_from_slice(&(r as u64).to_le_bytes());
    for (i, b) in p.iter_mut().enumerate().skip(8) {
        *b = (r as u8).wrapping_mul(31).wrapping_add(i as u8) ^ 0xa5;
    }
    p
}

fn die(rank: Option<usize>, what: &str, e: impl std::fmt::Display) -> ! {
    match rank {
        Some(r) => eprintln!("pmi_probe: rank {r}: {what}: {e}"),
        None => eprintln!("pmi_probe: {what}: {e}"),
    }
    exit(1)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map(String::as_str);
    let fail: Option<usize> = match mode {
        Some("fail") | Some("exit") => Some(
            args.get(2)
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| die(None, "usage", "pmi_probe [fail|exit RANK]")),
        ),
        Some(other) => die(None, "usage", format!("unknown argument {other:?}")),
        None => None,
    };

    let version = match pmi1::selected_version() {
        Ok(Some(v)) => v,
        Ok(None) => {
            eprintln!("pmi_probe: not started by a PMI launcher (no PMI_FD or PMI_PORT)");
            exit(2)
        }
        Err(e) => die(None, "environment", e),
    };
    let mut boot = match pmi1::from_env() {
        Ok(Some(b)) => b,
        Ok(None) => die(None, "from_env", "no PMI launcher"),
        Err(e) => die(None, "PMI start-up", e),
    };
    let (rank, size) = (boot.rank(), boot.size());
    println!(
        "pmi_probe: rank {rank} of {size} pmi {version} job {:016x}",
        boot.job_id()
    );

    // What a real caller does while it waits: poll its endpoints (none
    // here), then yield the CPU for a moment.
    let mut calls = 0u64;
    let mut progress = |_fd: Option<RawFd>| {
        calls += 1;
        std::thread::sleep(std::time::Duration::from_millis(1));
    };

    let all = boot
        .allgather(&pattern(rank), &mut progress)
        .unwrap_or_else(|e| die(Some(rank), "allgather", e));
    if all.len() != 40 * size {
        die(
            Some(rank),
            "allgather",
            format!("{} bytes, expected {}", all.len(), 40 * size),
        );
    }
    for r in 0..size {
        if all[40 * r..40 * (r + 1)] != pattern(r) {
            die(Some(rank), "allgather", format!("slot {r} is wrong"));
        }
    }
    println!("pmi_probe: rank {rank} allgather ok ({size} slots)");

    for i in 0..10 {
        boot.barrier(&mut progress)
            .unwrap_or_else(|e| die(Some(rank), "barrier", e));
        if i == 0 && fail == Some(rank) {
            if mode == Some("fail") {
                println!("pmi_probe: rank {rank} aborts");
                boot.abort(3, &format!("pmi_probe: rank {rank} aborts on purpose"));
            } else {
                println!("pmi_probe: rank {rank} exits");
            }
            exit(3);
        }
    }
    println!("pmi_probe: rank {rank} barriers ok");

    // A barrier must hold everyone until the last rank arrives. Checked by
    // what happened, not by a clock: each rank leaves a mark (a file named
    // after the job and its rank, in the temporary directory all ranks of a
    // local job share) just before it enters the barrier, and after the
    // barrier every mark must be there. The last rank arrives 500 ms late,
    // so a barrier that lets the others through early is caught.
    let marks = std::env::temp_dir().join(format!("pmi_probe-{:016x}", boot.job_id()));
    let mark = |r: usize| marks.join(format!("arrived.{r}"));
    if rank == size - 1 {
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    std::fs::create_dir_all(&marks)
        .and_then(|()| std::fs::write(mark(rank), b""))
        .unwrap_or_else(|e| die(Some(rank), "barrier mark", e));
    boot.barrier(&mut progress)
        .unwrap_or_else(|e| die(Some(rank), "barrier", e));
    let missing: Vec<usize> = (0..size).filter(|&r| !mark(r).exists()).collect();
    if !missing.is_empty() {
        die(
            Some(rank),
            "barrier",
            format!("returned before rank(s) {missing:?} arrived"),
        );
    }

    // A second all-gather, to check the sequence numbering of keys.
    let mine = [rank as u8; 3];
    let all = boot
        .allgather(&mine, &mut progress)
        .unwrap_or_else(|e| die(Some(rank), "allgather 2", e));
    for r in 0..size {
        if all[3 * r..3 * (r + 1)] != [r as u8; 3] {
            die(Some(rank), "allgather 2", format!("slot {r} is wrong"));
        }
    }

    // Every rank has checked the marks (the all-gather needs them all).
    let _ = std::fs::remove_file(mark(rank));
    let _ = std::fs::remove_dir(&marks); // the last one out succeeds

    if boot.getenv_master("PATH").is_none() {
        die(Some(rank), "getenv_master", "PATH is not set");
    }
    boot.finalize(0)
        .unwrap_or_else(|e| die(Some(rank), "finalize", e));
    println!("pmi_probe: rank {rank} done");
}
