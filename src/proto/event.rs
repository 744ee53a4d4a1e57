//! What the protocol core hands up to the layer above.

use crate::error::ReturnStatus;
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
        status: ReturnStatus,
    },
}
