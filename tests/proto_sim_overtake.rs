//! A short message does not wait behind bulk queued at its sender
//! (issue 37, `proto/send/order.rs`), over the simulator's bottleneck
//! (`sim::Bottleneck`, 100 Mbit/s, a shaped link's queue) on virtual
//! time: a sender keeps 8 MiB of 256 KiB long requests queued, and sends
//! a short request now and then. Each short one is delivered within about
//! one bulk message's serialisation, the queue and a round trip, not
//! behind the 8 MiB (0.67 s) queued before it; a put queued before a
//! short request is still delivered before it; the bulk requests keep
//! their order among themselves, the short ones too; nothing is lost or
//! delivered twice, also with 2% loss. Seeds printed; `RAMP_SIM_SEED=n`
//! replays one.

mod common;
#[path = "common/sim.rs"]
mod sim;

use ramp::sim::{seeds, Bottleneck};
use sim::*;

const BULK: usize = 256 * 1024;
/// Bulk messages kept queued (an application's credits: 8 MiB).
const CREDITS: u64 = 32;
const H_BULK: u8 = 1;
const H_SHORT: u8 = 2;
const H_PUT: u8 = 3;

fn bulk_meta(k: u32) -> MsgMeta {
    MsgMeta::new(MsgKind::User, Category::Long, H_BULK, &[0, k, BULK as u32])
}

fn short_meta(k: u32) -> MsgMeta {
    MsgMeta::new(MsgKind::User, Category::Short, H_SHORT, &[0, k])
}

fn put_meta(k: u32) -> MsgMeta {
    MsgMeta::new(MsgKind::Put, Category::Long, H_PUT, &[0, k])
}

struct Outcome {
    /// Each short request's time from its send to its delivery (but those
    /// sent right after a put).
    waits: Vec<Nanos>,
    bulk: u64,
}

/// Node 0 keeps `CREDITS` bulk requests to node 1 queued for a second,
/// and sends a short request every 20 ms, with `puts` each fifth one just
/// after a put of 64 KiB (which waits behind the bulk before it, and the
/// short request behind it); checks what node 1 gets.
fn run(net: &mut SimNet, seed: u64, puts: bool) -> Outcome {
    let stop = net.now().plus(SECOND);
    let end = stop.plus(300 * SECOND);
    let (mut bulk_sent, mut bulk_got) = (0u64, 0u64);
    let (mut shorts, mut puts_got) = (Vec::<Instant>::new(), 0u32);
    let mut shorts_got = 0usize;
    let mut waits = Vec::new();
    let mut next_short = net.now().plus(50 * MILLIS);
    // the put each short request must come after (by its number), if any
    let mut after_put: Vec<Option<u32>> = Vec::new();
    let mut puts_sent = 0u32;
    loop {
        let now = net.now();
        let sending = now < stop;
        if sending {
            top_up(net, 0, 1, &mut bulk_sent, bulk_got, CREDITS, |k| {
                (bulk_meta(k), payload(0, k, CHANNEL_REQUEST, BULK))
            });
        }
        if sending && now >= next_short {
            let k = shorts.len() as u32;
            if puts && k % 5 == 4 {
                let p = payload(0, puts_sent, CHANNEL_REQUEST, 65_536);
                net.send(0, 1, CHANNEL_REQUEST, put_meta(puts_sent), p);
                after_put.push(Some(puts_sent));
                puts_sent += 1;
            } else {
                after_put.push(None);
            }
            net.send(0, 1, CHANNEL_REQUEST, short_meta(k), Vec::new());
            shorts.push(now);
            next_short = now.plus(20 * MILLIS);
        }
        while let Some(ev) = net.poll_event(1) {
            let Event::Delivered {
                from: 0,
                channel: CHANNEL_REQUEST,
                meta,
                payload: p,
            } = ev
            else {
                panic!("seed {seed}: {ev:?}");
            };
            let k = meta.args()[1];
            match meta.handler {
                H_BULK => {
                    assert_eq!(k as u64, bulk_got, "seed {seed}: bulk once, in order");
                    assert!(p == payload(0, k, CHANNEL_REQUEST, BULK), "seed {seed}");
                    bulk_got += 1;
                }
                H_PUT => {
                    assert_eq!(k, puts_got, "seed {seed}: puts once, in order");
                    assert!(p == payload(0, k, CHANNEL_REQUEST, 65_536), "seed {seed}");
                    puts_got += 1;
                }
                H_SHORT => {
                    assert_eq!(k as usize, shorts_got, "seed {seed}: shorts once, in order");
                    match after_put[k as usize] {
                        // (it waits for the put, which waits for the bulk)
                        Some(put) => {
                            assert!(put < puts_got, "seed {seed}: short {k} before put {put}")
                        }
                        None => waits.push(net.now().since(shorts[k as usize])),
                    }
                    shorts_got += 1;
                }
                h => panic!("seed {seed}: handler {h}"),
            }
        }
        if let Some(ev) = net.poll_event(0) {
            panic!("seed {seed}: sender: {ev:?}");
        }
        if !sending && bulk_got == bulk_sent && shorts_got == shorts.len() {
            break;
        }
        assert!(net.now() < end, "seed {seed}: not all delivered");
        assert!(net.step(), "seed {seed}: idle with messages undelivered");
    }
    assert_eq!(puts_got, puts_sent, "seed {seed}");
    Outcome {
        waits,
        bulk: bulk_got,
    }
}

