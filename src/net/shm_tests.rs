//! The shared-memory transport between endpoints of this process, over real
//! memfds passed on real sockets: the HELLO/descriptor exchange, independent
//! rings, a full ring refusing, hostile ring contents and socket messages,
//! wake-ups, closing (stale files: `shm_stale_tests.rs`).
//!
//! Time is given, not read: each transport keeps it by a clock the test
//! moves by hand (`sim::ManualClock`), so the checks that depend on it
//! (peer checks, retries, the setup looks' back-off) are exact at any
//! speed. The one test of real threads (a receiver going to sleep as
//! records come) runs on the real clock and asserts only what holds at
//! any speed.

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;

use super::*;
use crate::sim::ManualClock;

/// The transport of the endpoint at `a`, keeping time by `c`.
pub(super) fn open_on(a: SocketAddr, c: &Arc<ManualClock>) -> ShmTransport {
    ShmTransport::open_with(a, c.clock()).unwrap()
}

/// The transport of the endpoint at `a`, on a clock of its own that
/// stays still (a test where time plays no part).
pub(super) fn open(a: SocketAddr) -> ShmTransport {
    open_on(a, &ManualClock::new())
}

/// A fresh address no live endpoint has (a bound, kept UDP socket's).
pub(super) fn fresh() -> (UdpSocket, SocketAddr) {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    let a = s.local_addr().unwrap();
    (s, a)
}

/// Runs the exchange that gives `tx` a ring in `rx` (at `a`): HELLO, the
/// descriptor, its mapping. Returns whether `tx` then reaches `a`.
pub(super) fn link(tx: &ShmTransport, rx: &ShmTransport, a: SocketAddr) -> bool {
    assert!(!tx.reaches(a), "first messages go by UDP while asking");
    rx.read_socket();
    tx.read_socket();
    tx.reaches(a)
}

pub(super) fn take(t: &mut ShmTransport) -> Vec<(Vec<u8>, SocketAddr)> {
    let mut got = Vec::new();
    loop {
        let n = t
            .recv_batch(&mut |d| {
                let (b, a) = d.unwrap();
                got.push((b.to_vec(), a));
            })
            .unwrap();
        if n == 0 {
            return got;
        }
    }
}

#[test]
fn a_stalled_receiver_fills_only_its_own_ring() {
    let ((_k1, a1), (_k2, a2), (_k3, a3)) = (fresh(), fresh(), fresh());
    let mut stalled = open(a1);
    let mut busy = open(a2);
    let mut tx = open(a3);
    assert!(link(&tx, &stalled, a1) && link(&tx, &busy, a2));
    let d = [7u8; 1000];
    let mut sent = 0;
    // the stalled receiver never reads: its ring refuses at last
    while tx.send(Instant::ZERO, a1, &d).is_ok() {
        sent += 1;
        assert!(sent < RING, "a ring that never fills");
    }
    assert!(sent >= RING / 1100, "{sent} datagrams filled the ring");
    // the other receiver's ring is untouched by it
    for k in 0..5000u32 {
        tx.send(Instant::ZERO, a2, &k.to_le_bytes()).unwrap();
        if k % 100 == 99 {
            assert_eq!(take(&mut busy).len(), 100);
        }
    }
    // the stalled one drains, and its ring takes datagrams again
    let got = take(&mut stalled);
    assert_eq!(got.len(), sent);
    assert!(got.iter().all(|(b, a)| b[..] == d[..] && *a == a3));
    tx.send(Instant::ZERO, a1, &d).unwrap();
    assert_eq!(take(&mut stalled).len(), 1);
}

#[test]
fn datagrams_wrap_around_the_ring_whole_and_in_order() {
    let ((_k1, a1), (_k2, a2)) = (fresh(), fresh());
    let mut rx = open(a1);
    let mut tx = open(a2);
    assert!(link(&tx, &rx, a1));
    let mut next = 0u32;
    // (three of up to 60,000 bytes, and a wrap's waste, fit in the ring)
    for round in 0..300usize {
        let mut want = Vec::new();
        for j in 0..3 {
            let len = 4 + (round * 7919 + j * 104_729) % 60_000;
            let mut d = vec![(next % 251) as u8; len];
            d[..4].copy_from_slice(&next.to_le_bytes());
            tx.send(Instant::ZERO, a1, &d).unwrap();
            want.push(d);
            next += 1;
        }
        let got: Vec<Vec<u8>> = take(&mut rx).into_iter().map(|(b, _)| b).collect();
        assert_eq!(got, want);
    }
}

