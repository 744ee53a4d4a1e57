//! Aliases: a peer's packets from another port of its host. A UDP
//! endpoint sends the packets of an association through a socket
//! connected to the peer (`net/udp.rs`: the kernel looks the route up once,
//! not for every datagram), bound to a port of its own, so they come from
//! an address that is not the peer's name. The first such packet is taken
//! as the peer's when it carries the tag of an association with a peer on
//! the same host and its key's seal (`decode_sealed`); from then on the
//! address stands for the peer. Only under a MAC: under CRC32C alone
//! nothing proves where a packet comes from but its address (anyone on
//! the host who learnt a tag could make any port the peer's), so an
//! endpoint without a MAC sends from its name and learns no alias
//! (`am/endpoint.rs`). A peer has at most one
//! alias (a new one replaces the old), the alias goes with the peer's
//! slot, and a peer that appears at an alias address (a new process
//! bound to the port) takes it back. Tags are looked up in a map of the
//! peers' tags, made again (a walk over the peers) when a tag is not in
//! it, at most at the rate of unsolicited answers: a flood of forged
//! packets from new ports costs a bounded effort and keeps no peer out.

use super::*;

impl<A: PeerAddr> Protocol<A> {
    /// The slot of the live peer on `from`'s host whose association takes
    /// `vtag`, for a packet from `from`, an address no peer has: None when
    /// there is none. Looked up in `tags`, the peers' tags as of its last
    /// making; a tag it lacks makes it again, at most at the rate of
    /// unsolicited answers: a flood of unknown tags costs a bounded effort,
    /// and the tags of the associations opened before its last making
    /// (a peer's, whose packets come from a new port) are found all the same.
    pub(super) fn alias_candidate(&mut self, now: Instant, from: &A, vtag: u64) -> Option<usize> {
        if self.slots.contains_key(from) || self.aliases.contains_key(from) {
            return None;
        }
        if let Some(s) = self.tagged(from, vtag) {
            return Some(s);
        }
        let (rate, burst) = (self.cfg.unsolicited_rate, self.cfg.unsolicited_burst);
        if !self.walk_budget.take(now, rate, burst) {
            return None;
        }
        self.tags.clear();
        for (i, p) in self.peers.iter().enumerate() {
            if p.assoc.local_tag != 0 && self.slots.get(&p.addr) == Some(&(i as u32)) {
                self.tags.insert(p.assoc.local_tag, i as u32);
            }
        }
        self.tag_walks += 1;
        self.tagged(from, vtag)
    }

    /// `tags`' live peer on `from`'s host whose association takes `vtag`.
    fn tagged(&self, from: &A, vtag: u64) -> Option<usize> {
        let s = *self.tags.get(&vtag)? as usize;
        let p = self.peers.get(s)?;
        (p.addr.same_host(from)
            && p.assoc.accepts(vtag)
            && self.slots.get(&p.addr) == Some(&(s as u32)))
        .then_some(s)
    }

    /// `from` stands for the peer in `slot` from now on.
    pub(super) fn learn_alias(&mut self, slot: usize, from: A) {
        self.forget_alias(slot);
        self.aliases.insert(from, slot as u32);
        self.peers[slot].alias = Some(from);
        self.aliases_learned += 1;
    }

    /// The alias of the peer in `slot` stands for it no more.
    pub(super) fn forget_alias(&mut self, slot: usize) {
        if let Some(old) = self.peers[slot].alias.take() {
            if self.aliases.get(&old) == Some(&(slot as u32)) {
                self.aliases.remove(&old);
            }
        }
    }

    /// A peer is made at `addr`: an alias there is another's no more.
    pub(super) fn take_back_alias(&mut self, addr: &A) {
        if let Some(s) = self.aliases.remove(addr) {
            self.peers[s as usize].alias = None;
        }
    }

    /// Aliases learnt so far (a new one for a peer counts again), and those
    /// standing now.
    #[cfg(test)]
    pub fn alias_counts(&self) -> (u64, usize) {
        (self.aliases_learned, self.aliases.len())
    }

    /// Walks over the peers to make `tags` so far.
    #[cfg(test)]
    pub fn tag_walks(&self) -> u64 {
        self.tag_walks
    }
}
