//! Memory given by the application as a raw address and length: the AM-2
//! segment, a remote memory region (`ramp_RegisterRegion`), a get's
//! destination (`ramp_Get`).

use std::sync::atomic::{AtomicU32, Ordering};

use crate::am::SegmentMemory;

pub struct CSegment {
    pub base: usize,
    pub len: usize,
}

impl CSegment {
    /// Whether `[off, off + len)` is a non-empty range inside the memory
    /// (false: empty, nothing to do); an error when it is outside (callers
    /// check the bounds, but the unsafe code below never trusts that).
    fn holds(&self, off: usize, len: usize) -> std::io::Result<bool> {
        match off.checked_add(len) {
            Some(end) if end <= self.len => Ok(len > 0),
            _ => Err(std::io::ErrorKind::InvalidInput.into()),
        }
    }
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
        if data.is_empty() {
            return;
        }
        // SAFETY: the application registered [base, base+len) (AM_SetSeg,
        // ramp_RegisterRegion, or a get's destination) as writable memory it
        // keeps alive; the caller checked the bounds. `copy` has memmove
        // semantics, so overlap with `data` is fine.
        unsafe { std::ptr::copy(data.as_ptr(), (self.base + off) as *mut u8, data.len()) }
    }

    fn fill_with(&self, off: usize, len: usize, f: &mut dyn FnMut(&mut [u8])) -> bool {
        if !self.holds(off, len).unwrap_or(false) {
            return false;
        }
        // SAFETY: as for `write`: the application registered the memory
        // (a get's destination) as writable and keeps it alive until the
        // get completes; inside it (checked above). The slice lives only
        // for the call of `f`.
        let dst = unsafe { std::slice::from_raw_parts_mut((self.base + off) as *mut u8, len) };
        f(dst);
        true
    }

    fn fill_from_process(
        &self,
        off: usize,
        len: usize,
        pid: u32,
        remote: usize,
    ) -> std::io::Result<()> {
        if !self.holds(off, len)? {
            return Ok(());
        }
        // SAFETY: as for `write`: the application registered the memory as
        // writable and keeps it alive; the caller checked the bounds and
        // holds the endpoint's lock, under which alone ramp writes it.
        let dst = unsafe { std::slice::from_raw_parts_mut((self.base + off) as *mut u8, len) };
        crate::sys::read_from_process(pid, remote, dst)
    }

    fn copy_to_process(
        &self,
        off: usize,
        len: usize,
        pid: u32,
        remote: usize,
    ) -> std::io::Result<()> {
        if !self.holds(off, len)? {
            return Ok(());
        }
        // SAFETY: as for `read_into`: inside the registered memory, alive
        // and unchanged by us for the call.
        let src = unsafe { std::slice::from_raw_parts((self.base + off) as *const u8, len) };
        crate::sys::write_to_process(pid, remote, src)
    }

    fn read_into(&self, off: usize, len: usize, out: &mut Vec<u8>) {
        debug_assert!(off + len <= self.len);
        if len == 0 {
            return;
        }
        // SAFETY: as for `write`; the range is inside the registered memory
        // and stays alive and unchanged by us for the call.
        let src = unsafe { std::slice::from_raw_parts((self.base + off) as *const u8, len) };
        out.extend_from_slice(src);
    }

    fn write_word(&self, off: usize, v: u32) {
        debug_assert!(off + 4 <= self.len);
        let p = self.base + off;
        if p.is_multiple_of(std::mem::align_of::<AtomicU32>()) {
            // SAFETY: inside the registered memory (bounds checked by the
            // caller), aligned for a u32; the application reads the word
            // with volatile or atomic loads (ramp_WaitFlag). A release store
            // orders every byte written before it.
            let a = unsafe { AtomicU32::from_ptr(p as *mut u32) };
            a.store(v, Ordering::Release);
        } else {
            std::sync::atomic::fence(Ordering::Release);
            // SAFETY: as above; unaligned, so a plain unaligned write.
            unsafe { (p as *mut u32).write_unaligned(v) }
        }
    }
}
