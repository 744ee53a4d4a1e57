//! Loss repaired in round trips, not milliseconds (issue 37, item 0),
//! proven on virtual time (`sim::World`: whole endpoints over a clean
//! simulated LAN, 20 us one way): exactly one request, one reply or one
//! acknowledgement is lost (`World::tap`), on an idle path (a serial
//! ping-pong) and in the middle of a busy one (32 requests outstanding),
//! and the time it cost is printed and bounded in round trips of the same
//! path measured loss-free in the same test; a receiver descheduled for
//! 50 ms costs at most a couple of needless copies, and random loss after
//! it is repaired as fast as before it (the floor the timers learn from a
//! descheduled peer does not slow the repair of random loss for good).
//!
//! Replies behind a lost one are not held for its repair, nor requests
//! behind a lost request; a request behind a lost put waits for it
//! (`repair_order_tests.rs`).
//!
//! A failing test prints its seed (`RAMP_SIM_SEED` replays it).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{handler, reply, Message};
use crate::config::Config;
use crate::fault::FaultConfig;
use crate::sim::{lan, seeds, Node, World};
use crate::time::{Instant, Nanos, MILLIS};
use crate::wire::{self, Packet, CHANNEL_REPLY, CHANNEL_REQUEST};

const TAG: u64 = 0x7e9a;
const H_ECHO: u8 = 10;
const H_PONG: u8 = 11;

fn cfg() -> Config {
    Config::from_lookup(|_| None).unwrap()
}

/// What the tap loses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lose {
    /// The first datagram from the client with the DATA of request `k`
    /// (its first argument).
    Request(u32),
    /// The first datagram from the server with the DATA of the reply to
    /// request `k`.
    Reply(u32),
    /// The first datagram from the client that is acknowledgements only
    /// (no DATA), once armed.
    Ack,
    /// The first datagram from the client with the DATA of a put.
    Put,
}

/// The client (node 0) and the server (node 1), the server answering
/// `H_ECHO` with `H_PONG` and the same argument; the client's `H_PONG`
/// stamps `answered[k]` with the virtual time.
struct Pair {
    w: World,
    client: Node,
    server: Node,
    answered: Arc<Mutex<Vec<Option<Instant>>>>,
    pongs: Arc<AtomicU64>,
    /// What the tap loses next (None: nothing), how many times more, and
    /// how many it lost.
    lose: Arc<Mutex<(Option<Lose>, u32, u32)>>,
}

fn carries(bytes: &[u8], ch: u8, k: u32) -> bool {
    wire::any_packet(bytes, |p| {
        matches!(p, Packet::Data { common, .. } if common.channel == ch) && data_arg(p) == Some(k)
    })
}

fn carries_put(bytes: &[u8]) -> bool {
    wire::any_packet(
        bytes,
        |p| matches!(p, Packet::Data { meta, .. } if meta.kind == wire::MsgKind::Put),
    )
}

/// The first argument of a DATA packet.
fn data_arg(p: &Packet<'_>) -> Option<u32> {
    match p {
        Packet::Data { meta, .. } if meta.nargs > 0 => Some(meta.args[0]),
        _ => None,
    }
}

fn acks_only(bytes: &[u8]) -> bool {
    let mut data = false;
    let mut ack = false;
    wire::any_packet(bytes, |p| {
        match p {
            Packet::Data { .. } | Packet::More { .. } => data = true,
            Packet::Ack { .. } => ack = true,
            _ => {}
        }
        false
    });
    ack && !data
}

impl Pair {
    fn new(w: World, slots: usize) -> Pair {
        let (client, server) = (w.node(&cfg()), w.node(&cfg()));
        for n in [&client, &server] {
            n.ep.set_tag(TAG);
            n.ep.map(0, client.ep.name(), TAG).unwrap();
            n.ep.map(1, server.ep.name(), TAG).unwrap();
            n.ep.set_expected_resources(2, 32).unwrap();
        }
        server.ep.set_handler(
            H_ECHO,
            handler(|h| reply(h.token, &Message::short(H_PONG, h.args)).unwrap()),
        );
        let answered: Arc<Mutex<Vec<Option<Instant>>>> = Arc::new(Mutex::new(vec![None; slots]));
        let pongs = Arc::new(AtomicU64::new(0));
        let (a, p, w2) = (answered.clone(), pongs.clone(), w.clone());
        client.ep.set_handler(
            H_PONG,
            handler(move |h| {
                a.lock()[h.args[0] as usize] = Some(w2.now());
                p.fetch_add(1, Ordering::SeqCst);
            }),
        );
        let lose: Arc<Mutex<(Option<Lose>, u32, u32)>> = Arc::new(Mutex::new((None, 0, 0)));
        let (l, c_addr, s_addr) = (lose.clone(), client.ep.addr(), server.ep.addr());
        w.tap(move |from, _, bytes| {
            let mut l = l.lock();
            let hit = match l.0 {
                Some(Lose::Request(k)) => from == c_addr && carries(bytes, CHANNEL_REQUEST, k),
                Some(Lose::Reply(k)) => from == s_addr && carries(bytes, CHANNEL_REPLY, k),
                Some(Lose::Ack) => from == c_addr && acks_only(bytes),
                Some(Lose::Put) => from == c_addr && carries_put(bytes),
                None => false,
            };
            if hit {
                l.1 -= 1;
                l.2 += 1;
                if l.1 == 0 {
                    l.0 = None;
                }
            }
            !hit
        });
        Pair {
            w,
            client,
            server,
            answered,
            pongs,
            lose,
        }
    }

