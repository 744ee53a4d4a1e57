//! Unit tests of the send channel's bookkeeping.

use std::sync::Arc;

use super::*;
use crate::wire::{Category, MsgKind, MsgMeta};

fn msg(id: MsgId) -> Arc<OutMsg> {
    Arc::new(OutMsg {
        id,
        meta: MsgMeta::new(MsgKind::User, Category::Short, 0, &[]),
        payload: vec![0; 10],
        sums: Vec::new(),
        digest: None,
    })
}

fn in_flight(seq: u32, m: &Arc<OutMsg>) -> InFlight {
    InFlight {
        seq,
        frag: Fragment {
            msg: MsgRef::Shared(m.clone()),
            off: 0,
            len: 10,
        },
        first_sent: Instant(seq as u64),
        last_sent: Instant(seq as u64),
        deadline: Instant(1000),
        retries: 0,
        nacks: 0,
        sacked: false,
        resend: false,
        reorder_timer: false,
        lane: 0,
        prev_lane: 0,
    }
}

#[test]
fn seq_diff_is_signed_across_the_wrap() {
    assert_eq!(seq_diff(1, u32::MAX), 2);
    assert_eq!(seq_diff(u32::MAX, 1), -2);
    assert_eq!(seq_diff(5, 5), 0);
    assert_eq!(seq_diff(0x8000_0000, 0), i32::MIN);
}

/// A channel whose sequence numbers run over `u32::MAX`.
fn wrapping_channel() -> SendChannel {
    let m = msg(1);
    let mut ch = SendChannel {
        next_seq: 3,
        ..Default::default()
    };
    for seq in [u32::MAX - 2, u32::MAX - 1, u32::MAX, 0, 1, 2] {
        ch.in_flight.push_back(in_flight(seq, &m));
    }
    ch
}

#[test]
fn cumulative_ack_across_the_wrap() {
    let mut ch = wrapping_channel();
    let mut spare = SpareMsgs::default();
    assert!(!ch.acks_any(u32::MAX - 2));
    let none = ch.ack_cumulative(u32::MAX - 2, &mut spare);
    assert_eq!(none.count, 0, "acks nothing");
    assert!(ch.acks_any(u32::MAX));
    let done = ch.ack_cumulative(u32::MAX, &mut spare);
    assert_eq!(done.count, 2);
    // the newest packet acknowledged times the round trip
    assert_eq!(done.sample_from, Some(Instant((u32::MAX - 1) as u64)));
    assert_eq!(ch.in_flight.front().unwrap().seq, u32::MAX);
    ch.in_flight[1].retries = 1; // seq 0: resent, no sample from it
    let done = ch.ack_cumulative(2, &mut spare);
    assert_eq!(done.count, 3);
    assert_eq!(done.sample_from, Some(Instant(1)));
    assert_eq!(ch.in_flight.front().unwrap().seq, 2);
    assert!(spare.is_empty(), "the message is still in flight");
    assert_eq!(ch.ack_cumulative(3, &mut spare).count, 1);
    assert!(ch.is_idle());
    assert!(
        spare.is_empty(),
        "a shared message's allocation is not kept"
    );
    // A one-fragment message's box is kept for the next one.
    let mut p = in_flight(3, &msg(2));
    let one = OutMsg {
        id: 7,
        meta: p.frag.msg.meta,
        payload: vec![5; 10],
        sums: Vec::new(),
        digest: None,
    };
    p.frag.msg = MsgRef::one(one, &mut spare);
    ch.in_flight.push_back(p);
    assert_eq!(ch.ack_cumulative(4, &mut spare).count, 1);
    assert_eq!(spare.len(), 1);
    assert!(spare.boxes[0].payload.is_empty(), "its payload is taken");
    let kept = spare.bufs.take(1);
    assert_eq!(
        kept.capacity(),
        10,
        "its payload buffer is kept for the next payload"
    );
    let meta = spare.boxes[0].meta;
    let m = MsgRef::one(
        OutMsg {
            id: 9,
            meta,
            payload: vec![1, 2],
            sums: Vec::new(),
            digest: None,
        },
        &mut spare,
    );
    assert!(spare.is_empty(), "reused");
    assert_eq!((m.id, &m.payload[..]), (9, &[1u8, 2][..]));
}

