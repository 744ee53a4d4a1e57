//! Round-trip estimation and retransmission timeout (RFC 6298), with
//! exponential backoff.

use crate::time::Nanos;

#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt: Option<Nanos>,
    rttvar: Nanos,
    /// Number of consecutive timeouts; doubles the timeout each time.
    backoff: u32,
    initial: Nanos,
    min: Nanos,
    max: Nanos,
}

/// Clock granularity term of RFC 6298 (G).
const GRANULARITY: Nanos = 1_000;

impl RttEstimator {
    pub fn new(initial: Nanos, min: Nanos, max: Nanos) -> RttEstimator {
        RttEstimator {
            srtt: None,
            rttvar: 0,
            backoff: 0,
            initial,
            min,
            max: max.max(min),
        }
    }

    /// Feeds one sample (from a packet never retransmitted: Karn's rule).
    pub fn sample(&mut self, r: Nanos) {
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                let diff = s.abs_diff(r);
                self.rttvar = (3 * self.rttvar + diff) / 4;
                self.srtt = Some((7 * s + r) / 8);
            }
        }
    }

    pub fn srtt(&self) -> Option<Nanos> {
        self.srtt
    }

    /// The round-trip variation (RFC 6298 RTTVAR); 0 before any sample.
    pub fn rttvar(&self) -> Nanos {
        self.rttvar
    }

    /// Timeout without backoff.
    pub fn base_rto(&self) -> Nanos {
        let rto = match self.srtt {
            None => self.initial,
            Some(s) => s + (4 * self.rttvar).max(GRANULARITY),
        };
        rto.clamp(self.min, self.max)
    }

    /// Timeout with the current backoff applied.
    pub fn rto(&self) -> Nanos {
        let shift = self.backoff.min(20);
        self.base_rto().saturating_mul(1 << shift).min(self.max)
    }

    pub fn on_timeout(&mut self) {
        self.backoff = self.backoff.saturating_add(1);
    }

    pub fn on_progress(&mut self) {
        self.backoff = 0;
    }
}

#[cfg(test)]
mod tests {
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
}