    fn arm(&self, l: Lose) {
        self.arm_n(l, 1);
    }

    /// Loses the first `n` datagrams that `l` matches.
    fn arm_n(&self, l: Lose, n: u32) {
        *self.lose.lock() = (Some(l), n, 0);
    }

    /// Whether every datagram armed was lost.
    fn lost(&self) -> bool {
        let l = self.lose.lock();
        l.0.is_none() && l.2 > 0
    }

    /// One round trip of request `k`: its time.
    fn round_trip(&self, k: u32) -> Nanos {
        let t0 = self.w.now();
        let want = self.pongs.load(Ordering::SeqCst) + 1;
        self.client
            .ep
            .request(1, &Message::short(H_ECHO, &[k]), false)
            .unwrap();
        let p = self.pongs.clone();
        assert!(
            self.w
                .run_until(10_000 * MILLIS, || p.load(Ordering::SeqCst) >= want),
            "seed {}: request {k} answered",
            self.w.seed()
        );
        self.answered.lock()[k as usize].unwrap().since(t0)
    }

    /// Requests `from..to` kept `depth` outstanding: each one's latency.
    fn pipelined(&self, from: u32, to: u32, depth: u64) -> Vec<Nanos> {
        let base = self.pongs.load(Ordering::SeqCst);
        let mut sent = Vec::new();
        for k in from..to {
            let p = self.pongs.clone();
            let i = (k - from) as u64;
            assert!(self.w.run_until(10_000 * MILLIS, || {
                i - (p.load(Ordering::SeqCst) - base) < depth
            }));
            sent.push(self.w.now());
            self.client
                .ep
                .request(1, &Message::short(H_ECHO, &[k]), false)
                .unwrap();
        }
        let p = self.pongs.clone();
        let n = (to - from) as u64;
        assert!(self
            .w
            .run_until(10_000 * MILLIS, || p.load(Ordering::SeqCst) >= base + n));
        let a = self.answered.lock();
        (from..to)
            .zip(sent)
            .map(|(k, t)| a[k as usize].unwrap().since(t))
            .collect()
    }
}

fn median(mut v: Vec<Nanos>) -> Nanos {
    v.sort_unstable();
    v[v.len() / 2]
}

/// The loss-free round trip of the pair's path: the median of `n`.
fn loss_free_rtt(p: &Pair, from: u32, n: u32) -> Nanos {
    median((from..from + n).map(|k| p.round_trip(k)).collect())
}

fn rtts(d: Nanos, rtt: Nanos) -> f64 {
    d as f64 / rtt as f64
}

/// Lost on an idle path (a serial ping-pong): the round trip whose
/// request, or reply, was lost takes at most a few round trips (a
/// tail-loss probe on the channel that lost it, not a retransmission
/// timeout of milliseconds); the acknowledgement of a last reply, lost,
/// is repaired (the server hears that its reply arrived) as fast.
#[test]
fn one_loss_on_an_idle_path_is_repaired_in_a_few_round_trips() {
    for seed in seeds(3) {
        let p = Pair::new(World::seeded(seed), 400);
        let rtt = loss_free_rtt(&p, 0, 100);
        // lost once, and lost with its first copy (the probe)
        for (k, lose, n, most) in [
            (100, Lose::Request(100), 1, 5.0),
            (150, Lose::Reply(150), 1, 5.0),
            (180, Lose::Request(180), 2, 12.0),
            (190, Lose::Reply(190), 2, 12.0),
        ] {
            // a few prompt round trips between
            for j in k - 8..k {
                p.round_trip(j);
            }
            p.arm_n(lose, n);
            let d = p.round_trip(k);
            assert!(p.lost(), "seed {seed}: {lose:?} lost");
            eprintln!(
                "seed {seed}: idle path, {lose:?} lost {n} times: round trip {} us, {:.1} round trips of {} us",
                d / 1000,
                rtts(d, rtt),
                rtt / 1000
            );
            assert!(
                rtts(d, rtt) <= most,
                "seed {seed}: {lose:?} lost {n} times cost {:.1} round trips",
                rtts(d, rtt)
            );
        }
        // the last reply's ACK (nothing rides it: the client stops)
        for j in 200..220 {
            p.round_trip(j);
        }
        p.arm(Lose::Ack);
        let before = p.server.ep.statistics().packets_retransmitted;
        let t0 = p.w.now();
        p.round_trip(220);
        let srv = p.server.ep.clone();
        // the server resends its reply (its probe) and hears of it
        let repaired = p.w.run_until(10_000 * MILLIS, || {
            srv.statistics().packets_retransmitted > before && srv.statistics().acks_received > 0
        });
        assert!(
            repaired && p.lost(),
            "seed {seed}: the ACK lost and repaired"
        );
        let d = p.w.now().since(t0);
        eprintln!(
            "seed {seed}: idle path, the last reply's ACK lost: the server resent it {:.1} round trips after the request",
            rtts(d, rtt)
        );
        assert!(
            rtts(d, rtt) <= 6.0,
            "seed {seed}: {:.1} round trips",
            rtts(d, rtt)
        );
    }
}

