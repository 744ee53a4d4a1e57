//! The sending half of one reliable channel: sequence numbers, the packets in
//! flight and the fragments waiting for window; what goes out when
//! (`transmit`), what a NACK or a timeout does to the flight; what an ACK
//! does is in `ack.rs`.

mod ack;
mod build;
mod lanes;
mod msg;
mod order;
#[cfg(test)]
mod order_tests;
mod restart;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;

pub use crate::proto::out_msg::OutMsg;
use build::send_fragment;
use lanes::LaneRun;
pub use lanes::{LaneClocks, LaneNews, MAX_LANES};
use msg::cut_to_room;
pub use msg::{push_fragments, recut, Cut, Fragment, MsgRef, Payload, SpareMsgs};
pub use order::{overtaken, overtakes};

use super::congestion::{flight_len, FlightNews, Gate};
use super::event::MsgId;
use super::outbox::{Outbox, Piece};
use super::rtt::RttEstimator;
use super::stats;
use crate::path::Path;
use crate::stats::Statistics;
use crate::time::{Instant, Nanos};
use crate::wire::{self, Common, Integrity};

/// Retransmission allowance per byte sent ahead in the same burst (2 ns per
/// byte: a receiver that takes in 500 MB/s).
pub(crate) const BURST_NS_PER_BYTE: u64 = 2;

/// A fragment that has a sequence number and is waiting for its ACK.
#[derive(Debug)]
pub struct InFlight {
    pub seq: u32,
    pub frag: Fragment,
    pub first_sent: Instant,
    pub last_sent: Instant,
    /// When it is retransmitted unless acknowledged before.
    pub deadline: Instant,
    pub retries: u32,
    pub nacks: u32,
    /// Selectively acknowledged: the receiver holds it; never resent.
    pub sacked: bool,
    /// To be sent again at the next opportunity (go-back-N after a NACK,
    /// or a gap shown by a SACK).
    pub resend: bool,
    /// `deadline` is a reordering timer, not a retransmission timeout: a
    /// packet sent after this one has arrived; if this one's ACK is not
    /// back by then, it is taken as lost (fast retransmit, no backoff).
    /// Also the tail-loss probe's timer, and a first copy's second probe
    /// (`transmit`): on expiry, resent without backoff.
    pub reorder_timer: bool,
    /// The path (its index in the association's `Paths`) its last copy
    /// took: its ACK or loss is news for that path's controller; and the
    /// path of the copy before it (`lane` when sent once or on one path:
    /// `InFlight::arrived_lane`).
    pub lane: u8,
    pub prev_lane: u8,
}

#[derive(Debug, Default)]
pub struct SendChannel {
    pub epoch: u16,
    pub next_seq: u32,
    /// Ordered by sequence number.
    pub in_flight: VecDeque<InFlight>,
    /// Fragments not yet given a sequence number, in the order they go
    /// (`order.rs`: a short message goes ahead of bulk not begun).
    pub pending: VecDeque<Fragment>,
    /// The first `settled` fragments of `pending` keep their place; after
    /// them only whole messages that a short one may pass (`order.rs`).
    pub settled: usize,
    /// Bytes of messages queued ahead of the message after `settled`.
    pub passed: u64,
    /// How long after its last and its first copy the last resent packet
    /// was acknowledged: if the receiver then reports a duplicate, the
    /// copy was needless and the timers may learn that (`needless_copy`).
    pub resent_answered: Option<(u32, Nanos, Nanos)>,
    /// A retransmission timeout resent only the oldest packet at this
    /// time; the others expired with it wait (`DEFERRED`) for the first
    /// ACK after it (F-RTO, RFC 5682): if it acknowledges a packet not
    /// resent since, the timeout was spurious and nothing more goes; else
    /// they are resent.
    pub rto_at: Option<Instant>,
    /// How many packets deferred by a timeout went at the last step (see
    /// `take_ack`): each ACK that does not show the timeout spurious lets
    /// twice as many go.
    pub frto_sent: usize,
    /// Bytes in flight (`congestion::flight_len` of each packet sent, not
    /// acknowledged, SACKed or taken as lost): exact, checked by
    /// `invariants.rs`; the path's window bounds their sum.
    pub outstanding: u64,
    /// What the flight told since the peer last looked, for the path's
    /// congestion controller (`Peer::settle`).
    pub news: FlightNews,
    /// The same news by path (striping: `Peer::settle`).
    pub lane_news: LaneNews,
    /// The newest packet numbered in this epoch of a message that keeps
    /// the channel's order (`MsgMeta::keeps_order`): while it is not
    /// acknowledged, no request goes `unordered`.
    pub last_ordered: Option<u32>,
}

