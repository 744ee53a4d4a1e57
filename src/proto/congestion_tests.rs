use super::*;

const S: Statistics = Statistics::initial();

const MSS: u64 = 65507;
const MAX: u64 = 128 * (MSS + PACKET_OVERHEAD);

fn cc() -> Congestion {
    Congestion::new(true, MSS as usize, MAX)
}

fn t(us: u64) -> Instant {
    Instant(1_000_000_000 + us * MICROS)
}

fn news(delivered: u64, rtt: Option<Nanos>) -> FlightNews {
    FlightNews {
        delivered,
        rtt,
        ..FlightNews::default()
    }
}

fn loss(sent: Instant) -> FlightNews {
    let mut n = FlightNews::default();
    n.lost(MSS, sent);
    n
}

#[test]
fn starts_at_four_datagrams_and_doubles_per_round_trip_in_slow_start() {
    let mut c = cc();
    assert_eq!(c.cwnd(), 4 * MSS);
    assert!(c.in_slow_start());
    // a whole window acknowledged while the window limited the flow
    c.on_news(
        t(100),
        &news(4 * MSS, Some(100 * MICROS)),
        0,
        &mut S.clone(),
    );
    assert_eq!(c.cwnd(), 8 * MSS);
}

#[test]
fn a_flow_the_window_does_not_limit_does_not_grow_it() {
    let mut c = cc();
    // one small message at a time: a sliver of the window in flight
    for i in 0..1000 {
        c.on_news(t(i), &news(200, Some(10 * MICROS)), 0, &mut S.clone());
    }
    assert_eq!(c.cwnd(), 4 * MSS);
}

#[test]
fn the_window_never_grows_past_what_the_packet_windows_allow() {
    let mut c = cc();
    for i in 0..100 {
        c.on_news(t(i), &news(MAX, Some(10 * MICROS)), MAX, &mut S.clone());
    }
    assert_eq!(c.cwnd(), MAX);
}

/// One reduction per recovery episode: losses of packets sent before it
/// began are part of it; a loss of a packet sent after starts a new one.
#[test]
fn one_reduction_per_recovery_episode() {
    let mut c = cc();
    // slow start without a queue: 4, 8, then 16 datagrams
    c.on_news(
        t(0),
        &news(4 * MSS, Some(1_000 * MICROS)),
        0,
        &mut S.clone(),
    );
    c.on_news(
        t(1),
        &news(8 * MSS, Some(1_000 * MICROS)),
        0,
        &mut S.clone(),
    );
    assert_eq!(c.cwnd(), 16 * MSS);
    // a queue builds: the round trip grows from 1 ms to 10 ms
    c.on_news(t(0), &news(0, Some(1_000 * MICROS)), 0, &mut S.clone());
    for i in 1..40 {
        c.on_news(
            t(i * 1000),
            &news(0, Some(10_000 * MICROS)),
            0,
            &mut S.clone(),
        );
    }
    let before = c.cwnd();
    c.on_news(t(50_000), &loss(t(40_000)), 0, &mut S.clone());
    assert_eq!(c.cwnd(), before * 11 / 16, "congestion: to 0.7");
    assert_eq!(c.counts.reductions, 1);
    // more losses of packets sent before the episode began
    c.on_news(t(50_100), &loss(t(45_000)), 0, &mut S.clone());
    c.on_news(t(50_200), &loss(t(50_000)), 0, &mut S.clone());
    assert_eq!(c.cwnd(), before * 11 / 16, "same episode");
    // a packet sent after the episode began: a new one
    c.on_news(t(70_000), &loss(t(60_000)), 0, &mut S.clone());
    assert_eq!(c.cwnd(), before * 11 / 16 * 11 / 16);
    assert_eq!(c.counts.reductions, 2);
    assert!(!c.in_slow_start());
}

/// A loss while the flow holds almost no queue (the round trip at its
/// least) is random: the window shrinks to 0.8, not to half.
#[test]
fn a_loss_without_a_queue_is_random_and_reduces_gently() {
    let mut c = cc();
    for i in 0..40 {
        c.on_news(t(i * 100), &news(0, Some(100 * MICROS)), 0, &mut S.clone());
    }
    let before = c.cwnd();
    assert!(c.backlog() < MSS);
    c.on_news(t(5_000), &loss(t(4_900)), 0, &mut S.clone());
    assert_eq!(c.cwnd(), before * 13 / 16);
    assert_eq!((c.counts.random_losses, c.counts.reductions), (1, 0));
}

