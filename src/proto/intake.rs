//! Datagrams in: each packet of a bundle framed, checked (a large DATA
//! under CRC32C as its payload is copied where it goes, `take_deferred`;
//! under a MAC with its association's key, `decode_sealed`) and handed to
//! its peer, or to the handshake when no association takes it.

use super::*;

impl<A: PeerAddr> Protocol<A> {
    /// Counts a datagram the transport could not read whole.
    pub fn count_malformed(&mut self) {
        self.out.stats.packets_received += 1;
        self.out.stats.corrupt_dropped += 1;
    }

    /// Takes one datagram received from `from`.
    #[cfg(any(test, feature = "testing"))] // the simulator and tests; endpoints place
    pub fn handle_datagram(&mut self, now: Instant, from: A, dgram: &[u8]) {
        self.handle_datagram_placing(now, from, dgram, &mut NoPlacement)
    }

    /// `handle_datagram`, with `place` offered each long message that
    /// starts (`place.rs`), that came in on `path` (the rail it came in
    /// on and its source; a bare address: rail 0). A packet of a known
    /// association from one of the peer's addresses (its name, alias, or
    /// one it listed in the handshake) is taken; from any other address
    /// it is no association's (counted in `stale_dropped`), never a new
    /// path. Answers go back on the rail it came in on. A datagram may carry several packets
    /// (`wire::packets`): each is checked and handled in order, and counted
    /// in `packets_received`; the first that fails its check (or cannot be
    /// framed) is counted in `corrupt_dropped` and ends the datagram (what
    /// follows it cannot be framed); one outside any association is dropped
    /// and counted as alone, and the next one is handled (only the first
    /// packet of a datagram may draw an answer outside an association).
    #[inline]
    pub fn handle_datagram_placing(
        &mut self,
        now: Instant,
        path: impl Into<crate::path::Path<A>>,
        dgram: &[u8],
        place: &mut dyn Placement<A>,
    ) {
        let path = path.into();
        self.arrival = path.rail;
        self.handle_datagram_via(now, path.remote, dgram, place, false);
        self.arrival = crate::path::Rail::NAME;
    }

    /// `handle_datagram_placing` for a datagram that came through a
    /// same-host ring whose ends proved the same job (the transport says
    /// so, `net/shm_proof.rs`): its DATA, ACK and NACK are opened without
    /// a check of their trailer (`wire::Integrity::SameHost`: the sender
    /// wrote zeros, or a seal nobody needs to check); handshake packets
    /// are checked as any. Everything else (framing, tags, sequence
    /// numbers, the receive budget) is judged as for any datagram.
    #[inline]
    pub fn handle_ring_datagram(
        &mut self,
        now: Instant,
        from: A,
        dgram: &[u8],
        place: &mut dyn Placement<A>,
    ) {
        self.arrival = crate::path::Rail::NAME;
        self.handle_datagram_via(now, from, dgram, place, true)
    }

    /// Whether our datagrams to `peer` go through a same-host ring whose
    /// ends proved the same job (the AM layer asks its transports): its
    /// DATA, ACK and NACK then carry an unchecked trailer
    /// (`wire::Integrity::SameHost`) instead of the association's MAC or
    /// CRC32C. A peer without state is left alone (set again at its next
    /// message). A datagram sealed so that ends up elsewhere than in that
    /// ring fails its check at the receiver: lost, and sent again.
    pub fn set_same_host(&mut self, peer: A, on: bool) {
        let Some(slot) = self.find_peer(&peer) else {
            return;
        };
        let p = &mut self.peers[slot];
        if p.same_host.is_some() != on {
            p.same_host = on.then(|| self.cfg.integrity.same_host());
        }
    }

    fn handle_datagram_via(
        &mut self,
        now: Instant,
        from: A,
        dgram: &[u8],
        place: &mut dyn Placement<A>,
        ring: bool,
    ) {
        self.closed.now = now;
        for (i, framed) in wire::packets(&self.cfg.integrity, dgram).enumerate() {
            self.in_bundle = i > 0;
            self.out.stats.packets_received += 1;
            let ok = match framed {
                Ok(pkt) => self.handle_one(now, from, pkt, place, ring),
                Err(_) => false,
            };
            if !ok {
                self.out.stats.corrupt_dropped += 1;
                break;
            }
        }
    }

