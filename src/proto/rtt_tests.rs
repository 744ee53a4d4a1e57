//! `rtt.rs`'s unit tests: the estimate, the floor, the probe.

use super::*;

#[test]
fn converges_and_clamps() {
    let mut r = RttEstimator::new(20_000_000, 2_000_000, 1_000_000_000);
    assert_eq!(r.rto(), 20_000_000);
    for _ in 0..50 {
        r.sample(10_000);
    }
    assert_eq!(r.rto(), 2_000_000, "clamped to the minimum");
    let mut r = RttEstimator::new(20_000_000, 1_000, 1_000_000_000);
    for _ in 0..200 {
        r.sample(100_000);
    }
    let rto = r.rto();
    assert!((100_000..=110_000).contains(&rto), "{rto}");
    r.on_timeout();
    r.on_timeout();
    assert_eq!(r.rto(), 4 * rto);
    r.on_progress();
    assert_eq!(r.rto(), rto);
    for _ in 0..40 {
        r.on_timeout();
    }
    assert_eq!(r.rto(), 1_000_000_000, "capped at the maximum");
}

#[test]
fn a_late_answer_alone_teaches_nothing_a_needless_copy_does_until_real_losses() {
    let mut r = RttEstimator::new(20_000_000, 5_000_000, 1_000_000_000).with_ack_delay(200_000);
    for _ in 0..50 {
        r.sample(20_000);
    }
    let pto = r.probe_timeout().unwrap();
    assert!((440_000..=450_000).contains(&pto), "{pto}");
    // answered late: a lost copy or a lost answer as much as a
    // descheduled peer; the timing alone changes nothing
    r.on_retransmit_answered(2_500_000, 3_000_000);
    assert_eq!(r.probe_timeout(), Some(pto));
    assert_eq!(r.floor(), 0);
    // the receiver reported the copy needless, answered 2.5 ms after
    // it, 3 ms after the original: it was off the CPU
    r.on_needless_copy(2_500_000, 3_000_000);
    assert_eq!(r.probe_timeout(), Some(pto), "the probe never waits for it");
    assert_eq!(r.second_probe_within(r.rto()), Some(3_750_000));
    assert_eq!(r.rto(), 5_000_000);
    r.on_needless_copy(6_000_000, 7_000_000);
    assert_eq!(r.probe_timeout(), Some(pto));
    assert_eq!(
        r.second_probe_within(r.rto()),
        Some(8_750_000),
        "at most the RTO"
    );
    assert_eq!(r.rto(), 8_750_000);
    // a needless copy answered promptly (an ACK was lost) teaches nothing
    r.on_needless_copy(50_000, 500_000);
    assert_eq!(r.rto(), 8_750_000);
    // a peer that did not poll for a second: at most 4 minimum RTOs
    r.on_needless_copy(900_000_000, 1_000_000_000);
    assert_eq!(r.rto(), 20_000_000);
    for _ in 0..FLOOR_PERSIST - 1 {
        r.on_retransmit_answered(50_000, 500_000);
    }
    assert_eq!(r.rto(), 20_000_000);
    r.on_retransmit_answered(50_000, 500_000);
    assert_eq!(
        r.second_probe_within(r.rto()),
        Some(2 * pto),
        "16 real losses: fast again"
    );
    assert_eq!(r.rto(), 5_000_000);
}

/// The probe waits for the floor only while most retransmissions were
/// reported needless: a peer often away and seldom a loss costs no
/// copies; frequent random loss beside it is repaired by prompt probes.
#[test]
fn the_probe_waits_for_the_floor_only_while_most_copies_were_needless() {
    let mut r = RttEstimator::new(20_000_000, 5_000_000, 1_000_000_000).with_ack_delay(25_000);
    for _ in 0..50 {
        r.sample(20_000);
    }
    let pto = r.probe_timeout().unwrap();
    // the receiver reports late needless copies, one after another
    let mut needless = 0;
    while r.probe_timeout() == Some(pto) {
        r.on_retransmit_answered(2_500_000, 3_000_000);
        r.on_needless_copy(2_500_000, 3_000_000);
        needless += 1;
        assert!(needless < 10, "the probe never waited for the floor");
    }
    assert_eq!(r.probe_timeout(), Some(3_750_000));
    assert!(needless >= 4, "one stall is not a habit: {needless}");
    // copies that repaired real losses (not reported needless), answered
    // late or not: the probe is prompt again, the floor stays for the RTO
    let mut real = 0;
    while r.probe_timeout() != Some(pto) {
        r.on_retransmit_answered(2_000_000, 2_500_000);
        real += 1;
        assert!(real < 10, "real losses never made the probe prompt");
    }
    assert_eq!(r.floor(), 3_750_000);
    assert_eq!(r.second_probe_within(r.rto()), Some(3_750_000));
}