fn net(seed: u64, loss: f64, mtu: Option<usize>) -> (SimNet, Bottleneck) {
    let mut net = SimNet::new(
        2,
        ProtoConfig::default(),
        FaultConfig {
            loss,
            seed,
            ..lan()
        },
    );
    net.set_path_datagram(mtu);
    let b = Bottleneck::shaped_mbit(100);
    net.bottleneck(b.clone(), |_, to| to == 1);
    (net, b)
}

fn ms(n: Nanos) -> f64 {
    n as f64 / MILLIS as f64
}

#[test]
fn a_short_request_goes_ahead_of_queued_bulk_over_a_slow_link() {
    let _watchdog = common::watchdog("proto_sim_overtake::slow_link", Duration::from_secs(300));
    for seed in seeds(2) {
        for mtu in [None, Some(1500)] {
            let (mut net, b) = net(seed, 0.0, mtu);
            let o = run(&mut net, seed, false);
            let mut w = o.waits.clone();
            w.sort_unstable();
            let (p50, max) = (w[w.len() / 2], *w.last().unwrap());
            // one bulk message's serialisation (the one begun), the link's
            // queue (a shaped link holds 30 ms and a burst), a round trip
            let bound = b.serialization(BULK) + b.serialization(b.limit as usize) + 5 * MILLIS;
            let queued = b.serialization(CREDITS as usize * BULK);
            println!(
                "seed {seed} datagram {mtu:?}: {} short requests behind {} bulk: wait p50 {:.1} ms max {:.1} ms (bound {:.1} ms; the bulk queued: {:.1} ms)",
                w.len(),
                o.bulk,
                ms(p50),
                ms(max),
                ms(bound),
                ms(queued)
            );
            assert!(w.len() >= 40 && o.bulk >= 40, "seed {seed}");
            assert!(max <= bound, "seed {seed} {mtu:?}: max {max}");
        }
    }
}

#[test]
fn with_loss_nothing_is_lost_or_delivered_twice_and_puts_stay_first() {
    let _watchdog = common::watchdog("proto_sim_overtake::loss", Duration::from_secs(300));
    for seed in seeds(3) {
        let (mut net, _) = net(seed, 0.02, Some(1500));
        let o = run(&mut net, seed, true);
        let mut w = o.waits.clone();
        w.sort_unstable();
        println!(
            "seed {seed}, 2% loss, puts: {} short requests not after a put, {} bulk; wait p50 {:.1} ms max {:.1} ms",
            w.len(),
            o.bulk,
            ms(w[w.len() / 2]),
            ms(*w.last().unwrap())
        );
    }
}
