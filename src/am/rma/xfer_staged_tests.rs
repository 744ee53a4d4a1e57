//! Long requests through a staging area (`xfer_staged.rs`) between
//! simulated processes (`sim::World`, virtual time, seed printed) joined
//! by real shared-memory rings, the target's segment of its own memory (as
//! `AM_SetSeg`'s): a stream larger than the ring arrives whole and in
//! order, the sender waiting for room; requests forged as a hostile peer
//! would are refused with nothing run; a target that lies about what it
//! took is not believed; an area asked for again from the same ring is
//! the same, from another ring a new one that the old requests do not name.

use std::sync::{Arc, Mutex};

use super::xfer_staged::{place, trailer, AREA, CONSUMED, HEADER, RING, STAGED_MAX, STAGED_MIN};
use crate::am::handler::args::{Data, SegmentMemory, VecSegment};
use crate::am::handler::message::STAGED_FLAG;
use crate::am::state::outstanding::Outstanding;
use crate::am::{handler, Endpoint, Message};
use crate::config::{Config, TransportChoice};
use crate::error::ReturnStatus;
use crate::sim::{seeds, World};
use crate::time::MILLIS;
use crate::wire::CHANNEL_REQUEST;

const TAG: u64 = 0x57a6;
const SEG: usize = 1 << 20;
/// The target's handler: records (argument, offset, length, bytes right).
const H: u8 = 20;

fn pattern(n: usize, seed: u32) -> Vec<u8> {
    (0..n as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 11 ^ seed.wrapping_mul(40_503)) as u8)
        .collect()
}

/// A run of `H`: (argument, offset, length, the bytes were
/// pattern(length, argument)).
type Ran = (u32, usize, usize, bool);

struct Setup {
    w: World,
    target: Arc<Endpoint>,
    friend: Arc<Endpoint>,
    attacker: Arc<Endpoint>,
    ran: Arc<Mutex<Vec<Ran>>>,
    returned: Arc<Mutex<Vec<ReturnStatus>>>,
}

impl Setup {
    fn until(&self, what: &str, done: &dyn Fn() -> bool) {
        let ok = self.w.run_until(10_000 * MILLIS, done);
        assert!(ok, "seed {}: never came: {what}", self.w.seed());
    }
}

/// Target, friend (both with rings) and attacker (the network only); the
/// target's segment is `SEG` bytes of its own memory; the friend's ring
/// to it is up and its staging area mapped (the first Xfer asked).
fn setup(seed: u64) -> Setup {
    let w = World::seeded(seed);
    let node = |transport| {
        let mut cfg = Config::from_lookup(|_| None).unwrap();
        cfg.transport = transport;
        w.node(&cfg).ep
    };
    let (target, friend) = (node(TransportChoice::Shm), node(TransportChoice::Shm));
    let attacker = node(TransportChoice::Udp);
    let returned = Arc::new(Mutex::new(Vec::new()));
    for e in [&target, &friend, &attacker] {
        e.set_tag(TAG);
        for (i, p) in [&target, &friend, &attacker].iter().enumerate() {
            e.map(i as i64, p.name(), TAG).unwrap();
        }
        e.set_expected_resources(3, 8).unwrap();
        let r = returned.clone();
        e.set_handler(
            0,
            handler(move |h| {
                if let Data::Returned { status, .. } = h.data {
                    r.lock().unwrap().push(status);
                }
            }),
        );
    }
    let seg = VecSegment::new(SEG);
    let base = seg.base();
    target.set_segment(Some(seg.clone()));
    let ran = Arc::new(Mutex::new(Vec::new()));
    let r = ran.clone();
    target.set_handler(
        H,
        handler(move |h| {
            if let Data::Long { addr, len } = h.data {
                let off = addr - base;
                let right = seg.read(off, len) == pattern(len, h.args[0]);
                r.lock().unwrap().push((h.args[0], off, len, right));
            }
        }),
    );
    let s = Setup {
        w,
        target,
        friend,
        attacker,
        ran,
        returned,
    };
    s.target.set_handler(21, handler(|_| {}));
    s.friend
        .request(0, &Message::short(21, &[]), false)
        .unwrap();
    s.until("a ring to the target", &|| s.friend.ring_ready(0));
    let p = pattern(STAGED_MIN as usize, 0);
    s.friend
        .request(0, &Message::long(H, &[0], &p, 0), false)
        .unwrap();
    s.until("the area mapped", &|| {
        s.friend.with(|st| st.rma.shared.counts[1]) == 1
    });
    s.until("the first Xfer", &|| s.ran.lock().unwrap().len() == 1);
    // the second is staged
    s.friend
        .request(0, &Message::long(H, &[0], &p, 0), false)
        .unwrap();
    s.until("the second Xfer", &|| s.ran.lock().unwrap().len() == 2);
    assert_eq!(s.friend.staged_counts()[0], 1);
    assert!(s.ran.lock().unwrap().iter().all(|r| r.3));
    s.ran.lock().unwrap().clear();
    s
}

