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
//! its rate. Only usable paths (active, not suspect) are striped.
//! Retransmissions take the best path not in doubt (no timeout since its
//! last progress). An active path that carries no data while the peer has
//! traffic gets a heartbeat every `IDLE_HEARTBEATS` probe intervals;
//! `PATH_MAX_RETRANS` of them unanswered make it suspect (`suspect.rs`:
//! it fails on evidence, told, as any suspect path).

use super::*;
use crate::proto::send::MAX_LANES;
use crate::time::{MICROS, MILLIS};

/// An idle active path's heartbeat goes every this many probe intervals.
pub const IDLE_HEARTBEATS: u64 = 3;

/// `Paths::stripe_order`'s answer: path indexes, in order (a slice).
pub struct StripeOrder {
    v: [usize; MAX_LANES],
    n: usize,
}

impl std::ops::Deref for StripeOrder {
    type Target = [usize];
    #[inline]
    fn deref(&self) -> &[usize] {
        &self.v[..self.n]
    }
}

impl<A: Copy + PartialEq> Paths<A> {
    /// The index of the current path.
    #[inline]
    pub fn current_index(&self) -> usize {
        self.current
    }

    /// How many paths are usable (active, not suspect).
    pub fn active_count(&self) -> usize {
        (0..self.list.len()).filter(|&i| self.usable(i)).count()
    }

