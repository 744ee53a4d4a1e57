//! CPU cost of the protocol core alone (no sockets): one request and its
//! reply between two `Protocol`s fed directly. Prints ns per round trip.

use std::net::SocketAddr;
use std::time::Instant as StdInstant;

use ramp::proto::{Event, ProtoConfig, Protocol};
use ramp::time::Instant;
use ramp::wire::{Category, MsgKind, MsgMeta, CHANNEL_REPLY, CHANNEL_REQUEST};

fn main() {
    let a_addr: SocketAddr = "127.0.0.1:1000".parse().unwrap();
    let b_addr: SocketAddr = "127.0.0.1:2000".parse().unwrap();
    let mut a: Protocol<SocketAddr> = Protocol::new(ProtoConfig::default(), &[1; 32]);
    let mut b: Protocol<SocketAddr> = Protocol::new(ProtoConfig::default(), &[2; 32]);
    let iters: usize = std::env::var("ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let mut buf = Vec::new();
    let t = StdInstant::now();
    for i in 0..iters {
        let now = Instant(i as u64 * 10_000);
        let mut m = MsgMeta::new(MsgKind::User, Category::Short, 10, &[1, 2, 3, 4]);
        m.txn = i as u32;
        a.send(now, b_addr, CHANNEL_REQUEST, m, Vec::new());
        while a.poll_transmit(&mut buf).is_some() {
            b.handle_datagram(now, a_addr, &buf);
        }
        b.handle_timeout(now);
        while let Some(ev) = b.poll_event() {
            if let Event::Delivered { meta, .. } = ev {
                let r = MsgMeta {
                    txn: meta.txn,
                    ..MsgMeta::new(MsgKind::User, Category::Short, 11, &[])
                };
                b.send(now, a_addr, CHANNEL_REPLY, r, Vec::new());
            }
        }
        while b.poll_transmit(&mut buf).is_some() {
            a.handle_datagram(now, b_addr, &buf);
        }
        a.handle_timeout(now);
        while a.poll_event().is_some() {}
    }
    let ns = t.elapsed().as_nanos() as f64 / iters as f64;
    println!(
        "protocol core: {ns:.0} ns of CPU per request/reply round trip (both sides, no syscalls)"
    );
}
