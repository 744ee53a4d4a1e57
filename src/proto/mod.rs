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
//! The state lives beside its behaviour: a send channel (`send`) and a
//! receive channel (`recv`) per direction and channel, a `peer` joining them
//! with its timers (`timer`); this module only dispatches datagrams to peers,
//! runs the peers' timers and hands out what the `outbox` collected.

pub mod config;
pub mod event;
mod outbox;
mod peer;
mod recv;
pub mod rtt;
mod send;
mod stats;
#[cfg(test)]
mod tests;
mod timer;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hash::Hash;
use std::sync::Arc;

pub use config::{ProtoConfig, MAX_WINDOW};
pub use event::{Event, FailReason, MsgId};

use crate::fxhash::FxHashMap;
use crate::stats::Statistics;
use crate::time::Instant;
use crate::wire::{self, Common, MsgMeta, Packet, NUM_CHANNELS};
use outbox::Outbox;
use peer::{Ctx, Peer};
use recv::InFrag;
use send::{push_fragments, MsgRef, OutMsg, SpareMsgs};

/// The largest message (payload bytes) a receiver reassembles.
pub const MAX_MESSAGE: usize = 1 << 20;

/// Addresses of peers: any small copyable key (a socket address, a simulated node).
pub trait PeerAddr: Copy + Eq + Hash + std::fmt::Debug {}
impl<T: Copy + Eq + Hash + std::fmt::Debug> PeerAddr for T {}

/// The reliable protocol state of one endpoint.
pub struct Protocol<A: PeerAddr> {
    cfg: ProtoConfig,
    local_id: u32,
    /// Every peer, by slot (peers are never removed).
    peers: Vec<Peer<A>>,
    /// The slot of each peer's address: one lookup per datagram or message.
    slots: FxHashMap<A, u32>,
    /// The slot of the last peer looked up (checked before `slots`).
    last_slot: usize,
    /// Peers with a timer set, by when to look at them (the earliest of
    /// their timers, or before) then slot: `handle_timeout` costs O(log n)
    /// per due peer, not a walk over all of them, and serves them in a fixed
    /// order (same inputs, same outputs). An entry whose time is not its
    /// peer's `queued` is stale and skipped.
    timers: BinaryHeap<Reverse<(Instant, u32)>>,
    /// Slots due in the current `handle_timeout` (kept to avoid allocating).
    due: Vec<u32>,
    out: Outbox<A>,
    /// Delivered requests not yet taken by `poll_event` (the receive buffer).
    queued_requests: usize,
    next_msg_id: MsgId,
    /// Boxes of acknowledged one-fragment messages, reused by `send`.
    spare_msgs: SpareMsgs,
}

impl<A: PeerAddr> Protocol<A> {
    /// `local_id` identifies this incarnation of the endpoint on the wire (non-zero).
    pub fn new(mut cfg: ProtoConfig, local_id: u32) -> Protocol<A> {
        cfg.window = cfg.window.clamp(1, MAX_WINDOW);
        cfg.max_datagram = cfg.max_datagram.max(wire::MAX_OVERHEAD + 64);
        Protocol {
            cfg,
            local_id,
            peers: Vec::new(),
            slots: FxHashMap::default(),
            last_slot: usize::MAX,
            timers: BinaryHeap::new(),
            due: Vec::new(),
            out: Outbox::new(),
            queued_requests: 0,
            next_msg_id: 1,
            spare_msgs: Vec::new(),
        }
    }

    #[cfg(any(test, feature = "testing"))] // inspection for tests and the simulator
    pub fn config(&self) -> &ProtoConfig {
        &self.cfg
    }

    pub fn set_recv_depth(&mut self, depth: usize) {
        self.cfg.recv_depth = depth.max(1);
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
        payload: Vec<u8>,
    ) -> MsgId {
        debug_assert!((channel as usize) < NUM_CHANNELS);
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
        let cap = self.fragment_capacity(meta.nargs as usize);
        let m = OutMsg { id, meta, payload };
        let msg = if m.payload.len() <= cap {
            MsgRef::one(m, &mut self.spare_msgs)
        } else {
            MsgRef::Shared(Arc::new(m))
        };
        let slot = self.peer_entry(to);
        let ch = channel as usize & 1;
        let (peer, mut cx) = self.peer_cx(slot);
        push_fragments(&mut peer.tx[ch].pending, msg, cap);
        peer.pump(now, ch, &mut cx);
        self.schedule(slot);
        id
    }

    /// Counts a datagram the transport could not read whole.
    pub fn count_malformed(&mut self) {
        self.out.stats.packets_received += 1;
        self.out.stats.corrupt_dropped += 1;
    }

    /// Takes one datagram received from `from`.
    pub fn handle_datagram(&mut self, now: Instant, from: A, dgram: &[u8]) {
        self.out.stats.packets_received += 1;
        match wire::decode(dgram) {
            // By reference: the parsed packet (~170 bytes) is not copied.
            Ok(ref pkt) => self.handle_packet(now, from, pkt),
            Err(_) => self.out.stats.corrupt_dropped += 1,
        }
    }

