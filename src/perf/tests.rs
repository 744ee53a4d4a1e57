//! The model's solver against closed forms.

use super::*;

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-9)
}

fn stages() -> Stages {
    Stages {
        send: 1.5,
        request_way: 4.0,
        handler: 1.0,
        reply_way: 4.5,
        rttvar: 0.5,
        ..Stages::default()
    }
}

#[test]
fn without_loss_the_response_is_the_sum_of_the_stage_costs() {
    let st = stages();
    let p = Policy::default();
    for proto in [Protocol::Plain, Protocol::Txn] {
        for bytes in [0, 1024, 65_536] {
            let o = outcome(proto, bytes, &st, &Faults::default(), &p);
            assert!(close(o.mean_us, 11.0, 1e-12), "{proto:?} {bytes}: {o:?}");
            assert!(close(o.p99_us, 11.0, 1e-12), "{proto:?} {bytes}: {o:?}");
            assert_eq!(o.lost, 0.0);
        }
    }
}

#[test]
fn one_retransmission_stage_is_the_geometric_series() {
    // constant timeout t: E = t q / (1 - q); the p99 is the first copy
    // whose instant the chain passes with 99% probability
    for q in [0.0, 1e-4, 0.01, 0.05, 0.3, 0.6] {
        let t = 250.0;
        let d = Schedule::constant(t, 200).delay(q);
        assert!(
            close(d.mean(), t * q / (1.0 - q), 1e-9),
            "q {q}: {}",
            d.mean()
        );
        let k = (0..).find(|&k| 1.0 - q.powi(k + 1) >= 0.99).unwrap();
        assert!(close(d.quantile(0.99), k as f64 * t, 1e-12), "q {q}");
    }
}

#[test]
fn the_newest_packets_copies_follow_the_probe_then_the_backoff() {
    let p = Policy::default();
    let s = Schedule::newest(70.0, 5000.0, true, &p);
    assert_eq!(&s.0[..6], &[0.0, 70.0, 210.0, 5210.0, 15_210.0, 35_210.0]);
    // no second probe in a longer flight
    let s = Schedule::newest(70.0, 5000.0, false, &p);
    assert_eq!(&s.0[..4], &[0.0, 70.0, 5070.0, 15_070.0]);
    // capped at rto_max, retry_limit timeouts
    let s = Schedule::newest(70.0, 5000.0, true, &p);
    assert_eq!(s.0.len(), 3 + p.retry_limit as usize + 1);
    let steps: Vec<f64> = s.0.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(*steps.last().unwrap(), p.rto_max_us);
    // its mean: the series over the copies' instants
    let q: f64 = 0.02;
    let want: f64 =
        s.0.iter()
            .enumerate()
            .map(|(k, t)| t * q.powi(k as i32) * (1.0 - q))
            .sum();
    assert!(close(s.delay(q).mean(), want, 1e-9));
}

#[test]
fn two_independent_stages_add_their_means_and_convolve() {
    let a = Schedule::constant(100.0, 60).delay(0.1);
    let b = Schedule::constant(30.0, 60).delay(0.2);
    let s = a.plus(&b);
    assert!(close(s.mean(), a.mean() + b.mean(), 1e-9));
    // P(sum = 0) = 0.9 * 0.8
    assert!(close(s.atoms()[0].1, 0.72, 1e-12));
}

#[test]
fn timers_follow_the_rules() {
    let p = Policy::default();
    assert_eq!(p.rto_min_us, 5000.0);
    assert_eq!(p.ack_delay_us, 25.0);
    assert_eq!(p.rto(11.0, 0.5), 5000.0, "clamped to the minimum");
    // max(2 srtt, srtt + 4 rttvar) + 2 ack delay
    assert_eq!(p.pto(11.0, 0.5), 72.0);
    assert_eq!(p.pto(11.0, 5.0), 81.0);
    assert_eq!(p.reo_wnd(11.0, 0.5), 5.5);
}

#[test]
fn datagram_sizes_follow_the_wire() {
    // header 68, one argument, CRC 4
    assert_eq!(datagrams(0, 1), vec![76]);
    assert_eq!(datagrams(0, 0), vec![72]);
    assert_eq!(datagrams(1024, 1), vec![1100]);
    // 64 KiB: the head and the first fragment fill one datagram
    let d = datagrams(65_536, 1);
    assert_eq!(d.len(), 2);
    assert_eq!(d[0], ProtoConfig::default().max_datagram);
    // the head's packet has the full header, the two after it the short
    // one (40, CRC 4)
    assert_eq!(d.iter().sum::<usize>(), 65_536 + 76 + 2 * 44);
}

#[test]
fn a_bit_error_rate_costs_more_for_longer_messages_and_the_p99_sees_the_probe() {
    let st = stages();
    let p = Policy::default();
    let f = Faults {
        ber: 1e-5,
        ..Default::default()
    };
    let short = outcome(Protocol::Plain, 0, &st, &f, &p);
    let medium = outcome(Protocol::Plain, 1024, &st, &f, &p);
    let long = outcome(Protocol::Plain, 65_536, &st, &f, &p);
    assert!(11.0 < short.mean_us && short.mean_us < medium.mean_us);
    assert!(medium.mean_us < long.mean_us);
    // short: request and reply each lost with ~6e-3: about 1.2% of round
    // trips wait a probe (72 us)
    assert_eq!(short.p99_us, 11.0 + 72.0);
    let want = 11.0 + 72.0 * (ber_loss(1e-5, 76) * 2.0);
    assert!(close(short.mean_us, want, 0.02), "{short:?} against {want}");
    // a transaction's TxnAck lost alone is found by the reply's SACK
    let txn = outcome(Protocol::Txn, 0, &st, &f, &p);
    assert!(txn.mean_us > short.mean_us);
}