#[test]
fn selective_ack_marks_exactly_the_bits_across_the_wrap() {
    let mut ch = wrapping_channel();
    ch.in_flight[4].resend = true;
    // next = MAX-2 missing; bit 0 = MAX-1, bit 2 = 0, bit 3 = 1, bit 9: not in flight
    let r = ch.ack_selective(u32::MAX - 2, 0b10_0000_1101);
    assert_eq!(r.highest, Some(1));
    assert!(r.newly_sacked);
    let sacked: Vec<bool> = ch.in_flight.iter().map(|p| p.sacked).collect();
    assert_eq!(sacked, [false, true, false, true, true, false]);
    assert!(!ch.in_flight[4].resend, "a SACKed packet is not resent");
    let r = ch.ack_selective(u32::MAX - 2, 0);
    assert_eq!((r.highest, r.newly_sacked), (None, false));
    let r = ch.ack_selective(u32::MAX - 2, 0b1101);
    assert_eq!((r.highest, r.newly_sacked), (Some(1), false), "nothing new");
}

#[test]
fn drain_unfinished_gives_each_message_once_in_order() {
    let (a, b, c) = (msg(1), msg(2), msg(3));
    let mut ch = SendChannel::default();
    ch.in_flight.push_back(in_flight(0, &a));
    ch.in_flight.push_back(in_flight(1, &a));
    ch.in_flight.push_back(in_flight(2, &b));
    for m in [&b, &c, &c] {
        ch.pending.push_back(Fragment {
            msg: MsgRef::Shared(m.clone()),
            off: 0,
            len: 10,
        });
    }
    let ids: Vec<MsgId> = ch.drain_unfinished().iter().map(|m| m.id).collect();
    assert_eq!(ids, [1, 2, 3]);
    assert!(ch.is_idle());
    ch.next_seq = 77;
    ch.new_epoch();
    assert_eq!((ch.epoch, ch.next_seq), (1, 0));
}

fn queue(ch: &mut SendChannel, m: &Arc<OutMsg>) {
    ch.pending.push_back(Fragment {
        msg: MsgRef::Shared(m.clone()),
        off: 0,
        len: 10,
    });
}

fn tx(rto: Nanos, probe: Option<Nanos>) -> Transmission {
    Transmission {
        header: Common::default(),
        rto,
        probe_after: probe,
        again_after: probe.map(|p| 2 * p),
        window: 64,
        lane: 0,
    }
}

/// Packets sent one by one (each the newest when it went) while the
/// receiver is off the CPU: one tail-loss probe fires, not one per packet.
#[test]
fn one_probe_per_channel_however_many_packets_went_one_by_one() {
    let m = msg(1);
    let mut ch = SendChannel::default();
    let mut out: Outbox<u32> = Outbox::new(65507);
    let integ = Integrity::Crc32c;
    for t in 0..5u64 {
        queue(&mut ch, &m);
        ch.transmit(
            Instant(t * 10),
            &tx(5_000, Some(1_000)),
            &mut { Gate::OPEN },
            Path::from_name(0),
            &integ,
            &mut out,
        );
    }
    let probes: Vec<bool> = ch.in_flight.iter().map(|p| p.reorder_timer).collect();
    assert_eq!(probes, [false, false, false, false, true]);
    assert_eq!(ch.in_flight[0].deadline, Instant(5_000));
    assert!(
        ch.in_flight[4].deadline < Instant(5_000),
        "the newest is probed"
    );
    let e = ch.on_timeout(Instant(2_000), 10);
    assert!(!e.backoff);
    let resent: Vec<u32> = ch
        .in_flight
        .iter()
        .filter(|p| p.resend)
        .map(|p| p.seq)
        .collect();
    assert_eq!(resent, [4], "the newest only");
}

