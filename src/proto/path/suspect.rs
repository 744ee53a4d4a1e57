//! Suspect paths (after SCTP's Potentially Failed state, RFC 7829):
//! switch at once, fail only on evidence.
//!
//! Retransmission timeouts on a path say only that nothing came back: the
//! path may be gone, or the peer off the CPU (a loaded host, a program
//! that computes without polling). After `PATH_MAX_RETRANS` consecutive
//! timeouts the path is suspect: the association's packets move to
//! another usable path at once (as a failure moved them), a heartbeat
//! with a fresh nonce goes on the suspect path, and it stays `Active`,
//! carrying no new data. Then:
//!
//! - its heartbeat answered on it (or new data acknowledged while it is
//!   the current path): it is usable again, nothing is told;
//! - its heartbeat unanswered at the next one's time (`path_probe`,
//!   doubling to `PROBE_MAX`) while the peer answered elsewhere (new
//!   data acknowledged, another path's heartbeat answered) in the first
//!   half of that interval: the peer was alive with half an interval to
//!   answer on this path and did not: `Failed`, told, probed as any;
//! - its heartbeats unanswered `PATH_MAX_RETRANS` times with the peer
//!   silent on every path: `Failed` too (a partition, as far as can be
//!   told: a peer silent that long is told partitioned, its messages
//!   still wait for the peer timeout).
//!
//! Only authentic news counts as the peer answering (an ACK of new data,
//! a heartbeat's answer with its nonce): a replayed packet fails no path.

use super::*;

impl<A: Copy + PartialEq> Paths<A> {
    /// Whether path `i` may carry new data: active, not suspect.
    #[inline]
    pub fn usable(&self, i: usize) -> bool {
        let p = &self.list[i];
        p.state == PathState::Active && !p.suspect
    }

    /// Whether any path is active (suspect or not): a failure that leaves
    /// none partitions the peer.
    pub fn any_active(&self) -> bool {
        self.list.iter().any(|p| p.state == PathState::Active)
    }

    /// The path to fall back on when none is usable: the name's path
    /// (`name`: a peer that restarted keeps only its name) if it is
    /// active (suspect), else the current one if it is, else an active
    /// one; None when every path failed.
    pub fn fallback(&self) -> Option<usize> {
        let active = |i: usize| self.list[i].state == PathState::Active;
        if active(0) {
            return Some(0);
        }
        if active(self.current) {
            return Some(self.current);
        }
        self.list.iter().position(|p| p.state == PathState::Active)
    }

    /// A retransmission timeout of a packet path `i` carried at `sent`
    /// (the current path's, or a striped lane's): true when that makes it
    /// suspect (`PATH_MAX_RETRANS` in a row, or at once when the peer
    /// answered elsewhere and not on it: `silent_while_heard`; and another
    /// path exists): its packets move to another (`Peer::failover` for the
    /// current path, else `Peer::lane_failed`), its heartbeat is due at
    /// once. No failure is told then: only the evidence rule fails it.
    pub fn timed_out_on(&mut self, i: usize, now: Instant, probe: Nanos, sent: Instant) -> bool {
        let n = self.list.len();
        if i >= n {
            return false;
        }
        let silent = self.silent_while_heard(i, sent, now);
        let p = &mut self.list[i];
        p.errors += 1;
        let enough = p.errors >= PATH_MAX_RETRANS || silent;
        if !enough || p.state != PathState::Active || p.suspect || n < 2 {
            return false;
        }
        self.suspect(i, now, probe);
        true
    }

    /// Whether path `i`'s silence since a packet it carried at `sent`
    /// timed out at `now` is evidence against it: the peer answered on
    /// another active path, and not on this one, since that packet's
    /// answer was due (`sent` plus path i's round trip) and a deviation
    /// more (a quarter of the wait past the round trip: a timeout is the
    /// round trip and 4 deviations): the peer was alive to answer and did
    /// not on this path (`due_suspects`' rule for heartbeats). A path
    /// silent while striping (its fragments lost without a send error) is
    /// then suspect at its first timeout and its fragments go again on the
    /// others at once: three timeouts, each twice the one before, held
    /// reassembly at the target for about 7 of the path's timeouts (0.85 s
    /// on real links). A receiver off the CPU answers on no path, and a
    /// path slow but delivering is heard late: neither is evidence.
    fn silent_while_heard(&self, i: usize, sent: Instant, now: Instant) -> bool {
        let p = &self.list[i];
        let answer = sent.plus(p.srtt().unwrap_or(0));
        let since = Instant(answer.0 + now.since(answer) / 4);
        p.heard < since
            && self
                .list
                .iter()
                .enumerate()
                .any(|(k, q)| k != i && q.state == PathState::Active && q.heard >= since)
    }

