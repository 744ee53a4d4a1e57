//! Pacing on a loaded host (issue 37): bulk puts between two simulated
//! processes that share their CPUs with busy neighbours (each off the CPU
//! 3 ms of every 6 ms, staggered, `World::deschedule`), over a bottleneck
//! link (`sim::Bottleneck`), with congestion control on and off
//! (as `RAMP_CC=off`): the goodput of the two, printed with the seed.
//!
//! What the model holds of a loaded host: a round trip stretched by a
//! peer off the CPU (its acknowledgements wait in its inbox), and a
//! sender that comes back from a time slice away with its pacing clock
//! behind (the call that waited returns only when it runs again). Not
//! modelled: a process that sleeps in `poll` waking later than its
//! deadline because others hold the CPU (it wakes on time here unless
//! its own slice is off).
//!
//! A failing test prints its seed (`RAMP_SIM_SEED` replays it).

use std::collections::VecDeque;

use crate::am::state::region::{REGION_READ, REGION_WRITE};
use crate::am::VecSegment;
use crate::config::Config;
use crate::sim::{seeds, Bottleneck, Node, World};
use crate::time::{Instant, Nanos, MILLIS};

const TAG: u64 = 0x9ace;
/// The bench's figure: 1 MiB puts, 16 outstanding.
const PUT: usize = 1 << 20;
const OUTSTANDING: usize = 16;

/// Congestion control on (the default) or off (as `RAMP_CC=off` sets it).
fn cfg(cc: bool) -> Config {
    let mut c = Config::from_lookup(|_| None).unwrap();
    c.proto.congestion = cc;
    c
}

/// Node `node` off the CPU `off` of every `off + on` until `until`.
fn time_slices(w: &World, node: usize, on: Nanos, off: Nanos, until: Instant) {
    w.deschedule(node, off);
    let next = w.now().plus(off + on);
    if next < until {
        w.at(next, move |w| time_slices(w, node, on, off, until));
    }
}

/// Goodput in bytes per second of virtual time of `puts` puts from node 0
/// to node 1 over a link of `rate` bytes per second, with congestion
/// control on or off, both nodes time-sliced when `loaded`.
fn goodput(seed: u64, cc: bool, rate: u64, loaded: bool, puts: usize) -> (u64, String) {
    let w = World::seeded(seed);
    let c = cfg(cc);
    let n: Vec<Node> = (0..2).map(|_| w.node(&c)).collect();
    for e in n.iter().map(|n| &n.ep) {
        e.set_tag(TAG);
        e.map(0, n[0].ep.name(), TAG).unwrap();
        e.map(1, n[1].ep.name(), TAG).unwrap();
        e.set_expected_resources(2, 8).unwrap();
    }
    let slots = 4;
    let mem = VecSegment::new(slots * PUT);
    let region = n[1]
        .ep
        .register_region(mem, REGION_READ | REGION_WRITE)
        .unwrap();
    let to = n[1].ep.addr();
    // a link to the receiver with a switch's deep queue: 30 ms of its rate
    // (rate 0: no link, the network's delays alone: loopback, whose only
    // queue is the receiver's inbox)
    let link = (rate > 0)
        .then(|| w.bottleneck(Bottleneck::new(rate, rate * 30 / 1000), move |_, t| t == to));
    let src = vec![7u8; PUT];
    let e = n[0].ep.clone();
    // the association and a first put
    let warm = e.put(1, region, 0, &src, None, true).unwrap();
    assert_eq!(e.wait_op(warm).unwrap(), 0);
    let t0 = w.now();
    if loaded {
        let until = t0.plus(100_000 * MILLIS);
        time_slices(&w, 0, 3 * MILLIS, 3 * MILLIS, until);
        let w2 = w.clone();
        w.at(t0.plus(MILLIS), move |_| {
            time_slices(&w2, 1, 3 * MILLIS, 3 * MILLIS, until)
        });
    }
    let mut ops = VecDeque::new();
    for i in 0..puts {
        if ops.len() == OUTSTANDING {
            assert_eq!(e.wait_op(ops.pop_front().unwrap()).unwrap(), 0);
        }
        let off = ((i % slots) * PUT) as u64;
        ops.push_back(e.put(1, region, off, &src, None, true).unwrap());
    }
    for op in ops {
        assert_eq!(e.wait_op(op).unwrap(), 0);
    }
    let took = w.now().since(t0).max(1);
    let s = e.statistics();
    let dropped = link.map_or(0, |l| w.link_stats(l).dropped);
    let note = format!(
        "{} MiB in {} ms, {} paced holds, {} timeouts, {} reductions, {} retransmitted, link dropped {}",
        (puts * PUT) >> 20,
        took / MILLIS,
        s.cc_paced,
        s.cc_timeouts,
        s.cc_reductions,
        s.packets_retransmitted,
        dropped
    ) + " / "
        + e.with(|s| s.proto.paths_report()).trim();
    let goodput = (puts * PUT) as u128 * 1_000_000_000 / took as u128;
    (goodput as u64, note)
}