/// After a timeout, an ACK that covers only the packet resent (it may
/// have left the receiver before the others arrived) lets two more go,
/// not all; the next ACK, covering packets never resent, shows the
/// timeout spurious and the rest get a timer again.
#[test]
fn an_ack_of_the_resent_packet_only_lets_two_more_go_not_all() {
    let m = msg(1);
    let mut ch = SendChannel::default();
    let mut out: Outbox<u32> = Outbox::new(65507);
    let integ = Integrity::Crc32c;
    let mut rtt = RttEstimator::new(5_000, 5_000, 1_000_000);
    let mut stats = Statistics::initial();
    let mut spare = SpareMsgs::default();
    for _ in 0..8 {
        queue(&mut ch, &m);
    }
    ch.transmit(
        Instant(0),
        &tx(5_000, None),
        &mut { Gate::OPEN },
        Path::from_name(0),
        &integ,
        &mut out,
    );
    let e = ch.on_timeout(Instant(7_000), 10);
    assert!(e.backoff);
    let resend = |ch: &SendChannel| -> Vec<u32> {
        ch.in_flight
            .iter()
            .filter(|p| p.resend)
            .map(|p| p.seq)
            .collect()
    };
    assert_eq!(resend(&ch), [0], "a timeout resends the oldest only");
    ch.transmit(
        Instant(7_000),
        &tx(10_000, None),
        &mut { Gate::OPEN },
        Path::from_name(0),
        &integ,
        &mut out,
    );
    // covers seq 0 only: ambiguous
    let o = ch.on_ack(
        Instant(7_100),
        (0, 1, 0),
        &mut rtt,
        &mut (),
        &mut stats,
        &mut spare,
    );
    assert!(o.is_some());
    assert_eq!(resend(&ch), [1, 2], "two more, not all seven");
    ch.transmit(
        Instant(7_100),
        &tx(10_000, None),
        &mut { Gate::OPEN },
        Path::from_name(0),
        &integ,
        &mut out,
    );
    // covers packets 3 and 4, never resent: the timeout was spurious
    ch.on_ack(
        Instant(7_200),
        (0, 5, 0),
        &mut rtt,
        &mut (),
        &mut stats,
        &mut spare,
    );
    assert!(resend(&ch).is_empty());
    assert!(ch.in_flight.iter().all(|p| p.deadline != DEFERRED));
    assert!(ch.retransmit_deadline() > Some(Instant(7_200)));
}

/// A SACKed packet the cumulative ACK stops before (the receiver refused
/// it after all, its NACK lost) becomes the oldest: it is timed afresh
/// from the ACK, and the channel's timer is told, whether the ACK also
/// SACKs or not. (Its deadline, set while an older packet was timed, had
/// passed without the timer knowing: found by the simulator's invariant
/// walk, `Protocol::check_invariants`.)
#[test]
fn a_sacked_packet_made_the_oldest_is_timed_afresh() {
    for sack in [0u64, 1 << 1] {
        let m = msg(1);
        let mut ch = SendChannel {
            next_seq: 4,
            ..Default::default()
        };
        for seq in 0..4 {
            ch.in_flight.push_back(in_flight(seq, &m));
        }
        ch.in_flight[0].deadline = Instant(9_000);
        ch.in_flight[1].sacked = true;
        ch.in_flight[1].deadline = Instant(2_000); // long past by now
        ch.in_flight[3].deadline = Instant(9_500);
        let mut rtt = RttEstimator::new(5_000, 5_000, 1_000_000);
        let mut stats = Statistics::initial();
        let mut spare = SpareMsgs::default();
        let now = Instant(8_000);
        let o = ch
            .on_ack(now, (0, 1, sack), &mut rtt, &mut (), &mut stats, &mut spare)
            .expect("news");
        let front = &ch.in_flight[0];
        assert_eq!((front.seq, front.sacked), (1, true), "sack {sack:#x}");
        assert_eq!(front.deadline, now.plus(rtt.rto()), "sack {sack:#x}");
        assert!(
            o.rearm_at.is_some_and(|t| t <= front.deadline),
            "sack {sack:#x}: {:?}",
            o.rearm_at
        );
    }
}

/// A hold's packets leave late and have their timers start then; a packet
/// that left at the instant the hold began, before it, is not one of them.
#[test]
fn restamp_moves_only_the_held_packets() {
    let m = msg(1);
    let mut ch = SendChannel::default();
    // seq 0 left at 10; seq 1 left at 20, the instant the hold began; 2
    // and 3 were held from 20 and 30; 4 was queued at 50, when they leave
    for (seq, t) in [(0, 10), (1, 20), (2, 20), (3, 30), (4, 50)] {
        let mut p = in_flight(seq, &m);
        (p.first_sent, p.last_sent) = (Instant(t), Instant(t));
        p.deadline = Instant(t + 1000);
        ch.in_flight.push_back(p);
    }
    ch.restamp(Instant(20), Instant(50), 2);
    let sent: Vec<(u64, u64, u64)> = ch
        .in_flight
        .iter()
        .map(|p| (p.first_sent.0, p.last_sent.0, p.deadline.0))
        .collect();
    assert_eq!(
        sent,
        [
            (10, 10, 1010),
            (20, 20, 1020),
            (50, 50, 1050),
            (50, 50, 1050),
            (50, 50, 1050)
        ]
    );
}
