//! A tiny SPMD job through the Rust API: every rank all-gathers its rank,
//! checks the result, waits at a barrier, and rank 0 prints the job size.
//! Run with: ramp-run -n 4 target/release/examples/spmd_hello

use ramp::spmd::{self, Role};

fn main() {
    let boot = match spmd::detect_role() {
        Ok(Role::Worker(b)) => b,
        Ok(Role::Master) => {
            eprintln!("spmd_hello: start me with ramp-run -n N (or mpiexec -n N)");
            std::process::exit(2);
        }
        Err(e) => {
            eprintln!("spmd_hello: {e}");
            std::process::exit(1);
        }
    };
    let (_b, _ep, _pid) = spmd::start_worker(boot, 0).expect("start-up");
    let rank = spmd::rank().unwrap();
    let size = spmd::size().unwrap();
    let all = spmd::allgather(&(rank as u32).to_be_bytes()).expect("allgather");
    for r in 0..size {
        let v = u32::from_be_bytes(all[4 * r..4 * r + 4].try_into().unwrap());
        assert_eq!(v as usize, r);
    }
    for _ in 0..10 {
        spmd::barrier().expect("barrier");
    }
    println!("rank {rank} of {size}: all-gather and 10 barriers ok");
    let code = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(0);
    if code != 0 && rank == size - 1 {
        let _ = spmd::exit(code);
    }
    spmd::barrier().expect("barrier");
    let _ = spmd::exit(0);
}
