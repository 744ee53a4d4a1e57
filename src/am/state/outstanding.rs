//! A request waiting for its reply (`messages/request.rs`): the credit it
//! holds, where it went, what its peer's death makes of it.

use std::net::SocketAddr;

use crate::time::Instant;
use crate::wire::MsgMeta;

/// A request waiting for its reply.
pub(in crate::am) struct Outstanding {
    /// The destination's translation index (whose credit it holds).
    pub(in crate::am) index: u32,
    /// Where it went: only that peer's reply (or refusal) completes it.
    pub(in crate::am) addr: SocketAddr,
    pub(in crate::am) sent: Instant,
    /// Its header: the peer's death returns it to handler 0 even after its
    /// request was acknowledged (`started.rs`).
    pub(in crate::am) meta: MsgMeta,
    /// Set when its peer died: whether its handler may have run there
    /// (`started.rs`: its place among the requests to that peer).
    pub(in crate::am) may_run: Option<bool>,
    /// It went as an express record (`express.rs`): its peer's lost ring
    /// returns it, and only then may an express record answer it.
    pub(in crate::am) express: bool,
    /// An express answer to it is queued: another is dropped on arrival.
    pub(in crate::am) answered: bool,
}

impl Outstanding {
    pub(in crate::am) fn new(
        index: u32,
        addr: SocketAddr,
        sent: Instant,
        meta: MsgMeta,
    ) -> Outstanding {
        Outstanding {
            index,
            addr,
            sent,
            meta,
            may_run: None,
            express: false,
            answered: false,
        }
    }
}
