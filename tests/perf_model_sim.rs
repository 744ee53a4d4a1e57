//! `ramp::perf`'s model against whole endpoints on virtual time
//! (`sim::World`: a LAN of 20 us one way, no scheduler, random loss of
//! every datagram from the seed): serial requests, plain and transactions,
//! at per-datagram loss 0.1%, 1% and 5%; the model, fed with the loss-free
//! round trip measured in the same world, gives the mean within 15% and
//! the p99 within 25% of the simulated ones (transactions at 5%: printed;
//! see `known`). What the model lacks shows here first, without the
//! machine's noise.
//!
//! A failing test prints its seed (`RAMP_SIM_SEED` replays it).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ramp::am::{handler, reply, Message, VecSegment, MAX_MEDIUM};
use ramp::config::{Config, FaultConfig};
use ramp::perf::{outcome, response, Faults, Policy, Protocol, Stages};
use ramp::sim::{lan, seeds, World};
use ramp::time::MILLIS;

const TAG: u64 = 0x9e7f;
const H_ECHO: u8 = 10;
const H_PONG: u8 = 11;

/// `n` serial requests (after 100 for the estimator): each round trip, us.
fn serial(w: &World, proto: Protocol, n: usize) -> Vec<f64> {
    serial_of(w, proto, 0, n)
}