    /// Checks and handles one packet; false when it fails its check.
    #[inline]
    pub(super) fn handle_one(
        &mut self,
        now: Instant,
        from: A,
        bytes: &[u8],
        place: &mut dyn Placement<A>,
        ring: bool,
    ) -> bool {
        let decoded = match self.cfg.integrity {
            _ if ring && wire::association_vtag(bytes).is_some() => {
                let unchecked = wire::Integrity::SameHost(self.cfg.integrity.trailer_len());
                wire::decode(&unchecked, bytes)
            }
            wire::Integrity::Crc32c => {
                if bytes.len() > wire::DEFER_MIN {
                    if let Some(ok) = self.take_deferred(now, from, bytes, place) {
                        return ok;
                    }
                }
                wire::decode(&self.cfg.integrity, bytes)
            }
            _ => match self.decode_sealed(now, from, bytes) {
                Some(d) => d,
                None => return true,
            },
        };
        match decoded {
            // By reference: the parsed packet (~170 bytes) is not copied.
            Ok(ref pkt) => {
                self.handle_packet(now, from, pkt, place, false);
                true
            }
            Err(_) => false,
        }
    }

    /// A DATA packet under CRC32C that continues the message being
    /// reassembled at its next bytes (`RecvChannel::next_in_place`, judged
    /// from its unchecked header: where its bytes go is the message's to
    /// say, not the packet's): its payload is copied there, into the
    /// segment (`Placement::write_summed`) or the reassembly buffer
    /// (`RecvChannel::gather_summed`), and summed in the same pass, then the
    /// packet is checked (`wire::decode_deferred`) and, if it holds, handled
    /// as any, its bytes in place: one pass over them, not two. Some(false):
    /// the check failed, the packet is dropped as corrupt; what it appended
    /// to the buffer is taken back, and what it wrote into the segment is
    /// within the message's next bytes, which its next fragment writes over
    /// before it is delivered. None: not such a packet, or nothing was
    /// written; the caller checks it first, as any.
    #[inline]
    pub(super) fn take_deferred(
        &mut self,
        now: Instant,
        from: A,
        bytes: &[u8],
        place: &mut dyn Placement<A>,
    ) -> Option<bool> {
        let (pkt, check) = wire::decode_deferred(bytes)?;
        let (common, msg_len, frag_off, payload) = match pkt {
            Packet::Data {
                ref common,
                msg_len,
                frag_off,
                payload,
                ..
            } => (common, Some(msg_len), frag_off, payload),
            Packet::More {
                ref common,
                frag_off,
                payload,
            } => (common, None, frag_off, payload),
            _ => return None,
        };
        let slot = self
            .find_peer(&from)
            .filter(|&s| self.peers[s].assoc.accepts(common.vtag))?;
        let rx = &mut self.peers[slot].rx[common.channel as usize];
        let at = (common.epoch, common.seq);
        let (sum, gathered) = match rx.next_in_place(at, frag_off, msg_len, payload.len())? {
            InPlace::Placed(meta) => (
                place.write_summed(&meta, frag_off as usize, payload)?,
                false,
            ),
            InPlace::Gathered => (rx.gather_summed(payload)?, true),
        };
        if !check.holds(sum) {
            if gathered {
                self.peers[slot].rx[common.channel as usize].ungather(frag_off as usize);
            }
            return Some(false);
        }
        self.checked_in_place += 1;
        self.handle_packet(now, from, &pkt, place, true);
        // Taken, as `next_in_place` foresaw (the channel moved past it);
        // were it not, what it appended must not stay for its copy to find
        let rx = &mut self.peers[slot].rx[common.channel as usize];
        if gathered && rx.epoch == common.epoch && rx.next == common.seq {
            debug_assert!(false, "a packet checked in place was not taken");
            rx.ungather(frag_off as usize);
        }
        Some(true)
    }

