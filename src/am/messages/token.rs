//! Tokens: what a handler uses to interrogate its message and to reply.
//! A token is valid only while its handler runs, on the thread running it;
//! the live tokens are a per-thread stack (handlers may nest).

use std::cell::RefCell;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::am::endpoint::core::Endpoint;
use crate::am::handler::args::TokenId;
use crate::am::handler::name::EndpointName;
use crate::wire::{Category, MsgKind, MsgMeta};

/// The first id of the next block of ids a thread takes.
static NEXT_TOKEN_BLOCK: AtomicU64 = AtomicU64::new(0x1000);
/// Ids a thread hands out before it takes another block.
const TOKEN_BLOCK: u64 = 1 << 20;

pub struct TokenInfo {
    /// Given by `LiveToken::push`.
    pub id: TokenId,
    pub endpoint: Arc<Endpoint>,
    pub source_addr: SocketAddr,
    /// The sender's index in the receiver's translation table (-1 if none).
    pub source_id: i32,
    pub tag: u64,
    pub handler: u8,
    pub category: Category,
    /// How many arguments the message carries.
    pub nargs: u8,
    /// Its arguments (the first `nargs`): a message returned to its sender
    /// (`return_to_sender`) carries them back intact.
    pub args: [u32; crate::wire::MAX_ARGS],
    pub is_request: bool,
    /// A message returned to handler 0: nothing may be sent with its token.
    pub returned: bool,
    /// A request the endpoint sent to itself (its reply runs synchronously).
    pub loopback: bool,
    pub txn: u32,
    pub replied: bool,
    /// A kept transaction's request (`txn.rs`): its reply is kept.
    pub keep: bool,
    /// A returned request: whether its handler may have run (it was given
    /// up in the network, not refused by the target).
    pub may_have_run: bool,
    /// A request that came as an express record (`express.rs`): its reply
    /// may go back the same way.
    pub express: bool,
}

impl TokenInfo {
    /// The token of a message with header `meta` from `source_addr`, whose
    /// index in the receiver's table is `source_id` (-1 if none). Not yet
    /// live, not returned, not loopback, not replied to.
    pub fn new(
        endpoint: Arc<Endpoint>,
        source_addr: SocketAddr,
        source_id: i32,
        meta: &MsgMeta,
        is_request: bool,
    ) -> TokenInfo {
        TokenInfo {
            id: 0,
            endpoint,
            source_addr,
            source_id,
            tag: meta.tag,
            handler: meta.handler,
            category: meta.category,
            nargs: meta.nargs,
            args: meta.args,
            is_request,
            returned: false,
            loopback: false,
            txn: meta.txn,
            replied: false,
            keep: is_request
                && meta.status & crate::am::handler::message::TXN_FLAG != 0
                && meta.kind == MsgKind::User,
            may_have_run: false,
            express: is_request && meta.express,
        }
    }

    /// The name of the endpoint that sent the message.
    pub fn source(&self) -> EndpointName {
        EndpointName::from_addr(self.source_addr)
    }
}

/// What a token made for `LiveToken::push_with` holds as its source
/// address: `push_with` sets the real one where the token lies.
pub const SOURCE_UNSET: SocketAddr = SocketAddr::V4(std::net::SocketAddrV4::new(
    std::net::Ipv4Addr::UNSPECIFIED,
    0,
));

/// This thread's live tokens, and the ids it hands out.
struct Live {
    tokens: Vec<TokenInfo>,
    /// Tokens of messages a pull-style receive (`pull.rs`) handed to the
    /// caller: live until the thread's next drain or release, but no
    /// handler is running for them (`in_handler` does not count them).
    held: Vec<TokenInfo>,
    /// The next id of this thread's block of ids, and the block's end.
    next: TokenId,
    end: TokenId,
}

impl Live {
    /// A token id never used before by any thread. Each thread takes ids
    /// from a block of its own (no atomic operation per handler call).
    fn fresh_id(&mut self) -> TokenId {
        if self.next == self.end {
            self.next = NEXT_TOKEN_BLOCK.fetch_add(TOKEN_BLOCK, Ordering::Relaxed);
            self.end = self.next + TOKEN_BLOCK;
        }
        self.next += 1;
        self.next - 1
    }
}

thread_local! {
    static LIVE: RefCell<Live> = const {
        RefCell::new(Live {
            tokens: Vec::new(),
            held: Vec::new(),
            next: 0,
            end: 0,
        })
    };
}

/// Keeps a token live while a handler runs; it dies when the guard drops
/// (also when the handler unwinds).
pub struct LiveToken(TokenId);

impl LiveToken {
    /// Makes a copy of `info` live under a new id (whatever `info.id`
    /// was). (Copied from where it lies, once: a token moved in by value
    /// was copied four times on its way into the list.)
    #[inline]
    pub fn push(info: &TokenInfo) -> LiveToken {
        LIVE.with(|l| {
            let mut l = l.borrow_mut();
            let id = l.fresh_id();
            l.tokens.push(TokenInfo {
                id,
                endpoint: info.endpoint.clone(),
                ..*info
            });
            LiveToken(id)
        })
    }

