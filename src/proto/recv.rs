//! The receiving half of one reliable channel: the next expected sequence
//! number, packets held ahead of a gap (SACKed), refusals for want of
//! buffer, message reassembly, and the ACK owed. A later fragment's short
//! header (`wire::Packet::More`) says only where its bytes lie: it means
//! something only taken in order, as the next bytes of the message being
//! reassembled; ahead of a gap it is held, unread, as any packet.

use std::collections::BTreeMap;

use super::event::Event;
use super::limits::{MAX_MESSAGE, MAX_WINDOW};
use super::outbox::Outbox;
pub use super::recv_frag::{held_cost, HeldPacket, InFrag};
use super::send::seq_diff;
use super::stats;
use crate::time::{Instant, Nanos};
use crate::wire::{Category, MsgKind, MsgMeta, Placed, CHANNEL_REPLY, CHANNEL_REQUEST};

/// Whether a packet ahead of a gap may be delivered at once rather than
/// held: a whole message in one fragment that no order is promised for.
/// On the reply channel, a user reply or an automatic one (AM-2 promises
/// no order between replies; each answers its own request and frees its
/// own credit); remote memory's answers, name answers and transaction
/// acks keep the channel's order (their handling reads state that the
/// messages before them change). On the request channel, a user request
/// its sender marked `unordered` (`Common::unordered`): a put or get sent
/// before a request is performed before its handler runs, and what is in
/// a gap is unknown here, but the sender knows whether anything that keeps
/// order is unacknowledged before it. A forged mark only lets a packet go
/// earlier: its marker refuses it twice all the same. `RecvChannel::
/// overtakes` says when a request may (room in the receive buffer, the
/// start window's bound).
#[inline]
fn unordered(ch: usize, f: &InFrag<'_>) -> bool {
    let Some(meta) = f.meta else { return false };
    f.frag_off == 0
        && f.bytes.len() == f.msg_len as usize
        && f.msg_len as usize <= MAX_MESSAGE
        && meta.placed.is_none()
        && if ch == CHANNEL_REPLY as usize {
            matches!(meta.kind, MsgKind::User | MsgKind::AutoReply)
        } else {
            f.unordered && !meta.keeps_order()
        }
}

/// Where a packet's payload goes when it is taken
/// (`RecvChannel::next_in_place`).
#[derive(Debug)]
pub enum InPlace {
    /// Into the segment, at its offset in the placed message of this meta.
    Placed(MsgMeta),
    /// At the end of the message's reassembly buffer.
    Gathered,
}

/// A message whose first fragments arrived.
#[derive(Debug)]
pub struct Reassembly {
    pub meta: MsgMeta,
    /// The whole message's length, as its first fragment said.
    pub len: u32,
    pub buf: Vec<u8>,
    /// A placed message (`meta.placed`, `place.rs`): the bytes written so
    /// far (`buf` stays empty).
    pub placed: u32,
}

impl Reassembly {
    /// Room in `buf` for `n` more bytes: it grows with the data (doubling,
    /// at most to the message's length).
    fn make_room(&mut self, n: usize) {
        let need = self.buf.len() + n;
        if need > self.buf.capacity() {
            let want = (2 * self.buf.capacity()).max(need).min(self.len as usize);
            self.buf.reserve_exact(want.max(need) - self.buf.len());
        }
    }
}

#[derive(Debug, Default)]
pub struct RecvChannel {
    /// Whether any packet of this channel has been taken (acks are worth
    /// piggybacking).
    pub known: bool,
    pub epoch: u16,
    pub next: u32,
    /// Packets after a gap, by sequence number (distance 1..=64 from
    /// `next`), and the markers of those delivered already.
    pub held: BTreeMap<u32, HeldPacket>,
    /// What `held` costs, as `held_cost` counts it.
    pub held_bytes: usize,
    pub reassembly: Option<Reassembly>,
    /// An ACK is owed since this time.
    pub ack_owed_since: Option<Instant>,
    /// The ACK must go out at once (a duplicate or a gap was seen).
    pub ack_urgent: bool,
    /// The packet `next` refused for want of buffer, and how many times.
    pub refused: Option<(u32, u32)>,
    /// A packet that arrived twice since the last ACK: the next ACK says
    /// which (`wire::encode_ack_dup`), and goes on its own.
    pub dup: Option<u32>,
}

