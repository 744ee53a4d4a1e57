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
}

const COUNT: usize = 3 * NUM_CHANNELS;

impl Timer {
    fn index(self) -> usize {
        match self {
            Timer::Retransmit(ch) => ch,
            Timer::Pause(ch) => NUM_CHANNELS + ch,
            Timer::Ack(ch) => 2 * NUM_CHANNELS + ch,
        }
    }
}

#[derive(Debug, Default)]
pub(super) struct TimerTable([Option<Instant>; COUNT]);

impl TimerTable {
    pub fn get(&self, t: Timer) -> Option<Instant> {
        self.0[t.index()]
    }

    pub fn set(&mut self, t: Timer, at: Option<Instant>) {
        self.0[t.index()] = at;
    }

    pub fn stop(&mut self, t: Timer) {
        self.0[t.index()] = None;
    }

    /// Makes the timer fire at `at` or before.
    pub fn lower(&mut self, t: Timer, at: Instant) {
        let e = &mut self.0[t.index()];
        if e.is_none_or(|x| at < x) {
            *e = Some(at);
        }
    }

    pub fn is_expired(&self, t: Timer, now: Instant) -> bool {
        self.get(t).is_some_and(|at| at <= now)
    }

    /// The earliest timer set, if any.
    pub fn next(&self) -> Option<Instant> {
        self.0.iter().flatten().min().copied()
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
        t.stop(Timer::Ack(1));
        assert_eq!(t.next(), Some(Instant(50)));
    }
}