    fn handle_packet(&mut self, now: Instant, from: A, pkt: &Packet<'_>) {
        let c = pkt.common();
        let known = self.find_peer(&from);
        if known.is_some_and(|s| self.peers[s].is_retired(c.src_id)) {
            // A late datagram of a process that has since restarted.
            self.out.stats.stale_dropped += 1;
            return;
        }
        if c.dst_id != 0 && c.dst_id != self.local_id {
            self.out.stats.stale_dropped += 1;
            if matches!(pkt, Packet::Data { .. }) {
                self.answer_stale(from, known, c);
            }
            return;
        }
        let slot = match known {
            Some(s) => s,
            None => self.peer_entry(from),
        };
        let (peer, mut cx) = self.peer_cx(slot);
        peer.note_incarnation(c.src_id, cx.out);
        for ch in 0..NUM_CHANNELS {
            let a = c.acks[ch];
            if a.valid {
                peer.on_ack(now, ch, (a.epoch, a.next, 0), &mut cx);
            }
        }
        match *pkt {
            Packet::Ack { ref common, sack } => {
                cx.out.stats.acks_received += 1;
                let ch = common.channel as usize;
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
                };
                peer.on_data(now, common, f, &mut cx);
            }
        }
        self.schedule(slot);
    }

    /// Runs the timers due at `now`: retransmissions, delayed ACKs, the end of
    /// a NACK pause. Cheap when nothing is due.
    pub fn handle_timeout(&mut self, now: Instant) {
        // The peers due now, each once; what they arm now waits for the next call.
        let mut due = std::mem::take(&mut self.due);
        due.clear();
        while let Some(&Reverse((t, slot))) = self.timers.peek() {
            if t > now {
                break;
            }
            self.timers.pop();
            let peer = &mut self.peers[slot as usize];
            if peer.queued == Some(t) {
                peer.queued = None;
                due.push(slot);
            }
        }
        for &slot in &due {
            let slot = slot as usize;
            let (peer, mut cx) = self.peer_cx(slot);
            peer.on_timeout(now, &mut cx);
            peer.timers.take_wake();
            if let Some(at) = peer.timers.next() {
                self.queue(slot, at);
            }
        }
        self.due = due;
        // Drop stale entries on top, so that `next_timeout` is exact.
        while let Some(&Reverse((t, slot))) = self.timers.peek() {
            if self.peers[slot as usize].queued == Some(t) {
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
    pub fn poll_transmit(&mut self, buf: &mut Vec<u8>) -> Option<A> {
        self.out.pop(buf)
    }

    #[inline]
    pub fn has_transmits(&self) -> bool {
        self.out.has_transmits()
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

    pub fn has_events(&self) -> bool {
        !self.out.events.is_empty()
    }

    /// Nothing in flight, nothing pending, no ACK owed.
    #[cfg(any(test, feature = "testing"))] // inspection for tests and the simulator
    pub fn is_idle(&self) -> bool {
        self.peers.iter().all(Peer::is_idle)
    }

    /// Number of peers with protocol state.
    #[cfg(any(test, feature = "testing"))] // inspection for tests and the simulator
    pub fn peer_count(&self) -> usize {
        self.peers.len()
    }

    /// Messages queued or in flight to `to`.
    #[cfg(any(test, feature = "testing"))] // inspection for tests and the simulator
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

    /// The peer in `slot`, and what it shares with the others.
    fn peer_cx(&mut self, slot: usize) -> (&mut Peer<A>, Ctx<'_, A>) {
        let cx = Ctx {
            cfg: &self.cfg,
            local_id: self.local_id,
            out: &mut self.out,
            spare_msgs: &mut self.spare_msgs,
            queued_requests: &mut self.queued_requests,
        };
        (&mut self.peers[slot], cx)
    }

    /// The slot of the peer at `addr`, if it has one. The peer of the last
    /// look-up is checked first (a ping-pong talks to one peer).
    fn find_peer(&mut self, addr: &A) -> Option<usize> {
        if self
            .peers
            .get(self.last_slot)
            .is_some_and(|p| p.addr == *addr)
        {
            return Some(self.last_slot);
        }
        let s = *self.slots.get(addr)? as usize;
        self.last_slot = s;
        Some(s)
    }

    /// The slot of the peer at `addr`, created on first contact.
    fn peer_entry(&mut self, addr: A) -> usize {
        if let Some(s) = self.find_peer(&addr) {
            return s;
        }
        let slot = self.peers.len();
        self.peers.push(Peer::new(&self.cfg, addr));
        self.slots.insert(addr, slot as u32);
        self.last_slot = slot;
        slot
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

    /// DATA addressed to an earlier incarnation of this endpoint: this process
    /// restarted and the sender does not know yet. An ACK carrying our id
    /// tells it, so that it gives up what it sent the old process at once and
    /// talks to this one (which may never send to it first).
    fn answer_stale(&mut self, to: A, slot: Option<usize>, c: &Common) {
        let ch = c.channel as usize;
        if let Some(s) = slot {
            let peer = &mut self.peers[s];
            if peer.remote_id == c.src_id {
                // We know this sender: a true ACK of what we hold.
                peer.send_ack(ch, self.local_id, &mut self.out);
                return;
            }
        }
        // An ACK of nothing: epoch 0, next 0 acknowledges no packet.
        let reply = Common {
            src_id: self.local_id,
            dst_id: c.src_id,
            channel: c.channel,
            ..Default::default()
        };
        let start = self.out.start();
        wire::encode_ack(&mut self.out.bytes, &reply, 0);
        self.out.stats.acks_sent += 1;
        self.out.push(to, start);
    }
}
