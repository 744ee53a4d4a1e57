//! Shared memory, a sender's ring in a peer's file (`TxRing`, `shm.rs`):
//! push, wake-up of a sleeping reader, the express records held back and
//! their bookkeeping, and the lines whose word may be stale (`Stale`), in
//! the record format the module doc of `shm.rs` describes. The receiver's
//! side is `shm_ring.rs`.

use std::os::unix::net::{SocketAddr as UnixAddr, UnixDatagram};
use std::sync::atomic::Ordering::*;

use super::*;

/// A ring this endpoint writes, in a peer's file.
pub(super) struct TxRing {
    pub(super) map: SharedMap,
    pub(super) slot: usize,
    /// What we wrote at `S_SECRET` (0: none, no direct copies).
    pub(super) secret: u64,
    pub(super) tail: u64,
    /// The receiver's head as last read (it only grows: the ring looks at
    /// most fuller than it is; read again when it looks full).
    pub(super) head: u64,
    /// `tail` after the last express record (`express_send`): while the
    /// receiver's published head is below it, a full ring does not spill
    /// a datagram to UDP (it would overtake the record).
    pub(super) express_end: u64,
    /// The receiver's published head at the last liveness check, and
    /// since when it has not moved while an express record waited in the
    /// ring (`check_peers`: a receiver that stops polling).
    pub(super) seen_head: u64,
    pub(super) stuck_since: Option<Instant>,
    pub(super) wake: UnixAddr,
    /// The receiver proved it is of our job (`shm_proof.rs`): express
    /// records may go (it would drop them otherwise).
    pub(super) express_ok: bool,
    /// Express records held back (`hold`): their room taken in the ring,
    /// nothing written there yet; their words (ring offset, word; a
    /// wrap's two, in the order they are stored), stored in order by
    /// `push_held` after their bytes.
    pub(super) held_words: [(usize, u32); HELD_WORDS],
    pub(super) held_n: usize,
    pub(super) held_count: usize,
    /// The held records' bytes, kept here until `push_held` writes them
    /// where their room was kept (`held_at`: map offset, length).
    pub(super) staged: Box<[[u8; MAX_HELD]; HOLD_MAX]>,
    pub(super) held_at: [(usize, u8); HOLD_MAX],
    /// The lines whose word may still hold an earlier lap's bytes once
    /// the receiver has taken what is there (`Stale`).
    pub(super) stale: Stale,
}

/// Records longer than this (ring bytes) have only their first line's word
/// cleared by the receiver (`ShmTransport::clear_record`); the sender
/// clears the word after a record of its own when it may be stale
/// (`Stale`). A shorter record has every line cleared, as before: its
/// sender writes only its record's lines. (Clearing every line of a
/// 64 KiB record cost the receiver a thousand stores, each making a line
/// its own that the sender then had to fetch back from its core to write
/// it a lap later. GASNet's testbulk through the ring, 4000 requests,
/// `chrt -f 10`, 3 runs alternated, medians, MB/s, all lines -> first
/// line: 4 KiB 2741 -> 2726, 16 KiB 4821 -> 5026, 30,000 bytes 4427 ->
/// 4976; with 24 KiB here instead of 1 KiB, 30,000 bytes 4991.)
pub(super) const CLEAR_ALL_MAX: usize = 1024;

/// The sender's map of the ring's lines whose word may be stale: the
/// lines after the first of a long record (`CLEAR_ALL_MAX`), which the
/// receiver leaves as they were. A record whose end falls on such a line
/// clears that word before it is published (the receiver, which finds
/// the record, then finds 0 or the next record there).
pub(super) struct Stale(Box<[u64; RING / REC_ALIGN / 64]>);

impl Stale {
    /// A ring the receiver cleared whole (a fresh or freed slot).
    pub(super) fn clear() -> Stale {
        Stale(Box::new([0; RING / REC_ALIGN / 64]))
    }

    /// Lines `from..to` (line indexes, within the ring) are stale (`on`)
    /// or clean: a word of the map at a time (a bit at a time cost a
    /// 16 KiB record's sender 6% of its rate).
    #[inline]
    fn mark(&mut self, from: usize, to: usize, on: bool) {
        let mut line = from;
        while line < to {
            let (w, b) = (line / 64, line % 64);
            let n = (64 - b).min(to - line);
            let bits = (u64::MAX >> (64 - n)) << b;
            if on {
                self.0[w] |= bits;
            } else {
                self.0[w] &= !bits;
            }
            line += n;
        }
    }

