//! A file mapped read-write into memory (memmap2), locked for this process
//! alone (flock): the transaction log's storage.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// A file of a fixed length, mapped shared and read-write, with an exclusive
/// advisory lock held as long as the mapping lives.
pub(crate) struct MappedFile {
    map: memmap2::MmapMut,
    /// Kept open: the lock lives with the descriptor.
    _file: File,
}

impl MappedFile {
    /// Locks `file` (fails with `WouldBlock` when another process holds
    /// it), grows it to `len` bytes if shorter, and maps its first `len`
    /// bytes.
    pub(crate) fn map(file: File, len: u64) -> io::Result<MappedFile> {
        // SAFETY: flock on a descriptor we own; no memory is involved.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        if file.metadata()?.len() < len {
            file.set_len(len)?;
        }
        let len = usize::try_from(len)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "mapping too large"))?;
        // SAFETY: the file is locked for this process (flock above, and ramp
        // maps a log only through this type), so no other ramp process
        // changes it while mapped; its bytes are only ever handed out as
        // plain byte slices and every read of them is checked as untrusted
        // input, so even a foreign writer cannot break Rust's invariants
        // beyond giving wrong (and detected) contents. Its length was set
        // above, so no access falls outside the file (no SIGBUS).
        let map = unsafe { memmap2::MmapOptions::new().len(len).map_mut(&file)? };
        Ok(MappedFile { map, _file: file })
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        &self.map
    }

    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.map
    }

    /// Writes `len` bytes at `off` back to the file and waits (msync
    /// MS_SYNC): survives a machine crash, not only a process crash.
    pub(crate) fn sync_range(&self, off: usize, len: usize) -> io::Result<()> {
        self.map.flush_range(off, len)
    }
}