/// Lost in the middle of a busy path (32 requests outstanding): the
/// request or reply lost, and the last request of the burst (a tail
/// loss), each cost at most a few round trips more than the burst's
/// median latency.
#[test]
fn one_loss_on_a_busy_path_is_repaired_in_a_few_round_trips() {
    for seed in seeds(3) {
        let p = Pair::new(World::seeded(seed), 2000);
        let rtt = loss_free_rtt(&p, 0, 100);
        let clean = median(p.pipelined(100, 400, 32));
        let mut from = 400;
        for lose in [Lose::Request(550), Lose::Reply(850), Lose::Request(1299)] {
            let k = match lose {
                Lose::Request(k) | Lose::Reply(k) => k,
                Lose::Ack | Lose::Put => unreachable!(),
            };
            p.arm(lose);
            let lat = p.pipelined(from, from + 300, 32);
            assert!(p.lost(), "seed {seed}: {lose:?} lost");
            let d = lat[(k - from) as usize];
            let worst = *lat.iter().max().unwrap();
            eprintln!(
                "seed {seed}: 32 outstanding, {lose:?} lost: its latency {} us ({:.1} round trips more than the median {} us), the worst {} us",
                d / 1000,
                rtts(d.saturating_sub(clean), rtt),
                clean / 1000,
                worst / 1000
            );
            assert!(
                rtts(worst.saturating_sub(clean), rtt) <= 6.0,
                "seed {seed}: {lose:?} lost cost {:.1} round trips",
                rtts(worst.saturating_sub(clean), rtt)
            );
            from += 300;
        }
    }
}

/// A server descheduled for 50 ms (nothing lost: its arrivals and its
/// timers wait) while the client's request waits for its answer costs at
/// most three needless copies each time (the probe's, which the floor
/// delays only once most copies were needless, and the RTO's, at the
/// floor and backed off once past it), and random loss after it
/// is repaired as fast as before: what the timers learn from a
/// descheduled peer is what its receiver reported (the needless copies
/// it got), and it does not make a lone lost packet wait milliseconds.
#[test]
fn a_descheduled_server_costs_few_copies_and_loss_after_it_is_repaired_fast() {
    for seed in seeds(3) {
        let p = Pair::new(World::seeded(seed), 1000);
        let rtt = loss_free_rtt(&p, 0, 100);
        let stalls = 5u32;
        let before = p.client.ep.statistics().packets_retransmitted;
        let dups_before = p.server.ep.statistics().duplicates_dropped;
        for s in 0..stalls {
            let k = 100 + 20 * s;
            for j in k..k + 10 {
                p.round_trip(j);
            }
            p.w.deschedule(p.server.index, 50 * MILLIS);
            let d = p.round_trip(k + 10);
            assert!(d >= 50 * MILLIS, "seed {seed}: the server was away");
        }
        let copies = p.client.ep.statistics().packets_retransmitted - before;
        let dups = p.server.ep.statistics().duplicates_dropped - dups_before;
        eprintln!("seed {seed}: {stalls} stalls of 50 ms: {copies} copies resent, {dups} needless");
        assert!(
            copies <= 3 * stalls as u64,
            "seed {seed}: {copies} copies in {stalls} stalls"
        );
        // the server runs again: 16 prompt round trips in a row and the
        // timers forget it was away; then random loss: each lost request
        // repaired in a few round trips
        for j in 200..220 {
            p.round_trip(j);
        }
        let mut worst = 0;
        for k in (300..400).step_by(10) {
            for j in k..k + 9 {
                p.round_trip(j);
            }
            p.arm(Lose::Request(k + 9));
            worst = worst.max(p.round_trip(k + 9));
        }
        eprintln!(
            "seed {seed}: after the stalls, a lost request costs at most {:.1} round trips",
            rtts(worst, rtt)
        );
        assert!(
            rtts(worst, rtt) <= 5.0,
            "seed {seed}: a lost request after the stalls cost {:.1} round trips",
            rtts(worst, rtt)
        );
    }
}