impl RecvChannel {
    /// Whether DATA packet `seq` of `epoch` belongs to the channel's
    /// current epoch, or starts the next one. Every association starts both
    /// ends of a channel at epoch 0; the sender moves to a newer epoch only
    /// when it gives messages up (final NACK, retry limit) and then numbers
    /// from 0 again: a newer epoch is adopted only together with sequence
    /// number 0, never from whatever a packet says (an older epoch, or a
    /// newer one at another number, is stale). Newer, not only the next:
    /// a sender cut off twice in a row skips one.
    #[inline]
    pub fn accept_epoch(&mut self, epoch: u16, seq: u32) -> bool {
        let d = epoch.wrapping_sub(self.epoch) as i16;
        if d == 0 {
            self.known = true;
            return true;
        }
        if d < 0 || seq != 0 {
            return false;
        }
        self.known = true;
        self.epoch = epoch;
        self.next = 0;
        self.held.clear();
        self.held_bytes = 0;
        self.reassembly = None;
        self.refused = None;
        true
    }

    /// Where the payload of DATA packet `seq` of `epoch` (`len` bytes at
    /// `frag_off` of a message of `msg_len`) goes when it is taken, if it
    /// continues the message being reassembled: it is the next in order
    /// of the current epoch, and the message's next bytes, within its
    /// length (and of that length, `msg_len`, when the packet says one).
    /// Reads only: the packet is not checked yet (`Protocol::take_deferred`).
    pub fn next_in_place(
        &self,
        (epoch, seq): (u16, u32),
        frag_off: u32,
        msg_len: Option<u32>,
        len: usize,
    ) -> Option<InPlace> {
        if epoch != self.epoch || seq != self.next || frag_off == 0 {
            return None;
        }
        let r = self.reassembly.as_ref()?;
        let got = match r.meta.placed {
            Some(_) => r.placed as usize,
            None => r.buf.len(),
        };
        let len_ok = msg_len.is_none_or(|l| l == r.len);
        if got != frag_off as usize || !len_ok || len > r.len as usize - got {
            return None;
        }
        Some(match r.meta.placed {
            Some(_) => InPlace::Placed(r.meta),
            None => InPlace::Gathered,
        })
    }

    /// Appends `bytes` to the message being gathered (`InPlace::Gathered`),
    /// summed as they are copied (`wire::extend_sum`); their sum, or None,
    /// nothing appended, when it cannot.
    pub fn gather_summed(&mut self, bytes: &[u8]) -> Option<u32> {
        let r = self.reassembly.as_mut()?;
        r.make_room(bytes.len());
        crate::wire::extend_sum(&mut r.buf, bytes)
    }

    /// Takes back what `gather_summed` appended: the message's bytes end at
    /// `at` again.
    pub fn ungather(&mut self, at: usize) {
        if let Some(r) = self.reassembly.as_mut() {
            r.buf.truncate(at);
        }
    }

    /// Bytes held for the peer's budget: held packets and the partly
    /// reassembled message (what arrived, not what its header promised).
    pub fn buffered(&self) -> usize {
        self.held_bytes + self.reassembly.as_ref().map_or(0, |r| r.buf.capacity())
    }

    /// Bytes this channel holds on the heap (an estimate).
    #[cfg(any(test, feature = "testing"))] // inspection for tests and the simulator
    pub fn heap_bytes(&self) -> usize {
        self.buffered()
    }

    /// Removes held packet `seq`.
    fn unhold(&mut self, seq: u32) -> Option<HeldPacket> {
        let h = self.held.remove(&seq)?;
        self.held_bytes -= held_cost(h.payload.len());
        Some(h)
    }

    /// The SACK bitmap: bit i set when `next + 1 + i` is held.
    pub fn sack_bits(&self) -> u64 {
        let mut bits = 0u64;
        for &s in self.held.keys() {
            let d = seq_diff(s, self.next);
            if (1..=64).contains(&d) {
                bits |= 1u64 << (d - 1);
            }
        }
        bits
    }

