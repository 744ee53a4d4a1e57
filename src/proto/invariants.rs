//! What must hold of a protocol's whole state between calls, checked by a
//! walk over every peer and channel (`Protocol::check_invariants`): the
//! simulator runs it after every step, in release builds too. The hot
//! paths assert the local part of these inline, in debug builds only.
//!
//! - slots: every slot is a live peer (its address maps to it) or free
//!   (an idle placeholder); aliases and addresses agree both ways.
//! - paths: an association has one path today, from our name to the
//!   peer's address, and it is the one its packets take.
//! - timers: a peer with a timer set is in the heap by then; each timer is
//!   set exactly when the state needs it (a handshake or shutdown out, an
//!   ACK owed, something to say, an established association to watch).
//! - send window: in flight within the window, numbered in order without
//!   a gap up to the next sequence number; DATA only in an established
//!   association; a packet left for a timeout's verdict (F-RTO) is judged
//!   by the next ACK; a message's fragments in order.
//! - congestion: each send channel's bytes in flight counted exactly
//!   (sent, not acknowledged, SACKed or taken as lost); the path's window
//!   never under its minimum (two largest datagrams); new data that the windows let go is held only by pacing, whose timer
//!   is then set (no stall: nothing else would send it).
//! - receive window: held packets ahead of `next` within the window, their
//!   bytes counted exactly and within the peer's budget; reassembly within
//!   its message's length.
//! - buffers: the pools and the spare boxes within their bounds; the
//!   delivered requests counted as the event queue holds them.

use super::recv::{held_cost, RecvChannel};
use super::send::{seq_diff, SendChannel, DEFERRED};
use super::timer::Timer;
use super::*;

impl<A: PeerAddr> Protocol<A> {
    /// Checks every invariant of the state (see the module's doc); panics
    /// naming the peer and channel of the first that fails. A walk over
    /// every peer and channel: for tests and the simulator, never the hot
    /// path.
    pub fn check_invariants(&self) {
        let n = self.peers.len();
        assert!(
            self.last_slot == usize::MAX || self.last_slot < n,
            "last slot {} of {n}",
            self.last_slot
        );
        for (addr, &s) in &self.slots {
            let s = s as usize;
            assert!(s < n, "peer {addr:?}: slot {s} of {n}");
            assert_eq!(self.peers[s].addr, *addr, "slot {s}: another address");
        }
        let mut free = vec![false; n];
        for &s in &self.free {
            let s = s as usize;
            assert!(s < n && !free[s], "free slot {s} of {n}, or twice");
            free[s] = true;
            let p = &self.peers[s];
            assert_ne!(self.slots.get(&p.addr), Some(&(s as u32)), "slot {s}");
            assert!(
                !p.busy() && p.timers.next().is_none() && p.alias.is_none(),
                "free slot {s} holds a peer"
            );
        }
        assert_eq!(self.free.len() + self.slots.len(), n, "slots lost");
        for (a, &s) in &self.aliases {
            let p = &self.peers[s as usize];
            assert_eq!(p.alias, Some(*a), "peer {:?}: alias {a:?}", p.addr);
            assert!(!self.slots.contains_key(a), "alias {a:?} is a peer's name");
        }
        let queued: std::collections::HashSet<(Instant, u32)> =
            self.timers.iter().map(|&Reverse(e)| e).collect();
        for s in (0..n).filter(|&s| !free[s]) {
            self.check_slot(s, |e| queued.contains(&e));
        }
        self.check_shared();
    }

    /// The part of `check_invariants` about the peer at `addr` (if it has
    /// a slot) and what all peers share: cheap enough for every step of a
    /// node with thousands of peers (the simulator walks such a node whole
    /// only now and then).
    pub fn check_peer_invariants(&self, addr: &A) {
        if let Some(&s) = self.slots.get(addr) {
            let s = s as usize;
            assert!(s < self.peers.len(), "peer {addr:?}: slot {s}");
            self.check_slot(s, |e| self.timers.iter().any(|&Reverse(q)| q == e));
        }
        self.check_shared();
    }

    /// The live peer in `slot`: its alias, its place in the timer heap
    /// (`in_heap`: whether an entry is there), then the peer itself.
    fn check_slot(&self, slot: usize, in_heap: impl Fn((Instant, u32)) -> bool) {
        let p = &self.peers[slot];
        if let Some(a) = p.alias {
            assert_eq!(self.aliases.get(&a), Some(&(slot as u32)), "{:?}", p.addr);
        }
        if let Some(at) = p.timers.next() {
            let q = p.queued.filter(|q| *q <= at);
            assert!(
                q.is_some_and(|q| in_heap((q, slot as u32))),
                "peer {:?}: a timer at {at:?}, looked at {:?}",
                p.addr,
                p.queued
            );
        }
        p.check_invariants(&self.cfg);
    }

