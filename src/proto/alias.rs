//! Aliases: a peer's packets from another port of its host. A UDP
//! endpoint sends the packets of an association through a socket
//! connected to the peer (`net/udp.rs`: the kernel looks the route up once,
//! not for every datagram), bound to a port of its own, so they come from
//! an address that is not the peer's name. How the port becomes the
//! peer's:
//! - Under a MAC, the first such packet is taken as the peer's when it
//!   carries the tag of an association with a peer on the same host and
//!   its key's seal (`decode_sealed`).
//! - Under CRC32C alone nothing proves where a packet comes from but its
//!   address (anyone on the host who learnt a tag could make any port the
//!   peer's), so the port is announced from the address that proves it:
//!   the peer sends an ALIAS naming the port from its name, and only an
//!   ALIAS from a peer's name, with its association's tag, makes the port
//!   its alias (`on_alias`); the answer, an ALIAS_ACK to the name, tells it
//!   that it may send from the port (`take_accepted_alias`, for the
//!   transport: until then it sends from its name). An ALIAS from any
//!   other address is nobody's.
//!
//! From then on the address stands for the peer. A peer has at most one
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

    /// Announces to the peer whose name is `to` that our packets of the
    /// association may also come from `port` of our host (an ALIAS from
    /// our name, `net/udp_conns.rs`'s socket for it): true when sent (an
    /// association is established with it).
    pub fn announce_alias(&mut self, to: &A, port: u16) -> bool {
        let Some(&s) = self.slots.get(to) else {
            return false;
        };
        let s = s as usize;
        let p = &mut self.peers[s];
        if !p.assoc.can_send() || port == 0 {
            return false;
        }
        p.announced = Some(port);
        let start = self.out.start();
        wire::encode_alias(
            &mut self.out.bytes,
            &self.cfg.integrity,
            p.assoc.peer_tag,
            false,
            port,
        );
        self.out.push(p.path(), start);
        true
    }

    /// An ALIAS: `port` of `from`'s host stands for the peer from now on,
    /// when `from` is the name of a peer (not an alias: only the name
    /// proves who sends) whose association takes `vtag`; answered to the
    /// name. Anything else is dropped as stale.
    pub(super) fn on_alias(&mut self, now: Instant, from: A, vtag: u64, port: u16) {
        let slot = self.slots.get(&from).map(|&s| s as usize);
        let Some(slot) = slot.filter(|&s| self.peers[s].assoc.accepts(vtag)) else {
            self.out.stats.stale_dropped += 1;
            return;
        };
        // a port of its host that is nobody's name (a peer there keeps
        // it) and no other peer's alias (the first to name it holds its
        // socket; another peer naming it would take that one's packets)
        let Some(alias) = from.at_port(port).filter(|a| {
            *a != from
                && !self.slots.contains_key(a)
                && self.aliases.get(a).is_none_or(|&s| s as usize == slot)
        }) else {
            self.out.stats.stale_dropped += 1;
            return;
        };
        if self.peers[slot].alias != Some(alias) {
            self.learn_alias(slot, alias);
        }
        let back = self.back_to(from);
        let (peer, cx) = self.peer_cx(slot);
        peer.hear(now);
        let start = cx.out.start();
        let integ = &cx.cfg.integrity;
        wire::encode_alias(&mut cx.out.bytes, integ, peer.assoc.peer_tag, true, port);
        cx.out.push(back, start);
    }

    /// An ALIAS_ACK: the peer named `from` took `port` as ours, when it
    /// answers the ALIAS we sent it last for its association.
    pub(super) fn on_alias_ack(&mut self, from: A, vtag: u64, port: u16) {
        let slot = self.slots.get(&from).map(|&s| s as usize);
        let Some(slot) = slot.filter(|&s| {
            let p = &self.peers[s];
            p.assoc.accepts(vtag) && p.announced == Some(port)
        }) else {
            self.out.stats.stale_dropped += 1;
            return;
        };
        let p = &mut self.peers[slot];
        p.announced = None;
        self.accepted_aliases.push((from, port, p.assoc.peer_tag));
    }

    /// An alias of ours a peer took since the last call: its name, the
    /// port, and the tag our packets of the association carry.
    pub fn take_accepted_alias(&mut self) -> Option<(A, u16, u64)> {
        self.accepted_aliases.pop()
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
