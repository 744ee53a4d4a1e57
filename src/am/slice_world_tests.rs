//! Loss repair beside a busy neighbour taking time slices (issue 37's
//! "quiet or beside one busy process"): the server off the CPU 4 ms of
//! every 8 ms (a core shared with one busy process), or 6 ms of every 8
//! (shared with more), `World::deschedule`; a serial ping-pong at 1% and
//! 5% random loss both ways, its mean against the same sliced ping-pong's
//! loss-free mean. A round trip stretched across a slice is held, not
//! averaged into the timers (`proto/rtt.rs` `sample_from`): averaged in,
//! every loss in the next ten or so round trips waited milliseconds
//! (main: 4/4 ms at 5% 1.77-2.08x, 2/6 ms at 1% 1.45-1.46x; quiet 1.37x
//! and 1.07x).
//!
//! A failing test prints its seed (`RAMP_SIM_SEED` replays it).

use super::*;
use crate::rng::Rng;

/// The mean round trip of `n` serial requests at `loss` both ways, the
/// server off the CPU `off` of every `on + off` (none when `off` is 0);
/// and the copies both sides resent.
fn sliced_mean(seed: u64, loss: f64, on: Nanos, off: Nanos, n: u32) -> (Nanos, u64) {
    let p = Pair::new(
        World::new(FaultConfig {
            seed,
            loss,
            ..lan()
        }),
        (n + 100) as usize,
    );
    loss_free_rtt(&p, 0, 100);
    if off > 0 {
        let until = p.w.now().plus(1_000_000 * MILLIS);
        let (w, s) = (p.w.clone(), p.server.index);
        time_slices(&w, s, on, off, until);
    }
    let t0 = p.w.now();
    for k in 100..100 + n {
        p.round_trip(k);
    }
    let copies = p.client.ep.statistics().packets_retransmitted
        + p.server.ep.statistics().packets_retransmitted;
    (p.w.now().since(t0) / n as Nanos, copies)
}

/// The bounds: a loss repaired beside the busy neighbour costs about what
/// it costs quiet (1.07x at 1%, 1.37x at 5% on this model), with margin.
#[test]
fn random_loss_beside_a_busy_neighbour_costs_about_what_it_costs_quiet() {
    for seed in seeds(3) {
        for (on, off) in [(4, 4), (2, 6)] {
            let (clean, c0) = sliced_mean(seed, 0.0, on * MILLIS, off * MILLIS, 3000);
            for (loss, most) in [(0.01, 1.3), (0.05, 1.7)] {
                let (m, c) = sliced_mean(seed, loss, on * MILLIS, off * MILLIS, 3000);
                let x = m as f64 / clean as f64;
                eprintln!(
                    "seed {seed}: server off {off} of every {} ms, loss {loss}: mean {} us, loss-free {} us ({c} and {c0} copies resent): {x:.2}x",
                    on + off,
                    m / 1000,
                    clean / 1000,
                );
                assert!(
                    x <= most,
                    "seed {seed}: {on}/{off} ms slices, loss {loss}: {x:.2}x the loss-free mean (at most {most})"
                );
            }
        }
    }
}

/// Node `node` off the CPU for random slices until `until`: on for 1 to
/// 4 ms, then off for 2 to 16 ms (its share of a core on a 2-core host at
/// load 10, where the scheduler runs several busy processes in turn).
pub(super) fn random_slices(w: &World, node: usize, rng: Rng, until: Instant) {
    let mut rng = rng;
    let on = MILLIS + rng.below(3 * MILLIS);
    let off = 2 * MILLIS + rng.below(14 * MILLIS);
    w.deschedule(node, off);
    let next = w.now().plus(off + on);
    if next < until {
        w.at(next, move |w| random_slices(w, node, rng, until));
    }
}

/// The mean round trip of `n` serial requests at `loss` both ways, both
/// nodes off the CPU in random slices (`random_slices`); and the copies
/// both sides resent.
fn loaded_mean(seed: u64, loss: f64, n: u32) -> (Nanos, u64) {
    let p = Pair::new(
        World::new(FaultConfig {
            seed,
            loss,
            ..lan()
        }),
        (n + 100) as usize,
    );
    loss_free_rtt(&p, 0, 100);
    let until = p.w.now().plus(1_000_000 * MILLIS);
    let (w, c, s) = (p.w.clone(), p.client.index, p.server.index);
    random_slices(&w, s, Rng::new(seed * 2 + 1), until);
    random_slices(&w, c, Rng::new(seed * 2 + 2), until);
    let t0 = p.w.now();
    for k in 100..100 + n {
        p.round_trip(k);
    }
    let copies = p.client.ep.statistics().packets_retransmitted
        + p.server.ep.statistics().packets_retransmitted;
    (p.w.now().since(t0) / n as Nanos, copies)
}

/// Issue 37's real case: on a 2-core host at load 10 both processes are
/// off the CPU for slices of a few ms, most copies are reported needless,
/// and the floor learnt from them reaches its cap (4 minimum RTOs); random
/// loss must still cost at most 1.5x the loss-free mean at 1% and 3x at
/// 5% (issue 37's targets, `ramp bench --repair --busy`); asserted with
/// less: 1.5x and 2x. The receiver tells a loss from a peer away (a copy
/// it does not report twice): while losses are frequent the first probe
/// waits neither for the floor nor for stretched round trips
/// (`proto/rtt.rs` `loss_rate`, `calm`): 1.14-1.27x at 1%, 1.32-1.42x at
/// 5% (seeds 1-6). Before (h-floor): 2.69-3.41x at 5%; the probe never
/// waiting for the floor, 2.01-2.80x (and issue 8's
/// `descheduled_receiver_causes_almost_no_retransmission` broken); the
/// rest was the probe timed by round trips stretched by slices (a 5 ms
/// SRTT, a 30 ms probe).
#[test]
fn random_loss_on_a_loaded_host_costs_little_more_than_loss_free() {
    for seed in seeds(3) {
        let (clean, c0) = loaded_mean(seed, 0.0, 3000);
        for (loss, most) in [(0.01, 1.5), (0.05, 2.0)] {
            let (m, c) = loaded_mean(seed, loss, 3000);
            let x = m as f64 / clean as f64;
            eprintln!(
                "seed {seed}: loaded host, loss {loss}: mean {} us, loss-free {} us ({c} and {c0} copies resent): {x:.2}x",
                m / 1000,
                clean / 1000,
            );
            assert!(
                x <= most,
                "seed {seed}: loss {loss}: {x:.2}x the loss-free mean (at most {most})"
            );
        }
    }
}