    /// What the peers share: the count of delivered requests, the pools.
    fn check_shared(&self) {
        let requests = self
            .out
            .events
            .iter()
            .filter(|ev| {
                matches!(
                    ev,
                    Event::Delivered {
                        channel: wire::CHANNEL_REQUEST,
                        ..
                    }
                )
            })
            .count();
        assert_eq!(self.queued_requests, requests, "delivered requests counted");
        self.out.pool.check_bounds();
        self.spare_msgs.check_bounds();
    }
}

impl<A: PeerAddr> Peer<A> {
    /// A peer's part of `Protocol::check_invariants`.
    fn check_invariants(&self, cfg: &ProtoConfig) {
        let who = &self.addr;
        let a = &self.assoc;
        let handshaking = matches!(
            a.state,
            AssocState::CookieWait | AssocState::CookieEchoed | AssocState::ShutdownSent
        );
        assert_eq!(
            self.timers.get(Timer::Handshake).is_some(),
            handshaking,
            "peer {who:?}: handshake timer in {:?}",
            a.state
        );
        // the first path: from our name to the peer's address; at most
        // one per pair of rails; the current one among them, active
        // unless none is (`path.rs`)
        let paths: Vec<_> = a.paths.all().map(|p| p.path).collect();
        assert_eq!(
            paths[0],
            crate::path::Path::from_name(self.addr),
            "peer {who:?}: its association's first path"
        );
        let max = crate::path::MAX_RAILS * crate::path::MAX_RAILS;
        assert!(paths.len() <= max, "peer {who:?}: {} paths", paths.len());
        for (i, p) in paths.iter().enumerate() {
            assert!(!paths[..i].contains(p), "peer {who:?}: path {p:?} twice");
        }
        assert!(
            paths.contains(&a.paths.current()),
            "peer {who:?}: current path"
        );
        assert!(
            a.paths.current_active() || a.paths.best().is_none(),
            "peer {who:?}: the current path is not active while another is"
        );
        if a.state != AssocState::Closed {
            assert_ne!(a.local_tag, 0, "peer {who:?}: no tag of ours");
        }
        if matches!(a.state, AssocState::Established | AssocState::ShutdownSent) {
            assert_ne!(a.peer_tag, 0, "peer {who:?}: no tag of the peer's");
        }
        let watched = a.state == AssocState::Established && cfg.idle_timeout > 0;
        assert_eq!(
            self.timers.get(Timer::Idle).is_some(),
            watched,
            "peer {who:?}: idle timer in {:?}",
            a.state
        );
        if self.busy() {
            assert!(
                self.timers.get(Timer::Live).is_some(),
                "peer {who:?}: something to say, no liveness timer"
            );
        }
        if self.dead.is_some() {
            assert!(!self.busy(), "peer {who:?}: dead with messages");
        }
        self.check_congestion(cfg);
        let mut held = 0;
        for ch in 0..NUM_CHANNELS {
            let paused = self.timers.get(Timer::Pause(ch)).is_some();
            let retransmit = self.timers.get(Timer::Retransmit(ch));
            check_send(&self.tx[ch], cfg, a.state, paused, retransmit)
                .unwrap_or_else(|e| panic!("peer {who:?} send channel {ch}: {e}"));
            let rx = &self.rx[ch];
            check_recv(rx).unwrap_or_else(|e| panic!("peer {who:?} receive channel {ch}: {e}"));
            assert_eq!(
                self.timers.get(Timer::Ack(ch)),
                rx.ack_deadline(cfg.ack_delay),
                "peer {who:?} receive channel {ch}: ACK timer and ACK owed"
            );
            held += rx.held_bytes;
        }
        assert!(
            held <= cfg.peer_buffer,
            "peer {who:?}: {held} bytes held, budget {}",
            cfg.peer_buffer
        );
    }
}

impl<A: PeerAddr> Peer<A> {
    /// Bytes the path may have in flight: its window, and no more than a
    /// same-host ring holds when it goes by one (`Peer::transmit`).
    fn flight_limit(&self, cfg: &ProtoConfig) -> u64 {
        let cwnd = self.assoc.paths.cc().cwnd();
        match self.same_host {
            Some(_) => cwnd.min(cfg.same_host_flight),
            None => cwnd,
        }
    }

