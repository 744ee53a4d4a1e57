//! An endpoint's handler names, its cache of peers' names and its lookups
//! waiting (`names/handler_names.rs`).

use std::net::SocketAddr;

use crate::am::handler::tables::NUM_HANDLERS;
use crate::fxhash::FxHashMap;

/// How a lookup ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::am) enum Answer {
    Found(u8),
    Missing,
    Refused,
    Unreachable,
}

pub(in crate::am) struct Pending {
    pub(in crate::am) addr: SocketAddr,
    pub(in crate::am) name: Box<[u8]>,
    pub(in crate::am) answer: Option<Answer>,
}

pub(in crate::am) struct PeerCache {
    /// The peer's verification tag of the association the answers came in.
    pub(in crate::am) peer_tag: u64,
    pub(in crate::am) by_name: FxHashMap<Box<[u8]>, u8>,
}

/// An endpoint's handler names, its cache of peers' names and its lookups.
#[derive(Default)]
pub(crate) struct Names {
    pub(in crate::am) by_name: FxHashMap<Box<[u8]>, u8>,
    pub(in crate::am) of_handler: FxHashMap<u8, Box<[u8]>>,
    pub(in crate::am) cache: FxHashMap<SocketAddr, PeerCache>,
    pub(in crate::am) pending: FxHashMap<u32, Pending>,
    pub(in crate::am) next_qid: u32,
}

impl Names {
    /// Names handler `h`: its old name, if any, is dropped; a handler that
    /// had this name loses it (a name names one handler).
    pub(in crate::am) fn set(&mut self, h: u8, name: &[u8]) {
        if let Some(old) = self.of_handler.remove(&h) {
            self.by_name.remove(&old);
        }
        if let Some(prev) = self.by_name.insert(name.into(), h) {
            self.of_handler.remove(&prev);
        }
        self.of_handler.insert(h, name.into());
    }

    pub(in crate::am) fn local(&self, name: &[u8]) -> Option<u8> {
        self.by_name.get(name).copied()
    }

    pub(in crate::am) fn cached(
        &self,
        addr: &SocketAddr,
        name: &[u8],
        peer_tag: Option<u64>,
    ) -> Option<u8> {
        let c = self.cache.get(addr)?;
        if Some(c.peer_tag) != peer_tag {
            return None;
        }
        c.by_name.get(name).copied()
    }

    pub(in crate::am) fn remember(
        &mut self,
        addr: SocketAddr,
        peer_tag: u64,
        name: Box<[u8]>,
        h: u8,
    ) {
        let c = self.cache.entry(addr).or_insert_with(|| PeerCache {
            peer_tag,
            by_name: FxHashMap::default(),
        });
        if c.peer_tag != peer_tag || c.by_name.len() >= NUM_HANDLERS {
            c.peer_tag = peer_tag;
            c.by_name.clear();
        }
        c.by_name.insert(name, h);
    }
}
