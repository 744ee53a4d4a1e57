//! The receiving half of one reliable channel: the next expected sequence
//! number, packets held ahead of a gap (SACKed), and message reassembly.

use std::collections::BTreeMap;

use super::send::seq_diff;
use crate::time::Instant;
use crate::wire::MsgMeta;

/// A DATA packet kept because it arrived ahead of a gap.
#[derive(Debug, Clone)]
pub struct HeldPacket {
    pub meta: MsgMeta,
    pub msg_len: u32,
    pub frag_off: u32,
    pub payload: Vec<u8>,
}

/// A message whose first fragments arrived.
#[derive(Debug)]
pub struct Reassembly {
    pub meta: MsgMeta,
    /// The whole message's length, as its first fragment said.
    pub len: u32,
    pub buf: Vec<u8>,
}

#[derive(Debug, Default)]
pub struct RecvChannel {
    /// Whether any packet of this channel has been seen (the epoch is known).
    pub known: bool,
    pub epoch: u16,
    pub next: u32,
    /// Packets after a gap, by sequence number (distance 1..=64 from `next`).
    pub held: BTreeMap<u32, HeldPacket>,
    pub reassembly: Option<Reassembly>,
    /// An ACK is owed since this time.
    pub ack_owed_since: Option<Instant>,
    /// The ACK must go out at once (a duplicate or a gap was seen).
    pub ack_urgent: bool,
    /// The packet `next` refused for want of buffer, and how many times.
    pub refused: Option<(u32, u32)>,
}

impl RecvChannel {
    /// Adopts `epoch` if it is the first seen or newer; returns false for a
    /// packet of an older epoch.
    pub fn accept_epoch(&mut self, epoch: u16) -> bool {
        if !self.known {
            self.known = true;
            self.epoch = epoch;
            return true;
        }
        let d = epoch.wrapping_sub(self.epoch) as i16;
        if d < 0 {
            return false;
        }
        if d > 0 {
            self.epoch = epoch;
            self.next = 0;
            self.held.clear();
            self.reassembly = None;
            self.refused = None;
        }
        true
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Category, MsgKind};

    fn held() -> HeldPacket {
        HeldPacket {
            meta: MsgMeta::new(MsgKind::User, Category::Short, 0, &[]),
            msg_len: 0,
            frag_off: 0,
            payload: Vec::new(),
        }
    }

    #[test]
    fn epochs_first_older_newer_and_wrapping() {
        let mut rx = RecvChannel::default();
        assert!(rx.accept_epoch(7), "the first epoch seen is adopted");
        assert_eq!((rx.known, rx.epoch), (true, 7));
        rx.next = 40;
        rx.held.insert(42, held());
        assert!(!rx.accept_epoch(6), "an older epoch is stale");
        assert!(rx.accept_epoch(7));
        assert_eq!(rx.next, 40, "the same epoch changes nothing");
        assert!(rx.accept_epoch(8), "a newer epoch restarts the channel");
        assert_eq!((rx.epoch, rx.next, rx.held.len()), (8, 0, 0));
        let mut rx = RecvChannel::default();
        rx.accept_epoch(u16::MAX);
        assert!(rx.accept_epoch(0), "0 follows 65535");
        assert!(!rx.accept_epoch(u16::MAX));
    }

    #[test]
    fn sack_bits_across_the_sequence_wrap() {
        let mut rx = RecvChannel {
            next: u32::MAX - 1,
            ..Default::default()
        };
        for s in [u32::MAX, 1, 62] {
            rx.held.insert(s, held());
        }
        // distance 1 -> bit 0, distance 3 -> bit 2, distance 64 -> bit 63
        assert_eq!(rx.sack_bits(), 1 | 1 << 2 | 1 << 63);
        rx.held.insert(63, held()); // distance 65: not representable
        assert_eq!(rx.sack_bits(), 1 | 1 << 2 | 1 << 63);
    }

    #[test]
    fn owed_ack_keeps_the_first_time_and_becomes_urgent() {
        let mut rx = RecvChannel::default();
        rx.owe_ack(Instant(10), false);
        rx.owe_ack(Instant(20), false);
        assert_eq!(
            (rx.ack_owed_since, rx.ack_urgent),
            (Some(Instant(10)), false)
        );
        rx.owe_ack(Instant(30), true);
        assert_eq!(
            (rx.ack_owed_since, rx.ack_urgent),
            (Some(Instant(10)), true)
        );
    }
}
