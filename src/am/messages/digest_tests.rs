//! Requests of one datagram under the packet MAC, copied and hashed in one
//! pass when handed in (`Protocol::payload_sealed`, `wire/mac_digest.rs`),
//! their packets' tags made of the digest, the first time and when resent:
//! with 128 credits and a window of 64 the stream queues behind the window
//! (sent a window after the copy), and a tap loses one datagram in seven,
//! so resent packets carry new nonces over the same digest. Every message
//! arrives whole, in order, its bytes its own (a tag that did not check
//! would have its packet refused and resent forever). In the simulated
//! world, on virtual time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::am::handler::args::{handler, Data, SegmentMemory, VecSegment};
use crate::am::handler::message::Message;
use crate::am::tests::{cfg, pair};
use crate::rng::Rng;
use crate::sim::{seeds, World};
use crate::time::MILLIS;
use crate::wire::DIGEST_SEALS;

/// The bytes of message `i` of `len` bytes.
fn bytes_of(i: u64, len: usize) -> Vec<u8> {
    let mut r = Rng::new(i + 1);
    (0..len).map(|_| r.next_u64() as u8).collect()
}

#[test]
fn requests_sealed_from_their_copys_digest_arrive_intact_and_in_order_through_loss() {
    const COUNT: u64 = 160;
    const MAX: usize = 60_000;
    for seed in seeds(2) {
        let w = World::seeded(seed);
        let mut c = cfg();
        c.proto.mac = Some(crate::wire::mac::MacKey::from_job_key(
            "0123456789abcdef0123456789abcdef",
        ));
        let (n0, n1) = pair(&w, &c, 128);
        let (e0, e1) = (&n0.ep, &n1.ep);
        let seg = VecSegment::new(MAX);
        e1.set_segment(Some(seg.clone()));
        let sizes: Vec<usize> = {
            let mut r = Rng::new(seed);
            (0..COUNT)
                .map(|_| 8192 + r.below((MAX - 8192) as u64) as usize)
                .collect()
        };
        // each handler checks that the segment holds its message's bytes
        let (got, bad) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let (g, b, sz, s) = (got.clone(), bad.clone(), sizes.clone(), seg.clone());
        let base = seg.base();
        e1.set_handler(
            10,
            handler(move |h| {
                let n = g.fetch_add(1, Ordering::SeqCst);
                assert_eq!(h.args, &[n as u32][..], "in order");
                let len = sz[n as usize];
                let ok = matches!(h.data, Data::Long { addr, len: l } if addr == base && l == len)
                    && s.snapshot()[..len] == bytes_of(n, len)[..];
                if !ok {
                    b.fetch_add(1, Ordering::SeqCst);
                }
            }),
        );
        // a returned request (its packets refused: a tag that did not
        // check) is counted, not fatal
        let returned = Arc::new(AtomicU64::new(0));
        let ret = returned.clone();
        e0.set_handler(
            0,
            handler(move |_| {
                ret.fetch_add(1, Ordering::SeqCst);
            }),
        );
        // one large datagram in seven lost (resent with new nonces)
        let mut k = 0u64;
        w.tap(move |_, _, d| {
            k += u64::from(d.len() > 8192);
            d.len() <= 8192 || k % 7 != 3
        });
        // the association first (the first request's copy has no key yet)
        e0.request(
            1,
            &Message::long(10, &[0], &bytes_of(0, sizes[0]), 0),
            false,
        )
        .unwrap();
        assert!(w.run_until(100 * MILLIS, || got.load(Ordering::SeqCst) == 1));
        let before = (DIGEST_SEALS.load(Ordering::Relaxed), e0.statistics());
        for i in 1..COUNT {
            let payload = bytes_of(i, sizes[i as usize]);
            e0.request(1, &Message::long(10, &[i as u32], &payload, 0), false)
                .unwrap();
        }
        assert!(
            w.run_until(5000 * MILLIS, || got.load(Ordering::SeqCst) == COUNT),
            "seed {seed}: {} of {COUNT} delivered, {} returned",
            got.load(Ordering::SeqCst),
            returned.load(Ordering::SeqCst)
        );
        assert_eq!(bad.load(Ordering::SeqCst), 0, "seed {seed}: bytes");
        let (sealed, after) = (DIGEST_SEALS.load(Ordering::Relaxed), e0.statistics());
        let resent = after.requests_retransmitted[2] - before.1.requests_retransmitted[2];
        assert!(
            sealed - before.0 >= COUNT - 1 + resent && resent > 0,
            "seed {seed}: {} packets sealed from a digest, {} requests and {resent} resent",
            sealed - before.0,
            COUNT - 1
        );
    }
}
