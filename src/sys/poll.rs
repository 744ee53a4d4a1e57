//! Sleeping until descriptors are readable (poll).

use std::os::fd::RawFd;

/// Sleeps until one of `fds` is readable or `timeout_ms` passes (-1: no
/// limit). Returns whether any descriptor is readable.
pub fn wait_readable(fds: &[RawFd], timeout_ms: i32) -> bool {
    poll_fds(fds, timeout_ms).iter().any(|&r| r)
}

/// Sleeps until one of `fds` is readable or `timeout_ns` nanoseconds pass
/// (`ppoll`: a deadline under a millisecond, a paced packet's, is kept,
/// not rounded up to one). Returns whether any descriptor is readable.
pub fn wait_readable_ns(fds: &[RawFd], timeout_ns: u64) -> bool {
    let mut pfds = for_reading(fds);
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000).min(i32::MAX as u64) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: `pfds` is a valid array of pollfd of the given length, `ts`
    // a valid timespec, and a null signal mask leaves the mask as it is.
    let r = unsafe {
        libc::ppoll(
            pfds.as_mut_ptr(),
            pfds.len() as libc::nfds_t,
            &ts,
            std::ptr::null(),
        )
    };
    r > 0 && pfds.iter().any(|p| p.revents != 0)
}

/// Sleeps until one of `fds` is readable (or hung up) or `timeout_ms`
/// passes; returns, for each descriptor, whether it needs attention.
pub fn poll_fds(fds: &[RawFd], timeout_ms: i32) -> Vec<bool> {
    let mut pfds = for_reading(fds);
    loop {
        // SAFETY: `pfds` is a valid array of pollfd of the given length.
        let r = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, timeout_ms) };
        if r >= 0 {
            return pfds.iter().map(|p| p.revents != 0).collect();
        }
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return vec![false; fds.len()];
        }
    }
}

/// A `pollfd` asking for input of each of `fds`.
fn for_reading(fds: &[RawFd]) -> Vec<libc::pollfd> {
    fds.iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect()
}