    /// Makes the token `make` builds (given its new id) live, built where
    /// it lies in the list (the express lane's requests: made from their
    /// ring record, not copied from a prepared one), its source address
    /// (`SOURCE_UNSET` in what `make` returns) then set to `from` there. (Made inside the token, the address was
    /// staged on the stack in two overlapping 16-byte stores and read back
    /// at once across both: a failed store-to-load forward, a tenth of the
    /// express lane's per-message cycles in `perf`.)
    #[inline]
    pub fn push_with(from: &SocketAddr, make: impl FnOnce(TokenId) -> TokenInfo) -> LiveToken {
        LIVE.with(|l| {
            let mut l = l.borrow_mut();
            let id = l.fresh_id();
            // (room first, then the token made in it: `push(make(id))`
            // made it aside and copied it in)
            l.tokens.extend(std::iter::once_with(|| make(id)));
            if let Some(t) = l.tokens.last_mut() {
                t.source_addr = *from;
            }
            LiveToken(id)
        })
    }

    pub fn id(&self) -> TokenId {
        self.0
    }

    /// Ends the token's life now; returns whether its request was
    /// replied to (None: it was no longer live). The token is dropped
    /// where it lies, not copied out. (The usual case, the last token,
    /// apart from the case of a handler that unwound past a nested one:
    /// 6 instructions a round trip fewer.)
    #[inline(always)]
    pub fn finish(self) -> Option<bool> {
        let id = self.0;
        std::mem::forget(self);
        let last = LIVE.with(|l| {
            let l = &mut l.borrow_mut().tokens;
            let t = l.last()?;
            if t.id != id {
                return None;
            }
            let replied = t.replied;
            l.truncate(l.len() - 1);
            Some(replied)
        });
        if last.is_some() {
            return last;
        }
        finish_nested(id)
    }
}

/// `LiveToken::finish` of token `id` when it is not the last one (a
/// handler unwound past a nested one), or no longer live (None).
#[inline(never)]
fn finish_nested(id: TokenId) -> Option<bool> {
    LIVE.with(|l| {
        let l = &mut l.borrow_mut().tokens;
        let i = l.iter().rposition(|t| t.id == id)?;
        let replied = l[i].replied;
        if i + 1 == l.len() {
            l.truncate(i);
        } else {
            l.remove(i);
        }
        Some(replied)
    })
}

/// Takes token `id` off this thread's list (a guard dropped while its
/// handler unwinds).
fn remove(id: TokenId) -> Option<TokenInfo> {
    LIVE.with(|l| {
        let l = &mut l.borrow_mut().tokens;
        let i = l.iter().rposition(|t| t.id == id)?;
        Some(l.remove(i))
    })
}

impl Drop for LiveToken {
    fn drop(&mut self) {
        remove(self.0);
    }
}

/// Makes `info` live under a new id as a held token (see `Live::held`).
pub fn hold(mut info: TokenInfo) -> TokenId {
    LIVE.with(|l| {
        let mut l = l.borrow_mut();
        info.id = l.fresh_id();
        let id = info.id;
        l.held.push(info);
        id
    })
}

/// Ends the life of every held token of this thread; returns their last
/// states, in the order they were held.
pub fn take_held() -> Vec<TokenInfo> {
    LIVE.with(|l| std::mem::take(&mut l.borrow_mut().held))
}

/// The endpoints of this thread's held tokens that `pick` chooses.
pub fn held_endpoints(pick: impl Fn(&TokenInfo) -> bool) -> Vec<Arc<Endpoint>> {
    LIVE.with(|l| {
        let l = l.borrow();
        l.held
            .iter()
            .filter(|t| pick(t))
            .map(|t| t.endpoint.clone())
            .collect()
    })
}

/// Ends the life of held token `id` of this thread; returns its last state
/// (None when it is not one).
pub fn take_one_held(id: TokenId) -> Option<TokenInfo> {
    LIVE.with(|l| {
        let held = &mut l.borrow_mut().held;
        let i = held.iter().position(|t| t.id == id)?;
        Some(held.remove(i))
    })
}

/// Runs `f` on the live token `id` of this thread; None when there is none.
/// `f` must not start a handler (the live list is borrowed meanwhile).
pub fn with<R>(id: TokenId, f: impl FnOnce(&TokenInfo) -> R) -> Option<R> {
    LIVE.with(|l| {
        let l = l.borrow();
        let found = l.tokens.iter().rev().find(|t| t.id == id);
        found.or_else(|| l.held.iter().find(|t| t.id == id)).map(f)
    })
}

/// Runs `f` on the live token `id` of this thread, which it may change;
/// None when there is none. `f` must not start a handler nor look at tokens
/// (the live list is borrowed meanwhile).
pub fn with_mut<R>(id: TokenId, f: impl FnOnce(&mut TokenInfo) -> R) -> Option<R> {
    LIVE.with(|l| {
        let l = &mut *l.borrow_mut();
        let found = l.tokens.iter_mut().rev().find(|t| t.id == id);
        found
            .or_else(|| l.held.iter_mut().find(|t| t.id == id))
            .map(f)
    })
}

/// Whether this thread is inside a handler.
pub fn in_handler() -> bool {
    LIVE.with(|l| !l.borrow().tokens.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_ids_are_unique_across_threads_and_never_zero() {
        let per_thread: Vec<Vec<TokenId>> = (0..4)
            .map(|_| {
                std::thread::spawn(|| {
                    (0..1000)
                        .map(|_| LIVE.with(|l| l.borrow_mut().fresh_id()))
                        .collect()
                })
            })
            .map(|h| h.join().unwrap())
            .collect();
        let mut all: Vec<TokenId> = per_thread.concat();
        assert!(all.iter().all(|&id| id != 0));
        for ids in &per_thread {
            assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "consecutive");
        }
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 4000);
    }
}
