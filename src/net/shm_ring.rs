//! Shared memory, the ring records (`shm.rs`): the transport's pushes
//! into a sender's ring in a peer's file (`push_ring`; the ring itself,
//! `TxRing`, is `shm_tx_ring.rs`) and the receiver's reading of its slots
//! (`drain_slot`, express records taken in place), in the record format
//! the module doc of `shm.rs` describes.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::Ordering::*;

use super::tx_ring::CLEAR_ALL_MAX;
use super::*;
use crate::net::express::{is_express, ExpressTake, TakenRecord, MAX_LEN};

/// What the receiver knows of one slot.
#[derive(Clone, Copy, Default)]
pub(super) struct RxSlot {
    pub(super) head: u64,
    /// The head last written to `S_HEAD`.
    pub(super) published: u64,
    pub(super) from: Option<SocketAddr>,
    /// Which sender `from` is: a number of its own each time the slot
    /// gets one (`ShmTransport::slot_epoch`), never 0 (a fresh
    /// `TakenRecord`'s `from_gen`). The fast poll hands it on as the
    /// record's `from_gen`: no address copied or compared per record.
    pub(super) epoch: u64,
    /// Its sender proved it is of our job (`shm_proof.rs`): its express
    /// records are taken and its datagrams' trailers need no check
    /// (checked once, at the first look at the slot).
    pub(super) express: bool,
}

impl ShmTransport {
    /// Pushes `dgram` into ring `k` and wakes its reader if it sleeps;
    /// `WouldBlock` when the ring is full.
    pub(super) fn push_ring(&mut self, k: usize, dgram: &[u8]) -> io::Result<()> {
        self.push_ring_with(k, |ring| ring.push(dgram))
    }

    /// `push_ring` of a datagram in pieces, written back to back.
    pub(super) fn push_ring_parts(&mut self, k: usize, parts: &[&[u8]]) -> io::Result<()> {
        self.push_ring_with(k, |ring| ring.push_parts(parts))
    }

    /// `push_ring`, the datagram written by `push` (one piece, or several:
    /// no loop over pieces on a short datagram's path).
    #[inline(always)]
    fn push_ring_with(
        &mut self,
        k: usize,
        push: impl FnOnce(&mut TxRing) -> bool,
    ) -> io::Result<()> {
        // what is held goes first (held only for one ring: any will do)
        self.release_held();
        let Some(ring) = self.tx.get_mut().rings[k].as_mut() else {
            return Ok(());
        };
        if !push(ring) {
            if ring.express_pending() {
                // an express record may be unread: a datagram by UDP could
                // be handled before it. Lost instead: the protocol resends
                // it (through the ring once it has room).
                return Ok(());
            }
            // full: the set sends this one by UDP (the protocol reorders)
            return Err(io::ErrorKind::WouldBlock.into());
        }
        self.wake_reader(k);
        Ok(())
    }

    /// `ExpressLane::release_held`'s work when a ring holds records.
    #[inline(never)]
    pub(super) fn write_held(&mut self) {
        let tx = self.tx.get_mut();
        let Some(k) = tx.held_in.take() else {
            return;
        };
        if let Some(ring) = tx.rings[k].as_mut() {
            ring.push_held();
        }
        self.wake_reader(k);
    }

    /// Wakes the reader of ring `k` if it sleeps.
    pub(super) fn wake_reader(&self, k: usize) {
        if let Some(ring) = self.tx.borrow().rings[k].as_ref() {
            ring.wake(&self.wake);
        }
    }

