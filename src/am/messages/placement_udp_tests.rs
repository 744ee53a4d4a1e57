//! Long messages placed over real UDP sockets, each packet under the job
//! key's MAC: bursts of long requests to one offset wait in the target's
//! socket while it does not poll, then come in receive batches of several.
//! Each is placed into the segment straight from the batch (the receive
//! stops after a message placed whole until its handler ran: `driver.rs`,
//! `placed_ahead`), never gathered into a buffer and copied in at
//! dispatch; each handler runs once, on its own bytes.

use std::sync::Arc;

use parking_lot::Mutex;

use crate::am::{self, handler, BundleMode, Data, Message, SegmentMemory, VecSegment};
use crate::config::Config;

/// Where every request's bytes go, and how many: one datagram each.
const OFF: u64 = 100;
const LEN: usize = 60_000;

/// Byte `i` of message `k`.
fn pattern(k: u32, i: usize) -> u8 {
    (i as u32).wrapping_mul(131).wrapping_add(k.wrapping_mul(7)) as u8
}

#[test]
fn long_requests_behind_one_another_in_a_batch_are_each_placed_not_copied() {
    let cfg = Config::from_lookup(|k| match k {
        crate::config::JOB_KEY => Some("placement-udp-tests-job-key".into()),
        crate::config::TRANSPORT => Some("udp".into()),
        _ => None,
    })
    .unwrap();
    assert!(cfg.mac_job_key().unwrap().is_some(), "the MAC on");
    am::init().unwrap();
    // a bundle each: the target is polled only when the test says
    let b0 = am::allocate_bundle(BundleMode::Seq).unwrap();
    let b1 = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e0 = am::allocate_endpoint_with(&b0, &cfg).unwrap();
    let e1 = am::allocate_endpoint_with(&b1, &cfg).unwrap();
    for e in [&e0, &e1] {
        e.set_tag(9);
        e.map(0, e0.name(), 9).unwrap();
        e.map(1, e1.name(), 9).unwrap();
        e.set_expected_resources(2, 32).unwrap();
    }
    let seg = VecSegment::new(OFF as usize + LEN);
    e1.set_segment(Some(seg.clone()));
    // (message, whether its handler saw its own bytes), as they ran
    let seen = Arc::new(Mutex::new(Vec::<(u32, bool)>::new()));
    let (s2, seg2) = (seen.clone(), seg.clone());
    e1.set_handler(
        10,
        handler(move |h| {
            let Data::Long { addr, len } = h.data else {
                panic!("a long request")
            };
            let k = h.args[0];
            let off = addr - seg2.base();
            let snap = seg2.snapshot();
            let own = off == OFF as usize
                && len == LEN
                && (0..LEN).all(|i| snap[off + i] == pattern(k, i));
            s2.lock().push((k, own));
        }),
    );
    let (rounds, per) = (30u32, 16u32);
    let mut sent = 0u32;
    for _ in 0..rounds {
        for _ in 0..per {
            let data: Vec<u8> = (0..LEN).map(|i| pattern(sent, i)).collect();
            e0.request(1, &Message::long(10, &[sent], &data, OFF), false)
                .unwrap();
            sent += 1;
        }
        // the sender moves what its window lets go, the target takes it
        // in batches; until every handler of the round ran and replied
        // (a bound on the polls, not a clock: loopback never loses)
        let mut polls = 0u64;
        while seen.lock().len() < sent as usize || e0.unanswered_requests() > 0 {
            polls += 1;
            assert!(polls < 20_000_000, "stuck at {}", seen.lock().len());
            b0.poll().unwrap();
            b0.poll().unwrap();
            b1.poll().unwrap();
        }
    }
    let seen = seen.lock().clone();
    assert_eq!(seen.len(), sent as usize, "each handler once");
    let mut ks: Vec<u32> = seen.iter().map(|&(k, _)| k).collect();
    ks.sort_unstable();
    assert!(ks.iter().copied().eq(0..sent), "every message, once");
    let wrong: Vec<u32> = seen.iter().filter(|s| !s.1).map(|s| s.0).collect();
    assert!(wrong.is_empty(), "handlers that saw other bytes: {wrong:?}");
    let placed = e1.with(|s| s.placed_runs);
    let batches = e1.statistics();
    assert_eq!(
        placed,
        u64::from(sent),
        "placed as they came, of {sent} ({} packets received)",
        batches.packets_received
    );
}
