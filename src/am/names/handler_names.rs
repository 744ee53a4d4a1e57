//! Handler names (`ramp_SetHandlerName`, `ramp_LookupHandler`): an endpoint
//! names its installed handlers; a peer asks for the index of the handler
//! with a name, so processes that installed their handlers in different
//! orders still talk.
//!
//! The exchange runs no user handler and takes no credit:
//! - `NameQuery` (wire kind 8) on the request channel: medium, one argument
//!   (the asker's query id), the AM tag of the asker's translation entry,
//!   the name as payload;
//! - `NameAnswer` (wire kind 9) on the reply channel: short, three
//!   arguments: the query id, a status (`FOUND`, `MISSING`, `REFUSED`) and
//!   the handler index.
//!
//! Every field from the network is checked (channel, category, argument
//! count, name length and characters, status, the asker's pending query and
//! its address); anything else is dropped and counted (`corrupt_dropped`
//! for a malformed message, `stale_dropped` for an answer to no query of
//! ours). A query is answered only for a mapped source whose tag our
//! endpoint accepts (else `REFUSED`). Memory: an answer is queued only while
//! fewer than `MAX_QUEUED_TO_PEER` messages to that peer are unfinished (a
//! flood of queries from a peer that does not take its answers is dropped,
//! not queued, and counted in `stale_dropped`); at most `MAX_PENDING` lookups wait at once; the cache holds
//! what our own lookups found, at most `NUM_HANDLERS` names per peer.
//!
//! Cache: a found index is kept per peer address together with the peer's
//! verification tag of the association the answer came in. A restarted
//! peer has a new association (and tag): its entries are not used again
//! (the next lookup asks). A peer that moves a name to another handler
//! while it lives is not noticed: name handlers before peers look them up.
//! A missing name is never cached.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::am::endpoint::core::{Endpoint, EpState};
use crate::am::handler::tables::tag_accepts;
use crate::am::handler::tables::NUM_HANDLERS;
use crate::am::state::handler_names::{Answer, Pending};
use crate::error::{Error, Result};
use crate::time::{Instant, MILLIS};
use crate::wire::{Category, MsgKind, MsgMeta, CHANNEL_REPLY, CHANNEL_REQUEST};

/// Longest handler name, in bytes.
pub const MAX_HANDLER_NAME: usize = 63;
/// Lookups waiting for an answer at once (threads, nested handlers).
const MAX_PENDING: usize = 64;
/// Above this many unfinished messages to a peer, its queries go unanswered.
pub(in crate::am) const MAX_QUEUED_TO_PEER: usize = 1024;

const FOUND: u32 = 0;
const MISSING: u32 = 1;
const REFUSED: u32 = 2;

/// 1..=63 bytes of printable ASCII (space to tilde).
pub fn valid_handler_name(name: &[u8]) -> bool {
    (1..=MAX_HANDLER_NAME).contains(&name.len()) && name.iter().all(|&c| (0x20..=0x7e).contains(&c))
}

fn check_name(name: &[u8]) -> Result<()> {
    if valid_handler_name(name) {
        Ok(())
    } else {
        Err(Error::BadArg(
            "a handler name is 1..63 bytes of printable ASCII",
        ))
    }
}

impl Endpoint {
    /// ramp_SetHandlerName: names installed handler `h`.
    pub fn set_handler_name(&self, h: u8, name: &[u8]) -> Result<()> {
        check_name(name)?;
        self.with(|s| {
            if s.handlers.get(h).is_none() {
                return Err(Error::BadArg("no handler is installed at that index"));
            }
            s.names.set(h, name);
            Ok(())
        })
    }

