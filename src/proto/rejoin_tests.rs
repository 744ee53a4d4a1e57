//! A rail coming back (issue 38 item 5; target: from a link's return to
//! it carrying traffic again, under 2 s) on the rails harness
//! (`rails_tests.rs`), as `scripts/rails-bench.sh --cases events` does on
//! real links: two 200 Mbit/s subnets shaped as the real rails (`tc tbf`
//! at each sender), a transfer running, the link carrying most of it set
//! down (every send on it fails: the transport's `path_down`) for 3 s,
//! then up. The time from "up" to the path carrying at least half its
//! rate again, broken into: up -> its next heartbeat (a probe), -> the
//! path active (the probe answered), -> its first DATA, -> half its rate
//! (bytes acknowledged on it over 50 ms). Deterministic; seeds printed.

use super::*;

const RATE: u64 = 25_000_000; // 200 Mbit/s

/// What one run measured, each from the link's return (ns).
#[derive(Debug, Clone, Copy, Default)]
#[allow(dead_code)] // (printed)
struct Rejoin {
    probe: Nanos,
    active: Nanos,
    data: Nanos,
    half: Nanos,
}

/// Sends message `k` of `len` bytes from node 0.
fn send_len(net: &mut Net, k: u32, len: usize) {
    let meta = MsgMeta::new(MsgKind::User, Category::Long, 1, &[k]);
    net.p[0].send(net.now, 1, CHANNEL_REQUEST, meta, vec![k as u8; len]);
}

/// Bytes acknowledged on node 0's `path`.
fn acked(net: &Net, path: Path<u32>) -> u64 {
    net.p[0]
        .paths_of(&1)
        .iter()
        .find(|r| r.rail == path.rail && r.remote == path.remote)
        .map_or(0, |r| r.bytes_acked)
}

/// The transfer: messages of `len` bytes, `depth` of them outstanding;
/// `k` the next one's number.
struct Load {
    len: usize,
    depth: u32,
    k: u32,
}

impl Load {
    /// Runs for `d` in steps of 1 ms, keeping `depth` messages outstanding;
    /// `each` sees the net after every step.
    fn run(&mut self, net: &mut Net, d: Nanos, mut each: impl FnMut(&Net)) {
        let end = net.now.plus(d);
        while net.now < end {
            while self.k - (net.delivered.len() as u32) < self.depth + 1 {
                send_len(net, self.k, self.len);
                self.k += 1;
            }
            net.run_for(MILLIS);
            each(net);
        }
    }
}

/// One run: messages of `len` bytes (`stripe_min` as configured), the
/// link carrying most DATA over the last 300 ms down for `down` from 1 s
/// into the transfer; the rejoin's figures (None where not reached
/// within 3 s of the return).
fn run(seed: u64, len: usize, depth: u32, cfg: ProtoConfig, down: Nanos) -> Option<Rejoin> {
    run_cut(seed, len, depth, cfg, down, false)
}

