//! The sending half of one reliable channel: sequence numbers, the packets in
//! flight, the queue of fragments waiting for window, and go-back-N after a NACK.

use std::collections::VecDeque;
use std::sync::Arc;

use super::event::MsgId;
use crate::time::Instant;
use crate::wire::MsgMeta;

/// One message as handed to `send`.
#[derive(Debug)]
pub struct OutMsg {
    pub id: MsgId,
    pub meta: MsgMeta,
    pub payload: Vec<u8>,
}

/// How a fragment holds its message. A message that fits one datagram (the
/// usual case) is owned by its only fragment, in a box that is reused when
/// it is acknowledged (no allocation, no reference count); a larger one is
/// shared by its fragments.
#[derive(Debug)]
pub enum MsgRef {
    One(Box<OutMsg>),
    Shared(Arc<OutMsg>),
}

impl std::ops::Deref for MsgRef {
    type Target = OutMsg;

    fn deref(&self) -> &OutMsg {
        match self {
            MsgRef::One(b) => b,
            MsgRef::Shared(a) => a,
        }
    }
}

/// Boxes of acknowledged one-fragment messages kept for reuse.
const SPARE_MSGS: usize = 32;

/// Spare boxes: the allocations themselves are what is kept (a message
/// moves into a box without allocating).
#[allow(clippy::vec_box)]
pub(super) type SpareMsgs = Vec<Box<OutMsg>>;

impl MsgRef {
    /// A one-fragment message, in a spare box when there is one.
    pub fn one(m: OutMsg, spare: &mut SpareMsgs) -> MsgRef {
        match spare.pop() {
            Some(mut b) => {
                *b = m;
                MsgRef::One(b)
            }
            None => MsgRef::One(Box::new(m)),
        }
    }

    /// Done with: a one-fragment message's box goes to `spare` (payload freed).
    pub fn recycle(self, spare: &mut SpareMsgs) {
        if let MsgRef::One(mut b) = self {
            if spare.len() < SPARE_MSGS {
                b.payload = Vec::new();
                spare.push(b);
            }
        }
    }
}

/// A piece of a message that fits one datagram.
#[derive(Debug)]
pub struct Fragment {
    pub msg: MsgRef,
    pub off: u32,
    pub len: u32,
}

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
    pub reorder_timer: bool,
}

#[derive(Debug, Default)]
pub struct SendChannel {
    pub epoch: u16,
    pub next_seq: u32,
    /// Ordered by sequence number.
    pub in_flight: VecDeque<InFlight>,
    /// Fragments not yet given a sequence number.
    pub pending: VecDeque<Fragment>,
    /// After a NACK: nothing is sent on this channel before this time.
    pub paused_until: Option<Instant>,
}

/// What a cumulative acknowledgement took off the channel.
#[derive(Default, Debug, PartialEq, Eq)]
pub struct Acked {
    /// Packets acknowledged (removed from the flight).
    pub count: usize,
    /// Send time of the newest of them that times one round trip (see
    /// `InFlight::rtt_eligible`).
    pub sample_from: Option<Instant>,
}

/// What a selective acknowledgement told.
#[derive(Default, Debug)]
pub struct SackResult {
    /// The highest sequence number the receiver holds.
    pub highest: Option<u32>,
    /// Some packet was SACKed for the first time.
    pub newly_sacked: bool,
    /// Send time of the newest packet SACKed for the first time that was
    /// sent once only (a round-trip sample, Karn's rule).
    pub sample_from: Option<Instant>,
}

impl InFlight {
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
    pub fn is_idle(&self) -> bool {
        self.in_flight.is_empty() && self.pending.is_empty()
    }

    /// Whether an ACK of everything before `next` removes any packet.
    pub fn acks_any(&self, next: u32) -> bool {
        self.in_flight
            .front()
            .is_some_and(|p| seq_diff(p.seq, next) < 0)
    }

    /// Removes every packet before `next`; says how many and what they time.
    /// The boxes of one-fragment messages go to `spare` for reuse.
    pub fn ack_cumulative(&mut self, next: u32, spare: &mut SpareMsgs) -> Acked {
        let mut r = Acked::default();
        while let Some(front) = self.in_flight.front() {
            if seq_diff(front.seq, next) >= 0 {
                break;
            }
            if front.rtt_eligible() {
                r.sample_from = Some(front.first_sent);
            }
            r.count += 1;
            if let Some(p) = self.in_flight.pop_front() {
                p.frag.msg.recycle(spare);
            }
        }
        r
    }

    /// Marks packets `next+1+i` for every bit i of `sack` as held by the receiver.
    /// Returns the highest sequence number so marked.
    pub fn ack_selective(&mut self, next: u32, sack: u64) -> SackResult {
        let mut r = SackResult::default();
        if sack == 0 {
            return r;
        }
        for p in self.in_flight.iter_mut() {
            let d = seq_diff(p.seq, next);
            if (1..=64).contains(&d) && sack & (1u64 << (d - 1)) != 0 {
                if !p.sacked {
                    r.newly_sacked = true;
                    if p.rtt_eligible() {
                        r.sample_from = Some(p.first_sent);
                    }
                }
                p.sacked = true;
                p.resend = false;
                r.highest = Some(p.seq);
            }
        }
        r
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
        out
    }

    /// Starts a new epoch: sequence numbers restart at 0.
    pub fn new_epoch(&mut self) {
        self.epoch = self.epoch.wrapping_add(1);
        self.next_seq = 0;
        self.paused_until = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Category, MsgKind};

    fn msg(id: MsgId) -> Arc<OutMsg> {
        Arc::new(OutMsg {
            id,
            meta: MsgMeta::new(MsgKind::User, Category::Short, 0, &[]),
            payload: vec![0; 10],
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
        let mut spare = Vec::new();
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
        };
        p.frag.msg = MsgRef::one(one, &mut spare);
        ch.in_flight.push_back(p);
        assert_eq!(ch.ack_cumulative(4, &mut spare).count, 1);
        assert_eq!(spare.len(), 1);
        assert!(spare[0].payload.is_empty(), "its payload is freed");
        let meta = spare[0].meta;
        let m = MsgRef::one(
            OutMsg {
                id: 9,
                meta,
                payload: vec![1, 2],
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
        ch.paused_until = Some(Instant(5));
        ch.new_epoch();
        assert_eq!((ch.epoch, ch.next_seq, ch.paused_until), (1, 0, None));
    }
}
