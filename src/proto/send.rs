//! The sending half of one reliable channel: sequence numbers, the packets in
//! flight, the queue of fragments waiting for window, and go-back-N after a NACK.

use std::collections::VecDeque;
use std::sync::Arc;

use super::event::MsgId;
use crate::time::Instant;
use crate::wire::MsgMeta;

/// One message as handed to `send`, shared by its fragments.
#[derive(Debug)]
pub struct OutMsg {
    pub id: MsgId,
    pub meta: MsgMeta,
    pub payload: Vec<u8>,
}

/// A piece of a message that fits one datagram.
#[derive(Clone, Debug)]
pub struct Fragment {
    pub msg: Arc<OutMsg>,
    pub off: u32,
    pub len: u32,
}

/// A fragment that has a sequence number and is waiting for its ACK.
#[derive(Clone, Debug)]
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

/// `a - b` as a signed distance in sequence space.
pub fn seq_diff(a: u32, b: u32) -> i32 {
    a.wrapping_sub(b) as i32
}

impl SendChannel {
    pub fn is_idle(&self) -> bool {
        self.in_flight.is_empty() && self.pending.is_empty()
    }

    /// Removes every packet before `next`; returns them.
    pub fn ack_cumulative(&mut self, next: u32) -> Vec<InFlight> {
        let mut done = Vec::new();
        while let Some(front) = self.in_flight.front() {
            if seq_diff(front.seq, next) < 0 {
                done.push(self.in_flight.pop_front().unwrap());
            } else {
                break;
            }
        }
        done
    }

    /// Marks packets `next+1+i` for every bit i of `sack` as held by the receiver.
    /// Returns the highest sequence number so marked.
    pub fn ack_selective(&mut self, next: u32, sack: u64) -> Option<u32> {
        if sack == 0 {
            return None;
        }
        let mut highest = None;
        for p in self.in_flight.iter_mut() {
            let d = seq_diff(p.seq, next);
            if (1..=64).contains(&d) && sack & (1u64 << (d - 1)) != 0 {
                p.sacked = true;
                p.resend = false;
                highest = Some(p.seq);
            }
        }
        highest
    }

    /// Takes every message that is not yet wholly acknowledged off the channel
    /// (in flight or pending), in order, each once. Used when the channel
    /// starts a new epoch: the receiver discards what it held of them.
    pub fn drain_unfinished(&mut self) -> Vec<Arc<OutMsg>> {
        let mut out: Vec<Arc<OutMsg>> = Vec::new();
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
