//! A loss-free serial ping-pong whose ends are off the CPU now and then
//! for a little longer than the tail-loss probe's time (an operating
//! system's hiccups: a kernel thread or another task woken on the core, a
//! virtual CPU's steal; a few hundred us, some hundred times a second on
//! a quiet host): what made `ramp bench`'s loss-free UDP ping-pong resend
//! 0.14-0.42% of its packets and send hundreds of ACKs on their own.
//!
//! Each such hiccup outlasted the probe (two round trips and twice the
//! ACK delay), and its copy reached the peer just after the first: the
//! receiver reported it needless (D-SACK, an ACK on its own), and since
//! it was answered promptly after the copy, nothing was learnt, so every
//! hiccup cost a copy. The timers now learn from it (`proto/rtt.rs`,
//! `hiccup`): while most copies are reported needless and real losses are
//! rare, the probe waits for the peer's hiccups too.
//!
//! A failing test prints its seed (`RAMP_SIM_SEED` replays it).

use super::*;
use crate::rng::Rng;
use crate::time::MICROS;

/// Node `node` off the CPU for `span.0..=span.1` every `every` on average
/// (1/2 to 3/2 of it), for as long as the world runs.
/// (`count` counts them.)
fn hiccups(
    w: &World,
    node: usize,
    mut rng: Rng,
    span: (Nanos, Nanos),
    every: Nanos,
    count: Arc<AtomicU64>,
) {
    let next = w.now().plus(every / 2 + rng.below(every));
    let d = span.0 + rng.below(span.1 - span.0 + 1);
    w.at(next, move |w| {
        w.deschedule(node, d);
        count.fetch_add(1, Ordering::SeqCst);
        hiccups(w, node, rng, span, every, count);
    });
}

/// The server, then the client, off the CPU 1.5 to 3 probe times (on the
/// simulated LAN's 40 us round trip: 200-400 us) about every 2 ms, over
/// 4000 round trips: after the first few, the hiccups cost next to no
/// copies: 7-9 copies and as many ACKs on their own in 91-92 hiccups
/// (main, seed 1, the server's: 103 copies, 102 ACKs on their own in 91).
#[test]
fn hiccups_of_a_peer_a_little_longer_than_the_probe_cost_few_copies() {
    for seed in seeds(3) {
        for who in ["server", "client"] {
            let p = Pair::new(World::seeded(seed), 4200);
            let rtt = loss_free_rtt(&p, 0, 100);
            let node = if who == "server" {
                p.server.index
            } else {
                p.client.index
            };
            let count = Arc::new(AtomicU64::new(0));
            hiccups(
                &p.w,
                node,
                Rng::new(seed),
                (200 * MICROS, 400 * MICROS),
                2 * MILLIS,
                count.clone(),
            );
            let t0 = p.w.now();
            for k in 100..4100 {
                p.round_trip(k);
            }
            let mean = p.w.now().since(t0) / 4000;
            let n = count.load(Ordering::SeqCst);
            let (c, s) = (p.client.ep.statistics(), p.server.ep.statistics());
            let copies = c.packets_retransmitted + s.packets_retransmitted;
            let acks = c.acks_sent + s.acks_sent;
            eprintln!(
                "seed {seed}: the {who} off the CPU 200-400 us about every 2 ms ({n} times), loss-free: \
                 {copies} copies resent, {acks} ACKs on their own; mean round trip {} us (loss-free, no hiccups: {} us)",
                mean / 1000,
                rtt / 1000
            );
            assert!(n >= 50, "seed {seed}: {n} hiccups");
            assert!(
                copies * 10 <= n,
                "seed {seed}: {copies} copies resent in {n} hiccups of the {who}"
            );
        }
    }
}
