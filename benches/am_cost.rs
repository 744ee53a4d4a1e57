//! CPU cost of a whole AM request/reply on one thread: two endpoints in one
//! process over real loopback sockets, beside the same pattern with two raw
//! UDP sockets. The difference is ramp's own work per round trip.

use std::net::UdpSocket;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use ramp::am::{self, handler, BundleMode, Message};

fn main() {
    let iters: usize = std::env::var("ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    let a = UdpSocket::bind("127.0.0.1:0").unwrap();
    let b = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (aa, ba) = (a.local_addr().unwrap(), b.local_addr().unwrap());
    let mut buf = [0u8; 2048];
    let msg = [1u8; 72];
    let t = Instant::now();
    for _ in 0..iters {
        a.send_to(&msg, ba).unwrap();
        let (n, _) = b.recv_from(&mut buf).unwrap();
        b.send_to(&buf[..n], aa).unwrap();
        a.recv_from(&mut buf).unwrap();
    }
    let raw = t.elapsed().as_nanos() as f64 / iters as f64;

    am::init().unwrap();
    let bun = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e0 = am::allocate_endpoint(bun.id).unwrap();
    let e1 = am::allocate_endpoint(bun.id).unwrap();
    for e in [&e0, &e1] {
        e.set_tag(5);
        e.map(0, e0.name(), 5).unwrap();
        e.map(1, e1.name(), 5).unwrap();
        e.set_expected_resources(2, 16).unwrap();
    }
    e1.set_handler(
        10,
        handler(|h| am::reply(h.token, &Message::short(11, &[])).unwrap()),
    );
    let got = Arc::new(AtomicU64::new(0));
    let g = got.clone();
    e0.set_handler(
        11,
        handler(move |_| {
            g.fetch_add(1, Ordering::Relaxed);
        }),
    );
    // EMPTY_POLLS=k: k polls that find nothing per round trip (their cost
    // is what a busy-polling receiver spends between arrivals)
    let empty: usize = std::env::var("EMPTY_POLLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let t = Instant::now();
    for i in 0..iters as u64 {
        for _ in 0..empty {
            e1.poll().unwrap();
        }
        e0.request(1, &Message::short(10, &[]), false).unwrap();
        while got.load(Ordering::Relaxed) <= i {
            e1.poll().unwrap();
            e0.poll().unwrap();
        }
    }
    let rampt = t.elapsed().as_nanos() as f64 / iters as f64;
    println!("one thread, loopback: raw UDP {raw:.0} ns per round trip, ramp {rampt:.0} ns, ramp's own work {:.0} ns", rampt - raw);
}
