//! What the PMI-1 and PMI-2 clients share: the connection to the process
//! manager (read without blocking, the caller's `progress` between attempts),
//! the two message formats, and the all-gather over a key-value space.
//!
//! Wire formats (as MPICH's `src/pmi/src/pmi_wire.c`, Hydra's proxy and
//! Slurm's `mpi/pmi2` plugin read and write them):
//!
//! * PMI-1: one line per message, `cmd=NAME key=value key=value\n`; tokens
//!   are separated by spaces, a value runs to the next space or newline.
//!   MPICH 4.1 and later escape a space or backslash inside a value with a
//!   backslash; Hydra 4.0 does not. Every value this client sends is made of
//!   characters that need no escaping (hex, decimal numbers, the kvs name).
//! * PMI-2: a 6-character decimal length (MPICH writes `%6u`, right
//!   aligned; Slurm writes `%-6d`, left aligned; both are read here), then
//!   that many bytes of `cmd=NAME;key=value;key=value;`. There is no escape
//!   for `;` that all servers accept, so values never contain one.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

use super::bootstrap::Progress;

/// Longest message accepted from the server (guards against garbage).
const MAX_MESSAGE: usize = 1 << 20;

/// Longest hex chunk stored under one key. Hydra 4.0 announces
/// `vallen_max=1024`, MPICH's own client keeps a put line under 1024
/// characters; 512 stays well inside both.
pub(crate) const MAX_CHUNK_HEX: usize = 512;

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

pub(crate) fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// The error for a reply that is not what `command` expects.
pub(crate) fn bad_reply(command: &str, reply: &str, why: &str) -> io::Error {
    invalid(format!(
        "PMI {command}: {why} (reply: {:?})",
        reply.trim_end()
    ))
}

/// A progress callback that only sleeps on the descriptor (up to 10 ms):
/// for start-up, before the caller has anything else to poll.
pub(crate) fn idle(fd: Option<RawFd>) {
    match fd {
        Some(fd) => {
            crate::sys::wait_readable(&[fd], 10);
        }
        None => std::thread::sleep(std::time::Duration::from_millis(1)),
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
                    std::thread::sleep(std::time::Duration::from_millis(1));
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
        let end = std::time::Instant::now() + std::time::Duration::from_millis(ms);
        while std::time::Instant::now() < end {
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

/// A parsed message: its command and its other key-value pairs, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Msg {
    pub cmd: String,
    pub pairs: Vec<(String, String)>,
    /// The text it was parsed from, for error messages.
    pub raw: String,
}

impl Msg {
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Checks that this is the reply `want` to `command`, and that its `rc`
    /// (when present) is 0.
    pub(crate) fn expect(&self, command: &str, want: &str) -> io::Result<()> {
        if self.cmd != want {
            return Err(bad_reply(
                command,
                &self.raw,
                &format!("expected cmd={want}, got cmd={}", self.cmd),
            ));
        }
        if let Some(rc) = self.get("rc") {
            if rc.trim() != "0" {
                let why = self
                    .get("errmsg")
                    .or_else(|| self.get("msg"))
                    .unwrap_or("no message");
                return Err(bad_reply(
                    command,
                    &self.raw,
                    &format!("the process manager returned rc={rc} ({why})"),
                ));
            }
        }
        Ok(())
    }

    /// A required value.
    pub(crate) fn need(&self, command: &str, key: &str) -> io::Result<&str> {
        self.get(key)
            .ok_or_else(|| bad_reply(command, &self.raw, &format!("no {key}= in the reply")))
    }

    /// A required integer value.
    pub(crate) fn need_num(&self, command: &str, key: &str) -> io::Result<i64> {
        let v = self.need(command, key)?;
        v.trim()
            .parse()
            .map_err(|_| bad_reply(command, &self.raw, &format!("{key}={v:?} is not a number")))
    }
}

/// Parses a PMI-1 line: `cmd=NAME key=value ...` (backslash escapes in
/// values undone, as MPICH 4.1 writes them).
pub(crate) fn parse_v1(command: &str, line: &str) -> io::Result<Msg> {
    let mut toks = Vec::new();
    let mut cur = String::new();
    let mut in_tok = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if in_tok {
                    toks.push(std::mem::take(&mut cur));
                    in_tok = false;
                }
            }
            '\\' => {
                in_tok = true;
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            c => {
                in_tok = true;
                cur.push(c);
            }
        }
    }
    if in_tok {
        toks.push(cur);
    }
    let mut it = toks.into_iter();
    let first = it
        .next()
        .ok_or_else(|| bad_reply(command, line, "empty reply"))?;
    let cmd = first
        .strip_prefix("cmd=")
        .filter(|c| !c.is_empty())
        .ok_or_else(|| bad_reply(command, line, "reply does not start with cmd="))?
        .to_string();
    let pairs = it
        .map(|t| match t.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => (t, String::new()),
        })
        .collect();
    Ok(Msg {
        cmd,
        pairs,
        raw: line.to_string(),
    })
}

