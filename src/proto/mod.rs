//! The sans-IO reliable protocol core.
//!
//! One `Protocol` serves one endpoint and all its peers. It reads no clock and
//! owns no socket: the caller feeds datagrams (`handle_datagram`) and the time
//! (`handle_timeout`), queues messages (`send`), then drains the datagrams to
//! transmit (`poll_transmit`, into the caller's buffer) and the events for the
//! layer above (`poll_event`).
//!
//! Per (peer, channel) it keeps sequence numbers, cumulative and selective
//! acknowledgements (piggybacked on DATA when possible, delayed otherwise),
//! NACK with go-back-N when the receiver has no buffer, retransmission timeouts
//! from a smoothed RTT with backoff, and duplicate suppression, so that each
//! message is delivered exactly once and in order on its channel, or reported
//! as failed.
//!
//! Every peer is reached inside an association (`assoc`, after SCTP): a
//! four-way handshake whose responder keeps no state until the initiator
//! echoes a cookie signed with the endpoint's secret (proving it receives
//! at its address); then every packet carries the receiver's 64-bit
//! verification tag. DATA, ACK and NACK from an address count only with
//! our tag of the association with that address; anything else is dropped
//! and counted (`stale_dropped`), never an event. DATA is never sent to an
//! address before the association is established. A restarted peer is
//! recognised only by a new handshake (a valid cookie with other tags from
//! its address), or ends the old association by an ABORT carrying its tag.
//! HEARTBEAT and HEARTBEAT_ACK count only with our tag, like DATA.
//! Unsolicited answers (INIT_ACK, ABORT) are rate-limited; an INIT is
//! never smaller than its INIT_ACK. All randomness (tags) comes from the
//! secret given to `Protocol::new` (and, under a job key, the MAC nonces'
//! random parts, which change no behaviour). Tags stop a sender that
//! cannot see the traffic; one that sees it and can spoof a peer's address
//! can still forge packets within the window unless every packet carries
//! the MAC of a job key (`ProtoConfig::mac`, `wire::Integrity`): then only
//! a holder of the key can (replaying a packet whole gives a duplicate).
//!
//! A peer is dead when nothing has been heard from it for
//! `ProtoConfig::peer_timeout` (`RAMP_PEER_TIMEOUT_MS`) while we have
//! something to say; HEARTBEATs ask after a quarter of it (only while busy:
//! an idle association is quiet). Then every unfinished message fails
//! (`PeerUnreachable`), and every new one at once, each starting a handshake
//! (one at a time) whose success makes the peer usable again; there is no
//! background probing. The per-packet retry limit is a second bound. A dead
//! peer's slot is freed after six peer timeouts, and `forget` (the AM
//! layer's unmap of an address's last entry) frees an idle peer's. A live
//! association quiet for `ProtoConfig::idle_timeout` is shut down by a
//! SHUTDOWN exchange and both ends free the peer (`shutdown`); the tags
//! of ended associations are remembered for a cookie lifetime, so that a
//! replayed COOKIE_ECHO cannot bring one back.
//! Memory a peer makes us hold (held packets, reassembly) is claimed as data
//! arrives, within `ProtoConfig::peer_buffer`; beyond it out-of-order
//! packets are dropped (the sender resends them). `memory_bytes` estimates
//! the whole state.
//!
//! The state lives beside its behaviour: a send channel (`send`) and a
//! receive channel (`recv`) per direction and channel, a `peer` joining them
//! with its association and timers (`timer`); this module only dispatches
//! datagrams to peers, answers handshakes, runs the peers' timers and hands
//! out what the `outbox` collected. A datagram may carry several DATA, ACK
//! and NACK packets (a bundle, `wire::packets`): each is handled in order;
//! the outbox joins the small ones one flush queued for a peer.

mod alias;
#[cfg(test)]
mod alias_tests;
mod assoc;
mod bufpool;
pub mod config;
#[cfg(test)]
mod deferred_tests;
pub mod event;
mod handshake;
mod inspect;
mod outbox;
#[cfg(test)]
mod packing_tests;
mod peer;
mod place;
mod recv;
pub mod rtt;
mod send;
mod shutdown;
mod stats;
#[cfg(test)]
mod tests;
mod timer;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::hash::Hash;
use std::sync::Arc;

