//! Unit tests of the send queue's order (`order.rs`).

use std::sync::Arc;

use super::*;
use crate::wire::{Category, MsgKind, MsgMeta};

/// A message `id` of `kind` and `category` with `len` bytes.
fn msg(id: MsgId, kind: MsgKind, category: Category, len: usize) -> MsgRef {
    MsgRef::Shared(Arc::new(OutMsg {
        id,
        meta: MsgMeta::new(kind, category, 1, &[]),
        payload: vec![0; len],
        sums: Vec::new(),
        digest: None,
    }))
}

fn short(id: MsgId) -> MsgRef {
    msg(id, MsgKind::User, Category::Short, 0)
}

fn long(id: MsgId, len: usize) -> MsgRef {
    msg(id, MsgKind::User, Category::Long, len)
}

/// The queue's messages, each once, in order.
fn order(ch: &SendChannel) -> Vec<MsgId> {
    let mut ids: Vec<MsgId> = Vec::new();
    for f in &ch.pending {
        if ids.last() != Some(&f.msg.id) {
            ids.push(f.msg.id);
        }
    }
    ch.check_order().unwrap();
    ids
}

const CUT: Cut = Cut {
    cap: 1000,
    lead: 1000,
    head: 0,
    first: 1000,
};

#[test]
fn a_short_message_goes_ahead_of_bulk_not_begun_in_its_order() {
    let mut ch = SendChannel::default();
    ch.queue(long(1, 5000), CUT);
    ch.queue(long(2, 5000), CUT);
    ch.queue(short(3), CUT);
    ch.queue(short(4), CUT);
    assert_eq!(order(&ch), [3, 4, 1, 2], "shorts first, in their order");
    // an automatic reply overtakes too
    ch.queue(msg(5, MsgKind::AutoReply, Category::Short, 0), CUT);
    assert_eq!(order(&ch), [3, 4, 5, 1, 2]);
    // a medium message is not passed
    ch.queue(msg(6, MsgKind::User, Category::Medium, 3000), CUT);
    ch.queue(short(7), CUT);
    assert_eq!(order(&ch), [3, 4, 5, 1, 2, 6, 7]);
}

#[test]
fn nothing_passes_a_put_a_flagged_message_or_a_begun_one() {
    let mut ch = SendChannel::default();
    ch.queue(long(1, 5000), CUT);
    ch.queue(msg(2, MsgKind::Put, Category::Long, 5000), CUT);
    ch.queue(long(3, 5000), CUT);
    ch.queue(short(4), CUT);
    assert_eq!(order(&ch), [1, 2, 4, 3], "not ahead of the put");
    // a kept transaction (a flag in its status) keeps its place, and is
    // not passed
    let mut kept = short(5);
    if let MsgRef::Shared(a) = &mut kept {
        Arc::get_mut(a).unwrap().meta.status = 1;
    }
    ch.queue(kept, CUT);
    ch.queue(long(6, 5000), CUT);
    ch.queue(short(7), CUT);
    assert_eq!(order(&ch), [1, 2, 4, 3, 5, 7, 6]);
    // a short message is never passed
    let mut ch = SendChannel::default();
    ch.queue(short(1), CUT);
    ch.queue(short(2), CUT);
    assert_eq!(order(&ch), [1, 2]);
    // begun: the rest of its fragments keep their place
    let mut ch = SendChannel::default();
    ch.queue(long(1, 5000), CUT);
    ch.queue(long(2, 5000), CUT);
    let f = ch.take_next().unwrap();
    assert_eq!((f.msg.id, f.off), (1, 0));
    ch.queue(short(3), CUT);
    assert_eq!(
        order(&ch),
        [1, 3, 2],
        "after the begun message, not inside it"
    );
    assert_eq!(ch.pending[3].off, 4000, "message 1 whole before it");
}

#[test]
fn a_bulk_message_is_passed_by_at_most_its_own_bytes() {
    let mut ch = SendChannel::default();
    ch.queue(long(1, 1000), CUT);
    ch.queue(long(2, 100_000), CUT);
    // a short counts 64 bytes (`congestion::PACKET_OVERHEAD`), message 1
    // 1064: 16 pass it, the 17th goes after it
    for id in 10..27 {
        ch.queue(short(id), CUT);
    }
    let o = order(&ch);
    assert_eq!(o[16], 1, "{o:?}");
    assert_eq!(&o[17..], [26, 2], "{o:?}");
}

/// Messages 1 and 2 (3000 bytes each) queued, two fragments of 1 sent.
fn two_of_message_1_in_flight() -> SendChannel {
    let mut ch = SendChannel::default();
    ch.queue(long(1, 3000), CUT);
    ch.queue(long(2, 3000), CUT);
    for seq in 0..2 {
        let frag = ch.take_next().unwrap();
        ch.in_flight.push_back(InFlight {
            seq,
            frag,
            first_sent: Instant(0),
            last_sent: Instant(0),
            deadline: Instant(0),
            retries: 0,
            nacks: 0,
            sacked: false,
            resend: false,
            lane: 0,
            prev_lane: 0,
            reorder_timer: false,
        });
    }
    ch.next_seq = 2;
    ch
}

#[test]
fn the_order_is_counted_again_when_the_queue_is_remade() {
    // a new association: message 1 whole again, not begun in it
    let mut ch = two_of_message_1_in_flight();
    ch.rewind();
    ch.queue(short(3), CUT);
    assert_eq!(order(&ch), [3, 1, 2]);
    // its first fragment acknowledged before: the rest keeps its place
    let mut ch = two_of_message_1_in_flight();
    ch.in_flight.pop_front();
    ch.rewind();
    assert_eq!(ch.settled, 2, "message 1 begun: keeps its place");
    ch.queue(short(3), CUT);
    assert_eq!(order(&ch), [1, 3, 2]);
    // cut again smaller: the same order
    recut(&mut ch.pending, |_| Cut::plain(500));
    ch.resettle();
    assert_eq!(order(&ch), [1, 3, 2]);
    ch.queue(short(4), CUT);
    assert_eq!(order(&ch), [1, 3, 4, 2]);
}
