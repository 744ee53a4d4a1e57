//! What the protocol core hands up to the layer above.

use crate::wire::MsgMeta;

/// Identifies one message sent through `Protocol::send`.
pub type MsgId = u64;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event<A> {
    /// A whole message arrived, in order on its channel, exactly once.
    Delivered {
        from: A,
        channel: u8,
        meta: MsgMeta,
        payload: Vec<u8>,
    },
    /// A message could not be delivered and was given up.
    Failed {
        to: A,
        channel: u8,
        id: MsgId,
        meta: MsgMeta,
        reason: FailReason,
    },
}

/// Why a message was given up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailReason {
    /// The peer is dead (silent for the peer timeout while we had something
    /// to say; or a packet past the retry limit), or restarted (a new
    /// incarnation cannot finish what the old one was sent). Also every
    /// message sent to a dead peer before a new association succeeds.
    PeerUnreachable,
    /// The receiver refused it for want of buffer, and its last NACK said
    /// it gives up.
    Refused,
    /// Longer than `MAX_MESSAGE`: refused by `send` itself.
    TooLong,
}
