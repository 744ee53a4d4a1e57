//! Scheduling over several paths (issue 38 item 3): what striping asks of
//! an association's `Paths`. Below the striping threshold a message takes
//! the current path (`Paths::best` when nothing is in flight); above it
//! its fragments go on every active path that has room in its own window
//! and pacing (`Peer::transmit_striped`), the best first, so each path
//! carries what its controller measures it delivers. Retransmissions take
//! the best path not in doubt (no timeout since its last progress). An
//! active path that carries no data while the peer has traffic gets a
//! heartbeat every `IDLE_HEARTBEATS` probe intervals; `PATH_MAX_RETRANS`
//! of them unanswered fail it (a silent failure of a backup path).

use super::*;

/// An idle active path's heartbeat goes every this many probe intervals.
pub const IDLE_HEARTBEATS: u64 = 3;

impl<A: Copy + PartialEq> Paths<A> {
    /// The index of the current path.
    #[inline]
    pub fn current_index(&self) -> usize {
        self.current
    }

    /// How many paths are active.
    pub fn active_count(&self) -> usize {
        self.list
            .iter()
            .filter(|p| p.state == PathState::Active)
            .count()
    }

    /// The active paths in the order striping fills them: not in doubt
    /// first, then the lowest smoothed round trip, the current one on a
    /// tie. The first carries the retransmissions.
    pub fn stripe_order(&self) -> Vec<usize> {
        let mut v: Vec<usize> = (0..self.list.len())
            .filter(|&i| self.list[i].state == PathState::Active)
            .collect();
        v.sort_by_key(|&i| {
            let p = &self.list[i];
            (
                p.errors > 0,
                p.srtt().unwrap_or(Nanos::MAX),
                i != self.current,
                i,
            )
        });
        v
    }

    /// Path `i` (an index from `stripe_order`, or a packet's lane).
    #[inline]
    pub fn at(&self, i: usize) -> Option<&OnePath<A>> {
        self.list.get(i)
    }

    #[inline]
    pub fn at_mut(&mut self, i: usize) -> Option<&mut OnePath<A>> {
        self.list.get_mut(i)
    }

    /// `bytes` of DATA went on path `i` at `now`.
    #[inline]
    pub fn sent_on(&mut self, i: usize, now: Instant, bytes: u64) {
        if let Some(p) = self.list.get_mut(i) {
            p.bytes_sent += bytes;
            if bytes > 0 {
                p.last_data = now;
            }
        }
    }

    /// Path `i` made progress: `acked` bytes of DATA it carried arrived.
    #[inline]
    pub fn progress_on(&mut self, i: usize, acked: u64) {
        if let Some(p) = self.list.get_mut(i) {
            p.errors = 0;
            p.bytes_acked += acked;
        }
    }

    /// A retransmission timeout of a packet path `i` carried: true when
    /// that makes it fail (and another path exists to take over).
    pub fn timed_out_on(&mut self, i: usize, now: Instant, probe: Nanos) -> bool {
        let n = self.list.len();
        let Some(p) = self.list.get_mut(i) else {
            return false;
        };
        p.errors += 1;
        if p.errors >= PATH_MAX_RETRANS && p.state == PathState::Active && n > 1 {
            p.fail(now, probe);
            return true;
        }
        false
    }

    /// When path `i`'s idle heartbeat is due: an active path, not the
    /// current one, while the peer has traffic (`busy`); None otherwise.
    pub(super) fn idle_due(&self, i: usize, busy: bool) -> Option<Instant> {
        let p = &self.list[i];
        if p.state != PathState::Active || i == self.current || self.list.len() < 2 {
            return None;
        }
        // traffic: something to say, or data on the current path since
        // this one's last idle heartbeat was planned
        let gap = IDLE_HEARTBEATS * p.interval;
        let planned = Instant(p.next_probe.0.saturating_sub(gap));
        if !busy && self.list[self.current].last_data < planned.max(p.last_data) {
            return None;
        }
        let quiet = p.last_data.plus(gap);
        Some(quiet.max(p.next_probe))
    }

    /// Path `i`'s idle heartbeat goes at `now`: one still unanswered
    /// counts an error (`PATH_MAX_RETRANS` fail it); the next is due
    /// `IDLE_HEARTBEATS` intervals on. True when it may go (not failed).
    pub(super) fn idle_heartbeat(&mut self, i: usize, now: Instant) -> bool {
        let p = &mut self.list[i];
        if p.hb.is_some() {
            p.errors += 1;
            if p.errors >= PATH_MAX_RETRANS {
                let probe = p.interval;
                p.fail(now, probe);
                return false;
            }
        }
        p.next_probe = now.plus(IDLE_HEARTBEATS * p.interval);
        true
    }
}