    /// Takes up to `budget` datagrams from slot `i`. (Not inlined: an
    /// empty poll, which does not call it, keeps a small frame.)
    #[inline(never)]
    pub(super) fn drain_slot(
        &mut self,
        i: usize,
        budget: usize,
        each: &mut ProvenSink<'_>,
    ) -> usize {
        let s = slot_off(i);
        let from = match self.slots[i].from {
            Some(a) => a,
            None => {
                if self.map.u32_at(s + S_STATE).load(Acquire) == FREE {
                    return 0;
                }
                match get_text(&self.map, s + S_FROM).parse() {
                    Ok(a) => {
                        // the sender starts its ring at 0 (`connect`)
                        let express = proof::check_sender(
                            &self.map,
                            i,
                            (self.local, a),
                            self.prover.as_ref(),
                        );
                        self.slot_epoch += 1;
                        self.slots[i] = RxSlot {
                            head: 0,
                            published: 0,
                            from: Some(a),
                            epoch: self.slot_epoch,
                            express,
                        };
                        a
                    }
                    Err(_) => {
                        self.free_slot(i);
                        return 0;
                    }
                }
            }
        };
        let ring = s + SLOT_HDR;
        let mut head = self.slots[i].head;
        let mut n = 0;
        let mut empty = false;
        while n < budget {
            // `head` is ours, a multiple of REC_ALIGN: the word is in bounds
            let pos = (head % RING as u64) as usize;
            // (a short datagram, 72 bytes and the word, spans two lines)
            let word = self.word_at(ring, pos);
            if word == 0 {
                empty = true;
                break;
            }
            if word == WRAP && pos != 0 {
                // at 0 next: a second WRAP there is refused below
                self.clear_taken(ring, pos, REC_ALIGN);
                head += (RING - pos) as u64;
                continue;
            }
            let len = (word & !READY) as usize;
            let rec = (8 + len).next_multiple_of(REC_ALIGN);
            if word & READY == 0 || word == WRAP || len > RECV_SLOT || pos + rec > RING {
                // not what a ramp sender writes
                self.free_slot(i);
                return n;
            }
            self.map.read(ring + pos + 8, &mut self.buf[..len]);
            self.clear_record(ring, pos, rec);
            let d = &self.buf[..len];
            let proven = self.slots[i].express;
            if !proven && crate::net::express::is_express(d) {
                // not of our job: runs nothing here
                self.express_refused += 1;
            } else {
                // (a proven sender's datagrams need no trailer checked)
                each(Some((d, from)), proven);
            }
            head += rec as u64;
            n += 1;
        }
        self.move_head(i, head, empty);
        n
    }

    /// Slot `i`'s head is now `head` (`drained`: nothing after it): the
    /// sender sees it every `HEAD_PUBLISH` bytes, and also once the ring
    /// is drained (a store to a line the sender reads only now and then:
    /// it sees that its express records were read).
    #[inline]
    fn move_head(&mut self, i: usize, head: u64, drained: bool) {
        let slot = &mut self.slots[i];
        slot.head = head;
        if head.wrapping_sub(slot.published) >= HEAD_PUBLISH || (drained && head != slot.published)
        {
            slot.published = head;
            self.map.u64_at(slot_off(i) + S_HEAD).store(head, Release);
        }
    }

    /// The record of `size` bytes at `pos` of the ring at `ring` is taken:
    /// the word of each line it covered is cleared, so that a lap later
    /// the word where the sender's next record goes reads 0 (nothing yet)
    /// until that record is there (the sender writes only its record: a
    /// store to the next line too, which the receiver is reading, moved a
    /// second line between the cores per record).
    #[inline]
    pub(super) fn clear_taken(&self, ring: usize, pos: usize, size: usize) {
        for at in (pos..pos + size).step_by(REC_ALIGN) {
            self.map.u32_at(ring + at).store(0, Relaxed);
        }
    }

    /// The record of `size` bytes at `pos` is taken: `clear_taken` for a
    /// short one, its first line only for a long one (`CLEAR_ALL_MAX`:
    /// its sender clears what it needs of the rest).
    #[inline]
    fn clear_record(&self, ring: usize, pos: usize, size: usize) {
        let size = if size > CLEAR_ALL_MAX {
            REC_ALIGN
        } else {
            size
        };
        self.clear_taken(ring, pos, size);
    }

    /// Clears this endpoint's sleep word: it is awake, its senders need
    /// not wake it (a store only when it was set).
    #[inline]
    pub(super) fn awake(&self) {
        let sleep = self.map.u32_at(H_SLEEP);
        if sleep.load(Relaxed) != 0 {
            sleep.store(0, Relaxed);
        }
    }

