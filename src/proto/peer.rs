//! One peer: its two send and two receive channels, its round-trip
//! estimate, its incarnation, and its timers. What the peer does ties the
//! channels together: DATA carries the acks of both receive channels, a
//! NACK pauses a send channel, a silent peer fails both.

use super::config::ProtoConfig;
use super::event::{Event, FailReason, MsgId};
use super::outbox::Outbox;
use super::recv::{InFrag, RecvChannel, RecvCx};
use super::rtt::RttEstimator;
use super::send::{Nacked, SendChannel, SpareMsgs, Transmission};
use super::timer::{Timer, TimerTable};
use crate::time::Instant;
use crate::wire::{self, AckField, Common, NUM_CHANNELS};

/// Earlier incarnations of a peer remembered, so that their late datagrams
/// are recognised as stale rather than as yet another restart.
const RETIRED_IDS: usize = 4;

/// What the peers share, lent by `Protocol` for one operation.
pub(super) struct Ctx<'a, A> {
    pub cfg: &'a ProtoConfig,
    pub local_id: u32,
    pub out: &'a mut Outbox<A>,
    pub spare_msgs: &'a mut SpareMsgs,
    /// Delivered requests not yet taken by the layer above (all peers).
    pub queued_requests: &'a mut usize,
}

pub(super) struct Peer<A> {
    pub addr: A,
    /// When `Protocol::timers` has this peer looked at (None: not queued).
    pub queued: Option<Instant>,
    pub timers: TimerTable,
    pub remote_id: u32,
    /// Ids of the peer's earlier incarnations, most recent first (0: none).
    pub retired_ids: [u32; RETIRED_IDS],
    pub tx: [SendChannel; NUM_CHANNELS],
    pub rx: [RecvChannel; NUM_CHANNELS],
    pub rtt: RttEstimator,
}

impl<A: Copy> Peer<A> {
    pub fn new(cfg: &ProtoConfig, addr: A) -> Peer<A> {
        Peer {
            addr,
            queued: None,
            timers: TimerTable::default(),
            remote_id: 0,
            retired_ids: [0; RETIRED_IDS],
            tx: Default::default(),
            rx: Default::default(),
            rtt: RttEstimator::new(cfg.rto_initial, cfg.rto_min, cfg.rto_max),
        }
    }

    #[cfg(any(test, feature = "testing"))] // inspection for tests and the simulator
    pub fn is_idle(&self) -> bool {
        (0..NUM_CHANNELS).all(|ch| {
            self.tx[ch].is_idle() && !self.is_paused(ch) && self.rx[ch].ack_owed_since.is_none()
        })
    }

    /// Whether send channel `ch` waits out a NACK.
    fn is_paused(&self, ch: usize) -> bool {
        self.timers.get(Timer::Pause(ch)).is_some()
    }

    /// Whether `src_id` is one of the peer's earlier incarnations.
    pub fn is_retired(&self, src_id: u32) -> bool {
        src_id != 0 && self.retired_ids.contains(&src_id)
    }

    /// The peer's packets come from incarnation `src_id`. When that is a new
    /// process at the same address, what was held for the old one is void
    /// and what was sent to it cannot be finished.
    #[inline]
    pub fn note_incarnation(&mut self, src_id: u32, out: &mut Outbox<A>) {
        if self.remote_id == src_id {
            return;
        }
        let restarted = self.remote_id != 0;
        if restarted {
            self.retired_ids.rotate_right(1);
            self.retired_ids[0] = self.remote_id;
        }
        self.remote_id = src_id;
        if restarted {
            self.rx = Default::default();
            for ch in 0..NUM_CHANNELS {
                self.timers.stop(Timer::Ack(ch));
            }
            self.fail_all(FailReason::PeerUnreachable, out);
        }
    }

    /// Sends what send channel `ch` may send now: packets marked for
    /// resending, then new fragments while the window allows.
    #[inline]
    pub fn pump(&mut self, now: Instant, ch: usize, cx: &mut Ctx<'_, A>) {
        if self.is_paused(ch) || !self.tx[ch].has_to_send() {
            // Nothing to send (the usual case after an ACK).
            return;
        }
        let rtt = &self.rtt;
        let t = Transmission {
            header: Common {
                src_id: cx.local_id,
                dst_id: self.remote_id,
                channel: ch as u8,
                epoch: self.tx[ch].epoch,
                seq: 0,
                acks: self.piggyback(),
            },
            rto: rtt.rto(),
            probe_after: rtt
                .srtt()
                .map(|srtt| (2 * srtt).max(srtt + 4 * rtt.rttvar()) + 2 * cx.cfg.ack_delay),
            window: cx.cfg.window,
        };
        if let Some(d) = self.tx[ch].transmit(now, &t, self.addr, cx.out) {
            self.acks_carried(cx.cfg);
            self.timers.lower(Timer::Retransmit(ch), d);
        }
    }