    /// Counts one more refusal of packet `next`; returns how many so far.
    pub fn refuse(&mut self) -> u32 {
        let n = match self.refused {
            Some((s, n)) if s == self.next => n + 1,
            _ => 1,
        };
        self.refused = Some((self.next, n));
        n
    }

    /// Packet `next` was refused `limit + 1` times: it is never taken in
    /// this epoch, whatever room there is now (the sender was told to give
    /// it up, and may have).
    pub fn given_up(&self, limit: u32) -> bool {
        matches!(self.refused, Some((s, n)) if s == self.next && n > limit)
    }

    pub fn owe_ack(&mut self, now: Instant, urgent: bool) {
        if self.ack_owed_since.is_none() {
            self.ack_owed_since = Some(now);
        }
        self.ack_urgent |= urgent;
    }

    /// The owed ACK went out (or rode on a packet).
    pub fn ack_paid(&mut self) {
        self.ack_owed_since = None;
        self.ack_urgent = false;
    }

    /// When the owed ACK is due, if one is owed.
    pub fn ack_deadline(&self, ack_delay: Nanos) -> Option<Instant> {
        let t0 = self.ack_owed_since?;
        Some(if self.ack_urgent {
            t0
        } else {
            t0.plus(ack_delay)
        })
    }

    /// Takes DATA packet `seq` of `epoch` carrying `f`: holds it if it is
    /// ahead of a gap, else takes it and whatever was held behind it, as
    /// long as the receive buffer has room. Returns `Some(last)` when a
    /// NACK is to be sent (final when `last`).
    #[inline]
    pub fn on_data<A: Copy>(
        &mut self,
        now: Instant,
        (epoch, seq): (u16, u32),
        f: InFrag<'_>,
        cx: &mut RecvCx<'_, A>,
    ) -> Option<bool> {
        if !self.accept_epoch(epoch, seq) {
            cx.out.stats.stale_dropped += 1;
            return None;
        }
        let d = seq_diff(seq, self.next);
        if d < 0 || self.held.contains_key(&seq) {
            cx.out.stats.duplicates_dropped += 1;
            self.dup = Some(seq);
            self.owe_ack(now, true);
            return None;
        }
        if d > MAX_WINDOW as i32 {
            cx.out.stats.stale_dropped += 1;
            return None;
        }
        if d > 0 {
            stats::count_out_of_order(&mut cx.out.stats, cx.ch);
            let early = unordered(cx.ch, &f) && self.overtakes(seq, cx);
            let cost = held_cost(if early { 0 } else { f.bytes.len() });
            if cost > cx.budget {
                // Beyond the peer's budget: dropped, not SACKed; the
                // sender sends it again.
                cx.out.budget_dropped += 1;
                return None;
            }
            self.held_bytes += cost;
            let payload = cx.out.pool.copy_of(f.bytes);
            let payload = if let (true, Some(&(mut meta))) = (early, f.meta) {
                // no order promised: delivered now, its marker held
                if cx.ch == CHANNEL_REQUEST as usize {
                    meta.overtook = self.missing_before(seq);
                    *cx.queued_requests += 1;
                }
                cx.out.events.push_back(Event::Delivered {
                    from: cx.from,
                    channel: cx.ch as u8,
                    meta,
                    payload,
                });
                Vec::new()
            } else {
                payload
            };
            self.held.insert(
                seq,
                HeldPacket {
                    meta: f.meta.copied(),
                    msg_len: f.msg_len,
                    frag_off: f.frag_off,
                    payload,
                    delivered: early,
                },
            );
            // within the window (the SACK bitmap's width)
            debug_assert!(self.held.len() <= MAX_WINDOW);
            self.owe_ack(now, true);
            return None;
        }
        // In order: take it, then whatever was held behind it. When it
        // fills a gap, the sender is waiting to hear: ACK at once.
        let filled_gap = !self.held.is_empty();
        if let Err(last) = self.take_in_order(now, filled_gap, f, cx) {
            return Some(last);
        }
        if filled_gap {
            while let Some(h) = self.unhold(self.next) {
                if h.delivered {
                    self.step_over_delivered(now, cx);
                    continue;
                }
                let f = InFrag {
                    meta: h.meta.as_ref(),
                    msg_len: h.msg_len,
                    frag_off: h.frag_off,
                    bytes: &h.payload,
                    copied: false,
                    unordered: false,
                };
                let r = self.take_in_order(now, filled_gap, f, cx);
                cx.out.pool.give(h.payload);
                if let Err(last) = r {
                    return Some(last);
                }
            }
        }
        None
    }