#[test]
fn a_stream_larger_than_the_ring_arrives_whole_in_order_and_waits_for_room() {
    for seed in seeds(3) {
        println!("seed {seed}");
        let s = setup(seed);
        let n = 40u32;
        let mut sent = Vec::new();
        for k in 1..=n {
            let len =
                STAGED_MIN as usize + (k as usize * 7919) % (STAGED_MAX - STAGED_MIN) as usize;
            let off = (k as usize * 4096 + k as usize) % (SEG - STAGED_MAX as usize);
            let p = pattern(len, k);
            // the target off its CPU for a while now and then: the sender
            // finds the ring full and waits for it
            if k % 10 == 3 {
                s.w.deschedule(0, 5 * MILLIS);
            }
            s.friend
                .request(0, &Message::long(H, &[k], &p, off as u64), false)
                .unwrap();
            sent.push((k, off, len, true));
            assert!(len as u64 <= STAGED_MAX);
        }
        s.until("every request run", &|| {
            s.ran.lock().unwrap().len() == n as usize
        });
        assert_eq!(
            *s.ran.lock().unwrap(),
            sent,
            "seed {seed}: order, places, bytes"
        );
        assert!(s.returned.lock().unwrap().is_empty());
        let total: u64 = sent.iter().map(|m| m.2 as u64).sum();
        assert!(total > 4 * RING, "the stream wraps the ring");
        let [staged, _, waited] = s.friend.staged_counts();
        assert_eq!(
            staged,
            n as u64 + 1,
            "seed {seed}: every one staged (and setup's)"
        );
        assert!(waited > 0, "seed {seed}: the sender waited for room");
        assert_eq!(s.target.staged_counts()[1], n as u64 + 1);
        // the target took everything staged
        let to = s.target.addr();
        let head = s.friend.with(|st| st.rma.staged.to[&to].head);
        let from = s.friend.addr();
        let area = s.target.with(|st| st.rma.staged.from[&from].0.clone());
        let mut w = [0u8; 8];
        assert!(area.read(CONSUMED, &mut w));
        assert_eq!(u64::from_ne_bytes(w), head);
    }
}

#[test]
fn only_a_request_through_our_ring_naming_our_area_inside_it_runs() {
    let s = setup(1);
    let (to, from) = (s.target.addr(), s.friend.addr());
    let (pid, secret) = s.friend.with(|st| st.transports.ring_to(to)).unwrap();
    let state = s
        .target
        .with(|st| st.rma.staged.from[&from].0.state().unwrap());
    let area = s.friend.with(|st| st.rma.staged.to[&to].area.clone());
    let send = |by: &Endpoint, txn: u32, off: u64, body: Vec<u8>| {
        let mut meta = Message::long(H, &[7], &[], off).meta(txn, TAG);
        meta.status = STAGED_FLAG;
        by.with(|st| {
            // as a request of ours (its refusal comes back to handler 0)
            let now = st.clock.now();
            st.send_message(now, to, CHANNEL_REQUEST, meta, body);
            st.table.get_mut(0).unwrap().outstanding += 1;
            st.outstanding
                .insert(txn, Outstanding::new(0, to, now, meta));
        });
    };
    let refused = |what: &str, want: ReturnStatus| {
        s.until(what, &|| !s.returned.lock().unwrap().is_empty());
        let got: Vec<_> = s.returned.lock().unwrap().drain(..).collect();
        assert_eq!(got, [want], "{what}");
        assert!(s.ran.lock().unwrap().is_empty(), "{what}: a handler ran");
    };
    // the bytes, written by hand where a later position puts them
    let (pos, n) = (3 * RING + 1000, 40_000u64);
    assert!(area.put(HEADER + 1000, &pattern(n as usize, 7), None));
    let t = |pos, n, state, secret| trailer(pos, n, state, pid, secret);
    send(&s.friend, 90, 8, t(pos, STAGED_MAX + 1, state, secret));
    refused("too long", ReturnStatus::BadLength);
    send(&s.friend, 91, 8, t(RING - 10, 11, state, secret));
    refused("wrapping the ring", ReturnStatus::BadLength);
    send(&s.friend, 92, SEG as u64 - 10, t(pos, n, state, secret));
    refused("past the segment", ReturnStatus::BadLength);
    send(&s.friend, 93, 8, t(pos, n, state + 2, secret));
    refused("another area", ReturnStatus::BadSegOff);
    send(&s.friend, 94, 8, t(pos, n, state, secret ^ 1));
    refused("a wrong secret", ReturnStatus::BadArgs);
    send(&s.friend, 95, 8, t(pos, n, state, secret)[..35].to_vec());
    refused("a short trailer", ReturnStatus::BadArgs);
    // by UDP with the real ring's pid and secret: not from that ring
    send(&s.attacker, 96, 8, t(pos, n, state, secret));
    refused("by UDP", ReturnStatus::BadArgs);
    // the control: through the ring, inside, our area: runs once
    send(&s.friend, 97, 8192, t(pos, n, state, secret));
    s.until("the honest one", &|| s.ran.lock().unwrap().len() == 1);
    assert_eq!(*s.ran.lock().unwrap(), [(7, 8192, n as usize, true)]);
    let mut w = [0u8; 8];
    let mine = s.target.with(|st| st.rma.staged.from[&from].0.clone());
    assert!(mine.read(CONSUMED, &mut w));
    assert_eq!(u64::from_ne_bytes(w), pos + n, "taken up to its end");
    assert_eq!(mine.len(), AREA);
}