#[test]
fn a_long_records_uncleared_lines_never_read_as_records_a_lap_later() {
    // (the receiver clears only the first line of a long record,
    // `tx_ring::CLEAR_ALL_MAX`; its other lines keep their bytes, here a
    // record word's on every line: a short record ending on one of them
    // a lap later must find it cleared by its sender, `tx_ring::Stale`)
    let ((_k1, a1), (_k2, a2)) = (fresh(), fresh());
    let mut rx = open(a1);
    let mut tx = open(a2);
    assert!(link(&tx, &rx, a1));
    let fake = (READY | 100).to_le_bytes();
    let long: Vec<u8> = (0..20_000).map(|i| fake[i % 4]).collect();
    let mut sent = 0u32;
    for round in 0..200usize {
        let mut want = vec![long.clone()];
        tx.send(Instant::ZERO, a1, &long).unwrap();
        // short and long ones whose ends fall on every line of a long
        // record's lap before
        for j in 0..4 {
            let len = 1 + (round * 131 + j * 977) % (2 * tx_ring::CLEAR_ALL_MAX);
            let mut d = vec![(sent % 251) as u8; len];
            d[0] = j as u8;
            tx.send(Instant::ZERO, a1, &d).unwrap();
            want.push(d);
            sent += 1;
        }
        let got: Vec<Vec<u8>> = take(&mut rx).into_iter().map(|(b, _)| b).collect();
        let lens = |v: &[Vec<u8>]| v.iter().map(Vec::len).collect::<Vec<_>>();
        assert!(
            got == want,
            "round {round}: {:?} read, {:?} sent",
            lens(&got),
            lens(&want)
        );
    }
    assert!(rx.map.u64_at(H_ACTIVE).load(Relaxed) != 0, "the slot stays");
}

#[test]
fn a_slot_freed_with_records_unread_gives_the_next_sender_a_clean_ring() {
    // (the receiver clears what it takes; what it never took is cleared
    // when the slot is freed: else the next sender's second record, where
    // an old one started, would read as that old one)
    let ((_k1, a1), (_k2, a2), (_k3, a3)) = (fresh(), fresh(), fresh());
    let mut rx = open(a1);
    let mut old = open(a2);
    assert!(link(&old, &rx, a1));
    for _ in 0..100 {
        old.send(Instant::ZERO, a1, &[0xab; 1000]).unwrap();
    }
    let Route::Ring(k) = old.tx.get_mut().routes[&a1] else {
        panic!("no ring")
    };
    let slot = old.tx.get_mut().rings[k].as_ref().unwrap().slot;
    drop(old);
    // freed with its 100 records unread (as when its sender misbehaves)
    rx.free_slot(slot);
    let mut new = open(a3);
    assert!(link(&new, &rx, a1));
    let Route::Ring(k) = new.tx.get_mut().routes[&a1] else {
        panic!("no ring")
    };
    assert_eq!(new.tx.get_mut().rings[k].as_ref().unwrap().slot, slot);
    // records of the same size: each starts where an old one did
    for n in 1..=3u8 {
        new.send(Instant::ZERO, a1, &[n; 1000]).unwrap();
        let got = take(&mut rx);
        assert_eq!(got.len(), 1, "record {n}: only the new sender's");
        assert!(got[0].0 == [n; 1000] && got[0].1 == a3);
    }
    assert_ne!(rx.map.u64_at(H_ACTIVE).load(Relaxed) & (1 << slot), 0);
}

