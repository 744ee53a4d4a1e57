//! One peer: its association (tags, handshake), its two send and two
//! receive channels, its round-trip estimate, and its timers. What the peer
//! does ties the channels together: DATA carries the acks of both receive
//! channels, a NACK pauses a send channel, a silent peer fails both, and
//! DATA goes only inside an association. Here: the peer, its timers' work
//! and its failures; its association in `association.rs`, its liveness in
//! `liveness.rs`, its channels' packets in `channels.rs`.

mod association;
mod channels;
mod liveness;
mod paths;
mod stripe;

use super::assoc::{Assoc, AssocState, ClosedTags};
use super::config::ProtoConfig;
use super::congestion::{self, Congestion};
use super::event::{Event, FailReason, MsgId};
use super::outbox::Outbox;
use super::path::{Nonces, Paths};
use super::recv::{InFrag, RecvChannel, RecvCx};
use super::rtt::RttEstimator;
use super::send::{Nacked, SendChannel, SpareMsgs, Transmission};
use super::timer::{Timer, TimerTable};
use crate::path::Path;
use crate::time::Instant;
use crate::wire::Integrity;
use crate::wire::{self, AckField, Common, COOKIE_LEN, NUM_CHANNELS};

/// A new path's congestion controller: its window bounded by what both
/// channels' packet windows let be in flight.
fn path_congestion(cfg: &ProtoConfig) -> Congestion {
    let packet = cfg.max_datagram as u64 + congestion::PACKET_OVERHEAD;
    let max_flight = (NUM_CHANNELS * cfg.window) as u64 * packet;
    Congestion::new(cfg.congestion, cfg.max_datagram, max_flight)
}

/// What the peers share, lent by `Protocol` for one operation.
pub(super) struct Ctx<'a, A> {
    pub cfg: &'a ProtoConfig,
    pub out: &'a mut Outbox<A>,
    pub spare_msgs: &'a mut SpareMsgs,
    /// Delivered requests not yet taken by the layer above (all peers).
    pub queued_requests: &'a mut usize,
    /// Our tags of associations that ended (their cookies are refused).
    pub closed: &'a mut ClosedTags,
    /// Fresh nonces for the paths' heartbeats.
    pub nonces: &'a mut Nonces,
    /// Our rails but the name, as our handshake lists them.
    pub listing: &'a [u8; wire::layout::ADDRS_LEN],
    /// News of paths for the layer above (`path_events.rs`).
    pub path_events: &'a mut super::path_events::PathEvents<A>,
}

pub(super) struct Peer<A> {
    pub addr: A,
    /// Another address its packets come from (`alias.rs`): the port of
    /// the peer's connected socket for us. At most one.
    pub alias: Option<A>,
    /// The port of ours we last announced to it as our alias (ALIAS,
    /// `alias.rs`), until it answers.
    pub announced: Option<u16>,
    /// When `Protocol::timers` has this peer looked at (None: not queued).
    pub queued: Option<Instant>,
    pub timers: TimerTable,
    pub assoc: Assoc<A>,
    pub tx: [SendChannel; NUM_CHANNELS],
    pub rx: [RecvChannel; NUM_CHANNELS],
    pub rtt: RttEstimator,
    /// When we last heard from the peer inside the association, or began
    /// to have something to say to it (whichever is later).
    pub heard: Instant,
    /// When the last HEARTBEAT went.
    pub last_heartbeat: Instant,
    /// Dead since then (silent for `peer_timeout` while we had something
    /// to say): new messages fail at once until an association succeeds.
    pub dead: Option<Instant>,
    /// Our datagrams to it go through a same-host ring whose ends proved
    /// the same job (`Protocol::set_same_host`): its DATA, ACK and NACK
    /// are sealed with this (`wire::Integrity::SameHost`), not the
    /// association's key.
    pub same_host: Option<Integrity>,
}

