//! What the answers to retransmissions teach the estimator (`rtt.rs`'s
//! module doc): a copy answered promptly repaired a real loss
//! (`loss_rate`, and the floor and `hiccup` wear off); a copy the
//! receiver reported needless sets the floor (answered late: the peer
//! was off the CPU) or `hiccup` (answered promptly: a hiccup of its host).

use super::{RttEstimator, FLOOR_PERSIST};
use crate::time::Nanos;

/// What one real loss adds to `loss_rate` (1/64 of the whole: the
/// average's weight).
const LOSS_STEP: u32 = 65536 / 64;

/// The floor learned from copies known to be needless (the receiver
/// reported the duplicate) is at most this many minimum RTOs (20 ms by
/// default): every loss while it lasts waits that long, and a peer away
/// for longer costs the RTO's backed-off copies beyond it, a few (a
/// 50 ms stall: two). It was 50 (250 ms): under a loaded host's stalls
/// of tens of ms a random loss then took a quarter of a second.
const NEEDLESS_CAP_RTO_MIN: u64 = 4;

/// `hiccup` is at most this many prompt answers' times (the probe's own):
/// a peer away longer is the floor's (`on_needless_copy`), and a lost
/// answer taken for a hiccup now and then (it too makes a needless copy)
/// delays a real loss's probe this much at most.
const HICCUP_CAP_PROBES: u64 = 8;

impl RttEstimator {
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
        self.loss_rate = (self.loss_rate + LOSS_STEP).min(65536);
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
        if self.hiccup_persist > 0 {
            self.hiccup_persist -= 1;
            if self.hiccup_persist == 0 {
                self.hiccup = 0;
            }
        }
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
    /// make loss slow to repair for good. Answered promptly (an ACK was
    /// lost, or the peer woke just after the copy went: a hiccup of its
    /// host), the floor learns nothing, but the probe does (`hiccup`):
    /// the first copy's answer took `since_first`, and a peer away that
    /// long now and then, while few losses are real, costs a copy each
    /// time (a loss-free ping-pong beside an operating system's hiccups
    /// resent a copy in every few hundred round trips). The copy does not
    /// count as a real loss either (`on_retransmit_answered` counted it so).
    pub fn on_needless_copy(&mut self, since_last: Nanos, since_first: Nanos) {
        // not a loss after all (`on_retransmit_answered` counted it one)
        self.loss_rate = self.loss_rate.saturating_sub(LOSS_STEP);
        let Some(prompt) = self.prompt_answer() else {
            return;
        };
        self.needless_share = (self.needless_share + 256 / 8).min(256);
        if since_last <= prompt {
            if self.floor > 0 {
                self.floor_persist = (self.floor_persist + 1).min(FLOOR_PERSIST);
            }
            let cap = HICCUP_CAP_PROBES.saturating_mul(prompt);
            self.hiccup = self.hiccup.max(since_first + since_first / 4).min(cap);
            self.hiccup_persist = FLOOR_PERSIST;
            return;
        }
        let cap = NEEDLESS_CAP_RTO_MIN.saturating_mul(self.min).min(self.max);
        self.floor = self.floor.max(since_first + since_first / 4).min(cap);
        self.floor_persist = FLOOR_PERSIST;
        self.prompt_run = 0;
        self.backoff = 0;
    }
}
