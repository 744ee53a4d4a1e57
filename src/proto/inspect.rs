//! Looking at a protocol from outside: idleness, associations, liveness,
//! memory (`memory_bytes`), and forgetting a peer the layer above unmapped.
//! Mostly for tests and the simulator; `forget` and the memory estimate
//! serve the AM layer too.

use super::*;

impl<A: PeerAddr> Protocol<A> {
    /// Nothing in flight, nothing pending, no ACK owed.
    #[cfg(any(test, feature = "testing"))] // inspection for tests and the simulator
    pub fn is_idle(&self) -> bool {
        self.peers.iter().all(Peer::is_idle)
    }

    /// Unsolicited answers (INIT_ACK, UNKNOWN_COOKIE, ABORT, SHUTDOWN_ACK)
    /// the rate limit held back.
    #[cfg(any(test, feature = "testing"))] // inspection for tests and the simulator
    pub fn suppressed_answers(&self) -> u64 {
        self.suppressed
    }

    /// The tags (ours, the peer's) of the established association with `to`
    /// (the AM layer's handler-name cache keeps the peer's: a restarted
    /// peer has another).
    pub fn association(&self, to: &A) -> Option<(u64, u64)> {
        let a = &self.peers[*self.slots.get(to)? as usize].assoc;
        (a.state == AssocState::Established).then_some((a.local_tag, a.peer_tag))
    }