#[test]
fn hostile_ring_contents_free_the_slot_without_reading_out_of_bounds() {
    // a writer of the same user scribbles a record word where the next
    // record goes: a huge length, a length past the ring's end, a wrap at
    // the ring's start (which would wrap forever), a word without READY
    let pos_of = |tx: &mut ShmTransport, a: SocketAddr| {
        let Route::Ring(k) = tx.tx.get_mut().routes[&a] else {
            panic!()
        };
        let r = tx.tx.get_mut().rings[k].as_ref().unwrap();
        (slot_off(r.slot) + SLOT_HDR, (r.tail % RING as u64) as usize)
    };
    for case in 0..4 {
        let ((_k1, a1), (_k2, a2)) = (fresh(), fresh());
        let mut rx = open(a1);
        let mut tx = open(a2);
        assert!(link(&tx, &rx, a1));
        if case == 1 {
            // near the ring's end: a length that would run past it
            while RING - pos_of(&mut tx, a1).1 >= 60_000 {
                tx.send(Instant::ZERO, a1, &[1u8; 60_000]).unwrap();
                assert_eq!(take(&mut rx).len(), 1);
            }
        } else if case != 2 {
            tx.send(Instant::ZERO, a1, b"fine").unwrap();
            assert_eq!(take(&mut rx).len(), 1);
        }
        let (ring, pos) = pos_of(&mut tx, a1);
        let word = match case {
            0 => READY | (RECV_SLOT as u32 + 1),
            1 => READY | (RING - pos) as u32,
            2 => WRAP,
            _ => 5,
        };
        rx.map.u32_at(ring + pos).store(word, Release);
        assert!(take(&mut rx).is_empty(), "case {case}");
        let map = &rx.map;
        assert_eq!(
            map.u64_at(H_ACTIVE).load(Relaxed),
            0,
            "case {case}: slot freed"
        );
        assert_eq!(map.u32_at(ring - SLOT_HDR + S_OWNER).load(Relaxed), 0);
    }
}

#[test]
fn a_sender_reads_the_head_only_when_the_ring_looks_full() {
    let ((_k1, a1), (_k2, a2)) = (fresh(), fresh());
    let mut rx = open(a1);
    let mut tx = open(a2);
    assert!(link(&tx, &rx, a1));
    let Route::Ring(k) = tx.tx.get_mut().routes[&a1] else {
        panic!()
    };
    let s = slot_off(tx.tx.get_mut().rings[k].as_ref().unwrap().slot);
    // a receiver that claims a head past the sender's tail: the sender
    // does not believe it, and has not read it while there was room
    rx.map.u64_at(s + S_HEAD).store(u64::MAX / 2, Release);
    let d = [3u8; 1000];
    let mut sent = 0;
    while tx.send(Instant::ZERO, a1, &d).is_ok() {
        sent += 1;
        assert!(sent < RING, "a ring that never fills");
    }
    assert!(
        sent >= RING / 1100,
        "{sent} datagrams before the ring looked full"
    );
    // drained: the head is published (lazily, in steps of HEAD_PUBLISH),
    // and the sender reads it and goes on
    assert_eq!(take(&mut rx).len(), sent);
    assert!(rx.map.u64_at(s + S_HEAD).load(Relaxed) >= sent as u64 * 1000 - HEAD_PUBLISH);
    tx.send(Instant::ZERO, a1, &d).unwrap();
    assert_eq!(take(&mut rx).len(), 1);
}

