//! What the protocol hands out: encoded datagrams, each naming the path
//! it takes (`path.rs`), events, and the counters.

use std::collections::VecDeque;
use std::sync::Arc;

use super::bufpool::BufPool;
use super::event::Event;
use super::out_msg::OutMsg;
use crate::path::Path;
use crate::stats::Statistics;

/// Most packets the outbox joins into one datagram (the wire takes
/// `wire::MAX_BUNDLE`, 64). Measured, AMX testping over UDP, 4 processes
/// on 2 cores, alternated with the unbundled build: 32 a datagram
/// 90,000 -> 103,000 req/s, 16: 89,500 -> 100,700, 8: 75,000 -> 86,000,
/// but 64: 86,000 -> 65,000 (cause not found).
pub(crate) const SEND_BUNDLE_MAX: usize = 32;
const _: () = assert!(SEND_BUNDLE_MAX <= crate::wire::MAX_BUNDLE);

/// A fragment's payload sent from the message that holds it (the datagram
/// is gathered around it, the payload not copied into `Outbox::bytes`).
pub(super) struct Piece {
    pub msg: Arc<OutMsg>,
    pub off: u32,
    pub len: u32,
}

impl Piece {
    #[inline]
    fn bytes(&self) -> &[u8] {
        &self.msg.payload[self.off as usize..(self.off + self.len) as usize]
    }
}

/// One queued packet: the path it takes, `head` bytes in
/// `Outbox::bytes`, then the piece if any, then `tail` bytes (the
/// trailer) in `Outbox::bytes`.
struct Tx<A> {
    to: Path<A>,
    head: u32,
    /// A DATA, ACK or NACK encoded whole (no piece): it may share a
    /// datagram with the packets beside it on the same path.
    bundles: bool,
    piece: Option<Piece>,
    tail: u32,
    /// The largest datagram of its path (`Outbox::limit` when queued).
    max: u32,
}

/// Datagrams and events on their way out, and the counters.
///
/// Packets are queued one by one, each for a path; when they are drained,
/// consecutive small association packets (DATA, ACK, NACK encoded whole)
/// on the same path leave as one datagram of at most the path's size (`limit`) and
/// `SEND_BUNDLE_MAX` packets (a bundle:
/// their bytes lie back to back in `bytes`, so the datagram is one slice).
/// A DATA packet gathered around a piece ends the bundle before it when it
/// fits (the datagram: the bundle's bytes and its header, the piece, its
/// trailer); else it goes alone, as a handshake packet does. The send
/// channel cuts a large fragment to the room the bundle leaves
/// (`open_room`), so a message's small last fragment and the next one's
/// first share a datagram, full: one datagram fewer per message.
/// The outbox holds nothing back itself: what one drain finds is joined
/// (the AM layer may let small requests queue up first: `am/batch.rs`).
pub(super) struct Outbox<A> {
    /// Encoded packets back to back, the next one to go at `head`. Emptied
    /// (keeping its capacity) whenever the last one is taken: no allocation
    /// per datagram.
    pub bytes: Vec<u8>,
    head: usize,
    /// The path and pieces of each packet, in order.
    transmits: VecDeque<Tx<A>>,
    /// The largest datagram a bundle makes (`ProtoConfig::max_datagram`).
    max_datagram: usize,
    /// The largest datagram of the path of the packets queued now (the
    /// peer's: `Protocol::peer_cx` sets it; `Paths::datagram`).
    limit: usize,
    pub events: VecDeque<Event<A>>,
    pub stats: Statistics,
    /// Peers declared dead (silent for the peer timeout while busy).
    pub peers_died: u64,
    /// Out-of-order packets dropped for want of the peer's buffer budget.
    pub budget_dropped: u64,
    /// Buffers for received payloads (delivered, held, reassembled), given
    /// back by the layer above (`Protocol::recycle`).
    pub pool: BufPool,
}

impl<A> Outbox<A> {
    /// An outbox whose bundles stay within `max_datagram` bytes.
    pub fn new(max_datagram: usize) -> Outbox<A> {
        Outbox {
            bytes: Vec::new(),
            head: 0,
            transmits: VecDeque::new(),
            max_datagram,
            limit: max_datagram,
            events: VecDeque::new(),
            stats: Statistics::initial(),
            peers_died: 0,
            budget_dropped: 0,
            pool: BufPool::default(),
        }
    }

