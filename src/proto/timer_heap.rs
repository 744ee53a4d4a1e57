//! The peers by when to look at them (a heap of slots, each at the
//! earliest of its timers or before): `handle_timeout` serves the due
//! peers in a fixed order at O(log n) each, `schedule` puts a peer whose
//! timers moved back on it.

use super::*;

impl<A: PeerAddr> Protocol<A> {
    /// Runs the timers due at `now`: retransmissions, delayed ACKs, the end of
    /// a NACK pause. Cheap when nothing is due (that test inline, in the
    /// caller: an empty poll makes no call).
    #[inline]
    pub fn handle_timeout(&mut self, now: Instant) {
        self.closed.now = now;
        match self.timers.peek() {
            None => {}
            // nothing due and the top entry current (an empty poll's
            // usual case): nothing to do
            Some(&Reverse((t, slot)))
                if t > now
                    && self
                        .peers
                        .get(slot as usize)
                        .is_some_and(|p| p.queued == Some(t)) => {}
            Some(_) => self.run_timers(now),
        }
    }

    /// `handle_timeout` when something may be due.
    #[inline(never)]
    pub(super) fn run_timers(&mut self, now: Instant) {
        // The peers due now, each once; what they arm now waits for the next call.
        let mut due = std::mem::take(&mut self.due);
        due.clear();
        while let Some(&Reverse((t, slot))) = self.timers.peek() {
            if t > now {
                break;
            }
            self.timers.pop();
            // (a slot past the end was compacted away: stale)
            let Some(peer) = self.peers.get_mut(slot as usize) else {
                continue;
            };
            if peer.queued == Some(t) {
                peer.queued = None;
                due.push(slot);
            }
        }
        let mut freed = Vec::new();
        for &slot in &due {
            let slot = slot as usize;
            let (peer, mut cx) = self.peer_cx(slot);
            // Looked at early (a timer stopped or moved since it was
            // queued: an ACK carried, a flight acknowledged): nothing is
            // due, nothing to run (each timer is at or before what it
            // stands for, `check_invariants`), only the peer queued again
            // at its earliest (a ping-pong's usual wake: the delayed ACK's
            // time after the next request carried it).
            let next = peer.timers.next();
            if next.is_none_or(|at| at > now) {
                peer.timers.take_wake();
                if let Some(at) = next {
                    self.queue(slot, at);
                }
                continue;
            }
            if peer.on_timeout(now, &mut cx) {
                // dead long enough: freed below
                freed.push(slot);
                continue;
            }
            peer.timers.take_wake();
            if let Some(at) = peer.timers.next() {
                self.queue(slot, at);
            }
        }
        for slot in freed {
            self.free_slot(slot);
        }
        self.due = due;
        // Drop stale entries on top, so that `next_timeout` is exact.
        while let Some(&Reverse((t, slot))) = self.timers.peek() {
            if self
                .peers
                .get(slot as usize)
                .is_some_and(|p| p.queued == Some(t))
            {
                break;
            }
            self.timers.pop();
        }
    }

    /// The next time `handle_timeout` has work, if any.
    pub fn next_timeout(&self) -> Option<Instant> {
        self.timers.peek().map(|&Reverse((t, _))| t)
    }

    /// Makes sure `handle_timeout` looks at the peer in `slot` by the
    /// earliest time any of its timers was set to since it was last
    /// scheduled (if that timer moved since, the look finds nothing to do
    /// and `handle_timeout` schedules it exactly).
    #[inline]
    pub(super) fn schedule(&mut self, slot: usize) {
        let peer = &mut self.peers[slot];
        if let Some(at) = peer.timers.take_wake() {
            self.queue(slot, at);
        }
        // the peer is looked at by its earliest timer, or before
        debug_assert!({
            let p = &self.peers[slot];
            p.timers
                .next()
                .is_none_or(|t| p.queued.is_some_and(|q| q <= t))
        });
    }

    pub(super) fn queue(&mut self, slot: usize, at: Instant) {
        let peer = &mut self.peers[slot];
        if peer.queued.is_none_or(|q| at < q) {
            peer.queued = Some(at);
            self.timers.push(Reverse((at, slot as u32)));
        }
    }
}