#[test]
fn a_target_that_says_it_took_more_than_was_staged_is_not_believed() {
    let s = setup(2);
    let (to, from) = (s.target.addr(), s.friend.addr());
    let head = s.friend.with(|st| st.rma.staged.to[&to].head);
    let mine = s.target.with(|st| st.rma.staged.from[&from].0.clone());
    assert!(mine.store_u64(CONSUMED, head + 1));
    let p = pattern(50_000, 3);
    s.friend
        .request(0, &Message::long(H, &[3], &p, 64), false)
        .unwrap();
    s.until("the Xfer", &|| s.ran.lock().unwrap().len() == 1);
    assert_eq!(*s.ran.lock().unwrap(), [(3, 64, 50_000, true)]);
    assert_eq!(s.friend.staged_counts()[0], 1, "the usual way, not staged");
    assert!(
        s.friend.with(|st| !st.rma.staged.to.contains_key(&to)),
        "area dropped"
    );
}

#[test]
fn an_area_asked_for_again_is_the_same_from_the_same_ring_and_new_from_another() {
    let s = setup(3);
    let from = s.friend.addr();
    let (pid, secret) = s.target.with(|st| {
        let f = &st.rma.staged.from[&from];
        (f.1, f.2)
    });
    let (first, state) = s.target.with(|st| {
        let a = st.staging_for(from, pid, secret).unwrap().0;
        let state = a.state().unwrap();
        (a, state)
    });
    let again = s
        .target
        .with(|st| st.staging_for(from, pid, secret).unwrap().0);
    assert!(Arc::ptr_eq(&first, &again), "the same area");
    let other = s
        .target
        .with(|st| st.staging_for(from, pid, secret ^ 1).unwrap().0);
    assert!(!Arc::ptr_eq(&first, &other));
    let new_state = other.state().unwrap();
    assert!(
        new_state > state && new_state & 1 == 1,
        "a later generation, live"
    );
    // a request naming the first area is refused now, nothing run
    let to = s.target.addr();
    let (rpid, rsecret) = s.friend.with(|st| st.transports.ring_to(to)).unwrap();
    let mut meta = Message::long(H, &[9], &[], 0).meta(77, TAG);
    meta.status = STAGED_FLAG;
    s.friend.with(|st| {
        let now = st.clock.now();
        let body = trailer(0, STAGED_MIN, state, rpid, rsecret);
        st.send_message(now, to, CHANNEL_REQUEST, meta, body);
        st.table.get_mut(0).unwrap().outstanding += 1;
        st.outstanding
            .insert(77, Outstanding::new(0, to, now, meta));
    });
    s.until("refused", &|| !s.returned.lock().unwrap().is_empty());
    assert_eq!(*s.returned.lock().unwrap(), [ReturnStatus::BadSegOff]);
    assert!(s.ran.lock().unwrap().is_empty());
}

#[test]
fn a_sender_whose_target_died_with_the_ring_full_is_not_kept_waiting() {
    for seed in seeds(2) {
        println!("seed {seed}");
        let s = setup(seed);
        let to = s.target.addr();
        s.w.kill(0);
        // more than the ring holds: the first few staged, then the sender
        // waits for room until the target's death returns them
        let n = 10u32;
        for k in 1..=n {
            let p = pattern(100_000, k);
            s.friend
                .request(0, &Message::long(H, &[k], &p, 0), false)
                .unwrap();
        }
        let ok = s.w.run_until(600_000 * MILLIS, || {
            s.returned.lock().unwrap().len() == n as usize
        });
        assert!(
            ok,
            "seed {seed}: every request returned once ({:?})",
            s.returned.lock().unwrap()
        );
        assert!(s.ran.lock().unwrap().is_empty());
        let staged = s.friend.staged_counts()[0] - 1;
        assert!(
            (1..n as u64).contains(&staged),
            "seed {seed}: {staged} staged"
        );
        assert!(
            s.friend.with(|st| !st.rma.staged.to.contains_key(&to)),
            "area dropped"
        );
    }
}

#[test]
fn each_message_starts_on_a_line_of_its_own_and_whole_in_the_ring() {
    assert_eq!(place(0, 65_000), 0);
    assert_eq!(place(65_000, 65_000), 65_024, "the next line");
    assert_eq!(place(65_024, 65_000), 65_024, "already on one");
    // one that would wrap starts at the next turn, aligned or not
    assert_eq!(place(RING - 100, 200), RING);
    assert_eq!(place(RING - 130, 100), RING - 128);
    assert_eq!(place(2 * RING - 64, 64), 2 * RING - 64);
    for head in (0..3 * RING).step_by(4099) {
        let p = place(head, STAGED_MAX);
        assert!(p >= head && p.is_multiple_of(64) && p % RING + STAGED_MAX <= RING);
    }
}
