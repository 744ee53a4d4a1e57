//! Shared memory (a memfd, see `fdpass.rs`) mapped by several processes
//! (memmap2), accessed
//! only through atomics and bounds-checked copies; and process liveness
//! (kill with signal 0).
//!
//! Other processes write the mapping concurrently and are not trusted: every
//! offset is checked against the mapping's length here, and every value read
//! is checked by the caller as hostile input. Bytes are copied in and out
//! (never handed out as references), so a concurrent writer can only make a
//! copy hold wrong bytes, never break Rust's aliasing rules on our side.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64};

/// A shared read-write mapping of a whole file.
pub(crate) struct SharedMap {
    map: memmap2::MmapRaw,
    len: usize,
}

impl SharedMap {
    /// Maps all of `file` (a memfd), which must be at least `min_len` bytes.
    pub(crate) fn of_file(file: &File, min_len: usize) -> io::Result<SharedMap> {
        let len = usize::try_from(file.metadata()?.len()).unwrap_or(0);
        if len < min_len {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "shared-memory file too short",
            ));
        }
        Self::map(file, len)
    }

    /// Maps an existing file (a /dev/shm file of an earlier version), which
    /// must be at least `min_len` bytes; never through a symbolic link, and
    /// without waiting on a FIFO someone put there under that name.
    pub(crate) fn open(path: &Path, min_len: usize) -> io::Result<SharedMap> {
        use std::os::unix::fs::OpenOptionsExt;
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)?;
        if !f.metadata()?.file_type().is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "not a regular file",
            ));
        }
        Self::of_file(&f, min_len)
    }

    fn map(file: &File, len: usize) -> io::Result<SharedMap> {
        let map = memmap2::MmapOptions::new().len(len).map_raw(file)?;
        Ok(SharedMap { map, len })
    }

    fn check(&self, off: usize, n: usize, align: usize) {
        assert!(
            off.is_multiple_of(align) && off.checked_add(n).is_some_and(|e| e <= self.len),
            "shared-memory access out of bounds"
        );
    }

    /// The 8-byte word at `off` (a multiple of 8, inside the mapping).
    pub(crate) fn u64_at(&self, off: usize) -> &AtomicU64 {
        self.check(off, 8, 8);
        // SAFETY: `off` is 8-aligned and the word lies inside the mapping
        // (checked above; the mapping is page-aligned), which lives as long
        // as `self`. Other processes touch it only through atomics too (or
        // hostilely, which can give wrong values but no unsoundness: any
        // bit pattern is a valid u64).
        unsafe { &*(self.map.as_mut_ptr().add(off) as *const AtomicU64) }
    }

    /// The 4-byte word at `off` (a multiple of 4, inside the mapping).
    pub(crate) fn u32_at(&self, off: usize) -> &AtomicU32 {
        self.check(off, 4, 4);
        // SAFETY: as for `u64_at`, with 4-byte alignment.
        unsafe { &*(self.map.as_mut_ptr().add(off) as *const AtomicU32) }
    }

    /// Copies `dst.len()` bytes at `off` out of the mapping.
    pub(crate) fn read(&self, off: usize, dst: &mut [u8]) {
        self.check(off, dst.len(), 1);
        // SAFETY: the source range lies inside the mapping (checked above)
        // and cannot overlap `dst`, which is private memory. A concurrent
        // writer elsewhere can only make the copy hold wrong bytes, which
        // the caller checks as hostile input.
        unsafe { super::copy::copy_raw(self.map.as_ptr().add(off), dst.as_mut_ptr(), dst.len()) }
    }

    /// Copies `src` into the mapping at `off`.
    pub(crate) fn write(&self, off: usize, src: &[u8]) {
        self.check(off, src.len(), 1);
        // SAFETY: the destination range lies inside the mapping (checked
        // above) and cannot overlap `src`, which is private memory; no
        // reference into the mapping is held anywhere in this process.
        unsafe { super::copy::copy_raw(src.as_ptr(), self.map.as_mut_ptr().add(off), src.len()) }
    }
}

/// Whether process `pid` exists (kill with signal 0; EPERM means it exists
/// but belongs to someone else).
pub(crate) fn pid_alive(pid: u32) -> bool {
    if pid == 0 || pid > i32::MAX as u32 {
        return false;
    }
    // SAFETY: signal 0 only checks for the process; no memory is involved.
    let rc = unsafe { libc::kill(pid as libc::pid_t, 0) };
    rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}
