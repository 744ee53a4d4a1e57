//! Reused payload buffers: a message's bytes land in a buffer that an
//! earlier message gave back, so the steady state allocates nothing and
//! touches no fresh page per message (a fresh 64 KiB buffer costs 16 page
//! faults and the kernel's zeroing of each page).
//!
//! Bounded: at most `POOL_BUFS` buffers and `POOL_BYTES` bytes of capacity
//! are kept; a buffer past `MAX_KEPT` is freed, not kept.

use super::limits::MAX_MESSAGE;

/// Buffers kept at most.
const POOL_BUFS: usize = 32;
/// Capacity kept at most, all buffers together.
const POOL_BYTES: usize = 8 << 20;
/// The largest buffer kept (a whole message).
const MAX_KEPT: usize = MAX_MESSAGE;

#[derive(Debug, Default)]
pub struct BufPool {
    bufs: Vec<Vec<u8>>,
    /// Capacity of the buffers in `bufs`.
    bytes: usize,
}

impl BufPool {
    /// An empty buffer with room for `len` bytes: a kept one when there is
    /// one (no allocation when it is large enough), a new one otherwise.
    /// Nothing is allocated for `len == 0`.
    #[inline]
    pub fn take(&mut self, len: usize) -> Vec<u8> {
        if len == 0 {
            return Vec::new();
        }
        // The smallest kept buffer that holds `len` (a 1 MiB message takes
        // a 1 MiB buffer, not a 64 KiB one that would have to grow into
        // fresh pages), else the largest; of equals, the one given back
        // last (`bufs` is in the order they came back): it is the likeliest
        // to be in the cache still. A stream of 64 KiB messages then cycles
        // through the few buffers in flight instead of all 32 kept (2 MiB,
        // more than this core's L2: every copy into them missed).
        let mut best: Option<usize> = None;
        for (i, b) in self.bufs.iter().enumerate().rev() {
            let better = match best {
                None => true,
                Some(j) => {
                    let (c, cj) = (b.capacity(), self.bufs[j].capacity());
                    if cj >= len {
                        c >= len && c < cj
                    } else {
                        c > cj
                    }
                }
            };
            if better {
                best = Some(i);
            }
        }
        let mut v = match best {
            Some(i) => {
                // (`remove`, not `swap_remove`: the others keep their order)
                let v = self.bufs.remove(i);
                self.bytes -= v.capacity();
                v
            }
            None => Vec::new(),
        };
        v.reserve(len);
        v
    }

    /// An empty buffer for a message of `whole` bytes whose first `len`
    /// arrived: a kept one that holds the whole message when there is one
    /// (memory held already), else one for `len` bytes only (a header's
    /// claim allocates nothing).
    #[inline]
    pub fn take_for(&mut self, len: usize, whole: usize) -> Vec<u8> {
        if self.bufs.iter().any(|b| b.capacity() >= whole) {
            self.take(whole)
        } else {
            self.take(len)
        }
    }

    /// An empty buffer holding a copy of `bytes` (one copy).
    #[inline]
    pub fn copy_of(&mut self, bytes: &[u8]) -> Vec<u8> {
        self.copy_with_room(bytes, 0)
    }

    /// A buffer holding a copy of `bytes` with room for `room` more after
    /// it (appended without growing the buffer).
    #[inline]
    pub fn copy_with_room(&mut self, bytes: &[u8], room: usize) -> Vec<u8> {
        let mut v = self.take(bytes.len() + room);
        crate::wire::extend_bytes(&mut v, bytes);
        v
    }

    /// Keeps `v` for reuse (its contents are dropped), within the bounds.
    #[inline]
    pub fn give(&mut self, mut v: Vec<u8>) {
        let cap = v.capacity();
        if cap == 0
            || cap > MAX_KEPT
            || self.bufs.len() >= POOL_BUFS
            || self.bytes + cap > POOL_BYTES
        {
            return;
        }
        v.clear();
        self.bytes += cap;
        self.bufs.push(v);
        debug_assert!(self.bufs.len() <= POOL_BUFS && self.bytes <= POOL_BYTES);
    }

    /// Asserts the bounds (`Protocol::check_invariants`).
    #[cfg(any(test, feature = "testing"))]
    pub fn check_bounds(&self) {
        let kept: usize = self.bufs.iter().map(Vec::capacity).sum();
        assert_eq!(kept, self.bytes, "buffer pool: bytes counted");
        assert!(
            self.bufs.len() <= POOL_BUFS && self.bytes <= POOL_BYTES,
            "buffer pool: {} buffers, {} bytes",
            self.bufs.len(),
            self.bytes
        );
        assert!(
            self.bufs
                .iter()
                .all(|b| b.is_empty() && b.capacity() <= MAX_KEPT),
            "buffer pool: a buffer in use or too large"
        );
    }

    /// Bytes the kept buffers hold.
    #[cfg(any(test, feature = "testing"))] // inspection for tests and the simulator
    pub fn memory_bytes(&self) -> usize {
        self.bytes + self.bufs.capacity() * std::mem::size_of::<Vec<u8>>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_reused_and_the_pool_is_bounded() {
        let mut p = BufPool::default();
        assert_eq!(p.take(0).capacity(), 0, "nothing for an empty message");
        let v = p.copy_of(&[1, 2, 3]);
        let ptr = v.as_ptr();
        p.give(v);
        let w = p.take(2);
        assert_eq!((w.as_ptr(), w.len()), (ptr, 0), "the same buffer, empty");
        p.give(w);
        p.give(Vec::with_capacity(1000));
        p.give(Vec::with_capacity(100));
        assert_eq!(p.take(500).capacity(), 1000, "the smallest that holds it");
        assert_eq!(p.take(5000).capacity(), 5000, "else the largest, grown");
        p.give(Vec::with_capacity(2000));
        assert_eq!(
            p.take_for(10, 1 << 20).capacity(),
            2000,
            "only what arrived"
        );
        p.give(Vec::with_capacity(1 << 20));
        assert!(
            p.take_for(10, 100_000).capacity() >= 1 << 20,
            "a kept whole"
        );
        p.give(Vec::with_capacity(MAX_KEPT + 1));
        assert_eq!(p.bufs.len(), 1, "a buffer past the largest is freed");
        for _ in 0..100 {
            p.give(Vec::with_capacity(MAX_KEPT));
        }
        assert!(p.bufs.len() <= POOL_BUFS && p.bytes <= POOL_BYTES);
        let kept: usize = p.bufs.iter().map(|v| v.capacity()).sum();
        assert_eq!(kept, p.bytes);
    }

    /// Of equal buffers the one given back last comes out first (it is
    /// the one still in the cache); the others keep their order.
    #[test]
    fn the_buffer_given_back_last_is_taken_first() {
        let mut p = BufPool::default();
        let bufs: Vec<Vec<u8>> = (0..4).map(|_| Vec::with_capacity(65536)).collect();
        let ptrs: Vec<*const u8> = bufs.iter().map(|b| b.as_ptr()).collect();
        for b in bufs {
            p.give(b);
        }
        let a = p.take(65000);
        assert_eq!(a.as_ptr(), ptrs[3], "the last given back");
        let b = p.take(65000);
        assert_eq!(b.as_ptr(), ptrs[2]);
        p.give(a);
        let (c, d, e) = (p.take(100), p.take(100), p.take(100));
        assert_eq!(c.as_ptr(), ptrs[3], "given back again: first again");
        assert_eq!((d.as_ptr(), e.as_ptr()), (ptrs[1], ptrs[0]));
    }
}
