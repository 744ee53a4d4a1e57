//! Rails through the whole AM layer (issue 38 items 4-6, 8), in the
//! simulated world: two nodes with two rails each (`World::node_with_rails`,
//! every rail its own network), node 0 streaming numbered requests of
//! mixed sizes to node 1 while a rail goes down and up (its interface:
//! ENETDOWN), fails silently, both are partitioned for 3 s, or for longer
//! than `RAMP_PEER_TIMEOUT_MS`, or the receiver is off the CPU. Every
//! request is handled at most once; outside the long partition exactly
//! once and none returned; past the peer timeout the rest come back to
//! handler 0 with EUNREACHABLE. Deterministic; a failure prints its seed
//! (`RAMP_SIM_SEED=n` replays it). The protocol's own suite beside it:
//! `proto/rails_tests.rs`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::am::handler::args::{handler, Data};
use crate::am::handler::message::Message;
use crate::am::PeerPath;
use crate::config::Config;
use crate::proto::PathState;
use crate::sim::{seeds, Node, World};
use crate::time::{Nanos, MILLIS};

const TAG: u64 = 0x7a11;
const H: u8 = 20;

fn cfg(peer_timeout: Nanos) -> Config {
    let mut c = Config::from_lookup(|_| None).unwrap();
    c.proto.peer_timeout = peer_timeout;
    c
}

/// Two nodes of two rails, mapped to each other; node 1 counts each
/// request by its number, node 0 counts what comes back (and how many
/// came back EUNREACHABLE).
struct Pair {
    w: World,
    n0: Node,
    n1: Node,
    seen: Arc<Mutex<Vec<u32>>>,
    returned: Arc<AtomicU64>,
    unreachable: Arc<AtomicU64>,
}

fn pair(seed: u64, peer_timeout: Nanos) -> Pair {
    let w = World::seeded(seed);
    let c = cfg(peer_timeout);
    let (n0, n1) = (w.node_with_rails(&c, 2), w.node_with_rails(&c, 2));
    super::tests::connect_nodes(&[&n0, &n1], TAG, 16);
    let seen: Arc<Mutex<Vec<u32>>> = Default::default();
    let s = seen.clone();
    n1.ep.set_handler(
        H,
        handler(move |h| {
            let k = h.args[0] as usize;
            if let Data::Medium(buf) = &h.data {
                assert!(buf.iter().all(|&x| x == k as u8), "payload of {k}");
            }
            let mut s = s.lock();
            if s.len() <= k {
                s.resize(k + 1, 0);
            }
            s[k] += 1;
        }),
    );
    let (returned, unreachable) = super::tests::count_returned(&n0.ep, || {});
    Pair {
        w,
        n0,
        n1,
        seen,
        returned,
        unreachable,
    }
}

impl Pair {
    /// Requests `from..to` from node 0 (short, or medium up to 3 KB),
    /// each `gap` apart in virtual time; then until all are answered.
    fn stream(&self, from: u32, to: u32, gap: Nanos) {
        for k in from..to {
            let len = (k as usize * 131) % 3000;
            let (args, payload) = ([k], vec![k as u8; len]);
            let m = if len < 100 {
                Message::short(H, &args)
            } else {
                Message::medium(H, &args, &payload)
            };
            self.n0.ep.request(1, &m, false).unwrap();
            self.w.run_for(gap);
        }
        let done = self
            .w
            .run_until(30_000 * MILLIS, || self.n0.ep.unanswered_requests() == 0);
        assert!(done, "seed {}: requests still unanswered", self.w.seed());
    }

    fn assert_exactly_once(&self, n: u32) {
        let seed = self.w.seed();
        assert_eq!(
            self.returned.load(Ordering::SeqCst),
            0,
            "seed {seed}: returned"
        );
        let seen = self.seen.lock();
        assert_eq!(seen.len(), n as usize, "seed {seed}");
        assert!(seen.iter().all(|&c| c == 1), "seed {seed}: each once");
    }

    /// Node `i`'s paths to the other node.
    fn paths(&self, i: usize) -> Vec<PeerPath> {
        let (me, peer) = if i == 0 {
            (&self.n0, &self.n1)
        } else {
            (&self.n1, &self.n0)
        };
        me.ep.peer_paths(peer.ep.addr()).unwrap()
    }

    /// Node 0's path on rail `k` to node 1's rail `k`.
    fn rail_path(&self, k: usize) -> PeerPath {
        let ip = self.w.rail_ip(1, k);
        let p = self
            .paths(0)
            .into_iter()
            .find(|p| p.rail as usize == k && p.remote.ip() == ip);
        p.unwrap_or_else(|| panic!("seed {}: no rail {k} path", self.w.seed()))
    }
}

#[test]
fn both_rails_are_confirmed_and_carry_requests_exactly_once() {
    for seed in seeds(3) {
        let p = pair(seed, 10_000 * MILLIS);
        p.stream(0, 50, MILLIS);
        p.assert_exactly_once(50);
        for k in 0..2 {
            assert_eq!(
                p.rail_path(k).state,
                PathState::Active,
                "seed {seed}: rail {k}"
            );
        }
        // the cross paths (rail 0 to rail 1) lead nowhere: never confirmed
        let cross = p
            .paths(0)
            .into_iter()
            .filter(|x| x.state == PathState::Unconfirmed);
        assert_eq!(cross.count(), 2, "seed {seed}: {:?}", p.paths(0));
    }
}

