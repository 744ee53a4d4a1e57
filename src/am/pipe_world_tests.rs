//! Issue 37's pipelined case on virtual time: 20,000 short requests kept
//! 32 outstanding, each answered at once, at 1% random loss both ways
//! (`ramp bench --repair`'s second figure; the issue measured p99.9
//! 20.6 ms, target under 1 ms): on a quiet LAN, and on a loaded host
//! (both nodes off the CPU in random slices, `slice_world_tests.rs`),
//! where the slices alone make the tail tens of ms and loss must add
//! little to it. Latencies are each request's, from its call to its
//! reply's handler.
//!
//! A failing test prints its seed (`RAMP_SIM_SEED` replays it).

use super::*;
use crate::rng::Rng;

/// The `q` quantile of `v` (sorted in place).
fn quantile(v: &mut [Nanos], q: f64) -> Nanos {
    v.sort_unstable();
    v[((v.len() as f64 * q) as usize).min(v.len() - 1)]
}

/// `n` requests kept 32 outstanding at `loss` both ways, both nodes off
/// the CPU in random slices when `loaded`: p50, p99, p99.9 of their
/// latencies, and the copies both sides resent.
fn pipelined(seed: u64, loss: f64, loaded: bool, n: u32) -> ([Nanos; 3], u64) {
    let p = Pair::new(
        World::new(FaultConfig {
            seed,
            loss,
            ..lan()
        }),
        (n + 100) as usize,
    );
    loss_free_rtt(&p, 0, 100);
    if loaded {
        let until = p.w.now().plus(1_000_000 * MILLIS);
        let (w, c, s) = (p.w.clone(), p.client.index, p.server.index);
        slice::random_slices(&w, s, Rng::new(seed * 2 + 1), until);
        slice::random_slices(&w, c, Rng::new(seed * 2 + 2), until);
    }
    let mut lat = p.pipelined(100, 100 + n, 32);
    let q = [0.5, 0.99, 0.999].map(|q| quantile(&mut lat, q));
    let copies = p.client.ep.statistics().packets_retransmitted
        + p.server.ep.statistics().packets_retransmitted;
    (q, copies)
}

fn us(q: [Nanos; 3]) -> [Nanos; 3] {
    q.map(|x| x / 1000)
}

/// Quiet: the p99.9 at 1% loss is under 1 ms (issue 37's target; about
/// 6 round trips of this LAN's 40 us: a loss found by the SACKs of the
/// packets after it, or by the tail-loss probe).
#[test]
fn pipelined_p999_at_one_percent_loss_is_under_a_millisecond() {
    for seed in seeds(3) {
        let (clean, _) = pipelined(seed, 0.0, false, 20_000);
        let (q, c) = pipelined(seed, 0.01, false, 20_000);
        eprintln!(
            "seed {seed}: 32 outstanding, p50/p99/p99.9 {:?} us at 1% loss ({c} copies resent), {:?} us loss-free",
            us(q),
            us(clean)
        );
        assert!(
            q[2] < MILLIS,
            "seed {seed}: p99.9 {} us at 1% loss (under 1000)",
            q[2] / 1000
        );
    }
}

/// Loaded host: the slices make the loss-free p99.9 20-27 ms; 1% loss
/// adds at most as much again (1.13-1.46x). The reordering window was
/// four times a variation that counts the slices (a peer off the CPU
/// stretches round trips, they are fed to the estimate), so a loss found
/// by later packets' SACKs waited up to 4 x RTTVAR, tens of ms, before
/// its repair (1.0x, 2.7x, 2.25x); while losses are frequent it is now
/// that of the prompt samples (`proto/rtt.rs` `reorder_window`).
#[test]
fn pipelined_tail_on_a_loaded_host_grows_little_with_one_percent_loss() {
    for seed in seeds(3) {
        let (clean, _) = pipelined(seed, 0.0, true, 20_000);
        let (q, c) = pipelined(seed, 0.01, true, 20_000);
        let x = q[2] as f64 / clean[2] as f64;
        eprintln!(
            "seed {seed}: loaded host, 32 outstanding, p50/p99/p99.9 {:?} us at 1% loss ({c} copies resent), {:?} us loss-free: p99.9 {x:.2}x",
            us(q),
            us(clean)
        );
        assert!(
            x <= 2.0,
            "seed {seed}: p99.9 {x:.2}x the loss-free p99.9 (at most 2)"
        );
    }
}