    /// ramp_LookupHandler: the index of the handler named `name` at the
    /// peer of translation index `dest`: from the cache, or after one round
    /// trip (polling the bundle meanwhile, so handlers may run). Ends with
    /// `BadArg` when the peer has no such handler, `Resource` when the
    /// peer refused the query, is unreachable or did not answer within the
    /// peer timeout plus a second.
    pub fn lookup_handler(self: &Arc<Self>, dest: u32, name: &[u8]) -> Result<u8> {
        check_name(name)?;
        let (qid, deadline) = {
            let g = self.state.lock();
            let mut st = g.borrow_mut();
            if st.depth.is_none() {
                return Err(Error::NotInit(
                    "AM_SetExpectedResources has not been called",
                ));
            }
            let e = st
                .table
                .mapped_entry(dest)
                .ok_or(Error::BadArg("destination index is not mapped"))?;
            let (addr, tag) = (e.addr, e.tag);
            if addr == self.addr() {
                return st
                    .names
                    .local(name)
                    .ok_or(Error::BadArg("the peer has no handler of that name"));
            }
            let peer_tag = st.proto.association(&addr).map(|t| t.1);
            if let Some(h) = st.names.cached(&addr, name, peer_tag) {
                return Ok(h);
            }
            if st.names.pending.len() >= MAX_PENDING {
                return Err(Error::Resource("too many handler lookups at once"));
            }
            let qid = st.names.next_qid;
            st.names.next_qid = qid.wrapping_add(1);
            st.names.pending.insert(
                qid,
                Pending {
                    addr,
                    name: name.into(),
                    answer: None,
                },
            );
            let now = st.clock.now();
            let meta = MsgMeta {
                tag,
                ..MsgMeta::new(MsgKind::NameQuery, Category::Medium, 0, &[qid])
            };
            st.send_message(now, addr, CHANNEL_REQUEST, meta, name.to_vec());
            let bound = st.proto.config().peer_timeout.saturating_add(1000 * MILLIS);
            (qid, now.plus(bound))
        };
        let mut rounds = 0u32;
        loop {
            let answer = self.with(|s| {
                let done = s.names.pending.get(&qid).is_none_or(|p| p.answer.is_some());
                if done || s.clock.now() >= deadline {
                    s.names.pending.remove(&qid).map(|p| p.answer)
                } else {
                    None
                }
            });
            match answer {
                Some(Some(Answer::Found(h))) => return Ok(h),
                Some(Some(Answer::Missing)) => {
                    return Err(Error::BadArg("the peer has no handler of that name"))
                }
                Some(Some(Answer::Refused)) => {
                    return Err(Error::Resource(
                        "the peer refused the name query (not mapped there, or another tag)",
                    ))
                }
                Some(Some(Answer::Unreachable)) => {
                    return Err(Error::Resource("the peer is unreachable"))
                }
                Some(None) => {
                    return Err(Error::Resource(
                        "the peer did not answer the name query in time",
                    ))
                }
                None => {}
            }
            let bundle = self.holder();
            match &bundle {
                Some(b) => b.poll()?,
                None => self.poll()?,
            }
            rounds += 1;
            // sleep (until a datagram or a timer) only when the poll did not
            // just take the answer
            let answered =
                || self.with(|s| s.names.pending.get(&qid).is_none_or(|p| p.answer.is_some()));
            if rounds > 100 && !answered() {
                if let Some(b) = bundle {
                    b.wait_for_activity(5);
                }
            }
        }
    }
}

impl EpState {
    /// A name message from `from` (the caller saw `meta.kind.is_name()`).
    pub(in crate::am) fn name_delivered(
        &mut self,
        from: SocketAddr,
        channel: u8,
        meta: &MsgMeta,
        payload: &[u8],
        now: Instant,
    ) {
        match (meta.kind, channel) {
            (MsgKind::ServiceQuery | MsgKind::ServiceAnswer, _) => {
                // published endpoint names (`services.rs`)
                self.service_delivered(from, channel, meta, payload, now)
            }
            (MsgKind::NameQuery, CHANNEL_REQUEST)
                if meta.category == Category::Medium
                    && meta.nargs == 1
                    && valid_handler_name(payload) =>
            {
                if self.proto.unfinished_to(&from) >= MAX_QUEUED_TO_PEER {
                    // a flood the peer does not take the answers of: dropped
                    self.stats.stale_dropped += 1;
                    return;
                }
                let mapped = self.table.index_of(&from).is_some();
                let (status, h) = if !mapped || !tag_accepts(self.tag, meta.tag) {
                    (REFUSED, 0)
                } else {
                    match self.names.local(payload) {
                        Some(h) => (FOUND, h as u32),
                        None => (MISSING, 0),
                    }
                };
                let answer = MsgMeta::new(
                    MsgKind::NameAnswer,
                    Category::Short,
                    0,
                    &[meta.args[0], status, h],
                );
                self.send_message(now, from, CHANNEL_REPLY, answer, Vec::new());
            }
            (MsgKind::NameAnswer, CHANNEL_REPLY)
                if meta.category == Category::Short
                    && meta.nargs == 3
                    && payload.is_empty()
                    && meta.args[1] <= REFUSED
                    && meta.args[2] < NUM_HANDLERS as u32 =>
            {
                let [qid, status, h] = [meta.args[0], meta.args[1], meta.args[2]];
                let peer_tag = self.proto.association(&from).map(|t| t.1);
                let Some(p) = self
                    .names
                    .pending
                    .get_mut(&qid)
                    .filter(|p| p.addr == from && p.answer.is_none())
                else {
                    self.stats.stale_dropped += 1;
                    return;
                };
                let answer = match status {
                    FOUND => Answer::Found(h as u8),
                    MISSING => Answer::Missing,
                    _ => Answer::Refused,
                };
                p.answer = Some(answer);
                let name = p.name.clone();
                if let (Answer::Found(h), Some(t)) = (answer, peer_tag) {
                    self.names.remember(from, t, name, h);
                }
            }
            _ => self.stats.corrupt_dropped += 1,
        }
    }

    /// A name message of ours the protocol gave up on (the peer is gone).
    pub(in crate::am) fn name_failed(&mut self, to: SocketAddr, meta: &MsgMeta) {
        self.service_failed(to, meta);
        if meta.kind != MsgKind::NameQuery {
            return;
        }
        if let Some(p) = self.names.pending.get_mut(&meta.args[0]) {
            if p.addr == to && p.answer.is_none() {
                p.answer = Some(Answer::Unreachable);
            }
        }
        self.names.cache.remove(&to);
    }
}

#[cfg(test)]
mod tests;