pub use config::{ProtoConfig, DEFAULT_IDLE_TIMEOUT, MAX_WINDOW};
pub use event::{Event, FailReason, MsgId};
#[cfg(any(test, feature = "testing"))]
pub use place::NoPlacement;
pub use place::Placement;
pub use send::Payload;

use crate::fxhash::FxHashMap;
use crate::stats::Statistics;
use crate::time::Instant;
use crate::wire::{self, MsgMeta, Packet, COOKIE_LEN, NUM_CHANNELS};
use assoc::{AssocState, ClosedTags, Secrets, TokenBucket};
use outbox::Outbox;
pub(crate) use outbox::SEND_BUNDLE_MAX;
use peer::{Ctx, Peer};
use recv::{InFrag, InPlace};
use send::{push_fragments, MsgRef, OutMsg, SpareMsgs};

/// The largest message (payload bytes) a receiver reassembles.
pub const MAX_MESSAGE: usize = 1 << 20;

/// Addresses of peers: a socket address, or a simulated node.
pub trait PeerAddr: Copy + Eq + Hash + std::fmt::Debug {
    /// Whether a packet from `self` may be `other`'s, sent from another
    /// port of its host (`alias.rs`).
    fn same_host(&self, other: &Self) -> bool;
    /// The address of `port` on this address's host (an announced alias,
    /// `alias.rs`); None where addresses have no ports.
    fn at_port(&self, port: u16) -> Option<Self>;
}

impl PeerAddr for std::net::SocketAddr {
    fn same_host(&self, other: &Self) -> bool {
        self.ip() == other.ip()
    }

    fn at_port(&self, port: u16) -> Option<Self> {
        Some(std::net::SocketAddr::new(self.ip(), port))
    }
}

/// A simulated node: its own host (a simulated peer sends from one address).
impl PeerAddr for u32 {
    fn same_host(&self, _other: &Self) -> bool {
        false
    }

    fn at_port(&self, _port: u16) -> Option<Self> {
        None
    }
}

/// The reliable protocol state of one endpoint.
pub struct Protocol<A: PeerAddr> {
    cfg: ProtoConfig,
    /// Verification tags and the cookie key.
    secrets: Secrets,
    /// Unsolicited answers (INIT_ACK, ABORT) left to send.
    unsolicited: TokenBucket,
    /// Unsolicited answers not sent for want of tokens.
    suppressed: u64,
    /// The packet being handled is not the first of its datagram: it may
    /// not draw an unsolicited answer (one forged bundle gets at most one
    /// ABORT, as a lone datagram does).
    in_bundle: bool,
    /// Our tags of associations that ended lately: their cookies are refused.
    closed: ClosedTags,
    /// Associations shut down for idleness (a SHUTDOWN_ACK sent or taken).
    shutdowns: u64,
    /// Every peer, by slot; a freed slot (dead and lingered, or forgotten)
    /// holds an empty placeholder, out of `slots`, and goes on `free`.
    peers: Vec<Peer<A>>,
    /// Freed slots, reused before the vector grows.
    free: Vec<u32>,
    /// The slot of each peer's address: one lookup per datagram or message.
    slots: FxHashMap<A, u32>,
    /// The slot of the last peer looked up (checked before `slots`).
    last_slot: usize,
    /// The slot of each peer's alias (`alias.rs`), at most one a peer.
    aliases: FxHashMap<A, u32>,
    /// The peers' tags (ours of their associations) as of the last walk
    /// (`alias.rs`), and the walks left (rate-limited).
    tags: FxHashMap<u64, u32>,
    walk_budget: TokenBucket,
    tag_walks: u64,
    aliases_learned: u64,
    /// Aliases of ours that peers took (ALIAS_ACK): the peer's name, the
    /// port, the tag our packets to it carry (`take_accepted_alias`).
    accepted_aliases: Vec<(A, u16, u64)>,
    /// DATA packets checked where their payload was copied
    /// (`take_deferred`).
    checked_in_place: u64,
    /// Peers with a timer set, by when to look at them (the earliest of
    /// their timers, or before) then slot: `handle_timeout` costs O(log n)
    /// per due peer, not a walk over all of them, and serves them in a fixed
    /// order (same inputs, same outputs). An entry whose time is not its
    /// peer's `queued` is stale and skipped.
    timers: BinaryHeap<Reverse<(Instant, u32)>>,
    /// Slots due in the current `handle_timeout` (kept to avoid allocating).
    due: Vec<u32>,
    out: Outbox<A>,
    /// Delivered requests not yet taken by `poll_event` (the receive buffer):
    /// the `Delivered` events of the request channel in `out.events`.
    queued_requests: usize,
    next_msg_id: MsgId,
    /// Boxes of acknowledged one-fragment messages, reused by `send`.
    spare_msgs: SpareMsgs,
}

