//! The direct path's trust rule, between simulated processes
//! (`sim::World`, virtual time) whose shared-memory rings and direct
//! copies are real (one process): a descriptor that comes by the network
//! is never honoured, even one carrying the pid and the secret of a real
//! ring (read here from the sender's side), while the same descriptor
//! through that ring is (the control that shows the test can fail); the
//! same for a direct Xfer's descriptor. The seeds `sim::seeds` gives.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::rma_direct::Desc;
use super::xfer_direct::encode;
use super::xfer_split::claim;
use crate::am::handler::message::XFER_FLAG;
use crate::am::state::region::{REGION_READ, REGION_WRITE};
use crate::am::{Endpoint, SegmentMemory, VecSegment};
use crate::config::{Config, TransportChoice};
use crate::sim::{seeds, World};
use crate::time::{Nanos, MILLIS};
use crate::wire::{MsgKind, CHANNEL_REQUEST};

const TAG: u64 = 0xc3a;
const N: usize = 64 << 10;
/// Virtual time within which what a test waits for comes: a few round
/// trips and the rings' set-up, with room to spare.
const SOON: Nanos = 10 * MILLIS;

fn counts(e: &Endpoint) -> (u64, u64) {
    e.with(|s| (s.stats.corrupt_dropped, s.rma.direct_counts[2]))
}

#[test]
fn a_descriptor_by_udp_is_ignored_even_with_a_real_secret() {
    for seed in seeds(2) {
        descriptors_by_the_network_are_ignored(seed);
    }
}

fn descriptors_by_the_network_are_ignored(seed: u64) {
    let w = World::seeded(seed);
    let node = |transport| {
        let mut cfg = Config::from_lookup(|_| None).unwrap();
        cfg.transport = transport;
        w.node(&cfg).ep
    };
    // the target (rings and the network), a peer with rings too, an
    // attacker on the network only
    let target = node(TransportChoice::Shm);
    let friend = node(TransportChoice::Shm);
    let attacker = node(TransportChoice::Udp);
    let eps = [&target, &friend, &attacker];
    for e in eps {
        e.set_tag(TAG);
        for (i, p) in eps.iter().enumerate() {
            e.map(i as i64, p.name(), TAG).unwrap();
        }
        e.set_expected_resources(3, 8).unwrap();
    }
    let until = |what: &str, done: &dyn Fn() -> bool| {
        assert!(w.run_until(SOON, done), "not within {SOON} ns: {what}");
    };
    let region = VecSegment::new(N);
    let r = target
        .register_region(region.clone(), REGION_READ | REGION_WRITE)
        .unwrap();
    // the friend's ring to the target is set up after a first message
    let t0 = w.now();
    while !friend.ring_ready(0) {
        let op = friend.put(0, r, 0, &[0u8; 8], None, true).unwrap();
        assert_eq!(friend.wait_op(op).unwrap(), 0);
        assert!(w.now().since(t0) < SOON, "no ring to the target");
    }
    // the friend's ring to the target is in use: a direct put through it
    let op = friend.put(0, r, 0, &vec![0u8; N], None, true).unwrap();
    assert_eq!(friend.wait_op(op).unwrap(), 0);
    assert_eq!(friend.rma_direct_counts()[0], 1, "the friend goes direct");
    let (pid, secret) = friend
        .with(|s| s.transports.ring_to(target.addr()))
        .expect("a ring to the target");
    assert_eq!(attacker.with(|s| s.transports.ring_to(target.addr())), None);
    // what a put descriptor would copy into the region, and where a get
    // descriptor would write the region's bytes
    let bait = VecSegment::new(N);
    bait.write(0, &vec![0xabu8; N]);
    let victim = VecSegment::new(N);
    let desc = |addr: usize| Desc {
        region: r,
        notify: None,
        start: 0,
        total: N as u64,
        expiry: target.clock.now().as_nanos() + 10_000 * MILLIS,
        addr: addr as u64,
        pid,
        secret,
    };
    let send = |from: &Endpoint, kind, addr: usize, txn| {
        let meta = desc(addr).meta(kind, txn, TAG);
        let to = target.addr();
        from.with(|s| s.send_message(s.clock.now(), to, CHANNEL_REQUEST, meta, Vec::new()));
    };
    let (dropped0, copies0) = counts(&target);
    send(&attacker, MsgKind::Put, bait.base(), 77);
    send(&attacker, MsgKind::Get, victim.base(), 78);
    until("the forged descriptors", &|| {
        counts(&target).0 == dropped0 + 2
    });
    assert_eq!(counts(&target).1, copies0, "no copy performed");
    assert!(region.snapshot().iter().all(|&x| x == 0), "region written");
    assert!(victim.snapshot().iter().all(|&x| x == 0), "memory written");
    // the same descriptor through the friend's ring is honoured
    send(&friend, MsgKind::Put, bait.base(), 79);
    until("the ring's descriptor", &|| {
        counts(&target).1 == copies0 + 1
    });
    assert!(region.snapshot().iter().all(|&x| x == 0xab));
    // a direct Xfer (`xfer_direct.rs`): the same descriptor as a long
    // request's payload runs no handler and writes nothing by UDP, and is
    // honoured through the ring
    let seg = VecSegment::new(N);
    target.set_segment(Some(seg.clone()));
    let runs = Arc::new(AtomicU64::new(0));
    let rn = runs.clone();
    target.set_handler(
        20,
        crate::am::handler(move |_| {
            rn.fetch_add(1, Ordering::SeqCst);
        }),
    );
    let xfer = |from: &Endpoint, txn| {
        let mut meta = crate::am::Message::long(20, &[], &[], 0).meta(txn, TAG);
        meta.status = XFER_FLAG;
        let payload = encode(&desc(bait.base()), N as u64).to_vec();
        let to = target.addr();
        from.with(|s| s.send_message(s.clock.now(), to, CHANNEL_REQUEST, meta, payload));
    };
    let (dropped0, copies0) = counts(&target);
    xfer(&attacker, 80);
    until("the forged Xfer", &|| counts(&target).0 == dropped0 + 1);
    assert_eq!(counts(&target).1, copies0, "no copy performed");
    assert_eq!(runs.load(Ordering::SeqCst), 0, "a handler ran");
    assert!(seg.snapshot().iter().all(|&x| x == 0), "segment written");
    // through the ring but without its sender's claim word set (a sender
    // that withdrew): copied, yet no handler runs (the chunks will)
    xfer(&friend, 81);
    until("the unclaimed Xfer's copy", &|| {
        seg.snapshot().iter().all(|&x| x == 0xab)
    });
    w.run_for(SOON);
    assert_eq!(runs.load(Ordering::SeqCst), 0, "ran unclaimed");
    // claimed, as the sender does before sending: honoured
    seg.write(0, &vec![0u8; N]);
    let id = desc(0).region;
    let to = target.addr();
    let set = friend.with(|s| s.transports.claim_to(to, id as usize, 0, claim(id)));
    assert_eq!(set, Some(true));
    xfer(&friend, 82);
    until("the ring's Xfer", &|| runs.load(Ordering::SeqCst) == 1);
    assert!(seg.snapshot().iter().all(|&x| x == 0xab));
}