/// Parses a PMI-2 body: `cmd=NAME;key=value;...;`.
pub(crate) fn parse_v2(command: &str, body: &str) -> io::Result<Msg> {
    let mut parts = body.split(';').filter(|p| !p.is_empty());
    let first = parts
        .next()
        .ok_or_else(|| bad_reply(command, body, "empty reply"))?;
    let cmd = first
        .strip_prefix("cmd=")
        .filter(|c| !c.is_empty())
        .ok_or_else(|| bad_reply(command, body, "reply does not start with cmd="))?
        .to_string();
    let mut pairs = Vec::new();
    for p in parts {
        let (k, v) = p
            .split_once('=')
            .ok_or_else(|| bad_reply(command, body, &format!("token {p:?} has no '='")))?;
        pairs.push((k.to_string(), v.to_string()));
    }
    Ok(Msg {
        cmd,
        pairs,
        raw: body.to_string(),
    })
}

/// Whether a value can be sent as is in either format.
fn plain(v: &str) -> bool {
    !v.is_empty()
        && v.bytes()
            .all(|c| c.is_ascii_graphic() && !matches!(c, b'\\' | b';' | b'='))
}

/// Formats a PMI-1 command line.
pub(crate) fn format_v1(cmd: &str, pairs: &[(&str, &str)]) -> io::Result<String> {
    let mut s = format!("cmd={cmd}");
    for (k, v) in pairs {
        if !plain(v) {
            return Err(invalid(format!(
                "PMI {cmd}: value {v:?} for {k} cannot be sent in a PMI-1 message"
            )));
        }
        s.push(' ');
        s.push_str(k);
        s.push('=');
        s.push_str(v);
    }
    s.push('\n');
    Ok(s)
}

/// Formats a PMI-2 message, length included.
pub(crate) fn format_v2(cmd: &str, pairs: &[(&str, &str)]) -> io::Result<Vec<u8>> {
    let mut body = format!("cmd={cmd};");
    for (k, v) in pairs {
        if !plain(v) {
            return Err(invalid(format!(
                "PMI {cmd}: value {v:?} for {k} cannot be sent in a PMI-2 message"
            )));
        }
        body.push_str(k);
        body.push('=');
        body.push_str(v);
        body.push(';');
    }
    if body.len() > 999_999 {
        return Err(invalid(format!(
            "PMI {cmd}: message of {} bytes does not fit PMI-2's 6-digit length",
            body.len()
        )));
    }
    Ok(frame_v2(&body))
}

