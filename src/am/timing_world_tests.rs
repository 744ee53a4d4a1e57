//! What depends on time in the integration tests over real sockets, proven
//! here on virtual time (`sim::World`), where a loaded machine cannot
//! change it: the tests over real processes assert only what holds at any
//! speed, and print the figures these assert.
//!
//! - ACKs ride on a ping-pong's requests and replies, about one datagram
//!   a message (`tests/am_udp_acks.rs`);
//! - a burst of requests waiting at the replier is answered in fewer
//!   datagrams than packets (`tests/am_udp_batch.rs`);
//! - a request held behind an unanswered one waits for the sender's next
//!   call, or leaves with the progress thread while the program computes,
//!   over the network and over the shared-memory express lane
//!   (`tests/am_udp_batch.rs`, `tests/shm_express.rs`);
//! - a stream of 64 KiB long requests sends each one's small last
//!   fragment with the next one's first (`tests/am_udp_batch.rs`);
//! - every request to a killed receiver comes back EUNREACHABLE within a
//!   small multiple of the peer timeout (`tests/peer_death.rs`).
//!
//! A failing test prints its seed (`RAMP_SIM_SEED` replays it).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{handler, reply, Data, Message, VecSegment};
use crate::config::{Config, TransportChoice};
use crate::sim::{seeds, Node, Program, World};
use crate::time::{Nanos, MILLIS};
use crate::wire::{self, Integrity};

const TAG: u64 = 0x7111;

fn cfg() -> Config {
    Config::from_lookup(|_| None).unwrap()
}

/// `am::tests::connect_nodes` with this file's `TAG`.
fn connect(nodes: &[&Node], depth: i32) {
    super::tests::connect_nodes(nodes, TAG, depth);
}

fn counter() -> Arc<AtomicU64> {
    Arc::new(AtomicU64::new(0))
}

/// Datagrams and the packets in them sent from each of `from` from now
/// on, as the network sees them (`World::tap`; a world has one tap).
fn count_from(w: &World, from: &[SocketAddr]) -> Arc<Mutex<Vec<(u64, u64)>>> {
    let c = Arc::new(Mutex::new(vec![(0u64, 0u64); from.len()]));
    let (c2, from) = (c.clone(), from.to_vec());
    w.tap(move |src, _, bytes| {
        if let Some(i) = from.iter().position(|&a| a == src) {
            let p = wire::packets(&Integrity::Crc32c, bytes).count() as u64;
            let mut c = c2.lock();
            c[i].0 += 1;
            c[i].1 += p;
        }
        true
    });
    c
}

/// Over UDP a ping-pong's ACKs ride on the next request and reply: about
/// one datagram per message from each end, not an ACK datagram beside
/// each one (the express lane's ACK flush before a record, once also done
/// for UDP peers, made it three datagrams a round trip). On a loaded
/// machine a round trip may outlast the ACK delay and add standalone ACKs:
/// `tests/am_udp_acks.rs` prints its counts and asserts no bound.
#[test]
fn a_ping_pongs_acks_ride_on_its_requests_and_replies() {
    for seed in seeds(3) {
        let w = World::seeded(seed);
        let (n0, n1) = (w.node(&cfg()), w.node(&cfg()));
        connect(&[&n0, &n1], 4);
        n1.ep.set_handler(
            10,
            handler(|h| reply(h.token, &Message::short(11, &[])).unwrap()),
        );
        let replies = counter();
        let r = replies.clone();
        n0.ep.set_handler(
            11,
            handler(move |_| {
                r.fetch_add(1, Ordering::SeqCst);
            }),
        );
        // the association, and the first round trips
        for _ in 0..10 {
            n0.ep.request(1, &Message::short(10, &[]), false).unwrap();
        }
        assert!(w.run_until(100 * MILLIS, || replies.load(Ordering::SeqCst) == 10));
        let counts = count_from(&w, &[n0.ep.addr(), n1.ep.addr()]);
        const N: u64 = 500;
        for i in 0..N {
            n0.ep.request(1, &Message::short(10, &[]), false).unwrap();
            while replies.load(Ordering::SeqCst) < 11 + i {
                n0.bundle.poll().unwrap();
            }
        }
        let c = counts.lock().clone();
        let (d0, d1) = (c[0].0, c[1].0);
        // one each per round trip, a handful besides (an ACK delay that
        // ran out at the end); an ACK datagram beside each message: 2 N
        assert!(
            d0 <= N + 5 && d1 <= N + 5,
            "seed {seed}: {d0} and {d1} datagrams for {N} round trips"
        );
    }
}

