//! Incast on a shaped link with the probe of congestion control
//! (`proto/congestion.rs`: a window past slow start grows by 1/16 per
//! window acknowledged while no congestion loss showed and the smoothed
//! round trip is under the least one plus 10 ms). The link is
//! `scripts/link-bench.sh`'s incast one, as tc shapes it: 200 Mbit/s,
//! `tbf burst 565kb latency 30ms`. Four senders keep 4 MiB each
//! outstanding to one receiver, in 64 KiB messages of 64 KiB datagrams
//! (the shape of `proto_sim_congestion.rs`'s incast) and in 256 KiB
//! messages of 1472-byte datagrams (the real run's: `examples/link_load`'s
//! Xfers over an Ethernet MTU); every millisecond of virtual time the queue
//! and each sender are looked at: when it left slow start, how long it was
//! in the probe's state (read from outside: past slow start, no congestion
//! loss, the smoothed round trip under the least one plus 10 ms), what its
//! window grew meanwhile (by whichever rule) and the queue then, the drops
//! and who was in the probe's state at the first. Every message is delivered exactly once, in order; the rest
//! is printed (`--nocapture`), to hold issue 37's real incast runs against.

mod common;
#[path = "common/sim.rs"]
mod sim;

use ramp::sim::{seeds, Bottleneck};
use sim::*;

/// Bytes each sender keeps outstanding (its credits).
const OUTSTANDING: u64 = 4 << 20;
/// The probe's bound over the least round trip (`PROBE_DELAY`).
const PROBE_DELAY: Nanos = 10 * MILLIS;

/// What one sender did, seen from outside.
#[derive(Default)]
struct Seen {
    sent: u64,
    delivered: u64,
    /// When it left slow start, with its window and the queue then.
    left_slow_start: Option<(Nanos, u64, Nanos)>,
    /// Milliseconds it spent in the probe's state, and what its window
    /// grew meanwhile (by the probe's rule or another: an undone timeout's).
    probing_ms: u64,
    probe_growth: u64,
    /// The longest queue seen while it was in the probe's state.
    queue_while_probing: Nanos,
}

#[test]
fn incast_on_a_shaped_link_where_the_probe_engages() {
    let _watchdog = common::watchdog("proto_sim_incast_probe", Duration::from_secs(300));
    for seed in seeds(2) {
        incast(seed, 65_536, ProtoConfig::default().max_datagram);
        incast(seed, 256 << 10, 1472);
    }
}

/// Four senders of `len`-byte messages in datagrams of at most
/// `max_datagram` bytes into node 4 through the shaped link.
fn incast(seed: u64, len: usize, max_datagram: usize) {
    let cfg = ProtoConfig {
        max_datagram,
        ..ProtoConfig::default()
    };
    let mut net = SimNet::new(5, cfg, FaultConfig { seed, ..lan() });
    let credits = OUTSTANDING / len as u64;
    let b = Bottleneck::tbf(25_000_000, 565_000, 30 * MILLIS);
    let rate = b.rate;
    let link = net.bottleneck(b, |_, to| to == 4);
    let start = net.now();
    let stop = start.plus(2 * SECOND);
    let end = stop.plus(120 * SECOND);
    let mut seen: Vec<Seen> = (0..4).map(|_| Seen::default()).collect();
    let mut last_cwnd = [0u64; 4];
    let mut next_look = start;
    let (mut max_queue, mut first_drop) = (0, None);
    loop {
        let now = net.now();
        let sending = now < stop;
        for (i, s) in seen.iter_mut().enumerate() {
            if sending {
                let i = i as u32;
                top_up(&mut net, i, 4, &mut s.sent, s.delivered, credits, |k| {
                    (meta(i, k, len), payload(i, k, CHANNEL_REQUEST, len))
                });
            }
        }
        while let Some(ev) = net.poll_event(4) {
            let Event::Delivered { from, meta: m, .. } = ev else {
                panic!("seed {seed}: {ev:?}");
            };
            let s = &mut seen[from as usize];
            assert_eq!(
                m.args()[1] as u64,
                s.delivered,
                "seed {seed}: in order, once"
            );
            s.delivered += 1;
        }
        if now >= next_look && sending {
            next_look = now.plus(MILLIS);
            let queue = net.link(link).backlog(now) * SECOND / rate;
            max_queue = max_queue.max(queue);
            let drops = net.link(link).stats.dropped;
            let mut probing = Vec::new();
            for (i, s) in seen.iter_mut().enumerate() {
                let reductions = net.node(i as u32).stats().cc_reductions;
                let (_, cc, _) = net.node(i as u32).paths().next().expect("a path");
                let (cwnd, srtt, min) = (cc.cwnd(), cc.srtt(), cc.min_rtt());
                let t = now.since(start);
                if !cc.in_slow_start() && s.left_slow_start.is_none() {
                    s.left_slow_start = Some((t, cwnd, queue));
                }
                let probe = match (srtt, min) {
                    (Some(r), Some(m)) => {
                        !cc.in_slow_start() && reductions == 0 && r < m + PROBE_DELAY
                    }
                    _ => false,
                };
                if probe {
                    s.probing_ms += 1;
                    s.probe_growth += cwnd.saturating_sub(last_cwnd[i]);
                    s.queue_while_probing = s.queue_while_probing.max(queue);
                    probing.push(i);
                }
                last_cwnd[i] = cwnd;
            }
            if drops > 0 && first_drop.is_none() {
                first_drop = Some((now.since(start), queue, probing));
            }
        }
        if !sending && seen.iter().all(|s| s.delivered == s.sent) {
            break;
        }
        assert!(net.now() < end, "seed {seed}: not all delivered");
        assert!(net.step(), "seed {seed}: idle with messages undelivered");
    }
    let st = net.link(link).stats;
    println!(
        "incast probe seed {seed}, {} KiB messages, datagrams of {max_datagram} B: \
         queue drops {}, max queue {:.1} ms (sampled {:.1} ms), \
         mean {:.1} ms; first drop {:?}",
        len >> 10,
        st.dropped,
        st.max_queue_delay as f64 / MILLIS as f64,
        max_queue as f64 / MILLIS as f64,
        st.sum_queue_delay as f64 / st.datagrams.max(1) as f64 / MILLIS as f64,
        first_drop.map(|(t, q, p)| format!(
            "at {:.1} ms, queue {:.1} ms, in the probe's state {p:?}",
            t as f64 / MILLIS as f64,
            q as f64 / MILLIS as f64
        ))
    );
    for (i, s) in seen.iter().enumerate() {
        let cc = *net.node(i as u32).stats();
        println!(
            "  sender {i}: left slow start {:?}; in the probe's state {} ms, window +{} KiB \
             meanwhile, queue up to {:.1} ms; reductions {} random {} timeouts {} undone {}",
            s.left_slow_start.map(|(t, w, q)| format!(
                "at {:.1} ms, window {} KiB, queue {:.1} ms",
                t as f64 / MILLIS as f64,
                w / 1024,
                q as f64 / MILLIS as f64
            )),
            s.probing_ms,
            s.probe_growth / 1024,
            s.queue_while_probing as f64 / MILLIS as f64,
            cc.cc_reductions,
            cc.cc_random_losses,
            cc.cc_timeouts,
            cc.cc_undone
        );
        assert_eq!(s.delivered, s.sent, "seed {seed}: sender {i}");
    }
}