/// Pacing does not collapse bulk goodput beside busy neighbours: with
/// congestion control on, at least 0.8 of its goodput with it off on a
/// 1 Gbit/s and a 40 Gbit/s link (loopback's rates: not paced once the
/// round trip is the path's). On a 10 Gbit/s link the window limits: its
/// first slow start ends, and Veno's growth slows, on round trips the
/// time slices stretch (0.49x with pacing off altogether); pacing by the
/// smoothed round trip cost a third more (0.35x), by the standing one
/// nothing (0.49x).
#[test]
fn pacing_keeps_bulk_goodput_beside_busy_neighbours() {
    for seed in seeds(2) {
        for (mbit, least) in [(1_000u64, 0.8), (10_000, 0.45), (40_000, 0.8)] {
            let rate = mbit * 1_000_000 / 8;
            let (off, n_off) = goodput(seed, false, rate, true, 48);
            let (on, n_on) = goodput(seed, true, rate, true, 48);
            let (quiet, n_quiet) = goodput(seed, true, rate, false, 48);
            let x = on as f64 / off as f64;
            eprintln!(
                "seed {seed}, {mbit} Mbit/s, time-sliced: cc off {} MB/s ({n_off}); cc on {} MB/s ({n_on}): {x:.2}x; unloaded cc on {} MB/s ({n_quiet})",
                off / 1_000_000,
                on / 1_000_000,
                quiet / 1_000_000,
            );
            assert!(
                x >= least,
                "seed {seed}, {mbit} Mbit/s: cc on {x:.2}x of off (at least {least})"
            );
        }
    }
}

/// Loopback on a loaded host (no link: the network's delays alone, both
/// nodes off the CPU 3 ms of every 6, staggered; the simulator charges
/// no CPU time, so only round trips and time slices set the pace): bulk
/// puts with congestion control on take no longer than with it off.
/// Measured (seeds 1, 2): on 10,529 MB/s (window 2,468 KiB, nothing
/// retransmitted: the 48 MiB pass in the first slice both nodes share)
/// against off 1,225 MB/s (8 MiB window, 18 packets retransmitted, 41
/// ms). Veno's queue estimated by the standing round trip instead of the
/// smoothed one (tried in h-udpbulk3 for loaded loopback: the stretched
/// samples ended slow start early) grew the window to 4,959 KiB here,
/// retransmitted 13 and took 41 ms (1.00x of off): this test fails with
/// it.
#[test]
fn loopback_beside_busy_neighbours_keeps_bulk_goodput() {
    for seed in seeds(2) {
        let (off, n_off) = goodput(seed, false, 0, true, 48);
        let (on, n_on) = goodput(seed, true, 0, true, 48);
        let x = on as f64 / off as f64;
        eprintln!(
            "seed {seed}, no link, time-sliced: cc off {} MB/s ({n_off}); cc on {} MB/s ({n_on}): {x:.2}x",
            off / 1_000_000,
            on / 1_000_000,
        );
        assert!(x >= 1.5, "seed {seed}: cc on {x:.2}x of off (at least 1.5)");
    }
}
