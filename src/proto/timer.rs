//! The timers of one peer: a small table indexed by what each one is for.

use crate::time::Instant;
use crate::wire::NUM_CHANNELS;

/// What a peer's timer is for, per channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Timer {
    /// Resend what is lost (retransmission timeout, reordering timer or
    /// tail-loss probe): at or before the earliest such deadline of the
    /// send channel; none while it is paused.
    Retransmit(usize),
    /// The end of the pause after a NACK: nothing is sent on the send
    /// channel before it.
    Pause(usize),
    /// The owed ACK of the receive channel is due.
    Ack(usize),
    /// Send the INIT or the COOKIE_ECHO again (the association's handshake).
    Handshake,
    /// Liveness: send a HEARTBEAT, declare the peer dead, or free a dead
    /// peer's slot (set only while there is something to say, or while dead).
    Live,
    /// The association has been quiet for the idle timeout: shut it down
    /// (set while established; looked at lazily, once per idle timeout).
    Idle,
    /// Pacing held new data back (`congestion.rs`): both send channels
    /// may send again then.
    Pace,
    /// A path's heartbeat is due: confirming a new path, or probing a
    /// failed one (`path.rs`).
    Paths,
}

const COUNT: usize = 3 * NUM_CHANNELS + 5;

impl Timer {
    #[inline]
    fn index(self) -> usize {
        match self {
            Timer::Retransmit(ch) => ch,
            Timer::Pause(ch) => NUM_CHANNELS + ch,
            Timer::Ack(ch) => 2 * NUM_CHANNELS + ch,
            Timer::Handshake => 3 * NUM_CHANNELS,
            Timer::Live => 3 * NUM_CHANNELS + 1,
            Timer::Idle => 3 * NUM_CHANNELS + 2,
            Timer::Pace => 3 * NUM_CHANNELS + 3,
            Timer::Paths => 3 * NUM_CHANNELS + 4,
        }
    }
}

/// When each timer fires, by `Timer::index`; `UNSET` when it is not set
/// (plain integers: the earliest is a branch-free minimum).
#[derive(Debug)]
pub(super) struct TimerTable {
    at: [u64; COUNT],
    /// The earliest time any timer was set to since `take_wake`: the peer
    /// must be looked at by then (or is looked at for nothing, if that
    /// timer was stopped since), without a look over the whole table.
    wake: u64,
}

const UNSET: u64 = u64::MAX;

impl Default for TimerTable {
    fn default() -> Self {
        TimerTable {
            at: [UNSET; COUNT],
            wake: UNSET,
        }
    }
}

fn opt(t: u64) -> Option<Instant> {
    (t != UNSET).then_some(Instant(t))
}

impl TimerTable {
    #[inline]
    pub fn get(&self, t: Timer) -> Option<Instant> {
        opt(self.at[t.index()])
    }

    #[inline]
    pub fn set(&mut self, t: Timer, at: Option<Instant>) {
        let at = at.map_or(UNSET, |i| i.0);
        self.at[t.index()] = at;
        self.wake = self.wake.min(at);
    }

    #[inline]
    pub fn stop(&mut self, t: Timer) {
        self.at[t.index()] = UNSET;
    }

    /// Makes the timer fire at `at` or before.
    #[inline]
    pub fn lower(&mut self, t: Timer, at: Instant) {
        let e = &mut self.at[t.index()];
        *e = (*e).min(at.0);
        self.wake = self.wake.min(at.0);
    }

    #[inline]
    pub fn is_expired(&self, t: Timer, now: Instant) -> bool {
        let at = self.at[t.index()];
        at != UNSET && at <= now.0
    }

    /// The earliest timer set, if any.
    #[inline]
    pub fn next(&self) -> Option<Instant> {
        opt(self.at.iter().fold(UNSET, |m, &t| m.min(t)))
    }

    /// The earliest time a timer was set to since the last call (it may
    /// have been stopped or moved since; `next` is exact).
    #[inline]
    pub fn take_wake(&mut self) -> Option<Instant> {
        opt(std::mem::replace(&mut self.wake, UNSET))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_keeps_each_timer_apart() {
        let mut t = TimerTable::default();
        assert_eq!(t.next(), None);
        t.set(Timer::Ack(1), Some(Instant(30)));
        t.lower(Timer::Retransmit(0), Instant(50));
        t.lower(Timer::Retransmit(0), Instant(60));
        assert_eq!(t.get(Timer::Retransmit(0)), Some(Instant(50)));
        assert_eq!(t.get(Timer::Retransmit(1)), None);
        assert_eq!(t.next(), Some(Instant(30)));
        assert!(t.is_expired(Timer::Ack(1), Instant(30)));
        assert!(!t.is_expired(Timer::Ack(0), Instant(30)));
        assert_eq!(t.take_wake(), Some(Instant(30)));
        assert_eq!(t.take_wake(), None);
        t.stop(Timer::Ack(1));
        assert_eq!(t.next(), Some(Instant(50)));
        assert_eq!(t.take_wake(), None, "stopping asks for nothing");
    }
}