/// The deadline of a packet waiting out a retransmission timeout's answer.
pub(in crate::proto) const DEFERRED: Instant = Instant(u64::MAX);

impl InFlight {
    /// Whether it counts in flight: sent, not SACKed, not taken as lost.
    #[inline]
    pub fn counts(&self) -> bool {
        !self.sacked && !self.resend
    }

    /// Bytes it counts in flight when it does.
    #[inline]
    pub fn flight_len(&self) -> u64 {
        flight_len(self.frag.len)
    }

    /// Whether its acknowledgement times one round trip: sent once, never
    /// refused, and not already acknowledged selectively (then the
    /// cumulative ACK comes late, after the gap before it was filled).
    pub fn rtt_eligible(&self) -> bool {
        self.retries == 0 && self.nacks == 0 && self.first_sent == self.last_sent && !self.sacked
    }
}

/// `a - b` as a signed distance in sequence space.
pub fn seq_diff(a: u32, b: u32) -> i32 {
    a.wrapping_sub(b) as i32
}

impl SendChannel {
    /// The last `held` packets first sent at `since` or later and before
    /// `now`, never resent, leave only `now` (the layer above held them
    /// back: `am/batch.rs`): their send times and timers start now, so
    /// that a hold is neither a round trip nor a reason to resend them.
    /// (Counted, not told by time alone: a packet that did leave at the
    /// instant the hold began keeps its times, and its timer.)
    pub fn restamp(&mut self, since: Instant, now: Instant, held: usize) {
        let mut left = held;
        for p in self.in_flight.iter_mut().rev() {
            if left == 0 || p.first_sent < since {
                break;
            }
            if p.retries == 0 && p.first_sent < now {
                let delay = now.since(p.first_sent);
                p.first_sent = now;
                p.last_sent = now;
                p.deadline = p.deadline.plus(delay);
                left -= 1;
            }
        }
    }

    /// Counts the bytes in flight afresh (after a change of many packets
    /// on a rare path: a NACK, a timeout, a new epoch).
    pub fn recount(&mut self) {
        self.outstanding = self.flight_bytes();
    }

    /// The bytes in flight by a walk over the flight.
    pub fn flight_bytes(&self) -> u64 {
        self.in_flight
            .iter()
            .filter(|p| p.counts())
            .map(InFlight::flight_len)
            .sum()
    }

    #[inline]
    pub fn is_idle(&self) -> bool {
        self.in_flight.is_empty() && self.pending.is_empty()
    }

    /// Whether an ACK of everything before `next` removes any packet.
    #[inline]
    pub fn acks_any(&self, next: u32) -> bool {
        self.in_flight
            .front()
            .is_some_and(|p| seq_diff(p.seq, next) < 0)
    }

    /// Takes every message that is not yet wholly acknowledged off the channel
    /// (in flight or pending), in order, each once. Used when the channel
    /// starts a new epoch: the receiver discards what it held of them.
    pub fn drain_unfinished(&mut self) -> Vec<MsgRef> {
        let mut out: Vec<MsgRef> = Vec::new();
        let frags = self
            .in_flight
            .drain(..)
            .map(|p| p.frag)
            .chain(self.pending.drain(..));
        for f in frags {
            if out.last().map(|m| m.id) != Some(f.msg.id) {
                out.push(f.msg);
            }
        }
        self.outstanding = 0;
        self.resettle();
        out
    }

    /// Starts a new epoch: sequence numbers restart at 0.
    pub fn new_epoch(&mut self) {
        self.epoch = self.epoch.wrapping_add(1);
        self.next_seq = 0;
        self.last_ordered = None;
    }