#[test]
fn the_window_never_falls_under_two_datagrams() {
    let mut c = cc();
    c.on_news(t(0), &news(0, Some(1_000 * MICROS)), 0, &mut S.clone());
    for i in 1..100 {
        c.on_news(
            t(i * 1_000),
            &news(0, Some(50_000 * MICROS)),
            0,
            &mut S.clone(),
        );
        c.on_news(t(i * 1_000 + 1), &loss(t(i * 1_000)), 0, &mut S.clone());
    }
    assert_eq!(c.cwnd(), 2 * MSS);
    // nothing in flight: a packet may always go
    assert!(c.gate(t(200_000), 0).room > 0);
}

/// A retransmission timeout collapses the window to the minimum; F-RTO's
/// verdict that it was spurious undoes it, a real one keeps it.
#[test]
fn a_timeout_collapses_the_window_and_a_spurious_one_is_undone() {
    let mut c = cc();
    c.on_news(t(0), &news(4 * MSS, Some(100 * MICROS)), 0, &mut S.clone());
    let before = c.cwnd();
    c.on_timeout(t(10_000), &mut S.clone());
    assert_eq!(c.cwnd(), 2 * MSS);
    let spurious = FlightNews {
        frto: Some(true),
        ..FlightNews::default()
    };
    c.on_news(t(10_100), &spurious, 0, &mut S.clone());
    assert_eq!(c.cwnd(), before);
    assert_eq!((c.counts.timeouts, c.counts.undone), (1, 1));
    c.on_timeout(t(20_000), &mut S.clone());
    let real = FlightNews {
        frto: Some(false),
        ..FlightNews::default()
    };
    c.on_news(t(20_100), &real, 0, &mut S.clone());
    c.on_news(t(20_200), &spurious, 0, &mut S.clone());
    assert_eq!(c.cwnd(), 2 * MSS, "a real timeout is not undone later");
}

/// Pacing: before a round trip is known nothing waits; after, a burst
/// allowance goes at once, then packets leave at the pacing rate.
#[test]
fn pacing_lets_a_burst_go_then_spaces_packets_at_the_rate() {
    let mut c = cc();
    assert_eq!(c.gate(t(0), 0).slack, i64::MAX, "no round trip: not paced");
    // 10 ms round trip, 4 datagrams: 2 * 262 KB / 10 ms = 52 MB/s
    c.on_news(t(0), &news(0, Some(10_000 * MICROS)), 0, &mut S.clone());
    let rate = c.pacing_rate().unwrap();
    assert!((50_000_000..55_000_000).contains(&rate), "{rate}");
    let now = t(1_000_000);
    let mut g = c.gate(now, 0);
    let mut sent = 0;
    while g.allows() && sent < 100 {
        g.take(MSS);
        sent += 1;
    }
    assert!((2..=5).contains(&sent), "a burst of {sent}");
    let at = c.sent(now, &g).expect("held back");
    // the next one goes when its bytes' time at the rate has passed
    assert!(at > now && at.since(now) <= 2 * MSS * 1_000_000_000 / rate);
    assert!(!c.gate(Instant(at.0 - 1), 0).allows());
    assert!(c.gate(at, 0).allows());
}

/// Loopback: a round trip of 20 µs makes pacing's rate huge; a window of
/// 64 KiB datagrams goes at once.
#[test]
fn loopback_never_waits_for_pacing() {
    let mut c = cc();
    c.on_news(t(0), &news(0, Some(20 * MICROS)), 0, &mut S.clone());
    let mut g = c.gate(t(1), 0);
    let mut sent = 0;
    while g.allows() {
        g.take(MSS);
        sent += 1;
    }
    assert_eq!(sent, 4, "the window limits, not pacing");
}

#[test]
fn off_limits_nothing() {
    let mut c = Congestion::new(false, MSS as usize, MAX);
    c.on_news(t(0), &news(0, Some(10_000 * MICROS)), 0, &mut S.clone());
    c.on_news(t(1), &loss(t(0)), 0, &mut S.clone());
    c.on_timeout(t(2), &mut S.clone());
    assert_eq!(c.cwnd(), MAX);
    let g = c.gate(t(3), MAX);
    assert_eq!((g.slack, g.cost), (i64::MAX, 0));
    assert_eq!(c.counts, CcCounts::default());
}