    /// Bytes this outbox holds (an estimate: buffers' capacities).
    #[cfg(any(test, feature = "testing"))] // inspection for tests and the simulator
    pub fn memory_bytes(&self) -> usize {
        self.bytes.capacity()
            + self.pool.memory_bytes()
            + self.transmits.capacity() * std::mem::size_of::<Tx<A>>()
            + self.events.capacity() * std::mem::size_of::<Event<A>>()
            + self
                .events
                .iter()
                .map(|e| match e {
                    Event::Delivered { payload, .. } => payload.capacity(),
                    _ => 0,
                })
                .sum::<usize>()
    }

    /// The packets queued from now on take a path that carries datagrams
    /// of at most `max` bytes (within `max_datagram`): their bundles stay
    /// within it.
    #[inline]
    pub fn set_limit(&mut self, max: usize) {
        self.limit = max.min(self.max_datagram);
    }

    /// The largest datagram of the path of the packets queued now.
    #[inline]
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Where the next datagram is to be encoded (appended to `bytes`).
    pub fn start(&self) -> usize {
        self.bytes.len()
    }

    /// Queues the packet encoded at `bytes[start..]` to go on path `to`.
    pub fn push(&mut self, to: Path<A>, start: usize) {
        let len = self.bytes.len() - start;
        self.stats.packets_sent += 1;
        self.stats.total_bytes_sent += len as u64;
        let bundles = crate::wire::association_vtag(&self.bytes[start..]).is_some();
        self.transmits.push_back(Tx {
            to,
            head: len as u32,
            bundles,
            piece: None,
            tail: 0,
            max: self.limit as u32,
        });
    }

    /// Queues for path `to` the DATA packet gathered from
    /// `bytes[start..trailer]`, `piece` and `bytes[trailer..]`: the end of
    /// the bundle before it when it fits, else a datagram of its own.
    pub fn push_gathered(&mut self, to: Path<A>, start: usize, trailer: usize, piece: Piece) {
        let (head, tail) = (trailer - start, self.bytes.len() - trailer);
        self.stats.packets_sent += 1;
        self.stats.total_bytes_sent += (head + tail) as u64 + u64::from(piece.len);
        self.transmits.push_back(Tx {
            to,
            head: head as u32,
            bundles: false,
            piece: Some(piece),
            tail: tail as u32,
            max: self.limit as u32,
        });
    }

    /// The last datagram as the drain will make it (`join_into`'s rule),
    /// when it is a bundle of small packets that may take more: its path,
    /// bytes and packets. (Looked at only for a large fragment or a hold:
    /// a forward walk of the few queued packets.)
    fn open_bundle(&self) -> Option<(Path<A>, usize, usize, usize)>
    where
        A: Copy + PartialEq,
    {
        let mut open: Option<(Path<A>, usize, usize, usize)> = None;
        for t in &self.transmits {
            let len = t.head as usize;
            open = match open {
                _ if !t.bundles => None,
                Some((to, n, k, max)) if k < SEND_BUNDLE_MAX && to == t.to && n + len <= max => {
                    Some((to, n + len, k + 1, max))
                }
                _ => Some((t.to, len, 1, t.max as usize)),
            };
        }
        // (a full one takes nothing more: no room, nothing to keep)
        open.filter(|&(_, _, k, _)| k < SEND_BUNDLE_MAX)
    }

    /// The bytes a DATA packet on path `to` queued next may take and still
    /// end the last datagram (a bundle of small packets on `to`); 0 when
    /// it would go alone.
    #[inline]
    pub fn open_room(&self, to: Path<A>) -> usize
    where
        A: Copy + PartialEq,
    {
        if self.transmits.is_empty() {
            return 0;
        }
        match self.open_bundle() {
            Some((t, n, _, max)) if t == to => max.saturating_sub(n),
            _ => 0,
        }
    }

    pub fn has_transmits(&self) -> bool {
        !self.transmits.is_empty()
    }

