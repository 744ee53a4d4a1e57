//! The express lane's state in an endpoint (`express/express.rs` explains
//! the lane): what it counted, requests refused on arrival, automatic
//! replies owed; and a record read from a ring, checked and queued among
//! the delivered messages.

use std::net::SocketAddr;

use super::outstanding::Outstanding;
use crate::am::queue::incoming::Incoming;
use crate::net::express::{Express, ExpressKind, MAX_ARGS};
use crate::net::ExpressProver;
use crate::proto::{Event, Protocol};
use crate::stats::Statistics;
use crate::time::Instant;
use crate::wire::{Category, MsgKind, MsgMeta, CHANNEL_REPLY, CHANNEL_REQUEST};

const _: () = assert!(MAX_ARGS == crate::wire::MAX_ARGS);

/// What the express lane counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExpressStats {
    pub requests_sent: u64,
    pub replies_sent: u64,
    pub requests_received: u64,
    pub replies_received: u64,
    /// Records dropped on arrival: malformed, an answer to nothing of
    /// ours, or from a ring whose sender did not prove our job key
    /// (`net/shm_proof.rs`). (The endpoint's
    /// statistics count each record read as a packet received, a dropped
    /// malformed one in `corrupt_dropped`, an answer to nothing in
    /// `stale_dropped`; each written as a packet sent, its bytes in the
    /// totals.)
    pub dropped: u64,
    /// Requests refused on arrival for want of room in the receive queue
    /// (the protocol's receive depth, as its NACKs): returned to their
    /// sender to be sent again by the protocol's path.
    pub refused: u64,
    /// Requests of ours so refused and sent again by the protocol's path.
    pub resent: u64,
    /// Requests returned because their peer's ring was dropped.
    pub lost: u64,
    /// Records taken by the fast poll (`express_poll.rs`), straight from
    /// their ring to their handler; the others went through the full one.
    pub fast: u64,
}

/// The lane's state in an endpoint.
#[derive(Default)]
pub(in crate::am) struct ExpressState {
    /// Whether we send express records (`RAMP_SHM_EXPRESS`).
    pub(in crate::am) send: bool,
    pub(in crate::am) stats: ExpressStats,
    /// Requests refused on arrival, returned after the receive (to be
    /// sent again by the protocol's path, `express/lane.rs`).
    pub(in crate::am) refused: Vec<(SocketAddr, MsgMeta)>,
    /// Fast polls in a row that took records (`express_poll.rs`); a full
    /// poll resets it.
    pub(in crate::am) fast_streak: u32,
    /// Empty fast polls since the last full one, and when that was.
    pub(in crate::am) quick_polls: u32,
    pub(in crate::am) full_at: Instant,
    /// Until when, as the last full poll left the transports, a full
    /// poll finds nothing that is not due (`Transports::quiet_until`;
    /// `Instant::ZERO` after a sleep: the next poll is a full one).
    pub(in crate::am) full_by: Instant,
    /// Automatic replies owed, sent when the dispatch ends.
    pub(in crate::am) owed: OwedAutoReplies,
    /// The translation index of the fast poll's last writer
    /// (`EpState::express_source`).
    pub(in crate::am) source: ExpressSource,
}

/// A taken record's writer's translation index (None: not mapped), found
/// for its `TakenRecord::from_gen` in the table's `generation`: it holds
/// while both do. (The look-up by address cost the fast poll ~40
/// instructions a record, most of a ping-pong's records from one writer.)
#[derive(Clone, Copy)]
pub(in crate::am) struct ExpressSource {
    pub(in crate::am) from_gen: u64,
    pub(in crate::am) table_gen: u64,
    pub(in crate::am) index: Option<u32>,
}

impl Default for ExpressSource {
    fn default() -> Self {
        ExpressSource {
            from_gen: 0,
            // (no table's generation: found at the first look)
            table_gen: u64::MAX,
            index: None,
        }
    }
}

/// Most automatic replies in one record: its id and one per argument.
pub(in crate::am) const OWED_MAX: usize = 1 + MAX_ARGS;

/// Automatic replies a dispatch owes one peer (`EpState::owe_auto_reply`).
#[derive(Clone, Copy)]
pub(in crate::am) struct OwedAutoReplies {
    pub(in crate::am) to: SocketAddr,
    pub(in crate::am) txns: [u32; OWED_MAX],
    pub(in crate::am) n: usize,
}

impl Default for OwedAutoReplies {
    fn default() -> Self {
        OwedAutoReplies {
            to: SocketAddr::from(([0, 0, 0, 0], 0)),
            txns: [0; OWED_MAX],
            n: 0,
        }
    }
}

impl ExpressState {
    pub(in crate::am) fn new(send: bool) -> ExpressState {
        ExpressState {
            send,
            ..Default::default()
        }
    }

