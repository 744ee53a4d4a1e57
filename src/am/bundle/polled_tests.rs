//! The list a thread polled last (`polled.rs`): AM_Poll sees endpoints
//! allocated and freed meanwhile, on the same thread, from a handler and
//! from another thread, and keeps no freed endpoint open.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use super::polled;
use crate::am::{
    allocate_bundle, allocate_endpoint_with, free_bundle, free_endpoint, handler, reply, Bundle,
    BundleMode, Endpoint, Message,
};
use crate::config::Config;

const TAG: u64 = 0x9011;
const H_PING: u8 = 1;
const H_PONG: u8 = 2;

fn cfg() -> Config {
    Config::from_lookup(|_| None).unwrap()
}

/// `a` maps itself at index 0 and `peers` from 1 on, and is ready.
fn map(a: &Endpoint, peers: &[&Endpoint]) {
    a.set_tag(TAG);
    a.map(0, a.name(), TAG).unwrap();
    for (k, p) in peers.iter().enumerate() {
        a.map(k as i64 + 1, p.name(), TAG).unwrap();
    }
    a.set_expected_resources(1 + peers.len() as i32, 4).unwrap();
}

/// A handler that answers pings, and one that counts pongs into `n`.
fn serve(ep: &Endpoint, pongs: &Arc<AtomicU64>) {
    ep.set_handler(
        H_PING,
        handler(|h| reply(h.token, &Message::short(H_PONG, &[])).unwrap()),
    );
    let n = pongs.clone();
    ep.set_handler(
        H_PONG,
        handler(move |_| {
            n.fetch_add(1, Ordering::Relaxed);
        }),
    );
}

/// Sends a ping from `from` (polled through `fb`) to its index `to` and
/// polls until the pong: both were polled.
fn ping(from: &Arc<Endpoint>, to: u32, fb: &Bundle, pongs: &AtomicU64) {
    let before = pongs.load(Ordering::Relaxed);
    from.request(to, &Message::short(H_PING, &[]), false)
        .unwrap();
    while pongs.load(Ordering::Relaxed) == before {
        fb.poll().unwrap();
    }
}

#[test]
fn a_bundle_changed_on_the_polling_thread_is_polled_whole_and_keeps_no_freed_endpoint() {
    crate::am::init().unwrap();
    let b = allocate_bundle(BundleMode::Seq).unwrap();
    let pongs = Arc::new(AtomicU64::new(0));
    let e0 = allocate_endpoint_with(&b, &cfg()).unwrap();
    serve(&e0, &pongs);
    map(&e0, &[]);
    b.poll().unwrap();
    assert!(
        polled::keeps(b.id),
        "a poll of an unchanged bundle keeps its list"
    );
    for round in 0..4 {
        // new endpoints after the list was kept: polled from now on
        let e1 = allocate_endpoint_with(&b, &cfg()).unwrap();
        assert!(
            !polled::keeps(b.id),
            "round {round}: a changed list was kept"
        );
        let peer = allocate_endpoint_with(&b, &cfg()).unwrap();
        serve(&e1, &pongs);
        serve(&peer, &pongs);
        map(&e1, &[&peer]);
        map(&peer, &[&e1]);
        ping(&e1, 1, &b, &pongs);
        ping(&peer, 1, &b, &pongs);
        assert!(polled::keeps(b.id));
        free_endpoint(&peer).unwrap();
        // freed: the thread's kept list lets go of it at once
        let gone: Weak<Endpoint> = Arc::downgrade(&e1);
        free_endpoint(&e1).unwrap();
        drop(e1);
        assert!(
            gone.upgrade().is_none(),
            "round {round}: a freed endpoint was kept open"
        );
        b.poll().unwrap();
        assert!(gone.upgrade().is_none());
    }
    free_bundle(&b).unwrap();
    assert!(!polled::keeps(b.id));
}

/// Where the victim of `with_victim` waits for the handler that frees it.
type Slot = Arc<parking_lot::Mutex<Option<Arc<Endpoint>>>>;

/// (bundle, pongs, e0, e1, gone, slot): see `with_victim`.
type Victim = (
    Arc<Bundle>,
    Arc<AtomicU64>,
    Arc<Endpoint>,
    Arc<Endpoint>,
    Weak<Endpoint>,
    Slot,
);

/// A bundle of two endpoints mapped to each other (`e0` serves pings and
/// counts pongs into `pongs`) and a third, the victim a handler of `e1`
/// frees: in its slot (the handler takes it from there), `gone` to see it
/// go.
fn with_victim() -> Victim {
    crate::am::init().unwrap();
    let b = allocate_bundle(BundleMode::Seq).unwrap();
    let pongs = Arc::new(AtomicU64::new(0));
    let (e0, e1) = (
        allocate_endpoint_with(&b, &cfg()).unwrap(),
        allocate_endpoint_with(&b, &cfg()).unwrap(),
    );
    serve(&e0, &pongs);
    map(&e0, &[&e1]);
    map(&e1, &[&e0]);
    let victim = allocate_endpoint_with(&b, &cfg()).unwrap();
    let gone = Arc::downgrade(&victim);
    let slot = Arc::new(parking_lot::Mutex::new(Some(victim)));
    (b, pongs, e0, e1, gone, slot)
}