    /// Back to the start of a new association: every fragment not yet
    /// acknowledged waits again, in order, to be numbered from 0 in epoch 0.
    pub fn rewind(&mut self) {
        while let Some(p) = self.in_flight.pop_back() {
            self.pending.push_front(p.frag);
        }
        self.resettle();
        self.outstanding = 0;
        self.news = FlightNews::default();
        self.lane_news = LaneNews::default();
        self.epoch = 0;
        self.next_seq = 0;
        self.last_ordered = None;
    }

    /// Whether `transmit` has anything to send.
    #[inline]
    pub fn has_to_send(&self) -> bool {
        !self.pending.is_empty() || self.in_flight.iter().any(|p| p.resend)
    }

    /// Sends packets marked for resending, then new fragments while the
    /// window allows (the packet window and `gate`, the path's congestion
    /// window and pacing), each as a DATA packet with `t.header` (its
    /// `seq` set) on path `to`. Returns the earliest retransmission
    /// deadline armed, None when nothing was sent.
    #[inline(always)]
    pub fn transmit<A: Copy + PartialEq>(
        &mut self,
        now: Instant,
        t: &Transmission,
        gate: &mut Gate,
        to: Path<A>,
        integ: &Integrity,
        out: &mut Outbox<A>,
    ) -> Option<Instant> {
        let ch = t.header.channel as usize;
        // (resends are rare: the usual transmit tests for one, no more)
        let mut first_deadline = if self.in_flight.iter().any(|p| p.resend) {
            self.resend_marked(now, t, gate, to, integ, out)
        } else {
            None
        };
        // A new packet waits at the receiver behind what is still in flight
        // (sent, not yet acknowledged or SACKed): its timer allows for those
        // bytes too, so that a window of large fragments sent one by one as
        // ACKs come back is not resent while it queues.
        let mut burst_bytes: u64 = if self.pending.is_empty() {
            0
        } else {
            self.in_flight
                .iter()
                .filter(|p| !p.sacked)
                .map(|p| p.frag.len as u64)
                .sum()
        };
        let mut new_sent = false;
        if t.probe_after.is_some()
            && !self.pending.is_empty()
            && self.in_flight.len() < t.window
            && gate.allows()
        {
            self.unprobe_newest(t.rto);
        }
        while self.in_flight.len() < t.window && gate.allows() {
            let Some(mut frag) = self.take_next() else {
                break;
            };
            if frag.len as usize >= GATHER_MIN {
                let room = out.open_room(to);
                if room > 0 {
                    let (max, queued) = (out.limit(), self.pending.len());
                    cut_to_room(&mut frag, &mut self.pending, room, integ, max);
                    // (a piece put back in front: its message's, begun)
                    self.settled += self.pending.len() - queued;
                }
            }
            let seq = self.next_seq;
            // numbered in order, without a gap, within the window
            debug_assert!(self
                .in_flight
                .back()
                .is_none_or(|p| p.seq.wrapping_add(1) == seq));
            debug_assert!(self.in_flight.len() < t.window);
            self.next_seq = self.next_seq.wrapping_add(1);
            let header = (seq, self.numbered_unordered(ch, seq, &frag));
            let len = send_fragment(out, to, integ, &t.header, header, &frag) as u64;
            let cat = frag.msg.meta.category.index();
            stats::count_data_sent(&mut out.stats, ch, cat, len);
            // A burst takes time to leave and to be taken in at the other
            // end: each packet's timer allows for the bytes sent before it
            // in this burst, so a large message is not resent while its
            // tail is still being handled.
            let deadline = now.plus(t.rto + burst_bytes * BURST_NS_PER_BYTE);
            burst_bytes += len;
            let counted = flight_len(frag.len);
            self.outstanding += counted;
            gate.take(counted);
            self.in_flight.push_back(InFlight {
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
                lane: t.lane,
                prev_lane: t.lane,
            });
            new_sent = true;
            first_deadline.get_or_insert(deadline);
        }
        // Tail-loss probe: see `Transmission::probe_after`.
        let last_new = if new_sent {
            self.in_flight.back_mut()
        } else {
            None
        };
        if let (Some(last), Some(pto)) = (last_new, t.probe_after) {
            let probe = last.first_sent.plus(pto + burst_bytes * BURST_NS_PER_BYTE);
            if probe < last.deadline {
                last.deadline = probe;
                last.reorder_timer = true;
                first_deadline = Some(first_deadline.map_or(probe, |d| d.min(probe)));
            }
        }
        first_deadline
    }