#[test]
fn an_armed_receiver_is_woken_and_a_closed_one_is_forgotten() {
    let ((_k1, a1), (_k2, a2)) = (fresh(), fresh());
    let c = ManualClock::new();
    let t0 = c.now();
    let mut rx = open_on(a1, &c);
    let mut tx = open_on(a2, &c);
    assert!(link(&tx, &rx, a1));
    assert!(take(&mut rx).is_empty()); // (a new sender's slot is noticed)
    let fd = rx.fd(); // arms the sleep word: nothing waits
    assert!(!crate::sys::wait_readable(&[fd], 0));
    tx.send(Instant::ZERO, a1, b"wake").unwrap();
    // (the push itself sends the wake-up: there when it returns)
    assert!(crate::sys::wait_readable(&[fd], 0), "no wake-up");
    drop(rx);
    // the sender checks its receivers every CHECK_EVERY from its opening
    c.set(t0.plus(CHECK_EVERY - 1));
    tx.flush_due(c.now());
    assert!(tx.reaches(a1), "checked before its time");
    c.set(t0.plus(CHECK_EVERY));
    tx.flush_due(c.now());
    assert!(!tx.reaches(a1), "a closed receiver is reached by UDP");
    assert_eq!(tx.take_dropped(), Some(a1));
    // its address is free for a new endpoint, asked for a ring once the
    // route's retry is due, not before
    let rx = open_on(a1, &c);
    c.set(t0.plus(CHECK_EVERY + RETRY_AFTER - 1));
    assert!(!tx.reaches(a1));
    assert!(!rx.read_socket(), "asked before the retry was due");
    c.set(t0.plus(CHECK_EVERY + RETRY_AFTER));
    assert!(link(&tx, &rx, a1), "a new endpoint at the address");
}

#[test]
fn a_receiver_going_to_sleep_as_records_come_is_always_woken() {
    // a sender thread pushes one record at a time, at staggered moments
    // around the receiver's going to sleep (it arms its word whenever it
    // finds nothing): every record wakes it (the sender looks at the word
    // without a fence: `TxRing::wake`; the receiver's grace covers it).
    // Real threads and memory on the real clock, asserting only what holds
    // at any speed: a sleep that nothing ends is a failure only once its
    // record was all sent (pushed, the word looked at) and no wake-up waits
    use std::sync::atomic::AtomicU32;
    const N: u32 = 2000;
    let ((_k1, a1), (_k2, a2)) = (fresh(), fresh());
    let mut rx = ShmTransport::open(a1).unwrap();
    let mut tx = ShmTransport::open(a2).unwrap();
    assert!(link(&tx, &rx, a1));
    assert!(take(&mut rx).is_empty());
    let (taken, sent) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
    let (t2, s2) = (taken.clone(), sent.clone());
    let sender = std::thread::spawn(move || {
        for k in 0..N {
            while t2.load(Acquire) < k {
                std::hint::spin_loop();
            }
            // a staggered moment after the last one was taken
            for _ in 0..(k * 7919) % 4000 {
                std::hint::spin_loop();
            }
            tx.send(Instant::ZERO, a1, &k.to_le_bytes()).unwrap();
            s2.store(k + 1, Release);
        }
        tx
    });
    let mut got = 0u32;
    while got < N {
        let n = take(&mut rx).len() as u32;
        if n > 0 {
            got += n;
            taken.store(got, Release);
            continue;
        }
        let fd = rx.fd();
        if !crate::sys::wait_readable(&[fd], 100) && sent.load(Acquire) > got {
            // (a wake-up sent as the wait ended is there now)
            assert!(
                crate::sys::wait_readable(&[fd], 0),
                "record {got} woke nobody"
            );
        }
    }
    let _tx = sender.join().unwrap();
}

#[test]
fn a_live_address_cannot_be_opened_twice() {
    let (_k, a) = fresh();
    let _first = open(a);
    let e = ShmTransport::open(a)
        .err()
        .expect("a second endpoint at a live address");
    assert_eq!(e.kind(), io::ErrorKind::AddrInUse);
}

#[test]
fn an_address_with_no_endpoint_is_reached_by_udp_without_asking_again() {
    let ((_k1, a1), (_k2, a2)) = (fresh(), fresh());
    let c = ManualClock::new();
    let tx = open_on(a1, &c);
    assert!(!tx.reaches(a2));
    assert!(matches!(tx.tx.borrow().routes[&a2], Route::Udp { .. }));
    // an endpoint there now: asked only once the route's retry is due
    let rx = open_on(a2, &c);
    c.advance(RETRY_AFTER - 1);
    assert!(!tx.reaches(a2));
    assert!(!rx.read_socket(), "asked again before the retry");
    c.advance(1);
    assert!(link(&tx, &rx, a2), "asked again at the retry");
}