#[test]
fn an_endpoint_a_handler_frees_during_a_poll_is_not_kept() {
    let (b, pongs, e0, e1, gone, slot) = with_victim();
    let s = slot.clone();
    // e1's ping handler frees the third endpoint, then answers
    e1.set_handler(
        H_PING,
        handler(move |h| {
            if let Some(v) = s.lock().take() {
                free_endpoint(&v).unwrap();
            }
            reply(h.token, &Message::short(H_PONG, &[])).unwrap();
        }),
    );
    b.poll().unwrap();
    assert!(polled::keeps(b.id));
    ping(&e0, 1, &b, &pongs);
    assert!(slot.lock().is_none(), "the handler ran");
    assert!(
        gone.upgrade().is_none(),
        "an endpoint freed in a handler was kept open"
    );
    // the list after it is polled (and kept) as before
    ping(&e0, 1, &b, &pongs);
    assert!(polled::keeps(b.id));
    free_bundle(&b).unwrap();
}

#[test]
fn endpoints_allocated_and_freed_by_another_thread_are_polled_and_let_go() {
    crate::am::init().unwrap();
    // the bundle polled by a thread of its own; the pinger's on this one
    let (b, pb) = (
        allocate_bundle(BundleMode::Par).unwrap(),
        allocate_bundle(BundleMode::Seq).unwrap(),
    );
    let pongs = Arc::new(AtomicU64::new(0));
    let (stop, polls) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicU64::new(0)),
    );
    let poller = {
        let (b, stop, polls) = (b.clone(), stop.clone(), polls.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                b.poll().unwrap();
                polls.fetch_add(1, Ordering::Release);
            }
        })
    };
    // a pair that stays: `keep` polled by the other thread
    let (keep, keeper) = (
        allocate_endpoint_with(&b, &cfg()).unwrap(),
        allocate_endpoint_with(&pb, &cfg()).unwrap(),
    );
    serve(&keep, &pongs);
    serve(&keeper, &pongs);
    map(&keep, &[&keeper]);
    map(&keeper, &[&keep]);
    for round in 0..16 {
        // allocated here while the other thread polls: it answers
        let e = allocate_endpoint_with(&b, &cfg()).unwrap();
        serve(&e, &pongs);
        let pinger = allocate_endpoint_with(&pb, &cfg()).unwrap();
        serve(&pinger, &pongs);
        map(&e, &[&pinger]);
        map(&pinger, &[&e]);
        ping(&pinger, 1, &pb, &pongs);
        // freed here: let go by the poller's next poll at the latest
        let gone = Arc::downgrade(&e);
        free_endpoint(&e).unwrap();
        drop(e);
        let seen = polls.load(Ordering::Acquire);
        while polls.load(Ordering::Acquire) < seen + 2 {
            std::hint::spin_loop();
        }
        assert!(
            gone.upgrade().is_none(),
            "round {round}: the poller kept a freed endpoint"
        );
        // the endpoint that stayed is still polled
        ping(&keeper, 1, &pb, &pongs);
        free_endpoint(&pinger).unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    poller.join().unwrap();
    free_bundle(&b).unwrap();
    free_bundle(&pb).unwrap();
}

#[test]
fn a_poll_nested_in_a_handler_shares_the_kept_list_and_a_change_inside_it_is_not_kept() {
    let (b, pongs, e0, e1, gone, slot) = with_victim();
    let (s, nb, nested) = (slot.clone(), b.clone(), Arc::new(AtomicU64::new(0)));
    let n = nested.clone();
    // e1's ping handler polls the bundle (nested); the second time it
    // first frees the third endpoint
    e1.set_handler(
        H_PING,
        handler(move |h| {
            if n.fetch_add(1, Ordering::Relaxed) == 1 {
                if let Some(v) = s.lock().take() {
                    free_endpoint(&v).unwrap();
                }
            }
            nb.poll().unwrap();
            reply(h.token, &Message::short(H_PONG, &[])).unwrap();
        }),
    );
    b.poll().unwrap();
    assert!(polled::keeps(b.id));
    ping(&e0, 1, &b, &pongs);
    assert_eq!(nested.load(Ordering::Relaxed), 1);
    assert!(polled::keeps(b.id), "a nested poll of an unchanged bundle");
    ping(&e0, 1, &b, &pongs);
    assert!(slot.lock().is_none(), "the handler ran");
    assert!(
        gone.upgrade().is_none(),
        "an endpoint freed before a nested poll was kept open"
    );
    ping(&e0, 1, &b, &pongs);
    assert!(polled::keeps(b.id));
    free_bundle(&b).unwrap();
}
