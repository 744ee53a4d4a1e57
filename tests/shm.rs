//! The shared-memory transport between real processes (`RAMP_TRANSPORT=shm`):
//! every category with few credits, returned messages, a peer killed with
//! SIGKILL (its messages return EUNREACHABLE, nothing hangs), and no file
//! left in /dev/shm after a clean exit or after kill -9 of every process
//! (the files are memfds: nothing has a name), the dead peer's unmapped.
//!
//! The peers are this test binary again, run with `RAMP_SHM_CHILD` set and
//! only `child` selected.

mod common;

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ramp::am::{self, handler, BundleMode, Data, EndpointName, Message, VecSegment};

const TAG: u64 = 0x5117;

/// The tests count this process's files: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn config(extra: &[(&str, &str)]) -> ramp::config::Config {
    ramp::config::Config::from_lookup(|k| {
        if k == "RAMP_TRANSPORT" {
            return Some("shm".into());
        }
        extra
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.to_string())
            .or_else(|| std::env::var(k).ok())
    })
    .unwrap()
}

/// The shared-memory files (memfds) process `pid` holds open, each with the
/// bitmask of sending slots in use (the header: magic, the owner's pid, ...,
/// the mask at byte 384), read through /proc/PID/fd.
fn memfds_of(pid: u32) -> Vec<(std::path::PathBuf, u64)> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return out; // gone
    };
    for e in dir.flatten() {
        let Ok(link) = std::fs::read_link(e.path()) else {
            continue;
        };
        if !link.to_string_lossy().starts_with("/memfd:ramp-shm.") {
            continue;
        }
        let mut h = [0u8; 392];
        let ok = std::fs::File::open(e.path()).and_then(|mut f| f.read_exact(&mut h));
        if ok.is_ok()
            && &h[..8] == b"RAMPSHM1"
            && u32::from_le_bytes(h[8..12].try_into().unwrap()) == pid
        {
            out.push((
                e.path(),
                u64::from_le_bytes(h[384..392].try_into().unwrap()),
            ));
        }
    }
    out
}

/// Files in /dev/shm with a ramp header naming `pid` as owner (what
/// versions before the memfd left when killed).
fn dev_shm_files_of(pid: u32) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir("/dev/shm").unwrap().flatten() {
        let mut h = [0u8; 12];
        let ok = std::fs::File::open(e.path()).and_then(|mut f| f.read_exact(&mut h));
        if ok.is_ok()
            && &h[..8] == b"RAMPSHM1"
            && u32::from_le_bytes(h[8..12].try_into().unwrap()) == pid
        {
            n += 1;
        }
    }
    n
}

/// Shared-memory mappings of this process that belong to another
/// endpoint's file (a sender's rings), by /proc/self/maps.
fn mapped_rings_of_others() -> usize {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let ours: Vec<String> = memfds_of(std::process::id())
        .iter()
        .filter_map(|(p, _)| std::fs::read_link(p).ok())
        .map(|l| {
            l.to_string_lossy()
                .trim_end_matches(" (deleted)")
                .to_string()
        })
        .collect();
    maps.lines()
        .filter_map(|l| {
            l.find("/memfd:ramp-shm.")
                .map(|i| l[i..].trim_end_matches(" (deleted)"))
        })
        .filter(|m| !ours.iter().any(|o| o == m))
        .count()
}

/// A peer process: `server` answers handler 10 (a short reply with the sum
/// of its arguments and its data length) and 12 (a medium reply echoing the
/// payload) until its stdin closes; `client` (given `RAMP_SHM_SERVER`)
/// sends to the server until it is killed; `staller` never polls.
#[test]
fn child() {
    let Ok(role) = std::env::var("RAMP_SHM_CHILD") else {
        return;
    };
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e = am::allocate_endpoint(&b).unwrap();
    e.set_tag(TAG);
    e.set_segment(Some(VecSegment::new(1 << 16)));
    e.set_handler(
        10,
        handler(|h| {
            let n = match &h.data {
                Data::Medium(d) => d.len(),
                Data::Long { len, .. } => *len,
                _ => 0,
            } as u32;
            let s = h.args.iter().sum::<u32>() + n;
            am::reply(h.token, &Message::short(11, &[s])).unwrap();
        }),
    );
    e.set_handler(
        12,
        handler(|h| {
            if let Data::Medium(d) = &h.data {
                am::reply(h.token, &Message::medium(13, h.args, d)).unwrap();
            }
        }),
    );
    e.set_handler(11, handler(|_| {}));
    // the client's requests are refused (not mapped there): they come back
    e.set_handler(0, handler(|_| {}));
    let parent = common::parse_name_hex(&std::env::var("RAMP_SHM_PARENT").unwrap());
    e.map(0, parent, TAG).unwrap();
    let server = std::env::var("RAMP_SHM_SERVER").ok();
    if let Some(s) = &server {
        e.map(1, common::parse_name_hex(s), TAG).unwrap();
    }
    e.set_expected_resources(2, 4).unwrap();
    println!("NAME {}", common::name_hex(&e.name()));
    let done = common::stdin_closed();
    if role == "staller" {
        // never polls: what is sent to it waits
        while !done.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(10));
        }
        return;
    }
    if role == "client" {
        while !done.load(Ordering::SeqCst) {
            e.request(1, &Message::short(10, &[1]), false).unwrap();
            b.poll().unwrap();
        }
    }
    while !done.load(Ordering::SeqCst) {
        b.poll().unwrap();
        b.wait_for_activity(10);
    }
    // exits without freeing the endpoint: the file goes at exit all the same
}

