//! Which job key this worker got (for the tests): every rank prints the
//! fingerprint of the key its endpoint authenticates packets with, and
//! whether the key appears on its command line (it must not) and in its
//! environment (ramp's launcher puts it there; under PMI it comes through
//! the key-value space instead).
//! Run with: ramp-run -n 4 target/release/examples/job_key

use ramp::spmd::{self, Role};
use ramp::wire::mac::MacKey;

fn main() {
    let boot = match spmd::detect_role() {
        Ok(Role::Worker(b)) => b,
        Ok(Role::Master) => {
            eprintln!("job_key: start me with ramp-run -n N (or mpiexec -n N)");
            std::process::exit(2);
        }
        Err(e) => {
            eprintln!("job_key: {e}");
            std::process::exit(1);
        }
    };
    let (_b, _ep, _pid) = spmd::start_worker(boot, 0).expect("start-up");
    let rank = spmd::rank().unwrap();
    let key = ramp::config::global()
        .expect("configuration")
        .mac_job_key()
        .expect("job key");
    let (fp, in_cmdline, in_environ) = match &key {
        Some(k) => {
            let needle = k.expose().as_bytes();
            let has = |path: &str| {
                let b = std::fs::read(path).expect(path);
                b.windows(needle.len()).any(|w| w == needle)
            };
            (
                MacKey::from_job_key(k.expose()).fingerprint(),
                has("/proc/self/cmdline"),
                has("/proc/self/environ"),
            )
        }
        None => ("none".to_string(), false, false),
    };
    println!("rank {rank} fingerprint {fp} in-cmdline {in_cmdline} in-environ {in_environ}");
    spmd::barrier().expect("barrier");
    let _ = spmd::exit(0);
}
