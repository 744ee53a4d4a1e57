//! Messages handed in by the layer above: `send` (and `connect`), and the
//! payload buffers it fills first, reused from acknowledged messages.

use super::*;

/// Payloads from this long are copied and hashed in one pass for the
/// packet MAC (`Protocol::payload_sealed`); a shorter one's GHASH costs
/// less than the digest's own set-up.
const DIGEST_MIN: usize = 8 << 10;

impl<A: PeerAddr> Protocol<A> {
    /// Queues a message to `to` on `channel` (`wire::CHANNEL_REQUEST` or
    /// `CHANNEL_REPLY`). Never refuses: what the window cannot take waits. A
    /// payload over `MAX_MESSAGE` comes back as `Event::Failed` with `TooLong`.
    pub fn send(
        &mut self,
        now: Instant,
        to: A,
        channel: u8,
        meta: MsgMeta,
        payload: impl Into<Payload>,
    ) -> MsgId {
        let Payload {
            bytes: payload,
            sums,
            digest,
        } = payload.into();
        debug_assert!((channel as usize) < NUM_CHANNELS);
        self.closed.now = now;
        let id = self.next_msg_id;
        self.next_msg_id += 1;
        if payload.len() > MAX_MESSAGE {
            // The receiver would drop it (after acknowledging it): refuse it here.
            self.out.events.push_back(Event::Failed {
                to,
                channel,
                id,
                meta,
                reason: FailReason::TooLong,
            });
            return id;
        }
        let slot = self.peer_entry(to);
        if self.peers[slot].dead.is_some() {
            // Dead: fails at once. One handshake at a time tries the peer
            // again (started by a send, not in the background); its
            // success ends the death.
            self.out.events.push_back(Event::Failed {
                to,
                channel,
                id,
                meta,
                reason: FailReason::PeerUnreachable,
            });
            if self.peers[slot].assoc.state == AssocState::Closed {
                let tag = self.secrets.next_tag();
                let (peer, mut cx) = self.peer_cx(slot);
                peer.start_handshake(now, tag, &mut cx);
            }
            self.schedule(slot);
            return id;
        }
        let cut = self
            .cfg
            .cut(&meta, payload.len(), self.peers[slot].assoc.paths.datagram);
        let cap = cut.cap;
        let m = OutMsg {
            id,
            meta,
            payload,
            sums,
            digest,
        };
        // A large payload is shared (with the outbox, which sends it from
        // where it lies: `send::GATHER_MIN`) even when it fits one datagram.
        let msg = if m.payload.len() <= cap && m.payload.len() < send::GATHER_MIN {
            MsgRef::one(m, &mut self.spare_msgs)
        } else {
            MsgRef::Shared(Arc::new(m))
        };
        let ch = channel as usize & 1;
        let tag = if self.peers[slot].assoc.state == AssocState::Closed {
            Some(self.secrets.next_tag())
        } else {
            None
        };
        let (peer, mut cx) = self.peer_cx(slot);
        let was_busy = peer.busy();
        peer.tx[ch].queue(msg, cut);
        peer.arm_live(now, was_busy, cx.cfg);
        match tag {
            Some(tag) => peer.start_handshake(now, tag, &mut cx),
            None => peer.pump(now, ch, &mut cx),
        }
        self.schedule(slot);
        id
    }

    /// Opens an association with `to` now, without a message (else the
    /// first message to it does).
    #[cfg(any(test, feature = "testing"))] // tests start from an association
    pub fn connect(&mut self, now: Instant, to: A) {
        let slot = self.peer_entry(to);
        if self.peers[slot].assoc.state == AssocState::Closed {
            let tag = self.secrets.next_tag();
            let (peer, mut cx) = self.peer_cx(slot);
            peer.start_handshake(now, tag, &mut cx);
            self.schedule(slot);
        }
    }

    /// An empty buffer holding a copy of `payload`, for `send`: a buffer of
    /// an acknowledged message when there is one (no allocation, no fresh
    /// page per message in steady state).
    #[inline]
    pub fn payload_buffer(&mut self, payload: &[u8]) -> Vec<u8> {
        self.spare_msgs.bufs.copy_of(payload)
    }

    /// `payload_buffer` with room for `room` bytes the layer above appends
    /// (a kept transaction's trailer) without growing it.
    pub fn payload_buffer_with_room(&mut self, payload: &[u8], room: usize) -> Vec<u8> {
        self.spare_msgs.bufs.copy_with_room(payload, room)
    }

    /// A copy of `payload` for `send`, with room for `room` bytes
    /// the layer above appends (a kept transaction's trailer) without
    /// growing it. Under CRC32C a payload of at least one 4 KiB block is
    /// summed block by block in the same pass as the copy
    /// (`wire::copy_summed`): its datagrams' trailers then cost almost
    /// nothing more than this copy, which is made anyway (the payload is
    /// kept for retransmission). The bytes must not change once copied
    /// (appending is fine).
    pub fn payload_summed(&mut self, payload: &[u8], room: usize) -> Payload {
        if payload.len() < wire::SUM_BLOCK || self.cfg.integrity.is_mac() {
            return Payload {
                bytes: self.spare_msgs.bufs.copy_with_room(payload, room),
                sums: Vec::new(),
                digest: None,
            };
        }
        let mut bytes = self.spare_msgs.bufs.take(payload.len() + room);
        let mut sums = self.spare_msgs.take_sums();
        wire::copy_summed(&mut bytes, payload, &mut sums);
        Payload {
            bytes,
            sums,
            digest: None,
        }
    }

    /// `payload_summed` (no room) of the payload of a message with `nargs`
    /// arguments to `to`: under the packet MAC, when the message goes as
    /// one gathered packet of at least `DIGEST_MIN` bytes to a peer whose
    /// association is keyed, copied and hashed in one pass
    /// (`wire::Integrity::copy_digest`), its packet's tag then made of the
    /// digest: a message copied when handed in but sent a window later
    /// (AMX's 128 credits, a window of 64) is not read back from outside
    /// the cache for its MAC.
    pub fn payload_sealed(&mut self, to: &A, payload: &[u8], nargs: usize) -> Payload {
        let len = payload.len();
        if len < DIGEST_MIN || !self.cfg.integrity.is_mac() {
            return self.payload_summed(payload, 0);
        }
        let Some(slot) = self.find_peer(to) else {
            return self.payload_summed(payload, 0);
        };
        let p = &self.peers[slot];
        if p.same_host.is_some() || len > self.cfg.capacity_in(p.assoc.paths.datagram, nargs) {
            return self.payload_summed(payload, 0);
        }
        let integ = p.assoc.tx.clone();
        let mut bytes = self.spare_msgs.bufs.take(len);
        let digest = integ.copy_digest(&mut bytes, payload, wire::DATA_HEADER_LEN + 4 * nargs);
        Payload {
            bytes,
            sums: Vec::new(),
            digest,
        }
    }

    /// An empty buffer with room for `len` bytes, for a payload to `send`
    /// that the layer above fills itself: a buffer of an acknowledged
    /// message when there is one.
    #[inline]
    pub fn empty_buffer(&mut self, len: usize) -> Vec<u8> {
        self.spare_msgs.bufs.take(len)
    }
}