    /// Checks a packet under the job key's MAC: a handshake packet with
    /// the job key; a DATA, ACK or NACK with the key of the association
    /// its tag names. None when no association takes the tag: the packet
    /// was dropped, unchecked, as stale (`outside_association`).
    pub(super) fn decode_sealed<'b>(
        &mut self,
        now: Instant,
        from: A,
        bytes: &'b [u8],
    ) -> Option<Result<Packet<'b>, wire::DecodeError>> {
        Some(match wire::association_vtag(bytes) {
            None => wire::decode(&self.cfg.integrity, bytes),
            Some(vtag) => match self
                .find_peer(&from)
                .filter(|&s| self.peers[s].assoc.accepts(vtag))
            {
                Some(s) => wire::decode(&self.peers[s].assoc.rx, bytes),
                None => {
                    // a peer's from another port: its alias once its key's seal holds
                    if let Some(s) = self.alias_candidate(now, &from, vtag) {
                        if let d @ Ok(_) = wire::decode(&self.peers[s].assoc.rx, bytes) {
                            self.learn_alias(s, from);
                            return Some(d);
                        }
                    }
                    let is_data = bytes[wire::layout::TYPE_AT] == wire::PacketType::Data as u8;
                    self.outside_association(now, from, is_data.then_some(vtag));
                    return None;
                }
            },
        })
    }

    /// `copied`: a DATA packet's payload is in place already
    /// (`take_deferred`).
    pub(super) fn handle_packet(
        &mut self,
        now: Instant,
        from: A,
        pkt: &Packet<'_>,
        place: &mut dyn Placement<A>,
        copied: bool,
    ) {
        let c = match *pkt {
            Packet::Data { ref common, .. }
            | Packet::More { ref common, .. }
            | Packet::Ack { ref common, .. }
            | Packet::Nack { ref common, .. } => common,
            Packet::Init { init_tag, addrs } => return self.on_init(now, from, init_tag, addrs),
            Packet::InitAck {
                vtag,
                resp_tag,
                cookie,
                addrs,
            } => return self.on_init_ack(now, from, vtag, resp_tag, cookie, addrs),
            Packet::CookieEcho {
                vtag,
                cookie,
                addrs,
            } => return self.on_cookie_echo(now, from, vtag, cookie, addrs),
            Packet::CookieAck { vtag } => return self.on_cookie_ack(now, from, vtag),
            Packet::UnknownCookie { vtag, resp_tag } => {
                return self.on_unknown_cookie(now, from, vtag, resp_tag)
            }
            Packet::Abort { vtag } => return self.on_abort(from, vtag),
            Packet::Heartbeat { vtag, nonce } => {
                return self.on_heartbeat(now, from, vtag, nonce, false)
            }
            Packet::HeartbeatAck { vtag, nonce } => {
                return self.on_heartbeat(now, from, vtag, nonce, true)
            }
            Packet::Shutdown { vtag, nonce } => return self.on_shutdown(now, from, vtag, nonce),
            Packet::ShutdownAck { vtag, nonce } => {
                return self.on_shutdown_ack(now, from, vtag, nonce)
            }
            Packet::Alias { vtag, port } => return self.on_alias(now, from, vtag, port),
            Packet::AliasAck { vtag, port } => return self.on_alias_ack(from, vtag, port),
        };
        // Inside an association with `from`, or nothing.
        let Some(slot) = self
            .find_peer(&from)
            .filter(|&s| self.peers[s].assoc.accepts(c.vtag))
        else {
            let data_vtag = match pkt {
                Packet::Data { common, .. } | Packet::More { common, .. } => Some(common.vtag),
                _ => None,
            };
            return self.outside_association(now, from, data_vtag);
        };
        let rail = self.arrival;
        let (peer, mut cx) = self.peer_cx(slot);
        // A packet with our tag: the peer has our COOKIE_ECHO.
        peer.confirm(now, &mut cx);
        peer.hear(now);
        if !peer.assoc.paths.single() {
            // (the way back: `back_to`; one path is where answers go)
            let back = crate::path::Path { remote: from, rail };
            peer.assoc.paths.arrived(&back);
        }
        for ch in 0..NUM_CHANNELS {
            let a = c.acks[ch];
            if a.valid {
                peer.on_ack(now, ch, (a.epoch, a.next, 0), &mut cx);
            }
        }
        match *pkt {
            Packet::Ack {
                ref common,
                sack,
                dup,
            } => {
                cx.out.stats.acks_received += 1;
                let ch = common.channel as usize;
                if let Some(seq) = dup {
                    // a copy we resent may have been needless (D-SACK):
                    // what the timers learn is this peer's alone (another
                    // peer answering late says nothing of this one)
                    peer.tx[ch].needless_copy(seq, &mut peer.rtt);
                }
                peer.on_ack(now, ch, (common.epoch, common.seq, sack), &mut cx);
            }
            Packet::Nack { ref common, last } => {
                cx.out.stats.nacks_received += 1;
                let ch = common.channel as usize;
                peer.on_nack(now, ch, (common.epoch, common.seq, last), &mut cx);
            }
            Packet::Data {
                ref common,
                ref meta,
                msg_len,
                frag_off,
                payload,
            } => {
                let f = InFrag {
                    meta: Some(meta),
                    msg_len,
                    frag_off,
                    bytes: payload,
                    copied,
                    unordered: common.unordered,
                };
                // the peer had something to say: no shutdown
                peer.resume(now, &mut cx);
                peer.on_data(now, common, f, &mut cx, place);
            }
            Packet::More {
                ref common,
                frag_off,
                payload,
            } => {
                let f = InFrag {
                    meta: None,
                    msg_len: 0,
                    frag_off,
                    bytes: payload,
                    copied,
                    unordered: false,
                };
                peer.resume(now, &mut cx);
                peer.on_data(now, common, f, &mut cx, place);
            }
            _ => {}
        }
        self.schedule(slot);
    }

    /// DATA packets checked where their payload was copied, so far
    /// (`take_deferred`).
    #[cfg(any(test, feature = "testing"))]
    pub fn checked_in_place(&self) -> u64 {
        self.checked_in_place
    }
}
