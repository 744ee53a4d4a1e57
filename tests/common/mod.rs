//! Helpers shared by the integration tests: where the built examples are,
//! and time limits, so that a hang
//! (a credit leak, a lost wakeup, a stuck child) fails the test with a
//! message instead of stalling `cargo test` until CI's own limit.
//!
//! Each test binary includes this file with `mod common;` and uses what it
//! needs, hence the `dead_code` allowance.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// `RAMP_TEST_TIME_SCALE` (a number, default 1) stretches every limit, for
/// slow or heavily shared machines.
pub fn scaled(limit: Duration) -> Duration {
    let k = std::env::var("RAMP_TEST_TIME_SCALE")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|k| *k > 0.0)
        .unwrap_or(1.0);
    limit.mul_f64(k)
}

/// While alive, watches the test named `test`: if it is still running after
/// `limit`, prints which test hung, and what it was waiting for
/// (`waiting_for`), and ends the whole test process with status 124 (the
/// other tests of the binary cannot be trusted after a hang anyway).
/// Dropping the guard, also by a panic's unwinding, disarms it.
///
/// It is a test's one time limit: the loops of a test wait for their
/// conditions without limits of their own (a slow machine makes a working
/// run slow, never wrong), and the limit is far above what a working run
/// takes on a loaded machine.
pub struct Watchdog {
    _disarm: mpsc::Sender<()>,
}

thread_local! {
    /// What the test of this thread waits for now (`waiting_for`), shared
    /// with its watchdog.
    static WAITING_FOR: std::cell::RefCell<Option<std::sync::Arc<std::sync::Mutex<String>>>> =
        const { std::cell::RefCell::new(None) };
}

/// Names what the calling test waits for from now on: a watchdog that
/// fires says it. (A thread without a watchdog: nothing.)
pub fn waiting_for(what: &str) {
    WAITING_FOR.with(|w| {
        if let Some(w) = &*w.borrow() {
            *w.lock().unwrap_or_else(|e| e.into_inner()) = what.to_string();
        }
    });
}

pub fn watchdog(test: &str, limit: Duration) -> Watchdog {
    let limit = scaled(limit);
    let (tx, rx) = mpsc::channel::<()>();
    let name = test.to_string();
    let phase = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    WAITING_FOR.with(|w| *w.borrow_mut() = Some(phase.clone()));
    std::thread::Builder::new()
        .name(format!("watchdog {name}"))
        .spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(limit) {
                let what = phase.lock().unwrap_or_else(|e| e.into_inner()).clone();
                let what = if what.is_empty() {
                    String::new()
                } else {
                    format!(" waiting for {what}")
                };
                // Straight to the stderr stream: the test harness captures
                // eprintln! (also in threads a test spawns) and would drop it.
                let msg = format!(
                    "\nTIMEOUT: test `{name}` still running after {limit:?}{what}: it hangs \
                     (set RAMP_TEST_TIME_SCALE to allow more time on a slow machine); \
                     ending the test process with status 124\n"
                );
                let _ = std::io::stderr().write_all(msg.as_bytes());
                std::process::exit(124);
            }
        })
        .expect("spawn the watchdog thread");
    Watchdog { _disarm: tx }
}