/// Prefixes a PMI-2 body with its length (`%6u`, as MPICH writes it).
pub(crate) fn frame_v2(body: &str) -> Vec<u8> {
    let mut out = format!("{:>6}", body.len()).into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

/// Free text made safe for a PMI-2 value: no `;`, `=`, or control chars.
pub(crate) fn text_v2(msg: &str) -> String {
    let t: String = msg
        .chars()
        .take(200)
        .map(|c| match c {
            ';' | '=' => ',',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect();
    if t.trim().is_empty() {
        "abort".to_string()
    } else {
        t
    }
}

pub(crate) fn hex(data: &[u8]) -> String {
    const D: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(data.len() * 2);
    for &b in data {
        s.push(D[(b >> 4) as usize] as char);
        s.push(D[(b & 15) as usize] as char);
    }
    s
}

pub(crate) fn unhex(s: &str) -> Option<Vec<u8>> {
    fn nib(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    }
    let b = s.as_bytes();
    if !b.len().is_multiple_of(2) {
        return None;
    }
    b.chunks(2)
        .map(|p| Some(nib(p[0])? << 4 | nib(p[1])?))
        .collect()
}

/// FNV-1a, 64 bits: the job id from the kvs name / job id string.
pub(crate) fn hash64(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The key-value operations an all-gather needs.
pub(crate) trait Kvs {
    fn put(&mut self, key: &str, val: &str, progress: &mut Progress<'_>) -> io::Result<()>;
    /// Makes every rank's puts visible to every rank (a barrier for PMI-1,
    /// a fence for PMI-2).
    fn exchange(&mut self, progress: &mut Progress<'_>) -> io::Result<()>;
    fn get(&mut self, key: &str, src: usize, progress: &mut Progress<'_>) -> io::Result<String>;
    /// Longest hex string stored under one key.
    fn chunk_hex(&self) -> usize;
}

/// The key of chunk `c` of `rank`'s contribution to all-gather `seq`.
pub(crate) fn ag_key(seq: u64, rank: usize, c: usize) -> String {
    if c == 0 {
        format!("ramp-ag-{seq}-{rank}")
    } else {
        format!("ramp-ag-{seq}-{rank}-{c}")
    }
}

/// All-gather over a key-value space: each rank puts its data hex-encoded
/// (in chunks), all exchange, then each gets every rank's data.
pub(crate) fn kvs_allgather(
    kvs: &mut dyn Kvs,
    seq: u64,
    rank: usize,
    size: usize,
    data: &[u8],
    progress: &mut Progress<'_>,
) -> io::Result<Vec<u8>> {
    let chunk = (kvs.chunk_hex().max(2)) & !1;
    let text = hex(data);
    let nchunks = text.len().div_ceil(chunk);
    for c in 0..nchunks {
        let piece = &text[c * chunk..((c + 1) * chunk).min(text.len())];
        kvs.put(&ag_key(seq, rank, c), piece, progress)?;
    }
    kvs.exchange(progress)?;
    let mut out = Vec::with_capacity(data.len() * size);
    for r in 0..size {
        if r == rank {
            out.extend_from_slice(data);
            continue;
        }
        let mut t = String::with_capacity(text.len());
        for c in 0..nchunks {
            t.push_str(kvs.get(&ag_key(seq, r, c), r, progress)?.trim());
        }
        let bytes = unhex(&t).ok_or_else(|| {
            let head: String = t.chars().take(80).collect();
            invalid(format!(
                "PMI all-gather {seq}: rank {r}'s value is not hex: {head:?}"
            ))
        })?;
        if bytes.len() != data.len() {
            return Err(invalid(format!(
                "PMI all-gather {seq}: rank {r} contributed {} bytes, this rank {}",
                bytes.len(),
                data.len()
            )));
        }
        out.extend_from_slice(&bytes);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_parse() {
        let m = parse_v1("get", "cmd=get_result rc=0 msg=success value=00ff").unwrap();
        assert_eq!(m.cmd, "get_result");
        assert_eq!(m.get("value"), Some("00ff"));
        m.expect("get", "get_result").unwrap();
        let m = parse_v1("x", "cmd=abc  k=a\\ b flag").unwrap();
        assert_eq!(m.get("k"), Some("a b"));
        assert_eq!(m.get("flag"), Some(""));
        assert!(parse_v1("x", "").is_err());
        assert!(parse_v1("x", "foo=bar").is_err());
        assert!(parse_v1("x", "cmd= a=b").is_err());
        let m = parse_v1(
            "get",
            "cmd=get_result rc=-1 msg=key_k_not_found value=unknown",
        )
        .unwrap();
        let e = m.expect("get", "get_result").unwrap_err().to_string();
        assert!(e.contains("rc=-1") && e.contains("key_k_not_found"), "{e}");
        let e = m.expect("get", "barrier_out").unwrap_err().to_string();
        assert!(e.contains("expected cmd=barrier_out"), "{e}");
    }

    #[test]
    fn v2_parse_and_format() {
        let m = parse_v2("kvs-get", "cmd=kvs-get-response;found=TRUE;value=ab;rc=0;").unwrap();
        assert_eq!(m.cmd, "kvs-get-response");
        assert_eq!(m.get("found"), Some("TRUE"));
        assert!(parse_v2("x", "cmd=a;novalue;").is_err());
        assert!(parse_v2("x", ";;").is_err());
        let f = format_v2("kvs-put", &[("key", "k"), ("value", "00")]).unwrap();
        assert_eq!(f, b"    27cmd=kvs-put;key=k;value=00;");
        assert!(format_v2("kvs-put", &[("key", "a;b")]).is_err());
        assert!(format_v1("put", &[("value", "a b")]).is_err());
        assert_eq!(format_v1("get_maxes", &[]).unwrap(), "cmd=get_maxes\n");
    }

    #[test]
    fn hex_roundtrip() {
        let d: Vec<u8> = (0..=255).collect();
        assert_eq!(unhex(&hex(&d)).unwrap(), d);
        assert!(unhex("abc").is_none());
        assert!(unhex("zz").is_none());
    }

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