fn spawn(
    role: &str,
    parent: &EndpointName,
    server: Option<&EndpointName>,
) -> (Child, EndpointName) {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env("RAMP_SHM_CHILD", role)
        .env("RAMP_TRANSPORT", "shm")
        .env("RAMP_SHM_PARENT", common::name_hex(parent))
        .stdin(Stdio::piped());
    if let Some(s) = server {
        cmd.env("RAMP_SHM_SERVER", common::name_hex(s));
    }
    let (child, lines, name) = common::spawn_named(&mut cmd);
    // the harness writes more: keep reading, or it fails on EPIPE
    std::thread::spawn(move || lines.for_each(drop));
    (child, name)
}

#[test]
fn every_category_with_few_credits_between_processes() {
    let _watchdog = common::watchdog(
        "shm::every_category_with_few_credits_between_processes",
        Duration::from_secs(120),
    );
    if std::env::var_os("RAMP_SHM_CHILD").is_some() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e = am::allocate_endpoint_with(&b, &config(&[])).unwrap();
    let (mut child, name) = spawn("server", &e.name(), None);
    e.set_tag(TAG);
    e.map(1, name, TAG).unwrap();
    e.set_expected_resources(2, 2).unwrap();
    let sums = Arc::new(AtomicU64::new(0));
    let echoes = Arc::new(AtomicU64::new(0));
    let returned = Arc::new(AtomicU64::new(0));
    let s = sums.clone();
    e.set_handler(
        11,
        handler(move |h| {
            s.fetch_add(h.args[0] as u64, Ordering::SeqCst);
        }),
    );
    let ec = echoes.clone();
    e.set_handler(
        13,
        handler(move |h| {
            let k = h.args[0] as u8;
            match &h.data {
                Data::Medium(d) if d.iter().all(|&x| x == k) => {
                    ec.fetch_add(1, Ordering::SeqCst);
                }
                _ => panic!("echo corrupted"),
            }
        }),
    );
    let r = returned.clone();
    e.set_handler(
        0,
        handler(move |_| {
            r.fetch_add(1, Ordering::SeqCst);
        }),
    );
    let n = 300u32;
    let mut want = 0u64;
    for k in 0..n {
        let big = vec![k as u8; 1000 + (k as usize * 37) % 30000];
        e.request(1, &Message::short(10, &[k, 1]), false).unwrap();
        e.request(
            1,
            &Message::medium(12, &[k % 256], &big[..k as usize % 4000]),
            false,
        )
        .unwrap();
        e.request(1, &Message::long(10, &[k], &big, 64), false)
            .unwrap();
        want += (k + 1) as u64 + (k as u64 + big.len() as u64);
    }
    // a handler the server never set: the message comes back
    e.request(1, &Message::short(200, &[]), false).unwrap();
    common::waiting_for("every answer and the returned message");
    while sums.load(Ordering::SeqCst) < want
        || echoes.load(Ordering::SeqCst) < n as u64
        || returned.load(Ordering::SeqCst) < 1
    {
        b.poll().unwrap();
    }
    assert_eq!(sums.load(Ordering::SeqCst), want);
    assert_eq!(echoes.load(Ordering::SeqCst), n as u64);
    let st = e.statistics();
    assert_eq!(st.requests_sent, [n as u64 + 1, n as u64, n as u64]);

    // both ends have a ring file, and ours writes into the server's;
    // neither has a name in /dev/shm
    let theirs = memfds_of(child.id());
    assert_eq!(theirs.len(), 1, "the server has one ring file");
    assert_ne!(
        theirs[0].1, 0,
        "a sender slot of the server's file is in use"
    );
    assert_eq!(memfds_of(std::process::id()).len(), 1);
    assert!(mapped_rings_of_others() >= 1, "we map the server's file");
    assert_eq!(dev_shm_files_of(child.id()), 0);
    assert_eq!(dev_shm_files_of(std::process::id()), 0);

    drop(child.stdin.take()); // the server ends, exiting normally
    assert!(child.wait().unwrap().success());
    am::free_endpoint(&e).unwrap();
    drop(e);
    assert!(memfds_of(std::process::id()).is_empty());
    assert_eq!(mapped_rings_of_others(), 0, "the server's file is unmapped");
}