/// A round trip stretched by a peer off the CPU (a time slice of a
/// loaded host) moves the smoothed round trip but not the pacing rate:
/// it is reckoned by the least round trip of the last one or two smoothed
/// ones; once the stretched samples are all there is, it follows them.
#[test]
fn pacing_follows_the_standing_round_trip_not_stretched_samples() {
    let mut c = cc();
    let mut s = S;
    // 1 ms: 2 * 262 KB / 1 ms = 524 MB/s
    c.on_news(t(0), &news(0, Some(1_000 * MICROS)), 0, &mut s);
    let rate = c.pacing_rate().unwrap();
    // five samples stretched by 3 ms
    for k in 1..=5 {
        c.on_news(t(k * 100), &news(0, Some(4_000 * MICROS)), 0, &mut s);
    }
    assert!(c.srtt().unwrap() > 2_000 * MICROS, "{:?}", c.srtt());
    assert_eq!(c.pacing_rate(), Some(rate), "paced by the standing 1 ms");
    // 4 ms for two windows of samples: the path's round trip now
    for k in 1..=8 {
        c.on_news(t(k * 3_000), &news(0, Some(4_000 * MICROS)), 0, &mut s);
    }
    let slow = c.pacing_rate().unwrap();
    assert!(slow * 3 < rate, "{slow} vs {rate}");
}

#[test]
fn the_pacing_cost_is_the_division_s_at_the_unpaced_edge_and_either_side() {
    // `update_pacing` tells an unpaced rate by a product, not a division:
    // the cost must be what the division gives, 0 below UNPACED_COST
    for cwnd in [2 * MSS, 4 * MSS, MAX, 3 * MAX / 7] {
        for gain in [GAIN_SLOW_START, GAIN_AVOIDANCE] {
            let d = gain * cwnd;
            // the srtt whose cost is exactly UNPACED_COST, and around it
            let edge = (UNPACED_COST * d) >> (PACE_SHIFT + 2);
            for srtt in [1, edge - 1, edge, edge + 1, edge + 2, 10 * edge, 1 << 41] {
                let mut c = cc();
                c.cwnd = cwnd;
                c.ssthresh = if gain == GAIN_SLOW_START { u64::MAX } else { 0 };
                c.srtt = Some(srtt);
                c.update_pacing();
                let x = srtt.min(1 << 40) << (PACE_SHIFT + 2);
                let want = if x / d < UNPACED_COST { 0 } else { x / d };
                assert_eq!(c.cost, want, "cwnd {cwnd} gain {gain} srtt {srtt}");
            }
        }
    }
}

/// Delivers whole windows at round trip `rtt` from `at` on (each window
/// limited the flow: all of it in flight), `n` times; returns the time.
fn windows(c: &mut Congestion, mut at: u64, rtt: Nanos, n: u64) -> u64 {
    for _ in 0..n {
        let w = c.cwnd();
        c.on_news(t(at), &news(w, Some(rtt)), w, &mut S.clone());
        at += rtt / MICROS;
    }
    at
}

/// A receiver's queue (loopback: a single-threaded receiver, its socket
/// holding all that credits let go) grows the round trip with the flight
/// and never drops: slow start ends by delay, then the window grows as
/// conservative slow start (1/16 of slow start's) instead of the few KiB
/// per window of a queue a loss has shown, and reaches its largest.
#[test]
fn a_queue_no_loss_has_shown_does_not_hold_the_window() {
    let mut c = cc();
    c.on_handshake_rtt(t(0), 40 * MICROS);
    // one 64 KiB datagram takes 130 us at the receiver: a 4-datagram
    // window's round trip is 560 us, far over the handshake's 40
    let at = windows(&mut c, 10, 560 * MICROS, 1);
    assert!(!c.in_slow_start(), "slow start ended by delay");
    let exit = c.cwnd();
    assert!(!c.congested(t(at)));
    let before = c.cwnd();
    let at = windows(&mut c, at, 1_000 * MICROS, 1);
    assert_eq!(
        c.cwnd(),
        before + before / CSS_DIVISOR,
        "1/16 of slow start"
    );
    windows(&mut c, at, 4_000 * MICROS, 200);
    assert_eq!(c.cwnd(), MAX, "up to what the packet windows allow");
    assert_eq!(c.counts, CcCounts::default());
    assert!(exit < MAX / 4);
}

