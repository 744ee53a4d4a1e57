//! The sans-IO reliable protocol core.
//!
//! One `Protocol` serves one endpoint and all its peers. It reads no clock and
//! owns no socket: the caller feeds datagrams (`handle_datagram`) and the time
//! (`handle_timeout`), queues messages (`send`), then drains the datagrams to
//! transmit (`poll_transmit`, into the caller's buffer) and the events for the layer above (`poll_event`).
//!
//! Per (peer, channel) it keeps sequence numbers, cumulative and selective
//! acknowledgements (piggybacked on DATA when possible, delayed otherwise),
//! NACK with go-back-N when the receiver has no buffer, retransmission timeouts
//! from a smoothed RTT with backoff, and duplicate suppression, so that each
//! message is delivered exactly once and in order on its channel, or reported
//! as failed.

pub mod config;
pub mod event;
mod recv;
pub mod rtt;
mod send;
pub mod stats;
#[cfg(test)]
mod tests;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::hash::Hash;
use std::sync::Arc;

pub use config::{ProtoConfig, MAX_WINDOW};
pub use event::{Event, FailReason, MsgId};
pub use stats::ProtoStats;

use crate::fxhash::FxHashMap;

use crate::time::Instant;
use crate::wire::{self, AckField, MsgMeta, Packet, CRC_LEN, DATA_HEADER_LEN, NUM_CHANNELS};
use recv::{HeldPacket, Reassembly, RecvChannel};
use rtt::RttEstimator;
use send::{seq_diff, Fragment, InFlight, MsgRef, OutMsg, SendChannel, SpareMsgs};
use wire::Common;

/// Retransmission allowance per byte sent ahead in the same burst (2 ns per
/// byte: a receiver that takes in 500 MB/s).
const BURST_NS_PER_BYTE: u64 = 2;

/// The largest message (payload bytes) a receiver reassembles.
pub const MAX_MESSAGE: usize = 1 << 20;

/// Addresses of peers: any small copyable key (a socket address, a simulated node).
pub trait PeerAddr: Copy + Eq + Hash + std::fmt::Debug {}
impl<T: Copy + Eq + Hash + std::fmt::Debug> PeerAddr for T {}

/// Earlier incarnations of a peer remembered, so that their late datagrams
/// are recognised as stale rather than as yet another restart.
const RETIRED_IDS: usize = 4;

struct Peer<A> {
    addr: A,
    /// Index of this peer in `Protocol::peers`.
    slot: u32,
    /// The deadline this peer has in `Protocol::timers` (None: not queued).
    timer: Option<Instant>,
    remote_id: u32,
    /// Ids of the peer's earlier incarnations, most recent first (0: none).
    retired_ids: [u32; RETIRED_IDS],
    tx: [SendChannel; NUM_CHANNELS],
    rx: [RecvChannel; NUM_CHANNELS],
    rtt: RttEstimator,
}

impl<A> Peer<A> {
    fn new(cfg: &ProtoConfig, addr: A, slot: u32) -> Peer<A> {
        Peer {
            addr,
            slot,
            timer: None,
            remote_id: 0,
            retired_ids: [0; RETIRED_IDS],
            tx: Default::default(),
            rx: Default::default(),
            rtt: RttEstimator::new(cfg.rto_initial, cfg.rto_min, cfg.rto_max),
        }
    }

    fn piggyback(&self) -> [AckField; NUM_CHANNELS] {
        let f = |r: &RecvChannel| AckField {
            valid: r.known,
            epoch: r.epoch,
            next: r.next,
        };
        [f(&self.rx[0]), f(&self.rx[1])]
    }

    /// A packet carrying the cumulative acks went out: what is owed is paid,
    /// unless a SACK is needed too.
    fn acks_carried(&mut self) {
        for r in self.rx.iter_mut() {
            if r.held.is_empty() {
                r.ack_owed_since = None;
                r.ack_urgent = false;
            }
        }
    }

    fn is_idle(&self) -> bool {
        self.tx
            .iter()
            .all(|t| t.is_idle() && t.paused_until.is_none())
            && self.rx.iter().all(|r| r.ack_owed_since.is_none())
    }
}

