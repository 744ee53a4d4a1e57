//! Network namespaces for the tests that run ramp over real links
//! (`scripts/netns.sh`): each test file names its own prefix and subnet
//! (`-p PREFIX -s SUBNET`), so that two files never share a namespace, and
//! its tests take turns (the names are machine-wide).
//!
//! Included with `#[path = "common/netns.rs"] mod netns;`.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};

/// The crate's root (where `scripts/` is).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `scripts/netns.sh`.
pub fn script() -> PathBuf {
    root().join("scripts/netns.sh")
}

/// One test file's namespaces: `netns.sh` with its options, and the turn
/// its tests take.
pub struct Netns {
    opts: &'static [&'static str],
    turn: Mutex<()>,
}

impl Netns {
    pub const fn new(opts: &'static [&'static str]) -> Netns {
        Netns {
            opts,
            turn: Mutex::new(()),
        }
    }

    /// `netns.sh OPTS ARGS`, its output.
    pub fn run(&self, args: &[&str]) -> Output {
        Command::new("bash")
            .arg(script())
            .args(self.opts)
            .args(args)
            .output()
            .expect("bash runs")
    }

    /// `netns.sh OPTS ARGS`, which must succeed.
    pub fn ok(&self, args: &[&str]) {
        let o = self.run(args);
        assert!(
            o.status.success(),
            "netns.sh {} (status {:?}; 2 = namespaces cannot be made here): {}",
            args.join(" "),
            o.status.code(),
            String::from_utf8_lossy(&o.stderr)
        );
    }

    /// Removes the namespaces, links and bridge; a failure is printed
    /// (`when` says which removal), not fatal.
    pub fn down(&self, when: &str) {
        let o = self.run(&["down"]);
        if !o.status.success() {
            eprintln!(
                "netns.sh down ({when}) failed: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            );
        }
    }

    /// Takes this file's turn, removes what an earlier, killed run left,
    /// then runs each of `steps` (e.g. `["up", "2"]`, `["rails", "1"]`).
    /// The namespaces are removed when the result is dropped, also by a
    /// panic's unwinding, before the turn is given back.
    pub fn fresh(&'static self, steps: &[&[&str]]) -> Net {
        let turn = self.turn.lock().unwrap_or_else(|e| e.into_inner());
        self.down("stale, before the test");
        let cleanup = Cleanup(self);
        for step in steps {
            self.ok(step);
        }
        Net {
            _cleanup: cleanup,
            _turn: turn,
        }
    }
}

/// A test's namespaces: removed (first), then the turn given back (the
/// fields drop in this order).
pub struct Net {
    _cleanup: Cleanup,
    _turn: MutexGuard<'static, ()>,
}

struct Cleanup(&'static Netns);

impl Drop for Cleanup {
    fn drop(&mut self) {
        self.0.down("after the test");
    }
}

/// Bytes sent on `dev` in namespace `ns` (the kernel's counter; 0 when it
/// cannot be read).
pub fn tx_bytes(ns: &str, dev: &str) -> u64 {
    let o = Command::new("ip")
        .args(["netns", "exec", ns, "cat"])
        .arg(format!("/sys/class/net/{dev}/statistics/tx_bytes"))
        .output()
        .expect("ip runs");
    String::from_utf8_lossy(&o.stdout)
        .trim()
        .parse()
        .unwrap_or(0)
}
