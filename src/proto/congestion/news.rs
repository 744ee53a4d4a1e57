//! What a path's controller (`congestion.rs`) and a send channel exchange:
//! the news of the channel's flight, and the gate its transmit goes by.

use super::PACE_SHIFT;
use crate::time::{Instant, Nanos};

/// What a send channel's flight told since the peer last looked
/// (`SendChannel::news`), for the path's controller.
#[derive(Clone, Copy, Debug, Default)]
pub struct FlightNews {
    /// Bytes acknowledged or SACKed that were in flight.
    pub delivered: u64,
    /// Bytes taken as lost (RACK, a reordering timer).
    pub lost: u64,
    /// When the latest copy of the newest packet taken as lost went.
    pub lost_sent: Instant,
    /// A round-trip sample.
    pub rtt: Option<Nanos>,
    /// F-RTO's verdict on the last retransmission timeout: spurious
    /// (its collapse is undone) or not.
    pub frto: Option<bool>,
}

impl FlightNews {
    /// A packet of `len` bytes in flight, last sent at `sent`, is lost.
    #[inline]
    pub fn lost(&mut self, len: u64, sent: Instant) {
        self.lost += len;
        self.lost_sent = self.lost_sent.max(sent);
    }
}

/// What the peer lends a send channel's `transmit`: how many bytes the
/// window and the pacing let go now. Retransmissions always go and are
/// taken from both; new data goes while `allows`.
#[derive(Clone, Copy, Debug)]
pub struct Gate {
    /// Bytes the window has room for.
    pub room: u64,
    /// Pacing credit in ns: a packet may go while it is not negative.
    pub slack: i64,
    /// Pacing cost of a byte, ns << PACE_SHIFT (0: not paced).
    pub cost: u64,
}

impl Gate {
    /// No limit (congestion control off).
    pub const OPEN: Gate = Gate {
        room: u64::MAX,
        slack: i64::MAX,
        cost: 0,
    };

    /// Whether a new packet may go.
    #[inline]
    pub fn allows(&self) -> bool {
        self.room > 0 && self.slack >= 0
    }

    /// A packet of `bytes` (in flight) went.
    #[inline]
    pub fn take(&mut self, bytes: u64) {
        self.room = self.room.saturating_sub(bytes);
        if self.cost != 0 {
            self.slack -= ((bytes * self.cost) >> PACE_SHIFT) as i64;
        }
    }
}
