//! The sans-IO reliable protocol core.
//!
//! One `Protocol` serves one endpoint and all its peers. It reads no clock and
//! owns no socket: the caller feeds datagrams (`handle_datagram`) and the time
//! (`handle_timeout`), queues messages (`send`), then drains the datagrams to
//! transmit (`poll_transmit`, into the caller's buffer) and the events for the
//! layer above (`poll_event`).
//!
//! Per (peer, channel) it keeps sequence numbers, cumulative and selective
//! acknowledgements (piggybacked on DATA when possible, delayed otherwise),
//! NACK with go-back-N when the receiver has no buffer, retransmission timeouts
//! from a smoothed RTT with backoff, and duplicate suppression, so that each
//! message is delivered exactly once and in order on its channel, or reported
//! as failed.
//!
//! Every peer is reached inside an association (`assoc`, after SCTP): a
//! four-way handshake whose responder keeps no state until the initiator
//! echoes a cookie signed with the endpoint's secret (proving it receives
//! at its address); then every packet carries the receiver's 64-bit
//! verification tag. DATA, ACK and NACK from an address count only with
//! our tag of the association with that address; anything else is dropped
//! and counted (`stale_dropped`), never an event. DATA is never sent to an
//! address before the association is established. A restarted peer is
//! recognised only by a new handshake (a valid cookie with other tags from
//! its address), or ends the old association by an ABORT carrying its tag;
//! one that restarted in the middle of our handshake (it cannot open our
//! cookie) says so with an UNKNOWN_COOKIE naming the echo, and we start
//! again with a fresh tag (`handshake.rs`). HEARTBEAT and HEARTBEAT_ACK
//! count only with our tag, like DATA. Unsolicited answers (INIT_ACK,
//! UNKNOWN_COOKIE, ABORT) are rate-limited; an INIT is never smaller than
//! its INIT_ACK, an UNKNOWN_COOKIE is smaller than its COOKIE_ECHO. All randomness (tags) comes from the
//! secret given to `Protocol::new` (and, under a job key, the MAC nonces'
//! random parts, which change no behaviour). Tags stop a sender that
//! cannot see the traffic; one that sees it and can spoof a peer's address
//! can still forge packets within the window unless every packet carries
//! the MAC of a job key (`ProtoConfig::mac`, `wire::Integrity`): then only
//! a holder of the key can (replaying a packet whole gives a duplicate).
//! An association owns the paths its packets take (`path.rs`: from each
//! of our rails to each address the peer listed in the handshake, each
//! confirmed by a heartbeat with a fresh nonce before it carries data,
//! failed and probed, `rails.rs`); every datagram the protocol hands out
//! names its path, and the transports route by it.
//!
//! A peer is dead when nothing has been heard from it for
//! `ProtoConfig::peer_timeout` (`RAMP_PEER_TIMEOUT_MS`) while we have
//! something to say; HEARTBEATs ask after a quarter of it (only while busy:
//! an idle association is quiet). Then every unfinished message fails
//! (`PeerUnreachable`; with several paths, only silence on every one of
//! them: a partition waits), and every new one at once, each starting a handshake
//! (one at a time) whose success makes the peer usable again; there is no
//! background probing. The per-packet retry limit is a second bound. A dead
//! peer's slot is freed after six peer timeouts, and `forget` (the AM
//! layer's unmap of an address's last entry) frees an idle peer's. A live
//! association quiet for `ProtoConfig::idle_timeout` is shut down by a
//! SHUTDOWN exchange and both ends free the peer (`shutdown`); the tags
//! of ended associations are remembered for a cookie lifetime, so that a
//! replayed COOKIE_ECHO cannot bring one back.
//! Memory a peer makes us hold (held packets, reassembly) is claimed as data
//! arrives, within `ProtoConfig::peer_buffer`; beyond it out-of-order
//! packets are dropped (the sender resends them). `memory_bytes` estimates
//! the whole state.
//!
//! The state lives beside its behaviour: a send channel (`send/`) and a
//! receive channel (`recv.rs`) per direction and channel, a `peer/`
//! joining them with its association and timers (`timer.rs`). `Protocol`
//! keeps the peers' slots (`slots.rs`) and takes datagrams in
//! (`intake.rs`: a datagram may carry several DATA, ACK and NACK packets,
//! a bundle, each handled in order) and messages (`submit.rs`), runs the
//! peers' timers (`timer_heap.rs`), answers handshakes (`handshake.rs`,
//! `shutdown.rs`, `alias.rs`), and hands out datagrams (`drain.rs`, from
//! the `outbox.rs`, which joins the small ones one flush queued for a
//! peer) and events (`event_queue.rs`, `express.rs`). `inspect.rs` looks
//! at it from outside; `invariants.rs` checks what must always hold.

