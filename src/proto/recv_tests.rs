//! `recv.rs`'s unit tests: epochs, the SACK bitmap, the owed ACK.

use super::*;
use crate::wire::{Category, MsgKind};

fn held() -> HeldPacket {
    HeldPacket {
        meta: Some(MsgMeta::new(MsgKind::User, Category::Short, 0, &[])),
        msg_len: 0,
        frag_off: 0,
        payload: Vec::new(),
        delivered: false,
    }
}

#[test]
fn epochs_start_at_0_and_move_only_with_sequence_number_0() {
    let mut rx = RecvChannel::default();
    assert!(rx.accept_epoch(0, 5), "epoch 0 from the start");
    assert!(rx.known);
    rx.next = 40;
    rx.held.insert(42, held());
    assert!(!rx.accept_epoch(1, 40), "a newer epoch at another number");
    assert!(!rx.accept_epoch(7, 1));
    assert_eq!((rx.epoch, rx.next, rx.held.len()), (0, 40, 1), "unchanged");
    assert!(!rx.accept_epoch(u16::MAX, 0), "an older epoch is stale");
    assert!(rx.accept_epoch(0, 41));
    assert_eq!(rx.next, 40, "the same epoch changes nothing");
    assert!(rx.accept_epoch(1, 0), "the next epoch, from 0, restarts");
    assert_eq!((rx.epoch, rx.next, rx.held.len()), (1, 0, 0));
    assert!(rx.accept_epoch(3, 0), "one skipped (cut off twice)");
    let mut rx = RecvChannel {
        epoch: u16::MAX,
        ..Default::default()
    };
    assert!(rx.accept_epoch(0, 0), "0 follows 65535");
    assert!(!rx.accept_epoch(u16::MAX, 0));
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
