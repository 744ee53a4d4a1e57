//! Plain requests as transactions (issue 10): whether a plain AM-2
//! request returned after its target died may have run there, without a
//! datagram of its own and without keeping its id at the target.
//!
//! The target's rule (the start window): a request handler from a peer
//! starts only while fewer than `START_WINDOW` of its answers are open,
//! counting with them the requests before it that may start after it:
//! messages on the reply channel to that peer not yet cumulatively
//! acknowledged by it, plus request handlers started here and not yet
//! answered (running, or held by a drain; all peers counted: more is
//! safe), plus, for a request delivered ahead of a gap (`proto/recv.rs`),
//! the packets of its channel before it not delivered then
//! (`MsgMeta::overtook`, fewer than `START_WINDOW`). Otherwise it waits
//! at the head of the queue for the peer's acknowledgements, which ride
//! on its next packet. A request whose association ended before its
//! start is refused (returned), never run: the count of a new association
//! says nothing of the old one's answers.
//!
//! The initiator's conclusion: when a peer's association has ended
//! (death, restart), every request to it still waiting for its answer is
//! returned to handler 0 with EUNREACHABLE, and its place `j` among them
//! (oldest first) says whether it may have run. Handlers start in the
//! order their requests are delivered, so when the `j`-th started, each
//! of the `j` before it had started, its answer (which never reached us)
//! open at the target, or had not been delivered when the `j`-th was,
//! one of the packets it overtook: `j` is at most what the window counts,
//! and fewer than `START_WINDOW` may start. Requests
//! from place `START_WINDOW` on did not run, whatever was lost; the first
//! `START_WINDOW` may have (one started, or a lost packet may hide that it
//! did: `ramp_ReturnedMayHaveRun` says 1). (An express request lost with
//! its ring may have run whatever its place: it may pass older short
//! requests still in flight, `Peer::express_passes`, `express_lost`.) With the initiator's credits
//! at most `START_WINDOW` per peer (`AM_SetExpectedResources`' depth), the
//! window never holds a handler: a request's packet carries the
//! acknowledgement of the answers that freed its credit. Requests from
//! handlers (no credit) and kept transactions (an ack and a reply each)
//! can fill it; then a request waits for the peer's next packet or its
//! delayed ACK (`ack_delay`, 25 us). 64 covers the usual depths: with 16,
//! `ramp bench txn`'s request rate with 32 credits fell by about a quarter.

use std::net::SocketAddr;

use crate::am::endpoint::core::EpState;
use crate::error::ReturnStatus;
use crate::proto::{overtaken, overtakes, Event, FailReason};
use crate::time::Instant;
use crate::wire::{MsgKind, MsgMeta, CHANNEL_REPLY, CHANNEL_REQUEST};

/// Open answers to one peer past which its next request handler waits.
pub const START_WINDOW: usize = 64;

// a request that overtook the most packets (`MsgMeta::overtook`) starts
// once nothing else is open
const _: () = assert!(crate::proto::MAX_WINDOW <= START_WINDOW);

/// What the request at the head of the queue may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::am) enum Gate {
    /// Not a request held by the window: take it.
    Go,
    /// Wait for the peer's acknowledgements.
    Hold,
    /// Its association ended before it started: refuse it.
    Refuse,
}

/// Our tag of the association `from`'s requests arrive in now (0: none).
pub(in crate::am) fn arrival_tag(st: &EpState, from: &SocketAddr) -> u64 {
    st.proto.association(from).map_or(0, |(ours, _)| ours)
}

impl EpState {
    /// The window's judgement of the message at the head of the queue.
    pub(in crate::am) fn head_gate(&self) -> Gate {
        let (Some(ev), Some(&arrived)) =
            (self.incoming.pending.front(), self.incoming.arrived.front())
        else {
            return Gate::Go;
        };
        let Event::Delivered {
            from,
            channel: CHANNEL_REQUEST,
            meta,
            ..
        } = ev
        else {
            return Gate::Go;
        };
        if meta.kind != MsgKind::User || meta.express {
            // (an express request is no place of the window: `express.rs`)
            return Gate::Go;
        }
        // the association's tag and the open answers, one look-up (the
        // requests it overtook are counted as open)
        let open = self.open_requests as usize + meta.overtook as usize;
        let left = START_WINDOW.saturating_sub(open);
        match self.proto.start_window(from, CHANNEL_REPLY, left) {
            Some((tag, _)) if arrived == 0 || tag != arrived => Gate::Refuse,
            None => Gate::Refuse,
            Some((_, unacked)) if left == 0 || unacked >= left => Gate::Hold,
            Some(_) => Gate::Go,
        }
    }

    /// Takes the head of the queue when the window lets it go; refuses
    /// (returns to its sender) requests whose association ended.
    pub(in crate::am) fn take_head(&mut self, now: Instant) -> Option<Event<SocketAddr>> {
        loop {
            match self.head_gate() {
                Gate::Go => {
                    self.incoming.arrived.pop_front();
                    return self.incoming.pending.pop_front();
                }
                Gate::Hold => return None,
                Gate::Refuse => {
                    self.incoming.arrived.pop_front();
                    if let Some(Event::Delivered { from, meta, .. }) =
                        self.incoming.pending.pop_front()
                    {
                        self.send_returned(now, from, meta, ReturnStatus::Unreachable, true);
                    }
                }
            }
        }
    }

    /// A request handler started (a `Work` with an automatic reply owed).
    pub(in crate::am) fn request_opened(&mut self) {
        self.open_requests += 1;
    }