mod addr;
mod alias;
#[cfg(test)]
mod alias_tests;
mod assoc;
mod bufpool;
pub mod config;
pub mod congestion;
#[cfg(test)]
mod deferred_tests;
mod drain;
pub mod event;
mod event_queue;
mod express;
mod handshake;
mod inspect;
mod intake;
#[cfg(any(test, feature = "testing"))]
mod invariants;
mod limits;
#[cfg(test)]
mod more_tests;
mod out_msg;
mod outbox;
#[cfg(test)]
mod packing_tests;
mod path;
mod path_events;
mod peer;
mod place;
mod rails;
#[cfg(test)]
mod rails_partition_tests;
#[cfg(test)]
mod rails_tests;
mod recv;
mod recv_frag;
pub mod rtt;
#[cfg(test)]
mod same_host_tests;
#[cfg(test)]
mod sealed_place_tests;
mod send;
mod shutdown;
mod slots;
#[cfg(test)]
mod stall_tests;
mod stats;
#[cfg(test)]
mod stripe_tests;
mod submit;
#[cfg(test)]
mod test_pair;
#[cfg(test)]
mod tests;
mod timer;
mod timer_heap;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;

pub use addr::PeerAddr;
pub use config::{ProtoConfig, DEFAULT_IDLE_TIMEOUT};
pub use event::{Event, FailReason, MsgId};
pub use limits::{MAX_MESSAGE, MAX_WINDOW};
#[cfg(any(test, feature = "testing"))]
pub use place::NoPlacement;
pub use place::Placement;
pub use send::{overtaken, overtakes, Payload};
// the model of `perf` follows the timers
pub(crate) use send::BURST_NS_PER_BYTE;

use crate::fxhash::FxHashMap;
use crate::stats::Statistics;
use crate::time::Instant;
use crate::wire::{self, MsgMeta, Packet, COOKIE_LEN, NUM_CHANNELS};
use assoc::{AssocState, ClosedTags, CookieError, Secrets, TokenBucket};
use outbox::Outbox;
pub(crate) use outbox::SEND_BUNDLE_MAX;
#[cfg_attr(not(feature = "testing"), allow(unused_imports))] // for h-rnet's wiring
pub use path::{PathReport, PathState, PATH_MAX_RETRANS};
#[cfg_attr(not(feature = "testing"), allow(unused_imports))]
pub use path_events::{PathChange, PathEvent, PATH_EVENTS_MAX};
use peer::{Ctx, Peer};
use recv::{InFrag, InPlace};
use send::{MsgRef, OutMsg, SpareMsgs};

/// The reliable protocol state of one endpoint.
pub struct Protocol<A: PeerAddr> {
    cfg: ProtoConfig,
    /// Verification tags and the cookie key.
    secrets: Secrets,
    /// Unsolicited answers (INIT_ACK, ABORT) left to send.
    unsolicited: TokenBucket,
    /// Unsolicited answers not sent for want of tokens.
    suppressed: u64,
    /// The packet being handled is not the first of its datagram: it may
    /// not draw an unsolicited answer (one forged bundle gets at most one
    /// ABORT, as a lone datagram does).
    in_bundle: bool,
    /// Our tags of associations that ended lately: their cookies are refused.
    closed: ClosedTags,
    /// Associations shut down for idleness (a SHUTDOWN_ACK sent or taken).
    shutdowns: u64,
    /// Every peer, by slot; a freed slot (dead and lingered, or forgotten)
    /// holds an empty placeholder, out of `slots`, and goes on `free`.
    peers: Vec<Peer<A>>,
    /// Freed slots, reused before the vector grows.
    free: Vec<u32>,
    /// The slot of each peer's address: one lookup per datagram or message.
    slots: FxHashMap<A, u32>,
    /// The slot of the last peer looked up (checked before `slots`).
    last_slot: usize,
    /// The slot of each peer's alias (`alias.rs`), at most one a peer.
    aliases: FxHashMap<A, u32>,
    /// The peers' tags (ours of their associations) as of the last walk
    /// (`alias.rs`), and the walks left (rate-limited).
    tags: FxHashMap<u64, u32>,
    walk_budget: TokenBucket,
    tag_walks: u64,
    aliases_learned: u64,
    /// Aliases of ours that peers took (ALIAS_ACK): the peer's name, the
    /// port, the tag our packets to it carry (`take_accepted_alias`).
    accepted_aliases: Vec<(A, u16, u64)>,
    /// DATA packets checked where their payload was copied
    /// (`take_deferred`).
    checked_in_place: u64,
    /// Peers with a timer set, by when to look at them (the earliest of
    /// their timers, or before) then slot: `handle_timeout` costs O(log n)
    /// per due peer, not a walk over all of them, and serves them in a fixed
    /// order (same inputs, same outputs). An entry whose time is not its
    /// peer's `queued` is stale and skipped.
    timers: BinaryHeap<Reverse<(Instant, u32)>>,
    /// Slots due in the current `handle_timeout` (kept to avoid allocating).
    due: Vec<u32>,
    out: Outbox<A>,
    /// Delivered requests not yet taken by `poll_event` (the receive buffer):
    /// the `Delivered` events of the request channel in `out.events`.
    queued_requests: usize,
    next_msg_id: MsgId,
    /// Boxes of acknowledged one-fragment messages, reused by `send`.
    spare_msgs: SpareMsgs,
    /// Our rail addresses, `rails[0]` the name (`rails.rs`); empty: the
    /// name alone.
    rails: Vec<A>,
    /// `rails` but the name, as a handshake lists them.
    listing: [u8; wire::layout::ADDRS_LEN],
    /// The slot of the peer that listed each address (its other rails).
    remotes: FxHashMap<A, u32>,
    /// The rail of the datagram being handled (its answers go back on it).
    arrival: crate::path::Rail,
    /// Heartbeat nonces (`path.rs`).
    nonces: path::Nonces,
    /// Handshakes refused for their address list (`paths_refused`).
    paths_refused: u64,
    /// Path news for the layer above (`path_events.rs`).
    path_events: path_events::PathEvents<A>,
}

