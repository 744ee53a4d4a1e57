//! The round-trip estimator's states (`proto/rtt.rs` `sample`: RFC 6298's
//! `rttvar = 3/4 rttvar + 1/4 |srtt - r|`, `srtt = 7/8 srtt + 1/8 r`) as it
//! runs over loss-free round trips drawn from the measured distribution:
//! a loss meets the timers of the state the estimator is in when its
//! packet leaves, and where round trips vary (a scheduler's tail) a loss
//! just after a slow round trip waits a much longer probe and RTO than the
//! mean state gives. The states are binned by their probe timeout into
//! `BINS` of equal weight, each at its mean `srtt` and `rttvar`.
//!
//! Without a measured distribution (or one of a single round trip): one
//! state, `srtt` the round trip and `rttvar` the stages' (its mean
//! absolute deviation).

use super::Stages;

/// Round trips the estimator runs over (after `WARM`), and the bins.
const DRAWS: usize = 20_000;
const WARM: usize = 200;
const BINS: usize = 16;

/// One state of the estimator, with its weight.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct State {
    pub weight: f64,
    pub srtt: f64,
    pub rttvar: f64,
}

/// The estimator's states over `st`'s loss-free round trips.
pub fn states(st: &Stages) -> Vec<State> {
    let one = vec![State {
        weight: 1.0,
        srtt: st.round_trip(),
        rttvar: st.rttvar,
    }];
    let Some(d) = &st.loss_free else {
        return one;
    };
    let atoms = d.atoms();
    if atoms.len() < 2 {
        return one;
    }
    // inverse transform sampling from a fixed stream (the model is a
    // function of its inputs: same stages, same states)
    let mut cdf = Vec::with_capacity(atoms.len());
    let mut acc = 0.0;
    let total: f64 = atoms.iter().map(|a| a.1).sum();
    for &(t, p) in atoms {
        acc += p / total;
        cdf.push((acc, t));
    }
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut draw = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let u = (x >> 11) as f64 / (1u64 << 53) as f64;
        let i = cdf.partition_point(|c| c.0 < u).min(cdf.len() - 1);
        cdf[i].1
    };
    let (mut srtt, mut rttvar) = (draw(), 0.0);
    rttvar += srtt / 2.0;
    let mut seen = Vec::with_capacity(DRAWS);
    for k in 0..WARM + DRAWS {
        let r = draw();
        rttvar = 0.75 * rttvar + 0.25 * (srtt - r).abs();
        srtt = 0.875 * srtt + 0.125 * r;
        if k >= WARM {
            // the probe timeout orders the states (`Policy::pto` without
            // the ACK delay and the cap, which are the same for all)
            seen.push(((2.0 * srtt).max(srtt + 4.0 * rttvar), srtt, rttvar));
        }
    }
    seen.sort_by(|a, b| a.0.total_cmp(&b.0));
    seen.chunks(DRAWS.div_ceil(BINS))
        .map(|c| State {
            weight: c.len() as f64 / DRAWS as f64,
            srtt: c.iter().map(|s| s.1).sum::<f64>() / c.len() as f64,
            rttvar: c.iter().map(|s| s.2).sum::<f64>() / c.len() as f64,
        })
        .collect()
}
