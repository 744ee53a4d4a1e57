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
//!
//! The floor learnt from a descheduled peer and a probe that waits for it
//! cost nothing while losses are rare (issue 8: a peer off the CPU after
//! half its sends, no loss: no copies), but while they are frequent each
//! one waited the floor (20 ms on a loaded host). The two are told apart
//! by what the receiver reports: a retransmission it answers without
//! reporting a duplicate repaired a real loss (`loss_rate`); one it
//! reports twice (D-SACK) was needless. While real losses are frequent
//! (`LOSSY`), the first probe waits neither for the floor nor for round
//! trips stretched by a peer off the CPU (`calm`: the prompt samples'
//! estimate): a peer away costs that probe's copy, a loss a few round
//! trips (on `sim::World`, both nodes off the CPU 2-16 ms of every 3-20,
//! 5% loss: 1.32-1.42x the loss-free mean, 2.0-3.4x before; 1%: 1.14-1.27x).

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
    /// Learnt from copies the receiver reported needless and answered
    /// promptly after the copy (`on_needless_copy`): the peer was away a
    /// little longer than the probe's time (a hiccup of its host: a task
    /// woken on its core, a virtual CPU's steal) or its answer was lost.
    /// The first probe waits for it while most copies were needless and
    /// real losses rare (as for `floor`); prompt round trips do not drop
    /// it (hiccups come between them), `FLOOR_PERSIST` real losses do.
    /// At most `HICCUP_CAP_PROBES` probe times.
    hiccup: Nanos,
    /// Prompt answers to retransmissions (real losses) left before
    /// `hiccup` is dropped.
    hiccup_persist: u32,
    /// The shortest round trip sampled: what a prompt answer takes.
    min_rtt: Option<Nanos>,
    /// The longest prompt round trip (`is_prompt`): 4 shortest round
    /// trips and twice the peer's ACK delay (and `GRANULARITY`), kept
    /// with `min_rtt` and `ack_delay` (`set_prompt_max`): every sample
    /// asks, and it changes seldom. `Nanos::MAX` before any sample.
    prompt_max: Nanos,
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
    /// Real losses lately repaired per round-trip sample (of 65536, a
    /// moving average over about 64 samples): a retransmission answered
    /// and not reported needless. Frequent (`LOSSY` or more), the probe
    /// never waits for the floor, whatever `needless_share` says: a peer
    /// often away costs a needless probe copy, but each of the many losses
    /// is repaired in round trips, not after a floor of milliseconds.
    loss_rate: u32,
    /// The smoothed round trip and its variation of prompt samples only
    /// (`is_prompt`): what a running peer answers in. While loss is
    /// frequent (`loss_rate`), the probe is timed by it too: a peer often
    /// off the CPU (a loaded host) stretches many round trips, they are
    /// fed to the estimate as the path's own (`STRETCH_IS_PATH`), and a
    /// probe timed by that estimate waited tens of ms for each loss.
    calm: Option<(Nanos, Nanos)>,
    /// The share of samples lately prompt (of 256, a moving average over
    /// about 16): `calm` times the probe only while at least
    /// `CALM_USABLE` (a path whose every round trip grew, a longer one,
    /// leaves `calm` stale: it is then not used).
    prompt_share: u32,
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

/// `loss_rate` at or above which the probe never waits for the floor:
/// 1/128 (about one real loss in 128 round trips; a loss lifts it to
/// 1/64, and it falls back below in about 44 samples without another).
const LOSSY: u32 = 65536 / 128;

/// `prompt_share` at or above which `calm` may time the probe.
const CALM_USABLE: u32 = 256 / 8;