    /// The usable paths (active, not suspect) striping fills, in that order: not in doubt
    /// first, then the lowest smoothed round trip, the current one on a
    /// tie; of those, only paths that share neither our rail nor the
    /// peer's address with one before them. The kernel routes a datagram
    /// by its destination: our rail 0's socket sends to the peer's rail-1
    /// address over the rail-1 link, so the four paths of two rails are
    /// two links, and striping over all four put two shares on each link
    /// with two rates measured for it. Paths disjoint at both ends are
    /// distinct links whether routing follows the destination or the
    /// source. The first carries the retransmissions.
    pub fn stripe_order(&self) -> StripeOrder {
        // (fixed arrays: asked at every striped send; paths are at most
        // MAX_LANES)
        let mut v = [0usize; MAX_LANES];
        let mut n = 0;
        for i in (0..self.list.len().min(MAX_LANES)).filter(|&i| self.usable(i)) {
            v[n] = i;
            n += 1;
        }
        v[..n].sort_unstable_by_key(|&i| {
            let p = &self.list[i];
            (
                p.errors > 0,
                p.srtt().unwrap_or(Nanos::MAX),
                i != self.current,
                i,
            )
        });
        let mut k = 0;
        for j in 0..n {
            let q = self.list[v[j]].path;
            let apart = v[..k].iter().all(|&i| {
                let p = self.list[i].path;
                p.rail != q.rail && p.remote != q.remote
            });
            if apart {
                v[k] = v[j];
                k += 1;
            }
        }
        StripeOrder { v, n: k }
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
                    p.rate.restart();
                }
            }
        }
    }

    /// Path `i` made progress at `now`: `acked` bytes of DATA it carried
    /// arrived (`flight` bytes of it left in flight).
    #[inline]
    pub fn progress_on(&mut self, i: usize, now: Instant, acked: u64, flight: u64) {
        let busy = flight >= self.datagram as u64;
        if let Some(p) = self.list.get_mut(i) {
            p.errors = 0;
            p.rtt.on_progress();
            p.bytes_acked += acked;
            let stall = p.srtt().unwrap_or(Nanos::MAX);
            p.rate.delivered(now, p.bytes_acked, busy, stall);
            // (the peer answered: path i is not suspect, the others'
            // silence counts from here)
            self.answered(now, i);
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

    /// Path `i`'s least round trip known (its data's or its heartbeats',
    /// whichever is less; 0: none, or one path), ns.
    pub(super) fn least_rtt_known(&self, i: usize) -> Nanos {
        match self.list.get(i).filter(|_| !self.single()) {
            Some(p) => match (p.cc.min_rtt(), p.hb_srtt) {
                (Some(a), Some(b)) => a.min(b),
                (a, b) => a.or(b).unwrap_or(0),
            },
            None => 0,
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
    /// takes now (u64::MAX: as many as its room lets), of `waiting`
    /// fragments, with `flights` bytes in flight on each and `rooms` in
    /// its window: earliest arrival (each fragment goes where it would be
    /// delivered first, given the bytes queued ahead of it, the path's
    /// rate and least round trip), so that a message's last fragments on
    /// each path arrive together. A path with no room keeps its share for
    /// when it has room (the others do not take what would arrive later
    /// on them); with more waiting than every window can take by the time
    /// the last is full, each takes its room.
    ///
    /// In closed form (water filling): path i's k-th fragment arrives at
    /// `s_i + k * unit / rate_i`, `s_i` when its queue would be through;
    /// the level T at which the paths' arrivals number `waiting` is one
    /// division once the paths that start before it are known (sorted by
    /// `s_i`); each takes its whole arrivals before T, the few left over
    /// (fewer than the paths) go one by one to the earliest next arrival.
    pub fn stripe_shares(
        &self,
        order: &[usize],
        flights: &[u64; MAX_LANES],
        rooms: &[u64; MAX_LANES],
        waiting: u64,
    ) -> [u64; MAX_LANES] {
        // a path not measured yet takes its window once, then nothing
        // more until its ACKs tell its rate (fixed arrays: no allocation
        // per call; paths are at most MAX_LANES)
        let mut kept = [0usize; MAX_LANES];
        let mut n = 0;
        for &i in order.iter().take(MAX_LANES) {
            if self.list[i].rate.get() > 0 || flights[i] == 0 {
                kept[n] = i;
                n += 1;
            }
        }
        let order = &kept[..n];
        if order.is_empty() {
            return [0; MAX_LANES];
        }
        let unit = (self.datagram as u64).max(1) as f64;
        let mut rate = [1.0f64; MAX_LANES];
        let mut base = [0.0f64; MAX_LANES];
        let mut start = [0.0f64; MAX_LANES];
        let best = order.iter().map(|&i| self.list[i].rate.get()).max();
        for &i in order {
            rate[i] = self.stripe_rate(i, best.unwrap_or(0));
            base[i] = self.least_rtt(i) as f64 / 1e9;
            start[i] = base[i] + flights[i] as f64 / rate[i];
        }
        // when the last window would be full, and what fills them all by then
        let full = order
            .iter()
            .filter(|&&i| rooms[i] > 0)
            .map(|&i| start[i] + rooms[i] as f64 / rate[i])
            .fold(0.0f64, f64::max);
        let enough: f64 = order
            .iter()
            .map(|&i| ((full - start[i]) * rate[i]).max(0.0))
            .sum();
        let mut shares = [0u64; MAX_LANES];
        if waiting as f64 * unit >= enough {
            for &i in order {
                shares[i] = u64::MAX;
            }
            return shares;
        }
        if waiting == 0 || order.is_empty() {
            return shares;
        }
        // the level: the paths by start, each joining while its start is
        // below the level the ones before it reach
        // (insertion sort, stable: a few paths, no allocation)
        let mut by_start = kept;
        let by_start = &mut by_start[..n];
        for k in 1..n {
            let mut j = k;
            while j > 0
                && start[by_start[j - 1]]
                    .total_cmp(&start[by_start[j]])
                    .is_gt()
            {
                by_start.swap(j - 1, j);
                j -= 1;
            }
        }
        let need = waiting as f64 * unit;
        let (mut sum_rate, mut sum_start_rate) = (0.0f64, 0.0f64);
        let mut level = f64::MAX;
        for (k, &i) in by_start.iter().enumerate() {
            sum_rate += rate[i];
            sum_start_rate += start[i] * rate[i];
            level = (need + sum_start_rate) / sum_rate;
            if by_start.get(k + 1).is_none_or(|&j| level <= start[j]) {
                break;
            }
        }
        let mut given = 0u64;
        for &i in order {
            let whole = ((level - start[i]) * rate[i] / unit).max(0.0).floor() as u64;
            shares[i] = whole.min(waiting - given);
            given += shares[i];
        }
        // (whole fragments: a path sends those at the front of the
        // queue, a short last one among them)
        while given < waiting {
            let next = |i: usize| start[i] + (shares[i] + 1) as f64 * unit / rate[i];
            let Some(&i) = order.iter().min_by(|&&a, &&b| next(a).total_cmp(&next(b))) else {
                break;
            };
            shares[i] += 1;
            given += 1;
        }
        shares
    }

    /// When path `i`'s idle heartbeat is due: a usable path (a suspect
    /// one has its own, `suspect.rs`), not the current one, while the peer
    /// has traffic (`busy`); None otherwise.
    pub(super) fn idle_due(&self, i: usize, busy: bool) -> Option<Instant> {
        let p = &self.list[i];
        if !self.usable(i) || i == self.current || self.list.len() < 2 {
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
    /// counts an error; `PATH_MAX_RETRANS` make it suspect (`suspect.rs`:
    /// its heartbeats, the evidence rule, a failure told); the next is
    /// due `IDLE_HEARTBEATS` intervals on. True when it may go (not
    /// suspect).
    pub(super) fn idle_heartbeat(&mut self, i: usize, now: Instant) -> bool {
        let p = &mut self.list[i];
        if p.hb.is_some() {
            p.errors += 1;
            if p.errors >= PATH_MAX_RETRANS {
                let probe = p.interval;
                self.suspect(i, now, probe);
                return false;
            }
        }
        p.next_probe = now.plus(IDLE_HEARTBEATS * p.interval);
        true
    }
}
