//! Replies: a request handler answers through its token, at most once.

use super::token;
use crate::am::endpoint::core::LockWait;
use crate::am::handler::args::TokenId;
use crate::am::handler::message::Message;
use crate::am::handler::tables::TAG_NONE;
use crate::am::state::txn_target::KeptReply;
use crate::error::{Error, Result};
use crate::net::express::ExpressKind;
use crate::wire::{Category, CHANNEL_REPLY};

/// Sends the message whose handler holds `token` back to its sender, whose
/// handler 0 then runs with `status` (e.g. `EBADARGS`: the handler takes
/// another number of arguments). The message counts as answered: no
/// automatic reply follows. Not for a message this endpoint sent itself,
/// a returned message, or a request already replied to.
pub fn return_to_sender(token: TokenId, status: crate::error::ReturnStatus) -> Result<()> {
    token::with_mut(token, |t| {
        if t.returned {
            return Err(Error::Resource(
                "a returned message cannot be returned again",
            ));
        }
        if t.loopback {
            return Err(Error::Resource(
                "a message an endpoint sent itself cannot be returned to it",
            ));
        }
        if t.is_request && t.replied {
            return Err(Error::Resource("this request was already replied to"));
        }
        t.replied = true;
        let mut meta = crate::wire::MsgMeta::new(
            crate::wire::MsgKind::User,
            t.category,
            t.handler,
            &t.args[..t.nargs as usize],
        );
        meta.txn = t.txn;
        meta.tag = t.tag;
        let g = t.endpoint.state.lock();
        let mut st = g.borrow_mut();
        let now = st.clock.now();
        st.send_returned(now, t.source_addr, meta, status, t.is_request);
        Ok(())
    })
    .ok_or(Error::BadArg("not the token of a running handler"))?
}

/// Sends `msg` as the reply to the request whose handler holds `token`.
pub fn reply(token: TokenId, msg: &Message<'_>) -> Result<()> {
    reply_with(token, msg, LockWait::Wait)
}

/// `reply`, waiting for the endpoint another thread holds or not as `wait`
/// says (refused: `Error::InUse`, nothing sent, the token still unreplied;
/// a reply to this endpoint itself is then always refused, as its handler
/// runs on the endpoint the requester holds).
pub fn reply_with(token: TokenId, msg: &Message<'_>, wait: LockWait) -> Result<()> {
    msg.check()?;
    // The usual reply goes out while the token is at hand (no copy of its
    // endpoint handle); one to this endpoint itself runs its handler, which
    // needs the token list, so it goes out after.
    let loopback = token::with_mut(token, |t| {
        if t.returned {
            return Err(Error::Resource("a returned message cannot be replied to"));
        }
        if !t.is_request {
            return Err(Error::Resource("only request handlers may reply"));
        }
        if t.replied {
            return Err(Error::Resource("this request was already replied to"));
        }
        if t.loopback {
            if wait == LockWait::Refuse {
                return Err(Error::InUse(
                    "a reply to this endpoint itself waits for its endpoint",
                ));
            }
            t.replied = true;
            return Ok(Some((t.endpoint.clone(), t.source_id)));
        }
        let g = t.endpoint.lock_state(wait)?;
        t.replied = true;
        let mut st = g.borrow_mut();
        let tag = st
            .table
            .mapped_entry(t.source_id.max(0) as u32)
            .map_or(TAG_NONE, |e| e.tag);
        // From a handler run by a dispatch: that poll's time, as its
        // automatic reply and the flush at its end have (no clock read
        // between the request's arrival and its reply's departure).
        let now = if st.dispatch_nesting > 0 {
            st.last_pump
        } else {
            st.clock.now()
        };
        let c = msg.category.index();
        // to an express request: back the same way when it can
        // (`express.rs`; its record made from the message, not from a
        // header made first)
        if t.express && msg.category == Category::Short && msg.payload.is_empty() && {
            let mut rec = [0u8; crate::net::express::MAX_LEN];
            let len = msg.express(ExpressKind::Reply, t.txn, tag, &mut rec);
            st.try_express_record(now, t.source_addr, ExpressKind::Reply, &rec[..len], false)
        } {
            st.stats.replies_sent[c] += 1;
            return Ok(None);
        }
        let meta = msg.meta(t.txn, tag);
        let payload = st.proto.payload_summed(msg.payload, 0);
        if t.keep {
            // kept for duplicates (`txn_target.rs`)
            let kept = KeptReply {
                meta,
                payload: msg.payload.to_vec(),
            };
            st.txn_finished(t.source_addr, t.txn, Some(kept));
        }
        st.send_message(now, t.source_addr, CHANNEL_REPLY, meta, payload);
        st.stats.replies_sent[c] += 1;
        st.stats.reply_data_bytes_sent[c] += msg.payload.len() as u64;
        Ok(None)
    })
    .ok_or(Error::BadArg("not the token of a running handler"))??;
    match loopback {
        None => Ok(()),
        Some((ep, source_id)) => {
            let g = ep.state.lock();
            ep.deliver_loopback(&g, source_id as u32, false, msg)
        }
    }
}
