//! Cross Memory Attach: copies between this process and another one of the
//! same user (`process_vm_readv` / `process_vm_writev`), for the direct
//! path of large puts and gets over shared memory (`am/rma_direct.rs`).
//! The kernel checks that we may ptrace the other process (same user, it is
//! dumpable, no stricter Yama rule); any refusal comes back as an error.

use std::io;

/// Fills `local` with the bytes at `remote` in process `pid`. Fails
/// (`local` then holds some of them) unless every byte came.
pub fn read_from_process(pid: u32, remote: usize, local: &mut [u8]) -> io::Result<()> {
    copy(pid, remote, local.as_mut_ptr() as usize, local.len(), false)
}

/// Copies `local` to `remote` in process `pid`. Fails unless every byte went.
pub fn write_to_process(pid: u32, remote: usize, local: &[u8]) -> io::Result<()> {
    copy(pid, remote, local.as_ptr() as usize, local.len(), true)
}

/// Copies in pieces (the kernel may copy less than asked) until done.
/// `[local, local + len)` is a slice of ours: writable and borrowed
/// exclusively when `!write`, readable when `write`.
fn copy(pid: u32, remote: usize, local: usize, len: usize, write: bool) -> io::Result<()> {
    if pid == 0 || pid > i32::MAX as u32 {
        return Err(io::ErrorKind::InvalidInput.into());
    }
    if remote.checked_add(len).is_none() {
        return Err(io::ErrorKind::InvalidInput.into());
    }
    let mut done = 0usize;
    while done < len {
        let l = libc::iovec {
            iov_base: (local + done) as *mut libc::c_void,
            iov_len: len - done,
        };
        let r = libc::iovec {
            iov_base: (remote + done) as *mut libc::c_void,
            iov_len: len - done,
        };
        let n = if write {
            // SAFETY: `l` lies in a slice the caller borrows (readable for
            // the call); the kernel only reads it, and checks the remote
            // range and our right to write into that process.
            unsafe { libc::process_vm_writev(pid as libc::pid_t, &l, 1, &r, 1, 0) }
        } else {
            // SAFETY: `l` lies in a slice the caller borrows mutably, so
            // nothing else touches it during the call; the kernel writes at
            // most `l.iov_len` bytes into it.
            unsafe { libc::process_vm_readv(pid as libc::pid_t, &l, 1, &r, 1, 0) }
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            // a partial copy stops at the first page it cannot touch
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        done += n as usize;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_within_our_own_process_and_refuses_bad_addresses() {
        let pid = std::process::id();
        let src: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
        let mut dst = vec![0u8; src.len()];
        read_from_process(pid, src.as_ptr() as usize, &mut dst).unwrap();
        assert_eq!(src, dst);
        let mut back = vec![0u8; src.len()];
        write_to_process(pid, back.as_mut_ptr() as usize, &src).unwrap();
        assert_eq!(src, std::hint::black_box(back));
        // an unmapped remote address, a bad pid: errors, nothing crashes
        assert!(read_from_process(pid, 8, &mut dst[..16]).is_err());
        assert!(read_from_process(0, 8, &mut dst[..16]).is_err());
        assert!(read_from_process(pid, usize::MAX - 4, &mut dst[..16]).is_err());
    }
}