/// How a peer's DATA, ACK and NACK on path `i` are sealed: with the
/// same-host seal (`Peer::same_host`) only on the name's path (index 0: a
/// ring reaches the peer's name, not its other addresses, which UDP
/// carries and whose receiver refuses that seal), else with the
/// association's (`assoc`).
#[inline]
pub(super) fn seal_on<'a>(
    same_host: &'a Option<Integrity>,
    assoc: &'a Integrity,
    i: usize,
) -> &'a Integrity {
    match same_host {
        Some(s) if i == 0 => s,
        _ => assoc,
    }
}

impl<A: Copy + PartialEq> Peer<A> {
    pub fn new(cfg: &ProtoConfig, addr: A) -> Peer<A> {
        let rtt = RttEstimator::new(cfg.rto_initial, cfg.rto_min, cfg.rto_max)
            .with_ack_delay(cfg.ack_delay);
        Peer {
            addr,
            alias: None,
            announced: None,
            queued: None,
            timers: TimerTable::default(),
            assoc: Assoc {
                paths: Paths::to(addr, path_congestion(cfg), rtt.clone(), cfg.max_datagram),
                ..Assoc::to(addr)
            },
            tx: Default::default(),
            rx: Default::default(),
            rtt,
            heard: Instant::ZERO,
            last_heartbeat: Instant::ZERO,
            dead: None,
            same_host: None,
        }
    }

