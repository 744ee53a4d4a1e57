//! Pull-style receive: a bundle's delivered messages handed to the caller
//! instead of to handlers (for bindings whose handlers a C-to-X callback per
//! message makes slow, like Python's ctypes).
//!
//! `Bundle::drain` moves packets as AM_Poll does and runs the same arrival
//! checks (`EpState::prepare`), but gives each admitted message to the
//! caller, which plays its handler after the call returns. To keep AM-2's
//! rules (a request handler may reply once through its token; the token
//! dies with the handler; an unreplied request gets an automatic reply),
//! the messages a drain hands out are *held* by the calling thread: their
//! tokens stay live (`token::hold`) and their medium buffers stay allocated
//! until the thread's next drain or `release`, which first ends them and
//! sends the automatic replies the unreplied requests are owed.

use std::cell::RefCell;
use std::sync::Arc;

use super::set::Bundle;
use crate::am::endpoint::core::{Endpoint, LockWait};
use crate::am::handler::args::TokenId;
use crate::am::messages::token;
use crate::am::messages::work::{Work, WorkData};
use crate::error::{Error, Result, ReturnStatus};
use crate::wire::Category;

/// One message a drain hands out; valid until the thread's next drain or
/// `release`.
pub struct Pulled<'a> {
    /// Live until the thread's next drain or release (replies allowed).
    pub token: TokenId,
    /// The id of the endpoint that received it.
    pub endpoint: u64,
    /// The handler index the message was sent to (also for a returned one).
    pub handler: u8,
    pub category: Category,
    pub is_request: bool,
    /// For a message returned to handler 0: why, and its opcode.
    pub returned: Option<(ReturnStatus, i32)>,
    /// The sender's index in the receiver's translation table (-1 if none).
    pub source_id: i32,
    pub args: &'a [u32],
    /// Medium: the held buffer; long: the segment range; else (0, 0).
    pub addr: usize,
    pub len: usize,
}

thread_local! {
    /// The medium buffers of this thread's held messages.
    static BUFFERS: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
    /// The tokens of this thread's last drain, in the order handed out.
    static TOKENS: RefCell<Vec<TokenId>> = const { RefCell::new(Vec::new()) };
}

/// The token of message `index` of this thread's last drain, if it has one.
pub fn drained_token(index: usize) -> Option<TokenId> {
    TOKENS.with(|t| t.borrow().get(index).copied())
}

/// Ends the messages this thread's last drain handed out: their tokens die,
/// their medium buffers are freed, and each request not replied to gets its
/// automatic reply now (unless its endpoint was freed meanwhile).
pub fn release() {
    // (waiting: never refused)
    let _ = release_with(LockWait::Wait);
}

/// `release`, waiting for endpoints other threads hold or not as `wait`
/// says (refused: `Error::InUse`, nothing ended).
pub fn release_with(wait: LockWait) -> Result<()> {
    // Every message handed out left its token id here (also when ended since).
    if TOKENS.with(|t| t.borrow().is_empty()) {
        return Ok(());
    }
    // refusing: the endpoints the automatic replies go out of, taken first
    // (all or none; this thread may hold one several times)
    let owed = match wait {
        LockWait::Wait => Vec::new(),
        LockWait::Refuse => token::held_endpoints(owes_reply),
    };
    let _held = owed
        .iter()
        .map(|e| e.lock_state(wait))
        .collect::<Result<Vec<_>>>()?;
    let held = token::take_held();
    BUFFERS.with(|b| b.borrow_mut().clear());
    TOKENS.with(|t| t.borrow_mut().clear());
    for t in held {
        finish(t);
    }
    Ok(())
}

/// Ends one message of this thread's last drain now (its handler is done):
/// its token dies and, a request not replied to, it gets its automatic reply
/// at once. Its medium buffer stays until the next drain or `release`.
pub fn end(id: TokenId) -> Result<()> {
    end_with(id, LockWait::Wait)
}

/// `end`, waiting for the endpoint another thread holds or not as `wait`
/// says (refused: `Error::InUse`, the message not ended).
pub fn end_with(id: TokenId, wait: LockWait) -> Result<()> {
    let owed = match wait {
        LockWait::Wait => None,
        LockWait::Refuse => {
            token::with(id, |t| owes_reply(t).then(|| t.endpoint.clone())).flatten()
        }
    };
    let _held = owed.as_ref().map(|e| e.lock_state(wait)).transpose()?;
    let t = token::take_one_held(id).ok_or(Error::BadArg(
        "not the token of a message of this thread's last drain",
    ))?;
    finish(t);
    Ok(())
}

/// Whether ending held token `t` sends from its endpoint (`finish`).
fn owes_reply(t: &token::TokenInfo) -> bool {
    t.is_request && !t.returned && !t.loopback
}

