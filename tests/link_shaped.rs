//! ramp over real shaped links (issue 37, item 4): jobs of
//! `examples/link_load` (senders stream 256 KiB Xfers plus short requests
//! into rank 0) whose workers sit in network namespaces joined by a bridge,
//! the bridge's port toward the receiver shaped by tc's token bucket (tbf,
//! as `scripts/netns.sh shape`): one sender at 100, 200 and 400 Mbit/s, four
//! senders into one shaped link (incast), two independent jobs sharing one
//! shaped link, a shaped link with 1% random loss (ramp's fault injector),
//! and the same job unshaped; the datagrams of an unshaped veth path fit
//! its MTU (no IP fragments past the first window).
//!
//! What is asserted holds at any speed: every job finishes within a
//! generous watchdog, every message runs exactly once at the receiver with
//! its payload where it belongs, nothing comes back, the statistics agree
//! with what the program counted (link_load's `PASS`), and the bytes went
//! through the shaped queue. No throughput: `scripts/link-bench.sh` prints
//! that against the targets. Without congestion control a shaped
//! link collapses (the first burst overflows the queue, retransmissions of
//! whole windows are dropped again) and the shaped jobs hit their watchdog.
//!
//! Needs root (or CAP_NET_ADMIN + CAP_SYS_ADMIN), iproute2 and tc, so the
//! tests are `#[ignore]`d: scripts/test-all.sh runs them with `--ignored`
//! when `scripts/netns.sh check` says namespaces can be made here and
//! reports them as SKIPPED otherwise. The namespaces are machine-wide names:
//! this file's are rlt0..rlt4 on the bridge rltbr0, 10.98.0.0/24
//! (`netns.sh -p rlt -s 10.98.0`), never those of tests/spmd_netns.rs
//! (ramp<i>, rampbr0, 10.99.0) or of the bench (rlb, 10.97.0); the tests of
//! this file take turns (a mutex), and a guard removes the namespaces (and
//! kills what a killed job left inside) when a test ends, also by a panic.

mod common;
#[path = "common/netns.rs"]
mod netns;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

const NETNS_OPTS: [&str; 4] = ["-p", "rlt", "-s", "10.98.0"];
const MASTER_IP: &str = "10.98.0.1";
const XFER: u64 = 256 * 1024;
const MIB: u64 = 1024 * 1024;

/// This file's namespaces (rlt0..rlt4).
static NETNS: netns::Netns = netns::Netns::new(&NETNS_OPTS);

/// Namespaces rlt0..rlt(n-1) for one test, removed when it ends.
struct Net {
    _net: netns::Net,
}

fn net(n: usize) -> Net {
    Net {
        _net: NETNS.fresh(&[&["up", &n.to_string()]]),
    }
}

/// One job: its ranks' namespaces (rank i in rlt<map[i]>), the bytes each
/// sender streams, extra environment of its workers.
struct Job<'a> {
    map: &'a str,
    bytes: u64,
    env: &'a [&'a str],
}

impl Net {
    /// Shapes the link toward rlt0 (the receivers' namespace).
    fn shape(&self, rate: &str) {
        NETNS.ok(&["shape", "0", rate]);
    }

