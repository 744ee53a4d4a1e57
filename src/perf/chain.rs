//! The retransmission stages as Markov chains: a packet's copies go at the
//! instants its sender's timers give (`Schedule`); each copy is lost with
//! probability `q`, independently; the chain's state is the copy in flight,
//! and it ends at the first copy that arrives (copy `k` with probability
//! `q^k (1 - q)`), or gives up past the retry limit. Solved exactly: the
//! stage's delay is the discrete distribution over the copies' instants.

use super::dist::Dist;
use super::Policy;

/// The instants (us, after the first copy) at which a packet's copies
/// leave, copy 0 first, as far as the retry limit allows.
#[derive(Clone, Debug, PartialEq)]
pub struct Schedule(pub Vec<f64>);

impl Schedule {
    /// A constant timeout `t` between copies, `n` copies: the plain ARQ
    /// stage whose mean is the geometric series `t q / (1 - q)`.
    pub fn constant(t: f64, n: usize) -> Schedule {
        Schedule((0..n).map(|k| k as f64 * t).collect())
    }

    /// The copies of the newest packet of a flight (`send/mod.rs`
    /// `transmit`, `on_timeout`): the tail-loss probe `pto` after the first
    /// copy, resent without backoff; in a flight of at most two packets
    /// (`tail`) a first copy lost at random gets a second probe's time,
    /// `min(2 pto, rto)`, else a whole `rto`; then retransmission timeouts,
    /// each twice the last (`RttEstimator::rto`, `on_timeout`) up to
    /// `rto_max`, `retry_limit` of them.
    pub fn newest(pto: f64, rto: f64, tail: bool, p: &Policy) -> Schedule {
        let mut v = vec![0.0, pto];
        Schedule::after_first_repair(&mut v, pto, rto, tail, p);
        Schedule(v)
    }

    /// The copies of a packet found lost by a later packet's SACK (RACK,
    /// `send/ack.rs`): the resend at once (instant 0 here), then as a first
    /// copy resent (`newest` after its probe).
    pub fn after_rack(pto: f64, rto: f64, tail: bool, p: &Policy) -> Schedule {
        let mut v = vec![0.0];
        Schedule::after_first_repair(&mut v, pto, rto, tail, p);
        Schedule(v)
    }

    fn after_first_repair(v: &mut Vec<f64>, pto: f64, rto: f64, tail: bool, p: &Policy) {
        let mut t = *v.last().unwrap_or(&0.0);
        let mut rto = rto.min(p.rto_max_us);
        if tail && 2.0 * pto < rto {
            // a reordering timer: no backoff
            t += 2.0 * pto;
            v.push(t);
        }
        for _ in 0..=p.retry_limit {
            t += rto;
            v.push(t);
            rto = (2.0 * rto).min(p.rto_max_us);
        }
    }

    /// The stage's delay when every copy is lost with probability `q`:
    /// copy `k` first to arrive with probability `q^k (1 - q)`; past the
    /// last copy, lost (the message given up).
    pub fn delay(&self, q: f64) -> Dist {
        let mut atoms = Vec::with_capacity(self.0.len());
        let mut reach = 1.0; // q^k: every copy before k lost
        for &t in &self.0 {
            atoms.push((t, reach * (1.0 - q)));
            reach *= q;
            if reach < 1e-16 {
                break;
            }
        }
        Dist::from_atoms(atoms)
    }
}

/// A message whose last packet (`b`) goes `g` us after another (`a`) of
/// the same channel, both needed in order (a 64 KiB message's two
/// datagrams; a transaction's `TxnAck` then its reply): `b` repairs as the
/// newest packet; a lost `a` is found by `b`'s SACK (the receiver ACKs a gap
/// at once: `recv.rs`), one return `rho` after `b` arrives, and resent a
/// reordering window `reo_wnd` after it was sent at the earliest (RACK's
/// `lost_at = last_sent + rtt_now + reo_wnd`), then repaired as a first copy
/// resent. The message is complete when both have arrived: `a`'s arrival
/// when it was lost (it follows `b`'s), else `b`'s.
pub struct TwoPackets {
    pub q_a: f64,
    pub q_b: f64,
    pub g: f64,
    pub rho: f64,
    pub reo_wnd: f64,
    /// `b`'s probe timeout, and `a`'s.
    pub pto_b: f64,
    pub pto_a: f64,
    pub rto: f64,
    /// At most two packets in flight (`transmit`'s `tail`).
    pub tail: bool,
}

impl TwoPackets {
    pub fn delay(&self, p: &Policy) -> Dist {
        let b = Schedule::newest(self.pto_b, self.rto, self.tail, p).delay(self.q_b);
        if self.q_a <= 0.0 {
            return b;
        }
        let again = Schedule::after_rack(self.pto_a, self.rto, self.tail, p).delay(self.q_a);
        let found = self.rho + self.g.max(self.reo_wnd);
        // after the time `b` would have completed the message
        let lost_a = b.plus(&again).shift(found - self.g);
        Dist::mix(&[(1.0 - self.q_a, &b), (self.q_a, &lost_a)])
    }
}
