//! Round-trip estimation and retransmission timeout (RFC 6298), with
//! exponential backoff; the tail-loss probe timeout; and a learned floor
//! under both for a peer that answers late (a descheduled receiver).
//!
//! A lone stretched round trip is held, not averaged in (`sample_from`):
//! a sample far above the path's prompt answer (and twice the smoothed
//! round trip) is fed to the estimate only when the next round trip (of
//! a packet sent after it was taken) is long too: a queue at a bottleneck
//! (congestion) lengthens every round trip from then on (meanwhile the
//! timers allow for it: `timed`, so that a queue building up does not
//! make them fire early). When the next
//! is prompt, the stretch was a process off the CPU for a time slice (the
//! peer, whose ACK waited in its inbox, or this sender, whose ACK waited
//! in its own), and it is dropped: averaged in, one 4 ms slice beside a
//! busy neighbour made RTTVAR about 1 ms and the probe and RTO of every
//! loss in the next ten or so round trips wait milliseconds (on
//! `sim::World`, 5% loss with the server off 4 ms of every 8: 1.8-2.1x the
//! loss-free mean, 1.4x with the stretch held; quiet: 1.37x). Stretches
//! that come often (more than about one sample in six, `STRETCH_IS_PATH`)
//! are the path's own and are fed.

use crate::time::{Instant, Nanos};

#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt: Option<Nanos>,
    rttvar: Nanos,
    /// Number of consecutive timeouts; doubles the timeout each time.
    backoff: u32,
    initial: Nanos,
    min: Nanos,
    max: Nanos,
    /// The peer's delayed-ACK time: part of every probe timeout.
    ack_delay: Nanos,
    /// Learned from copies the receiver reported needless and answered
    /// late (`on_needless_copy`: it was off the CPU): how long it has
    /// lately taken to answer. Neither the probe nor the retransmission
    /// timeout is shorter while it lasts.
    floor: Nanos,
    /// Prompt answers to retransmissions (real losses) left before the
    /// floor is dropped (after RFC 8985's reo_wnd_persist).
    floor_persist: u32,
    /// The shortest round trip sampled: what a prompt answer takes.
    min_rtt: Option<Nanos>,
    /// Round trips sampled promptly in a row since the floor was learnt:
    /// `FLOOR_PERSIST` of them, and the peer is running again: the floor is
    /// dropped (a peer descheduled a while ago must not make every later
    /// loss wait for it).
    prompt_run: u32,
    /// The share of retransmissions lately reported needless and answered
    /// late (of 256, a moving average over about 8): what the receiver
    /// says its timeouts were. Mostly needless (a peer often off the CPU,
    /// seldom a loss): the tail-loss probe waits for the floor too, a
    /// stall costs no copy. Mostly real losses: the probe keeps a prompt
    /// answer's time, a loss is repaired in round trips however often the
    /// peer is away, and a stall costs the probe's copy.
    needless_share: u32,
    /// A stretched round trip held (`sample_from`): fed when the next
    /// round trip is long too, dropped when it is prompt.
    held: Option<Held>,
    /// The share of samples lately held and dropped (of 256, a moving
    /// average over about 16 samples): at `STRETCH_IS_PATH` or more,
    /// stretched samples are fed at once (the path's round trips vary).
    stretch_share: u32,
}

/// A stretched round trip held: the estimate (SRTT, RTTVAR) with it and
/// the samples acknowledged in the same burst fed, and when it was taken.
#[derive(Clone, Copy, Debug)]
struct Held {
    est: (Nanos, Nanos),
    at: Instant,
}

/// RFC 6298's averages after sample `r`.
fn ewma((srtt, rttvar): (Nanos, Nanos), r: Nanos) -> (Nanos, Nanos) {
    ((7 * srtt + r) / 8, (3 * rttvar + srtt.abs_diff(r)) / 4)
}

/// `stretch_share` at or above which stretched samples are fed at once.
const STRETCH_IS_PATH: u32 = 64;

/// `needless_share` at or above which the probe waits for the floor.
const PROBE_WAITS_FOR_FLOOR: u32 = 128;

/// Prompt answers to retransmissions (real losses), or prompt round trips
/// in a row, after which a floor learned from late answers is dropped.
const FLOOR_PERSIST: u32 = 16;

