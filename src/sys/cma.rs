//! Cross Memory Attach: copies between this process and another one of the
//! same user (`process_vm_readv` / `process_vm_writev`), for the direct
//! path of large puts and gets over shared memory (`am/rma_direct.rs`);
//! through a buffer of ours when the kernel's own copy would be slow
//! (`bounced`).
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

/// Bytes a bounced copy moves at a time (`bounced`).
const BOUNCE: usize = 64 * 1024;

thread_local! {
    /// The bounce buffer of `bounced`: `BOUNCE` bytes and a page to place
    /// them anywhere modulo a page.
    static BOUNCE_BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
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
    let (dst, src) = if write {
        (remote, local)
    } else {
        (local, remote)
    };
    if super::copy::slow_distance(dst as *const u8, src as *const u8, len) {
        return bounced(pid, remote, local, len, write);
    }
    kernel_copy(pid, remote, local, len, write)
}

/// `copy` when the kernel's copy would be slow: the kernel copies with
/// `rep movsb` too (FSRM), as slow as glibc's on AMD's Zen cores when the
/// destination lies 1-63 bytes past a page from the source (64 KiB 2.2
/// GB/s against 9.8 on the Zen 3 host, `process_vm_writev` within one
/// process). So through a buffer of ours placed half a page from the
/// remote bytes: the kernel copies 2048 past, our copy (`copy_bytes`)
/// the rest of the distance, 2049-2111 past; both fast, the price one
/// copy in cache.
fn bounced(pid: u32, remote: usize, local: usize, len: usize, write: bool) -> io::Result<()> {
    BOUNCE_BUF.with_borrow_mut(|buf| {
        buf.resize(BOUNCE + 4096, 0);
        let mut done = 0;
        while done < len {
            let n = BOUNCE.min(len - done);
            let (r, l) = (remote + done, local + done);
            // the bounce bytes 2048 past a page from the remote ones
            // (reading: the remote ones 2048 past the bounce bytes)
            let base = buf.as_ptr() as usize;
            let want = if write {
                r.wrapping_sub(2048)
            } else {
                r.wrapping_add(2048)
            };
            let at = want.wrapping_sub(base) & 4095;
            let b = &mut buf[at..at + n];
            if write {
                // SAFETY: [l, l + n) lies in the slice the caller lent
                // (readable for the call), disjoint from our buffer.
                let from = unsafe { std::slice::from_raw_parts(l as *const u8, n) };
                super::copy::copy_bytes(b, from);
                kernel_copy(pid, r, b.as_ptr() as usize, n, true)?;
            } else {
                kernel_copy(pid, r, b.as_mut_ptr() as usize, n, false)?;
                // SAFETY: [l, l + n) lies in the slice the caller lent
                // mutably (nothing else touches it), disjoint from ours.
                let to = unsafe { std::slice::from_raw_parts_mut(l as *mut u8, n) };
                super::copy::copy_bytes(to, b);
            }
            done += n;
        }
        Ok(())
    })
}

/// The kernel's copy of `len` bytes between `local` and `remote` in `pid`
/// (as `copy` says), in as many calls as it takes.
fn kernel_copy(pid: u32, remote: usize, local: usize, len: usize, write: bool) -> io::Result<()> {
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

    #[test]
    fn copies_at_a_slow_distance_go_through_the_bounce_buffer_whole() {
        let pid = std::process::id();
        // one buffer: the source at a page, the destination `past` bytes
        // beyond a page after it (1-63: the kernel's copy would be slow)
        for len in [3000, BOUNCE, 200_000] {
            for past in [8, 16, 63] {
                let gap = len.next_multiple_of(4096) + past;
                let mut buf: Vec<u8> = (0..gap + len + 8192).map(|i| (i % 251) as u8).collect();
                let at = buf.as_ptr().align_offset(4096);
                let want = buf[at..at + len].to_vec();
                let (src, dst) = (buf.as_ptr() as usize + at, buf.as_ptr() as usize + at + gap);
                assert!(crate::sys::copy::slow_distance(
                    dst as *const u8,
                    src as *const u8,
                    len
                ));
                let (a, b) = buf.split_at_mut(at + gap);
                write_to_process(pid, b.as_mut_ptr() as usize, &a[at..at + len]).unwrap();
                assert_eq!(
                    &std::hint::black_box(&buf)[at + gap..at + gap + len],
                    &want[..]
                );
                // read back into a place 1-63 past the remote bytes
                buf[at + gap..at + gap + len].fill(0);
                let (a, b) = buf.split_at_mut(at + gap);
                read_from_process(pid, a[at..].as_ptr() as usize, &mut b[..len]).unwrap();
                assert_eq!(&buf[at + gap..at + gap + len], &want[..], "{len} {past}");
            }
        }
        // a bad remote address is refused the same way
        // (1 TiB on: unmapped, or past the user's half of the addresses)
        let mut dst = vec![0u8; 8192];
        let far = (dst.as_ptr() as usize).wrapping_add(1 << 40);
        assert!(write_to_process(pid, far + 16, &dst[..5000]).is_err());
        assert!(read_from_process(pid, far - 16, &mut dst[..5000]).is_err());
    }
}