impl<A: PeerAddr> Protocol<A> {
    /// `secret`: 32 random bytes, this endpoint's own (the OS's randomness;
    /// a seeded one in the simulator). Tags and cookies derive from it.
    pub fn new(mut cfg: ProtoConfig, secret: &[u8; 32]) -> Protocol<A> {
        cfg.window = cfg.window.clamp(1, MAX_WINDOW);
        cfg.max_datagram = cfg.max_datagram.max(wire::MAX_OVERHEAD + 64);
        cfg.unsolicited_rate = cfg.unsolicited_rate.max(1);
        if let Some(k) = &cfg.mac {
            // the handshake nonces' random start, from the secret
            let d = blake3::derive_key("ramp job key mac nonce start v1", secret);
            let mut start = [0u8; wire::mac::NONCE_LEN];
            start.copy_from_slice(&d[..wire::mac::NONCE_LEN]);
            cfg.integrity = wire::Integrity::job(k, start);
        }
        let out = Outbox::new(cfg.max_datagram);
        let burst = cfg.unsolicited_burst;
        Protocol {
            unsolicited: TokenBucket::new(cfg.unsolicited_burst),
            cfg,
            secrets: Secrets::new(secret),
            suppressed: 0,
            in_bundle: false,
            closed: ClosedTags::default(),
            shutdowns: 0,
            peers: Vec::new(),
            free: Vec::new(),
            slots: FxHashMap::default(),
            last_slot: usize::MAX,
            aliases: FxHashMap::default(),
            tags: FxHashMap::default(),
            walk_budget: TokenBucket::new(burst),
            tag_walks: 0,
            aliases_learned: 0,
            accepted_aliases: Vec::new(),
            checked_in_place: 0,
            timers: BinaryHeap::new(),
            due: Vec::new(),
            out,
            queued_requests: 0,
            next_msg_id: 1,
            spare_msgs: SpareMsgs::default(),
        }
    }

    /// The configuration (the AM layer bounds its name lookups by the peer timeout).
    pub fn config(&self) -> &ProtoConfig {
        &self.cfg
    }

    pub fn set_recv_depth(&mut self, depth: usize) {
        self.cfg.recv_depth = depth.max(1);
    }

    /// Delivered requests held before the receive buffer refuses more.
    pub fn recv_depth(&self) -> usize {
        self.cfg.recv_depth
    }

    /// The protocol's counters: only its own fields of `Statistics` move.
    pub fn stats(&self) -> &Statistics {
        &self.out.stats
    }

    pub fn reset_stats(&mut self) {
        self.out.stats = Statistics::initial();
    }