/// `n` serial requests of `bytes` (0: short; else medium, or long past
/// `MAX_MEDIUM`), after 100 for the estimator: each round trip, us.
fn serial_of(w: &World, proto: Protocol, bytes: usize, n: usize) -> Vec<f64> {
    let cfg = Config::from_lookup(|_| None).unwrap();
    let (client, server) = (w.node(&cfg), w.node(&cfg));
    for e in [&client.ep, &server.ep] {
        e.set_tag(TAG);
        e.map(0, client.ep.name(), TAG).unwrap();
        e.map(1, server.ep.name(), TAG).unwrap();
        e.set_expected_resources(2, 32).unwrap();
    }
    server.ep.set_segment(Some(VecSegment::new(2 * 65_536)));
    let payload = vec![0x5au8; bytes];
    server.ep.set_handler(
        H_ECHO,
        handler(|h| reply(h.token, &Message::short(H_PONG, h.args)).unwrap()),
    );
    let pongs = Arc::new(AtomicU64::new(0));
    let p = pongs.clone();
    client.ep.set_handler(
        H_PONG,
        handler(move |_| {
            p.fetch_add(1, Ordering::SeqCst);
        }),
    );
    let mut out = Vec::with_capacity(n);
    for k in 0..100 + n {
        let t0 = w.now();
        let want = pongs.load(Ordering::SeqCst) + 1;
        let arg = [k as u32];
        let msg = match bytes {
            0 => Message::short(H_ECHO, &arg),
            1..=MAX_MEDIUM => Message::medium(H_ECHO, &arg, &payload),
            _ => Message::long(H_ECHO, &arg, &payload, 0),
        };
        let id = match proto {
            Protocol::Txn => Some(client.ep.request_txn(1, &msg).unwrap()),
            Protocol::Plain => {
                client.ep.request(1, &msg, false).unwrap();
                None
            }
        };
        let p = pongs.clone();
        assert!(
            w.run_until(60_000 * MILLIS, || p.load(Ordering::SeqCst) >= want),
            "seed {}: request {k} answered",
            w.seed()
        );
        if let Some(id) = id {
            client.ep.txn_release(id).unwrap();
        }
        if k >= 100 {
            out.push(w.now().since(t0) as f64 / 1000.0);
        }
    }
    out
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Whether the simulated p99 `gp` of `n` samples agrees with the model:
/// within `tol` of the model's p99, or inside the band of the model's
/// quantiles that sampling allows (3 standard deviations of the empirical
/// distribution at 0.99: a p99 where the delayed share is near 1% may fall
/// on either side of an atom).
fn p99_agrees(d: &ramp::perf::Dist, gp: f64, n: usize, tol: f64) -> bool {
    let sd = 3.0 * (0.01 * 0.99 / n as f64).sqrt();
    let (lo, hi) = (d.quantile(0.99 - sd), d.quantile(0.99 + sd));
    (d.quantile(0.99) / gp - 1.0).abs() <= tol || (lo * 0.99 <= gp && gp <= hi * 1.01)
}

fn p99(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    s[((s.len() - 1) as f64 * 0.99).round() as usize]
}

#[test]
fn the_model_follows_the_simulated_protocol_under_random_loss() {
    let policy = Policy::default();
    let mut misses = Vec::new();
    for seed in seeds(2) {
        for proto in [Protocol::Plain, Protocol::Txn] {
            let free = serial(&World::seeded(seed), proto, 300);
            let m = mean(&free);
            let mad = free.iter().map(|r| (r - m).abs()).sum::<f64>() / free.len() as f64;
            let st = Stages {
                request_way: m / 2.0,
                reply_way: m / 2.0,
                rttvar: mad,
                ..Stages::default()
            };
            for loss in [0.001, 0.01, 0.05] {
                let w = World::new(FaultConfig {
                    seed,
                    loss,
                    ..lan()
                });
                let got = serial(&w, proto, 4000);
                let f = Faults {
                    initiator_loss: loss,
                    target_loss: loss,
                    ..Faults::default()
                };
                let model = outcome(proto, 0, &st, &f, &policy);
                let (gm, gp) = (mean(&got), p99(&got));
                let line = format!(
                    "seed {seed} {} loss {loss}: loss-free {m:.1} us; mean model {:.1} sim {gm:.1} \
                     ({:.2}); p99 model {:.1} sim {gp:.1} ({:.2})",
                    proto.name(),
                    model.mean_us,
                    model.mean_us / gm,
                    model.p99_us,
                    model.p99_us / gp
                );
                eprintln!("{line}");
                let off = |a: f64, b: f64, tol: f64| (a / b - 1.0).abs() > tol;
                // known: transactions at 5% loss have a heavier tail than
                // the model (about 3% of round trips past the probe's
                // 170 us, against the model's 1.4%, spread over 200-600
                // us): the probe timeout grows after round-trip samples
                // lengthened by a lost TxnAck or reply, a rule the model
                // lacks; printed, not asserted
                let known = proto == Protocol::Txn && loss > 0.01;
                let d = response(proto, 0, &st, &f, &policy);
                if !known && (off(model.mean_us, gm, 0.15) || !p99_agrees(&d, gp, got.len(), 0.25))
                {
                    misses.push(line);
                }
            }
        }
    }
    assert!(
        misses.is_empty(),
        "the model missed:\n{}",
        misses.join("\n")
    );
}

/// The bit error rate mapped to each datagram's loss by its size, and a
/// 64 KiB request's two datagrams (RACK for the first, the probe for the
/// last), against the simulated protocol under `FaultConfig::ber`.
#[test]
fn the_model_follows_the_simulated_protocol_under_a_bit_error_rate() {
    let policy = Policy::default();
    let mut misses = Vec::new();
    for seed in seeds(2) {
        for (bytes, ber) in [
            (0, 1e-5),
            (0, 1e-4),
            (1024, 1e-5),
            (65_536, 1e-7),
            (65_536, 1e-6),
        ] {
            let free = serial_of(&World::seeded(seed), Protocol::Plain, bytes, 300);
            let m = mean(&free);
            let mad = free.iter().map(|r| (r - m).abs()).sum::<f64>() / free.len() as f64;
            let st = Stages {
                request_way: m - 20.0,
                reply_way: 20.0,
                rttvar: mad,
                ..Stages::default()
            };
            let w = World::new(FaultConfig { seed, ber, ..lan() });
            let got = serial_of(&w, Protocol::Plain, bytes, 6000);
            let f = Faults {
                ber,
                ..Faults::default()
            };
            let model = outcome(Protocol::Plain, bytes, &st, &f, &policy);
            let (gm, gp) = (mean(&got), p99(&got));
            let line = format!(
                "seed {seed} plain {bytes} B ber {ber:e}: loss-free {m:.1} us; mean model {:.1} \
                 sim {gm:.1} ({:.2}); p99 model {:.1} sim {gp:.1} ({:.2})",
                model.mean_us,
                model.mean_us / gm,
                model.p99_us,
                model.p99_us / gp
            );
            eprintln!("{line}");
            let off = |a: f64, b: f64, tol: f64| (a / b - 1.0).abs() > tol;
            // known: at 1e-6 a 64 KiB request's first datagram is lost
            // 41% of the time and repairs meet timeouts, where ramp resends
            // the oldest packet alone and the rest after its ACK (F-RTO),
            // which the model lacks (it backs off the pair): its mean and
            // p99 come out 1.2-1.9x the simulated; printed, not asserted
            let known = bytes > 65_000 && ber >= 1e-6;
            let d = response(Protocol::Plain, bytes, &st, &f, &policy);
            if !known && (off(model.mean_us, gm, 0.15) || !p99_agrees(&d, gp, got.len(), 0.25)) {
                misses.push(line);
            }
        }
    }
    assert!(
        misses.is_empty(),
        "the model missed:\n{}",
        misses.join("\n")
    );
}