#[test]
fn one_component_at_a_time() {
    let st = stages();
    let p = Policy::default();
    let init = Faults {
        initiator_loss: 0.01,
        ..Default::default()
    };
    let target = Faults {
        target_loss: 0.01,
        ..Default::default()
    };
    let a = outcome(Protocol::Plain, 0, &st, &init, &p);
    let b = outcome(Protocol::Plain, 0, &st, &target, &p);
    // the same timers at both ends: the same cost, each alone
    assert!(close(a.mean_us, b.mean_us, 1e-9));
    let both = Faults {
        initiator_loss: 0.01,
        target_loss: 0.01,
        ..Default::default()
    };
    let c = outcome(Protocol::Plain, 0, &st, &both, &p);
    assert!(close(
        c.mean_us - 11.0,
        (a.mean_us - 11.0) + (b.mean_us - 11.0),
        1e-9
    ));
    let stall = Faults {
        stall: 0.02,
        stall_us: 1000.0,
        ..Default::default()
    };
    let s = outcome(Protocol::Plain, 0, &st, &stall, &p);
    assert!(close(s.mean_us, 11.0 + 20.0, 1e-12));
    assert_eq!(s.p99_us, 1011.0);
}

#[test]
fn samples_sum_up_into_atoms_that_keep_the_mean_and_the_tail() {
    // 10,000 samples: 9,850 at 10 us, 150 spread over 100..250 us
    let mut v: Vec<f64> = vec![10.0; 9_850];
    v.extend((0..150).map(|k| 100.0 + k as f64));
    let d = Dist::of_samples(&v);
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    assert!(close(d.mean(), mean, 1e-12), "{} against {mean}", d.mean());
    assert!(d.lost.abs() < 1e-12);
    assert!(d.atoms().len() <= 145);
    // the samples' p99 is the 9,900th: 149 us; the atom's, the mean of a
    // 0.1% step (10 samples) ending there
    assert!(
        close(d.quantile(0.99), 144.5, 1e-12),
        "{}",
        d.quantile(0.99)
    );
    assert!(close(d.quantile(0.5), 10.0, 1e-12));
    // fewer samples than steps: one atom each
    let d = Dist::of_samples(&[1.0, 2.0, 3.0]);
    assert_eq!(d.atoms().len(), 3);
    assert!(close(d.mean(), 2.0, 1e-12));
}

#[test]
fn the_measured_loss_free_round_trip_is_convolved_with_the_repairs() {
    let p = Policy::default();
    let mut v: Vec<f64> = vec![10.0; 980];
    v.extend([30.0; 20]);
    let st = Stages {
        loss_free: Some(Dist::of_samples(&v)),
        ..stages()
    };
    // loss-free: the measured distribution itself (the p99 its tail's)
    let o = outcome(Protocol::Plain, 0, &st, &Faults::default(), &p);
    assert!(close(o.mean_us, 10.4, 1e-12), "{o:?}");
    assert!(close(o.p99_us, 30.0, 1e-12), "{o:?}");
    // one loss-free round trip measured: one estimator state, the flat
    // model's
    let one = Stages {
        loss_free: Some(Dist::at(11.0)),
        ..stages()
    };
    let f = Faults {
        ber: 1e-5,
        ..Default::default()
    };
    let flat = outcome(Protocol::Plain, 0, &stages(), &f, &p);
    assert_eq!(outcome(Protocol::Plain, 0, &one, &f, &p), flat);
    // with loss: the repairs' delays on top, at the estimator's states
    let states = timers::states(&st);
    let w: f64 = states.iter().map(|s| s.weight).sum();
    assert!(close(w, 1.0, 1e-12));
    let srtt: f64 = states.iter().map(|s| s.weight * s.srtt).sum();
    assert!(
        close(srtt, 10.4, 0.03),
        "the EWMA's mean is the round trip's: {srtt}"
    );
    // after a 30 us round trip the probe waits longer than at the mean
    let pto = |s: &timers::State| p.pto(s.srtt, s.rttvar);
    let (lo, hi) = (pto(&states[0]), pto(states.last().unwrap()));
    assert!(
        lo < p.pto(10.4, 0.768) && p.pto(10.4, 0.768) < hi,
        "{states:?}"
    );
    let with = outcome(Protocol::Plain, 0, &st, &f, &p);
    let q = 1.0 - (1.0 - ber_loss(1e-5, 76)) * (1.0 - ber_loss(1e-5, 76));
    let extra = with.mean_us - 10.4;
    assert!(
        q * lo * 0.9 < extra && extra < q * hi * 1.1,
        "{extra} for {q} of round trips waiting {lo}..{hi}"
    );
}
