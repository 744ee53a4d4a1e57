//! What a handler is and what it receives. Handlers are closures; the C ABI
//! wraps C function pointers in them (see `ffi::trampolines`).

use std::io;
use std::sync::Arc;

use crate::error::ReturnStatus;

/// The value a handler sees as its token (never 0).
pub type TokenId = u64;

/// What a handler receives besides its token and arguments.
pub enum Data<'a> {
    /// A short message.
    None,
    /// A medium message: a library-owned buffer (8-byte aligned) the handler
    /// may modify, valid until it returns.
    Medium(&'a mut [u8]),
    /// A long message: the bytes already sit at `addr` (segment base + offset).
    Long { addr: usize, len: usize },
    /// Handler 0 for a message that came back: why, and what it was.
    Returned { status: ReturnStatus, opcode: i32 },
}

/// One handler invocation.
pub struct HandlerArgs<'a> {
    pub token: TokenId,
    pub args: &'a [u32],
    pub data: Data<'a>,
}

pub type HandlerFn = Arc<dyn Fn(&mut HandlerArgs<'_>) + Send + Sync>;

/// Wraps a Rust closure as a handler.
pub fn handler(f: impl Fn(&mut HandlerArgs<'_>) + Send + Sync + 'static) -> HandlerFn {
    Arc::new(f)
}

/// Memory an endpoint exposes as its segment (the target of long messages).
pub trait SegmentMemory: Send + Sync {
    /// Address of the first byte (what handlers see as `buf - offset`).
    fn base(&self) -> usize;
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Copies `data` to `off` (the caller checked `off + data.len() <= len`).
    fn write(&self, off: usize, data: &[u8]);
    /// Appends `len` bytes from `off` to `out` (the caller checked the
    /// bounds): into a reused buffer, no fresh pages.
    fn read_into(&self, off: usize, len: usize, out: &mut Vec<u8>);
    /// Copies `len` bytes from `off` (the caller checked the bounds).
    fn read(&self, off: usize, len: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(len);
        self.read_into(off, len, &mut v);
        v
    }
    /// Stores the 32-bit word `v` at `off` (the caller checked `off + 4 <=
    /// len`) after every byte written before it: a reader that sees the word
    /// sees those bytes too (the notification word of a put, `am/rma.rs`).
    fn write_word(&self, off: usize, v: u32) {
        std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
        self.write(off, &v.to_ne_bytes())
    }
    /// Fills `[off, off + len)` (the caller checked the bounds) with the
    /// bytes at `remote` in process `pid`, copied by the kernel
    /// (`process_vm_readv`: a direct put, `rma_direct.rs`). On failure some
    /// of them may be there. Memory that cannot do this says Unsupported.
    fn fill_from_process(&self, off: usize, len: usize, pid: u32, remote: usize) -> io::Result<()> {
        let _ = (off, len, pid, remote);
        Err(io::ErrorKind::Unsupported.into())
    }
    /// Copies `[off, off + len)` (the caller checked the bounds) to `remote`
    /// in process `pid` (`process_vm_writev`: a direct get).
    fn copy_to_process(&self, off: usize, len: usize, pid: u32, remote: usize) -> io::Result<()> {
        let _ = (off, len, pid, remote);
        Err(io::ErrorKind::Unsupported.into())
    }
    /// Runs `f` on `[off, off + len)` (the caller checked the bounds) as
    /// a mutable slice, so that a get through a peer's mapping copies
    /// straight into it (`rma_shared.rs`); false when this memory cannot
    /// lend one (`f` not run).
    fn fill_with(&self, off: usize, len: usize, f: &mut dyn FnMut(&mut [u8])) -> bool {
        let _ = (off, len, f);
        false
    }
    /// `write`, summing the bytes in the same pass (`wire::copy_sum`, for
    /// a packet checked as its payload is placed): their sum, or None when
    /// nothing was written (memory that lends no slice, `fill_with`, or a
    /// CPU that cannot).
    fn write_summed(&self, off: usize, data: &[u8]) -> Option<u32> {
        let mut sum = None;
        let lent = self.fill_with(off, data.len(), &mut |dst| {
            sum = crate::wire::copy_sum(dst, data);
        });
        sum.filter(|_| lent)
    }
}

/// A segment owned by Rust code.
pub struct VecSegment {
    mem: parking_lot::Mutex<Vec<u8>>,
    base: usize,
    len: usize,
}

impl VecSegment {
    pub fn new(len: usize) -> Arc<VecSegment> {
        let v = vec![0u8; len];
        let base = v.as_ptr() as usize;
        Arc::new(VecSegment {
            mem: parking_lot::Mutex::new(v),
            base,
            len,
        })
    }

    /// A copy of the whole segment.
    pub fn snapshot(&self) -> Vec<u8> {
        self.mem.lock().clone()
    }
}

impl SegmentMemory for VecSegment {
    fn base(&self) -> usize {
        self.base
    }
    fn len(&self) -> usize {
        self.len
    }
    fn write(&self, off: usize, data: &[u8]) {
        crate::sys::copy_bytes(&mut self.mem.lock()[off..off + data.len()], data);
    }
    fn read_into(&self, off: usize, len: usize, out: &mut Vec<u8>) {
        crate::sys::extend_bytes(out, &self.mem.lock()[off..off + len]);
    }
    fn fill_with(&self, off: usize, len: usize, f: &mut dyn FnMut(&mut [u8])) -> bool {
        let mut mem = self.mem.lock();
        match off.checked_add(len).and_then(|end| mem.get_mut(off..end)) {
            Some(s) => {
                f(s);
                true
            }
            None => false,
        }
    }
    fn fill_from_process(&self, off: usize, len: usize, pid: u32, remote: usize) -> io::Result<()> {
        let mut mem = self.mem.lock();
        let dst = off
            .checked_add(len)
            .and_then(|end| mem.get_mut(off..end))
            .ok_or(io::ErrorKind::InvalidInput)?;
        crate::sys::read_from_process(pid, remote, dst)
    }
    fn copy_to_process(&self, off: usize, len: usize, pid: u32, remote: usize) -> io::Result<()> {
        let mem = self.mem.lock();
        let src = off
            .checked_add(len)
            .and_then(|end| mem.get(off..end))
            .ok_or(io::ErrorKind::InvalidInput)?;
        crate::sys::write_to_process(pid, remote, src)
    }
}

/// The opcode handler 0 receives for a message of `category`, request or reply.
pub fn opcode(category: crate::wire::Category, is_request: bool) -> i32 {
    let c = category as i32;
    if is_request {
        1 + c
    } else {
        4 + c
    }
}