#[test]
fn a_floor_is_dropped_after_16_prompt_round_trips_in_a_row() {
    let mut r = RttEstimator::new(20_000_000, 5_000_000, 1_000_000_000).with_ack_delay(25_000);
    for _ in 0..50 {
        r.sample(20_000);
    }
    let (pto, rto) = (r.probe_timeout().unwrap(), r.rto());
    r.on_needless_copy(10_000_000, 12_000_000);
    assert_eq!(r.floor(), 15_000_000);
    for _ in 0..FLOOR_PERSIST - 1 {
        r.sample(20_000);
    }
    // a late round trip (the peer off the CPU again) starts the count over
    r.sample(3_000_000);
    for _ in 0..FLOOR_PERSIST - 1 {
        r.sample(20_000);
    }
    assert_eq!(r.floor(), 15_000_000);
    r.sample(21_000);
    assert_eq!(r.floor(), 0, "16 prompt round trips in a row");
    // back to what the round trips say (the late one still in the
    // variation), not the floor's 15 ms
    let (p, o) = (r.probe_timeout().unwrap(), r.rto());
    assert!(
        pto < p && p < 1_000_000 && o == rto,
        "{p} {o} against {pto} {rto}"
    );
}

/// A lone stretched round trip (a process off the CPU for a slice) is
/// held and dropped when the next is prompt; one followed by another
/// long one (a queue) is fed; stretches that come often are fed at once.
#[test]
fn a_lone_stretched_round_trip_is_dropped_a_lasting_one_is_fed() {
    let at = |us: u64| Instant(us * 1_000);
    let mut r = RttEstimator::new(20_000_000, 1_000, 1_000_000_000).with_ack_delay(25_000);
    let t = std::cell::Cell::new(0);
    let rt = |r: &mut RttEstimator, us: u64| {
        r.sample_from(at(t.get() + us), at(t.get()));
        t.set(t.get() + us + 1);
    };
    for _ in 0..50 {
        rt(&mut r, 20);
    }
    let (srtt, rto) = (r.srtt().unwrap(), r.rto());
    // 4 ms off the CPU, then prompt again: nothing learnt
    rt(&mut r, 4_000);
    // held: not in the estimate, but the timers allow for it until
    // the next round trip decides
    assert_eq!(r.srtt().unwrap(), srtt, "held");
    assert!(r.rto() > 4_000_000, "{}", r.rto());
    rt(&mut r, 21);
    assert!(r.srtt().unwrap() < 2 * srtt && r.rto() < 2 * rto, "dropped");
    // two in one burst (a packet sent before the first was taken): still
    // one stretch, decided by the next round trip
    let t0 = t.get();
    r.sample_from(at(t0 + 4_000), at(t0));
    r.sample_from(at(t0 + 4_001), at(t0 + 1));
    t.set(t0 + 4_002);
    rt(&mut r, 20);
    assert!(r.srtt().unwrap() < 2 * srtt && r.rto() < 2 * rto, "dropped");
    // the path's delay grows (a queue): the second long one feeds both
    for _ in 0..50 {
        rt(&mut r, 20);
    }
    rt(&mut r, 3_000);
    rt(&mut r, 3_100);
    assert!(r.srtt().unwrap() > 500_000, "fed: {:?}", r.srtt());
    // long and prompt round trips in turn: the path's own, fed
    let mut r = RttEstimator::new(20_000_000, 1_000, 1_000_000_000).with_ack_delay(25_000);
    for _ in 0..50 {
        rt(&mut r, 20);
    }
    for _ in 0..20 {
        rt(&mut r, 2_000);
        rt(&mut r, 20);
    }
    assert!(r.rttvar() > 300_000, "fed: {}", r.rttvar());
}