/// The floor learned from copies known to be needless (the receiver
/// reported the duplicate) is at most this many minimum RTOs (20 ms by
/// default): every loss while it lasts waits that long, and a peer away
/// for longer costs the RTO's backed-off copies beyond it, a few (a
/// 50 ms stall: two). It was 50 (250 ms): under a loaded host's stalls
/// of tens of ms a random loss then took a quarter of a second.
const NEEDLESS_CAP_RTO_MIN: u64 = 4;

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
            ack_delay: 0,
            floor: 0,
            floor_persist: 0,
            min_rtt: None,
            prompt_run: 0,
            needless_share: 0,
            held: None,
            stretch_share: 0,
        }
    }

    /// Sets the peer's delayed-ACK time (part of the probe timeout).
    pub fn with_ack_delay(mut self, ack_delay: Nanos) -> RttEstimator {
        self.ack_delay = ack_delay;
        self
    }

    /// Feeds one sample (from a packet never retransmitted: Karn's rule)
    /// at once (the handshake's; an ACK's go through `sample_from`, which
    /// holds a lone stretched one).
    /// While a floor is learnt (the peer has been off the CPU),
    /// `FLOOR_PERSIST` prompt samples in a row drop it. Every sample feeds
    /// the estimate, long ones too: a queue building at a bottleneck
    /// (congestion) lengthens the round trip for real, and an estimate
    /// that ignored it would time out spuriously (seen in the incast of
    /// `tests/proto_sim_congestion.rs`).
    pub fn sample(&mut self, r: Nanos) {
        if self.floor > 0 {
            let min = self.min_rtt.unwrap_or(r);
            // prompt: within a few of the path's shortest round trips and
            // the receiver's ACK delay, far below any floor learnt
            if r <= 4 * min + 2 * self.ack_delay + GRANULARITY {
                self.prompt_run += 1;
                if self.prompt_run >= FLOOR_PERSIST {
                    self.drop_floor();
                }
            } else {
                self.prompt_run = 0;
            }
        }
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
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
    }

    /// Feeds the round trip of a packet sent at `sent` (never
    /// retransmitted: Karn's rule) and acknowledged `now`, holding a lone
    /// stretched one (the module's doc): a sample far above the path's
    /// prompt answer waits for the next round trip's, of a packet sent
    /// after `now`. Long too: both are fed (the path's delay grew). Prompt:
    /// the stretch is dropped (a process was off the CPU), and the later
    /// one is fed.
    pub fn sample_from(&mut self, now: Instant, sent: Instant) {
        let r = now.since(sent);
        let stretched = self.stretched(r);
        match self.held {
            // acknowledged in the same burst as the held one
            Some(ref mut h) if sent < h.at => {
                h.est = ewma(h.est, r);
                if !stretched {
                    self.sample(r);
                }
            }
            // the next round trip decides
            Some(h) => {
                self.held = None;
                if stretched {
                    (self.srtt, self.rttvar) = (Some(h.est.0), h.est.1);
                } else {
                    self.stretch_share += (256 - self.stretch_share) / 16;
                }
                self.sample(r);
            }
            None if stretched && self.stretch_share < STRETCH_IS_PATH => {
                let est = ewma((self.srtt.unwrap_or(r), self.rttvar), r);
                self.held = Some(Held { est, at: now });
                // a late round trip: the peer may be off the CPU again
                self.prompt_run = 0;
            }
            None => {
                self.stretch_share -= self.stretch_share / 16;
                self.sample(r);
            }
        }
    }

    /// The smoothed round trip and its variation the timers use: while a
    /// stretched sample is held, the larger of the estimate's and what it
    /// would be with the stretch in (a queue building up must not make
    /// the timers fire early meanwhile; a stretch dropped costs only the
    /// one round trip that decided it).
    #[inline]
    fn timed(&self) -> Option<(Nanos, Nanos)> {
        let s = self.srtt?;
        Some(match self.held {
            None => (s, self.rttvar),
            Some(h) => (s.max(h.est.0), self.rttvar.max(h.est.1)),
        })
    }

    /// Whether `r` is far above what this path answers in: more than twice
    /// the smoothed round trip and more than a prompt answer (4 shortest
    /// round trips and twice the peer's ACK delay).
    fn stretched(&self, r: Nanos) -> bool {
        match (self.srtt, self.min_rtt) {
            (Some(s), Some(m)) => r > (2 * s).max(4 * m + 2 * self.ack_delay + GRANULARITY),
            _ => false,
        }
    }

    fn drop_floor(&mut self) {
        self.floor = 0;
        self.floor_persist = 0;
        self.prompt_run = 0;
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
        let rto = match self.timed() {
            None => self.initial,
            Some((s, v)) => s + (4 * v).max(GRANULARITY),
        };
        rto.max(self.floor).clamp(self.min, self.max)
    }

    /// How long a peer that is being scheduled takes at most to answer a
    /// packet (about two round trips plus twice its ACK delay: a delayed
    /// ACK goes out when the receiver next polls). None before any round
    /// trip is known.
    fn prompt_answer(&self) -> Option<Nanos> {
        let (s, v) = self.timed()?;
        Some((2 * s).max(s + 4 * v) + 2 * self.ack_delay)
    }

    /// The tail-loss probe timeout (after RFC 8985 TLP): a prompt answer's
    /// time, never past the retransmission timeout. The floor learnt from
    /// a descheduled peer lengthens it only while most retransmissions
    /// were needless (`needless_share`): where random loss is frequent too,
    /// a loss is repaired in round trips whatever the peer did before, and
    /// a peer off the CPU costs this one needless copy (the second probe
    /// and the RTO still wait for the floor). None before any round trip
    /// is known.
    #[cfg(test)] // the sender computes the RTO once: `probe_timeout_within`
    pub fn probe_timeout(&self) -> Option<Nanos> {
        self.probe_timeout_within(self.rto())
    }

    /// `probe_timeout` given the retransmission timeout `rto` (`rto()`, which
    /// the caller has computed already).
    #[inline]
    pub fn probe_timeout_within(&self, rto: Nanos) -> Option<Nanos> {
        let pto = self.prompt_answer()?;
        let pto = if self.needless_share >= PROBE_WAITS_FOR_FLOOR {
            pto.max(self.floor)
        } else {
            pto
        };
        Some(pto.min(rto))
    }

    /// The second probe of a lost tail packet's first copy: twice the
    /// probe timeout, or the floor if longer, never past `rto`.
    #[inline]
    pub fn second_probe_within(&self, rto: Nanos) -> Option<Nanos> {
        let pto = self.prompt_answer()?;
        Some((2 * pto).max(self.floor).min(rto))
    }

    /// An ACK covered a retransmitted packet `since_last` after its last
    /// copy was sent and `since_first` after its first. Karn's rule keeps
    /// this from the round-trip estimate. Answered promptly, the copy
    /// repaired a real loss: one of the 16 that end a floor learnt from a
    /// descheduled peer (as RFC 8985 keeps a widened reordering window for
    /// 16 recoveries). Answered late, nothing is learnt from the timing
    /// alone: a late answer is as much a lost copy or a lost answer (random
    /// loss, which must be repaired in round trips) as a peer off the CPU;
    /// only the receiver can tell, by reporting the copy it got twice
    /// (`on_needless_copy`).
    pub fn on_retransmit_answered(&mut self, since_last: Nanos, _since_first: Nanos) {
        // (a real loss until the receiver reports it needless)
        self.needless_share -= self.needless_share / 8;
        let Some(prompt) = self.prompt_answer() else {
            return;
        };
        if since_last <= prompt {
            self.real_loss_repaired();
        }
    }

    /// A retransmission repaired a real loss: the floor is dropped after
    /// `FLOOR_PERSIST` of them.
    fn real_loss_repaired(&mut self) {
        if self.floor_persist > 0 {
            self.floor_persist -= 1;
            if self.floor_persist == 0 {
                self.drop_floor();
            }
        }
    }

    /// A copy resent was reported needless (the receiver got the packet
    /// twice), answered `since_last` after it and `since_first` after the
    /// first copy. Answered late even so, the peer was not running (a
    /// descheduled process, not a lost ACK): the timers wait at least as
    /// long as the answer took (and a quarter more), up to
    /// `NEEDLESS_CAP_RTO_MIN` minimum RTOs. It lasts until 16 prompt
    /// answers to retransmissions (real losses), or 16 prompt round trips
    /// in a row (the peer runs again): a peer descheduled once does not
    /// make loss slow to repair for good. Answered promptly (an ACK was lost, or the peer woke
    /// just after the copy went), nothing is learnt, but the copy does not
    /// count as a real loss either (`on_retransmit_answered` counted it so).
    pub fn on_needless_copy(&mut self, since_last: Nanos, since_first: Nanos) {
        if self.prompt_answer().is_none_or(|p| since_last <= p) {
            if self.floor > 0 {
                self.floor_persist = (self.floor_persist + 1).min(FLOOR_PERSIST);
            }
            return;
        }
        self.needless_share = (self.needless_share + 256 / 8).min(256);
        let cap = NEEDLESS_CAP_RTO_MIN.saturating_mul(self.min).min(self.max);
        self.floor = self.floor.max(since_first + since_first / 4).min(cap);
        self.floor_persist = FLOOR_PERSIST;
        self.prompt_run = 0;
        self.backoff = 0;
    }

    /// The floor learned from late answers (0: none).
    #[cfg(test)]
    pub fn floor(&self) -> Nanos {
        self.floor
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
}