/// `run`, the link cut silently (`silent`: everything lost, no send
/// error) instead of down.
fn run_cut(
    seed: u64,
    len: usize,
    depth: u32,
    cfg: ProtoConfig,
    down: Nanos,
    silent: bool,
) -> Option<Rejoin> {
    let mut net = Net::new(seed, cfg);
    net.rate = [RATE, RATE];
    net.shape = Some((565_000, 30 * MILLIS));
    net.send(0);
    net.run_for(100 * MILLIS);
    let mut load = Load { len, depth, k: 1 };
    load.run(&mut net, 1000 * MILLIS, |_| {});
    let since = net.now.0 - 300 * MILLIS;
    let on = |r: u8| {
        net.data_sent
            .iter()
            .filter(|d| d.0 .0 >= since && d.1 == 0 && d.2.rail.0 == r)
            .count()
    };
    let rail = if on(1) > on(0) { 1 } else { 0 };
    let path = p(rail, RAILS[1][rail as usize]);
    let ends = (RAILS[0][rail as usize], RAILS[1][rail as usize]);
    match silent {
        true => net.link(ends.0, ends.1, false),
        false => net.down[rail as usize] = true,
    }
    load.run(&mut net, down, |_| {});
    assert_ne!(net.state(0, path), Some(PathState::Active), "down");
    net.link(ends.0, ends.1, true);
    net.down[rail as usize] = false;
    let up = net.now;
    let mut samples: Vec<(Instant, u64)> = Vec::new();
    let mut active = None;
    let mut half = None;
    load.run(&mut net, 3000 * MILLIS, |net| {
        let a = acked(net, path);
        if active.is_none() && net.state(0, path) == Some(PathState::Active) {
            active = Some(net.now.since(up));
        }
        let back = samples
            .iter()
            .rev()
            .find(|s| net.now.since(s.0) >= 50 * MILLIS)
            .copied();
        if half.is_none() && back.is_some_and(|(_, b)| (a - b) * 20 >= RATE / 2) {
            half = Some(net.now.since(up));
        }
        samples.push((net.now, a));
    });
    let first = |v: &[(Instant, usize, Path<u32>)]| {
        v.iter()
            .find(|d| d.0 >= up && d.1 == 0 && d.2 == path)
            .map(|d| d.0.since(up))
    };
    let (probe, data) = (first(&net.hb_sent), first(&net.data_sent));
    let show = |v: Option<Nanos>| v.map_or("-".into(), |v| format!("{}", v / MILLIS));
    println!(
        "seed {seed}, {} KiB x {depth}, rail {rail} {} {} ms: up -> probe {} ms, -> active {} \
         ms, -> first DATA {} ms, -> half its rate {} ms",
        len >> 10,
        if silent { "cut silently" } else { "down" },
        down / MILLIS,
        show(probe),
        show(active),
        show(data),
        show(half),
    );
    net.run_for(500 * MILLIS);
    net.assert_exactly_once(load.k);
    Some(Rejoin {
        probe: probe?,
        active: active?,
        data: data?,
        half: half?,
    })
}

fn ms(v: Nanos) -> f64 {
    v as f64 / MILLIS as f64
}

/// The figures (`cargo test --release --features testing --lib
/// rejoin_figures -- --ignored --nocapture`): 1 MiB messages striped and
/// 64 KiB ones on one path (the events case's), seeds 1-5 each, the link
/// down 3 s and `17 * seed` ms (the probes' phase at the return); then
/// the link cut silently instead (no send error: its probes back off to
/// `PROBE_MAX`, 1 s).
#[test]
#[ignore = "figures"]
fn rejoin_figures() {
    for silent in [false, true] {
        for (len, depth) in [(1 << 20, 3), (64 << 10, 8)] {
            let mut v = Vec::new();
            for seed in 1..=5 {
                let down = (3000 + 17 * seed) * MILLIS;
                v.push(run_cut(seed, len, depth, cfg(), down, silent));
            }
            let mut half: Vec<f64> = v
                .iter()
                .map(|r| r.map_or(f64::MAX, |r| ms(r.half)))
                .collect();
            half.sort_by(f64::total_cmp);
            println!(
                "{} KiB, silent {silent}: half its rate after {half:?} ms",
                len >> 10
            );
        }
    }
}

/// A link down 3 s (every send on it failing) carries at least half its
/// rate again within 250 ms of its return, striped or not. Before: its
/// probes backed off to 1 s while it was down (up -> probe 0.5-0.6 s
/// here, up to 1 s; then 7 ms to half its rate, striped); and a path
/// below the striping threshold took traffic again only at a moment with
/// nothing in flight, which this transfer never has (never within 3 s).
/// Now a failed path's probe that cannot be sent does not back off (the
/// next goes `RAMP_PATH_PROBE_MS` later: 100 ms), and a path that answers
/// its probe with the lowest round trip takes the association's new
/// packets at once (`Peer::on_heartbeat_ack`).
#[test]
fn a_rail_back_after_3_s_down_carries_half_its_rate_within_250_ms() {
    for (len, depth) in [(1 << 20, 3), (64 << 10, 8)] {
        for seed in [61, 62, 63] {
            let r = run(seed, len, depth, cfg(), (3000 + 17 * (seed - 60)) * MILLIS);
            let r = r.expect("the rail back at half its rate within 3 s");
            assert!(r.probe <= 100 * MILLIS + MILLIS, "{r:?}");
            assert!(r.half <= 250 * MILLIS, "{r:?}");
        }
    }
}
