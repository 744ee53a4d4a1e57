//! One peer: its association (tags, handshake), its two send and two
//! receive channels, its round-trip estimate, and its timers. What the peer
//! does ties the channels together: DATA carries the acks of both receive
//! channels, a NACK pauses a send channel, a silent peer fails both, and
//! DATA goes only inside an association.

use super::assoc::{Assoc, AssocState, ClosedTags};
use super::config::ProtoConfig;
use super::event::{Event, FailReason, MsgId};
use super::outbox::Outbox;
use super::recv::{InFrag, RecvChannel, RecvCx};
use super::rtt::RttEstimator;
use super::send::{Nacked, SendChannel, SpareMsgs, Transmission};
use super::timer::{Timer, TimerTable};
use crate::time::Instant;
use crate::wire::{self, AckField, Common, COOKIE_LEN, NUM_CHANNELS};

/// COOKIE_ECHOs sent unanswered after which the handshake starts again
/// with an INIT (`on_handshake_timeout`).
const ECHO_TRIES: u32 = 2;

/// What the peers share, lent by `Protocol` for one operation.
pub(super) struct Ctx<'a, A> {
    pub cfg: &'a ProtoConfig,
    pub out: &'a mut Outbox<A>,
    pub spare_msgs: &'a mut SpareMsgs,
    /// Delivered requests not yet taken by the layer above (all peers).
    pub queued_requests: &'a mut usize,
    /// Our tags of associations that ended (their cookies are refused).
    pub closed: &'a mut ClosedTags,
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
    pub assoc: Assoc,
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
}