/// A burst of replies: 16 requests, each its own datagram
/// (`request_batch` 0), wait in the replier's inbox while it is off the
/// CPU; the poll that takes them runs 16 handlers whose replies leave
/// together, several packets to a datagram; each reply runs its handler
/// once. (Over real sockets how many the replier's receives take at once
/// depends on how far the burst got: `tests/am_udp_batch.rs` prints its
/// counts.)
#[test]
fn a_burst_of_replies_leaves_in_fewer_datagrams_than_packets() {
    for seed in seeds(3) {
        let w = World::seeded(seed);
        let mut c = cfg();
        c.request_batch = 0;
        let (n0, n1) = (w.node(&c), w.node(&c));
        connect(&[&n0, &n1], 32);
        let seen: Arc<Mutex<Vec<u32>>> = Default::default();
        let s = seen.clone();
        n0.ep
            .set_handler(11, handler(move |h| s.lock().push(h.args[0])));
        n1.ep.set_handler(
            10,
            handler(|h| reply(h.token, &Message::short(11, &[h.args[0]])).unwrap()),
        );
        n0.ep
            .set_handler(0, handler(|h| panic!("returned: {:?}", h.args)));
        // the association and a first round trip, then quiet
        n0.ep
            .request(1, &Message::short(10, &[1000]), false)
            .unwrap();
        assert!(w.run_until(100 * MILLIS, || seen.lock().len() == 1));
        w.run_for(100 * MILLIS);
        // the replier off the CPU (less than the first retransmission
        // timeout: no copy of a request comes twice) while 16 arrive
        w.deschedule(n1.index, 2 * MILLIS);
        let counts = count_from(&w, &[n0.ep.addr(), n1.ep.addr()]);
        for k in 0..16 {
            n0.ep.request(1, &Message::short(10, &[k]), false).unwrap();
        }
        assert!(w.run_until(100 * MILLIS, || seen.lock().len() == 17));
        let c = counts.lock().clone();
        let ((d_req, p_req), (d, p)) = (c[0], c[1]);
        let mut got = seen.lock().clone();
        got.sort_unstable();
        let want: Vec<u32> = (0..16).chain([1000]).collect();
        assert_eq!(got, want, "seed {seed}: each reply once");
        assert!(
            d_req >= 16 && p_req >= 16,
            "seed {seed}: the requests went one a datagram: {p_req} packets in {d_req}"
        );
        assert!(p >= 16, "seed {seed}: {p} packets");
        // bundled: at least two packets a datagram on average
        assert!(d * 2 <= p, "seed {seed}: {p} packets in {d} datagrams");
    }
}

/// The replier of `a_held_request_...`: handler 10 counts itself in `ran`
/// and answers 11; handler 13 counts itself in `slow` and answers 11.
fn held_request_replier(n: &Node) -> (Arc<AtomicU64>, Arc<AtomicU64>) {
    let (ran, slow) = (counter(), counter());
    let (r, s) = (ran.clone(), slow.clone());
    n.ep.set_handler(
        10,
        handler(move |h| {
            r.fetch_add(1, Ordering::SeqCst);
            reply(h.token, &Message::short(11, &[h.args[0]])).unwrap();
        }),
    );
    n.ep.set_handler(
        13,
        handler(move |h| {
            s.fetch_add(1, Ordering::SeqCst);
            reply(h.token, &Message::short(11, &[0])).unwrap();
        }),
    );
    (ran, slow)
}

/// A request held behind an unanswered one (Nagle's rule for requests,
/// `am/batch.rs`; over the express lane, its record held in the ring's
/// sender) waits for the sender's next call while the program computes,
/// however long: the earlier one goes at once and is answered, the held
/// one does not leave. The next call sends it. With a progress thread it
/// leaves while the program computes, the earlier one's answer waking
/// the thread. (`tests/am_udp_batch.rs` and `tests/shm_express.rs` show
/// over real sockets and rings that each request runs once, and that the
/// progress thread sends the held one.)
#[test]
fn a_held_request_waits_for_a_call_or_leaves_with_the_progress_thread() {
    for seed in seeds(3) {
        for transport in [TransportChoice::Udp, TransportChoice::Shm] {
            held_request(seed, transport);
        }
    }
}