/// Sends the automatic reply a dead held token's request is owed, if any.
fn finish(t: token::TokenInfo) {
    if !owes_reply(&t) {
        return;
    }
    if t.endpoint.holder().is_none() {
        return; // freed: AM_FreeEndpoint ends its messages
    }
    let g = t.endpoint.state.lock();
    let mut st = g.borrow_mut();
    let now = st.clock.now();
    // answered now (`started.rs`)
    st.request_closed();
    if st.depth.is_some() && !t.replied {
        // a short reply sent, as `request_handled` counts one
        st.stats.replies_sent[Category::Short.index()] += 1;
        st.send_auto_reply(now, t.source_addr, t.txn, t.express);
        st.flush(now);
    }
}

impl Bundle {
    /// Pull-style AM_Poll: ends the messages of this thread's last drain
    /// (`release`), moves packets on every endpoint, and hands up to `max`
    /// delivered messages to `sink` instead of running their handlers.
    /// Returns how many it handed out. Refused inside a handler (a nested
    /// receive there is AM_Poll's).
    pub fn drain(&self, max: usize, mut sink: impl FnMut(&Pulled<'_>)) -> Result<usize> {
        if token::in_handler() {
            return Err(Error::Resource(
                "ramp_Drain called inside a handler (use AM_Poll there)",
            ));
        }
        release();
        let mut n = 0;
        let mut first = Ok(());
        self.with_endpoints(|eps| {
            for ep in eps {
                match ep.drain(max - n, &mut sink) {
                    Ok(k) => n += k,
                    Err(e) => {
                        if first.is_ok() {
                            first = Err(e);
                        }
                    }
                }
            }
        });
        first.map(|()| n)
    }

    /// `drain`, repeated while nothing is delivered, busy, for up to `spin`
    /// (a binding's wait loop then notices an arrival at the library's
    /// speed, not its own). Returns at the first message or error.
    pub fn drain_wait(
        &self,
        max: usize,
        spin: crate::time::Nanos,
        mut sink: impl FnMut(&Pulled<'_>),
    ) -> Result<usize> {
        let start = self.clock.now();
        loop {
            let n = self.drain(max, &mut sink)?;
            if n > 0 || max == 0 || self.clock.now().since(start) >= spin {
                return Ok(n);
            }
            std::hint::spin_loop();
        }
    }
}

impl Endpoint {
    /// One endpoint's share of `Bundle::drain`: moves packets, then hands
    /// out up to `room` messages. Express records at the rings' heads
    /// first, as the fast poll takes them (`express_poll.rs`): checked and
    /// prepared as the full path would, without its pump while nothing
    /// else is due.
    fn drain(self: &Arc<Self>, room: usize, sink: &mut impl FnMut(&Pulled<'_>)) -> Result<usize> {
        let g = self.state.lock();
        let now = self.clock.now();
        let mut st = g.borrow_mut();
        if st.depth.is_none() {
            return Ok(0);
        }
        let mut n = 0;
        // (room 0: the full pump only, nothing taken)
        match if room > 0 {
            st.express_drain_take(now)
        } else {
            None
        } {
            Some(false) => return Ok(0),
            Some(true) => {
                loop {
                    let ev = st.express_event();
                    if ev.is_some() {
                        if let Some(w) = st.prepare(self, ev, now) {
                            hand_out(self.id, w, sink);
                            n += 1;
                        }
                    }
                    if n >= room || !st.take_next_express() {
                        break;
                    }
                }
                st.flush(now);
                return Ok(n);
            }
            None => {}
        }
        st.pump_network(now)?;
        while n < room {
            let ev = st.next_event(now);
            if ev.is_none() {
                break;
            }
            let Some(w) = st.prepare(self, ev, now) else {
                continue;
            };
            hand_out(self.id, w, sink);
            n += 1;
        }
        st.flush(now);
        Ok(n)
    }
}

/// Hands prepared message `w` of endpoint `endpoint` to `sink`, its token
/// held and its medium buffer kept by this thread until the next drain.
fn hand_out(endpoint: u64, w: Work, sink: &mut impl FnMut(&Pulled<'_>)) {
    let info = &w.info;
    let (handler, category, is_request, source_id) =
        (info.handler, info.category, info.is_request, info.source_id);
    let nargs = (info.nargs as usize).min(info.args.len());
    let args = info.args;
    let (addr, len, returned) = match w.data {
        WorkData::None => (0, 0, None),
        WorkData::Medium(v) => {
            let (addr, len) = (v.as_ptr() as usize, v.len());
            // The Vec's heap block does not move when the Vec does.
            BUFFERS.with(|b| b.borrow_mut().push(v));
            (addr, len, None)
        }
        WorkData::Long { addr, len } => (addr, len, None),
        WorkData::Returned { status, opcode } => (0, 0, Some((status, opcode))),
    };
    let token = token::hold(w.info);
    TOKENS.with(|t| t.borrow_mut().push(token));
    sink(&Pulled {
        token,
        endpoint,
        handler,
        category,
        is_request,
        returned,
        source_id,
        args: &args[..nargs],
        addr,
        len,
    });
}