/// Socket messages that are not what a ramp peer sends: junk, descriptors
/// from a socket without a name or with another name, an unsealed file or a
/// foreign one from a process that took the name of an address with no
/// endpoint. None gives a ring or a fault; every descriptor is closed.
#[test]
fn hostile_socket_messages_give_no_ring() {
    let ((_k1, a1), (_k2, a2), (_k3, a3)) = (fresh(), fresh(), fresh());
    let rx = open(a1);
    let tx = open(a2);
    let me = stem(a2);
    // an impostor holds the name of a3, which has no endpoint
    let imp = UnixDatagram::bind_addr(&wake_addr(a3).unwrap()).unwrap();
    assert!(!tx.reaches(a1) && !tx.reaches(a3), "both asked");
    assert!(matches!(tx.tx.borrow().routes[&a3], Route::Asked { .. }));
    let unsealed = File::from(crate::sys::memfd_unsealed(FILE_LEN));
    let nameless = UnixDatagram::unbound().unwrap();
    nameless
        .send_to_addr(&[0u8; 3000], &wake_addr(a2).unwrap())
        .unwrap();
    send_with_fd(&nameless, me.as_bytes(), GIVE, unsealed.as_raw_fd()).unwrap();
    send_with_fd(&imp, me.as_bytes(), GIVE, unsealed.as_raw_fd()).unwrap();
    // a sealed file, but another endpoint's (its header names a2)
    send_with_fd(&imp, me.as_bytes(), GIVE, tx.file.as_raw_fd()).unwrap();
    let fds_before = open_fds();
    assert!(tx.read_socket());
    assert!(open_fds() <= fds_before, "descriptors received were closed");
    assert!(!tx.reaches(a3), "no ring from an impostor");
    assert!(tx.tx.borrow().rings.iter().all(Option::is_none));
    // the real exchange still works
    rx.read_socket();
    tx.read_socket();
    assert!(tx.reaches(a1));
}

