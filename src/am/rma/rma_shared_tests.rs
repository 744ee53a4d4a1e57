//! The handover's checks between simulated processes (`sim::World`,
//! virtual time) whose shared-memory transports and region files are
//! real (one process): hostile answers (a file not sealed, of a wrong
//! size, not live, not asked for) are never mapped; asks with a wrong
//! secret or tag get no file; the true ones do. The seeds `sim::seeds`
//! gives.

use std::sync::Arc;

use crate::am::rma::rma_shared::{ask_body, ANSWER, ASK};
use crate::am::state::region::{REGION_READ, REGION_WRITE};
use crate::am::state::rma::Cached;
use crate::am::Endpoint;
use crate::config::{Config, TransportChoice};
use crate::net::RegionMsg;
use crate::sim::{seeds, World};
use crate::sys::{memfd, memfd_unsealed, OwnedRegion};
use crate::time::MILLIS;

const TAG: u64 = 0x5ead;

fn answer(region: u32) -> Vec<u8> {
    let mut b = vec![ANSWER];
    b.extend_from_slice(&region.to_le_bytes());
    b
}

#[test]
fn hostile_answers_are_not_mapped_and_asks_are_checked() {
    for seed in seeds(2) {
        handover_checks(seed);
    }
}

fn handover_checks(seed: u64) {
    let w = World::seeded(seed);
    let mut cfg = Config::from_lookup(|_| None).unwrap();
    cfg.transport = TransportChoice::Shm;
    let (target, friend): (Arc<Endpoint>, Arc<Endpoint>) = (w.node(&cfg).ep, w.node(&cfg).ep);
    for e in [&target, &friend] {
        e.set_tag(TAG);
        e.map(0, target.name(), TAG).unwrap();
        e.map(1, friend.name(), TAG).unwrap();
        e.set_expected_resources(2, 8).unwrap();
    }
    let (r, _, _) = target
        .alloc_region(1 << 20, REGION_READ | REGION_WRITE)
        .unwrap();
    let t0 = w.now();
    while !friend.ring_ready(0) || !target.ring_ready(1) {
        let op = friend.put(0, r, 0, &[0u8; 8], None, true).unwrap();
        assert_eq!(friend.wait_op(op).unwrap(), 0);
        let op = target.put(1, r, 0, &[0u8; 8], None, true).unwrap();
        let _ = target.wait_op(op);
        assert!(w.now().since(t0) < 10 * MILLIS, "no rings");
    }
    let (to, from) = (target.addr(), friend.addr());

    // answers: only sealed, whole pages, live, asked for
    let mapped = |e: &Endpoint| e.rma_shared_counts()[1];
    let feed = |fd: std::os::fd::OwnedFd, asked: bool| {
        friend.with(|s| {
            s.rma.shared.map.clear();
            if asked {
                let later = s.clock.now().plus(1000 * MILLIS);
                s.rma.shared.map.insert((to, r), Cached::Not(later));
            }
            s.region_msg(RegionMsg {
                from: to,
                body: answer(r),
                fd: Some(fd),
            });
            matches!(s.rma.shared.map.get(&(to, r)), Some(Cached::Mapped(_)))
        })
    };
    let m0 = mapped(&friend);
    assert!(!feed(memfd_unsealed(4096 + 4096), true), "not sealed");
    assert!(!feed(memfd("t", 4096).unwrap().into(), true), "no data");
    assert!(
        !feed(memfd("t", 4096 + 100).unwrap().into(), true),
        "not pages"
    );
    assert!(
        !feed(memfd("t", 2 * 4096).unwrap().into(), true),
        "not live"
    );
    let good = OwnedRegion::new(4096).unwrap();
    assert!(!feed(good.fd_for_peer(true).unwrap(), false), "not asked");
    assert_eq!(mapped(&friend), m0);
    assert!(feed(good.fd_for_peer(true).unwrap(), true), "the control");
    assert_eq!(mapped(&friend), m0 + 1);
    friend.with(|s| s.rma.shared.map.clear());

    // asks: only with the ring slot's pid and secret, and an accepted tag
    let (pid, secret) = friend.with(|s| s.transports.ring_to(to)).unwrap();
    let handed = |e: &Endpoint| e.rma_shared_counts()[2];
    let ask = |body: Vec<u8>| {
        let before = handed(&target);
        target.with(|s| s.answer_ask(from, &body));
        handed(&target) - before
    };
    assert_eq!(ask(ask_body(r, TAG, pid, secret ^ 1)), 0, "wrong secret");
    assert_eq!(ask(ask_body(r, TAG, pid + 1, secret)), 0, "wrong pid");
    assert_eq!(ask(ask_body(r, TAG ^ 4, pid, secret)), 0, "wrong tag");
    assert_eq!(ask(ask_body(r + 1, TAG, pid, secret)), 0, "no such region");
    let mut short = ask_body(r, TAG, pid, secret);
    short.pop();
    assert_eq!(ask(short), 0, "malformed");
    assert_eq!(ask(ask_body(r, TAG, pid, secret)), 1, "the control");
    // a malformed ask, and a message that is neither an ask nor an
    // answer: dropped, and counted
    let dropped = || target.statistics().corrupt_dropped;
    let c0 = dropped();
    target.with(|s| s.answer_ask(from, &[ASK]));
    target.with(|s| {
        s.region_msg(RegionMsg {
            from,
            body: vec![0xEE, 1, 2],
            fd: None,
        })
    });
    assert_eq!(dropped(), c0 + 2);

    // a refused file: operations go the usual way, and arrive (a region
    // never asked for, so that no true answer comes meanwhile)
    let (r2, _, _) = target
        .alloc_region(1 << 20, REGION_READ | REGION_WRITE)
        .unwrap();
    friend.with(|s| {
        let later = s.clock.now().plus(5000 * MILLIS);
        s.rma.shared.map.insert((to, r2), Cached::Not(later));
        s.region_msg(RegionMsg {
            from: to,
            body: answer(r2),
            fd: Some(memfd_unsealed(4096 + (1 << 20))),
        });
    });
    let through = friend.rma_shared_counts()[0];
    let data: Vec<u8> = (0..100_000u32).map(|i| (i % 253) as u8).collect();
    let op = friend.put(0, r2, 7, &data, None, true).unwrap();
    assert_eq!(friend.wait_op(op).unwrap(), 0);
    let back = crate::am::VecSegment::new(data.len());
    let op = friend.get(0, r2, 7, back.clone(), true).unwrap();
    assert_eq!(friend.wait_op(op).unwrap(), 0);
    assert!(back.snapshot() == data);
    assert_eq!(
        friend.rma_shared_counts()[0],
        through,
        "not through a mapping"
    );
}
