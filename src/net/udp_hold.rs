//! A receive's datagrams kept for the next one (`Transport::recv_holding`):
//! the sink may stop a batch at a datagram, or at a packet within one,
//! and what it left stays in the receive buffers, handed again, first,
//! at the next receive, without a system call.
//!
//! Why: a long message's bytes go straight into the segment only when no
//! message delivered before it waits for its handler (`proto/place.rs`).
//! In a burst of long messages the next one's first fragment comes in
//! the same batch as the previous one's end, often in the same datagram
//! (bundled behind it), and was gathered into a buffer and copied once
//! more at its dispatch. The endpoint's pump stops there instead
//! (`Protocol::handle_datagram_holding`), dispatches what waits, and
//! places it at its next receive: one copy, the batch receives kept.
//! The first datagram handed again may not stop again: each is held once
//! at most, and a receive always moves on.

use std::net::SocketAddr;

use super::udp_offload::segments;
use super::HoldingSink;
use crate::sys::BatchReceiver;

/// Where a sink stopped: datagram `i` of the last receive's `n`, its GRO
/// segment `seg`, from byte `at`; `single`: the receive was a plain one
/// into slot 0, of this length from this sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Held {
    i: usize,
    n: usize,
    seg: usize,
    at: usize,
    single: Option<(usize, SocketAddr)>,
}

impl Held {
    /// A whole batch of `n` datagrams, from its start.
    pub(super) fn batch(n: usize) -> Held {
        Held {
            i: 0,
            n,
            seg: 0,
            at: 0,
            single: None,
        }
    }

    /// The datagram of a plain receive (`len` bytes in slot 0, from
    /// `from`), stopped at byte `at`.
    pub(super) fn single(len: usize, from: SocketAddr, at: usize) -> Held {
        Held {
            at: at.min(len),
            single: Some((len, from)),
            ..Held::batch(1)
        }
    }
}

/// Hands the datagrams of `batch` from `from` on to `each` (a GRO train
/// segment by segment); `again`: `from` was held, and its datagram may
/// not stop again. Returns how many were handed, and where `each`
/// stopped (None: it took them all).
pub(super) fn hand_out(
    batch: &BatchReceiver,
    from: Held,
    again: bool,
    each: &mut HoldingSink<'_>,
) -> (usize, Option<Held>) {
    let mut got = 0;
    for i in from.i..from.n {
        let (bytes, sender, gro) = match from.single {
            Some((len, s)) => (Some(batch.filled(0, len)), Some(s), None),
            None => batch.datagram(i),
        };
        let (Some(d), Some(sender)) = (bytes, sender) else {
            each(None, false);
            got += 1;
            continue;
        };
        let skip = if i == from.i { from.seg } else { 0 };
        for (k, seg) in segments(d, gro).enumerate().skip(skip) {
            let first = i == from.i && k == from.seg;
            let at = if first { from.at.min(seg.len()) } else { 0 };
            let may = !(again && first);
            got += 1;
            match each(Some((&seg[at..], sender)), may) {
                Some(stop) if may => {
                    let at = at + stop.min(seg.len() - at);
                    return (
                        got,
                        Some(Held {
                            i,
                            seg: k,
                            at,
                            ..from
                        }),
                    );
                }
                _ => {}
            }
        }
    }
    (got, None)
}
