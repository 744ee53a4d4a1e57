//! One endpoint of an AM_PAR bundle driven by two threads at once over
//! shared memory (`RAMP_TRANSPORT=shm`, the express lane on): both send
//! requests and poll, so each runs reply handlers for the other's requests
//! and waits for the endpoint (`sys/relock.rs`) while the other holds it;
//! the first alone for a while, then both.
//! Every request runs its handler once at the target and its reply once
//! here.

mod common;

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ramp::am::{self, handler, BundleMode, Message};

const TAG: u64 = 0x9a7;
const THREADS: usize = 2;
const PER_THREAD: usize = 20_000;

fn config() -> ramp::config::Config {
    ramp::config::Config::from_lookup(|k| match k {
        "RAMP_TRANSPORT" => Some("shm".into()),
        "RAMP_SHM_EXPRESS" => Some("1".into()),
        _ => std::env::var(k).ok(),
    })
    .unwrap()
}

/// A count per (thread, request) of one end's handler runs.
fn counts() -> Arc<Vec<AtomicU32>> {
    Arc::new(
        (0..THREADS * PER_THREAD)
            .map(|_| AtomicU32::new(0))
            .collect(),
    )
}

fn count(c: &[AtomicU32], args: &[u32]) {
    c[args[0] as usize * PER_THREAD + args[1] as usize].fetch_add(1, Ordering::SeqCst);
}

#[test]
fn two_threads_requesting_and_polling_one_endpoint_see_each_reply_once() {
    let _watchdog = common::watchdog(
        "shm_par::two_threads_requesting_and_polling_one_endpoint_see_each_reply_once",
        Duration::from_secs(180),
    );
    am::init().unwrap();
    let cfg = config();
    let b0 = am::allocate_bundle(BundleMode::Par).unwrap();
    let b1 = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e0 = am::allocate_endpoint_with(&b0, &cfg).unwrap();
    let e1 = am::allocate_endpoint_with(&b1, &cfg).unwrap();
    for e in [&e0, &e1] {
        e.set_tag(TAG);
        e.map(0, e0.name(), TAG).unwrap();
        e.map(1, e1.name(), TAG).unwrap();
        e.set_expected_resources(2, 16).unwrap();
    }
    let (ran, replied) = (counts(), counts());
    let r = ran.clone();
    e1.set_handler(
        10,
        handler(move |h| {
            count(&r, h.args);
            am::reply(h.token, &Message::short(11, h.args)).unwrap();
        }),
    );
    let total = Arc::new(AtomicUsize::new(0));
    let (r, n) = (replied.clone(), total.clone());
    e0.set_handler(
        11,
        handler(move |h| {
            count(&r, h.args);
            n.fetch_add(1, Ordering::SeqCst);
        }),
    );
    e0.set_handler(0, handler(|h| panic!("returned: {:?}", h.args)));
    // the target polled by a thread of its own
    let target = common::poll_on_thread(&b1);
    // thread 0 alone first, the other joining after: both at once
    let sent0 = Arc::new(AtomicUsize::new(0));
    let senders: Vec<_> = (0..THREADS)
        .map(|t| {
            let (b0, e0, sent0) = (b0.clone(), e0.clone(), sent0.clone());
            std::thread::spawn(move || {
                while t > 0 && sent0.load(Ordering::SeqCst) < PER_THREAD / 4 {
                    std::thread::yield_now();
                }
                for k in 0..PER_THREAD {
                    if t == 0 {
                        sent0.store(k, Ordering::SeqCst);
                    }
                    let args = [t as u32, k as u32];
                    e0.request(1, &Message::short(10, &args), false).unwrap();
                    if k % 3 == t {
                        b0.poll().unwrap();
                    } else {
                        e0.poll().unwrap();
                    }
                }
            })
        })
        .collect();
    for s in senders {
        s.join().unwrap();
    }
    common::waiting_for("the last replies");
    while e0.unanswered_requests() > 0 || total.load(Ordering::SeqCst) < THREADS * PER_THREAD {
        b0.poll().unwrap();
    }
    target.stop();
    for (what, c) in [("handler run", &ran), ("reply", &replied)] {
        let bad: Vec<_> = (0..c.len())
            .filter(|&i| c[i].load(Ordering::SeqCst) != 1)
            .map(|i| (i / PER_THREAD, i % PER_THREAD, c[i].load(Ordering::SeqCst)))
            .take(5)
            .collect();
        assert!(
            bad.is_empty(),
            "(thread, request, {what}s) not once: {bad:?}"
        );
    }
    assert!(
        e0.express_stats().requests_sent > 0,
        "the requests took the express lane"
    );
}