impl<A: Copy + PartialEq> Peer<A> {
    pub fn new(cfg: &ProtoConfig, addr: A) -> Peer<A> {
        Peer {
            addr,
            alias: None,
            announced: None,
            queued: None,
            timers: TimerTable::default(),
            assoc: Assoc::default(),
            tx: Default::default(),
            rx: Default::default(),
            rtt: RttEstimator::new(cfg.rto_initial, cfg.rto_min, cfg.rto_max)
                .with_ack_delay(cfg.ack_delay),
            heard: Instant::ZERO,
            last_heartbeat: Instant::ZERO,
            dead: None,
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

    /// Whether we have something to say: messages queued or in flight.
    pub fn busy(&self) -> bool {
        !self.tx.iter().all(|t| t.is_idle())
    }

    /// A message is queued: the silence that can kill the peer counts from
    /// now if it had nothing to say before (`was_busy`).
    pub fn arm_live(&mut self, now: Instant, was_busy: bool, cfg: &ProtoConfig) {
        if !was_busy {
            self.heard = self.heard.max(now);
            let at = now.plus(cfg.heartbeat_interval());
            if self.timers.get(Timer::Live).is_none_or(|t| t > at) {
                self.timers.set(Timer::Live, Some(at));
            }
        }
    }

    /// The liveness timer: declare the peer dead after `peer_timeout` of
    /// silence while busy, send a HEARTBEAT after a quarter of it, and say
    /// (true) when a dead peer's slot may be freed.
    fn on_live(&mut self, now: Instant, cx: &mut Ctx<'_, A>) -> bool {
        let cfg = cx.cfg;
        let hb = cfg.heartbeat_interval();
        if let Some(since) = self.dead {
            let until = since.plus(cfg.dead_linger());
            if self.assoc.state == AssocState::Closed && !self.busy() && now >= until {
                return true;
            }
            self.timers.set(Timer::Live, Some(until.max(now.plus(hb))));
            return false;
        }
        if !self.busy() {
            self.timers.stop(Timer::Live);
            return false;
        }
        let deadline = self.heard.plus(cfg.peer_timeout);
        if now >= deadline {
            self.die(now, cx);
            return false;
        }
        let silent = now.since(self.heard);
        if self.assoc.state == AssocState::Established
            && silent >= hb
            && now.since(self.last_heartbeat) >= hb
        {
            self.last_heartbeat = now;
            let start = cx.out.start();
            let nonce = now.0;
            wire::encode_heartbeat(
                &mut cx.out.bytes,
                &cx.cfg.integrity,
                self.assoc.peer_tag,
                false,
                nonce,
            );
            cx.out.push(self.addr, start);
        }
        let hb_at = self.heard.max(self.last_heartbeat).plus(hb);
        let hb_at = if hb_at > now { hb_at } else { now.plus(hb) };
        self.timers.set(Timer::Live, Some(deadline.min(hb_at)));
        false
    }

    /// Silent for the peer timeout: every unfinished message fails, the
    /// association ends, and new messages fail at once until a new one
    /// succeeds. What the channels hold is freed.
    pub fn die(&mut self, now: Instant, cx: &mut Ctx<'_, A>) {
        cx.out.peers_died += 1;
        self.close(cx);
        for t in &mut self.tx {
            *t = Default::default();
        }
        self.dead = Some(now);
        self.timers
            .set(Timer::Live, Some(now.plus(cx.cfg.dead_linger())));
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
    fn is_paused(&self, ch: usize) -> bool {
        self.timers.get(Timer::Pause(ch)).is_some()
    }

    /// Starts the handshake: sends an INIT offering `tag`.
    pub fn start_handshake(&mut self, now: Instant, tag: u64, cx: &mut Ctx<'_, A>) {
        self.assoc = Assoc {
            state: AssocState::CookieWait,
            local_tag: tag,
            init_sent: now,
            ..Assoc::default()
        };
        self.send_handshake(cx);
        self.timers
            .set(Timer::Handshake, Some(now.plus(self.rtt.rto())));
    }

    /// Sends the INIT or the COOKIE_ECHO, whichever the state asks for.
    fn send_handshake(&mut self, cx: &mut Ctx<'_, A>) {
        let start = cx.out.start();
        let integ = &cx.cfg.integrity;
        match (&self.assoc.state, &self.assoc.cookie) {
            (AssocState::CookieWait, _) => {
                wire::encode_init(&mut cx.out.bytes, integ, self.assoc.local_tag)
            }
            (AssocState::CookieEchoed, Some(c)) => {
                wire::encode_cookie_echo(&mut cx.out.bytes, integ, self.assoc.peer_tag, c)
            }
            _ => return,
        }
        cx.out.push(self.addr, start);
    }

    /// The INIT_ACK of our INIT: echo the cookie.
    pub fn on_init_ack(
        &mut self,
        now: Instant,
        resp_tag: u64,
        cookie: &[u8; COOKIE_LEN],
        cx: &mut Ctx<'_, A>,
    ) -> bool {
        if self.assoc.state != AssocState::CookieWait {
            return false;
        }
        if self.assoc.tries == 0 {
            // sent once: its answer times a round trip (Karn's rule)
            self.rtt.sample(now.since(self.assoc.init_sent));
        }
        self.rtt.on_progress();
        self.heard = now;
        self.assoc.state = AssocState::CookieEchoed;
        self.assoc.peer_tag = resp_tag;
        // the peer may send DATA (which confirms) as soon as it has our echo
        self.assoc.keyed(&cx.cfg.integrity);
        self.assoc.cookie = Some(Box::new(*cookie));
        self.assoc.tries = 0;
        self.send_handshake(cx);
        self.timers
            .set(Timer::Handshake, Some(now.plus(self.rtt.rto())));
        true
    }

    /// The peer has our COOKIE_ECHO (its COOKIE_ACK, or a packet of the
    /// association came): the association is established, DATA goes.
    #[inline]
    pub fn confirm(&mut self, now: Instant, cx: &mut Ctx<'_, A>) {
        // (tested inline: every packet of an association comes this way)
        if self.assoc.state == AssocState::CookieEchoed {
            self.establish(now, cx);
        }
    }

    /// `confirm` of an association that waited for it.
    #[inline(never)]
    fn establish(&mut self, now: Instant, cx: &mut Ctx<'_, A>) {
        self.assoc.state = AssocState::Established;
        self.assoc.since = now;
        self.dead = None;
        self.heard = now;
        self.assoc.cookie = None;
        self.assoc.tries = 0;
        self.rtt.on_progress();
        self.timers.stop(Timer::Handshake);
        self.arm_idle(now, cx.cfg);
        for ch in 0..NUM_CHANNELS {
            self.pump(now, ch, cx);
        }
    }

    /// A valid cookie from the peer's address establishes the association
    /// (`local_tag`, `peer_tag`), whatever the local state. Another pair of
    /// tags than the established one means the peer restarted: what was
    /// sent in the old association fails, what was held for it is void.
    pub fn accept_association(
        &mut self,
        now: Instant,
        local_tag: u64,
        peer_tag: u64,
        cx: &mut Ctx<'_, A>,
    ) {
        let (old_state, old_tag) = (self.assoc.state, self.assoc.local_tag);
        let a = &self.assoc;
        let same =
            a.state != AssocState::Closed && (a.local_tag, a.peer_tag) == (local_tag, peer_tag);
        let keys = if same {
            // the same association: its keys, and their packet counters, go on
            Some((
                std::mem::take(&mut self.assoc.tx),
                std::mem::take(&mut self.assoc.rx),
            ))
        } else {
            if matches!(
                old_state,
                AssocState::Established | AssocState::ShutdownSent
            ) {
                self.fail_all(FailReason::PeerUnreachable, cx.out);
            }
            if old_state != AssocState::Closed && old_tag != local_tag {
                cx.closed.record(old_tag, cx.cfg.cookie_lifetime);
            }
            self.reset_channels();
            None
        };
        self.assoc = Assoc {
            state: AssocState::Established,
            local_tag,
            peer_tag,
            since: now,
            ..Assoc::default()
        };
        match keys {
            Some((tx, rx)) => (self.assoc.tx, self.assoc.rx) = (tx, rx),
            None => self.assoc.keyed(&cx.cfg.integrity),
        }
        self.timers.stop(Timer::Handshake);
        self.arm_idle(now, cx.cfg);
        self.dead = None;
        self.heard = now;
        let start = cx.out.start();
        wire::encode_cookie_ack(&mut cx.out.bytes, &cx.cfg.integrity, peer_tag);
        cx.out.push(self.addr, start);
        for ch in 0..NUM_CHANNELS {
            self.pump(now, ch, cx);
        }
    }

    /// The association ends (ABORT): every unfinished message fails; a
    /// new send starts a new handshake.
    pub fn close(&mut self, cx: &mut Ctx<'_, A>) {
        self.fail_all(FailReason::PeerUnreachable, cx.out);
        self.end_association(cx);
    }

    /// The association is over (its messages dealt with): its tag is
    /// remembered (a cookie for it is refused), the channels start afresh.
    pub fn end_association(&mut self, cx: &mut Ctx<'_, A>) {
        if self.assoc.state != AssocState::Closed {
            cx.closed
                .record(self.assoc.local_tag, cx.cfg.cookie_lifetime);
        }
        self.reset_channels();
        self.assoc = Assoc::default();
        self.timers.stop(Timer::Handshake);
        self.timers.stop(Timer::Idle);
    }

    /// Both directions start afresh for a new association: nothing held
    /// or owed; unacknowledged fragments go back to be numbered anew, from
    /// epoch 0 (a peer with a new association has none of them).
    pub(super) fn reset_channels(&mut self) {
        self.rx = Default::default();
        for ch in 0..NUM_CHANNELS {
            self.tx[ch].rewind();
            self.timers.stop(Timer::Ack(ch));
            self.timers.stop(Timer::Pause(ch));
            self.timers.stop(Timer::Retransmit(ch));
        }
    }

    /// The handshake timer: send again, or past the retry limit give up
    /// everything queued for the peer. True: an unanswered shutdown of an
    /// idle association ends, the slot may be freed.
    fn on_handshake_timeout(&mut self, now: Instant, cx: &mut Ctx<'_, A>) -> bool {
        if self.assoc.state == AssocState::ShutdownSent {
            return self.on_shutdown_timeout(now, cx);
        }
        self.assoc.tries += 1;
        if self.assoc.tries > cx.cfg.retry_limit {
            self.close(cx);
            return false;
        }
        self.rtt.on_timeout();
        if self.assoc.state == AssocState::CookieEchoed && self.assoc.tries >= ECHO_TRIES {
            // The echo went unanswered again: the peer may have restarted
            // since its INIT_ACK (its new secret cannot open our cookie,
            // and it drops the echo without a word), or the cookie
            // expired. Asked again with an INIT (the same tag: a peer that
            // took the echo, its COOKIE_ACKs lost, answers with the tag of
            // the association it has).
            self.assoc.state = AssocState::CookieWait;
            self.assoc.cookie = None;
        }
        self.send_handshake(cx);
        self.timers
            .set(Timer::Handshake, Some(now.plus(self.rtt.rto())));
        false
    }

    /// Sends what send channel `ch` may send now: packets marked for
    /// resending, then new fragments while the window allows.
    #[inline]
    pub fn pump(&mut self, now: Instant, ch: usize, cx: &mut Ctx<'_, A>) {
        if self.is_paused(ch) || !self.tx[ch].has_to_send() || !self.assoc.can_send() {
            // Nothing to send (the usual case after an ACK), or no
            // association to send in yet: tested inline, no call.
            return;
        }
        self.transmit(now, ch, cx);
    }

    /// `pump` when there is something to send.
    #[inline(never)]
    fn transmit(&mut self, now: Instant, ch: usize, cx: &mut Ctx<'_, A>) {
        let rtt = &self.rtt;
        let rto = rtt.rto();
        let t = Transmission {
            header: Common {
                vtag: self.assoc.peer_tag,
                channel: ch as u8,
                epoch: self.tx[ch].epoch,
                seq: 0,
                acks: self.piggyback(),
            },
            rto,
            probe_after: rtt.probe_timeout_within(rto),
            window: cx.cfg.window,
        };
        if let Some(d) = self.tx[ch].transmit(now, &t, self.addr, &self.assoc.tx, cx.out) {
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
            self.unwatch_if_idle();
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
    pub fn on_data(
        &mut self,
        now: Instant,
        c: &Common,
        f: InFrag<'_>,
        cx: &mut Ctx<'_, A>,
        place: &mut dyn super::Placement<A>,
    ) {
        let ch = c.channel as usize;
        let used = self.rx[0].buffered() + self.rx[1].buffered();
        let mut rcx = RecvCx {
            from: self.addr,
            ch,
            recv_depth: cx.cfg.recv_depth,
            nack_limit: cx.cfg.nack_limit,
            budget: cx.cfg.peer_buffer.saturating_sub(used),
            queued_requests: cx.queued_requests,
            out: cx.out,
            place,
        };
        if let Some(last) = self.rx[ch].on_data(now, (c.epoch, c.seq), f, &mut rcx) {
            self.send_nack(ch, last, cx);
        }
        self.sync_ack_timer(ch, cx.cfg);
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
        if let Some(m) = self.tx[ch].give_up(id, |m| cfg.cut(&m.meta, m.payload.len())) {
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
        self.unwatch_if_idle();
    }

    /// Nothing left to say to a live peer: no liveness to watch.
    #[inline]
    fn unwatch_if_idle(&mut self) {
        if self.dead.is_none() && !self.busy() {
            self.timers.stop(Timer::Live);
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
    fn acks_carried(&mut self, cfg: &ProtoConfig) {
        for ch in 0..NUM_CHANNELS {
            if self.rx[ch].held.is_empty() && self.rx[ch].dup.is_none() {
                self.rx[ch].ack_paid();
                self.sync_ack_timer(ch, cfg);
            }
        }
    }

    #[inline]
    fn sync_ack_timer(&mut self, ch: usize, cfg: &ProtoConfig) {
        let due = self.rx[ch].ack_deadline(cfg.ack_delay);
        self.timers.set(Timer::Ack(ch), due);
    }

    /// The header of a control packet about receive channel `ch`: its epoch
    /// and next expected sequence number, with both piggybacked acks.
    fn control_header(&self, ch: usize) -> Common {
        let rx = &self.rx[ch];
        Common {
            vtag: self.assoc.peer_tag,
            channel: ch as u8,
            epoch: rx.epoch,
            seq: rx.next,
            acks: self.piggyback(),
        }
    }

    /// Sends the ACK of receive channel `ch` (with its SACK bitmap).
    pub fn send_ack(&mut self, ch: usize, cx: &mut Ctx<'_, A>) {
        let c = self.control_header(ch);
        let sack = self.rx[ch].sack_bits();
        let dup = std::mem::take(&mut self.rx[ch].dup);
        let out = &mut *cx.out;
        let start = out.start();
        wire::encode_ack_dup(&mut out.bytes, &self.assoc.tx, &c, sack, dup);
        out.stats.acks_sent += 1;
        out.push(self.addr, start);
        self.rx[ch].ack_paid();
        self.timers.stop(Timer::Ack(ch));
    }

    fn send_nack(&mut self, ch: usize, last: bool, cx: &mut Ctx<'_, A>) {
        let c = self.control_header(ch);
        let start = cx.out.start();
        wire::encode_nack(&mut cx.out.bytes, &self.assoc.tx, &c, last);
        cx.out.stats.nacks_sent += 1;
        cx.out.push(self.addr, start);
    }
}