    /// Each peer's path (its address, its congestion controller, the
    /// bytes in flight on it), in no particular order: the statistics
    /// dump, `RAMP_VERBOSE`, tests.
    pub fn paths(&self) -> impl Iterator<Item = (A, &congestion::Congestion, u64)> + '_ {
        self.slots.iter().map(|(a, &s)| {
            let p = &self.peers[s as usize];
            (*a, p.assoc.paths.cc(), p.in_flight())
        })
    }

    /// One line per peer about its path: window, bytes in flight, pacing
    /// rate, round trip (smoothed, least), what the congestion
    /// controller did (the statistics dump's per-peer part, `RAMP_VERBOSE`).
    pub fn paths_report(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let us = |n: Option<u64>| n.map_or("-".to_string(), |n| format!("{:.1}", n as f64 / 1e3));
        for (a, cc, flight) in self.paths() {
            let c = &cc.counts;
            let rate = cc.pacing_rate().map_or("unpaced".to_string(), |r| {
                format!("{:.1} MB/s", r as f64 / 1e6)
            });
            let _ = writeln!(
                s,
                "path to {a:?}: window {} KiB{} in flight {} KiB, pacing {rate}, rtt {} us (least {}), reductions {} random losses {} timeouts {} (undone {}) paced {}",
                cc.cwnd() / 1024,
                if cc.in_slow_start() { " (slow start)" } else { "" },
                flight / 1024,
                us(cc.srtt()),
                us(cc.min_rtt()),
                c.reductions,
                c.random_losses,
                c.timeouts,
                c.undone,
                c.paced
            );
        }
        s
    }

    /// Number of peers with protocol state.
    #[cfg(any(test, feature = "testing"))] // inspection for tests and the simulator
    pub fn peer_count(&self) -> usize {
        self.slots.len()
    }

    /// Whether `to` is dead (new messages to it fail at once).
    #[cfg(any(test, feature = "testing"))] // inspection for tests and the simulator
    pub fn is_dead(&self, to: &A) -> bool {
        self.slots
            .get(to)
            .is_some_and(|&s| self.peers[s as usize].dead.is_some())
    }

    /// Peers declared dead so far, and out-of-order packets dropped for
    /// want of a peer's buffer budget.
    #[cfg(any(test, feature = "testing"))] // inspection for tests and the simulator
    pub fn life_counts(&self) -> (u64, u64) {
        (self.out.peers_died, self.out.budget_dropped)
    }

    /// Associations shut down for idleness, and our tags of ended
    /// associations remembered (their cookies are refused).
    #[cfg(any(test, feature = "testing"))] // inspection for tests and the simulator
    pub fn shutdown_counts(&self) -> (u64, usize) {
        (self.shutdowns, self.closed.len())
    }

    /// Frees the state kept for `addr` (the AM layer unmapped its last
    /// translation entry), unless messages to it are unfinished or it
    /// holds data from it (then it stays; it is freed when dead, or by a
    /// later call). Its association ends silently: a DATA it sends later
    /// is answered with an ABORT, and the next message either way opens a
    /// new one. Returns whether it was freed.
    pub fn forget(&mut self, addr: &A) -> bool {
        let Some(slot) = self.find_peer(addr) else {
            return false;
        };
        let p = &self.peers[slot];
        let holds =
            p.rx.iter()
                .any(|r| !r.held.is_empty() || r.reassembly.is_some());
        if p.busy() || holds {
            return false;
        }
        self.free_slot(slot);
        true
    }

    /// An honest estimate of the bytes this protocol state takes: peers
    /// (slots, maps, timer heap), their channels, held packets, partly
    /// reassembled messages, queued messages, datagrams and events waiting.
    #[cfg(any(test, feature = "testing"))] // inspection for tests and the simulator
    pub fn memory_bytes(&self) -> usize {
        use std::mem::size_of;
        let fixed = size_of::<Self>()
            + self.peers.capacity() * size_of::<Peer<A>>()
            + self.free.capacity() * 4
            // a hash map entry: key, value, control byte, at 8/7 load
            + self.slots.capacity() * (size_of::<A>() + 4 + 1) * 8 / 7
            + self.timers.capacity() * size_of::<Reverse<(Instant, u32)>>()
            + self.due.capacity() * 4
            + self.spare_msgs.memory_bytes()
            + self.closed.memory_bytes();
        fixed + self.out.memory_bytes() + self.peers.iter().map(Peer::heap_bytes).sum::<usize>()
    }

    /// The bytes `addr`'s peer takes (its slot and what it holds), if it
    /// has state.
    #[cfg(any(test, feature = "testing"))] // inspection for tests and the simulator
    pub fn peer_memory_bytes(&self, addr: &A) -> Option<usize> {
        let p = &self.peers[*self.slots.get(addr)? as usize];
        Some(std::mem::size_of::<Peer<A>>() + p.heap_bytes())
    }

    /// Messages (fragments) queued or in flight to `to`. The AM layer's
    /// remote memory waits while its answers to a peer back up
    /// (`am/rma_target.rs`); it also bounds the name answers it queues.
    pub fn unfinished_to(&self, to: &A) -> usize {
        self.slots
            .get(to)
            .map(|&s| {
                let p = &self.peers[s as usize];
                p.tx.iter()
                    .map(|t| t.in_flight.len() + t.pending.len())
                    .sum()
            })
            .unwrap_or(0)
    }

    /// The last `held` packets the layer above queued for `to` on
    /// `channel` at `since` or later, and held back, leave only `now`:
    /// their timers start now (`SendChannel::restamp`). Their timer entry
    /// may fire early, finds nothing due, and is armed again.
    pub fn restamp(&mut self, to: &A, channel: u8, since: Instant, now: Instant, held: usize) {
        if let Some(&s) = self.slots.get(to) {
            if let Some(t) = self.peers[s as usize].tx.get_mut(channel as usize) {
                t.restamp(since, now, held);
            }
        }
    }

    /// Fragments queued to `to` on `channel` that the window has not taken
    /// yet (no sequence number, not sent). A large put waits while its
    /// peer has a backlog (`am/rma.rs`): its chunks are then copied just
    /// before they go, not megabytes ahead.
    pub fn queued_fragments(&self, to: &A, channel: u8) -> usize {
        self.slots
            .get(to)
            .and_then(|&s| self.peers[s as usize].tx.get(channel as usize))
            .map_or(0, |t| t.pending.len())
    }

    /// For the start window (`am/started.rs`: the AM layer starts a
    /// request's handler only while its sender has few answers
    /// unacknowledged), in one look-up: our tag of the established
    /// association with `to` (None: none), and the messages on `channel`
    /// to it not yet cumulatively acknowledged (queued, in flight, or held
    /// by the peer behind a gap), counted up to `at_least` exactly
    /// (fragments count first: a message has at least one).
    pub fn start_window(&self, to: &A, channel: u8, at_least: usize) -> Option<(u64, usize)> {
        let p = &self.peers[*self.slots.get(to)? as usize];
        (p.assoc.state == AssocState::Established).then(|| {
            let unacked = match at_least {
                0 => 0, // full whatever the count
                n => p.unacked_messages(channel, n),
            };
            (p.assoc.local_tag, unacked)
        })
    }
}

impl<A> Peer<A> {
    /// The unacknowledged messages of `Protocol::start_window`.
    fn unacked_messages(&self, channel: u8, at_least: usize) -> usize {
        let Some(t) = self.tx.get(channel as usize) else {
            return 0;
        };
        let frags = t.in_flight.len() + t.pending.len();
        if frags < at_least {
            return frags;
        }
        let mut n = 0;
        let mut last = None;
        for id in t
            .in_flight
            .iter()
            .map(|p| p.frag.msg.id)
            .chain(t.pending.iter().map(|f| f.msg.id))
        {
            if last != Some(id) {
                n += 1;
                last = Some(id);
            }
        }
        n
    }
}
