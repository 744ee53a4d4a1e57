//! Shared memory between the ends of one job (`shm_proof.rs`): express
//! records pass, and datagrams are told proven (their trailers unchecked,
//! `wire::Integrity::SameHost`), only between the ends of one job, each
//! slot generation checked; a full proven ring drops rather than spills;
//! a process of another user gets no ring at all.

use std::net::SocketAddr;
use std::sync::Arc;

use super::tests::{fresh, link, open, prover, take};
use super::*;

/// `take`, each datagram with whether its slot's sender proved our job
/// (`ExpressLane::recv_proven`).
fn take_proven(t: &mut ShmTransport) -> Vec<(Vec<u8>, bool)> {
    let mut got = Vec::new();
    while t
        .recv_proven(&mut |d, proven| got.push((d.unwrap().0.to_vec(), proven)))
        .unwrap()
        > 0
    {}
    got
}

fn express_record() -> Vec<u8> {
    let x = super::super::express::Express {
        kind: super::super::express::ExpressKind::Request,
        handler: 9,
        nargs: 1,
        args: [7; super::super::express::MAX_ARGS],
        txn: 1,
        tag: 5,
    };
    let mut buf = [0u8; super::super::express::MAX_LEN];
    let n = x.encode(&mut buf);
    buf[..n].to_vec()
}

#[test]
fn express_records_pass_only_between_ends_of_one_job_each_slot_generation_checked() {
    let rec = express_record();
    // (receiver's key, sender's key, whether the lane is open)
    for (rk, sk, lane) in [
        (Some(1), Some(1), true),
        (None, None, true),
        (Some(1), Some(2), false),
        (Some(1), None, false),
        (None, Some(1), false),
    ] {
        let ((_k1, a1), (_k2, a2)) = (fresh(), fresh());
        let mut rx = open(a1);
        rx.set_express_prover(rk.and_then(prover));
        let mut tx = open(a2);
        tx.set_express_prover(sk.and_then(prover));
        assert!(link(&tx, &rx, a1));
        // the sender takes the lane only to a receiver of its job
        assert_eq!(tx.express_send(a1, &rec, false), lane, "{rk:?} {sk:?}");
        // a record written anyway, and a datagram of the protocol
        assert!(tx.express_send_unproven(a1, &rec));
        tx.send(Instant::ZERO, a1, b"RAdatagram").unwrap();
        let got = take(&mut rx);
        let express = got.iter().filter(|(b, _)| b[..] == rec[..]).count();
        assert_eq!(express, if lane { 2 } else { 0 }, "{rk:?} {sk:?}");
        assert!(got.iter().any(|(b, _)| &b[..] == b"RAdatagram"));
        assert_eq!(rx.take_express_refused(), if lane { 0 } else { 1 });
        assert_eq!(rx.take_express_refused(), 0);
        // the protocol's datagrams go without a checked trailer only
        // between the ends of one job (`wire::Integrity::SameHost`): from
        // another job's sender they are told unproven, and checked
        tx.send(Instant::ZERO, a1, b"RAunsealed").unwrap();
        assert_eq!(
            take_proven(&mut rx),
            vec![(b"RAunsealed".to_vec(), lane)],
            "{rk:?} {sk:?}"
        );
    }
    // a proven slot freed and claimed again by a sender of another job:
    // its records are judged by the new generation's proof
    let ((_k1, a1), (_k2, a2), (_k3, a3)) = (fresh(), fresh(), fresh());
    let mut rx = open(a1);
    rx.set_express_prover(prover(1));
    let mut good = open(a2);
    good.set_express_prover(prover(1));
    assert!(link(&good, &rx, a1));
    assert!(good.express_send(a1, &rec, false));
    assert_eq!(take(&mut rx).len(), 1);
    let slot = good.tx.get_mut().rings[0].as_ref().unwrap().slot;
    drop(good);
    rx.free_slot(slot);
    let mut other = open(a3);
    other.set_express_prover(prover(2));
    assert!(link(&other, &rx, a1));
    assert_eq!(other.tx.get_mut().rings[0].as_ref().unwrap().slot, slot);
    assert!(!other.express_send(a1, &rec, false));
    assert!(other.express_send_unproven(a1, &rec));
    assert!(take(&mut rx).is_empty());
    assert_eq!(rx.take_express_refused(), 1);
    // and its datagrams are checked (told unproven)
    other.send(Instant::ZERO, a1, b"RAunsealed").unwrap();
    assert_eq!(take_proven(&mut rx), vec![(b"RAunsealed".to_vec(), false)]);
}

