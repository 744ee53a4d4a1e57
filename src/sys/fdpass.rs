//! Anonymous shared memory (memfd) and passing its descriptor to another
//! process over a Unix datagram socket (SCM_RIGHTS), with the sender's user
//! id as the kernel states it (SCM_CREDENTIALS).
//!
//! Nothing here has a name in a file system: the memory goes when the last
//! process that maps or holds it is gone, however it ended.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixDatagram;

/// An anonymous file of `len` zero bytes (sparse: pages cost memory once
/// touched), closed on exec, sealed against any change of size (so no
/// process it is passed to can make a mapping of it fault by shrinking it);
/// `name` shows in /proc/PID/maps and fd links.
pub(crate) fn memfd(name: &str, len: usize) -> io::Result<File> {
    let c = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `c` is a NUL-terminated string that outlives the call; the
    // flags are valid for memfd_create.
    let fd = unsafe { libc::memfd_create(c.as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a new descriptor that nothing else owns.
    let f = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    f.set_len(len as u64)?;
    let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;
    // SAFETY: fcntl on a descriptor we own, with an integer argument.
    if unsafe { libc::fcntl(f.as_raw_fd(), libc::F_ADD_SEALS, seals) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(f)
}

/// A memfd of `len` bytes without seals (what a hostile sender could pass).
#[cfg(test)]
pub(crate) fn memfd_unsealed(len: usize) -> OwnedFd {
    let c = CString::new("ramp-test-unsealed").unwrap();
    // SAFETY: as in `memfd`.
    let fd = unsafe { libc::memfd_create(c.as_ptr(), libc::MFD_CLOEXEC) };
    assert!(fd >= 0, "memfd_create: {}", io::Error::last_os_error());
    // SAFETY: `fd` is a new descriptor that nothing else owns.
    let f = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    f.set_len(len as u64).unwrap();
    f.into()
}

/// Whether `file` can never change its size (a memfd made by [`memfd`]):
/// only such a file received from another process is safe to map.
pub(crate) fn size_sealed(file: &File) -> bool {
    let need = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;
    // SAFETY: fcntl on a descriptor we own, no argument.
    let seals = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GET_SEALS) };
    seals >= 0 && seals & need == need
}

/// The sockaddr of an abstract Unix name, and its length.
fn abstract_addr(name: &[u8]) -> io::Result<(libc::sockaddr_un, libc::socklen_t)> {
    // SAFETY: sockaddr_un is plain old data; all zeroes is a valid value.
    let mut a: libc::sockaddr_un = unsafe { zeroed() };
    if name.len() + 1 > a.sun_path.len() {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    a.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (d, s) in a.sun_path[1..].iter_mut().zip(name) {
        *d = *s as libc::c_char;
    }
    let len = size_of::<libc::sa_family_t>() + 1 + name.len();
    Ok((a, len as libc::socklen_t))
}

/// Sends `payload` with descriptor `fd` attached to the socket bound at
/// the abstract name `to`, without blocking.
pub(crate) fn send_with_fd(
    sock: &UnixDatagram,
    to: &[u8],
    payload: &[u8],
    fd: RawFd,
) -> io::Result<()> {
    let (mut addr, addr_len) = abstract_addr(to)?;
    let mut iov = libc::iovec {
        iov_base: payload.as_ptr() as *mut libc::c_void,
        iov_len: payload.len(),
    };
    // u64s: aligned for cmsghdr
    let mut control = [0u64; 8];
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(size_of::<RawFd>() as u32) } as usize;
    debug_assert!(space <= size_of::<[u64; 8]>());
    // SAFETY: msghdr is plain old data; all zeroes is a valid value.
    let mut msg: libc::msghdr = unsafe { zeroed() };
    msg.msg_name = (&mut addr as *mut libc::sockaddr_un).cast();
    msg.msg_namelen = addr_len;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    // SAFETY: `msg` points at `control`, which has room for one header with
    // one descriptor (`space` bytes, checked above), so CMSG_FIRSTHDR is
    // non-null and CMSG_DATA lies inside `control`; the data pointer may be
    // unaligned for an int, hence write_unaligned.
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<RawFd>(), fd);
    }
    // SAFETY: every pointer in `msg` (name, iovec, payload, control) is
    // valid for the duration of the call and the kernel only reads them.
    let n = unsafe {
        libc::sendmsg(
            sock.as_raw_fd(),
            &msg,
            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// One datagram taken by [`recv_with_fd`].
pub(crate) struct FdMessage {
    /// Bytes of the payload in the caller's buffer.
    pub len: usize,
    /// The sender's abstract name; empty when it has none.
    pub from: Vec<u8>,
    /// The sender's user id as the kernel states it (the socket must have
    /// SO_PASSCRED set), None when absent.
    pub uid: Option<u32>,
    /// The first descriptor attached; any others are closed at once.
    pub fd: Option<OwnedFd>,
}

/// Takes one datagram without blocking (`WouldBlock` when there is none).
/// A datagram longer than `buf` is cut (its `len` is `buf.len()`).
pub(crate) fn recv_with_fd(sock: &UnixDatagram, buf: &mut [u8]) -> io::Result<FdMessage> {
    // SAFETY: sockaddr_un is plain old data; all zeroes is a valid value.
    let mut addr: libc::sockaddr_un = unsafe { zeroed() };
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // room for credentials and a few descriptors; u64s: aligned for cmsghdr
    let mut control = [0u64; 32];
    // SAFETY: msghdr is plain old data; all zeroes is a valid value.
    let mut msg: libc::msghdr = unsafe { zeroed() };
    msg.msg_name = (&mut addr as *mut libc::sockaddr_un).cast();
    msg.msg_namelen = size_of::<libc::sockaddr_un>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = size_of::<[u64; 32]>() as _;
    // SAFETY: every pointer in `msg` is valid and writable for the sizes
    // given; the kernel writes at most those.
    let n = unsafe {
        libc::recvmsg(
            sock.as_raw_fd(),
            &mut msg,
            libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut out = FdMessage {
        len: n as usize,
        from: Vec::new(),
        uid: None,
        fd: None,
    };
    let path_at = size_of::<libc::sa_family_t>();
    let name_len = (msg.msg_namelen as usize).min(size_of::<libc::sockaddr_un>());
    if name_len > path_at + 1 && addr.sun_path[0] == 0 {
        out.from = addr.sun_path[1..name_len - path_at]
            .iter()
            .map(|&c| c as u8)
            .collect();
    }
    // SAFETY: the kernel filled `control` with `msg_controllen` bytes of
    // well-formed headers; CMSG_FIRSTHDR/CMSG_NXTHDR stay inside them and
    // CMSG_DATA points at each header's data, read unaligned. Descriptors
    // received are new ones of this process, each owned exactly once here.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            let data = libc::CMSG_DATA(c);
            let bytes =
                ((*c).cmsg_len as usize).saturating_sub(data.offset_from(c.cast()) as usize);
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                for k in 0..bytes / size_of::<RawFd>() {
                    let fd = std::ptr::read_unaligned(data.cast::<RawFd>().add(k));
                    let owned = OwnedFd::from_raw_fd(fd);
                    if out.fd.is_none() {
                        out.fd = Some(owned);
                    } // else dropped: closed
                }
            } else if (*c).cmsg_level == libc::SOL_SOCKET
                && (*c).cmsg_type == libc::SCM_CREDENTIALS
                && bytes >= size_of::<libc::ucred>()
            {
                let cred = std::ptr::read_unaligned(data.cast::<libc::ucred>());
                out.uid = Some(cred.uid);
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok(out)
}

/// The effective user id of this process.
pub(crate) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}
