//! Memory given by the application as a raw address and length: the AM-2
//! segment, a remote memory region (`ramp_RegisterRegion`), a get's
//! destination (`ramp_Get`).

use std::sync::atomic::{AtomicU32, Ordering};

use crate::am::SegmentMemory;
use crate::error::{Error, Result};

pub struct CSegment {
    base: usize,
    len: usize,
}

impl CSegment {
    /// The memory `[base, base + len)` the application gives, refused
    /// (`BadArg`, with `what`) when it wraps around the address space or
    /// is longer than a slice may be: every range inside it is then one
    /// the code below may view as a slice.
    pub fn new(base: usize, len: usize, what: &'static str) -> Result<CSegment> {
        if !super::sane_range(base, len) {
            return Err(Error::BadArg(what));
        }
        Ok(CSegment { base, len })
    }

    /// The address of `[off, off + len)` when it is a non-empty range
    /// inside the memory (None: empty, nothing to do); an error when it is
    /// outside. Callers check the bounds, but the unsafe code below never
    /// trusts that: this check is made in every build.
    fn at(&self, off: usize, len: usize) -> std::io::Result<Option<usize>> {
        match off.checked_add(len) {
            // base + end does not wrap: `new` checked base + self.len
            Some(end) if end <= self.len => Ok((len > 0).then_some(self.base + off)),
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

    /// Refused (nothing written) outside the memory.
    fn write(&self, off: usize, data: &[u8]) {
        let Ok(Some(p)) = self.at(off, data.len()) else {
            return;
        };
        // (disjoint, the usual case: `copy_raw`, clear of glibc's slow
        // `rep movsb` on AMD; overlapping: `copy`, memmove's semantics)
        let (src, n) = (data.as_ptr() as usize, data.len());
        if src + n <= p || p + n <= src {
            // SAFETY: the application registered [base, base+len)
            // (AM_SetSeg, ramp_RegisterRegion, or a get's destination) as
            // writable memory it keeps alive; [p, p + n) is inside it
            // (checked by `at`) and disjoint from `data` (checked above).
            unsafe { crate::sys::copy_raw(data.as_ptr(), p as *mut u8, n) }
        } else {
            // SAFETY: as above; `copy` allows the overlap.
            unsafe { std::ptr::copy(data.as_ptr(), p as *mut u8, n) }
        }
    }

    fn fill_with(&self, off: usize, len: usize, f: &mut dyn FnMut(&mut [u8])) -> bool {
        let Ok(Some(p)) = self.at(off, len) else {
            return false;
        };
        // SAFETY: as for `write`: the application registered the memory
        // (a get's destination) as writable and keeps it alive until the
        // get completes; inside it (checked above). The slice lives only
        // for the call of `f`.
        let dst = unsafe { std::slice::from_raw_parts_mut(p as *mut u8, len) };
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
        let Some(p) = self.at(off, len)? else {
            return Ok(());
        };
        // SAFETY: as for `write`: the application registered the memory as
        // writable and keeps it alive; inside it (checked above); the caller
        // holds the endpoint's lock, under which alone ramp writes it.
        let dst = unsafe { std::slice::from_raw_parts_mut(p as *mut u8, len) };
        crate::sys::read_from_process(pid, remote, dst)
    }

    fn copy_to_process(
        &self,
        off: usize,
        len: usize,
        pid: u32,
        remote: usize,
    ) -> std::io::Result<()> {
        let Some(p) = self.at(off, len)? else {
            return Ok(());
        };
        // SAFETY: as for `read_into`: inside the registered memory (checked
        // above), alive and unchanged by us for the call.
        let src = unsafe { std::slice::from_raw_parts(p as *const u8, len) };
        crate::sys::write_to_process(pid, remote, src)
    }

    /// Refused (nothing appended) outside the memory.
    fn read_into(&self, off: usize, len: usize, out: &mut Vec<u8>) {
        let Ok(Some(p)) = self.at(off, len) else {
            return;
        };
        // SAFETY: as for `write`; the range is inside the registered memory
        // (checked by `at`) and stays alive and unchanged by us for the call.
        let src = unsafe { std::slice::from_raw_parts(p as *const u8, len) };
        crate::sys::extend_bytes(out, src);
    }

    /// Refused (nothing stored) outside the memory.
    fn write_word(&self, off: usize, v: u32) {
        let Ok(Some(p)) = self.at(off, 4) else {
            return;
        };
        if p.is_multiple_of(std::mem::align_of::<AtomicU32>()) {
            // SAFETY: inside the registered memory (checked by `at`),
            // aligned for a u32; the application reads the word
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
