//! The one fault injector, shared by the UDP wrapper (`net::FaultyTransport`,
//! configured by `RAMP_FAULT_*`) and the network simulator (`sim::SimNet`):
//! a seeded random stream decides, per datagram, whether it is dropped,
//! duplicated, has a bit flipped, is held back so later ones overtake it,
//! and how long it is delayed. Neutral ground: it knows neither sockets nor
//! the simulator, only bytes and instants.

use crate::rng::Rng;
use crate::time::{Instant, Nanos, MICROS};

/// What the injector does to datagrams.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultConfig {
    /// Probability of dropping a datagram.
    pub loss: f64,
    /// Probability of dropping a datagram at its receiver, after the
    /// socket gave it (`receive`): a loss in the receiver's kernel or
    /// library rather than on the way.
    pub recv_loss: f64,
    /// Bit error rate: a datagram of `n` bytes is dropped with probability
    /// `1 - (1 - ber)^(8 n)` (one bit wrong anywhere and its checksum
    /// refuses it), on top of `loss` (`ber_loss`).
    pub ber: f64,
    /// Probability of sending a datagram twice.
    pub dup: f64,
    /// Probability of flipping one bit of a datagram (each copy apart).
    pub corrupt: f64,
    /// Probability of holding a datagram back by an extra random delay (up
    /// to `reorder_window`), so that later ones overtake it.
    pub reorder: f64,
    pub reorder_window: Nanos,
    /// Delay added to every datagram (the one-way latency in the simulator).
    pub delay: Nanos,
    /// Extra uniform jitter, 0..=`jitter`, on top of `delay`.
    pub jitter: Nanos,
    pub seed: u64,
}

impl FaultConfig {
    /// Whether the injector changes anything at all.
    pub fn enabled(&self) -> bool {
        self.loss > 0.0
            || self.recv_loss > 0.0
            || self.ber > 0.0
            || self.dup > 0.0
            || self.corrupt > 0.0
            || self.reorder > 0.0
            || self.delay > 0
            || self.jitter > 0
    }
}

/// No faults, no delay (what `RAMP_FAULT_*` default to).
impl Default for FaultConfig {
    fn default() -> Self {
        FaultConfig {
            loss: 0.0,
            recv_loss: 0.0,
            ber: 0.0,
            dup: 0.0,
            corrupt: 0.0,
            reorder: 0.0,
            reorder_window: 300 * MICROS,
            delay: 0,
            jitter: 0,
            seed: 1,
        }
    }
}

/// The probability that a datagram of `bytes` bytes has at least one of
/// its bits wrong at bit error rate `ber`: `1 - (1 - ber)^(8 bytes)`.
pub fn ber_loss(ber: f64, bytes: usize) -> f64 {
    if ber <= 0.0 {
        return 0.0;
    }
    // ln_1p keeps the small rates exact (1e-9 per bit)
    -(8.0 * bytes as f64 * (-ber).ln_1p()).exp_m1()
}

/// What the injector did to one datagram.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fate {
    pub dropped: bool,
    pub duplicated: bool,
    /// Copies that had a bit flipped (0..=2).
    pub corrupted: u8,
    /// Copies held back for reordering (0..=2).
    pub reordered: u8,
}

/// A seeded fault injector: same configuration and seed, same decisions.
#[derive(Clone, Debug)]
pub struct FaultInjector {
    cfg: FaultConfig,
    rng: Rng,
}

impl FaultInjector {
    /// An injector whose random stream starts from `cfg.seed`.
    #[cfg(test)]
    pub fn new(cfg: FaultConfig) -> FaultInjector {
        let rng = Rng::new(cfg.seed);
        FaultInjector::with_rng(cfg, rng)
    }

    /// An injector that continues the given random stream (the simulator
    /// draws node ids from the same seed first).
    pub fn with_rng(cfg: FaultConfig, rng: Rng) -> FaultInjector {
        FaultInjector { cfg, rng }
    }

    /// Decides the fate of `dgram`, sent at `now`: hands every copy that
    /// survives to `out` with the instant it is due (`now` or later), and
    /// says what was done.
    pub fn inject(
        &mut self,
        now: Instant,
        dgram: &[u8],
        mut out: impl FnMut(Instant, Vec<u8>),
    ) -> Fate {
        let mut fate = Fate::default();
        let cfg = &self.cfg;
        let rng = &mut self.rng;
        if rng.chance(cfg.loss) || rng.chance(ber_loss(cfg.ber, dgram.len())) {
            fate.dropped = true;
            return fate;
        }
        fate.duplicated = rng.chance(cfg.dup);
        for _ in 0..1 + fate.duplicated as u8 {
            let mut d = dgram.to_vec();
            if rng.chance(cfg.corrupt) && !d.is_empty() {
                fate.corrupted += 1;
                let i = rng.below(d.len() as u64) as usize;
                d[i] ^= 1 << rng.below(8);
            }
            let mut at = now.plus(cfg.delay + rng.below(cfg.jitter + 1));
            if rng.chance(cfg.reorder) {
                fate.reordered += 1;
                at = at.plus(1 + rng.below(cfg.reorder_window));
            }
            out(at, d);
        }
        fate
    }