    /// Bytes this peer holds beyond its slot (an estimate): queued and
    /// in-flight fragments and their messages, held packets, reassembly.
    #[cfg(any(test, feature = "testing"))] // inspection for tests and the simulator
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        let tx: usize = self
            .tx
            .iter()
            .map(|t| {
                let frags = t.in_flight.iter().map(|p| &p.frag).chain(t.pending.iter());
                t.in_flight.capacity() * size_of::<super::send::InFlight>()
                    + t.pending.capacity() * size_of::<super::send::Fragment>()
                    + frags
                        .map(|f| {
                            let first = if f.off == 0 {
                                size_of::<super::send::OutMsg>() + 16
                            } else {
                                0
                            };
                            f.len as usize + first
                        })
                        .sum::<usize>()
            })
            .sum();
        let rx: usize = self.rx.iter().map(RecvChannel::heap_bytes).sum();
        let cookie = self.assoc.cookie.as_ref().map_or(0, |_| COOKIE_LEN);
        tx + rx + cookie
    }

    /// The path its association's packets take now.
    #[inline]
    pub fn path(&self) -> Path<A> {
        self.assoc.paths.current()
    }

    /// Whether we have something to say: messages queued or in flight.
    pub fn busy(&self) -> bool {
        !self.tx.iter().all(|t| t.is_idle())
    }

    /// Something came from the peer inside the association.
    #[inline]
    pub fn hear(&mut self, now: Instant) {
        self.heard = now;
    }

    #[cfg(any(test, feature = "testing"))] // inspection for tests and the simulator
    pub fn is_idle(&self) -> bool {
        (0..NUM_CHANNELS).all(|ch| {
            self.tx[ch].is_idle() && !self.is_paused(ch) && self.rx[ch].ack_owed_since.is_none()
        }) && self.timers.get(Timer::Handshake).is_none()
    }

    /// Whether send channel `ch` waits out a NACK.
    pub(in crate::proto) fn is_paused(&self, ch: usize) -> bool {
        self.timers.get(Timer::Pause(ch)).is_some()
    }

    /// Runs what is due at `now`: the end of a pause, retransmissions (or,
    /// past the retry limit, failure of everything sent), owed ACKs,
    /// liveness. Then sets the timers afresh. True: this dead peer's slot
    /// may be freed.
    pub fn on_timeout(&mut self, now: Instant, cx: &mut Ctx<'_, A>) -> bool {
        if self.timers.is_expired(Timer::Live, now) && self.on_live(now, cx) {
            return true;
        }
        if self.timers.is_expired(Timer::Handshake, now) && self.on_handshake_timeout(now, cx) {
            return true;
        }
        if self.timers.is_expired(Timer::Idle, now) {
            self.on_idle(now, cx);
        }
        if self.timers.is_expired(Timer::Paths, now) {
            self.on_paths(now, cx);
        }
        if self.timers.is_expired(Timer::Pace, now) {
            // pacing lets new data go: replies first (`pump_both`)
            self.timers.stop(Timer::Pace);
            self.pump(now, wire::CHANNEL_REPLY as usize, cx);
        }
        let mut unreachable = false;
        for ch in 0..NUM_CHANNELS {
            if self.timers.is_expired(Timer::Pause(ch), now) {
                self.timers.stop(Timer::Pause(ch));
            }
            if !self.is_paused(ch) {
                let e = self.tx[ch].on_timeout(now, cx.cfg.retry_limit);
                if e.backoff {
                    // (against the path the timed-out packet took: its
                    // timeout backs off, the peer's if it is current;
                    // `PATH_MAX_RETRANS` make it suspect, `path/suspect.rs`)
                    self.lane_timed_out(now, ch, cx);
                }
                self.settle(now, ch, cx);
                // (with every path failed the peer is partitioned, not
                // dead: only the peer timeout, nothing heard on any path,
                // returns its messages)
                if e.unreachable && self.assoc.paths.current_active() {
                    unreachable = true;
                    break;
                }
            }
            self.pump(now, ch, cx);
        }
        if unreachable {
            self.fail_all(FailReason::PeerUnreachable, cx.out);
        }
        self.tell_suspects(cx);
        for ch in 0..NUM_CHANNELS {
            if self.timers.is_expired(Timer::Ack(ch), now) {
                self.send_ack(ch, cx);
            }
        }
        for ch in 0..NUM_CHANNELS {
            let paused = self.is_paused(ch);
            let rto = if paused {
                None
            } else {
                self.tx[ch].retransmit_deadline()
            };
            self.timers.set(Timer::Retransmit(ch), rto);
        }
        false
    }

    /// Gives up every unfinished message to this peer with `reason`.
    pub fn fail_all(&mut self, reason: FailReason, out: &mut Outbox<A>) {
        self.rtt.on_progress();
        for ch in 0..NUM_CHANNELS {
            let tx = &mut self.tx[ch];
            let msgs = tx.drain_unfinished();
            tx.new_epoch();
            self.timers.stop(Timer::Pause(ch));
            self.timers.stop(Timer::Retransmit(ch));
            for m in msgs {
                out.events.push_back(Event::Failed {
                    to: self.addr,
                    channel: ch as u8,
                    id: m.id,
                    meta: m.meta,
                    reason,
                });
            }
        }
        self.unwatch_if_idle();
    }

    /// Gives up one message; the others on the channel start over in a new epoch.
    fn fail_message(
        &mut self,
        now: Instant,
        ch: usize,
        id: MsgId,
        reason: FailReason,
        cx: &mut Ctx<'_, A>,
    ) {
        let cfg = cx.cfg;
        let max = self.assoc.paths.datagram;
        if let Some(m) = self.tx[ch].give_up(id, |m| cfg.cut(&m.meta, m.payload.len(), max)) {
            cx.out.events.push_back(Event::Failed {
                to: self.addr,
                channel: ch as u8,
                id: m.id,
                meta: m.meta,
                reason,
            });
        }
        self.timers.stop(Timer::Pause(ch));
        // (its packets left the path's flight: both channels may send)
        self.pump_both(now, cx);
        self.unwatch_if_idle();
    }

    /// Nothing left to say to a live peer: no liveness to watch.
    #[inline]
    fn unwatch_if_idle(&mut self) {
        if self.dead.is_none() && !self.busy() {
            self.timers.stop(Timer::Live);
        }
    }
}