/// Region messages (`am/rma_shared.rs`'s asks and answers) that are not
/// well formed, not from the endpoint they name, or past the queue are
/// dropped and counted, never queued; the well-formed ones from their
/// endpoint are queued, up to `REGION_QUEUE`.
#[test]
fn hostile_region_messages_are_dropped_and_counted() {
    let ((_k1, a1), (_k3, a3)) = (fresh(), fresh());
    let rx = open(a1);
    let to = wake_addr(a1).unwrap();
    // a process of our user that holds the name of a3's endpoint
    let peer = UnixDatagram::bind_addr(&wake_addr(a3).unwrap()).unwrap();
    let msg = |named: SocketAddr, body: &[u8]| {
        let text = named.to_string();
        let mut m = REGION.to_vec();
        m.push(text.len() as u8);
        m.extend_from_slice(text.as_bytes());
        m.extend_from_slice(body);
        m
    };
    let mut bad = REGION.to_vec();
    bad.push(200); // an address text longer than the message
    peer.send_to_addr(&bad, &to).unwrap();
    let mut bad = REGION.to_vec();
    bad.extend_from_slice(&[3, b'a', b'b', b'c']); // not an address
    peer.send_to_addr(&bad, &to).unwrap();
    // names an endpoint other than its sender
    peer.send_to_addr(&msg(a1, &[1]), &to).unwrap();
    assert!(rx.read_socket());
    let (got, dropped) = rx.region_take();
    assert!(got.is_empty());
    assert_eq!(dropped, 3);
    assert_eq!(rx.region_take().1, 0, "counted once");
    // well formed, from the endpoint it names: queued, up to the queue's size
    // (a few at a time: a Unix datagram socket queues only
    // net.unix.max_dgram_qlen, 10 by default, and the sender then blocks)
    for i in 0..REGION_QUEUE + 5 {
        peer.send_to_addr(&msg(a3, &[i as u8]), &to).unwrap();
        if i % 4 == 3 {
            assert!(rx.read_socket());
        }
    }
    while rx.read_socket() {}
    let (got, dropped) = rx.region_take();
    assert_eq!(got.len(), REGION_QUEUE);
    assert!(got.iter().all(|m| m.from == a3));
    assert_eq!(got[7].body, [7]);
    assert_eq!(dropped, 5, "past the queue");
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// The path is set up within the first messages, not after a periodic
/// look: the receiver reads its socket when its UDP brings a datagram from
/// a host address, the asker when it sends again.
#[test]
fn a_path_is_set_up_by_the_next_messages() {
    let ((_k1, a1), (_k2, a2)) = (fresh(), fresh());
    let c = ManualClock::new();
    let rx = open_on(a1, &c);
    let tx = open_on(a2, &c);
    assert!(!tx.reaches(a1), "asks; this message goes by UDP");
    rx.fallback_from_host(a2, c.now());
    assert!(tx.reaches(a1), "the answer is read by the next send");
}

/// A same-host peer that stays on UDP (say, no free slot) costs a look at
/// the socket ever more rarely: each empty look doubles the gap, up to the
/// periodic one; a look that finds a message brings it back.
#[test]
fn empty_setup_looks_back_off() {
    let ((_k1, a1), (_k2, a2)) = (fresh(), fresh());
    let c = ManualClock::new();
    let rx = open_on(a1, &c);
    let tx = open_on(a2, &c);
    let mut now = c.now();
    for _ in 0..10 {
        rx.fallback_from_host(a2, now);
        now = rx.next_setup_check.get();
    }
    assert_eq!(rx.setup_gap.get(), WAKE_CHECK);
    assert!(!tx.reaches(a1)); // a HELLO waits in rx's socket
    rx.fallback_from_host(a2, now);
    assert_eq!(rx.setup_gap.get(), SETUP_CHECK);
}

#[test]
fn claim_words_let_exactly_one_side_decide() {
    let ((_k1, a1), (_k2, a2), (_k3, a3)) = (fresh(), fresh(), fresh());
    let mut rx = open(a1);
    let mut tx = open(a2);
    assert!(link(&tx, &rx, a1));
    // the receiver learns the slot's sender from a datagram
    tx.send(Instant::ZERO, a1, b"hello").unwrap();
    assert_eq!(take(&mut rx).len(), 1);
    let owner = tx.ring_to(a1).expect("a ring with a secret");
    let (waiting, committed) = (7u64, 7u64 | 1 << 63);
    // the sender claims a free word once
    assert_eq!(tx.claim_to(a1, 3, 0, waiting), Some(true));
    assert_eq!(tx.claim_to(a1, 3, 0, waiting), Some(false));
    // only the true sender's slot, with its secret, is the target's
    assert!(!rx.claim_from(a3, owner, 3, waiting, committed));
    assert!(!rx.claim_from(a2, (owner.0, owner.1 ^ 1), 3, waiting, committed));
    assert!(!rx.claim_from(a2, (owner.0 + 1, owner.1), 3, waiting, committed));
    // the target commits first: the sender can no longer withdraw
    assert!(rx.claim_from(a2, owner, 3, waiting, committed));
    assert_eq!(tx.claim_to(a1, 3, waiting, 0), Some(false));
    assert_eq!(tx.claim_to(a1, 3, committed, 0), Some(true));
    // the sender withdraws first: the target can no longer commit
    assert_eq!(tx.claim_to(a1, 4, 0, waiting), Some(true));
    assert_eq!(tx.claim_to(a1, 4, waiting, 0), Some(true));
    assert!(!rx.claim_from(a2, owner, 4, waiting, committed));
    // word numbers wrap; no ring, no word
    assert_eq!(tx.claim_to(a1, 4 + CLAIMS, 0, waiting), Some(true));
    assert_eq!(tx.claim_to(a1, 4, 0, waiting), Some(false));
    assert_eq!(tx.claim_to(a3, 4, 0, waiting), None);
}

/// A stand-in for the job key's keyed hash (`wire::mac` is above this
/// layer): depends on the key byte and on every byte of the context.
pub(super) fn prover(key: u8) -> Option<ExpressProver> {
    Some(std::sync::Arc::new(move |ctx: &[u8]| {
        let mut out = [key; 32];
        for (i, &b) in ctx.iter().enumerate() {
            out[i % 32] = out[i % 32].rotate_left(3) ^ b.wrapping_add(key);
        }
        out
    }))
}
