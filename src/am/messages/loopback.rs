//! Loopback: a message from an endpoint to itself skips the network; its
//! handler runs at once, on the sender's thread.

use std::sync::Arc;

use super::token::TokenInfo;
use crate::am::endpoint::core::{Endpoint, Guard};
use crate::am::handler::message::Message;
use crate::am::handler::tables::tag_accepts;
use crate::am::handler::tables::TAG_NONE;
use crate::am::messages::work::{Work, WorkData};
use crate::error::{Error, Result, ReturnStatus};
use crate::wire::Category;

impl Endpoint {
    /// Delivers `msg` from this endpoint to itself (translation index
    /// `index`), synchronously.
    pub(in crate::am) fn deliver_loopback(
        self: &Arc<Self>,
        g: &Guard<'_>,
        index: u32,
        is_request: bool,
        msg: &Message<'_>,
    ) -> Result<()> {
        let mut work = {
            let mut st = g.borrow_mut();
            let entry_tag = st.table.mapped_entry(index).map_or(TAG_NONE, |e| e.tag);
            let payload = msg.payload;
            let data = match msg.category {
                Category::Short => WorkData::None,
                Category::Medium => WorkData::Medium(payload.to_vec()),
                Category::Long => {
                    let seg = st.segment.clone().ok_or(Error::BadArg(
                        "loopback transfer: the endpoint has no segment",
                    ))?;
                    let off = msg.dest_offset;
                    let end = off.checked_add(payload.len() as u64);
                    if end.is_none_or(|e| e > seg.len() as u64) {
                        return Err(Error::BadArg(
                            "loopback transfer past the end of the segment",
                        ));
                    }
                    seg.write(off as usize, payload);
                    WorkData::Long {
                        addr: seg.base() + off as usize,
                        len: payload.len(),
                    }
                }
            };
            let c = msg.category.index();
            if is_request {
                st.stats.requests_sent[c] += 1;
                st.stats.requests_received[c] += 1;
                st.stats.request_data_bytes_sent[c] += payload.len() as u64;
            } else {
                st.stats.replies_sent[c] += 1;
                st.stats.replies_received[c] += 1;
                st.stats.reply_data_bytes_sent[c] += payload.len() as u64;
            }
            let refusal = if !tag_accepts(st.tag, entry_tag) {
                Some(ReturnStatus::BadTag)
            } else if msg.handler == 0 || st.handlers.get(msg.handler).is_none() {
                Some(ReturnStatus::BadHandler)
            } else {
                None
            };
            let meta = msg.meta(0, entry_tag);
            let mut info =
                TokenInfo::new(self.clone(), self.addr(), index as i32, &meta, is_request);
            info.loopback = true;
            match refusal {
                None => Work {
                    f: st.handlers.get(msg.handler).cloned(),
                    info,
                    data,
                    auto_reply_to: None,
                },
                Some(status) => st.returned_work(info, status),
            }
        };
        self.run(g, &mut work, self.clock.now());
        Ok(())
    }
}