    /// Whether line `line` may be stale; it is clean from now on.
    fn take(&mut self, line: usize) -> bool {
        let (w, b) = (line / 64, 1u64 << (line % 64));
        let was = self.0[w] & b != 0;
        self.0[w] &= !b;
        was
    }
}

/// Express records a ring holds back at most (`TxRing::hold`): the held
/// ones are written together when the next would be the eighth. More made
/// the receiver wait for a whole burst before it could start on it (one
/// way 32 at once: no faster than none held; 4: half the gain of 8).
pub(super) const HOLD_MAX: usize = 8;
/// Words the held records leave to store: one each, and a wrap's.
pub(super) const HELD_WORDS: usize = HOLD_MAX + 1;
/// The longest record held (an express record is no longer).
pub(super) const MAX_HELD: usize = crate::net::express::MAX_LEN;
const _: () = assert!(MAX_HELD <= u8::MAX as usize);

/// Ring bytes a record of a datagram of `len` bytes takes: the word, its
/// pad, the bytes, to the next line.
fn record_size(len: usize) -> u64 {
    record_bytes(len) as u64
}

impl TxRing {
    /// Wakes this ring's reader (through our socket `sock`) if it sleeps:
    /// after a push. No fence between the record's stores and this look
    /// at the sleep word (a fence waited, on every push, for the record's
    /// line to come over from the reader: 8% of the one-way message rate):
    /// the look may pass the record, which then becomes visible at most a
    /// store-buffer drain later; the reader about to sleep looks at its
    /// rings for `SLEEP_GRACE` after it set the word (`fd`), so either it
    /// sees the record or we see its word.
    #[inline]
    pub(super) fn wake(&self, sock: &UnixDatagram) {
        let sleep = self.map.u32_at(H_SLEEP);
        if sleep.load(Relaxed) != 0 && sleep.swap(0, AcqRel) != 0 {
            let _ = sock.send_to_addr(&[1], &self.wake);
        }
    }

    /// Whether our slot in the peer's file is still open and ours.
    pub(super) fn slot_ours(&self, pid: u32) -> bool {
        let s = slot_off(self.slot);
        self.map.u32_at(s + S_STATE).load(Acquire) == OPEN
            && self.map.u32_at(s + S_OWNER).load(Acquire) == pid
            && self.map.u64_at(s + S_SECRET).load(Acquire) == self.secret
    }

    /// Whether the receiver has left an express record unread, its head
    /// not moving, for `after` (it stopped polling): looked at every
    /// `CHECK_EVERY`.
    pub(super) fn stuck(&mut self, now: Instant, after: crate::time::Nanos) -> bool {
        let head = self.map.u64_at(slot_off(self.slot) + S_HEAD).load(Acquire);
        if self.express_end == 0 || head >= self.express_end || head != self.seen_head {
            self.seen_head = head;
            self.stuck_since = None;
            return false;
        }
        let since = *self.stuck_since.get_or_insert(now);
        now.since(since) >= after
    }

    /// Whether the receiver may not have read our last express record yet
    /// (by its published head, which lags: at most `HEAD_PUBLISH` late).
    pub(super) fn express_pending(&self) -> bool {
        self.express_end != 0
            && self.map.u64_at(slot_off(self.slot) + S_HEAD).load(Acquire) < self.express_end
    }

    /// Whether `need` more bytes fit in the ring now, with the zeroed
    /// word after them (the receiver's published head read again only
    /// when the cached one says no).
    fn room_for(&mut self, need: u64) -> bool {
        let fits = |head: u64| {
            let used = self.tail.wrapping_sub(head);
            used <= RING as u64 && used + need + REC_ALIGN as u64 <= RING as u64
        };
        if !fits(self.head) {
            let head = self.map.u64_at(slot_off(self.slot) + S_HEAD).load(Acquire);
            if !fits(head) {
                return false; // full (or not what a ramp receiver writes)
            }
            self.head = head;
        }
        true
    }

