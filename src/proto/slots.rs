//! The peers' slots: found by address (the last one first), made on first
//! contact in a freed slot if any, freed (and the table compacted when
//! most are free), and lent with what the peers share (`peer_cx`).

use super::*;

impl<A: PeerAddr> Protocol<A> {
    /// The peer in `slot`, and what it shares with the others.
    pub(super) fn peer_cx(&mut self, slot: usize) -> (&mut Peer<A>, Ctx<'_, A>) {
        // (the peer's packets stay within its path's datagram size)
        self.out.set_limit(self.peers[slot].assoc.paths.datagram);
        let cx = Ctx {
            cfg: &self.cfg,
            out: &mut self.out,
            spare_msgs: &mut self.spare_msgs,
            queued_requests: &mut self.queued_requests,
            closed: &mut self.closed,
            nonces: &mut self.nonces,
            listing: &self.listing,
            path_events: &mut self.path_events,
        };
        (&mut self.peers[slot], cx)
    }

    /// The slot of the peer at `addr`, if it has one. The peer of the last
    /// look-up is checked first (a ping-pong talks to one peer).
    #[inline(always)]
    pub(super) fn find_peer(&mut self, addr: &A) -> Option<usize> {
        // the last peer again (the usual case) inline; the map out of line
        if self
            .peers
            .get(self.last_slot)
            .is_some_and(|p| p.addr == *addr || p.alias == Some(*addr))
        {
            return Some(self.last_slot);
        }
        self.find_peer_mapped(addr)
    }

    #[inline(never)]
    pub(super) fn find_peer_mapped(&mut self, addr: &A) -> Option<usize> {
        let s = match self.slots.get(addr) {
            Some(&s) => s,
            None => match self.aliases.get(addr) {
                Some(&s) => s,
                None => {
                    // another address the peer listed (its other rails)
                    let s = *self.remotes.get(addr)? as usize;
                    if !self.peers[s].assoc.paths.lists(addr) {
                        return None;
                    }
                    s as u32
                }
            },
        } as usize;
        self.last_slot = s;
        Some(s)
    }

    /// The slot of the peer at `addr`, created on first contact (in a
    /// freed slot if there is one).
    #[inline]
    pub(super) fn peer_entry(&mut self, addr: A) -> usize {
        match self.find_peer(&addr) {
            // (not a peer's alias: a peer of its own is made there)
            Some(s) if self.peers[s].addr == addr => s,
            _ => self.new_peer(addr),
        }
    }

    /// A slot for `addr`, which has none.
    #[inline(never)]
    pub(super) fn new_peer(&mut self, addr: A) -> usize {
        self.take_back_alias(&addr);
        // a peer of its own at an address another listed: its own from now
        self.remotes.remove(&addr);
        let slot = match self.free.pop() {
            Some(s) => {
                self.peers[s as usize] = Peer::new(&self.cfg, addr);
                s as usize
            }
            None => {
                self.peers.push(Peer::new(&self.cfg, addr));
                self.peers.len() - 1
            }
        };
        self.slots.insert(addr, slot as u32);
        self.last_slot = slot;
        slot
    }

    /// Frees `slot`: out of the map, an empty placeholder in its place
    /// (not queued: its entries left in the timer heap are stale and
    /// skipped), on the free list.
    pub(super) fn free_slot(&mut self, slot: usize) {
        let p = &self.peers[slot];
        if p.assoc.state != AssocState::Closed {
            self.closed
                .record(p.assoc.local_tag, self.cfg.cookie_lifetime);
        }
        let addr = p.addr;
        if self.slots.get(&addr) == Some(&(slot as u32)) {
            self.slots.remove(&addr);
        }
        self.forget_alias(slot);
        if !self.remotes.is_empty() {
            self.remotes.retain(|_, s| *s as usize != slot);
        }
        self.peers[slot] = Peer::new(&self.cfg, addr);
        self.free.push(slot as u32);
        self.last_slot = usize::MAX;
        if self.free.len() >= 64 && self.free.len() * 2 > self.peers.len() {
            self.compact();
        }
    }

    /// Most slots are free (peers reclaimed): the free slots at the end go
    /// and the tables shrink, so that memory follows the live peers.
    /// Timer-heap entries of slots gone are skipped as stale.
    pub(super) fn compact(&mut self) {
        let live = |p: &Peer<A>, i: usize, slots: &FxHashMap<A, u32>| {
            slots.get(&p.addr) == Some(&(i as u32))
        };
        while let Some(p) = self.peers.last() {
            if live(p, self.peers.len() - 1, &self.slots) {
                break;
            }
            self.peers.pop();
        }
        let n = self.peers.len() as u32;
        self.free.retain(|&s| s < n);
        if self.peers.capacity() > 2 * self.peers.len() {
            self.peers.shrink_to_fit();
            self.free.shrink_to_fit();
            self.slots.shrink_to_fit();
        }
        if self.peers.is_empty() {
            self.timers = BinaryHeap::new();
        }
    }
}
