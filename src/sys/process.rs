//! Process calls: signals, descriptors inherited from a launcher.

use std::os::fd::RawFd;

/// Sends `sig` to process `pid` (errors ignored: it may be gone already).
pub fn kill(pid: u32, sig: i32) {
    // SAFETY: kill has no memory effects; a stale pid is at worst an error.
    unsafe {
        libc::kill(pid as libc::pid_t, sig);
    }
}

/// Runs `f` when the process exits through `exit` (C's, or
/// `std::process::exit`, or a return from `main`), after earlier
/// registrations' turn (atexit order); once per process, later calls are
/// ignored. A panic in `f` is caught: exit goes on.
pub fn at_exit(f: fn()) -> bool {
    static HOOK: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();
    extern "C" fn run_hook() {
        if let Some(f) = HOOK.get() {
            let _ = std::panic::catch_unwind(f);
        }
    }
    if HOOK.set(f).is_err() {
        return false;
    }
    // SAFETY: atexit keeps a pointer to a function with static lifetime;
    // it takes no arguments and unwinds no panic (caught above).
    unsafe { libc::atexit(run_hook) == 0 }
}

/// Takes ownership of a stream socket inherited from the launcher (the
/// PMI-1/PMI-2 `PMI_FD`). Fails unless `fd` is an open socket, and for any
/// descriptor already adopted, so it can be owned only once. Marks it
/// close-on-exec so programs this process starts do not inherit it.
pub fn adopt_inherited_socket(fd: RawFd) -> std::io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    static ADOPTED: parking_lot::Mutex<Vec<RawFd>> = parking_lot::Mutex::new(Vec::new());
    if fd < 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "negative file descriptor",
        ));
    }
    let mut adopted = ADOPTED.lock();
    if adopted.contains(&fd) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "descriptor already adopted by this process",
        ));
    }
    // SAFETY: stat is plain old data; all-zero is a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat only writes into the stat buffer we own; an invalid
    // descriptor makes it fail with EBADF.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "descriptor is not a socket",
        ));
    }
    // SAFETY: fcntl on a descriptor just checked to be open; no memory.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFD);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
        }
    }
    adopted.push(fd);
    // SAFETY: `fd` is an open socket (checked above) that the launcher left
    // open across exec for this process; nothing in this process opened it,
    // so no other owner exists, and the `ADOPTED` list guarantees it is
    // turned into an OwnedFd at most once, so it is closed exactly once.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}
