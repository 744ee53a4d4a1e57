//! A send channel's news by path (striping, `peer/stripe.rs`): what its
//! flight told of each lane (the path a packet's last copy took).

/// The most paths an association has (every rail to every address).
pub const MAX_LANES: usize = crate::path::MAX_RAILS * crate::path::MAX_RAILS;

/// What the flight told of each path since the peer last looked
/// (`FlightNews` is the whole channel's): bytes delivered and lost per
/// lane, which lanes have news, the lane of the round-trip sample.
#[derive(Debug, Default)]
pub struct LaneNews {
    pub delivered: [u64; MAX_LANES],
    pub lost: [u64; MAX_LANES],
    /// Bit i: lane i has news.
    pub lanes: u32,
    pub rtt_lane: u8,
}

impl LaneNews {
    #[inline]
    pub fn delivered(&mut self, lane: u8, len: u64) {
        let l = lane as usize % MAX_LANES;
        self.delivered[l] += len;
        self.lanes |= 1 << l;
    }

    #[inline]
    pub fn lost(&mut self, lane: u8, len: u64) {
        let l = lane as usize % MAX_LANES;
        self.lost[l] += len;
        self.lanes |= 1 << l;
    }
}
