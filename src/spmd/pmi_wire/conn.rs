//! The connection to the process manager: an inherited socket (`PMI_FD`)
//! or a TCP connection (`PMI_PORT`), read without blocking, the caller's
//! `progress` between attempts.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

use super::format::{bad_reply, invalid};
use crate::spmd::bootstrap::Progress;

/// Longest message accepted from the server (guards against garbage).
const MAX_MESSAGE: usize = 1 << 20;

/// The stream to the process manager: an inherited socket (`PMI_FD`) or a
/// TCP connection (`PMI_PORT`).
pub(crate) enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    fn raw_fd(&self) -> RawFd {
        match self {
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Tcp(s) => s.as_raw_fd(),
        }
    }

    fn set_nonblocking(&self) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_nonblocking(true),
            Stream::Tcp(s) => s.set_nonblocking(true),
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }

    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }
}

/// Opens the connection the launcher's environment describes: `PMI_FD`
/// (an inherited stream socket) or `PMI_PORT=host:port`. Returns whether
/// the TCP form was used (Hydra then expects the `initack` handshake).
pub(crate) fn connect_env() -> io::Result<(Stream, bool)> {
    if let Ok(fd) = std::env::var("PMI_FD") {
        let n: RawFd = fd
            .trim()
            .parse()
            .map_err(|_| invalid(format!("PMI_FD={fd:?} is not a file descriptor number")))?;
        let owned: OwnedFd = crate::sys::adopt_inherited_socket(n)
            .map_err(|e| io::Error::new(e.kind(), format!("PMI_FD={n}: {e}")))?;
        return Ok((Stream::Unix(UnixStream::from(owned)), false));
    }
    if let Ok(port) = std::env::var("PMI_PORT") {
        let (host, p) = port
            .rsplit_once(':')
            .ok_or_else(|| invalid(format!("PMI_PORT={port:?} is not host:port")))?;
        let p: u16 = p
            .parse()
            .map_err(|_| invalid(format!("PMI_PORT={port:?}: bad port number")))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let s = TcpStream::connect((host, p))
            .map_err(|e| io::Error::new(e.kind(), format!("PMI_PORT={port}: connect: {e}")))?;
        let _ = s.set_nodelay(true);
        return Ok((Stream::Tcp(s), true));
    }
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        "neither PMI_FD nor PMI_PORT is set: not started by a PMI launcher",
    ))
}

/// An environment variable parsed as a number, `None` when unset.
pub(crate) fn env_num(name: &str) -> io::Result<Option<i64>> {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| invalid(format!("{name}={v:?} is not a number"))),
        Err(_) => Ok(None),
    }
}

/// A progress callback that only sleeps on the descriptor (up to 10 ms):
/// for start-up, before the caller has anything else to poll.
pub(crate) fn idle(fd: Option<RawFd>) {
    match fd {
        Some(fd) => {
            crate::sys::wait_readable(&[fd], 10);
        }
        None => crate::clock::Clock::Real.sleep(crate::time::MILLIS),
    }
}

/// The connection, with what has been read but not yet consumed.
pub(crate) struct Conn {
    stream: Stream,
    buf: Vec<u8>,
    fd: RawFd,
    closed: bool,
}

impl Conn {
    pub(crate) fn new(stream: Stream) -> io::Result<Conn> {
        stream.set_nonblocking()?;
        let fd = stream.raw_fd();
        Ok(Conn {
            stream,
            buf: Vec::new(),
            fd,
            closed: false,
        })
    }