/// Datagrams and events on their way out, and the counters.
struct Outbox<A> {
    /// Encoded datagrams back to back, the next one to go at `head`. Emptied
    /// (keeping its capacity) whenever the last one is taken: no allocation
    /// per datagram.
    bytes: Vec<u8>,
    head: usize,
    /// The destination and length of each datagram in `bytes`, in order.
    transmits: VecDeque<(A, u32)>,
    events: VecDeque<Event<A>>,
    stats: ProtoStats,
}

impl<A> Outbox<A> {
    /// Queues the datagram encoded at `bytes[start..]` for `to`.
    fn push(&mut self, to: A, start: usize) {
        let len = self.bytes.len() - start;
        self.stats.packets_sent += 1;
        self.stats.total_bytes_sent += len as u64;
        self.transmits.push_back((to, len as u32));
    }

    /// Copies the next datagram into `buf` (replacing its contents).
    fn pop(&mut self, buf: &mut Vec<u8>) -> Option<A> {
        let (to, len) = self.transmits.pop_front()?;
        let end = self.head + len as usize;
        buf.clear();
        buf.extend_from_slice(&self.bytes[self.head..end]);
        if self.transmits.is_empty() {
            self.bytes.clear();
            self.head = 0;
        } else {
            self.head = end;
        }
        Some(to)
    }
}

