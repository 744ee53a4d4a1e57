//! The target's checks of a long request "bytes in place"
//! (`xfer_shared.rs`) between simulated processes (`sim::World`, virtual
//! time): the target and a friend joined by real shared-memory rings, an
//! attacker on the simulated network only, with requests forged as a
//! hostile peer would: the handler runs only for one through our ring,
//! naming our current segment, inside it; each other is refused (returned
//! to the sender) with nothing run.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::xfer_shared::trailer;
use crate::am::handler::message::INPLACE_FLAG;
use crate::am::state::outstanding::Outstanding;
use crate::am::{Data, Endpoint, Message};
use crate::config::{Config, TransportChoice};
use crate::error::ReturnStatus;
use crate::sim::World;
use crate::time::MILLIS;
use crate::wire::CHANNEL_REQUEST;

const TAG: u64 = 0xc3b;
const SEG: usize = 64 << 10;

#[test]
fn only_a_request_through_our_ring_naming_our_segment_inside_it_runs() {
    let w = World::seeded(1);
    let node = |transport| {
        let mut cfg = Config::from_lookup(|_| None).unwrap();
        cfg.transport = transport;
        w.node(&cfg).ep
    };
    let target = node(TransportChoice::Shm);
    let friend = node(TransportChoice::Shm);
    let attacker = node(TransportChoice::Udp);
    let eps = [&target, &friend, &attacker];
    let returned = Arc::new(std::sync::Mutex::new(Vec::new()));
    for e in eps {
        e.set_tag(TAG);
        for (i, p) in eps.iter().enumerate() {
            e.map(i as i64, p.name(), TAG).unwrap();
        }
        e.set_expected_resources(3, 8).unwrap();
        let r = returned.clone();
        e.set_handler(
            0,
            crate::am::handler(move |h| {
                if let Data::Returned { status, .. } = h.data {
                    r.lock().unwrap().push(status);
                }
            }),
        );
    }
    let (base, len) = target.alloc_segment(SEG).unwrap();
    assert_eq!(len, SEG);
    let runs = Arc::new(AtomicU64::new(0));
    let seen = Arc::new(std::sync::Mutex::new(None));
    let (r, s) = (runs.clone(), seen.clone());
    target.set_handler(
        20,
        crate::am::handler(move |h| {
            r.fetch_add(1, Ordering::SeqCst);
            if let Data::Long { addr, len } = h.data {
                *s.lock().unwrap() = Some((addr, len));
            }
        }),
    );
    let poll_until = |what: &str, done: &dyn Fn() -> bool| {
        let ok = w.run_until(10_000 * MILLIS, done);
        assert!(ok, "never came: {what}");
    };
    target.set_handler(21, crate::am::handler(|_| {}));
    friend.request(0, &Message::short(21, &[]), false).unwrap();
    poll_until("a ring to the target", &|| friend.ring_ready(0));
    returned.lock().unwrap().clear();
    let to = target.addr();
    let (pid, secret) = friend.with(|s| s.transports.ring_to(to)).unwrap();
    let state = target.with(|s| s.rma.own_segment.mem.as_ref().unwrap().state().unwrap());
    let send = |from: &Endpoint, txn: u32, off: u64, body: Vec<u8>| {
        let mut meta = Message::long(20, &[], &[], off).meta(txn, TAG);
        meta.status = INPLACE_FLAG;
        from.with(|s| {
            // as a request of ours (its refusal comes back to handler 0)
            let now = s.clock.now();
            s.send_message(now, to, CHANNEL_REQUEST, meta, body);
            s.table.get_mut(0).unwrap().outstanding += 1;
            s.outstanding
                .insert(txn, Outstanding::new(0, to, now, meta));
        });
    };
    let refused = |what: &str, want: ReturnStatus| {
        poll_until(what, &|| !returned.lock().unwrap().is_empty());
        assert_eq!(
            returned.lock().unwrap().drain(..).collect::<Vec<_>>(),
            [want],
            "{what}"
        );
        assert_eq!(runs.load(Ordering::SeqCst), 0, "{what}: a handler ran");
    };
    // n past the segment (from the wire, never trusted)
    send(&friend, 90, 8, trailer(SEG as u64 - 7, state, pid, secret));
    refused("past the end", ReturnStatus::BadLength);
    send(&friend, 91, u64::MAX - 3, trailer(8, state, pid, secret));
    refused("an offset that wraps", ReturnStatus::BadLength);
    // naming another segment (an older one)
    send(&friend, 92, 0, trailer(8, state - 2, pid, secret));
    refused("a stale segment", ReturnStatus::BadSegOff);
    // not our ring's secret, or a trailer of the wrong length
    send(&friend, 93, 0, trailer(8, state, pid, secret ^ 1));
    refused("a wrong secret", ReturnStatus::BadArgs);
    send(
        &friend,
        94,
        0,
        trailer(8, state, pid, secret)[..27].to_vec(),
    );
    refused("a short trailer", ReturnStatus::BadArgs);
    // by UDP with the real ring's pid and secret: not from that ring
    send(&attacker, 95, 0, trailer(8, state, pid, secret));
    refused("by UDP", ReturnStatus::BadArgs);
    // the control: through the ring, inside, our segment: runs once
    send(
        &friend,
        96,
        100,
        trailer(SEG as u64 - 100, state, pid, secret),
    );
    poll_until("the honest one", &|| runs.load(Ordering::SeqCst) == 1);
    assert_eq!(*seen.lock().unwrap(), Some((base + 100, SEG - 100)));
    // once the tag is set again (a new generation of the same segment),
    // the request made under the old one is refused
    runs.store(0, Ordering::SeqCst);
    target.set_tag(TAG);
    send(&friend, 97, 100, trailer(8, state, pid, secret));
    refused("a new tag", ReturnStatus::BadSegOff);
    let reshared = target.with(|s| s.rma.own_segment.mem.as_ref().unwrap().state().unwrap());
    assert_eq!(reshared, state + 2, "one generation on, live");
    // once replaced, neither state names the new segment
    target.alloc_segment(SEG).unwrap();
    for (txn, st) in [(98, state), (99, reshared)] {
        send(&friend, txn, 100, trailer(8, st, pid, secret));
        refused("a replaced segment", ReturnStatus::BadSegOff);
    }
    let fresh = target.with(|s| s.rma.own_segment.mem.as_ref().unwrap().state().unwrap());
    assert!(
        fresh > reshared && fresh & 1 == 1,
        "a later generation, live"
    );
}