/// Prompt answers to retransmissions (real losses), or prompt round trips
/// in a row, after which a floor learned from late answers is dropped.
const FLOOR_PERSIST: u32 = 16;

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
            hiccup: 0,
            hiccup_persist: 0,
            min_rtt: None,
            prompt_max: Nanos::MAX,
            prompt_run: 0,
            needless_share: 0,
            loss_rate: 0,
            calm: None,
            prompt_share: 0,
            held: None,
            stretch_share: 0,
        }
    }

    /// A new estimator with this one's settings (timeouts, the peer's
    /// delayed-ACK time), nothing measured: a new or recovered path's.
    pub fn fresh(&self) -> RttEstimator {
        RttEstimator::new(self.initial, self.min, self.max).with_ack_delay(self.ack_delay)
    }

    /// Sets the peer's delayed-ACK time (part of the probe timeout).
    pub fn with_ack_delay(mut self, ack_delay: Nanos) -> RttEstimator {
        self.ack_delay = ack_delay;
        self.set_prompt_max();
        self
    }

    /// `prompt_max` after `min_rtt` or `ack_delay` changed.
    #[inline]
    fn set_prompt_max(&mut self) {
        self.prompt_max = match self.min_rtt {
            Some(m) => 4 * m + 2 * self.ack_delay + GRANULARITY,
            None => Nanos::MAX,
        };
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
            if self.is_prompt(r) {
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
        if self.min_rtt.is_none_or(|m| r < m) {
            self.min_rtt = Some(r);
            self.set_prompt_max();
        }
    }

    /// Feeds the round trip of a packet sent at `sent` (never
    /// retransmitted: Karn's rule) and acknowledged `now`, holding a lone
    /// stretched one (the module's doc): a sample far above the path's
    /// prompt answer waits for the next round trip's, of a packet sent
    /// after `now`. Long too: both are fed (the path's delay grew). Prompt:
    /// the stretch is dropped (a process was off the CPU), and the later
    /// one is fed.
    pub fn sample_from(&mut self, now: Instant, sent: Instant) {
        self.loss_rate -= self.loss_rate / 64;
        let r = now.since(sent);
        if self.is_prompt(r) {
            self.prompt_share += (256 - self.prompt_share) / 16;
            self.calm = Some(self.calm.map_or((r, r / 2), |c| ewma(c, r)));
        } else {
            self.prompt_share -= self.prompt_share / 16;
        }
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
    /// (`prompt_max` is `Nanos::MAX` while there is no shortest round
    /// trip: then none is stretched.)
    #[inline]
    fn stretched(&self, r: Nanos) -> bool {
        match self.srtt {
            Some(s) => r > (2 * s).max(self.prompt_max),
            None => false,
        }
    }

    /// Whether `r` is what a running peer answers in: within a few of the
    /// path's shortest round trips and the receiver's ACK delay, far below
    /// any floor learnt (the first sample is).
    /// (Below the shortest round trip, `r` is within 4 of itself: no
    /// need to take the least of the two; with none yet, `prompt_max` is
    /// `Nanos::MAX`.)
    #[inline]
    fn is_prompt(&self, r: Nanos) -> bool {
        r <= self.prompt_max
    }

    fn drop_floor(&mut self) {
        self.floor = 0;
        self.floor_persist = 0;
        self.prompt_run = 0;
    }

    /// The smoothed round trip (RFC 6298 SRTT); None before any sample.
    #[cfg(test)]
    pub fn srtt(&self) -> Option<Nanos> {
        self.srtt
    }

    /// The round-trip variation (RFC 6298 RTTVAR); 0 before any sample.
    #[cfg(test)]
    pub fn rttvar(&self) -> Nanos {
        self.rttvar
    }

    /// Timeout without backoff.
    pub fn base_rto(&self) -> Nanos {
        self.base_rto_of(self.timed())
    }

    /// `base_rto` of the estimate the timers use (`timed`).
    #[inline]
    fn base_rto_of(&self, timed: Option<(Nanos, Nanos)>) -> Nanos {
        let rto = match timed {
            None => self.initial,
            Some((s, v)) => s + (4 * v).max(GRANULARITY),
        };
        // (`max` is at least `min`, `new`: a clamp without its check)
        rto.max(self.floor).max(self.min).min(self.max)
    }

    /// The timers of a transmission, of one look at the estimate (every
    /// transmit asks): the retransmission timeout (`rto`), and the first
    /// and second probes' (`probe_timeout_within`, `second_probe_within`).
    #[inline]
    pub fn transmit_timers(&self) -> (Nanos, Option<Nanos>, Option<Nanos>) {
        let timed = self.timed();
        let rto = self.backed_off(self.base_rto_of(timed));
        let Some((s, v)) = timed else {
            return (rto, None, None);
        };
        let pto = self.answer_within(s, v);
        (
            rto,
            Some(self.first_probe_of(pto, rto)),
            Some(self.second_probe_of(pto, rto)),
        )
    }

    /// How long a peer that is being scheduled takes at most to answer a
    /// packet (about two round trips plus twice its ACK delay: a delayed
    /// ACK goes out when the receiver next polls). None before any round
    /// trip is known.
    fn prompt_answer(&self) -> Option<Nanos> {
        let (s, v) = self.timed()?;
        Some(self.answer_within(s, v))
    }

    /// A prompt answer's time on an estimate (SRTT `s`, RTTVAR `v`).
    #[inline]
    fn answer_within(&self, s: Nanos, v: Nanos) -> Nanos {
        (2 * s).max(s + 4 * v) + 2 * self.ack_delay
    }

    /// RACK's reordering window (after RFC 8985): how long after a packet
    /// sent later was acknowledged an earlier one is still not taken as
    /// lost: half the smoothed round trip or four variations; while loss
    /// is frequent, of the prompt samples alone if less (`calm`: round
    /// trips stretched by a peer off the CPU are no reordering, and a
    /// window of their variation held each loss tens of ms). None before
    /// any round trip is known.
    pub fn reorder_window(&self) -> Option<Nanos> {
        let w = |(s, v): (Nanos, Nanos)| (s / 2).max(4 * v);
        let wnd = w((self.srtt?, self.rttvar));
        Some(match self.calm {
            Some(c) if self.calm_times() => wnd.min(w(c)),
            _ => wnd,
        })
    }

    /// Whether `calm` times the probe and the reordering window: loss is
    /// frequent and prompt samples are not rare.
    #[inline]
    fn calm_times(&self) -> bool {
        self.loss_rate >= LOSSY && self.prompt_share >= CALM_USABLE
    }

    /// The first probe's time before the floor: a prompt answer's; while
    /// loss is frequent, by the prompt samples alone if shorter (`calm`).
    #[inline]
    fn first_probe(&self, pto: Nanos) -> Nanos {
        match self.calm {
            Some((s, v)) if self.calm_times() => pto.min(self.answer_within(s, v)),
            _ => pto,
        }
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
    #[cfg(test)] // the sender asks `transmit_timers`
    pub fn probe_timeout_within(&self, rto: Nanos) -> Option<Nanos> {
        Some(self.first_probe_of(self.prompt_answer()?, rto))
    }

    /// `probe_timeout_within` of a prompt answer's time `pto`.
    #[inline]
    fn first_probe_of(&self, pto: Nanos, rto: Nanos) -> Nanos {
        let pto = self.first_probe(pto);
        let pto = if self.needless_share >= PROBE_WAITS_FOR_FLOOR && self.loss_rate < LOSSY {
            pto.max(self.floor).max(self.hiccup)
        } else {
            pto
        };
        pto.min(rto)
    }

    /// The second probe of a lost tail packet's first copy: twice the
    /// probe timeout, or the floor if longer, never past `rto`.
    #[cfg(test)] // the sender asks `transmit_timers`
    pub fn second_probe_within(&self, rto: Nanos) -> Option<Nanos> {
        Some(self.second_probe_of(self.prompt_answer()?, rto))
    }

    /// `second_probe_within` of a prompt answer's time `pto`.
    #[inline]
    fn second_probe_of(&self, pto: Nanos, rto: Nanos) -> Nanos {
        (2 * pto).max(self.floor).min(rto)
    }

    /// The floor learned from late answers (0: none).
    #[cfg(test)]
    pub fn floor(&self) -> Nanos {
        self.floor
    }

    /// Timeout with the current backoff applied.
    pub fn rto(&self) -> Nanos {
        self.backed_off(self.base_rto())
    }

    /// `base` with the current backoff applied.
    #[inline]
    fn backed_off(&self, base: Nanos) -> Nanos {
        if self.backoff == 0 {
            // (the usual case: no multiplication; `base` is at most `max`)
            return base.min(self.max);
        }
        let shift = self.backoff.min(20);
        base.saturating_mul(1 << shift).min(self.max)
    }

    pub fn on_timeout(&mut self) {
        self.backoff = self.backoff.saturating_add(1);
    }

    pub fn on_progress(&mut self) {
        self.backoff = 0;
    }
}

#[path = "rtt_learn.rs"]
mod learn;

#[cfg(test)]
#[path = "rtt_tests.rs"]
mod tests;