/// The reliable protocol state of one endpoint.
pub struct Protocol<A: PeerAddr> {
    cfg: ProtoConfig,
    local_id: u32,
    /// Every peer, by `Peer::slot` (peers are never removed).
    peers: Vec<Peer<A>>,
    /// The slot of each peer's address: one lookup per datagram or message.
    slots: FxHashMap<A, u32>,
    /// The slot of the last peer looked up (checked before `slots`).
    last_slot: usize,
    /// Peers with a timer running (packets in flight, an ACK owed, a pause),
    /// by deadline then slot: `handle_timeout` costs O(log n) per due peer,
    /// not a walk over all of them, and serves them in a fixed order (same
    /// inputs, same outputs). An entry whose time is not its peer's `timer`
    /// is stale and skipped.
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
            out: Outbox {
                bytes: Vec::new(),
                head: 0,
                transmits: VecDeque::new(),
                events: VecDeque::new(),
                stats: ProtoStats::new(),
            },
            queued_requests: 0,
            next_msg_id: 1,
            spare_msgs: Vec::new(),
        }
    }

    pub fn config(&self) -> &ProtoConfig {
        &self.cfg
    }

    pub fn set_recv_depth(&mut self, depth: usize) {
        self.cfg.recv_depth = depth.max(1);
    }

    pub fn set_window(&mut self, window: usize) {
        self.cfg.window = window.clamp(1, MAX_WINDOW);
    }

    pub fn local_id(&self) -> u32 {
        self.local_id
    }

    pub fn stats(&self) -> &ProtoStats {
        &self.out.stats
    }

    pub fn reset_stats(&mut self) {
        self.out.stats = ProtoStats::new();
    }

    /// Bytes of payload one datagram carries for a message with `nargs` arguments.
    pub fn fragment_capacity(&self, nargs: usize) -> usize {
        self.cfg.max_datagram - DATA_HEADER_LEN - 4 * nargs - CRC_LEN
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
        push_fragments(&mut self.peers[slot].tx[ch].pending, msg, cap);
        self.pump(now, slot, ch);
        id
    }

    /// Counts a datagram the transport could not read whole.
    pub fn count_malformed(&mut self) {
        self.out.stats.packets_received += 1;
        self.out.stats.corrupt += 1;
    }

    /// Takes one datagram received from `from`.
    pub fn handle_datagram(&mut self, now: Instant, from: A, dgram: &[u8]) {
        self.out.stats.packets_received += 1;
        match wire::decode(dgram) {
            // By reference: the parsed packet (~170 bytes) is not copied.
            Ok(ref pkt) => self.handle_packet(now, from, pkt),
            Err(_) => self.out.stats.corrupt += 1,
        }
    }

    fn handle_packet(&mut self, now: Instant, from: A, pkt: &Packet<'_>) {
        let c = pkt.common();
        let known = self.find_peer(&from);
        let retired =
            known.is_some_and(|s| c.src_id != 0 && self.peers[s].retired_ids.contains(&c.src_id));
        if retired {
            // A late datagram of a process that has since restarted.
            self.out.stats.stale += 1;
            return;
        }
        if c.dst_id != 0 && c.dst_id != self.local_id {
            self.out.stats.stale += 1;
            if matches!(pkt, Packet::Data { .. }) {
                self.answer_stale(from, known, c);
            }
            return;
        }
        let slot = match known {
            Some(s) => s,
            None => self.peer_entry(from),
        };
        self.note_incarnation(slot, c.src_id);
        for ch in 0..NUM_CHANNELS {
            let a = c.acks[ch];
            if a.valid {
                self.on_ack(now, slot, ch, a.epoch, a.next, 0);
            }
        }
        match *pkt {
            Packet::Ack { ref common, sack } => {
                self.out.stats.acks_received += 1;
                self.on_ack(
                    now,
                    slot,
                    common.channel as usize,
                    common.epoch,
                    common.seq,
                    sack,
                );
            }
            Packet::Nack { ref common, last } => {
                self.out.stats.nacks_received += 1;
                let ch = common.channel as usize;
                self.on_nack(now, slot, ch, common.epoch, common.seq, last);
            }
            Packet::Data {
                ref common,
                ref meta,
                msg_len,
                frag_off,
                payload,
            } => self.on_data(now, slot, common, meta, msg_len, frag_off, payload),
        }
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
            if peer.timer == Some(t) {
                peer.timer = None;
                due.push(slot);
            }
        }
        for &slot in &due {
            let slot = slot as usize;
            let mut unreachable = false;
            for ch in 0..NUM_CHANNELS {
                let peer = &mut self.peers[slot];
                let tx = &mut peer.tx[ch];
                if let Some(t) = tx.paused_until {
                    if now >= t {
                        tx.paused_until = None;
                    }
                }
                let mut timed_out = false;
                if tx.paused_until.is_none() {
                    // The oldest packet is timed even when SACKed: a receiver
                    // that refused it (NACK) dropped it, and the NACK may be lost.
                    for (i, p) in tx.in_flight.iter_mut().enumerate() {
                        if (!p.sacked || i == 0) && !p.resend && p.deadline <= now {
                            p.sacked = false;
                            p.resend = true;
                            if p.reorder_timer {
                                // lost, by the reordering rule: no backoff
                                continue;
                            }
                            p.retries += 1;
                            timed_out = true;
                            if p.retries > self.cfg.retry_limit {
                                unreachable = true;
                            }
                        }
                    }
                }
                if timed_out {
                    peer.rtt.on_timeout();
                }
                if unreachable {
                    break;
                }
                self.pump(now, slot, ch);
            }
            if unreachable {
                self.fail_peer(slot, FailReason::PeerUnreachable);
            }
            let peer = &mut self.peers[slot];
            for ch in 0..NUM_CHANNELS {
                if let Some(t0) = peer.rx[ch].ack_owed_since {
                    let due = t0.plus(self.cfg.ack_delay);
                    if peer.rx[ch].ack_urgent || now >= due {
                        send_ack(&mut self.out, self.local_id, peer, ch);
                    }
                }
            }
            if let Some(d) = peer_deadline(&self.peers[slot], &self.cfg) {
                self.arm(slot, d);
            }
        }
        self.due = due;
        // Drop stale entries on top, so that `next_timeout` is exact.
        while let Some(&Reverse((t, slot))) = self.timers.peek() {
            if self.peers[slot as usize].timer == Some(t) {
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
    pub fn poll_transmit(&mut self, buf: &mut Vec<u8>) -> Option<A> {
        self.out.pop(buf)
    }

    #[inline]
    pub fn has_transmits(&self) -> bool {
        !self.out.transmits.is_empty()
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
    pub fn is_idle(&self) -> bool {
        self.peers.iter().all(Peer::is_idle)
    }

    /// Number of peers with protocol state.
    pub fn peer_count(&self) -> usize {
        self.peers.len()
    }

    /// Messages queued or in flight to `to`.
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
        self.peers.push(Peer::new(&self.cfg, addr, slot as u32));
        self.slots.insert(addr, slot as u32);
        self.last_slot = slot;
        slot
    }

    /// Makes sure `handle_timeout` looks at this peer at `at` or before.
    fn arm(&mut self, slot: usize, at: Instant) {
        let peer = &mut self.peers[slot];
        if peer.timer.is_some_and(|t| t <= at) {
            return;
        }
        peer.timer = Some(at);
        self.timers.push(Reverse((at, peer.slot)));
    }

    fn note_incarnation(&mut self, slot: usize, src_id: u32) {
        let peer = &mut self.peers[slot];
        if peer.remote_id == src_id {
            return;
        }
        let restarted = peer.remote_id != 0;
        if restarted {
            peer.retired_ids.rotate_right(1);
            peer.retired_ids[0] = peer.remote_id;
        }
        peer.remote_id = src_id;
        if restarted {
            // A new process sits at this address: what we held for the old
            // one is void, and what we sent it cannot be finished.
            peer.rx = Default::default();
            self.fail_peer(slot, FailReason::PeerUnreachable);
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
                send_ack(&mut self.out, self.local_id, peer, ch);
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
        let start = self.out.bytes.len();
        wire::encode_ack(&mut self.out.bytes, &reply, 0);
        self.out.stats.acks_sent += 1;
        self.out.push(to, start);
    }

    /// Sends what the channel may send now: packets marked for resending,
    /// then new fragments while the window allows.
    fn pump(&mut self, now: Instant, slot: usize, ch: usize) {
        let peer = &mut self.peers[slot];
        let addr = peer.addr;
        if let Some(t) = peer.tx[ch].paused_until {
            self.arm(slot, t);
            return;
        }
        let tx = &peer.tx[ch];
        if tx.pending.is_empty() && !tx.in_flight.iter().any(|p| p.resend) {
            // Nothing to send (the usual case after an ACK).
            return;
        }
        let rto = peer.rtt.rto();
        // Tail-loss probe (after RFC 8985 TLP): the last packet of what goes
        // out now is resent once, without backoff, if no ACK came within
        // about two round trips plus twice the receiver's ACK delay (a delayed
        // ACK goes out when the receiver next polls) — a lost last
        // packet has no later one whose SACK would reveal the loss, and would
        // otherwise wait a whole retransmission timeout.
        let probe_after = peer
            .rtt
            .srtt()
            .map(|srtt| (2 * srtt).max(srtt + 4 * peer.rtt.rttvar()) + 2 * self.cfg.ack_delay);
        let mut sent_any = false;
        let mut first_deadline: Option<Instant> = None;
        let window = self.cfg.window;
        let local_id = self.local_id;
        let acks = peer.piggyback();
        let common_base = Common {
            src_id: local_id,
            dst_id: peer.remote_id,
            channel: ch as u8,
            epoch: peer.tx[ch].epoch,
            seq: 0,
            acks,
        };
        let tx = &mut peer.tx[ch];
        for p in tx.in_flight.iter_mut().filter(|p| p.resend) {
            p.resend = false;
            p.reorder_timer = false;
            p.last_sent = now;
            p.deadline = now.plus(rto);
            let cat = p.frag.msg.meta.category.index();
            self.out.stats.retransmits[ch][cat] += 1;
            let c = Common {
                seq: p.seq,
                ..common_base
            };
            let start = encode_fragment(&mut self.out, &c, &p.frag);
            self.out.push(addr, start);
            sent_any = true;
            first_deadline.get_or_insert(p.deadline);
        }
        let mut burst_bytes = 0u64;
        let mut new_sent = false;
        while tx.in_flight.len() < window {
            let Some(frag) = tx.pending.pop_front() else {
                break;
            };
            let seq = tx.next_seq;
            tx.next_seq = tx.next_seq.wrapping_add(1);
            let c = Common { seq, ..common_base };
            let start = encode_fragment(&mut self.out, &c, &frag);
            let cat = frag.msg.meta.category.index();
            let b_len = self.out.bytes.len() - start;
            self.out.stats.data_bytes_on_wire[ch][cat] += b_len as u64;
            self.out.push(addr, start);
            // A burst takes time to leave and to be taken in at the other
            // end: each packet's timer allows for the bytes sent before it
            // in this burst, so a large message is not resent while its
            // tail is still being handled.
            let deadline = now.plus(rto + burst_bytes * BURST_NS_PER_BYTE);
            burst_bytes += b_len as u64;
            tx.in_flight.push_back(InFlight {
                seq,
                frag,
                first_sent: now,
                last_sent: now,
                deadline,
                retries: 0,
                nacks: 0,
                sacked: false,
                resend: false,
                reorder_timer: false,
            });
            sent_any = true;
            new_sent = true;
            first_deadline.get_or_insert(deadline);
        }
        let last_new = if new_sent {
            tx.in_flight.back_mut()
        } else {
            None
        };
        if let (Some(last), Some(pto)) = (last_new, probe_after) {
            let probe = last.first_sent.plus(pto + burst_bytes * BURST_NS_PER_BYTE);
            if probe < last.deadline {
                last.deadline = probe;
                last.reorder_timer = true;
                first_deadline = Some(first_deadline.map_or(probe, |d| d.min(probe)));
            }
        }
        if sent_any {
            peer.acks_carried();
        }
        if let Some(d) = first_deadline {
            self.arm(slot, d);
        }
    }

    fn on_ack(&mut self, now: Instant, slot: usize, ch: usize, epoch: u16, next: u32, sack: u64) {
        let peer = &mut self.peers[slot];
        let tx = &mut peer.tx[ch];
        if epoch != tx.epoch || seq_diff(next, tx.next_seq) > 0 {
            return;
        }
        if sack == 0 && !tx.acks_any(next) {
            // Nothing new (the usual piggybacked ACK): nothing changes.
            return;
        }
        // One round-trip sample per ACK, from the newest packet it acknowledges
        // for the first time (as TCP does).
        let done = tx.ack_cumulative(next, &mut self.spare_msgs);
        let sacked = tx.ack_selective(next, sack);
        let sample_from = sacked.sample_from.or(done.sample_from);
        if done.count > 0 || sacked.newly_sacked {
            peer.rtt.on_progress();
        }
        if let Some(t) = sample_from {
            let r = now.since(t);
            peer.rtt.sample(r);
            self.out.stats.rtt_sample(r);
        }
        let tx = &mut peer.tx[ch];
        if let Some(highest) = sacked.highest {
            // Fast retransmit (after RACK, RFC 8985): a packet sent later
            // arrived, an earlier one did not. It is lost if it was sent
            // more than a reordering window before; else it is lost if its
            // ACK is not back one round trip (that of the later packet) plus
            // the window after it was sent.
            let arrived_sent = tx
                .in_flight
                .iter()
                .find(|p| p.seq == highest)
                .map_or(now, |p| p.first_sent);
            let rtt = now.since(arrived_sent);
            let reo_wnd = match peer.rtt.srtt() {
                Some(srtt) => (srtt / 2).max(4 * peer.rtt.rttvar()),
                None => rtt,
            };
            let mut timer = None;
            for p in tx.in_flight.iter_mut() {
                if seq_diff(p.seq, highest) >= 0 {
                    break;
                }
                if p.sacked || p.resend {
                    continue;
                }
                let lost_at = p.last_sent.plus(rtt + reo_wnd);
                if lost_at <= now {
                    p.resend = true;
                } else if lost_at < p.deadline {
                    p.deadline = lost_at;
                    p.reorder_timer = true;
                    timer = Some(timer.map_or(lost_at, |t: Instant| t.min(lost_at)));
                }
            }
            if let Some(t) = timer {
                self.arm(slot, t);
            }
        }
        if done.count > 0 || sack != 0 {
            self.pump(now, slot, ch);
        }
    }

    fn on_nack(&mut self, now: Instant, slot: usize, ch: usize, epoch: u16, seq: u32, last: bool) {
        // Everything before the refused packet has arrived.
        self.on_ack(now, slot, ch, epoch, seq, 0);
        let peer = &mut self.peers[slot];
        let tx = &mut peer.tx[ch];
        if epoch != tx.epoch {
            return;
        }
        let Some(front) = tx.in_flight.front_mut() else {
            return;
        };
        if front.seq != seq {
            return;
        }
        front.nacks += 1;
        // A SACK for it is void: the receiver dropped it.
        front.sacked = false;
        // The receiver counts its refusals and says when it gives up: only
        // then is it sure never to deliver the message (the sender cannot
        // count: a NACK may be duplicated, or overtake the ACK of a copy
        // the receiver took after all).
        if last {
            let id = front.frag.msg.id;
            self.fail_message(now, slot, ch, id, FailReason::Refused);
            return;
        }
        // Go back to the refused packet: resend it and all after it that the
        // receiver does not hold, after a pause.
        for p in tx.in_flight.iter_mut() {
            if !p.sacked {
                p.resend = true;
            }
        }
        let until = now.plus(self.cfg.nack_backoff);
        tx.paused_until = Some(until);
        self.arm(slot, until);
    }

    #[allow(clippy::too_many_arguments)]
    fn on_data(
        &mut self,
        now: Instant,
        slot: usize,
        c: &Common,
        meta: &MsgMeta,
        msg_len: u32,
        frag_off: u32,
        payload: &[u8],
    ) {
        let ch = c.channel as usize;
        let rx = &mut self.peers[slot].rx[ch];
        if !rx.accept_epoch(c.epoch) {
            self.out.stats.stale += 1;
            return;
        }
        let d = seq_diff(c.seq, rx.next);
        if d < 0 || rx.held.contains_key(&c.seq) {
            self.out.stats.duplicates += 1;
            rx.owe_ack(now, true);
            self.arm(slot, now);
            return;
        }
        if d > MAX_WINDOW as i32 {
            self.out.stats.stale += 1;
            return;
        }
        if d > 0 {
            self.out.stats.out_of_order[ch] += 1;
            rx.held.insert(
                c.seq,
                HeldPacket {
                    meta: *meta,
                    msg_len,
                    frag_off,
                    payload: payload.to_vec(),
                },
            );
            rx.owe_ack(now, true);
            self.arm(slot, now);
            return;
        }
        // In order: take it, then whatever was held behind it. When it
        // fills a gap, the sender is waiting to hear: ACK at once.
        let filled_gap = !rx.held.is_empty();
        let first = InFrag {
            meta,
            msg_len,
            frag_off,
            bytes: payload,
        };
        if self.take_in_order(now, slot, ch, filled_gap, first) && filled_gap {
            loop {
                let rx = &mut self.peers[slot].rx[ch];
                let next = rx.next;
                let Some(h) = rx.held.remove(&next) else {
                    break;
                };
                let f = InFrag {
                    meta: &h.meta,
                    msg_len: h.msg_len,
                    frag_off: h.frag_off,
                    bytes: &h.payload,
                };
                if !self.take_in_order(now, slot, ch, filled_gap, f) {
                    break;
                }
            }
        }
        let t = if filled_gap {
            now
        } else {
            now.plus(self.cfg.ack_delay)
        };
        self.arm(slot, t);
    }

    /// Takes packet `next` of channel `ch` of the peer in `slot`, unless the
    /// receive buffer is full (then it is dropped and NACKed). Returns
    /// whether it was taken.
    fn take_in_order(
        &mut self,
        now: Instant,
        slot: usize,
        ch: usize,
        filled_gap: bool,
        f: InFrag<'_>,
    ) -> bool {
        let peer = &mut self.peers[slot];
        let limit = self.cfg.nack_limit;
        let refuse = ch == wire::CHANNEL_REQUEST as usize
            && f.frag_off == 0
            && (self.queued_requests >= self.cfg.recv_depth || peer.rx[ch].given_up(limit));
        if refuse {
            // Dropped, even if it was held (and SACKed): the NACK tells
            // the sender to go back to it and send it again, or, past
            // the limit, to give it up.
            let last = peer.rx[ch].refuse() > limit;
            send_nack(&mut self.out, self.local_id, peer, ch, last);
            return false;
        }
        let from = peer.addr;
        let rx = &mut peer.rx[ch];
        rx.refused = None;
        rx.next = rx.next.wrapping_add(1);
        rx.owe_ack(now, filled_gap);
        let out = &mut self.out;
        if accept_fragment(rx, &mut out.stats, &mut out.events, from, ch, f)
            && ch == wire::CHANNEL_REQUEST as usize
        {
            self.queued_requests += 1;
        }
        true
    }

    /// Gives up every unfinished message to the peer in `slot` with `reason`.
    fn fail_peer(&mut self, slot: usize, reason: FailReason) {
        let peer = &mut self.peers[slot];
        let addr = peer.addr;
        peer.rtt.on_progress();
        for ch in 0..NUM_CHANNELS {
            let tx = &mut peer.tx[ch];
            let msgs = tx.drain_unfinished();
            tx.new_epoch();
            for m in msgs {
                self.out.events.push_back(Event::Failed {
                    to: addr,
                    channel: ch as u8,
                    id: m.id,
                    meta: m.meta,
                    reason,
                });
            }
        }
    }

    /// Gives up one message; the others on the channel start over in a new epoch.
    fn fail_message(
        &mut self,
        now: Instant,
        slot: usize,
        ch: usize,
        id: MsgId,
        reason: FailReason,
    ) {
        let cap_for = |nargs: usize| self.fragment_capacity(nargs);
        let caps: Vec<usize> = (0..=wire::MAX_ARGS).map(cap_for).collect();
        let peer = &mut self.peers[slot];
        let addr = peer.addr;
        let tx = &mut peer.tx[ch];
        let msgs = tx.drain_unfinished();
        tx.new_epoch();
        for m in msgs {
            if m.id == id {
                self.out.events.push_back(Event::Failed {
                    to: addr,
                    channel: ch as u8,
                    id: m.id,
                    meta: m.meta,
                    reason,
                });
            } else {
                let cap = caps[m.meta.nargs as usize];
                push_fragments(&mut tx.pending, m, cap);
            }
        }
        self.pump(now, slot, ch);
    }
}

/// Queues `msg` as fragments of at most `cap` bytes (one, empty, for an
/// empty message).
fn push_fragments(q: &mut VecDeque<Fragment>, msg: MsgRef, cap: usize) {
    let len = msg.payload.len();
    if len <= cap {
        q.push_back(Fragment {
            msg,
            off: 0,
            len: len as u32,
        });
        return;
    }
    let shared = match msg {
        MsgRef::Shared(a) => a,
        MsgRef::One(b) => Arc::new(*b),
    };
    let mut off = 0usize;
    while len - off > cap {
        q.push_back(Fragment {
            msg: MsgRef::Shared(shared.clone()),
            off: off as u32,
            len: cap as u32,
        });
        off += cap;
    }
    q.push_back(Fragment {
        msg: MsgRef::Shared(shared),
        off: off as u32,
        len: (len - off) as u32,
    });
}

/// Appends the DATA packet of `f` to the outbox; returns where it starts.
fn encode_fragment<A>(out: &mut Outbox<A>, c: &Common, f: &Fragment) -> usize {
    let start = out.bytes.len();
    let (off, len) = (f.off as usize, f.len as usize);
    wire::encode_data(
        &mut out.bytes,
        c,
        &f.msg.meta,
        f.msg.payload.len() as u32,
        f.off,
        &f.msg.payload[off..off + len],
    );
    start
}

/// The header of a control packet about receive channel `ch` of `peer`:
/// its epoch and next expected sequence number, with both piggybacked acks.
fn control_header<A>(local_id: u32, peer: &Peer<A>, ch: usize) -> Common {
    let rx = &peer.rx[ch];
    Common {
        src_id: local_id,
        dst_id: peer.remote_id,
        channel: ch as u8,
        epoch: rx.epoch,
        seq: rx.next,
        acks: peer.piggyback(),
    }
}

fn send_ack<A: Copy>(out: &mut Outbox<A>, local_id: u32, peer: &mut Peer<A>, ch: usize) {
    let c = control_header(local_id, peer, ch);
    let sack = peer.rx[ch].sack_bits();
    let start = out.bytes.len();
    wire::encode_ack(&mut out.bytes, &c, sack);
    out.stats.acks_sent += 1;
    out.push(peer.addr, start);
    let rx = &mut peer.rx[ch];
    rx.ack_owed_since = None;
    rx.ack_urgent = false;
}

fn send_nack<A: Copy>(
    out: &mut Outbox<A>,
    local_id: u32,
    peer: &mut Peer<A>,
    ch: usize,
    last: bool,
) {
    let c = control_header(local_id, peer, ch);
    let start = out.bytes.len();
    wire::encode_nack(&mut out.bytes, &c, last);
    out.stats.nacks_sent += 1;
    out.push(peer.addr, start);
}

/// One DATA packet's fragment, as received or as held.
struct InFrag<'a> {
    meta: &'a MsgMeta,
    msg_len: u32,
    frag_off: u32,
    bytes: &'a [u8],
}

/// Adds one in-order fragment to the channel's reassembly; queues the event
/// and returns true when it completes a message.
fn accept_fragment<A>(
    rx: &mut RecvChannel,
    stats: &mut ProtoStats,
    events: &mut VecDeque<Event<A>>,
    from: A,
    ch: usize,
    f: InFrag<'_>,
) -> bool {
    if f.msg_len as usize > MAX_MESSAGE {
        stats.corrupt += 1;
        rx.reassembly = None;
        return false;
    }
    if f.frag_off == 0 {
        if rx.reassembly.take().is_some() {
            stats.corrupt += 1;
        }
        if f.bytes.len() == f.msg_len as usize {
            events.push_back(Event::Delivered {
                from,
                channel: ch as u8,
                meta: *f.meta,
                payload: f.bytes.to_vec(),
            });
            return true;
        }
        let mut buf = Vec::with_capacity(f.msg_len as usize);
        buf.extend_from_slice(f.bytes);
        rx.reassembly = Some(Reassembly {
            meta: *f.meta,
            len: f.msg_len,
            buf,
        });
        return false;
    }
    match rx.reassembly.take() {
        Some(mut r) if r.buf.len() == f.frag_off as usize && r.len == f.msg_len => {
            r.buf.extend_from_slice(f.bytes);
            if r.buf.len() == f.msg_len as usize {
                events.push_back(Event::Delivered {
                    from,
                    channel: ch as u8,
                    meta: r.meta,
                    payload: r.buf,
                });
                return true;
            }
            rx.reassembly = Some(r);
            false
        }
        _ => {
            stats.corrupt += 1;
            false
        }
    }
}

/// The earliest time this peer needs attention, or None when idle.
fn peer_deadline<A>(peer: &Peer<A>, cfg: &ProtoConfig) -> Option<Instant> {
    let mut d: Option<Instant> = None;
    let mut take = |t: Instant| d = Some(d.map_or(t, |x| x.min(t)));
    for tx in &peer.tx {
        if let Some(t) = tx.paused_until {
            take(t);
            continue;
        }
        for (i, p) in tx.in_flight.iter().enumerate() {
            if !p.sacked || i == 0 {
                take(p.deadline);
            }
        }
    }
    for rx in &peer.rx {
        if let Some(t0) = rx.ack_owed_since {
            take(if rx.ack_urgent {
                t0
            } else {
                t0.plus(cfg.ack_delay)
            });
        }
    }
    d
}