/// Random loss of 5% both ways on a serial ping-pong (the seed's faults):
/// the mean round trip stays within a small multiple of the loss-free one
/// (the 3x), every request answered once.
#[test]
fn five_percent_random_loss_costs_a_small_multiple_of_the_loss_free_round_trip() {
    for seed in seeds(3) {
        let clean = {
            let p = Pair::new(World::seeded(seed), 2100);
            loss_free_rtt(&p, 0, 100);
            let t: Nanos = (100..2100).map(|k| p.round_trip(k)).sum();
            t / 2000
        };
        let p = Pair::new(
            World::new(FaultConfig {
                seed,
                loss: 0.05,
                ..lan()
            }),
            2100,
        );
        loss_free_rtt(&p, 0, 100);
        let t: Nanos = (100..2100).map(|k| p.round_trip(k)).sum();
        let lossy = t / 2000;
        eprintln!(
            "seed {seed}: serial ping-pong, mean round trip {} us loss-free, {} us at 5% loss ({:.2}x)",
            clean / 1000,
            lossy / 1000,
            lossy as f64 / clean as f64
        );
        assert!(
            lossy <= 3 * clean,
            "seed {seed}: {:.2}x the loss-free round trip",
            lossy as f64 / clean as f64
        );
    }
}

/// Node `node` off the CPU for `off` of every `off + on` until `until`:
/// its share of a core beside one busy neighbour (time slices).
fn time_slices(w: &World, node: usize, on: Nanos, off: Nanos, until: Instant) {
    w.deschedule(node, off);
    let next = w.now().plus(off + on);
    if next < until {
        w.at(next, move |w| time_slices(w, node, on, off, until));
    }
}

/// Beside a busy neighbour (the server off the CPU 3 ms of every 6 ms, as
/// a scheduler shares a core between two busy processes), 5% random loss
/// both ways costs a small multiple of the same ping-pong's loss-free
/// mean: the timers learn that the peer is away from the needless copies
/// it reports, and forget it after 16 prompt round trips; while most
/// copies repair real losses the probe is not delayed by what they learnt,
/// so random loss is repaired by probes also just after a stall (only a
/// lost probe waits for the floor, 3.75 ms here); a round trip stretched
/// across a slice is not averaged into the timers (`proto/rtt.rs`
/// `sample_from`): 1.44-1.50x on this model (1.82-2.0x when it was, 3.3x
/// when the floor delayed every probe), within the 3x (printed by
/// `ramp bench --repair --busy` on a real host); main took 1564 round
/// trips for a loss after a stall. More slicings: `slice_world_tests.rs`.
#[test]
fn five_percent_random_loss_beside_a_busy_neighbour_costs_a_small_multiple() {
    for seed in seeds(3) {
        let mean = |loss: f64| {
            let p = Pair::new(
                World::new(FaultConfig {
                    seed,
                    loss,
                    ..lan()
                }),
                3100,
            );
            loss_free_rtt(&p, 0, 100);
            let until = p.w.now().plus(100_000 * MILLIS);
            let (w, s) = (p.w.clone(), p.server.index);
            time_slices(&w, s, 3 * MILLIS, 3 * MILLIS, until);
            let t0 = p.w.now();
            for k in 100..3100 {
                p.round_trip(k);
            }
            let copies = p.client.ep.statistics().packets_retransmitted
                + p.server.ep.statistics().packets_retransmitted;
            (p.w.now().since(t0) / 3000, copies)
        };
        let ((clean, c0), (lossy, c5)) = (mean(0.0), mean(0.05));
        eprintln!(
            "seed {seed}: beside a busy neighbour, mean round trip {} us loss-free ({c0} copies), {} us at 5% loss ({c5} copies): {:.2}x",
            clean / 1000,
            lossy / 1000,
            lossy as f64 / clean as f64
        );
        assert!(
            lossy <= 3 * clean,
            "seed {seed}: {:.2}x the loss-free round trip",
            lossy as f64 / clean as f64
        );
    }
}

#[path = "repair_order_tests.rs"]
mod order;

#[path = "slice_world_tests.rs"]
mod slice;

#[path = "pipe_world_tests.rs"]
mod pipe;

#[path = "hiccup_world_tests.rs"]
mod hiccup;