/// Runs `cmd` to completion with its output captured, killing it if it is
/// still running after `limit`; a kill is a panic naming the command and
/// showing what it printed.
pub fn output_within(cmd: &mut Command, limit: Duration) -> Output {
    let limit = scaled(limit);
    let what = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let t_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let start = Instant::now();
    let mut killed = false;
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait for the child") {
            break st;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            killed = true;
            break child.wait().expect("wait for the killed child");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let o = Output {
        status,
        stdout: t_out.join().unwrap(),
        stderr: t_err.join().unwrap(),
    };
    assert!(
        !killed,
        "TIMEOUT: {what} still running after {limit:?}; killed\n--- stdout\n{}--- stderr\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// The example program `name`, built beside `ramp-run` (`cargo test` builds
/// the examples).
pub fn example(name: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_BIN_EXE_ramp-run"))
        .parent()
        .expect("ramp-run has a directory")
        .join("examples")
        .join(name);
    assert!(
        p.exists(),
        "{} is not built (cargo test builds the examples)",
        p.display()
    );
    p
}

/// The `job_key` example's reports in a job's output, whatever the launcher
/// did to its lines (Open MPI's forwarding may join two ranks' lines): each
/// `rank R fingerprint F in-cmdline B in-environ B` as (rank, fingerprint,
/// in-cmdline, in-environ). Asserts every report is whole.
pub fn job_key_reports(out: &str) -> Vec<(usize, String, bool, bool)> {
    let mut reports = Vec::new();
    for piece in out.split("rank ").skip(1) {
        let t: Vec<&str> = piece.split_whitespace().take(7).collect();
        if t.get(1) != Some(&"fingerprint") {
            continue; // some other line that mentions a rank
        }
        assert!(
            t.len() == 7 && t[3] == "in-cmdline" && t[5] == "in-environ",
            "a cut report: rank {piece}"
        );
        let flag = |s: &str| s.starts_with("true");
        reports.push((
            t[0].parse().expect("a rank number"),
            t[2].to_string(),
            flag(t[4]),
            flag(t[6]),
        ));
    }
    reports
}

/// The one job key fingerprint of `n` ranks' reports; asserts the key was
/// neither on a command line nor in an environment.
pub fn one_fingerprint(out: &str, err: &str, n: usize) -> String {
    let reports = job_key_reports(out);
    assert_eq!(reports.len(), n, "{out}\n{err}");
    for (r, _, cmdline, environ) in &reports {
        assert!(!cmdline && !environ, "rank {r}: the key leaked\n{out}");
    }
    let fp = &reports[0].1;
    assert!(
        reports.iter().all(|x| x.1 == *fp) && fp.len() == 16,
        "{out}"
    );
    fp.clone()
}

/// This process's resident memory (VmRSS) in KiB; 0 if unreadable.
pub fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// A numeric test knob from the environment (e.g. `RAMP_FUZZ_ITERS`).
pub fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// An endpoint name as 64 hex digits (how child processes pass theirs on).
pub fn name_hex(n: &ramp::am::EndpointName) -> String {
    n.0.iter().map(|x| format!("{x:02x}")).collect()
}

/// The endpoint name `name_hex` wrote.
pub fn parse_name_hex(h: &str) -> ramp::am::EndpointName {
    let mut n = [0u8; 32];
    for (i, b) in n.iter_mut().enumerate() {
        *b = u8::from_str_radix(&h[2 * i..2 * i + 2], 16).unwrap();
    }
    ramp::am::EndpointName(n)
}

/// The lines a child process writes to its piped standard output.
pub type ChildLines = std::io::Lines<std::io::BufReader<std::process::ChildStdout>>;

/// Spawns `cmd` (this test binary run again as a child), its standard
/// output piped here, and reads that output up to the line that carries
/// `NAME ` (the harness writes its own text before it on the same line):
/// the child, the rest of its lines (keep reading them, or drop them in a
/// thread: the child fails on EPIPE otherwise), and what follows `NAME `
/// (the child's endpoint name in hex, maybe more fields).
pub fn spawn_announced(cmd: &mut Command) -> (std::process::Child, ChildLines, String) {
    use std::io::BufRead;
    let mut child = cmd.stdout(Stdio::piped()).spawn().unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let rest = loop {
        let l = lines.next().expect("child output ended").unwrap();
        if let Some(rest) = l.split("NAME ").nth(1) {
            break rest.trim().to_string();
        }
    };
    (child, lines, rest)
}

/// `spawn_announced` for a child that announces only its endpoint's name.
pub fn spawn_named(cmd: &mut Command) -> (std::process::Child, ChildLines, ramp::am::EndpointName) {
    let (child, lines, rest) = spawn_announced(cmd);
    (child, lines, parse_name_hex(&rest))
}

/// A child's last steps: maps its parent (whose name, in hex, is in the
/// environment variable `parent_var`) at index 0 with `tag` and 8 credits,
/// prints `NAME <its name in hex><extra>` for `spawn_named` /
/// `spawn_announced`, and serves until its standard input closes.
pub fn serve_parent(
    b: &ramp::am::Bundle,
    e: &ramp::am::Endpoint,
    parent_var: &str,
    tag: u64,
    extra: &str,
) {
    let parent = parse_name_hex(&std::env::var(parent_var).unwrap());
    e.map(0, parent, tag).unwrap();
    e.set_expected_resources(1, 8).unwrap();
    println!("NAME {}{extra}", name_hex(&e.name()));
    std::io::stdout().flush().unwrap();
    serve_until_stdin_closes(b);
}

/// A child process that is told to stop (its standard input closed) and
/// reaped when dropped; otherwise a `Child`.
pub struct ChildGuard(pub std::process::Child);

impl std::ops::Deref for ChildGuard {
    type Target = std::process::Child;
    fn deref(&self) -> &std::process::Child {
        &self.0
    }
}

impl std::ops::DerefMut for ChildGuard {
    fn deref_mut(&mut self) -> &mut std::process::Child {
        &mut self.0
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        drop(self.0.stdin.take());
        let _ = self.0.wait();
    }
}

/// A flag set once this process's standard input ends (the parent test
/// closed its pipe: a child process's signal to stop).
pub fn stdin_closed() -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let done = std::sync::Arc::new(AtomicBool::new(false));
    let d = done.clone();
    std::thread::spawn(move || {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
        d.store(true, Ordering::SeqCst);
    });
    done
}

/// A child's serving loop: polls `b` (handlers run) until standard input
/// ends.
pub fn serve_until_stdin_closes(b: &ramp::am::Bundle) {
    let done = stdin_closed();
    while !done.load(std::sync::atomic::Ordering::SeqCst) {
        b.poll().unwrap();
        b.wait_for_activity(10);
    }
}

/// Gives up CAP_SYS_PTRACE (tests run as root in containers): then the
/// kernel refuses our copies from or into a non-dumpable process, as for
/// any unprivileged user (and, as root, from or into any process whose
/// capabilities we no longer hold all of).
pub fn drop_ptrace_capability() {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    const CAP_SYS_PTRACE: u32 = 19;
    let mut h = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut d = [Data::default(); 2];
    // SAFETY: capget writes one header and two data structs we own.
    let r = unsafe { libc::syscall(libc::SYS_capget, &mut h, d.as_mut_ptr()) };
    assert_eq!(r, 0, "capget");
    for x in [&mut d[0].effective, &mut d[0].permitted] {
        *x &= !(1 << CAP_SYS_PTRACE);
    }
    // SAFETY: capset reads the header and the two data structs.
    let r = unsafe { libc::syscall(libc::SYS_capset, &mut h, d.as_ptr()) };
    assert_eq!(r, 0, "capset");
}

/// FNV-1a of `b`: what two processes of a test compare memory by.
pub fn hash(b: &[u8]) -> u32 {
    b.iter().fold(0x811c_9dc5u32, |h, &x| {
        (h ^ x as u32).wrapping_mul(0x0100_0193)
    })
}

/// `n` bytes that differ with `seed` and along their length (no run of
/// equal bytes a misplaced copy could hide in).
pub fn pattern(n: usize, seed: u32) -> Vec<u8> {
    (0..n as u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8 ^ seed as u8)
        .collect()
}

/// Two endpoints over `cfg`, each in a bundle of its own (polling one does
/// not serve the other), mapped to each other (index 0 is e0, 1 is e1)
/// under `tag`, with network depth `depth`: (b0, e0, b1, e1).
pub fn two_bundles(
    cfg: &ramp::config::Config,
    tag: u64,
    depth: i32,
) -> (
    std::sync::Arc<ramp::am::Bundle>,
    std::sync::Arc<ramp::am::Endpoint>,
    std::sync::Arc<ramp::am::Bundle>,
    std::sync::Arc<ramp::am::Endpoint>,
) {
    use ramp::am::{self, BundleMode};
    am::init().unwrap();
    let b0 = am::allocate_bundle(BundleMode::Seq).unwrap();
    let b1 = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e0 = am::allocate_endpoint_with(&b0, cfg).unwrap();
    let e1 = am::allocate_endpoint_with(&b1, cfg).unwrap();
    for e in [&e0, &e1] {
        e.set_tag(tag);
        e.map(0, e0.name(), tag).unwrap();
        e.map(1, e1.name(), tag).unwrap();
        e.set_expected_resources(2, depth).unwrap();
    }
    (b0, e0, b1, e1)
}

/// Whether process `pid` has ended (gone, or a zombie not yet reaped).
pub fn exited(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // "pid (comm) S ...": the state follows the last parenthesis
        Ok(st) => st
            .rsplit_once(')')
            .is_some_and(|(_, rest)| matches!(rest.trim_start().chars().next(), Some('Z' | 'X'))),
    }
}