#[test]
fn killed_peer_returns_unreachable_and_kill_9_of_all_leaves_no_files() {
    let _watchdog = common::watchdog(
        "shm::killed_peer_returns_unreachable_and_kill_9_of_all_leaves_no_files",
        Duration::from_secs(120),
    );
    if std::env::var_os("RAMP_SHM_CHILD").is_some() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e = am::allocate_endpoint_with(&b, &config(&[("RAMP_PEER_TIMEOUT_MS", "500")])).unwrap();
    let (mut server, name) = spawn("server", &e.name(), None);
    let (mut client, _) = spawn("client", &e.name(), Some(&name));
    e.set_tag(TAG);
    e.map(1, name, TAG).unwrap();
    e.set_expected_resources(2, 8).unwrap();
    let replies = Arc::new(AtomicU64::new(0));
    let unreachable = Arc::new(AtomicU64::new(0));
    let r = replies.clone();
    e.set_handler(
        11,
        handler(move |_| {
            r.fetch_add(1, Ordering::SeqCst);
        }),
    );
    let u = unreachable.clone();
    e.set_handler(
        0,
        handler(move |h| {
            if let Data::Returned { status, .. } = h.data {
                assert!(format!("{status:?}").contains("Unreachable"), "{status:?}");
                u.fetch_add(1, Ordering::SeqCst);
            }
        }),
    );
    e.request(1, &Message::short(10, &[1]), false).unwrap();
    common::waiting_for("the first reply");
    while replies.load(Ordering::SeqCst) < 1 {
        b.poll().unwrap();
        b.wait_for_activity(5);
    }
    // the server and the client that floods it die holding their rings
    assert_eq!(memfds_of(server.id()).len(), 1);
    server.kill().unwrap();
    client.kill().unwrap();
    server.wait().unwrap();
    client.wait().unwrap();
    let n = 100u64;
    for k in 0..n {
        // blocks (polling) while the credits are out
        e.request(1, &Message::medium(10, &[k as u32], &[7u8; 200]), false)
            .unwrap();
    }
    common::waiting_for("every request to come back EUNREACHABLE");
    while unreachable.load(Ordering::SeqCst) < n {
        b.poll().unwrap();
        b.wait_for_activity(5);
    }
    // kill -9 left nothing to clean up: no file has a name, and the dead
    // server's file is no longer mapped here (its memory is gone)
    assert_eq!(dev_shm_files_of(server.id()), 0);
    assert_eq!(dev_shm_files_of(client.id()), 0);
    // the dead server's file is unmapped
    common::waiting_for("the dead server's file to be unmapped");
    while mapped_rings_of_others() > 0 {
        b.poll().unwrap();
        b.wait_for_activity(5);
    }
    am::free_endpoint(&e).unwrap();
    drop(e);
}

#[test]
fn a_receiver_that_stops_polling_holds_up_only_its_own_traffic() {
    let _watchdog = common::watchdog(
        "shm::a_receiver_that_stops_polling_holds_up_only_its_own_traffic",
        Duration::from_secs(120),
    );
    if std::env::var_os("RAMP_SHM_CHILD").is_some() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e = am::allocate_endpoint_with(&b, &config(&[])).unwrap();
    let (mut staller, stalled) = spawn("staller", &e.name(), None);
    let (mut server, busy) = spawn("server", &e.name(), None);
    e.set_tag(TAG);
    e.map(1, stalled, TAG).unwrap();
    e.map(2, busy, TAG).unwrap();
    let depth = 8u32;
    e.set_expected_resources(3, depth as i32).unwrap();
    let replies = Arc::new(AtomicU64::new(0));
    let returned = Arc::new(AtomicU64::new(0));
    let r = replies.clone();
    e.set_handler(
        11,
        handler(move |_| {
            r.fetch_add(1, Ordering::SeqCst);
        }),
    );
    let rt = returned.clone();
    e.set_handler(
        0,
        handler(move |_| {
            rt.fetch_add(1, Ordering::SeqCst);
        }),
    );
    // every credit towards the stalled receiver spent, with large messages
    let big = vec![3u8; 60_000];
    for k in 0..depth {
        e.request(1, &Message::medium(10, &[k], &big), false)
            .unwrap();
    }
    // the other receiver's traffic flows all the same
    let n = 3000u64;
    for k in 0..n {
        e.request(2, &Message::medium(10, &[k as u32], &big[..1000]), false)
            .unwrap();
    }
    while replies.load(Ordering::SeqCst) < n {
        b.poll().unwrap();
    }
    assert_eq!(replies.load(Ordering::SeqCst), n);
    assert_eq!(returned.load(Ordering::SeqCst), 0, "nothing came back");
    drop(staller.stdin.take());
    drop(server.stdin.take());
    assert!(staller.wait().unwrap().success());
    assert!(server.wait().unwrap().success());
    am::free_endpoint(&e).unwrap();
    drop(e);
}