    /// The path's window, pacing and the channels' bytes in flight.
    fn check_congestion(&self, cfg: &ProtoConfig) {
        let who = &self.addr;
        for ch in 0..NUM_CHANNELS {
            let tx = &self.tx[ch];
            assert_eq!(
                tx.outstanding,
                tx.flight_bytes(),
                "peer {who:?} send channel {ch}: bytes in flight counted"
            );
        }
        let size = self.assoc.paths.datagram;
        assert!(
            (crate::wire::MAX_OVERHEAD + 64..=cfg.max_datagram).contains(&size),
            "peer {who:?}: its path's datagram size {size}"
        );
        for ch in 0..NUM_CHANNELS {
            let cut = |m: &super::send::OutMsg| cfg.cut(&m.meta, m.payload.len(), size);
            assert!(
                self.tx[ch]
                    .pending
                    .iter()
                    .all(|f| cut(&f.msg).fits(f.off, f.len)),
                "peer {who:?} send channel {ch}: a fragment waits longer than its path carries"
            );
        }
        let cc = self.assoc.paths.cc();
        assert!(
            cc.cwnd() >= 2 * cfg.max_datagram as u64 || !cfg.congestion,
            "peer {who:?}: window {} under two datagrams",
            cc.cwnd()
        );
        let limit = self.flight_limit(cfg);
        if self.assoc.state != AssocState::Established || self.in_flight() >= limit {
            return;
        }
        for ch in 0..NUM_CHANNELS {
            let tx = &self.tx[ch];
            let free = tx.in_flight.len() < cfg.window && !self.is_paused(ch);
            // (striping holds data for the path it arrives first on: one
            // with bytes in flight, whose ACK sends it)
            let held = self.striping(ch, cfg) && self.in_flight() > 0;
            if free && !tx.pending.is_empty() && !held {
                assert!(
                    self.timers.get(Timer::Pace).is_some(),
                    "peer {who:?} send channel {ch}: new data within both windows \
                     ({} of {} bytes in flight), not sent, no pacing timer",
                    self.in_flight(),
                    limit
                );
            }
        }
    }
}

/// A send channel's part of `Protocol::check_invariants`.
fn check_send(
    tx: &SendChannel,
    cfg: &ProtoConfig,
    state: AssocState,
    paused: bool,
    retransmit: Option<Instant>,
) -> Result<(), String> {
    let flight = &tx.in_flight;
    if flight.len() > cfg.window {
        return Err(format!("{} in flight, window {}", flight.len(), cfg.window));
    }
    if let Some(first) = flight.front() {
        if state != AssocState::Established {
            return Err(format!("{} in flight in {state:?}", flight.len()));
        }
        for (i, p) in flight.iter().enumerate() {
            if p.seq != first.seq.wrapping_add(i as u32) {
                return Err(format!("packet {i} of the flight numbered {}", p.seq));
            }
            if p.sacked && p.resend {
                return Err(format!("packet {} SACKed and to be resent", p.seq));
            }
            if p.deadline == DEFERRED && !p.resend && tx.rto_at.is_none() {
                return Err(format!(
                    "packet {} deferred with no timeout to judge",
                    p.seq
                ));
            }
        }
        let next = first.seq.wrapping_add(flight.len() as u32);
        if tx.next_seq != next {
            return Err(format!(
                "next seq {} after the flight's {next}",
                tx.next_seq
            ));
        }
        let deadline = tx.retransmit_deadline();
        if !paused && retransmit.is_none_or(|t| deadline.is_some_and(|d| t > d)) {
            return Err(format!(
                "retransmit timer {retransmit:?}, deadline {deadline:?}"
            ));
        }
    }
    // each message's fragments in order, the flight's then the queue's
    let frags = flight.iter().map(|p| &p.frag).chain(tx.pending.iter());
    let mut last: Option<(MsgId, u32)> = None;
    for f in frags {
        if let Some((id, end)) = last.filter(|&(id, _)| id == f.msg.id) {
            if f.off != end {
                return Err(format!("message {id}: a fragment at {} after {end}", f.off));
            }
        }
        if (f.off + f.len) as usize > f.msg.payload.len() {
            return Err(format!("message {}: a fragment past its end", f.msg.id));
        }
        last = Some((f.msg.id, f.off + f.len));
    }
    tx.check_order()
}

/// A receive channel's part of `Protocol::check_invariants`.
fn check_recv(rx: &RecvChannel) -> Result<(), String> {
    let mut bytes = 0;
    for (&s, h) in &rx.held {
        let d = seq_diff(s, rx.next);
        if !(1..=MAX_WINDOW as i32).contains(&d) {
            return Err(format!("packet {s} held at {d} from {}", rx.next));
        }
        bytes += held_cost(h.payload.len());
    }
    if bytes != rx.held_bytes {
        return Err(format!("{bytes} bytes held, {} counted", rx.held_bytes));
    }
    if let Some(r) = &rx.reassembly {
        let got = match r.meta.placed {
            Some(_) => r.placed as usize,
            None => r.buf.len(),
        };
        if got > r.len as usize || r.len as usize > MAX_MESSAGE {
            return Err(format!("{got} bytes of a message of {}", r.len));
        }
    }
    Ok(())
}
