//! A discrete distribution of delays (microseconds): the atoms a chain of
//! retransmission stages reaches, each with its probability, and the mass
//! that never arrives (the message given up, or below what is tracked).

/// Atoms lighter than this are dropped (counted in `lost`): the p99 and
/// the mean do not see them.
const TINY: f64 = 1e-15;
/// Atoms closer than this (us) are merged.
const MERGE_US: f64 = 1e-6;
/// Most atoms kept; beyond it the lightest are folded into their neighbour.
const MAX_ATOMS: usize = 20_000;

/// The cumulative shares between which `Dist::of_samples` sums samples up:
/// 0, 1%, .., 95% in 1% steps, then to 100% in 0.1% steps.
fn summary_bounds() -> impl Iterator<Item = f64> {
    (0..=95)
        .map(|k| k as f64 / 100.0)
        .chain((951..=1000).map(|k| k as f64 / 1000.0))
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Dist {
    /// (delay us, probability), sorted by delay.
    atoms: Vec<(f64, f64)>,
    /// Probability of never arriving.
    pub lost: f64,
}

impl Dist {
    /// Certainly `t`.
    pub fn at(t: f64) -> Dist {
        Dist {
            atoms: vec![(t, 1.0)],
            lost: 0.0,
        }
    }

    /// The atoms given (any order); what they leave of 1 is lost.
    pub fn from_atoms(mut atoms: Vec<(f64, f64)>) -> Dist {
        atoms.retain(|a| a.1 > 0.0);
        let mass: f64 = atoms.iter().map(|a| a.1).sum();
        let mut d = Dist {
            atoms,
            lost: (1.0 - mass).max(0.0),
        };
        d.compact();
        d
    }

    /// The atoms given, scaled to sum to 1 (a distribution written with
    /// rounded shares and read back).
    pub fn normalized(mut atoms: Vec<(f64, f64)>) -> Dist {
        let mass: f64 = atoms.iter().map(|a| a.1).sum();
        if mass > 0.0 {
            atoms.iter_mut().for_each(|a| a.1 /= mass);
        }
        let mut d = Dist::from_atoms(atoms);
        d.lost = 0.0;
        d
    }

    pub fn atoms(&self) -> &[(f64, f64)] {
        &self.atoms
    }

    /// The empirical distribution of `samples` (sorted ascending), summed
    /// up in at most `SUMMARY_BOUNDS.len() - 1` atoms: each the mean of the
    /// samples between two of the bounds' ranks, with their share. The mean
    /// is kept exactly; the tail (from 95%) in 0.1% steps, so the 99th
    /// percentile is the samples' within a step.
    pub fn of_samples(sorted: &[f64]) -> Dist {
        let n = sorted.len();
        let mut atoms = Vec::new();
        let mut from = 0;
        for b in summary_bounds().skip(1) {
            let to = ((b * n as f64).round() as usize).min(n);
            if to > from {
                let part = &sorted[from..to];
                atoms.push((
                    part.iter().sum::<f64>() / part.len() as f64,
                    part.len() as f64 / n as f64,
                ));
                from = to;
            }
        }
        Dist::from_atoms(atoms)
    }

    fn compact(&mut self) {
        self.atoms.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut out: Vec<(f64, f64)> = Vec::with_capacity(self.atoms.len());
        for &(t, p) in &self.atoms {
            if p < TINY {
                self.lost += p;
                continue;
            }
            match out.last_mut() {
                Some(l) if t - l.0 <= MERGE_US => {
                    l.0 = (l.0 * l.1 + t * p) / (l.1 + p);
                    l.1 += p;
                }
                _ => out.push((t, p)),
            }
        }
        while out.len() > MAX_ATOMS {
            // fold every other atom into its left neighbour at their mean
            let mut folded = Vec::with_capacity(out.len() / 2 + 1);
            for pair in out.chunks(2) {
                let p: f64 = pair.iter().map(|a| a.1).sum();
                let t = pair.iter().map(|a| a.0 * a.1).sum::<f64>() / p;
                folded.push((t, p));
            }
            out = folded;
        }
        self.atoms = out;
    }

    /// The sum of two independent delays.
    pub fn plus(&self, o: &Dist) -> Dist {
        let mut atoms = Vec::with_capacity(self.atoms.len() * o.atoms.len());
        for &(a, p) in &self.atoms {
            for &(b, q) in &o.atoms {
                atoms.push((a + b, p * q));
            }
        }
        // what either loses, and the products too light to keep
        let mut d = Dist { atoms, lost: 0.0 };
        d.compact();
        d.lost = (1.0 - d.atoms.iter().map(|a| a.1).sum::<f64>()).max(0.0);
        d
    }

    /// `self` shifted by `t`.
    pub fn shift(&self, t: f64) -> Dist {
        Dist {
            atoms: self.atoms.iter().map(|&(a, p)| (a + t, p)).collect(),
            lost: self.lost,
        }
    }

    /// The mixture: each distribution with its weight (weights sum to 1).
    pub fn mix(parts: &[(f64, &Dist)]) -> Dist {
        let mut atoms = Vec::new();
        let mut lost = 0.0;
        for &(w, d) in parts {
            atoms.extend(d.atoms.iter().map(|&(t, p)| (t, w * p)));
            lost += w * d.lost;
        }
        let mut d = Dist { atoms, lost };
        d.compact();
        d
    }

    /// The mean delay of what arrives (infinite when nothing does).
    pub fn mean(&self) -> f64 {
        let m: f64 = self.atoms.iter().map(|a| a.1).sum();
        if m <= 0.0 {
            return f64::INFINITY;
        }
        self.atoms.iter().map(|a| a.0 * a.1).sum::<f64>() / m
    }

    /// The smallest delay by which a fraction `q` of what arrives has.
    pub fn quantile(&self, q: f64) -> f64 {
        let m: f64 = self.atoms.iter().map(|a| a.1).sum();
        let mut acc = 0.0;
        for &(t, p) in &self.atoms {
            acc += p / m;
            // (shares summed in floating point: a cumulative 0.99 may come
            // out a hair below)
            if acc >= q - 1e-9 {
                return t;
            }
        }
        self.atoms.last().map_or(f64::INFINITY, |a| a.0)
    }
}