/// A full ring whose receiver proved our job drops a datagram (its
/// protocol resends it) instead of spilling it to UDP: it may be unsealed
/// (`wire::Integrity::SameHost`), which the receiver would refuse there.
/// An unproven ring spills (`Transports::send_batch`).
#[test]
fn a_full_proven_ring_drops_what_an_unproven_one_spills() {
    struct Fallback(SocketAddr, Arc<std::sync::atomic::AtomicUsize>);
    impl Transport for Fallback {
        fn send(&mut self, _: Instant, _: SocketAddr, _: &[u8]) -> io::Result<()> {
            self.1.fetch_add(1, Relaxed);
            Ok(())
        }
        fn recv_batch(&mut self, _: &mut DatagramSink<'_>) -> io::Result<usize> {
            Ok(0)
        }
        fn local_addr(&self) -> SocketAddr {
            self.0
        }
        fn readable(&self) -> bool {
            false
        }
        fn fd(&self) -> RawFd {
            -1
        }
    }
    for (key, proven) in [(Some(1), true), (Some(2), false)] {
        let ((_k1, a1), (_k2, a2)) = (fresh(), fresh());
        let mut rx = open(a1);
        rx.set_express_prover(prover(1));
        let mut tx = open(a2);
        tx.set_express_prover(key.and_then(prover));
        assert!(link(&tx, &rx, a1));
        let spilled = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut set = super::super::Transports::new(Box::new(Fallback(a2, spilled.clone())));
        set.prefer(Box::new(tx));
        assert_eq!(set.express_open(a1), proven);
        let big = vec![b'R'; RECV_SLOT / 2];
        let n = 2 * RING / big.len();
        for _ in 0..n {
            set.send(Instant::ZERO, a1, &big).unwrap();
        }
        // the ring took some, then was full
        let got = take_proven(&mut rx);
        assert!(!got.is_empty() && got.len() < n);
        assert!(got.iter().all(|(_, p)| *p == proven));
        let by_udp = spilled.load(Relaxed);
        assert_eq!(by_udp, if proven { 0 } else { n - got.len() }, "{key:?}");
    }
}

/// A process of another user that asks for our ring (its HELLO on our
/// socket) gets no answer and no descriptor: the kernel's credentials
/// say who asks. The same ask from a process of our user is answered
/// (the check can fail). Needs root to run the other user's process
/// (uid 65534) and /usr/bin/python3 to speak from it; says so and skips
/// otherwise.
#[test]
fn a_process_of_another_user_gets_no_ring() {
    use std::io::{BufRead, BufReader, Write};
    use std::os::unix::process::CommandExt;
    let py = "/usr/bin/python3";
    if crate::sys::euid() != 0 || !std::path::Path::new(py).exists() {
        eprintln!("skipped: needs root and {py} (another user's process)");
        return;
    }
    const ASK: &str = r#"
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("")
s.sendto(bytes.fromhex(sys.argv[2]), b"\0" + bytes.fromhex(sys.argv[1]))
print("sent", flush=True)
sys.stdin.readline()
s.setblocking(False)
try:
    _, anc, _, _ = s.recvmsg(64, socket.CMSG_SPACE(4))
    print("answered" if anc else "answered without a descriptor", flush=True)
except BlockingIOError:
    print("none", flush=True)
"#;
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    for (uid, want) in [(None, "answered"), (Some(65534), "none")] {
        let (_k, a) = fresh();
        let rx = open(a);
        let name = stem(a);
        let mut cmd = std::process::Command::new(py);
        cmd.args(["-c", ASK, &hex(name.as_bytes()), &hex(HELLO)])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .current_dir("/");
        if let Some(u) = uid {
            cmd.uid(u).gid(u);
        }
        let mut child = cmd.spawn().unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "sent", "{uid:?}");
        // (the HELLO is in our socket: read it, answering if we will)
        rx.read_socket();
        child.stdin.take().unwrap().write_all(b"\n").unwrap();
        line.clear();
        out.read_line(&mut line).unwrap();
        assert_eq!(line.trim(), want, "{uid:?}");
        assert!(child.wait().unwrap().success());
    }
}
