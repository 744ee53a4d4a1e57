//! What the protocol hands out: encoded datagrams, events, and the counters.

use std::collections::VecDeque;

use super::bufpool::BufPool;
use super::event::Event;
use crate::stats::Statistics;

/// Datagrams and events on their way out, and the counters.
pub(super) struct Outbox<A> {
    /// Encoded datagrams back to back, the next one to go at `head`. Emptied
    /// (keeping its capacity) whenever the last one is taken: no allocation
    /// per datagram.
    pub bytes: Vec<u8>,
    head: usize,
    /// The destination and length of each datagram in `bytes`, in order.
    transmits: VecDeque<(A, u32)>,
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
    pub fn new() -> Outbox<A> {
        Outbox {
            bytes: Vec::new(),
            head: 0,
            transmits: VecDeque::new(),
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
            + self.transmits.capacity() * std::mem::size_of::<(A, u32)>()
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

    /// Where the next datagram is to be encoded (appended to `bytes`).
    pub fn start(&self) -> usize {
        self.bytes.len()
    }

    /// Queues the datagram encoded at `bytes[start..]` for `to`.
    pub fn push(&mut self, to: A, start: usize) {
        let len = self.bytes.len() - start;
        self.stats.packets_sent += 1;
        self.stats.total_bytes_sent += len as u64;
        self.transmits.push_back((to, len as u32));
    }

    pub fn has_transmits(&self) -> bool {
        !self.transmits.is_empty()
    }

    /// Hands every queued datagram to `each` in order, in batches of at
    /// most `N`, from where it was encoded (no copy), then empties the
    /// queue.
    #[inline]
    pub fn drain_batches<const N: usize>(&mut self, mut each: impl FnMut(&[(A, &[u8])]))
    where
        A: Copy,
    {
        let Some(&(first, len)) = self.transmits.front() else {
            return;
        };
        if self.transmits.len() == 1 {
            // one datagram (a round trip's): no batch to build
            let end = self.head + len as usize;
            each(&[(first, &self.bytes[self.head..end])]);
            self.transmits.clear();
            self.bytes.clear();
            self.head = 0;
            return;
        }
        let mut batch: [(A, &[u8]); N] = [(first, &[]); N];
        let (mut n, mut at) = (0, self.head);
        for &(to, len) in self.transmits.iter() {
            let end = at + len as usize;
            batch[n] = (to, &self.bytes[at..end]);
            at = end;
            n += 1;
            if n == N {
                each(&batch[..n]);
                n = 0;
            }
        }
        if n > 0 {
            each(&batch[..n]);
        }
        self.transmits.clear();
        self.bytes.clear();
        self.head = 0;
    }

    /// Puts the next datagram into `buf` (replacing its contents).
    #[cfg(any(test, feature = "testing"))] // the simulator; the AM layer drains
    #[inline]
    pub fn pop(&mut self, buf: &mut Vec<u8>) -> Option<A> {
        let (to, len) = self.transmits.pop_front()?;
        if self.head == 0 && self.transmits.is_empty() {
            // The only one (the usual case): no copy, the two buffers are
            // exchanged and the caller's becomes the queue.
            std::mem::swap(buf, &mut self.bytes);
            self.bytes.clear();
            return Some(to);
        }
        let end = self.head + len as usize;
        buf.clear();
        buf.extend_from_slice(&self.bytes[self.head..end]);
        if self.transmits.is_empty() {
            self.bytes.clear();
            self.head = 0;
        } else {
            self.head = end;
        }
        Some(to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drained_in_order_in_batches_then_empty() {
        let mut o: Outbox<u32> = Outbox::new();
        for n in [1usize, 70] {
            for i in 0..n {
                let s = o.start();
                o.bytes.extend(std::iter::repeat_n(i as u8, i + 1));
                o.push(i as u32, s);
            }
            let mut sizes = Vec::new();
            let mut next = 0u32;
            o.drain_batches::<32>(|b| {
                sizes.push(b.len());
                for &(to, d) in b {
                    assert_eq!(to, next);
                    assert_eq!(d, &vec![next as u8; next as usize + 1][..]);
                    next += 1;
                }
            });
            assert_eq!(next as usize, n);
            assert_eq!(sizes, if n == 1 { vec![1] } else { vec![32, 32, 6] });
            assert!(!o.has_transmits() && o.bytes.is_empty());
        }
        o.drain_batches::<32>(|_| panic!("nothing to drain"));
    }
}