    /// A request handler's answer is queued (or it ended without one).
    pub(in crate::am) fn request_closed(&mut self) {
        self.open_requests = self.open_requests.saturating_sub(1);
    }

    /// The initiator's side: `to`'s association ended with requests of
    /// ours waiting for their answers. Each gets its verdict by its place
    /// (oldest first); the plain ones not already given up by the
    /// protocol are queued to be returned to handler 0 (`skip`: the one
    /// whose failure is being handled now).
    pub(in crate::am) fn conclude_ended(&mut self, to: SocketAddr, skip: u32) {
        let next = self.next_txn as u32;
        // express requests: no place of the window, may have run
        // (`express.rs`); returned first
        let mut express: Vec<(Instant, u32)> = self
            .outstanding
            .iter()
            .filter(|(_, o)| o.addr == to && o.express && !o.answered && o.may_run.is_none())
            .map(|(&id, o)| (o.sent, id))
            .collect();
        express.sort_unstable();
        let mut returned = Vec::new();
        for &(_, id) in &express {
            if let Some(o) = self.outstanding.get_mut(&id) {
                o.may_run = Some(true);
                if id != skip {
                    returned.push(Event::Failed {
                        to,
                        channel: CHANNEL_REQUEST,
                        id: 0,
                        meta: o.meta,
                        reason: FailReason::PeerUnreachable,
                    });
                }
            }
        }
        let mut waiting: Vec<(Instant, u32, u32)> = self
            .outstanding
            .iter()
            .filter(|(_, o)| o.addr == to && !o.express)
            .map(|(&id, o)| (o.sent, next.wrapping_sub(id), id))
            .collect();
        if waiting.iter().all(|&(_, _, id)| {
            self.outstanding
                .get(&id)
                .is_some_and(|o| o.may_run.is_some())
        }) {
            self.push_returned(returned);
            return;
        }
        // in the order they were sent (a resumed transaction keeps its old
        // id): oldest first, then the largest distance back from the next id
        waiting.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let metas: Vec<Option<MsgMeta>> = waiting
            .iter()
            .map(|&(_, _, id)| self.outstanding.get(&id).map(|o| o.meta))
            .collect();
        let places = channel_places(&metas);
        for (&place, &(_, _, id)) in places.iter().zip(&waiting) {
            let kept = self.txn.any() && self.txn_is_kept(id);
            let Some(o) = self.outstanding.get_mut(&id) else {
                continue;
            };
            if o.may_run.is_some() {
                continue;
            }
            o.may_run = Some(place < START_WINDOW);
            if id != skip && !kept {
                returned.push(Event::Failed {
                    to,
                    channel: CHANNEL_REQUEST,
                    id: 0,
                    meta: o.meta,
                    reason: FailReason::PeerUnreachable,
                });
            }
        }
        self.push_returned(returned);
    }

    /// Queues returned requests to be handled next, in order, before
    /// anything queued behind them.
    fn push_returned(&mut self, returned: Vec<Event<SocketAddr>>) {
        for ev in returned.into_iter().rev() {
            self.incoming.push_front(ev);
        }
    }
}

/// The place of each request (`metas`, in the order they were sent) in
/// its channel's order, or less: the requests certainly sent on the
/// channel before it. The protocol sends a short one ahead of long ones
/// (Xfers) queued before it and not begun (`proto::overtakes`,
/// `proto::overtaken`), so only those sent before it that it could not
/// have passed count for it; any other has every one sent before it
/// before it (nothing passes it, and it passes nothing). Counting fewer
/// is safe: a request not counted past the window is said to have
/// maybe run.
fn channel_places(metas: &[Option<MsgMeta>]) -> Vec<usize> {
    let mut not_passable = 0;
    let mut out = Vec::with_capacity(metas.len());
    for (i, m) in metas.iter().enumerate() {
        let place = match m {
            Some(m) if overtakes(m) => not_passable,
            _ => i,
        };
        out.push(place);
        if !m.is_some_and(|m| overtaken(&m)) {
            not_passable += 1;
        }
    }
    out
}

/// In handler 0, for a returned request: whether its handler may have run
/// at the target (`ramp_ReturnedMayHaveRun`).
pub fn returned_may_have_run(
    token: crate::am::handler::args::TokenId,
) -> crate::error::Result<bool> {
    use crate::error::Error;
    super::token::with(token, |t| {
        if t.returned {
            Ok(t.may_have_run)
        } else {
            Err(Error::BadArg("not the token of a returned message"))
        }
    })
    .ok_or(Error::BadArg("not the token of a running handler"))?
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Category;

    fn m(kind: MsgKind, category: Category, status: u8) -> Option<MsgMeta> {
        let mut m = MsgMeta::new(kind, category, 1, &[]);
        m.status = status;
        Some(m)
    }

    /// A short request counts only the requests sent before it that it
    /// could not have passed; any other counts all sent before it.
    #[test]
    fn a_short_request_counts_only_what_it_could_not_pass() {
        let short = m(MsgKind::User, Category::Short, 0);
        let long = m(MsgKind::User, Category::Long, 0);
        let medium = m(MsgKind::User, Category::Medium, 0);
        let kept = m(MsgKind::User, Category::Long, 1); // a flag: keeps its place
        let sent = [short, long, medium, short, kept, long, short, long];
        assert_eq!(channel_places(&sent), vec![0, 1, 2, 2, 4, 5, 4, 7]);
        // nothing to pass: the places they were sent in
        let shorts = [short; 5];
        assert_eq!(channel_places(&shorts), vec![0, 1, 2, 3, 4]);
    }
}