fn held_request(seed: u64, transport: TransportChoice) {
    const DEPTH: i32 = 8;
    let what = format!("seed {seed}, {transport:?}");
    let w = World::seeded(seed);
    let mut c = cfg();
    c.transport = transport;
    let (n0, n1) = (w.node(&c), w.node(&c));
    connect(&[&n0, &n1], DEPTH);
    let (ran, slow) = held_request_replier(&n1);
    let answers = counter();
    let a = answers.clone();
    n0.ep.set_handler(
        11,
        handler(move |_| {
            a.fetch_add(1, Ordering::SeqCst);
        }),
    );
    n0.ep
        .set_handler(0, handler(|h| panic!("returned: {:?}", h.args)));
    // bursts that wait for credits: the association (and the express
    // lane, whose first requests go by the network while the ring is set
    // up)
    for _ in 0..100 {
        let r = ran.load(Ordering::SeqCst);
        for _ in 0..=DEPTH {
            n0.ep.request(1, &Message::short(10, &[0]), false).unwrap();
        }
        let want = r + DEPTH as u64 + 1;
        assert!(w.run_until(100 * MILLIS, || ran.load(Ordering::SeqCst) == want));
        assert!(w.run_until(100 * MILLIS, || answers.load(Ordering::SeqCst) == want));
        if transport != TransportChoice::Shm || n0.ep.express_stats().requests_sent > 0 {
            break;
        }
    }
    let x0 = n0.ep.express_stats().requests_sent;
    if transport == TransportChoice::Shm {
        assert!(x0 > 0, "{what}: the express lane never opened");
    }
    let r0 = ran.load(Ordering::SeqCst);
    // from here the program computes between its calls
    w.set_program(n0.index, Program::Computes);
    n0.ep.request(1, &Message::short(13, &[]), false).unwrap();
    n0.ep.request(1, &Message::short(10, &[1]), false).unwrap();
    w.run_for(1000 * MILLIS);
    assert_eq!(
        slow.load(Ordering::SeqCst),
        1,
        "{what}: the slow one went at once"
    );
    assert_eq!(
        ran.load(Ordering::SeqCst),
        r0,
        "{what}: the quick one left without a call"
    );
    // a call sends it
    n0.bundle.poll().unwrap();
    assert!(
        w.run_until(100 * MILLIS, || ran.load(Ordering::SeqCst) == r0 + 1),
        "{what}: the call did not send the held request"
    );
    // with the progress thread it leaves while the program computes
    n0.bundle.set_progress_thread(true).unwrap();
    n0.ep.request(1, &Message::short(13, &[]), false).unwrap();
    n0.ep.request(1, &Message::short(10, &[2]), false).unwrap();
    assert!(
        w.run_until(1000 * MILLIS, || ran.load(Ordering::SeqCst) == r0 + 2),
        "{what}: the progress thread did not send the held request"
    );
    assert_eq!(slow.load(Ordering::SeqCst), 2, "{what}");
    if transport == TransportChoice::Shm {
        assert_eq!(
            n0.ep.express_stats().requests_sent,
            x0 + 4,
            "{what}: all by the lane"
        );
    }
    n0.bundle.set_progress_thread(false).unwrap();
    w.set_program(n0.index, Program::Polls);
    let want = ran.load(Ordering::SeqCst) + slow.load(Ordering::SeqCst);
    assert!(w.run_until(100 * MILLIS, || answers.load(Ordering::SeqCst) == want));
}

/// Byte `i` of long request `k`.
fn pattern(k: u32, i: usize) -> u8 {
    (i as u32)
        .wrapping_mul(13)
        .wrapping_add(k.wrapping_mul(101)) as u8
}