    /// `transmit`'s packets marked for resending, each sent again; the
    /// earliest deadline armed.
    #[inline(never)]
    fn resend_marked<A: Copy + PartialEq>(
        &mut self,
        now: Instant,
        t: &Transmission,
        gate: &mut Gate,
        to: Path<A>,
        integ: &Integrity,
        out: &mut Outbox<A>,
    ) -> Option<Instant> {
        let ch = t.header.channel as usize;
        let mut first_deadline: Option<Instant> = None;
        // A second probe is for a tail (a packet or two in flight): in a
        // longer flight RACK finds a lost copy from later packets' SACKs.
        let tail = self.in_flight.len() <= 2;
        let clear = ch == wire::CHANNEL_REQUEST as usize && self.order_clear();
        for p in self.in_flight.iter_mut().filter(|p| p.resend) {
            p.resend = false;
            // The first copy of a packet lost at random (a probe, or one a
            // later packet's SACK showed lost) is lost too now and then:
            // it gets a second probe's time, not a whole RTO (a loss
            // repaired in round trips even then); later copies back off.
            let first_copy = tail && p.retries == 0 && p.nacks == 0 && p.first_sent == p.last_sent;
            let again = t.again_after.filter(|_| first_copy);
            p.reorder_timer = again.is_some_and(|a| a < t.rto);
            p.last_sent = now;
            p.prev_lane = p.lane;
            p.lane = t.lane;
            p.deadline = now.plus(again.map_or(t.rto, |a| a.min(t.rto)));
            // a retransmission replaces bytes taken as lost: it always
            // goes, and counts in flight again
            let len = p.flight_len();
            self.outstanding += len;
            gate.take(len);
            let cat = p.frag.msg.meta.category.index();
            stats::count_retransmit(&mut out.stats, ch, cat);
            let free = clear && p.frag.may_overtake();
            send_fragment(out, to, integ, &t.header, (p.seq, free), &p.frag);
            first_deadline = Some(first_deadline.map_or(p.deadline, |d| d.min(p.deadline)));
        }
        first_deadline
    }

    /// New packets are about to go and the newest carries the probe: the
    /// packet that carried it (a reordering timer on the newest is a probe)
    /// gets back its RTO. One probe per channel (RFC 8985 TLP): a receiver
    /// off the CPU costs one needless copy, not one per packet sent since.
    fn unprobe_newest(&mut self, rto: Nanos) {
        if let Some(p) = self.in_flight.back_mut() {
            if p.reorder_timer && !p.sacked && !p.resend {
                p.reorder_timer = false;
                p.deadline = p.deadline.max(p.last_sent.plus(rto));
            }
        }
    }

    /// Takes a NACK of packet `seq` (everything before it was acknowledged
    /// already): the receiver dropped it for want of buffer.
    pub fn on_nack(&mut self, epoch: u16, seq: u32, last: bool) -> Nacked {
        if epoch != self.epoch {
            return Nacked::Stale;
        }
        let Some(front) = self.in_flight.front_mut() else {
            return Nacked::Stale;
        };
        if front.seq != seq {
            return Nacked::Stale;
        }
        front.nacks += 1;
        // A SACK for it is void: the receiver dropped it.
        if front.sacked {
            front.sacked = false;
            self.outstanding += front.flight_len();
        }
        // The receiver counts its refusals and says when it gives up: only
        // then is it sure never to deliver the message (the sender cannot
        // count: a NACK may be duplicated, or overtake the ACK of a copy
        // the receiver took after all).
        if last {
            return Nacked::GiveUp(front.frag.msg.id);
        }
        // Go back to the refused packet: resend it and all after it that the
        // receiver does not hold (after a pause, which the caller keeps).
        for p in self.in_flight.iter_mut() {
            if !p.sacked {
                p.resend = true;
            }
        }
        // the receiver's buffer, not the network: no congestion news
        self.recount();
        Nacked::GoBack
    }