    /// An acknowledgement for send channel `ch`: (epoch, next, sack).
    #[inline]
    pub fn on_ack(&mut self, now: Instant, ch: usize, ack: (u16, u32, u64), cx: &mut Ctx<'_, A>) {
        let tx = &mut self.tx[ch];
        let Some(o) = tx.on_ack(now, ack, &mut self.rtt, &mut cx.out.stats, cx.spare_msgs) else {
            return;
        };
        if let Some(t) = o.reorder_at {
            self.timers.lower(Timer::Retransmit(ch), t);
        }
        if o.progress {
            self.pump(now, ch, cx);
        }
    }

    /// A NACK of packet `seq` of send channel `ch`.
    pub fn on_nack(
        &mut self,
        now: Instant,
        ch: usize,
        (epoch, seq, last): (u16, u32, bool),
        cx: &mut Ctx<'_, A>,
    ) {
        // Everything before the refused packet has arrived.
        self.on_ack(now, ch, (epoch, seq, 0), cx);
        match self.tx[ch].on_nack(epoch, seq, last) {
            Nacked::Stale => {}
            Nacked::GiveUp(id) => self.fail_message(now, ch, id, FailReason::Refused, cx),
            Nacked::GoBack => {
                let until = now.plus(cx.cfg.nack_backoff);
                self.timers.set(Timer::Pause(ch), Some(until));
                self.timers.stop(Timer::Retransmit(ch));
            }
        }
    }

    /// A DATA packet for receive channel `c.channel`.
    #[inline]
    pub fn on_data(&mut self, now: Instant, c: &Common, f: InFrag<'_>, cx: &mut Ctx<'_, A>) {
        let ch = c.channel as usize;
        let mut rcx = RecvCx {
            from: self.addr,
            ch,
            recv_depth: cx.cfg.recv_depth,
            nack_limit: cx.cfg.nack_limit,
            queued_requests: cx.queued_requests,
            out: cx.out,
        };
        if let Some(last) = self.rx[ch].on_data(now, (c.epoch, c.seq), f, &mut rcx) {
            self.send_nack(ch, last, cx);
        }
        self.sync_ack_timer(ch, cx.cfg);
    }

    /// Runs what is due at `now`: the end of a pause, retransmissions (or,
    /// past the retry limit, failure of everything sent), owed ACKs. Then
    /// sets the timers afresh.
    pub fn on_timeout(&mut self, now: Instant, cx: &mut Ctx<'_, A>) {
        let mut unreachable = false;
        for ch in 0..NUM_CHANNELS {
            if self.timers.is_expired(Timer::Pause(ch), now) {
                self.timers.stop(Timer::Pause(ch));
            }
            if !self.is_paused(ch) {
                let e = self.tx[ch].on_timeout(now, cx.cfg.retry_limit);
                if e.backoff {
                    self.rtt.on_timeout();
                }
                if e.unreachable {
                    unreachable = true;
                    break;
                }
            }
            self.pump(now, ch, cx);
        }
        if unreachable {
            self.fail_all(FailReason::PeerUnreachable, cx.out);
        }
        for ch in 0..NUM_CHANNELS {
            if self.timers.is_expired(Timer::Ack(ch), now) {
                self.send_ack(ch, cx.local_id, cx.out);
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
        if let Some(m) = self.tx[ch].give_up(id, |nargs| cfg.fragment_capacity(nargs)) {
            cx.out.events.push_back(Event::Failed {
                to: self.addr,
                channel: ch as u8,
                id: m.id,
                meta: m.meta,
                reason,
            });
        }
        self.timers.stop(Timer::Pause(ch));
        self.pump(now, ch, cx);
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
    fn acks_carried(&mut self, cfg: &ProtoConfig) {
        for ch in 0..NUM_CHANNELS {
            if self.rx[ch].held.is_empty() {
                self.rx[ch].ack_paid();
                self.sync_ack_timer(ch, cfg);
            }
        }
    }

    fn sync_ack_timer(&mut self, ch: usize, cfg: &ProtoConfig) {
        let due = self.rx[ch].ack_deadline(cfg.ack_delay);
        self.timers.set(Timer::Ack(ch), due);
    }

    /// The header of a control packet about receive channel `ch`: its epoch
    /// and next expected sequence number, with both piggybacked acks.
    fn control_header(&self, local_id: u32, ch: usize) -> Common {
        let rx = &self.rx[ch];
        Common {
            src_id: local_id,
            dst_id: self.remote_id,
            channel: ch as u8,
            epoch: rx.epoch,
            seq: rx.next,
            acks: self.piggyback(),
        }
    }

    /// Sends the ACK of receive channel `ch` (with its SACK bitmap).
    pub fn send_ack(&mut self, ch: usize, local_id: u32, out: &mut Outbox<A>) {
        let c = self.control_header(local_id, ch);
        let sack = self.rx[ch].sack_bits();
        let start = out.start();
        wire::encode_ack(&mut out.bytes, &c, sack);
        out.stats.acks_sent += 1;
        out.push(self.addr, start);
        self.rx[ch].ack_paid();
        self.timers.stop(Timer::Ack(ch));
    }

    fn send_nack(&mut self, ch: usize, last: bool, cx: &mut Ctx<'_, A>) {
        let c = self.control_header(cx.local_id, ch);
        let start = cx.out.start();
        wire::encode_nack(&mut cx.out.bytes, &c, last);
        cx.out.stats.nacks_sent += 1;
        cx.out.push(self.addr, start);
    }
}
