//! A DATA packet built from a fragment: its header, whether it may be
//! delivered ahead of a gap (`Common::unordered`), its bytes gathered or
//! encoded whole.

use super::*;

impl SendChannel {
    /// Whether no packet of a message that keeps order
    /// (`MsgMeta::keeps_order`) is unacknowledged: the newest numbered one
    /// is (then so is every one before it). A resent packet goes
    /// `unordered` only then (what was numbered before it is not looked at).
    #[inline]
    pub(super) fn order_clear(&self) -> bool {
        self.last_ordered.is_none_or(|lo| {
            self.in_flight
                .front()
                .is_none_or(|p| seq_diff(p.seq, lo) > 0)
        })
    }

    /// Fragment `f` of channel `ch` is numbered `seq`, the newest: whether
    /// it goes `unordered` (a request whole in this packet that keeps no
    /// order, nothing ordered before it unacknowledged); one that keeps
    /// order is remembered.
    #[inline]
    pub(super) fn numbered_unordered(&mut self, ch: usize, seq: u32, f: &Fragment) -> bool {
        let free = ch == wire::CHANNEL_REQUEST as usize && f.may_overtake() && self.order_clear();
        if f.msg.meta.keeps_order() {
            self.last_ordered = Some(seq);
        }
        free
    }
}

/// Queues the DATA packet of `f`, numbered `seq` (`unordered`: see
/// `Common::unordered`), on path `to`; returns its length. A message's
/// first fragment has the full header, a later one the short header
/// (`wire::encode_more`: the receiver has the rest from the first). A
/// large fragment of a shared message is gathered (its payload is not
/// copied; CRC32C or the MAC runs on across the pieces); otherwise the
/// packet is encoded whole.
pub(super) fn send_fragment<A: Copy + PartialEq>(
    out: &mut Outbox<A>,
    to: Path<A>,
    integ: &Integrity,
    header: &Common,
    (seq, unordered): (u32, bool),
    f: &Fragment,
) -> usize {
    let start = out.start();
    let c = Common {
        seq,
        unordered,
        ..*header
    };
    let (off, len) = (f.off as usize, f.len as usize);
    let payload = &f.msg.payload[off..off + len];
    let msg_len = f.msg.payload.len() as u32;
    if let (MsgRef::Shared(m), true) = (&f.msg, len >= GATHER_MIN) {
        let meta = &f.msg.meta;
        let piece = wire::PayloadPiece::summed(&m.payload, &m.sums, off, len)
            .with_digest(m.digest.as_ref());
        let trailer = if f.off > 0 {
            wire::encode_more_gathered(&mut out.bytes, integ, &c, f.off, piece)
        } else {
            wire::encode_data_gathered(&mut out.bytes, integ, &c, meta, msg_len, f.off, piece)
        };
        let whole = out.bytes.len() - start + len;
        let piece = Piece {
            msg: m.clone(),
            off: f.off,
            len: f.len,
        };
        out.push_gathered(to, start, trailer, piece);
        return whole;
    }
    if f.off > 0 {
        wire::encode_more(&mut out.bytes, integ, &c, f.off, payload);
    } else {
        let meta = &f.msg.meta;
        wire::encode_data(&mut out.bytes, integ, &c, meta, msg_len, f.off, payload);
    }
    out.push(to, start);
    out.bytes.len() - start
}