    /// Marks for resending the packets whose deadline is past. The oldest
    /// is timed even when SACKed: a receiver that refused it (NACK) dropped
    /// it, and the NACK may be lost.
    pub fn on_timeout(&mut self, now: Instant, retry_limit: u32) -> Expired {
        let mut e = Expired::default();
        let mut deferred = false;
        let newest = self.in_flight.len().wrapping_sub(1);
        let news = &mut self.news;
        for (i, p) in self.in_flight.iter_mut().enumerate() {
            if (!p.sacked || i == 0) && !p.resend && p.deadline <= now {
                if p.reorder_timer {
                    // lost, by the reordering rule: no backoff (the newest
                    // carries the tail-loss probe: no loss is known)
                    if i != newest && !p.sacked {
                        news.lost(p.flight_len(), p.last_sent);
                    }
                    p.sacked = false;
                    p.resend = true;
                    continue;
                }
                if e.backoff {
                    // a timeout resends the oldest only; the rest wait
                    // for the first ACK after it (F-RTO)
                    p.deadline = DEFERRED;
                    deferred = true;
                    continue;
                }
                p.sacked = false;
                p.resend = true;
                p.retries += 1;
                e.backoff = true;
                if p.retries > retry_limit {
                    e.unreachable = true;
                }
            }
        }
        if e.backoff {
            // The rest of the flight waits for that ACK too, not only what
            // expired at this instant: packets sent one by one expire one
            // by one, and a receiver off the CPU for longer than the RTO
            // would get a copy of each (TCP's one timer per connection).
            for p in self.in_flight.iter_mut().filter(|p| !p.sacked && !p.resend) {
                p.deadline = DEFERRED;
                p.reorder_timer = false;
                deferred = true;
            }
        }
        if deferred {
            self.rto_at = Some(now);
            self.frto_sent = 1;
        }
        self.recount();
        e
    }

    /// The earliest retransmission deadline (reordering timers and probes
    /// included), if anything is in flight.
    pub fn retransmit_deadline(&self) -> Option<Instant> {
        self.in_flight
            .iter()
            .enumerate()
            .filter(|&(i, p)| !p.sacked || i == 0)
            .map(|(_, p)| p.deadline)
            .min()
    }

    /// Gives up message `id`; the others start over in a new epoch, each
    /// cut as `cut` says. Returns the message given up.
    pub fn give_up(&mut self, id: MsgId, cut: impl Fn(&OutMsg) -> Cut) -> Option<MsgRef> {
        let msgs = self.drain_unfinished();
        self.new_epoch();
        let mut failed = None;
        for m in msgs {
            if m.id == id {
                failed = Some(m);
            } else {
                let c = cut(&m);
                push_fragments(&mut self.pending, m, c);
            }
        }
        self.resettle();
        failed
    }
}

/// What the peer gives `SendChannel::transmit` to send with.
pub struct Transmission {
    /// The header of the channel's DATA packets (`seq` is filled in).
    pub header: Common,
    pub rto: Nanos,
    /// Tail-loss probe (after RFC 8985 TLP): the last packet of what goes
    /// out now is resent once, without backoff, if no ACK came within this
    /// (`RttEstimator::probe_timeout`); a lost last packet has no later one
    /// whose SACK would reveal it. None before any round trip is known.
    pub probe_after: Option<Nanos>,
    /// The second probe of a lost tail packet's first copy
    /// (`RttEstimator::second_probe_within`: twice `probe_after`, or the
    /// floor learnt from a descheduled peer if longer).
    pub again_after: Option<Nanos>,
    pub window: usize,
    /// The index of the path `to` in the association's `Paths`.
    pub lane: u8,
}

/// What a NACK asks for.
pub enum Nacked {
    /// Not about the oldest packet in flight of this epoch: ignored.
    Stale,
    /// The receiver gave the message up (final NACK).
    GiveUp(MsgId),
    /// Resend from the refused packet on, after a pause.
    GoBack,
}

/// What a timeout found.
#[derive(Default)]
pub struct Expired {
    /// A retransmission timeout expired: the RTO backs off.
    pub backoff: bool,
    /// A packet went past the retry limit.
    pub unreachable: bool,
}

/// Fragments of at least this many bytes of a shared message go out
/// gathered (header, the payload where it lies, trailer) rather than
/// copied into the outbox: below it the copy costs less than the extra
/// piece.
pub const GATHER_MIN: usize = 2048;
