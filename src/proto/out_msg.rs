//! One message on its way out, as handed to `Protocol::send`: what the
//! send channel's fragments and the outbox's pieces both hold (below both,
//! so that neither imports the other for it).

use crate::proto::event::MsgId;
use crate::wire::MsgMeta;

/// One message as handed to `send`.
#[derive(Debug)]
pub struct OutMsg {
    pub id: MsgId,
    pub meta: MsgMeta,
    pub payload: Vec<u8>,
    /// The CRC32C sums of the payload's 4 KiB blocks when its copy made
    /// them (`wire::copy_summed`), else empty: its gathered datagrams'
    /// trailers are made of them.
    pub sums: Vec<u32>,
    /// The payload's MAC digest when its copy made one
    /// (`Protocol::payload_sealed`): its one packet's tag is made of it.
    pub digest: Option<crate::wire::PayloadDigest>,
}