    /// Bytes the shaped queue toward rlt0 has sent (tc's counter).
    fn shaped_bytes(&self) -> u64 {
        let o = Command::new("tc")
            .args(["-s", "-j", "qdisc", "show", "dev", "rltv0"])
            .output()
            .expect("tc runs");
        let s = String::from_utf8_lossy(&o.stdout);
        let at = s.find("\"bytes\":").expect("tc -j shows the qdisc's bytes") + 8;
        s[at..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .expect("a number of bytes")
    }

    /// Runs the jobs at the same time; each must finish within the
    /// watchdog and pass every check of link_load. Their outputs.
    fn run(&self, jobs: &[Job<'_>]) -> Vec<String> {
        let run = PathBuf::from(env!("CARGO_BIN_EXE_ramp-run"));
        let load = common::example("link_load");
        let script = netns::script();
        let limit = common::scaled(Duration::from_secs(60))
            .as_secs()
            .to_string();
        let children: Vec<_> = jobs
            .iter()
            .map(|j| {
                let n = j.map.split(',').count();
                let mut c = Command::new("timeout");
                // timeout leads a process group: a kill reaches the workers
                c.args(["-k", "5", &limit])
                    .arg(&run)
                    .args(["-n", &n.to_string(), "--master-ip", MASTER_IP, "--wrap"])
                    .arg(format!(
                        "bash {} {} pick {} {{rank}}",
                        script.display(),
                        NETNS_OPTS.join(" "),
                        j.map
                    ))
                    .args(["-x", "RAMP_TRANSPORT=udp", "-x", "RAMP_INTERFACE=eth0"]);
                for e in j.env {
                    c.args(["-x", e]);
                }
                c.arg(&load)
                    .args(["--bytes", &j.bytes.to_string(), "--secs", "100000"])
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped());
                (j, c.spawn().expect("timeout and ramp-run run"))
            })
            .collect();
        let mut outs = Vec::new();
        for (j, child) in children {
            let o = child.wait_with_output().expect("wait for the job");
            let out = String::from_utf8_lossy(&o.stdout).into_owned();
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(
                o.status.code() != Some(124) && o.status.code() != Some(137),
                "the job of ranks in {} did not finish within {limit} s (killed): the shaped link \
                 collapsed, or a hang\n--- stdout\n{out}--- stderr\n{err}",
                j.map
            );
            assert!(
                o.status.success() && out.contains("link_load: PASS"),
                "the job of ranks in {} failed ({:?})\n--- stdout\n{out}--- stderr\n{err}",
                j.map,
                o.status
            );
            let senders = j.map.split(',').count() - 1;
            let lines: Vec<&str> = out
                .lines()
                .filter(|l| l.starts_with("link_load: sender "))
                .collect();
            assert_eq!(lines.len(), senders, "one line per sender:\n{out}");
            let want = j.bytes.div_ceil(XFER) * XFER;
            for l in lines {
                assert!(
                    l.contains(&format!(" bytes={want} ")),
                    "each sender's {want} bytes arrived: {l}"
                );
            }
            eprintln!("{out}");
            outs.push(out);
        }
        outs
    }

    /// `run`, then: the shaped queue carried at least the payload.
    fn run_shaped(&self, jobs: &[Job<'_>]) {
        let before = self.shaped_bytes();
        self.run(jobs);
        let payload: u64 = jobs
            .iter()
            .map(|j| (j.map.split(',').count() as u64 - 1) * j.bytes.div_ceil(XFER) * XFER)
            .sum();
        let sent = self.shaped_bytes() - before;
        assert!(
            sent >= payload,
            "the shaped queue sent {sent} bytes, less than the {payload} bytes of payload: \
             the traffic did not cross the shaped link"
        );
    }
}

fn watchdog(test: &str) -> common::Watchdog {
    common::watchdog(&format!("link_shaped::{test}"), Duration::from_secs(240))
}

#[test]
#[ignore = "needs network namespaces and tc (root or CAP_NET_ADMIN); scripts/test-all.sh runs it when `scripts/netns.sh check` succeeds"]
fn unshaped_link_every_message_once() {
    let _w = watchdog("unshaped_link_every_message_once");
    let net = net(2);
    net.run(&[Job {
        map: "0,1",
        bytes: 16 * MIB,
        env: &[],
    }]);
}

#[test]
#[ignore = "needs network namespaces and tc (root or CAP_NET_ADMIN); scripts/test-all.sh runs it when `scripts/netns.sh check` succeeds"]
fn one_sender_over_100_200_400_mbit() {
    let _w = watchdog("one_sender_over_100_200_400_mbit");
    for rate in ["100mbit", "200mbit", "400mbit"] {
        common::waiting_for(&format!("one sender at {rate}"));
        // fresh namespaces for each: a run leaves incomplete IP datagrams
        // (fragments of ramp's large datagrams) in the receiver's
        // reassembly memory for 30 s
        let net = net(2);
        net.shape(rate);
        net.run_shaped(&[Job {
            map: "0,1",
            bytes: 8 * MIB,
            env: &[],
        }]);
    }
}

#[test]
#[ignore = "needs network namespaces and tc (root or CAP_NET_ADMIN); scripts/test-all.sh runs it when `scripts/netns.sh check` succeeds"]
fn four_senders_into_one_shaped_link() {
    let _w = watchdog("four_senders_into_one_shaped_link");
    let net = net(5);
    net.shape("200mbit");
    net.run_shaped(&[Job {
        map: "0,1,2,3,4",
        bytes: 4 * MIB,
        env: &[],
    }]);
}

#[test]
#[ignore = "needs network namespaces and tc (root or CAP_NET_ADMIN); scripts/test-all.sh runs it when `scripts/netns.sh check` succeeds"]
fn two_jobs_share_one_shaped_link() {
    let _w = watchdog("two_jobs_share_one_shaped_link");
    let net = net(3);
    net.shape("200mbit");
    // two ramp-run: their own job keys, ports and launchers; receivers on
    // one host behind the shaped link, senders on two others
    net.run_shaped(&[
        Job {
            map: "0,1",
            bytes: 8 * MIB,
            env: &[],
        },
        Job {
            map: "0,2",
            bytes: 8 * MIB,
            env: &[],
        },
    ]);
}

#[test]
#[ignore = "needs network namespaces and tc (root or CAP_NET_ADMIN); scripts/test-all.sh runs it when `scripts/netns.sh check` succeeds"]
fn shaped_link_with_one_percent_loss() {
    let _w = watchdog("shaped_link_with_one_percent_loss");
    let net = net(2);
    net.shape("200mbit");
    net.run_shaped(&[Job {
        map: "0,1",
        bytes: 8 * MIB,
        env: &["RAMP_FAULT_LOSS=0.01"],
    }]);
}

/// IP's counter of fragments made in namespace `ns` (`FragCreates` of
/// /proc/net/snmp there).
fn fragments_made(ns: &str) -> u64 {
    let o = Command::new("ip")
        .args(["netns", "exec", ns, "cat", "/proc/net/snmp"])
        .output()
        .expect("ip runs");
    let s = String::from_utf8_lossy(&o.stdout);
    let mut ip = s.lines().filter(|l| l.starts_with("Ip:"));
    let (names, values) = (
        ip.next().expect("Ip: names"),
        ip.next().expect("Ip: values"),
    );
    let at = names
        .split_whitespace()
        .position(|n| n == "FragCreates")
        .expect("FragCreates");
    values
        .split_whitespace()
        .nth(at)
        .expect("a value")
        .parse()
        .expect("a number")
}

/// A path's datagrams are as large as its route's MTU lets them travel
/// whole (veth: 1500, so 1472 bytes of UDP): the sender learns it from
/// the first datagram the kernel refuses, and from then on its datagrams
/// are never IP-fragmented. With 64 KiB datagrams on every path (before),
/// this job's 16 MiB went as at least 256 x 45 = 11,520 fragments; now
/// only the first window's datagrams (and their retransmissions) go
/// fragmented, once.
#[test]
#[ignore = "needs network namespaces (root or CAP_NET_ADMIN); scripts/test-all.sh runs it when `scripts/netns.sh check` succeeds"]
fn datagrams_fit_the_links_mtu() {
    let _w = watchdog("datagrams_fit_the_links_mtu");
    let net = net(2);
    let before = fragments_made("rlt1");
    net.run(&[Job {
        map: "0,1",
        bytes: 16 * MIB,
        env: &[],
    }]);
    let made = fragments_made("rlt1") - before;
    eprintln!("IP fragments made by the sender: {made}");
    assert!(made < 2000, "{made} IP fragments made by the sender");
}
