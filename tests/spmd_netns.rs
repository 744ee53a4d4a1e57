//! A job whose workers sit in separate network namespaces joined by veth
//! links to a bridge (separate IP addresses, as separate hosts), started by
//! ramp-run through `ip netns exec`. Skips with a message where namespaces
//! cannot be made (no root / no CAP_NET_ADMIN).

use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn job_across_four_network_namespaces() {
    let script = root().join("scripts/netns.sh");
    let up = Command::new("bash")
        .arg(&script)
        .args(["up", "4"])
        .output()
        .expect("bash runs");
    if up.status.code() == Some(2) {
        eprintln!("SKIPPED: {}", String::from_utf8_lossy(&up.stderr).trim());
        return;
    }
    assert!(
        up.status.success(),
        "netns.sh up: {}",
        String::from_utf8_lossy(&up.stderr)
    );
    let run = PathBuf::from(env!("CARGO_BIN_EXE_ramp-run"));
    let scale = run.parent().unwrap().join("examples/spmd_scale");
    let o = Command::new("timeout")
        .args(["90"])
        .arg(&run)
        .args([
            "-n",
            "4",
            "--master-ip",
            "10.99.0.1",
            "--wrap",
            "ip netns exec ramp{rank}",
        ])
        .arg(&scale)
        .output()
        .expect("ramp-run runs");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        out.contains("4 processes: every rank pinged all 4 ranks"),
        "{out}"
    );
    let line = out
        .lines()
        .find(|l| l.contains("endpoint addresses:"))
        .expect("addresses line");
    for i in 10..14 {
        assert!(
            line.contains(&format!("10.99.0.{i}")),
            "each worker on its own host address: {line}"
        );
    }
}
