//! A segment given by the application as a raw address and length.

use crate::am::SegmentMemory;

pub struct CSegment {
    pub base: usize,
    pub len: usize,
}

impl SegmentMemory for CSegment {
    fn base(&self) -> usize {
        self.base
    }

    fn len(&self) -> usize {
        self.len
    }

    fn write(&self, off: usize, data: &[u8]) {
        debug_assert!(off + data.len() <= self.len);
        // SAFETY: the application registered [base, base+len) with AM_SetSeg
        // as writable memory it keeps alive; the caller checked the bounds.
        // `copy` has memmove semantics, so overlap with `data` is fine.
        unsafe { std::ptr::copy(data.as_ptr(), (self.base + off) as *mut u8, data.len()) }
    }

    fn read(&self, off: usize, len: usize) -> Vec<u8> {
        debug_assert!(off + len <= self.len);
        let mut v = vec![0u8; len];
        // SAFETY: as for `write`; the range is inside the registered segment.
        unsafe { std::ptr::copy((self.base + off) as *const u8, v.as_mut_ptr(), len) }
        v
    }
}
