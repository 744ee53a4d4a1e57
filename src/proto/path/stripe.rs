//! Scheduling over several paths (issue 38 item 3): what striping asks of
//! an association's `Paths`. Below the striping threshold a message takes
//! the current path (`Paths::best` when nothing is in flight); above it
//! its fragments go on the active paths by earliest arrival
//! (`Paths::stripe_shares`, as MPTCP's and MN-uDAPL's schedulers): each
//! where it would be delivered first given the bytes queued on the path,
//! its measured delivery rate (`rate.rs`) and least round trip, within its
//! own window and pacing (`Peer::transmit_striped`); a fragment waits for
//! a busy fast path rather than arrive later on a slow one, so a message's
//! last fragments arrive together and each path carries in proportion to
//! its rate. Retransmissions take
//! the best path not in doubt (no timeout since its last progress). An
//! active path that carries no data while the peer has traffic gets a
//! heartbeat every `IDLE_HEARTBEATS` probe intervals; `PATH_MAX_RETRANS`
//! of them unanswered fail it (a silent failure of a backup path).

use super::*;
use crate::proto::send::MAX_LANES;
use crate::time::{MICROS, MILLIS};

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

    /// `bytes` of DATA went on path `i` at `now` (`idle`: with nothing in
    /// flight on it before).
    #[inline]
    pub fn sent_on(&mut self, i: usize, now: Instant, bytes: u64, idle: bool) {
        if let Some(p) = self.list.get_mut(i) {
            p.bytes_sent += bytes;
            if bytes > 0 {
                p.last_data = now;
                if idle {
                    p.rate.restart(now, p.bytes_acked);
                }
            }
        }
    }

    /// Path `i` made progress at `now`: `acked` bytes of DATA it carried
    /// arrived (the newest of them went at `sent`).
    #[inline]
    pub fn progress_on(&mut self, i: usize, now: Instant, acked: u64, sent: Instant) {
        if let Some(p) = self.list.get_mut(i) {
            p.errors = 0;
            p.bytes_acked += acked;
            p.rate.delivered(now, p.bytes_acked, sent);
        }
    }

    /// Path `i`'s least round trip: its data's or its heartbeats',
    /// whichever is less, ns.
    fn least_rtt(&self, i: usize) -> Nanos {
        let p = &self.list[i];
        match (p.cc.min_rtt(), p.hb_srtt) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b).or(p.srtt()).unwrap_or(MILLIS),
        }
    }

    /// Path `i`'s rate as striping reckons it, bytes/s: the measured
    /// delivery rate, at most its window per least round trip; before a
    /// measure, `unmeasured` (the best path's), else its window per
    /// round trip.
    fn stripe_rate(&self, i: usize, unmeasured: u64) -> f64 {
        let p = &self.list[i];
        let cwnd = p.cc.cwnd().max(1) as f64;
        let by_window = cwnd * 1e9 / self.least_rtt(i).max(MICROS) as f64;
        match (p.rate.get(), unmeasured) {
            (0, 0) => cwnd * 1e9 / p.srtt().unwrap_or(MILLIS).max(MICROS) as f64,
            (0, r) => (r as f64).min(by_window),
            (r, _) => (r as f64).min(by_window),
        }
    }

    /// How many packets of new data each path of `order` (`stripe_order`)
    /// takes now (u64::MAX: as many as its room lets), of `pending` bytes waiting (in flight bytes, counted up
    /// to at least `stripe_enough`), with `flights` in flight on each and
    /// `rooms` in its window: earliest arrival, fragment by fragment
    /// (each goes where it would be delivered first, given the bytes
    /// queued ahead of it, the path's rate and least round trip), so that
    /// a message's last fragments on each path arrive together. A path
    /// with no room keeps its share for when it has room (the others do
    /// not take what would arrive later on them); with more waiting than
    /// every window can take by the time the last is full, each takes
    /// its room.
    pub fn stripe_shares(
        &self,
        order: &[usize],
        flights: &[u64; MAX_LANES],
        rooms: &[u64; MAX_LANES],
        pending: u64,
    ) -> [u64; MAX_LANES] {
        let unit = (self.datagram as u64).max(1);
        let mut rate = [1.0f64; MAX_LANES];
        let mut base = [0.0f64; MAX_LANES];
        let mut queued = [0.0f64; MAX_LANES];
        let best = order.iter().map(|&i| self.list[i].rate.get()).max();
        for &i in order {
            rate[i] = self.stripe_rate(i, best.unwrap_or(0));
            base[i] = self.least_rtt(i) as f64 / 1e9;
            queued[i] = flights[i] as f64;
        }
        let arrival = |i: usize, bytes: f64| base[i] + bytes / rate[i];
        // when the last window would be full, and what fills them all by then
        let full = order
            .iter()
            .filter(|&&i| rooms[i] > 0)
            .map(|&i| arrival(i, queued[i] + rooms[i] as f64))
            .fold(0.0f64, f64::max);
        let enough: f64 = order
            .iter()
            .map(|&i| ((full - base[i]) * rate[i] - queued[i]).max(0.0))
            .sum();
        if pending as f64 >= enough {
            return [u64::MAX; MAX_LANES];
        }
        // (whole fragments: a path sends those at the front of the
        // queue, a short last one among them)
        let mut shares = [0u64; MAX_LANES];
        let step = unit as f64;
        for _ in 0..pending.div_ceil(unit) {
            let Some(&i) = order.iter().min_by(|&&a, &&b| {
                arrival(a, queued[a] + step).total_cmp(&arrival(b, queued[b] + step))
            }) else {
                break;
            };
            queued[i] += step;
            shares[i] += 1;
        }
        shares
    }

    /// Bytes of waiting data that surely fill every window of `order`
    /// (the count of `pending` may stop there): eight times what they
    /// hold and have room for.
    pub fn stripe_enough(
        &self,
        order: &[usize],
        flights: &[u64; MAX_LANES],
        rooms: &[u64; MAX_LANES],
    ) -> u64 {
        8 * order.iter().map(|&i| flights[i] + rooms[i]).sum::<u64>() + self.datagram as u64
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