/// What the receiver reports tells a loss from a peer away: copies it
/// answered without reporting a duplicate are real losses, and while they
/// are frequent the probe waits neither for the floor nor for round trips
/// stretched by a peer off the CPU (the prompt samples time it); a copy
/// reported needless is no loss; without losses the floor is back.
#[test]
fn frequent_real_losses_make_the_probe_prompt_whatever_the_peer_did() {
    let at = |us: u64| Instant(us * 1_000);
    let mut r = RttEstimator::new(20_000_000, 5_000_000, 1_000_000_000).with_ack_delay(25_000);
    let t = std::cell::Cell::new(0);
    let rt = |r: &mut RttEstimator, us: u64| {
        r.sample_from(at(t.get() + us), at(t.get()));
        t.set(t.get() + us + 1);
    };
    for _ in 0..50 {
        rt(&mut r, 20);
    }
    let pto = r.probe_timeout().unwrap();
    // a peer often away: late needless copies, the probe waits for the floor
    for _ in 0..6 {
        r.on_retransmit_answered(2_500_000, 3_000_000);
        r.on_needless_copy(2_500_000, 3_000_000);
    }
    assert_eq!(r.probe_timeout(), Some(3_750_000), "no loss: the floor");
    // and often stretched round trips (fed: the path's own, it seems)
    for _ in 0..20 {
        rt(&mut r, 4_000);
        rt(&mut r, 20);
    }
    assert!(r.srtt().unwrap() > 1_000_000, "{:?}", r.srtt());
    assert!(r.probe_timeout().unwrap() >= 3_750_000);
    // copies answered and not reported twice: real losses, one in 20
    // round trips
    for _ in 0..10 {
        r.on_retransmit_answered(2_000_000, 2_500_000);
        for _ in 0..10 {
            rt(&mut r, 20);
            rt(&mut r, 4_000);
        }
    }
    let p = r.probe_timeout().unwrap();
    assert!(
        p <= 2 * pto,
        "frequent losses: a prompt probe ({p} against {pto})"
    );
    // reported needless after all: not losses (undone one by one)
    for _ in 0..10 {
        r.on_needless_copy(3_000_000, 3_500_000);
    }
    assert!(
        r.probe_timeout().unwrap() >= 3_750_000,
        "no loss: the floor again"
    );
    // losses that stopped: 100 round trips on, the floor is back
    r.on_retransmit_answered(2_000_000, 2_500_000);
    r.on_retransmit_answered(2_000_000, 2_500_000);
    assert!(r.probe_timeout().unwrap() <= 2 * pto);
    for _ in 0..50 {
        rt(&mut r, 20);
        rt(&mut r, 4_000);
    }
    assert!(
        r.probe_timeout().unwrap() >= 3_750_000,
        "losses stopped: the floor"
    );
}

/// `transmit_timers` (one look at the estimate) is `rto`,
/// `probe_timeout_within` and `second_probe_within`, and the kept
/// `prompt_max` judges samples as the shortest round trip and the ACK
/// delay do (`is_prompt`, `stretched`), whatever the estimator went
/// through: samples prompt and stretched, timeouts, losses repaired,
/// needless copies (a fixed pseudo-random walk).
#[test]
fn timers_of_one_look_and_the_kept_prompt_limit_agree_with_the_estimate() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for ack_delay in [0, 200_000] {
        let mut r =
            RttEstimator::new(20_000_000, 1_000_000, 1_000_000_000).with_ack_delay(ack_delay);
        let mut now = Instant(1_000_000_000);
        let check = |r: &RttEstimator, x: Nanos| {
            let rto = r.rto();
            assert_eq!(
                r.transmit_timers(),
                (rto, r.probe_timeout_within(rto), r.second_probe_within(rto))
            );
            let k = 2 * r.ack_delay + GRANULARITY;
            let prompt = x <= 4 * r.min_rtt.unwrap_or(x).min(x) + k;
            assert_eq!(r.is_prompt(x), prompt, "{x} after {:?}", r.min_rtt);
            let stretched = match (r.srtt, r.min_rtt) {
                (Some(s), Some(m)) => x > (2 * s).max(4 * m + k),
                _ => false,
            };
            assert_eq!(r.stretched(x), stretched, "{x}");
        };
        check(&r, 10_000);
        for _ in 0..5_000 {
            let rtt = match next(10) {
                0 => 500_000 + next(5_000_000),
                _ => 5_000 + next(20_000),
            };
            match next(40) {
                0 => r.on_timeout(),
                1 => r.on_retransmit_answered(next(2 * rtt), 2 * rtt),
                2 => r.on_needless_copy(next(3 * rtt), 3 * rtt),
                3 => r.on_progress(),
                _ => {
                    now = now.plus(rtt + next(1_000));
                    r.sample_from(now, Instant(now.0 - rtt));
                }
            }
            check(&r, rtt);
            check(&r, next(10_000_000));
        }
    }
}