impl<A: PeerAddr> Protocol<A> {
    /// `secret`: 32 random bytes, this endpoint's own (the OS's randomness;
    /// a seeded one in the simulator). Tags and cookies derive from it.
    pub fn new(mut cfg: ProtoConfig, secret: &[u8; 32]) -> Protocol<A> {
        cfg.window = cfg.window.clamp(1, MAX_WINDOW);
        cfg.max_datagram = cfg.max_datagram.max(wire::MAX_OVERHEAD + 64);
        cfg.unsolicited_rate = cfg.unsolicited_rate.max(1);
        if let Some(k) = &cfg.mac {
            // the handshake nonces' random start, from the secret
            let d = blake3::derive_key("ramp job key mac nonce start v1", secret);
            let mut start = [0u8; wire::mac::NONCE_LEN];
            start.copy_from_slice(&d[..wire::mac::NONCE_LEN]);
            cfg.integrity = wire::Integrity::job(k, start);
        }
        let out = Outbox::new(cfg.max_datagram);
        let burst = cfg.unsolicited_burst;
        Protocol {
            unsolicited: TokenBucket::new(cfg.unsolicited_burst),
            cfg,
            secrets: Secrets::new(secret),
            suppressed: 0,
            in_bundle: false,
            closed: ClosedTags::default(),
            shutdowns: 0,
            peers: Vec::new(),
            free: Vec::new(),
            slots: FxHashMap::default(),
            last_slot: usize::MAX,
            aliases: FxHashMap::default(),
            tags: FxHashMap::default(),
            walk_budget: TokenBucket::new(burst),
            tag_walks: 0,
            aliases_learned: 0,
            accepted_aliases: Vec::new(),
            checked_in_place: 0,
            timers: BinaryHeap::new(),
            due: Vec::new(),
            out,
            queued_requests: 0,
            next_msg_id: 1,
            spare_msgs: SpareMsgs::default(),
            rails: Vec::new(),
            listing: wire::Addrs::encode(&[]),
            remotes: FxHashMap::default(),
            arrival: crate::path::Rail::NAME,
            nonces: path::Nonces::new(secret),
            paths_refused: 0,
            path_events: path_events::PathEvents::default(),
        }
    }

    /// The configuration (the AM layer bounds its name lookups by the peer timeout).
    pub fn config(&self) -> &ProtoConfig {
        &self.cfg
    }

    pub fn set_recv_depth(&mut self, depth: usize) {
        self.cfg.recv_depth = depth.max(1);
    }

    /// Delivered requests held before the receive buffer refuses more.
    pub fn recv_depth(&self) -> usize {
        self.cfg.recv_depth
    }

    /// The protocol's counters: only its own fields of `Statistics` move.
    pub fn stats(&self) -> &Statistics {
        &self.out.stats
    }

    pub fn reset_stats(&mut self) {
        self.out.stats = Statistics::initial();
    }

    /// Bytes of payload one datagram carries for a message with `nargs` arguments.
    pub fn fragment_capacity(&self, nargs: usize) -> usize {
        self.cfg.fragment_capacity(nargs)
    }
}
