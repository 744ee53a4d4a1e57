//! What a request or a reply carries: the handler to run, the category,
//! the arguments, the payload and, for a long message, where the payload
//! lands in the receiver's segment.

use crate::error::{Error, Result};
use crate::net::express::ExpressKind;
use crate::wire::{Category, MsgKind, MsgMeta, MAX_ARGS};

/// Status bit of a request's header: a kept transaction (trailer, ack).
pub(in crate::am) const TXN_FLAG: u8 = 1;
/// The status byte's mark of a long request whose payload is a descriptor
/// (`TXN_FLAG` is 1).
pub(in crate::am) const XFER_FLAG: u8 = 2;
/// The status byte's mark of a long request whose bytes are in place
/// (`TXN_FLAG` is 1, `XFER_FLAG` 2).
pub(in crate::am) const INPLACE_FLAG: u8 = 4;
/// The status byte's mark of a long request whose bytes are in the
/// sender's staging area (`rma/xfer_staged.rs`).
pub(in crate::am) const STAGED_FLAG: u8 = 8;

/// AM_MaxShort, AM_MaxMedium, AM_MaxLong.
pub const MAX_SHORT: usize = 16;
pub const MAX_MEDIUM: usize = 65000;
pub const MAX_LONG: usize = 1 << 20;

#[derive(Clone, Copy, Debug)]
pub struct Message<'a> {
    pub handler: u8,
    pub category: Category,
    pub args: &'a [u32],
    pub payload: &'a [u8],
    /// Offset of a long payload in the receiver's segment (0 for the others).
    pub dest_offset: u64,
}

impl<'a> Message<'a> {
    pub fn new(
        handler: u8,
        category: Category,
        args: &'a [u32],
        payload: &'a [u8],
        dest_offset: u64,
    ) -> Message<'a> {
        Message {
            handler,
            category,
            args,
            payload,
            dest_offset,
        }
    }

    pub fn short(handler: u8, args: &'a [u32]) -> Message<'a> {
        Message::new(handler, Category::Short, args, &[], 0)
    }

    pub fn medium(handler: u8, args: &'a [u32], payload: &'a [u8]) -> Message<'a> {
        Message::new(handler, Category::Medium, args, payload, 0)
    }

    pub fn long(handler: u8, args: &'a [u32], payload: &'a [u8], dest_offset: u64) -> Message<'a> {
        Message::new(handler, Category::Long, args, payload, dest_offset)
    }

    /// Checks the limits of AM-2 before anything changes.
    pub fn check(&self) -> Result<()> {
        if self.args.len() > MAX_ARGS {
            return Err(Error::BadArg("more than 16 handler arguments"));
        }
        let len = self.payload.len();
        match self.category {
            Category::Short if len != 0 => Err(Error::BadArg("short messages carry no payload")),
            Category::Medium if len > MAX_MEDIUM => {
                Err(Error::BadArg("medium payload larger than AM_MaxMedium() (65000 bytes): send more with a long message (AM_RequestXfer into the peer's segment) or in pieces"))
            }
            Category::Long if len > MAX_LONG => {
                Err(Error::BadArg("long payload larger than AM_MaxLong() (1 MiB): send it in pieces of at most AM_MaxLong() bytes"))
            }
            _ => Ok(()),
        }
    }

    /// Its header as a user message of transaction `txn`, tagged `tag`.
    #[inline]
    pub(crate) fn meta(&self, txn: u32, tag: u64) -> MsgMeta {
        MsgMeta {
            txn,
            tag,
            dest_offset: self.dest_offset,
            ..MsgMeta::new(MsgKind::User, self.category, self.handler, self.args)
        }
    }

    /// A short one as an express record of `kind` (a request or a reply)
    /// of transaction `txn`, tagged `tag`, written into `buf`
    /// (`net/express.rs`); its length.
    #[inline]
    pub(crate) fn express(
        &self,
        kind: ExpressKind,
        txn: u32,
        tag: u64,
        buf: &mut [u8; crate::net::express::MAX_LEN],
    ) -> usize {
        crate::net::express::encode(kind, self.handler, self.args, txn, tag, buf)
    }
}