/// The parent's handlers in the tests of a request held behind an
/// unanswered one when its sender exits (`tests/am_udp_batch.rs`,
/// `tests/shm_express.rs`): 10 records its first argument and answers
/// 11; 13 answers only once process `child` (the sender) has exited, so
/// that the child's next request is held behind it whatever the speed;
/// returned messages are ignored (the child is gone by the time these
/// replies would reach it). Returns the arguments 10 saw.
pub fn held_request_target(
    e: &ramp::am::Endpoint,
    child: u32,
) -> std::sync::Arc<parking_lot::Mutex<Vec<u32>>> {
    use ramp::am::{handler, reply, Message};
    let quick = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
    let q = quick.clone();
    e.set_handler(
        10,
        handler(move |h| {
            q.lock().push(h.args[0]);
            reply(h.token, &Message::short(11, &[])).unwrap();
        }),
    );
    e.set_handler(
        13,
        handler(move |h| {
            while !exited(child) {
                std::thread::sleep(Duration::from_millis(1));
            }
            reply(h.token, &Message::short(11, &[])).unwrap();
        }),
    );
    e.set_handler(0, handler(|_| {}));
    quick
}

/// The held request's second half, over UDP (`tests/am_udp_batch.rs`) and over
/// shared memory (`tests/shm_express.rs`): e0 (in bundle b0) sends e1
/// (polled by a thread of its own; its handler 10 counts itself in `ran`
/// and answers 11) a slow request (handler 13, set here: it answers once
/// the test lets it), then a quick one, held behind the unanswered slow
/// one. The slow one leaves at once (its handler runs while e0 makes no
/// call); without a progress thread the quick one leaves with e0's next
/// call, with one while the program computes (the slow one's answer wakes
/// the thread, whose pass sends it). Each runs once. That the held one
/// waits for a call however long the program computes is a matter of time:
/// `src/am/timing_world_tests.rs` shows it on virtual time.
pub fn a_held_request_waits_for_a_call_or_the_progress_thread(
    b0: &std::sync::Arc<ramp::am::Bundle>,
    e0: &std::sync::Arc<ramp::am::Endpoint>,
    e1: &ramp::am::Endpoint,
    ran: &std::sync::atomic::AtomicU64,
) {
    use ramp::am::{handler, reply, Message};
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    let wait_until = |what: &str, done: &dyn Fn() -> bool| {
        waiting_for(what);
        while !done() {
            b0.poll().unwrap();
        }
    };
    // (no call of e0 meanwhile)
    let watch = |what: &str, done: &dyn Fn() -> bool| {
        waiting_for(what);
        while !done() {
            std::thread::yield_now();
        }
    };
    let (slow, release) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicBool::new(false)),
    );
    let (sl, rel) = (slow.clone(), release.clone());
    e1.set_handler(
        13,
        handler(move |h| {
            sl.fetch_add(1, Ordering::SeqCst);
            while !rel.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
            reply(h.token, &Message::short(11, &[0])).unwrap();
        }),
    );
    let r0 = ran.load(Ordering::SeqCst);
    e0.request(1, &Message::short(13, &[]), false).unwrap();
    e0.request(1, &Message::short(10, &[1]), false).unwrap();
    watch("the slow request, sent at once, to run", &|| {
        slow.load(Ordering::SeqCst) == 1
    });
    release.store(true, Ordering::SeqCst);
    wait_until("both answers", &|| e0.unanswered_requests() == 0);
    assert_eq!(ran.load(Ordering::SeqCst), r0 + 1);
    b0.set_progress_thread(true).unwrap();
    release.store(false, Ordering::SeqCst);
    e0.request(1, &Message::short(13, &[]), false).unwrap();
    e0.request(1, &Message::short(10, &[2]), false).unwrap();
    watch("the second slow request to run", &|| {
        slow.load(Ordering::SeqCst) == 2
    });
    release.store(true, Ordering::SeqCst);
    watch(
        "the progress thread to send the held request while the program computes",
        &|| ran.load(Ordering::SeqCst) == r0 + 2,
    );
    b0.set_progress_thread(false).unwrap();
    wait_until("the last answers", &|| e0.unanswered_requests() == 0);
    waiting_for("");
}