    /// Path `i` (active) is suspect from `now`: its heartbeat, with a
    /// fresh nonce, is due at once, the next `probe` on.
    pub(super) fn suspect(&mut self, i: usize, now: Instant, probe: Nanos) {
        let p = &mut self.list[i];
        p.suspect = true;
        p.alive = None;
        p.hb = None;
        p.tries = 0;
        p.interval = probe;
        p.next_probe = now;
        self.suspects = true;
    }

    /// The peer answered at `now` (new data acknowledged on the current
    /// path): the current path is not suspect, and the others' silence
    /// counts from here.
    #[inline]
    pub fn acked(&mut self, now: Instant) {
        let c = self.current;
        self.list[c].heard = now;
        if self.suspects {
            let c = self.current;
            self.answered(now, c);
        }
    }

    /// Path `i` answered at `now`: not suspect; every other suspect path
    /// whose heartbeat is outstanding notes that the peer was alive.
    pub(super) fn answered(&mut self, now: Instant, i: usize) {
        self.list[i].heard = now;
        if !self.suspects {
            return;
        }
        for (k, p) in self.list.iter_mut().enumerate() {
            if k == i {
                p.suspect = false;
                p.alive = None;
            } else if p.suspect && p.hb.is_some() && p.alive.is_none() {
                p.alive = Some(now);
            }
        }
        self.recount();
    }

    pub(super) fn recount(&mut self) {
        self.suspects = self.list.iter().any(|p| p.suspect);
    }

    /// The longest wait between a failed path's probes: `PROBE_MAX`, or
    /// half that while no path is active (the peer partitioned: the first
    /// probe after the links' return, and so the traffic, comes within
    /// `PROBE_MAX / 2` plus a round trip). Cheap: a partitioned peer's
    /// paths get 2 heartbeats a second each instead of 1.
    pub(super) fn probe_cap(&self) -> Nanos {
        if self.list.iter().any(|p| p.state == PathState::Active) {
            PROBE_MAX
        } else {
            PROBE_MAX / 2
        }
    }

    /// When a suspect path's next heartbeat is due.
    pub(super) fn next_suspect(&self) -> Option<Instant> {
        if !self.suspects {
            return None;
        }
        self.list
            .iter()
            .filter(|p| p.suspect)
            .map(|p| p.next_probe)
            .min()
    }

    /// The suspect paths' heartbeats due at `now` (the module doc's
    /// rules): a path whose heartbeat went unanswered fails (bit i of the
    /// answer: path i failed), else a new heartbeat goes on it with
    /// `nonce()`, through `send`.
    pub fn due_suspects(
        &mut self,
        now: Instant,
        probe: Nanos,
        mut nonce: impl FnMut() -> u64,
        mut send: impl FnMut(Path<A>, u64),
    ) -> u32 {
        let mut failed = 0u32;
        if !self.suspects {
            return failed;
        }
        for (i, p) in self.list.iter_mut().enumerate() {
            if !p.suspect || p.next_probe > now {
                continue;
            }
            if let Some((_, sent)) = p.hb {
                // half the interval it had, from its heartbeat on
                let half = Instant(sent.0 + p.next_probe.since(sent) / 2);
                let answered_elsewhere = p.alive.is_some_and(|t| t <= half);
                if answered_elsewhere || p.tries >= PATH_MAX_RETRANS {
                    p.fail(now, probe);
                    failed |= 1 << (i % 32);
                    continue;
                }
            }
            let n = nonce();
            p.hb = Some((n, now));
            p.alive = None;
            p.tries += 1;
            p.next_probe = now.plus(p.interval);
            p.interval = (p.interval * 2).min(PROBE_MAX);
            send(p.path, n);
        }
        self.recount();
        failed
    }

    /// Bit i: path i is suspect (active).
    pub(super) fn suspect_mask(&self) -> u32 {
        let mut m = 0u32;
        for (i, p) in self.list.iter().enumerate().take(32) {
            if p.suspect && p.state == PathState::Active {
                m |= 1 << i;
            }
        }
        m
    }

    /// The news of suspicion since the last look, for `RAMP_VERBOSE`
    /// (`PathChange::Suspect`, `Cleared`): bit i of the first, path i
    /// became suspect; of the second, path i, told suspect, is usable
    /// again (one that failed meanwhile is told failed, not cleared).
    #[inline]
    pub fn suspect_news(&mut self) -> (u32, u32) {
        if !self.suspects && self.told_suspect == 0 {
            // (the usual case: no walk)
            return (0, 0);
        }
        let now = self.suspect_mask();
        let newly = now & !self.told_suspect;
        let ended = self.told_suspect & !now;
        let cleared = (0..self.list.len().min(32))
            .filter(|&i| ended & (1 << i) != 0 && self.usable(i))
            .fold(0u32, |m, i| m | 1 << i);
        self.told_suspect = now;
        (newly, cleared)
    }

    /// Path `i`'s path (the index of `due_suspects`'s answer).
    pub fn path_at(&self, i: usize) -> Option<Path<A>> {
        self.list.get(i).map(|p| p.path)
    }
}