    /// Bytes of payload one datagram carries for a message with `nargs` arguments.
    pub fn fragment_capacity(&self, nargs: usize) -> usize {
        self.cfg.fragment_capacity(nargs)
    }

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
        let cut = self.cfg.cut(&meta, payload.len());
        let cap = cut.cap;
        let m = OutMsg {
            id,
            meta,
            payload,
            sums,
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
        push_fragments(&mut peer.tx[ch].pending, msg, cut);
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
    /// starts (`place.rs`). A datagram may carry several packets
    /// (`wire::packets`): each is checked and handled in order, and counted
    /// in `packets_received`; the first that fails its check (or cannot be
    /// framed) is counted in `corrupt_dropped` and ends the datagram (what
    /// follows it cannot be framed); one outside any association is dropped
    /// and counted as alone, and the next one is handled (only the first
    /// packet of a datagram may draw an answer outside an association).
    pub fn handle_datagram_placing(
        &mut self,
        now: Instant,
        from: A,
        dgram: &[u8],
        place: &mut dyn Placement<A>,
    ) {
        self.closed.now = now;
        for (i, framed) in wire::packets(&self.cfg.integrity, dgram).enumerate() {
            self.in_bundle = i > 0;
            self.out.stats.packets_received += 1;
            let ok = match framed {
                Ok(pkt) => self.handle_one(now, from, pkt, place),
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
    fn handle_one(
        &mut self,
        now: Instant,
        from: A,
        bytes: &[u8],
        place: &mut dyn Placement<A>,
    ) -> bool {
        let decoded = match self.cfg.integrity {
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
    fn take_deferred(
        &mut self,
        now: Instant,
        from: A,
        bytes: &[u8],
        place: &mut dyn Placement<A>,
    ) -> Option<bool> {
        let (pkt, check) = wire::decode_deferred(bytes)?;
        let Packet::Data {
            ref common,
            msg_len,
            frag_off,
            payload,
            ..
        } = pkt
        else {
            return None;
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
    fn decode_sealed<'b>(
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
    fn handle_packet(
        &mut self,
        now: Instant,
        from: A,
        pkt: &Packet<'_>,
        place: &mut dyn Placement<A>,
        copied: bool,
    ) {
        let c = match *pkt {
            Packet::Data { ref common, .. }
            | Packet::Ack { ref common, .. }
            | Packet::Nack { ref common, .. } => common,
            Packet::Init { init_tag } => return self.on_init(now, from, init_tag),
            Packet::InitAck {
                vtag,
                resp_tag,
                cookie,
            } => return self.on_init_ack(now, from, vtag, resp_tag, cookie),
            Packet::CookieEcho { vtag, cookie } => {
                return self.on_cookie_echo(now, from, vtag, cookie)
            }
            Packet::CookieAck { vtag } => return self.on_cookie_ack(now, from, vtag),
            Packet::Abort { vtag } => return self.on_abort(from, vtag),
            Packet::Heartbeat { vtag, nonce } => {
                return self.on_heartbeat(now, from, vtag, Some(nonce))
            }
            Packet::HeartbeatAck { vtag, .. } => return self.on_heartbeat(now, from, vtag, None),
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
                Packet::Data { common, .. } => Some(common.vtag),
                _ => None,
            };
            return self.outside_association(now, from, data_vtag);
        };
        let mut learned_floor = None;
        let (peer, mut cx) = self.peer_cx(slot);
        // A packet with our tag: the peer has our COOKIE_ECHO.
        peer.confirm(now, &mut cx);
        peer.hear(now);
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
                    // a copy we resent may have been needless (D-SACK)
                    let before = peer.rtt.floor();
                    peer.tx[ch].needless_copy(seq, &mut peer.rtt);
                    if peer.rtt.floor() > before {
                        learned_floor = Some(peer.rtt.floor());
                    }
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
                    meta,
                    msg_len,
                    frag_off,
                    bytes: payload,
                    copied,
                };
                // the peer had something to say: no shutdown
                peer.resume(now, &mut cx);
                peer.on_data(now, common, f, &mut cx, place);
            }
            _ => {}
        }
        if let Some(floor) = learned_floor {
            // rare (a needless copy answered late): every peer waits as long
            for p in &mut self.peers {
                p.rtt.share_floor(floor);
            }
        }
        self.schedule(slot);
    }

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
    fn run_timers(&mut self, now: Instant) {
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

    /// Writes the next datagram to put on the network into `buf` (replacing
    /// its contents) and returns its destination; None when there is none.
    /// `buf` may come back in another allocation (the protocol keeps the
    /// caller's for its queue rather than copy): no allocation either way
    /// once both have grown.
    #[cfg(any(test, feature = "testing"))] // the simulator; the AM layer drains
    pub fn poll_transmit(&mut self, buf: &mut Vec<u8>) -> Option<A> {
        self.out.pop(buf)
    }

    /// Hands every datagram to put on the network to `each`, in order, in
    /// batches of at most `N` (the small packets to one peer joined into
    /// one datagram, `outbox.rs`) (destination and the datagram's pieces, to be
    /// sent back to back, straight from where they were encoded or lie: no
    /// copy).
    #[inline]
    pub fn drain_transmits<const N: usize>(&mut self, each: impl FnMut(&[(A, [&[u8]; 3])])) {
        self.out.drain_batches::<N>(each)
    }

    /// `drain_transmits`, except the last datagram when it is a bundle of
    /// small packets to `keep` that may take more: it stays for the next
    /// drain (a long message's small last fragment, for the next
    /// message's first to join: `outbox.rs`, `am/batch.rs`). True when
    /// something stayed.
    #[inline]
    pub fn drain_transmits_keeping<const N: usize>(
        &mut self,
        keep: A,
        each: impl FnMut(&[(A, [&[u8]; 3])]),
    ) -> bool {
        self.out.drain_batches_keeping::<N>(keep, each)
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

    /// DATA packets checked where their payload was copied, so far
    /// (`take_deferred`).
    #[cfg(any(test, feature = "testing"))]
    pub fn checked_in_place(&self) -> u64 {
        self.checked_in_place
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
            };
        }
        let mut bytes = self.spare_msgs.bufs.take(payload.len() + room);
        let mut sums = self.spare_msgs.take_sums();
        wire::copy_summed(&mut bytes, payload, &mut sums);
        Payload { bytes, sums }
    }

    /// An empty buffer with room for `len` bytes, for a payload to `send`
    /// that the layer above fills itself: a buffer of an acknowledged
    /// message when there is one.
    #[inline]
    pub fn empty_buffer(&mut self, len: usize) -> Vec<u8> {
        self.spare_msgs.bufs.take(len)
    }

    /// Gives back the payload of a delivered event once the layer above is
    /// done with it: the next received message lands in it.
    #[inline]
    pub fn recycle(&mut self, payload: Vec<u8>) {
        self.out.pool.give(payload)
    }

    #[inline]
    pub fn has_transmits(&self) -> bool {
        self.out.has_transmits()
    }

    /// How many packets wait to be drained.
    #[inline]
    pub fn queued_transmits(&self) -> usize {
        self.out.queued()
    }

    /// The next event for the layer above. Taking a delivered request frees
    /// its place in the receive buffer.
    pub fn poll_event(&mut self) -> Option<Event<A>> {
        let ev = self.out.events.pop_front()?;
        if let Event::Delivered { channel, .. } = &ev {
            if *channel == wire::CHANNEL_REQUEST {
                self.queued_requests -= 1;
            }
        }
        Some(ev)
    }

    /// The events `poll_event` would take, in order, left where they are.
    #[inline]
    pub fn events(&self) -> &VecDeque<Event<A>> {
        &self.out.events
    }

    /// Every queued event at once, as `poll_event` would take them one by
    /// one, swapped into `into` (which holds none): no event is moved. The
    /// delivered requests among them were all `queued_requests` counts.
    #[inline]
    pub fn take_events(&mut self, into: &mut VecDeque<Event<A>>) {
        debug_assert!(into.is_empty());
        debug_assert_eq!(
            self.queued_requests,
            self.out
                .events
                .iter()
                .filter(|ev| matches!(
                    ev,
                    Event::Delivered {
                        channel: wire::CHANNEL_REQUEST,
                        ..
                    }
                ))
                .count()
        );
        self.queued_requests = 0;
        std::mem::swap(&mut self.out.events, into);
    }

    /// A message that came outside the protocol (an express record of a
    /// shared-memory ring, `am/express.rs`), queued as delivered behind the
    /// messages delivered before it. A request is refused (false) while
    /// `limit` requests wait to be taken.
    pub fn push_delivered(&mut self, from: A, channel: u8, meta: MsgMeta, limit: usize) -> bool {
        if channel == wire::CHANNEL_REQUEST {
            if self.queued_requests >= limit {
                return false;
            }
            self.queued_requests += 1;
        }
        self.out.events.push_back(Event::Delivered {
            from,
            channel,
            meta,
            payload: Vec::new(),
        });
        true
    }

    /// Whether nothing of ours to `to` is queued, in flight or
    /// unacknowledged, on either channel: whatever we sent it before now
    /// has been delivered there (`am/express.rs` may bypass us). If so,
    /// the ACKs we owe it are sent now (the caller transmits them first):
    /// a peer that sends us messages outside the protocol would otherwise
    /// see its own ones unacknowledged for the ACK delay, and never quiet.
    pub fn express_ready(&mut self, to: &A) -> bool {
        let Some(s) = self.find_peer(to) else {
            return true;
        };
        let p = &self.peers[s];
        if p.tx
            .iter()
            .any(|t| !t.in_flight.is_empty() || !t.pending.is_empty())
        {
            return false;
        }
        // (the context made only when an ACK is owed: the usual look
        // makes none)
        if p.assoc.state == AssocState::Established
            && p.rx.iter().any(|r| r.ack_owed_since.is_some())
        {
            let (p, mut cx) = self.peer_cx(s);
            for ch in 0..NUM_CHANNELS {
                if p.rx[ch].ack_owed_since.is_some() {
                    p.send_ack(ch, &mut cx);
                }
            }
        }
        true
    }

    /// The event `poll_event` would take next, left where it is.
    pub fn peek_event(&self) -> Option<&Event<A>> {
        self.out.events.front()
    }

    #[cfg(any(test, feature = "testing"))] // the AM layer drains events in order (am/rma_target.rs)
    pub fn has_events(&self) -> bool {
        !self.out.events.is_empty()
    }

    /// The peer in `slot`, and what it shares with the others.
    fn peer_cx(&mut self, slot: usize) -> (&mut Peer<A>, Ctx<'_, A>) {
        let cx = Ctx {
            cfg: &self.cfg,
            out: &mut self.out,
            spare_msgs: &mut self.spare_msgs,
            queued_requests: &mut self.queued_requests,
            closed: &mut self.closed,
        };
        (&mut self.peers[slot], cx)
    }

    /// The slot of the peer at `addr`, if it has one. The peer of the last
    /// look-up is checked first (a ping-pong talks to one peer).
    #[inline]
    fn find_peer(&mut self, addr: &A) -> Option<usize> {
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
    fn find_peer_mapped(&mut self, addr: &A) -> Option<usize> {
        let s = match self.slots.get(addr) {
            Some(&s) => s,
            None if self.aliases.is_empty() => return None,
            None => *self.aliases.get(addr)?,
        } as usize;
        self.last_slot = s;
        Some(s)
    }

    /// The slot of the peer at `addr`, created on first contact (in a
    /// freed slot if there is one).
    #[inline]
    fn peer_entry(&mut self, addr: A) -> usize {
        match self.find_peer(&addr) {
            // (not a peer's alias: a peer of its own is made there)
            Some(s) if self.peers[s].addr == addr => s,
            _ => self.new_peer(addr),
        }
    }

    /// A slot for `addr`, which has none.
    #[inline(never)]
    fn new_peer(&mut self, addr: A) -> usize {
        self.take_back_alias(&addr);
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
    fn free_slot(&mut self, slot: usize) {
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
    fn compact(&mut self) {
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

    /// Makes sure `handle_timeout` looks at the peer in `slot` by the
    /// earliest time any of its timers was set to since it was last
    /// scheduled (if that timer moved since, the look finds nothing to do
    /// and `handle_timeout` schedules it exactly).
    #[inline]
    fn schedule(&mut self, slot: usize) {
        let peer = &mut self.peers[slot];
        if let Some(at) = peer.timers.take_wake() {
            self.queue(slot, at);
        }
    }

    fn queue(&mut self, slot: usize, at: Instant) {
        let peer = &mut self.peers[slot];
        if peer.queued.is_none_or(|q| at < q) {
            peer.queued = Some(at);
            self.timers.push(Reverse((at, slot as u32)));
        }
    }
}