    pub fn queued(&self) -> usize {
        self.transmits.len()
    }

    /// The pieces of `t`, whose bytes in `bytes` start at `at`; and where
    /// the next datagram's start.
    #[inline]
    fn pieces<'a>(bytes: &'a [u8], t: &'a Tx<A>, at: usize) -> ([&'a [u8]; 3], usize) {
        let mid = at + t.head as usize;
        let end = mid + t.tail as usize;
        let piece: &[u8] = t.piece.as_ref().map_or(&[], Piece::bytes);
        ([&bytes[at..mid], piece, &bytes[mid..end]], end)
    }

    /// `drain_batches`, except that the last datagram stays queued when it
    /// is a bundle of small packets to peer `keep` that may take more (a
    /// long message's last fragment, held for the next one's first to
    /// join: `am/batch.rs`). True when it stayed.
    #[inline]
    pub fn drain_batches_keeping<const N: usize>(
        &mut self,
        keep: A,
        mut each: impl FnMut(&[(Path<A>, [&[u8]; 3])]),
    ) -> bool
    where
        A: Copy + PartialEq,
    {
        let open = self.open_bundle().filter(|b| b.0.remote == keep);
        let Some((_, kept_bytes, kept_packets, _)) = open else {
            self.drain_batches::<N>(each);
            return false;
        };
        let go = self.transmits.len() - kept_packets;
        if go > 0 {
            let keep_at = self.bytes.len() - kept_bytes;
            self.drain_first::<N>(go, &mut each);
            self.transmits.drain(..go);
            // what stays moves to the front (the buffer does not grow
            // while a hold goes on from drain to drain)
            self.bytes.copy_within(keep_at.., 0);
            self.bytes.truncate(kept_bytes);
            self.head = 0;
        }
        true
    }

    /// Drains the first `go` packets (not all: some stay).
    #[inline(never)]
    fn drain_first<const N: usize>(
        &mut self,
        go: usize,
        each: &mut impl FnMut(&[(Path<A>, [&[u8]; 3])]),
    ) where
        A: Copy + PartialEq,
    {
        let e: &[u8] = &[];
        let first = &self.transmits[0];
        let mut batch: [(Path<A>, [&[u8]; 3]); N] = [(first.to, [e, e, e]); N];
        let n = self.join_into::<N>(go, &mut batch, each);
        if n > 0 {
            each(&batch[..n]);
        }
    }

    /// Hands every queued packet to `each` in order, in datagrams (the
    /// small packets on one path joined, see `Outbox`) in batches of at
    /// most `N`, each with its path and its pieces from where they were
    /// encoded or lie (no copy), then empties the queue. (Always inlined:
    /// a round trip's one datagram goes straight out.)
    #[inline(always)]
    pub fn drain_batches<const N: usize>(&mut self, mut each: impl FnMut(&[(Path<A>, [&[u8]; 3])]))
    where
        A: Copy + PartialEq,
    {
        let Some(first) = self.transmits.front() else {
            return;
        };
        if self.transmits.len() == 1 {
            // one datagram (a round trip's): no batch to build
            let (p, _) = Self::pieces(&self.bytes, first, self.head);
            each(&[(first.to, p)]);
            // (no general `clear` of the ring for one)
            self.transmits.pop_front();
        } else {
            let e: &[u8] = &[];
            let mut batch: [(Path<A>, [&[u8]; 3]); N] = [(first.to, [e, e, e]); N];
            let n = self.join_into::<N>(self.transmits.len(), &mut batch, &mut each);
            if n > 0 {
                each(&batch[..n]);
            }
        }
        self.transmits.clear();
        self.bytes.clear();
        self.head = 0;
    }

    /// Joins the first `count` packets into datagrams in `batch`, handing
    /// each full batch to `each`; returns how many datagrams `batch` holds
    /// at the end (not yet handed over).
    #[inline]
    fn join_into<'a, const N: usize>(
        &'a self,
        count: usize,
        batch: &mut [(Path<A>, [&'a [u8]; 3]); N],
        each: &mut impl FnMut(&[(Path<A>, [&[u8]; 3])]),
    ) -> usize
    where
        A: Copy + PartialEq,
    {
        let (mut n, mut at) = (0, self.head);
        // batch[n - 1] is a bundle of `open` packets from `open_at`
        // that may take more (0: it may not)
        let (mut open, mut open_at, mut batch_max) = (0, 0, self.max_datagram);
        for t in self.transmits.iter().take(count) {
            let (p, end) = Self::pieces(&self.bytes, t, at);
            let piece = t.piece.as_ref().map_or(0, |p| p.len as usize);
            if open > 0
                && open < SEND_BUNDLE_MAX
                && batch[n - 1].0 == t.to
                && end - open_at + piece <= batch_max
                && (t.bundles || t.piece.is_some())
            {
                if t.bundles {
                    batch[n - 1].1[0] = &self.bytes[open_at..end];
                    open += 1;
                } else {
                    // a gathered DATA packet ends the bundle
                    let mid = at + t.head as usize;
                    batch[n - 1].1 = [&self.bytes[open_at..mid], p[1], p[2]];
                    open = 0;
                }
            } else {
                if n == N {
                    each(&batch[..n]);
                    n = 0;
                }
                batch[n] = (t.to, p);
                n += 1;
                (open, open_at, batch_max) = (usize::from(t.bundles), at, t.max as usize);
            }
            at = end;
        }
        n
    }

    /// Puts the next datagram into `buf` (replacing its contents): one
    /// packet, or the small packets on one path joined as
    /// `drain_batches` joins them. Returns its path's remote address (the
    /// simulators have one rail).
    #[cfg(any(test, feature = "testing"))] // the simulator; the AM layer drains
    #[inline]
    pub fn pop(&mut self, buf: &mut Vec<u8>) -> Option<A>
    where
        A: Copy + PartialEq,
    {
        let first = self.transmits.front()?;
        let to = first.to;
        // the packets of the datagram: `k` of them, `len` bytes (no piece)
        let (mut k, mut len, max) = (1, first.head as usize, first.max as usize);
        if first.bundles {
            while let Some(t) = self.transmits.get(k) {
                if !(k < SEND_BUNDLE_MAX && t.bundles && t.to == to && len + t.head as usize <= max)
                {
                    break;
                }
                len += t.head as usize;
                k += 1;
            }
            // a gathered DATA packet may end it (as `drain_batches` joins)
            if let Some(t) = self.transmits.get(k) {
                let whole =
                    (t.head + t.tail) as usize + t.piece.as_ref().map_or(0, |p| p.len as usize);
                if k < SEND_BUNDLE_MAX && t.piece.is_some() && t.to == to && len + whole <= max {
                    buf.clear();
                    crate::wire::extend_bytes(buf, &self.bytes[self.head..self.head + len]);
                    let (p, end) = Self::pieces(&self.bytes, t, self.head + len);
                    for part in p {
                        crate::wire::extend_bytes(buf, part);
                    }
                    self.transmits.drain(..=k);
                    self.head = end;
                    if self.transmits.is_empty() {
                        self.bytes.clear();
                        self.head = 0;
                    }
                    return Some(to.remote);
                }
            }
        }
        if first.piece.is_none() {
            if self.head == 0 && self.transmits.len() == k {
                // All of it (the usual case): no copy, the two buffers are
                // exchanged and the caller's becomes the queue.
                std::mem::swap(buf, &mut self.bytes);
                self.bytes.clear();
                self.transmits.clear();
                return Some(to.remote);
            }
            buf.clear();
            crate::wire::extend_bytes(buf, &self.bytes[self.head..self.head + len]);
            self.transmits.drain(..k);
            self.head += len;
        } else {
            let t = self.transmits.pop_front()?;
            let (p, end) = Self::pieces(&self.bytes, &t, self.head);
            buf.clear();
            for part in p {
                crate::wire::extend_bytes(buf, part);
            }
            self.head = end;
        }
        if self.transmits.is_empty() {
            self.bytes.clear();
            self.head = 0;
        }
        Some(to.remote)
    }
}

#[cfg(test)]
#[path = "outbox_tests.rs"]
mod tests;
