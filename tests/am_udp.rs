//! The AM layer over real UDP sockets, two endpoints in one process.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ramp::am::{self, handler, BundleMode, Data, VecSegment};
use ramp::wire::Category;

fn setup() -> (Arc<am::Bundle>, Arc<am::Endpoint>, Arc<am::Endpoint>) {
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e0 = am::allocate_endpoint(b.id).unwrap();
    let e1 = am::allocate_endpoint(b.id).unwrap();
    for e in [&e0, &e1] {
        e.set_tag(77);
        e.map(0, e0.name(), 77).unwrap();
        e.map(1, e1.name(), 77).unwrap();
        e.set_expected_resources(2, 8).unwrap();
    }
    (b, e0, e1)
}

#[test]
fn request_reply_every_category() {
    let (b, e0, e1) = setup();
    let seg = VecSegment::new(4096);
    e1.set_segment(Some(seg.clone()));
    let got = Arc::new(AtomicU64::new(0));
    let replies = Arc::new(AtomicU64::new(0));
    let g = got.clone();
    e1.set_handler(
        10,
        handler(move |h| {
            let sum: u64 = h.args.iter().map(|&a| a as u64).sum();
            match &mut h.data {
                Data::None => {}
                Data::Medium(b) => assert_eq!(b.len(), 100),
                Data::Long { len, .. } => assert_eq!(*len, 1000),
                _ => panic!(),
            }
            g.fetch_add(sum, Ordering::SeqCst);
            am::reply(h.token, 11, Category::Short, &[7], &[], 0).unwrap();
        }),
    );
    let r = replies.clone();
    e0.set_handler(
        11,
        handler(move |h| {
            assert_eq!(h.args, &[7]);
            r.fetch_add(1, Ordering::SeqCst);
        }),
    );
    e0.request(1, 10, Category::Short, &[1, 2, 3], &[], 0, false)
        .unwrap();
    e0.request(1, 10, Category::Medium, &[5], &[9u8; 100], 0, false)
        .unwrap();
    e0.request(1, 10, Category::Long, &[], &[3u8; 1000], 64, false)
        .unwrap();
    let t0 = std::time::Instant::now();
    while replies.load(Ordering::SeqCst) < 3 {
        b.poll().unwrap();
        assert!(t0.elapsed().as_secs() < 10, "no replies");
    }
    assert_eq!(got.load(Ordering::SeqCst), 11);
    assert_eq!(&seg.snapshot()[64..1064], &[3u8; 1000][..]);
    let s = e0.statistics();
    assert_eq!(s.requests_sent, [1, 1, 1]);
    assert_eq!(s.replies_received, [3, 0, 0]);
}
