//! Pairs of endpoints over real UDP sockets for the tests of the AM layer
//! over UDP (`am_udp*.rs`, which include this file beside `common`): two
//! in one process (`pair_with`), the same through a counting relay
//! (`pair_via_relay`, `Relay`), and one in each of two processes, the
//! parent starting this test binary again as the child (`udp_parent`,
//! `udp_child`).
#![allow(dead_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ramp::am::{self, BundleMode};

pub fn pair_with(
    cfg: &ramp::config::Config,
) -> (Arc<am::Bundle>, Arc<am::Endpoint>, Arc<am::Endpoint>) {
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e0 = am::allocate_endpoint_with(&b, cfg).unwrap();
    let e1 = am::allocate_endpoint_with(&b, cfg).unwrap();
    for e in [&e0, &e1] {
        e.set_tag(9);
        e.map(0, e0.name(), 9).unwrap();
        e.map(1, e1.name(), 9).unwrap();
        e.set_expected_resources(2, 4).unwrap();
    }
    (b, e0, e1)
}

/// `pair_with`, e0 and e1 reaching each other through a `Relay`.
pub fn pair_via_relay(
    cfg: &ramp::config::Config,
) -> (Arc<am::Bundle>, Arc<am::Endpoint>, Arc<am::Endpoint>, Relay) {
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e0 = am::allocate_endpoint_with(&b, cfg).unwrap();
    let e1 = am::allocate_endpoint_with(&b, cfg).unwrap();
    let relay = Relay::start(&e0, &e1);
    e0.map(1, am::EndpointName::from_addr(relay.to_e1), 9)
        .unwrap();
    e1.map(0, am::EndpointName::from_addr(relay.to_e0), 9)
        .unwrap();
    for e in [&e0, &e1] {
        e.set_tag(9);
        e.set_expected_resources(2, 4).unwrap();
    }
    (b, e0, e1, relay)
}

/// A relay between two endpoints over real UDP sockets, counting what it
/// forwards: e0 reaches e1 at `to_e1`, e1 reaches e0 at `to_e0`.
pub struct Relay {
    pub to_e0: std::net::SocketAddr,
    pub to_e1: std::net::SocketAddr,
    /// Datagrams and the packets in them: e0 -> e1, then e1 -> e0.
    counts: Arc<[AtomicU64; 4]>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Relay {
    pub fn start(e0: &am::Endpoint, e1: &am::Endpoint) -> Relay {
        use std::net::UdpSocket;
        let r0 = UdpSocket::bind("127.0.0.1:0").unwrap();
        let r1 = UdpSocket::bind("127.0.0.1:0").unwrap();
        let (to_e0, to_e1) = (r0.local_addr().unwrap(), r1.local_addr().unwrap());
        let counts: Arc<[AtomicU64; 4]> = Arc::new(Default::default());
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (a0, a1) = (e0.name().to_addr().unwrap(), e1.name().to_addr().unwrap());
        let thread = {
            let (counts, stop) = (counts.clone(), stop.clone());
            std::thread::spawn(move || {
                // busy: a forwarding delay of its own would change what
                // the endpoints send (a held fragment's time runs out)
                for s in [&r0, &r1] {
                    s.set_nonblocking(true).unwrap();
                }
                let integ = ramp::wire::Integrity::Crc32c;
                let mut buf = vec![0u8; 70000];
                while !stop.load(Ordering::SeqCst) {
                    std::hint::spin_loop();
                    for (i, rx, tx, to) in [(0, &r1, &r0, a1), (2, &r0, &r1, a0)] {
                        let Ok(n) = rx.recv(&mut buf) else { continue };
                        let d = &buf[..n];
                        let p = ramp::wire::packets(&integ, d).count() as u64;
                        counts[i].fetch_add(1, Ordering::SeqCst);
                        counts[i + 1].fetch_add(p, Ordering::SeqCst);
                        tx.send_to(d, to).unwrap();
                    }
                }
            })
        };
        Relay {
            to_e0,
            to_e1,
            counts,
            stop,
            thread: Some(thread),
        }
    }

    /// Datagrams and packets forwarded so far, e0 -> e1 and e1 -> e0.
    pub fn counts(&self) -> [u64; 4] {
        std::array::from_fn(|i| self.counts[i].load(Ordering::SeqCst))
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            // a failure in the relay is the test's (unless it fails already)
            if let Err(e) = t.join() {
                if !std::thread::panicking() {
                    std::panic::resume_unwind(e);
                }
            }
        }
    }
}

/// A UDP-only endpoint in a bundle of its own, with tag 9 (a parent's or
/// a child's end of the two-process tests below).
pub fn udp_endpoint() -> (Arc<am::Bundle>, Arc<am::Endpoint>) {
    let mut cfg = ramp::config::Config::from_lookup(|_| None).unwrap();
    cfg.transport = ramp::config::TransportChoice::Udp;
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e = am::allocate_endpoint_with(&b, &cfg).unwrap();
    e.set_tag(9);
    (b, e)
}

/// The child's end: `udp_endpoint` with its parent (whose name, in hex, is
/// in `parent_var`) at index 0 and `depth` credits; None when this process
/// is not that child.
pub fn udp_child(parent_var: &str, depth: i32) -> Option<(Arc<am::Bundle>, Arc<am::Endpoint>)> {
    let parent = std::env::var_os(parent_var)?;
    let (b, e) = udp_endpoint();
    e.map(
        0,
        crate::common::parse_name_hex(parent.to_str().unwrap()),
        9,
    )
    .unwrap();
    e.set_expected_resources(1, depth).unwrap();
    Some((b, e))
}

/// The parent's end: `udp_endpoint`, and this test binary started again
/// as the child running test `child` (told our name in `parent_var`, its
/// standard input piped), mapped at index 1, `depth` credits.
pub fn udp_parent(
    child: &str,
    parent_var: &str,
    depth: i32,
) -> (
    Arc<am::Bundle>,
    Arc<am::Endpoint>,
    std::process::Child,
    crate::common::ChildLines,
) {
    let (b, e) = udp_endpoint();
    let (proc, lines, name) = crate::common::spawn_named(
        std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", child, "--nocapture", "--test-threads=1"])
            .env(parent_var, crate::common::name_hex(&e.name()))
            .stdin(std::process::Stdio::piped()),
    );
    e.map(1, name, 9).unwrap();
    e.set_expected_resources(2, depth).unwrap();
    (b, e, proc, lines)
}
