//! Refusals and returned messages: the checks an arriving message must
//! pass, the returned message sent back when it fails them, and the call of
//! handler 0 when a message of ours comes back (or is given up).

use std::net::SocketAddr;
use std::sync::Arc;

use super::token::{self, TokenInfo};
use crate::am::endpoint::core::EpState;
use crate::am::handler::args::{opcode, Data, HandlerArgs, SegmentMemory};
use crate::am::handler::message::{MAX_LONG, MAX_MEDIUM};
use crate::am::handler::tables::tag_accepts;
use crate::am::handler::tables::HandlerTable;
use crate::am::messages::work::{Work, WorkData};
use crate::error::ReturnStatus;
use crate::time::Instant;
use crate::wire::{Category, MsgKind, MsgMeta, CHANNEL_REPLY};

/// A returned request's status of ramp's own, no AM-2 code: an express
/// request refused on arrival for want of room in the receive queue, to
/// be sent again by the protocol's path (`express/lane.rs`); never shown
/// to handler 0.
pub(in crate::am) const RESEND: u8 = 0x80;

/// Where the payload of a message that passed the checks goes.
pub(in crate::am) enum Admitted {
    Short,
    Medium,
    /// Into this segment, which holds `dest_offset + len` bytes.
    Long(Arc<dyn SegmentMemory>),
}

/// What `EpState::admit` reads, borrowed apart from the rest of the
/// endpoint (the receive path checks a long message it places while the
/// protocol is borrowed: `placement.rs`).
pub(in crate::am) struct AdmitParts<'a> {
    pub(in crate::am) tag: u64,
    pub(in crate::am) handlers: &'a HandlerTable,
    pub(in crate::am) segment: &'a Option<Arc<dyn SegmentMemory>>,
}

impl AdmitParts<'_> {
    /// Checks an arriving user message of `len` payload bytes; `source` is
    /// the sender's index in the translation table. Err: why it is refused.
    pub(in crate::am) fn admit(
        &self,
        source: Option<u32>,
        meta: &MsgMeta,
        len: usize,
        is_request: bool,
    ) -> Result<Admitted, ReturnStatus> {
        if is_request && source.is_none() {
            return Err(ReturnStatus::BadEndpoint);
        }
        if !tag_accepts(self.tag, meta.tag) {
            return Err(ReturnStatus::BadTag);
        }
        if meta.handler == 0 || self.handlers.get(meta.handler).is_none() {
            return Err(ReturnStatus::BadHandler);
        }
        match meta.category {
            Category::Short if len != 0 => Err(ReturnStatus::BadLength),
            Category::Short => Ok(Admitted::Short),
            Category::Medium if len > MAX_MEDIUM => Err(ReturnStatus::BadLength),
            Category::Medium => Ok(Admitted::Medium),
            Category::Long => match self.segment {
                None => Err(ReturnStatus::BadSegOff),
                Some(s) if s.is_empty() || s.base() == 0 => Err(ReturnStatus::BadSegOff),
                Some(s) => {
                    let end = meta.dest_offset.checked_add(len as u64);
                    if len > MAX_LONG || end.is_none_or(|e| e > s.len() as u64) {
                        Err(ReturnStatus::BadLength)
                    } else {
                        Ok(Admitted::Long(s.clone()))
                    }
                }
            },
        }
    }
}

impl EpState {
    /// What `AdmitParts::admit` checks an arriving user message against:
    /// `.admit(source, meta, len, is_request)` (`source`: the sender's index
    /// in the translation table; Err: why it is refused).
    pub(in crate::am) fn admit_parts(&self) -> AdmitParts<'_> {
        AdmitParts {
            tag: self.tag,
            handlers: &self.handlers,
            segment: &self.segment,
        }
    }

    /// Sends a refused message back to its sender, without its payload.
    pub(in crate::am) fn send_returned(
        &mut self,
        now: Instant,
        to: SocketAddr,
        meta: MsgMeta,
        status: ReturnStatus,
        was_request: bool,
    ) {
        self.send_returned_status(now, to, meta, status as u8, was_request);
    }

    /// `send_returned` with a status code as it travels (`RESEND` too).
    pub(in crate::am) fn send_returned_status(
        &mut self,
        now: Instant,
        to: SocketAddr,
        mut meta: MsgMeta,
        status: u8,
        was_request: bool,
    ) {
        meta.kind = MsgKind::Returned;
        meta.status = status;
        meta.returned_request = was_request;
        self.send_message(now, to, CHANNEL_REPLY, meta, Vec::new());
    }

    /// The call of handler 0 for a message of ours that came back with
    /// `status` (`info` is its token, `args` its arguments).
    pub(in crate::am) fn returned_work(
        &mut self,
        mut info: TokenInfo,
        status: ReturnStatus,
    ) -> Work {
        self.stats.returned_messages += 1;
        info.returned = true;
        let opcode = opcode(info.category, info.is_request);
        Work {
            f: self.handlers.get(0).cloned(),
            info,
            data: WorkData::Returned { status, opcode },
            auto_reply_to: None,
        }
    }
}

/// AM-2's default handler 0: report the returned message and abort.
pub(in crate::am) fn default_returned_handler(ha: &HandlerArgs<'_>) {
    let (status, op) = match ha.data {
        Data::Returned { status, opcode } => (status.name(), opcode),
        _ => ("?", 0),
    };
    let detail = token::with(ha.token, |t| {
        format!(
            "to {} handler {} tag {:#x} args {:?}",
            t.source(),
            t.handler,
            t.tag,
            ha.args
        )
    });
    eprintln!(
        "*** FATAL ERROR (ramp): a message was returned with {status} (opcode {op}) {} and no handler 0 is installed (AM_SetHandler(ep, 0, fn) installs one)",
        detail.unwrap_or_default()
    );
    std::process::abort();
}