    /// The record word at `pos` of the ring at `ring`, and the line after
    /// it in the same look: two loads that miss together cost one
    /// transfer, not two.
    #[inline]
    fn word_at(&self, ring: usize, pos: usize) -> u32 {
        std::hint::black_box(
            self.map
                .u32_at(ring + (pos + REC_ALIGN) % RING)
                .load(Relaxed),
        );
        self.map.u32_at(ring + pos).load(Acquire)
    }

    /// The express lane's fast poll (`ExpressLane::express_take`): the first
    /// slot, from `next` round, with something at its head decides. An
    /// express record of a proven slot is copied into `rec` and taken
    /// (the head moves, published as `drain_slot` publishes it); anything
    /// else (a protocol datagram, a wrap, a slot not yet looked at, an
    /// unproven slot's record, what a ramp sender does not write) is left
    /// for `drain_slot`, which knows what to do with it.
    pub(super) fn take_express(&mut self, rec: &mut TakenRecord) -> ExpressTake {
        self.awake();
        let active = self.map.u64_at(H_ACTIVE).load(Acquire);
        let mut bits = (active as u32).rotate_right(self.next as u32);
        while bits != 0 {
            let i = (self.next + bits.trailing_zeros() as usize) % SLOTS;
            bits &= bits - 1;
            // (the slot's fields read where they lie: a copy of the whole
            // slot, its address too, cost an empty look a third of its
            // instructions)
            let slot = &self.slots[i];
            if slot.from.is_none() {
                return ExpressTake::Other;
            }
            let ring = slot_off(i) + SLOT_HDR;
            let pos = (slot.head % RING as u64) as usize;
            // (the drained test below reads the next line)
            let word = self.word_at(ring, pos);
            if word == 0 {
                if slot.head != slot.published {
                    return ExpressTake::Other;
                }
                continue;
            }
            return self.take_express_at(i, ring, pos, word, bits != 0, rec);
        }
        ExpressTake::Nothing
    }

    /// `take_express` when `word` is at slot `i`'s head (at `pos` of the
    /// ring at `ring`; `others`: other slots are active and were not
    /// looked at). (Out of line: an empty look, the busy-polling loop's,
    /// keeps a small frame.)
    #[inline(never)]
    fn take_express_at(
        &mut self,
        i: usize,
        ring: usize,
        pos: usize,
        word: u32,
        others: bool,
        rec: &mut TakenRecord,
    ) -> ExpressTake {
        let slot = &self.slots[i];
        if slot.from.is_none() {
            return ExpressTake::Other;
        }
        let len = (word & !READY) as usize;
        let size = (8 + len).next_multiple_of(REC_ALIGN);
        if !slot.express || word & READY == 0 || word == WRAP || len > MAX_LEN || pos + size > RING
        {
            return ExpressTake::Other;
        }
        let head = slot.head + size as u64;
        self.map.read(ring + pos + 8, &mut rec.bytes[..len]);
        if !is_express(&rec.bytes[..len]) {
            return ExpressTake::Other;
        }
        self.clear_taken(ring, pos, size);
        rec.len = len;
        // (stored only when the writer changes, known by the slot's
        // epoch, not by its address compared: its reader, at once, loads
        // it in two 16-byte halves, which a store just made by pieces
        // cannot forward, a stall per record)
        if rec.from_gen != slot.epoch {
            if let Some(from) = slot.from {
                rec.from = from;
            }
            rec.from_gen = slot.epoch;
        }
        let next = (head % RING as u64) as usize;
        let drained = self.map.u32_at(ring + next).load(Acquire) == 0;
        self.move_head(i, head, drained);
        // (a ping-pong's record is alone: the look after it, which finds
        // nothing, is spared)
        rec.more = others || !drained;
        // the next look starts at the next sender
        self.next = (i + 1) % SLOTS;
        ExpressTake::Record
    }

    /// Whether a record (or a wrap) waits at slot `i`'s head.
    pub(super) fn record_at_head(&self, i: usize) -> bool {
        let pos = (self.slots[i].head % RING as u64) as usize;
        self.map.u32_at(slot_off(i) + SLOT_HDR + pos).load(Acquire) != 0
    }

    /// Whether slot `i` has something to read (or is new).
    pub(super) fn slot_waiting(&self, i: usize) -> bool {
        self.slots[i].from.is_none() || self.record_at_head(i)
    }
}
