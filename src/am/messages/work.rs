//! A handler call prepared under the state's borrow, run after it is
//! released (`dispatch.rs`, `returned.rs`, `loopback.rs`, `pull.rs`).

use std::net::SocketAddr;

use super::token::TokenInfo;
use crate::am::handler::args::HandlerFn;
use crate::error::ReturnStatus;

/// A handler call prepared under the borrow, run after it is released.
pub(in crate::am) struct Work {
    /// None: handler 0 is not installed (the default one runs).
    pub(in crate::am) f: Option<HandlerFn>,
    /// Its arguments are `info.args` (the first `info.nargs`).
    pub(in crate::am) info: TokenInfo,
    pub(in crate::am) data: WorkData,
    /// A request: where the automatic reply goes if its handler does not reply.
    pub(in crate::am) auto_reply_to: Option<SocketAddr>,
}

pub(in crate::am) enum WorkData {
    None,
    Medium(Vec<u8>),
    Long { addr: usize, len: usize },
    Returned { status: ReturnStatus, opcode: i32 },
}