/// The first congestion loss of a window grown past its queue's delay
/// signal sends it back to where delay said the queue began; from then
/// on (for `CONGESTED_FOR` after the last such loss) the queue holds its
/// growth as before: 2 KiB per window.
#[test]
fn a_queue_that_overflowed_holds_the_window_again() {
    let mut c = cc();
    c.on_handshake_rtt(t(0), 40 * MICROS);
    let at = windows(&mut c, 10, 560 * MICROS, 1);
    let exit = c.cwnd();
    let at = windows(&mut c, at, 2_000 * MICROS, 20);
    assert!(c.cwnd() > 2 * exit);
    c.on_news(t(at), &loss(t(at - 100)), 0, &mut S.clone());
    assert_eq!(c.counts.reductions, 1);
    assert_eq!(c.cwnd(), exit, "back to the delay signal's window");
    assert!(c.congested(t(at)));
    // held: a window acknowledged grows it by INCREASE / QUEUED_SLOWDOWN
    let at = windows(&mut c, at + 1, 2_000 * MICROS, 1);
    assert_eq!(c.cwnd(), exit + INCREASE / QUEUED_SLOWDOWN);
    // a later congestion loss: x0.7 as before
    let w = c.cwnd();
    c.on_news(t(at + 10), &loss(t(at + 5)), 0, &mut S.clone());
    assert_eq!(c.cwnd(), w * BETA_CONGESTION / 16);
    // long without a loss: the queue is probed again
    let at = at + 10 + CONGESTED_FOR / MICROS;
    assert!(!c.congested(t(at)));
    let w = c.cwnd();
    windows(&mut c, at, 2_000 * MICROS, 1);
    assert_eq!(c.cwnd(), w + w / CSS_DIVISOR);
}

/// A queue longer than `PROBE_DELAY` (a shaped link's 30 ms) is not
/// probed even before any loss: delay holds the window as before.
#[test]
fn a_long_queue_holds_the_window_without_a_loss() {
    let mut c = cc();
    c.on_handshake_rtt(t(0), 40 * MICROS);
    let mut at = windows(&mut c, 10, 560 * MICROS, 1);
    for _ in 0..40 {
        at += 1_000;
        c.on_news(t(at), &news(0, Some(20_000 * MICROS)), 0, &mut S.clone());
    }
    let w = c.cwnd();
    windows(&mut c, at, 20_000 * MICROS, 1);
    assert_eq!(c.cwnd(), w + INCREASE / QUEUED_SLOWDOWN);
    assert!(!c.congested(t(at)));
}

/// `on_rtt` reckons the pacing cost again only when the round trip it is
/// reckoned by moved (or, unpaced, rose) or the window changed (`paced_by`):
/// over a random walk of samples, deliveries, losses, NACKs and timeouts,
/// the cost kept is the one a reckoning afresh gives, after every step
/// but a NACK's (whose change waits for the next sample, as it did).
#[test]
fn the_pacing_cost_kept_between_samples_is_the_one_reckoned_afresh() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let mut s = S;
    for max in [MAX, 8 * (1500 + PACKET_OVERHEAD)] {
        let mss = if max == MAX { MSS as usize } else { 1500 };
        let mut c = Congestion::new(true, mss, max);
        let (mut at, mut kept, mut reckoned) = (10, 0, 0);
        for i in 0..20_000 {
            // loopback's few us, a LAN's tens, a shaped link's ms, in turn
            let scale = [2, 5, 40, 900, 30_000][i / 2_000 % 5] * MICROS;
            at += 1 + next(scale / 4 / MICROS + 1);
            let rtt = scale / 2 + next(scale);
            let mut nacked = false;
            match next(50) {
                0 => c.on_timeout(t(at), &mut s),
                1 => {
                    c.on_nack(t(at));
                    nacked = true;
                }
                2 => {
                    let mut n = news(0, Some(rtt));
                    n.lost(mss as u64, t(at.saturating_sub(next(1_000))));
                    c.on_news(t(at), &n, c.cwnd() / 2, &mut s);
                }
                3 => {
                    let n = FlightNews {
                        frto: Some(next(2) == 0),
                        ..news(0, None)
                    };
                    c.on_news(t(at), &n, 0, &mut s);
                }
                _ => {
                    let flight = next(c.cwnd() + 1);
                    let delivered = next(4 * mss as u64);
                    c.on_news(t(at), &news(delivered, Some(rtt)), flight, &mut s);
                }
            }
            let mut afresh = c.clone();
            afresh.update_pacing();
            if !nacked {
                assert_eq!(c.cost, afresh.cost, "at {at} us, rtt {rtt}");
            }
            if c.paced_by.is_some() && c.paced_by == afresh.paced_by {
                kept += 1;
            }
            reckoned += (c.cost != 0) as u64;
        }
        // (the walk kept the cost often and was paced at times)
        assert!(kept > 1_000, "{kept}");
        assert!(reckoned > 100, "{reckoned}");
    }
}