    /// Takes packet `next`, unless the receive buffer is full: then it is
    /// dropped, even if it was held (and SACKed), and `Err(last)` says to
    /// NACK it: the sender goes back to it and sends it again, or, past the
    /// limit (`last`), gives it up.
    fn take_in_order<A: Copy>(
        &mut self,
        now: Instant,
        filled_gap: bool,
        f: InFrag<'_>,
        cx: &mut RecvCx<'_, A>,
    ) -> Result<(), bool> {
        let refuse = cx.ch == CHANNEL_REQUEST as usize
            && f.frag_off == 0
            && (*cx.queued_requests >= cx.recv_depth || self.given_up(cx.nack_limit));
        if refuse && (self.refuse() <= cx.nack_limit || !self.delivered_ahead()) {
            return Err(self.given_up(cx.nack_limit));
        }
        // (taken, past the receive depth if it must: given up, its
        // sender would send the messages after it again in a new epoch,
        // and one delivered early would run twice; at most the window's
        // packets more are taken so, `overtakes`)
        self.refused = None;
        self.next = self.next.wrapping_add(1);
        self.owe_ack(now, filled_gap);
        if self.accept_fragment(f, cx) && cx.ch == CHANNEL_REQUEST as usize {
            *cx.queued_requests += 1;
        }
        Ok(())
    }

    /// Whether request packet `seq`, ahead of a gap and `unordered`, is
    /// delivered now: the receive buffer has room (as a request taken in
    /// order would need), `next` was not given up (the sender may be
    /// starting the messages after it over in a new epoch: `take_in_order`
    /// never gives one up while a message after it was delivered early),
    /// and fewer than `MAX_WINDOW` packets are before it (what
    /// `missing_before` counts stays within the start window). Replies
    /// always are.
    #[inline]
    fn overtakes<A: Copy>(&self, seq: u32, cx: &RecvCx<'_, A>) -> bool {
        cx.ch == CHANNEL_REPLY as usize
            || (seq_diff(seq, self.next) < MAX_WINDOW as i32
                && *cx.queued_requests < cx.recv_depth
                && !self.given_up(cx.nack_limit))
    }

    /// How many packets before `seq` (ahead of the gap at `next`) have not
    /// been delivered: neither taken in order nor delivered early. At
    /// most `MAX_WINDOW - 1` (`overtakes`).
    fn missing_before(&self, seq: u32) -> u8 {
        let early = self
            .held
            .iter()
            .filter(|&(&s, h)| h.delivered && seq_diff(s, seq) < 0)
            .count();
        (seq_diff(seq, self.next) as usize - early) as u8
    }

    /// Whether a message after `next` was delivered early (its marker held).
    fn delivered_ahead(&self) -> bool {
        self.held.values().any(|h| h.delivered)
    }

    /// Packet `next` was delivered when it arrived ahead of the gap now
    /// filled (`unordered`): it is taken without being delivered again. A
    /// message being reassembled before it ends there unfinished, as it
    /// would when the packet were taken (a whole message starts with it).
    fn step_over_delivered<A: Copy>(&mut self, now: Instant, cx: &mut RecvCx<'_, A>) {
        self.refused = None;
        self.next = self.next.wrapping_add(1);
        self.owe_ack(now, true);
        if self.reassembly.take().is_some() {
            cx.out.stats.corrupt_dropped += 1;
        }
    }