/// Copies reported needless and answered promptly after them (a peer away
/// a little longer than the probe's time: its host's hiccups; or a lost
/// answer): the floor learns nothing, the first probe does once most
/// copies were needless (`hiccup`, at most 8 probe times); prompt round
/// trips between hiccups keep it, 16 real losses drop it, frequent real
/// losses make the probe prompt meanwhile.
#[test]
fn needless_copies_answered_promptly_teach_the_probe_the_peers_hiccups() {
    let mut r = RttEstimator::new(20_000_000, 5_000_000, 1_000_000_000).with_ack_delay(25_000);
    for _ in 0..50 {
        r.sample(10_000);
    }
    let pto = r.probe_timeout().unwrap();
    assert!((70_000..=80_000).contains(&pto), "{pto}");
    // the peer away a little longer than the probe now and then: the
    // copy (at the probe's time) answered 60 us after it
    let first = pto + 60_000;
    let hiccup = |r: &mut RttEstimator| {
        r.on_retransmit_answered(60_000, first);
        r.on_needless_copy(60_000, first);
    };
    let mut copies = 0;
    while r.probe_timeout() == Some(pto) {
        hiccup(&mut r);
        copies += 1;
        assert!(copies < 10, "the probe never learnt the hiccups");
    }
    assert!(copies >= 4, "one hiccup is not a habit: {copies}");
    assert_eq!(r.floor(), 0, "the floor learns nothing from them");
    let learnt = first + first / 4;
    assert_eq!(
        r.probe_timeout(),
        Some(learnt),
        "a quarter more than the answer took"
    );
    assert_eq!(r.rto(), 5_000_000, "nor the RTO");
    // prompt round trips between hiccups keep it
    for _ in 0..1000 {
        r.sample(10_000);
    }
    assert_eq!(r.probe_timeout(), Some(learnt));
    // longer hiccups raise it, at most to 8 probe times
    for _ in 0..20 {
        let first = 10 * pto;
        r.on_retransmit_answered(pto, first);
        r.on_needless_copy(pto, first);
    }
    assert_eq!(r.probe_timeout(), Some(8 * pto));
    // real losses (copies answered promptly, not reported twice): the
    // probe is prompt again after a few, and 16 drop what was learnt
    let mut real = 0;
    while r.probe_timeout() != Some(pto) {
        r.on_retransmit_answered(20_000, 100_000);
        real += 1;
        assert!(real < 10, "real losses never made the probe prompt");
    }
    for _ in real..FLOOR_PERSIST {
        r.on_retransmit_answered(20_000, 100_000);
    }
    assert_eq!(r.hiccup, 0, "16 real losses");
}

/// The timeouts' plain forms (no clamp's check, no multiplication without
/// a backoff) give what `clamp` and the backed-off product gave.
#[test]
fn the_timeout_without_backoff_or_clamp_is_the_clamped_product() {
    for (min, max) in [(1_000_000, 1_000_000_000), (5_000_000, 5_000_000)] {
        let mut r = RttEstimator::new(20_000_000, min, max);
        for sample in [0, 1, 999, min / 3, min, 3 * min, max, 2 * max] {
            r.sample(sample);
            for backoff in [0, 1, 2, 19, 20, 21, u32::MAX] {
                r.backoff = backoff;
                let base = match r.timed() {
                    None => r.initial,
                    Some((s, v)) => s + (4 * v).max(GRANULARITY),
                };
                let base = base.max(r.floor).clamp(r.min, r.max);
                assert_eq!(r.base_rto(), base);
                let want = base.saturating_mul(1 << backoff.min(20)).min(r.max);
                assert_eq!(r.rto(), want, "backoff {backoff} sample {sample}");
            }
        }
    }
}