    /// An express record `rec` read from the ring `from` writes: checked,
    /// queued in order among the protocol's delivered messages.
    pub(in crate::am) fn arrived(
        &mut self,
        proto: &mut Protocol<SocketAddr>,
        incoming: &mut Incoming,
        outstanding: &mut crate::am::state::txn_map::TxnMap<Outstanding>,
        counts: &mut Statistics,
        from: SocketAddr,
        rec: &[u8],
    ) {
        let Some(Event::Delivered { channel, meta, .. }) =
            self.check(outstanding, counts, from, rec)
        else {
            return;
        };
        if channel == CHANNEL_REQUEST {
            // as many waiting as the protocol's path lets wait before it
            // NACKs (`proto/recv.rs`)
            let depth = proto.recv_depth().max(1);
            if deliver(proto, incoming, from, channel, meta, depth) {
                self.stats.requests_received += 1;
            } else {
                self.stats.refused += 1;
                self.refused.push((from, meta));
            }
        } else {
            deliver(proto, incoming, from, channel, meta, usize::MAX);
        }
    }

    /// An express record `rec` read from the ring `from` writes, checked:
    /// the delivered message it makes (a request not yet counted: the
    /// caller takes or refuses it), or None: dropped and counted
    /// (malformed, or an answer to nothing of ours). (The event is made
    /// in one piece where it is returned: a header made first and moved
    /// into it was copied at once with wider loads than the stores that
    /// wrote it, a stall each.)
    pub(in crate::am) fn check(
        &mut self,
        outstanding: &mut crate::am::state::txn_map::TxnMap<Outstanding>,
        counts: &mut Statistics,
        from: SocketAddr,
        rec: &[u8],
    ) -> Option<Event<SocketAddr>> {
        // counted as the protocol counts its datagrams
        counts.packets_received += 1;
        let Some(x) = Express::decode(rec) else {
            self.stats.dropped += 1;
            counts.corrupt_dropped += 1;
            return None;
        };
        let (channel, txn, nargs, args) = match x.kind {
            ExpressKind::Request => (CHANNEL_REQUEST, x.txn, x.nargs, x.args),
            kind => {
                // each id answered must be an express request of ours to
                // `from` not yet answered (an automatic reply's arguments
                // are more ids: those that pass are kept, in order)
                let n = if kind == ExpressKind::AutoReply {
                    1 + x.nargs as usize
                } else {
                    1
                };
                let mut kept = [0u32; OWED_MAX];
                let mut k = 0;
                for i in 0..n {
                    let id = if i == 0 { x.txn } else { x.args[i - 1] };
                    match outstanding.get_mut(&id) {
                        Some(o) if o.addr == from && o.express && !o.answered => {
                            o.answered = true;
                            self.stats.replies_received += 1;
                            kept[k] = id;
                            k += 1;
                        }
                        _ => {
                            self.stats.dropped += 1;
                            counts.stale_dropped += 1;
                        }
                    }
                }
                if k == 0 {
                    return None;
                }
                if kind == ExpressKind::AutoReply {
                    let mut more = [0u32; MAX_ARGS];
                    more[..k - 1].copy_from_slice(&kept[1..k]);
                    (CHANNEL_REPLY, kept[0], (k - 1) as u8, more)
                } else {
                    (CHANNEL_REPLY, x.txn, x.nargs, x.args)
                }
            }
        };
        Some(Event::Delivered {
            from,
            channel,
            // (the arguments past `nargs` are zero: as `MsgMeta::new`
            // leaves them)
            meta: MsgMeta {
                kind: match x.kind {
                    ExpressKind::AutoReply => MsgKind::AutoReply,
                    _ => MsgKind::User,
                },
                category: Category::Short,
                handler: x.handler,
                nargs,
                args,
                tag: x.tag,
                dest_offset: 0,
                txn,
                status: 0,
                returned_request: false,
                express: true,
                placed: None,
                overtook: 0,
            },
            payload: Vec::new(),
        })
    }
}

/// The job key's keyed hash for the rings' proofs (`net/shm_proof.rs`);
/// None without a key.
pub(in crate::am) fn prover(mac: Option<&crate::wire::mac::MacKey>) -> Option<ExpressProver> {
    let key = mac?.clone();
    Some(std::sync::Arc::new(move |ctx: &[u8]| key.proof(ctx)))
}

/// Queues an express message `meta` from `from` as delivered, in order: as
/// `Protocol::push_delivered` (false: a request refused, `limit` requests
/// waiting there), or, when nothing waits before it there nor is stalled
/// and the AM queue has room, straight into the AM queue, where the
/// in-order draining (`messages/drain.rs`) would move it next with the tag 0
/// (no place of the start window): one move of the event instead of three.
fn deliver(
    proto: &mut Protocol<SocketAddr>,
    incoming: &mut Incoming,
    from: SocketAddr,
    channel: u8,
    meta: MsgMeta,
    limit: usize,
) -> bool {
    if incoming.stalled.is_none()
        && incoming.pending.len() < proto.recv_depth().max(1)
        && proto.peek_event().is_none()
    {
        incoming.push_back(
            Event::Delivered {
                from,
                channel,
                meta,
                payload: Vec::new(),
            },
            0,
        );
        return true;
    }
    proto.push_delivered(from, channel, meta, limit)
}