    /// Adds one in-order fragment to the reassembly; queues the event and
    /// returns true when it completes a message.
    fn accept_fragment<A: Copy>(&mut self, f: InFrag<'_>, cx: &mut RecvCx<'_, A>) -> bool {
        let stats = &mut cx.out.stats;
        if f.msg_len as usize > MAX_MESSAGE {
            stats.corrupt_dropped += 1;
            self.reassembly = None;
            return false;
        }
        let delivered = |meta, payload| Event::Delivered {
            from: cx.from,
            channel: cx.ch as u8,
            meta,
            payload,
        };
        if f.frag_off == 0 {
            if self.reassembly.take().is_some() {
                stats.corrupt_dropped += 1;
            }
            let Some(meta) = f.meta else {
                stats.corrupt_dropped += 1;
                return false;
            };
            // Placed where it goes, when nothing delivered waits ahead of it
            if meta.category == Category::Long
                && f.msg_len != 0
                && f.bytes.len() <= f.msg_len as usize
                && cx.out.events.is_empty()
            {
                let len = f.msg_len as usize;
                if let Some(gen) = cx.place.claim(cx.from, cx.ch as u8, meta, len) {
                    let mut meta = *meta;
                    meta.placed = Some(Placed {
                        len: f.msg_len,
                        gen,
                    });
                    cx.place.write(&meta, 0, f.bytes);
                    if f.bytes.len() == len {
                        cx.out.events.push_back(delivered(meta, Vec::new()));
                        return true;
                    }
                    self.reassembly = Some(Reassembly {
                        meta,
                        len: f.msg_len,
                        buf: Vec::new(),
                        placed: f.bytes.len() as u32,
                    });
                    return false;
                }
            }
            if f.bytes.len() == f.msg_len as usize {
                let payload = cx.out.pool.copy_of(f.bytes);
                cx.out.events.push_back(delivered(*meta, payload));
                return true;
            }
            // As large as what arrived, not as the header promises: the
            // buffer grows with the data (doubling, at most to the length).
            // A reused buffer may be larger already (its capacity counts).
            let mut buf = cx.out.pool.take_for(f.bytes.len(), f.msg_len as usize);
            crate::wire::extend_bytes(&mut buf, f.bytes);
            self.reassembly = Some(Reassembly {
                meta: *meta,
                len: f.msg_len,
                buf,
                placed: 0,
            });
            return false;
        }
        match self.reassembly.take() {
            // the next piece of a placed message, within its length
            Some(mut r)
                if r.meta.placed.is_some()
                    && r.placed == f.frag_off
                    && f.len_agrees(r.len)
                    && f.bytes.len() <= (r.len - r.placed) as usize =>
            {
                if !f.copied {
                    cx.place.write(&r.meta, r.placed as usize, f.bytes);
                }
                r.placed += f.bytes.len() as u32;
                if r.placed == r.len {
                    cx.out.events.push_back(delivered(r.meta, Vec::new()));
                    return true;
                }
                self.reassembly = Some(r);
                false
            }
            Some(r) if r.meta.placed.is_some() => {
                stats.corrupt_dropped += 1;
                false
            }
            // the next piece of a gathered message (appended already when
            // it was checked as it was copied)
            Some(mut r)
                if r.buf.len()
                    == f.frag_off as usize + if f.copied { f.bytes.len() } else { 0 }
                    && f.len_agrees(r.len) =>
            {
                if !f.copied {
                    r.make_room(f.bytes.len());
                    crate::wire::extend_bytes(&mut r.buf, f.bytes);
                }
                debug_assert!(r.buf.len() <= r.len as usize, "past its message's end");
                if r.buf.len() == r.len as usize {
                    cx.out.events.push_back(delivered(r.meta, r.buf));
                    return true;
                }
                self.reassembly = Some(r);
                false
            }
            _ => {
                stats.corrupt_dropped += 1;
                false
            }
        }
    }
}

/// What a receive channel needs beyond itself to take DATA.
pub struct RecvCx<'a, A> {
    pub from: A,
    pub ch: usize,
    pub recv_depth: usize,
    pub nack_limit: u32,
    /// Bytes the peer may still make us hold (`ProtoConfig::peer_buffer`
    /// less what its channels buffer).
    pub budget: usize,
    /// Delivered requests not yet taken by the layer above (all peers).
    pub queued_requests: &'a mut usize,
    pub out: &'a mut Outbox<A>,
    /// Where a long message's bytes may go as they arrive (`place.rs`).
    pub place: &'a mut dyn super::Placement<A>,
}

#[cfg(test)]
#[path = "recv_tests.rs"]
mod tests;