#[test]
fn one_rail_down_then_up_then_the_other_loses_and_repeats_nothing() {
    for seed in seeds(3) {
        let p = pair(seed, 10_000 * MILLIS);
        p.stream(0, 20, MILLIS);
        let (w, t) = (&p.w, p.w.now());
        for (k, down, at) in [
            (0, true, 10),
            (0, false, 500),
            (1, true, 1500),
            (1, false, 2000),
        ] {
            w.at(t.plus(at * MILLIS), move |w| {
                w.set_rail_down(0, k, down);
                w.set_rail_down(1, k, down);
            });
        }
        p.stream(20, 400, 7 * MILLIS);
        p.w.run_for(1000 * MILLIS);
        p.assert_exactly_once(400);
        for k in 0..2 {
            let r = p.rail_path(k);
            assert!(r.failures >= 1, "seed {seed}: rail {k} never failed: {r:?}");
            assert_eq!(
                r.state,
                PathState::Active,
                "seed {seed}: rail {k} back: {r:?}"
            );
            assert!(r.bytes_sent > 0, "seed {seed}: rail {k} carried nothing");
        }
    }
}

#[test]
fn a_rail_that_drops_everything_fails_and_its_traffic_moves() {
    for seed in seeds(3) {
        let p = pair(seed, 10_000 * MILLIS);
        p.stream(0, 20, MILLIS);
        let (w, t) = (&p.w, p.w.now());
        let before = p.rail_path(1).bytes_sent;
        w.at(t.plus(10 * MILLIS), |w| w.set_rail_cut(0, 1, 0, true));
        w.at(t.plus(1500 * MILLIS), |w| w.set_rail_cut(0, 1, 0, false));
        p.stream(20, 300, 7 * MILLIS);
        p.w.run_for(1500 * MILLIS);
        p.assert_exactly_once(300);
        let (r0, r1) = (p.rail_path(0), p.rail_path(1));
        assert_eq!(r0.failures, 1, "seed {seed}: {r0:?}");
        assert_eq!(
            r0.state,
            PathState::Active,
            "seed {seed}: recovered: {r0:?}"
        );
        assert_eq!(r1.failures, 0, "seed {seed}: {r1:?}");
        assert!(
            r1.bytes_sent > before,
            "seed {seed}: rail 1 took the traffic"
        );
    }
}

#[test]
fn both_rails_partitioned_for_three_seconds_return_nothing() {
    for seed in seeds(3) {
        let p = pair(seed, 10_000 * MILLIS);
        p.stream(0, 20, MILLIS);
        let (w, t) = (&p.w, p.w.now());
        for (cut, at) in [(true, 10), (false, 3010)] {
            w.at(t.plus(at * MILLIS), move |w| {
                w.set_rail_cut(0, 1, 0, cut);
                w.set_rail_cut(0, 1, 1, cut);
            });
        }
        p.stream(20, 200, 20 * MILLIS);
        p.w.run_for(1000 * MILLIS);
        p.assert_exactly_once(200);
    }
}

#[test]
fn a_partition_past_the_peer_timeout_returns_eunreachable_to_handler_zero() {
    for seed in seeds(3) {
        let p = pair(seed, 1000 * MILLIS);
        p.stream(0, 20, MILLIS);
        p.assert_exactly_once(20);
        p.w.set_rail_cut(0, 1, 0, true);
        p.w.set_rail_cut(0, 1, 1, true);
        // 10 requests into the partition: none can be answered
        for k in 20..30 {
            p.n0.ep.request(1, &Message::short(H, &[k]), false).unwrap();
        }
        let back =
            p.w.run_until(5000 * MILLIS, || p.returned.load(Ordering::SeqCst) == 10);
        assert!(
            back,
            "seed {seed}: {} returned",
            p.returned.load(Ordering::SeqCst)
        );
        assert_eq!(p.unreachable.load(Ordering::SeqCst), 10, "seed {seed}");
        let seen = p.seen.lock();
        assert!(seen.iter().all(|&c| c <= 1), "seed {seed}: at most once");
    }
}

/// Issue 38's flapping (`proto/path/suspect.rs`): the receiver off the CPU
/// for 20 to 300 ms at a time, both rails healthy: no path fails.
#[test]
fn a_receiver_off_the_cpu_fails_no_rail() {
    for seed in seeds(3) {
        let p = pair(seed, 10_000 * MILLIS);
        p.stream(0, 20, MILLIS);
        let (w, t) = (&p.w, p.w.now());
        let mut at = 10;
        for off in [20, 60, 100, 200, 300, 100] {
            w.at(t.plus(at * MILLIS), move |w| w.deschedule(1, off * MILLIS));
            at += off + 150;
        }
        p.stream(20, 400, 5 * MILLIS);
        p.w.run_for(500 * MILLIS);
        p.assert_exactly_once(400);
        for i in 0..2 {
            for r in p.paths(i) {
                assert_eq!(r.failures, 0, "seed {seed}: node {i}: {r:?}");
            }
        }
    }
}
