//! Loss repair beside a busy neighbour taking time slices (issue 37's
//! "quiet or beside one busy process"): the server off the CPU 4 ms of
//! every 8 ms (`World::deschedule`), a serial ping-pong at random loss.
//!
//! A failing test prints its seed (`RAMP_SIM_SEED` replays it).

use super::*;

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

#[test]
fn explore_slices() {
    for (on, off) in [(4, 4), (2, 6), (0, 0)] {
        for seed in seeds(3) {
            let (clean, c0) = sliced_mean(seed, 0.0, on * MILLIS, off * MILLIS, 3000);
            for loss in [0.01, 0.05] {
                let (m, c) = sliced_mean(seed, loss, on * MILLIS, off * MILLIS, 3000);
                eprintln!(
                    "seed {seed}: {on}/{off} ms slices, loss {loss}: mean {} us vs {} us loss-free ({c} vs {c0} copies): {:.2}x",
                    m / 1000,
                    clean / 1000,
                    m as f64 / clean as f64
                );
            }
        }
    }
}