    /// Whether a datagram that arrived is dropped at its receiver
    /// (`recv_loss`; draws from the stream only when it is set, so seeded
    /// runs without it replay as before).
    pub fn receive(&mut self) -> bool {
        self.cfg.recv_loss > 0.0 && self.rng.chance(self.cfg.recv_loss)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(cfg: &FaultConfig, n: usize) -> (Vec<(Instant, Vec<u8>)>, Vec<Fate>) {
        let mut f = FaultInjector::new(cfg.clone());
        let mut out = Vec::new();
        let fates = (0..n)
            .map(|k| {
                let d = [k as u8; 16];
                f.inject(Instant(1000), &d, |at, b| out.push((at, b)))
            })
            .collect();
        (out, fates)
    }

    #[test]
    fn no_faults_passes_everything_through_unchanged() {
        let (out, fates) = run(&FaultConfig::default(), 100);
        assert!(!FaultConfig::default().enabled());
        assert_eq!(out.len(), 100);
        for (k, (at, b)) in out.iter().enumerate() {
            assert_eq!(*at, Instant(1000));
            assert_eq!(b, &[k as u8; 16]);
        }
        assert!(fates.iter().all(|f| *f == Fate::default()));
    }

    #[test]
    fn every_fault_happens_and_repeats_for_a_seed() {
        let cfg = FaultConfig {
            loss: 0.2,
            dup: 0.2,
            corrupt: 0.2,
            reorder: 0.2,
            delay: 5 * MICROS,
            jitter: 3 * MICROS,
            seed: 42,
            ..Default::default()
        };
        let (out, fates) = run(&cfg, 2000);
        assert_eq!(run(&cfg, 2000), (out.clone(), fates.clone()));
        let n = |p: fn(&Fate) -> bool| fates.iter().filter(|f| p(f)).count();
        assert!(n(|f| f.dropped) > 300);
        assert!(n(|f| f.duplicated) > 200);
        assert!(n(|f| f.corrupted > 0) > 200);
        assert!(n(|f| f.reordered > 0) > 200);
        let late = 5 * MICROS + 3 * MICROS;
        for (at, _) in &out {
            let d = at.0 - 1000;
            assert!((5 * MICROS..=late + cfg.reorder_window).contains(&d));
        }
        let flipped = out
            .iter()
            .filter(|(_, b)| b.iter().map(|x| x.count_ones()).sum::<u32>() % 8 != 0)
            .count();
        assert!(flipped > 0);
        let other = FaultConfig { seed: 43, ..cfg };
        assert_ne!(run(&other, 2000).1, fates);
    }

    /// Drops of `n` datagrams of `len` bytes, and the binomial's bound
    /// (5 standard deviations: a seed that fails it is one in millions).
    fn realised(cfg: FaultConfig, len: usize, n: usize, p: f64) {
        let mut f = FaultInjector::new(cfg.clone());
        let d = vec![0u8; len];
        let dropped = (0..n)
            .filter(|_| f.inject(Instant(0), &d, |_, _| {}).dropped)
            .count() as f64;
        let sd = (n as f64 * p * (1.0 - p)).sqrt();
        assert!(
            (dropped - n as f64 * p).abs() <= 5.0 * sd + 1.0,
            "{cfg:?}, {len} bytes: {dropped} of {n} dropped, expected {:.1} +- {:.1}",
            n as f64 * p,
            5.0 * sd
        );
    }

    #[test]
    fn the_realised_loss_rate_is_the_setting() {
        for seed in [1, 7, 1234] {
            for loss in [0.001, 0.01, 0.05, 0.3] {
                let cfg = FaultConfig {
                    loss,
                    seed,
                    ..Default::default()
                };
                realised(cfg, 100, 200_000, loss);
            }
        }
    }

    #[test]
    fn the_realised_receive_loss_rate_is_the_setting() {
        for (seed, p) in [(1, 0.01), (5, 0.2)] {
            let mut f = FaultInjector::new(FaultConfig {
                recv_loss: p,
                seed,
                ..Default::default()
            });
            let n = 100_000;
            let dropped = (0..n).filter(|_| f.receive()).count() as f64;
            let sd = (n as f64 * p * (1.0 - p)).sqrt();
            assert!((dropped - n as f64 * p).abs() <= 5.0 * sd, "{p}: {dropped}");
        }
        // unset: nothing dropped, nothing drawn
        let mut f = FaultInjector::new(FaultConfig::default());
        let before = f.clone().rng.next_u64();
        assert!(!(0..1000).any(|_| f.receive()));
        assert_eq!(f.rng.next_u64(), before);
    }

    #[test]
    fn a_bit_error_rate_drops_by_size() {
        assert_eq!(ber_loss(0.0, 65_000), 0.0);
        assert!((ber_loss(1e-3, 1) - (1.0 - 0.999f64.powi(8))).abs() < 1e-15);
        assert!(
            (ber_loss(1e-7, 76) - 608e-7).abs() < 1e-8,
            "about 8 n ber when small"
        );
        assert!(ber_loss(1e-3, 65_507) > 0.999_999);
        for seed in [1, 99] {
            for (ber, len) in [
                (1e-5, 76),
                (1e-5, 1_100),
                (1e-4, 76),
                (1e-6, 65_507),
                (1e-3, 80),
            ] {
                let p = ber_loss(ber, len);
                let cfg = FaultConfig {
                    ber,
                    seed,
                    ..Default::default()
                };
                realised(cfg, len, 100_000, p);
            }
        }
        // on top of the plain loss rate: dropped when either says so
        let p = 1.0 - (1.0 - 0.01) * (1.0 - ber_loss(1e-5, 1_100));
        let cfg = FaultConfig {
            loss: 0.01,
            ber: 1e-5,
            seed: 3,
            ..Default::default()
        };
        realised(cfg, 1_100, 100_000, p);
    }
}
