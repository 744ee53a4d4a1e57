//! What the protocol counts into its `Statistics` (the crate's one
//! statistics type) beyond plain increments: the counters kept apart for the
//! request and the reply channel.

use crate::stats::Statistics;
use crate::wire::{CHANNEL_REPLY, CHANNEL_REQUEST, NUM_CHANNELS};

// The functions below index [request, reply] by channel.
const _: () = assert!(NUM_CHANNELS == 2 && CHANNEL_REQUEST == 0 && CHANNEL_REPLY == 1);

/// A DATA packet of category `cat` retransmitted on channel `ch`.
#[inline]
pub(super) fn count_retransmit(s: &mut Statistics, ch: usize, cat: usize) {
    [&mut s.requests_retransmitted, &mut s.replies_retransmitted][ch][cat] += 1;
    s.packets_retransmitted += 1;
}

/// A DATA packet of category `cat` sent the first time on channel `ch`,
/// `len` datagram bytes.
#[inline]
pub(super) fn count_data_sent(s: &mut Statistics, ch: usize, cat: usize, len: u64) {
    [
        &mut s.request_total_bytes_sent,
        &mut s.reply_total_bytes_sent,
    ][ch][cat] += len;
}

/// A DATA packet that arrived ahead of a gap on channel `ch`.
#[inline]
pub(super) fn count_out_of_order(s: &mut Statistics, ch: usize) {
    *[&mut s.out_of_order_requests, &mut s.out_of_order_replies][ch] += 1;
}
