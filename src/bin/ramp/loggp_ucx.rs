//! UCX's `ucx_perftest` beside `ramp bench --loggp`, when it is installed
//! (Debian: ucx-utils): server and client on loopback over shared memory
//! (`UCX_TLS=posix,self`), pinned to cores 1 and 0 as ramp's processes,
//! `ucp_am_lat` (8 bytes) and `ucp_am_bw` (8 and 65536 bytes); its CSV
//! output (`-f -v`) parsed into the table's figures. Its latency is half a
//! round trip (the median, `50.0_percentile_lat`); its "MB/s" are MiB/s.
//! Its one-way rate is `ucp_am_bw`'s own, `overall_mr`: a whole run's
//! messages over its time (`overall_lat`, us a message), the median of
//! `BW_REPS` runs, as ramp's one-way gap is a run's messages taken by the
//! receiver over its time, the median of short runs. Not the median time
//! of one message (`50.0_percentile_lat`), which in a bandwidth test is
//! what most posts cost, not the rate: 0.080-0.090 us against 0.105-0.109
//! overall, 3 runs by hand on the quiet 2-core host (so 11-12.5 against
//! 9.2-9.5 Mmsg/s); a preemption that spoils one run's average (72k
//! msg/s where the others gave millions, under a load of 10) is outvoted
//! by the median of the runs.
//!
//! `MISSING` is the one line said when `ucx_perftest` is not there.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::loggp_measure::Figures;

const TOOL: &str = "ucx_perftest";

/// What `ramp bench --loggp` says, once, without UCX.
pub const MISSING: &str =
    "UCX: ucx_perftest not installed, no UCX line (Debian/Ubuntu: apt-get install ucx-utils)";

/// Runs of `ucp_am_bw` (8 bytes) per measurement: the median.
const BW_REPS: usize = 3;

/// Whether `ucx_perftest` can be run.
pub fn installed() -> bool {
    Command::new(TOOL)
        .arg("-h")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

fn free_port() -> Option<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").ok()?;
    Some(l.local_addr().ok()?.port())
}

fn command(pin: Option<usize>) -> Command {
    let mut c = match pin {
        Some(cpu) => {
            let mut c = Command::new("taskset");
            c.arg("-c").arg(cpu.to_string()).arg(TOOL);
            c
        }
        None => Command::new(TOOL),
    };
    c.env("UCX_TLS", "posix,self").stdin(Stdio::null());
    c
}

/// Waits for `child` at most `secs`; its standard output, or None.
fn wait_output(mut child: std::process::Child, secs: u64) -> Option<String> {
    let t = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if t.elapsed() < Duration::from_secs(secs) => {
                std::thread::sleep(Duration::from_millis(10))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let out = child.wait_with_output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The values of the CSV line after the `iterations,...` header, by name.
pub fn parse_csv(out: &str) -> Option<Vec<(String, f64)>> {
    let mut lines = out.lines().skip_while(|l| !l.starts_with("iterations,"));
    let head: Vec<String> = lines.next()?.split(',').map(String::from).collect();
    let vals: Vec<f64> = lines
        .next()?
        .split(',')
        .map(|x| x.trim().parse().ok())
        .collect::<Option<_>>()?;
    (head.len() == vals.len()).then(|| head.into_iter().zip(vals).collect())
}

fn field(v: &[(String, f64)], name: &str) -> Option<f64> {
    v.iter().find(|(k, _)| k == name).map(|p| p.1)
}

/// One test: a server, then a client against it; the client's figures.
fn run_test(pin: bool, test: &str, size: usize, iters: usize) -> Option<Vec<(String, f64)>> {
    let port = free_port()?.to_string();
    let mut server = command(pin.then_some(1))
        .args(["-p", &port])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    // the server listens within a moment; the client is tried a few times
    let mut result = None;
    for _ in 0..5 {
        std::thread::sleep(Duration::from_millis(200));
        let client = command(pin.then_some(0))
            .args(["127.0.0.1", "-p", &port, "-t", test])
            .args(["-s", &size.to_string(), "-n", &iters.to_string()])
            .args(["-f", "-v"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        if let Some(out) = wait_output(client, 120) {
            result = parse_csv(&out);
            break;
        }
        if matches!(server.try_wait(), Ok(Some(_))) {
            break;
        }
    }
    let _ = server.kill();
    let _ = server.wait();
    result
}

/// 8-byte `ucp_am_bw`, `BW_REPS` runs: the median run by its time per
/// message (`overall_lat`, us) and that run's `overall_bw`; None when
/// none ran.
fn bw8_median(pin: bool, iters: usize) -> Option<(f64, f64)> {
    let mut v: Vec<(f64, f64)> = (0..BW_REPS)
        .filter_map(|_| {
            let r = run_test(pin, "ucp_am_bw", 8, (iters * 4).max(1000))?;
            let per_msg = field(&r, "overall_lat").filter(|&l| l > 0.0)?;
            Some((per_msg, field(&r, "overall_bw")?))
        })
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v.get(v.len() / 2).copied()
}

/// UCX's figures: round trip (twice the median latency), the one-way gap
/// (a run's time per 8-byte message, `bw8_median`: `ucp_am_bw` answers
/// nothing), bandwidth of 8 and 65536 bytes.
pub fn measure(pin: bool, iters: usize, total_bytes: usize) -> Option<Figures> {
    let lat = run_test(pin, "ucp_am_lat", 8, (iters * 5).max(1000))?;
    let (g1, bw8) = bw8_median(pin, iters)?;
    let bw64 = run_test(pin, "ucp_am_bw", 65536, (total_bytes / 65536).max(100))?;
    Some(Figures {
        rtt: Some(2.0 * field(&lat, "50.0_percentile_lat")?),
        g1: Some(g1),
        bw: vec![(8, bw8), (65536, field(&bw64, "overall_bw")?)],
        ..Figures::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_perftest_csv() {
        let out = "+----+\niterations,50.0_percentile_lat,avg_lat,overall_lat,avg_bw,overall_bw,avg_mr,overall_mr\n\
                   100000,0.150,4.447,4.447,1.72,1.72,224869,224869\n";
        let v = parse_csv(out).unwrap();
        assert_eq!(field(&v, "50.0_percentile_lat"), Some(0.150));
        assert_eq!(field(&v, "overall_mr"), Some(224869.0));
        assert_eq!(field(&v, "overall_lat"), Some(4.447));
        assert!(parse_csv("no figures\n").is_none());
        assert!(parse_csv("iterations,a\n1,x\n").is_none());
    }

    #[test]
    fn the_missing_line_names_the_package() {
        assert!(MISSING.contains("ucx-utils") && !MISSING.contains('\n'));
    }
}