    /// Holds express record `rec` back (`HOLD_MAX` at most, and only
    /// when the ring has room for it): its room in the ring taken now, its
    /// bytes kept in `staged`, and both they and its word written by
    /// `push_held` (the receiver sees nothing of it until then); false:
    /// not held. (Pushed in a loop at `push_held` from a `Vec`, each
    /// record was copied twice: one way, one thread, 1,861 -> 1,802
    /// instructions a request. Written into the ring at once, each
    /// request's bytes went to a line the reader last wrote, and the
    /// endpoint's unlock, a locked instruction, waited for that line to
    /// come over, once a request; staged, once a burst: `am_cost ONE_WAY=1
    /// THREADS=2`, 3 rounds alternated, `DEPTH=128` 93-98 -> 81-87 ns a
    /// request, `DEPTH=16` 101-104 -> 87-91, for 22 more instructions.)
    #[inline]
    pub(super) fn hold(&mut self, rec: &[u8]) -> bool {
        if self.held_count + 1 >= HOLD_MAX || rec.is_empty() || rec.len() > MAX_HELD {
            return false;
        }
        let mut off = 0;
        if !self.push_with(rec.len(), false, |_, at| off = at) {
            return false;
        }
        let i = self.held_count;
        self.staged[i][..rec.len()].copy_from_slice(rec);
        self.held_at[i] = (off, rec.len() as u8);
        self.held_count += 1;
        true
    }

    /// Publishes the records held back, in order: their bytes written
    /// where their room was kept, then their words stored (an express
    /// record's end moves past them).
    pub(super) fn push_held(&mut self) {
        if self.held_count == 0 {
            return;
        }
        for i in 0..self.held_count {
            let (off, n) = self.held_at[i];
            self.map.write(off, &self.staged[i][..n as usize]);
        }
        let ring = slot_off(self.slot) + SLOT_HDR;
        for &(at, word) in &self.held_words[..self.held_n] {
            self.map.u32_at(ring + at).store(word, Release);
        }
        self.express_end = self.tail;
        self.held_n = 0;
        self.held_count = 0;
    }

    /// Appends one datagram; false when the ring is full.
    #[inline]
    pub(super) fn push(&mut self, d: &[u8]) -> bool {
        self.push_with(d.len(), true, |map, at| map.write(at, d))
    }

    /// Appends one datagram made of `parts` back to back (written where
    /// they go, not joined first); false when the ring is full.
    pub(super) fn push_parts(&mut self, parts: &[&[u8]]) -> bool {
        let len = parts.iter().map(|p| p.len()).sum();
        self.push_with(len, true, |map, mut at| {
            for p in parts {
                map.write(at, p);
                at += p.len();
            }
        })
    }

    /// Appends a datagram of `len` bytes, which `write` writes at the
    /// offset it is given; false when the ring is full. Its word stored
    /// now (`publish`), or kept for `push_held` (`hold`: none stored
    /// before the held ones are; at most `HOLD_MAX - 1` held, so
    /// `held_words` has room).
    #[inline(always)]
    fn push_with(
        &mut self,
        len: usize,
        publish: bool,
        write: impl FnOnce(&SharedMap, usize),
    ) -> bool {
        let ring = slot_off(self.slot) + SLOT_HDR;
        if len == 0 || len > RECV_SLOT {
            return false; // the receiver would refuse it
        }
        let rec = record_size(len) as usize;
        let pos = (self.tail % RING as u64) as usize;
        let room = RING - pos;
        let wrap = room < rec;
        let need = if wrap { room + rec } else { rec } as u64;
        // room for the record and the zeroed word after it
        if !self.room_for(need) {
            return false;
        }
        let at = if wrap { 0 } else { pos };
        write(&self.map, ring + at + 8);
        // the word after the record reads 0 (or the next record) once
        // this one is seen: the receiver cleared it a lap ago
        // (`clear_taken`), unless it was inside a long record, whose
        // lines but the first it leaves (`Stale`)
        let (first, lines) = (at / REC_ALIGN, rec / REC_ALIGN);
        self.stale.mark(first, first + lines, false);
        if rec > CLEAR_ALL_MAX {
            self.stale.mark(first + 1, first + lines, true);
        }
        let next = (at + rec) % RING;
        if self.stale.take(next / REC_ALIGN) {
            self.map.u32_at(ring + next).store(0, Relaxed);
        }
        let word = READY | len as u32;
        if !publish {
            let w = &mut self.held_words;
            let n = self.held_n;
            if wrap {
                w[n] = (0, word);
                w[n + 1] = (pos, WRAP);
                self.held_n = n + 2;
            } else {
                w[n] = (at, word);
                self.held_n = n + 1;
            }
        } else if wrap {
            self.map.u32_at(ring).store(word, Relaxed);
            self.map.u32_at(ring + pos).store(WRAP, Release);
        } else {
            self.map.u32_at(ring + at).store(word, Release);
        }
        self.tail += need;
        true
    }
}