    /// Sends all of `bytes`, calling `progress` whenever the socket is full.
    pub(crate) fn send(
        &mut self,
        what: &str,
        bytes: &[u8],
        progress: &mut Progress<'_>,
    ) -> io::Result<()> {
        let mut off = 0;
        while off < bytes.len() {
            match self.stream.write(&bytes[off..]) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::WriteZero,
                        format!("PMI {what}: the process manager closed the connection"),
                    ))
                }
                Ok(n) => off += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => progress(Some(self.fd)),
                Err(e) => return Err(io::Error::new(e.kind(), format!("PMI {what}: send: {e}"))),
            }
        }
        Ok(())
    }

    /// Sends without waiting at all (for abort, where nothing may hang):
    /// whatever does not fit in the socket buffer is dropped.
    pub(crate) fn send_now(&mut self, bytes: &[u8]) {
        let mut off = 0;
        let mut tries = 0;
        while off < bytes.len() && tries < 100 {
            match self.stream.write(&bytes[off..]) {
                Ok(0) => return,
                Ok(n) => off += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    tries += 1;
                    crate::clock::Clock::Real.sleep(crate::time::MILLIS);
                }
                Err(_) => return,
            }
        }
    }

    /// After an abort: waits (at most `ms`) for the launcher to close the
    /// connection, i.e. to act on it. Ending the process at once would close
    /// the socket under a launcher still writing to it (Hydra's proxy then
    /// dies of SIGPIPE and mpiexec returns 141 instead of the exit code).
    pub(crate) fn linger(&mut self, ms: u64) {
        let end = crate::clock::real_now().plus(ms * crate::time::MILLIS);
        while crate::clock::real_now() < end {
            match self.fill("abort") {
                Ok(_) => {}
                Err(_) => return,
            }
            if self.closed {
                return;
            }
            crate::sys::wait_readable(&[self.stream.raw_fd()], 10);
        }
    }

    /// One non-blocking read into the buffer: whether anything arrived.
    fn fill(&mut self, what: &str) -> io::Result<bool> {
        if self.closed {
            return Err(closed(what));
        }
        let mut tmp = [0u8; 4096];
        loop {
            match self.stream.read(&mut tmp) {
                Ok(0) => {
                    self.closed = true;
                    return Err(closed(what));
                }
                Ok(n) => {
                    self.buf.extend_from_slice(&tmp[..n]);
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!("PMI {what}: receive: {e}"),
                    ))
                }
            }
        }
    }

    /// Waits (never blocking: `progress` between attempts) until `have`
    /// finds a complete message in the buffer; returns it.
    fn recv_with(
        &mut self,
        what: &str,
        progress: &mut Progress<'_>,
        mut have: impl FnMut(&[u8]) -> io::Result<Option<(usize, usize)>>,
    ) -> io::Result<String> {
        loop {
            if let Some((start, end)) = have(&self.buf)? {
                let text = String::from_utf8_lossy(&self.buf[start..end]).into_owned();
                self.buf.drain(..end);
                return Ok(text);
            }
            if self.buf.len() > MAX_MESSAGE {
                return Err(invalid(format!(
                    "PMI {what}: reply longer than {MAX_MESSAGE} bytes"
                )));
            }
            if !self.fill(what)? {
                progress(Some(self.fd));
            }
        }
    }

    /// Receives one PMI-1 line (without its newline).
    pub(crate) fn recv_line(
        &mut self,
        what: &str,
        progress: &mut Progress<'_>,
    ) -> io::Result<String> {
        self.recv_with(what, progress, |b| {
            Ok(b.iter().position(|&c| c == b'\n').map(|i| (0, i + 1)))
        })
        .map(|mut s| {
            s.pop();
            if s.ends_with('\r') {
                s.pop();
            }
            s
        })
    }

    /// Receives one PMI-2 message (its body, without the length).
    pub(crate) fn recv_v2(
        &mut self,
        what: &str,
        progress: &mut Progress<'_>,
    ) -> io::Result<String> {
        let what2 = what.to_string();
        self.recv_with(what, progress, move |b| {
            if b.len() < 6 {
                return Ok(None);
            }
            let head = String::from_utf8_lossy(&b[..6]);
            let len: usize = head.trim().parse().map_err(|_| {
                bad_reply(
                    &what2,
                    &String::from_utf8_lossy(&b[..b.len().min(80)]),
                    "PMI-2 message does not start with a 6-character length",
                )
            })?;
            if len > MAX_MESSAGE {
                return Err(invalid(format!(
                    "PMI {what2}: PMI-2 message length {len} is too large"
                )));
            }
            Ok((b.len() >= 6 + len).then_some((6, 6 + len)))
        })
    }
}

fn closed(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!("PMI {what}: the process manager closed the connection"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loopback server over a socket pair: framing, partial reads and the
    /// progress callback.
    #[test]
    fn conn_reads_split_messages() {
        let (a, mut b) = UnixStream::pair().unwrap();
        let mut c = Conn::new(Stream::Unix(a)).unwrap();
        let mut calls = 0;
        let mut prog = |_fd: Option<RawFd>| {
            calls += 1;
            if calls == 2 {
                b.write_all(b"cmd=barr").unwrap();
            }
            if calls == 4 {
                b.write_all(b"ier_out\n    20cmd=x-response;rc=0;").unwrap();
            }
        };
        let l = c.recv_line("barrier", &mut prog).unwrap();
        assert_eq!(l, "cmd=barrier_out");
        let m = c.recv_v2("x", &mut prog).unwrap();
        assert_eq!(m, "cmd=x-response;rc=0;");
        assert!(calls >= 4);
        drop(b);
        let e = c.recv_line("get", &mut idle).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
    }

    /// Slurm writes the length left-aligned.
    #[test]
    fn v2_left_aligned_length() {
        let (a, mut b) = UnixStream::pair().unwrap();
        let mut c = Conn::new(Stream::Unix(a)).unwrap();
        b.write_all(b"20    cmd=x-response;rc=0;").unwrap();
        assert_eq!(c.recv_v2("x", &mut idle).unwrap(), "cmd=x-response;rc=0;");
        b.write_all(b"abcdefcmd").unwrap();
        let e = c.recv_v2("x", &mut idle).unwrap_err().to_string();
        assert!(e.contains("6-character length"), "{e}");
    }
}