/// A stream of 64 KiB long requests, each behind unanswered ones: a long
/// request's small last fragment waits (at most `batch::TAIL_HOLD`) for
/// the next one's first and leaves in its datagram (`am/batch.rs`,
/// `proto/outbox.rs`). Over real sockets a sender that pauses (a loaded
/// machine) lets held fragments leave alone: `tests/am_udp_batch.rs`
/// prints its counts.
#[test]
fn a_stream_of_64_kib_long_requests_sends_each_last_fragment_with_the_next_first() {
    const LEN: usize = 65_536;
    const N: u32 = 300;
    for seed in seeds(3) {
        let w = World::seeded(seed);
        let (n0, n1) = (w.node(&cfg()), w.node(&cfg()));
        connect(&[&n0, &n1], 4);
        let seg = VecSegment::new(8 * LEN);
        n1.ep.set_segment(Some(seg.clone()));
        let ran = counter();
        let r = ran.clone();
        n1.ep.set_handler(
            30,
            handler(move |h| {
                let k = h.args[0];
                let Data::Long { addr, len } = h.data else {
                    panic!("a long request")
                };
                assert_eq!(len, LEN);
                let off = addr - super::SegmentMemory::base(&*seg);
                let bytes = seg.snapshot()[off..off + len].to_vec();
                assert!(
                    bytes.iter().enumerate().all(|(i, &x)| x == pattern(k, i)),
                    "long request {k}: its own bytes, whole"
                );
                assert_eq!(r.load(Ordering::SeqCst), u64::from(k), "in order, once");
                r.fetch_add(1, Ordering::SeqCst);
                reply(h.token, &Message::short(31, &[k])).unwrap();
            }),
        );
        let answers = counter();
        let a = answers.clone();
        n0.ep.set_handler(
            31,
            handler(move |_| {
                a.fetch_add(1, Ordering::SeqCst);
            }),
        );
        // the association first
        n1.ep.set_handler(32, handler(|_| {}));
        n0.ep.request(1, &Message::short(32, &[]), false).unwrap();
        assert!(w.run_until(100 * MILLIS, || n0.ep.unanswered_requests() == 0));
        // the datagrams from n0 that carry DATA, and their packets (the
        // ACKs for the replies, alone in small datagrams, not counted)
        let counts: Arc<Mutex<(u64, u64)>> = Default::default();
        {
            let (c, a0) = (counts.clone(), n0.ep.addr());
            w.tap(move |src, _, bytes| {
                let data = |p: &wire::Packet<'_>| {
                    matches!(p, wire::Packet::Data { .. } | wire::Packet::More { .. })
                };
                if src == a0 && wire::any_packet(bytes, data) {
                    let mut c = c.lock();
                    c.0 += 1;
                    c.1 += wire::packets(&Integrity::Crc32c, bytes).count() as u64;
                }
                true
            });
        }
        for k in 0..N {
            let data: Vec<u8> = (0..LEN).map(|i| pattern(k, i)).collect();
            let at = u64::from(k % 8) * LEN as u64;
            n0.ep
                .request(1, &Message::long(30, &[k], &data, at), false)
                .unwrap();
        }
        assert!(w.run_until(1000 * MILLIS, || answers.load(Ordering::SeqCst)
            == u64::from(N)));
        assert_eq!(ran.load(Ordering::SeqCst), u64::from(N));
        let (datagrams, packets) = *counts.lock();
        // a request's fragments (a small first, the bulk, a small last):
        // the last leaves in the datagram of the next one's first and bulk,
        // two datagrams a request without the hold (600); of each ten, two
        // go alone: one as the carried bytes pass 2 KiB, one while the
        // sender waits for a credit (4) past the hold (360 here)
        assert!(
            packets >= 3 * u64::from(N),
            "seed {seed}: {packets} packets"
        );
        assert!(
            datagrams * 4 <= u64::from(N) * 5,
            "seed {seed}: {packets} packets in {datagrams} datagrams: the last fragments went alone"
        );
    }
}

/// A receiver killed (`kill -9`) with `peer_timeout` 500 ms: every request
/// to it comes back to handler 0 with EUNREACHABLE, queued ones and new
/// ones alike while `request` blocks for credits, the last within three
/// peer timeouts of the kill. (`tests/peer_death.rs` kills a real process
/// and asserts every request comes back EUNREACHABLE, at any speed.)
#[test]
fn every_request_to_a_killed_receiver_comes_back_within_three_peer_timeouts() {
    const TIMEOUT: Nanos = 500 * MILLIS;
    for seed in seeds(3) {
        let w = World::seeded(seed);
        let mut c = cfg();
        c.proto.peer_timeout = TIMEOUT;
        let (n0, n1) = (w.node(&c), w.node(&c));
        connect(&[&n0, &n1], 16);
        n1.ep.set_handler(20, handler(|_| {}));
        let last = counter();
        let (l, clock) = (last.clone(), n0.ep.clock.clone());
        let (returned, unreachable) = super::tests::count_returned(&n0.ep, move || {
            l.store(clock.now().0, Ordering::SeqCst);
        });
        // one request that gets through: the association is up
        n0.ep.request(1, &Message::short(20, &[0]), false).unwrap();
        assert!(w.run_until(100 * MILLIS, || n0.ep.unanswered_requests() == 0));
        assert_eq!(returned.load(Ordering::SeqCst), 0);
        w.kill(n1.index);
        let killed = w.now();
        let n = 400u64;
        for k in 0..n {
            // blocks (polling) while the 16 credits are out
            n0.ep
                .request(1, &Message::medium(20, &[k as u32], &[7u8; 200]), false)
                .unwrap();
        }
        assert!(
            w.run_until(100 * TIMEOUT, || returned.load(Ordering::SeqCst) == n),
            "seed {seed}: {} of {n} returned",
            returned.load(Ordering::SeqCst)
        );
        assert_eq!(unreachable.load(Ordering::SeqCst), n, "seed {seed}");
        let took = last.load(Ordering::SeqCst) - killed.0;
        assert!(
            took < 3 * TIMEOUT,
            "seed {seed}: the last came back {} ms after the kill",
            took / MILLIS
        );
    }
}