/// The handshake a plain UDP socket `s` (with a read timeout) runs with
/// the endpoint at `to`, offering `my_tag` (under CRC32C), calling `poll`
/// while it waits (the endpoint's own polling, when the test has no other
/// thread), sending again after each read timeout, for as long as it takes
/// (the test's watchdog limits it): the endpoint's tag, and how many
/// datagrams it sent.
pub fn wire_handshake(
    s: &std::net::UdpSocket,
    to: std::net::SocketAddr,
    my_tag: u64,
    poll: &dyn Fn(),
) -> (u64, u64) {
    use ramp::wire::{self, Integrity, Packet};
    const I: Integrity = Integrity::Crc32c;
    let mut init = Vec::new();
    wire::encode_init(&mut init, &I, my_tag);
    let mut buf = [0u8; 2048];
    let mut sent = 0u64;
    loop {
        s.send_to(&init, to).unwrap();
        sent += 1;
        poll();
        let Ok((n, _)) = s.recv_from(&mut buf) else {
            continue;
        };
        if let Ok(Packet::InitAck {
            resp_tag, cookie, ..
        }) = wire::decode(&I, &buf[..n])
        {
            let mut echo = Vec::new();
            wire::encode_cookie_echo(&mut echo, &I, resp_tag, cookie);
            loop {
                s.send_to(&echo, to).unwrap();
                sent += 1;
                poll();
                if let Ok((n, _)) = s.recv_from(&mut buf) {
                    if let Ok(Packet::CookieAck { .. }) = wire::decode(&I, &buf[..n]) {
                        return (resp_tag, sent);
                    }
                }
            }
        }
    }
}

/// A bundle polled in a loop by a thread of its own (a target that serves
/// while the test's thread sends), until `stop`.
pub struct Poller {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

/// Starts polling `b` on a thread of its own.
pub fn poll_on_thread(b: &std::sync::Arc<ramp::am::Bundle>) -> Poller {
    use std::sync::atomic::{AtomicBool, Ordering};
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let (b, s) = (b.clone(), stop.clone());
    let thread = std::thread::spawn(move || {
        while !s.load(Ordering::SeqCst) {
            b.poll().unwrap();
        }
    });
    Poller { stop, thread }
}

impl Poller {
    /// Stops the polling thread and waits for it (its panic, if any, is
    /// the test's).
    pub fn stop(self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        self.thread.join().unwrap();
    }
}
