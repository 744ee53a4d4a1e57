//! What UDP asks of the kernel beyond one datagram per call, and what it
//! does when refused.
//!
//! - Path sizes. The endpoint's socket never lets IP fragment (path MTU
//!   discovery `DO`): on a link of MTU 1500 a 64 KiB datagram travelled as
//!   45 fragments, and a queue that dropped any one of them lost it whole
//!   (incast over a shaped link: 3,563 reassembly failures in 5 s, 0.45 of
//!   the link's rate). A datagram larger than its route carries is refused
//!   with `EMSGSIZE`: the route's MTU is asked (`sys::path_datagram`), told
//!   to the protocol as the path's size (`path_news`, then
//!   `Protocol::path_datagram` cuts what it has not sent yet to it), and
//!   the datagram itself goes once with fragmentation allowed: never
//!   dropped, never an error. Loopback's MTU (65,536) keeps 64 KiB.
//! - Broken paths. A send refused for its path (`sys::is_path_error`:
//!   no route, the interface down, a firewall) is news of the path
//!   (`PathNews::Down`, the protocol's `path_down`): the datagram counts
//!   as lost, the batch's others still go, the endpoint goes on (with
//!   rails, another path may carry it).
//! - GSO. Consecutive datagrams of one size to one peer (the fragments of
//!   a long message) go as one train (`UDP_SEGMENT`): one `sendmsg` and
//!   one trip down the stack for up to 64 of them; the kernel (or the
//!   NIC) cuts it. A train the kernel refuses (`EINVAL`, `EOPNOTSUPP`,
//!   `EIO`: no checksum offload, an old kernel, a segment over the MTU)
//!   is sent datagram by datagram; unless its segments were over the
//!   route's MTU (a path that shrank: its size is told), GSO is off for
//!   the socket from then on, said once under `RAMP_VERBOSE`.
//! - GRO. The socket asks for coalesced receives (`UDP_GRO`) at its
//!   first burst of large datagrams (`Offload::start_gro`); a receive
//!   then holds several datagrams back to back and their size
//!   (`segments` splits them; each goes to the protocol on its own and is
//!   checked on its own: CRC or MAC, sequence). A kernel without it
//!   simply never coalesces. Its price: every receive, an empty one too,
//!   is a `recvmsg` (the size comes only in its control message), ~50 ns
//!   more than `recvfrom`. Measured 2026-12-03 (load 2-3.5, GRO refused
//!   by an LD_PRELOAD shim, alternated): Xfer 64 KiB over unshaped veth
//!   (`scripts/veth-bench.sh`, 6 rounds) 521 -> 188 MiB/s without it;
//!   a loopback round trip 0.97x (same-round ratio, 6 rounds).
//!
//! Measured (2026-12-02, 2 cores at load 8-10, old = main dc0b92d):
//! `scripts/link-bench.sh --secs 5 --runs 3 --watchdog 20 --cases incast`:
//! incast goodput/rate 0.368 (2 of 3 runs collapsed, 3,725 reassembly
//! failures) -> 0.901 (3 of 3, none), Jain 0.993 -> 1.000, retransmitted
//! 4.1% -> 0.03%. One sender at 100/200/400 Mbit/s (`--runs 1`): 0.979/
//! 0.976/0.955 -> 0.906/0.903/0.900: the link is full (tc backlog 3-7 ms),
//! the loss is headers: 72 bytes of ramp's and 42 of Ethernet, IP and UDP
//! per 1,472-byte datagram, against 45 x 34 per 64 KiB one. Unshaped veth
//! (`scripts/veth-bench.sh --rounds 5 --iters 2000 --runs 3 --xfer-mib 32`):
//! 0-arg round trip 1.04x, request rate 0.94x, Xfer 64 KiB 0.41x (47 ->
//! 19 MiB/s): GSO and GRO take the syscalls away (the receiver's
//! InDatagrams: about one per 9 datagrams); the likely cause (not proven:
//! no profile yet) is that a channel's window of 64
//! packets (the SACK bitmap's width) holds 90 KB of 1,472-byte packets
//! against 4 MiB of 64 KiB ones, and on a loaded host a round trip waits
//! for the peer to be scheduled.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};

use super::{Outgoing, PathNews};
use crate::path::Path;
use crate::sys::Refused;

/// Most news of paths held for the AM layer to take (`path_news`): it
/// takes them at every pump; beyond it (a burst of refusals to many
/// peers) the oldest is dropped and told again by the next refusal.
const NEWS_MAX: usize = 64;

/// Paths whose failed sends `RAMP_VERBOSE` counts (`DownLog`); beyond it the
/// oldest is forgotten (and told again from 1).
const DOWN_LOG_MAX: usize = 16;

/// `RAMP_VERBOSE`'s count of failed sends per remote address: a line at the
/// 1st, 10th, 100th ... failure, not one per send (a down link's probes
/// fail every `RAMP_PATH_PROBE_MS`; the protocol tells the path's failure and
/// recovery itself).
#[derive(Default)]
pub(crate) struct DownLog(Vec<(SocketAddr, u64)>);

impl DownLog {
    /// Counts a failed send to `to`; the count when it is one to tell.
    pub fn count(&mut self, to: SocketAddr) -> Option<u64> {
        let n = match self.0.iter_mut().find(|(a, _)| *a == to) {
            Some((_, n)) => {
                *n += 1;
                *n
            }
            None => {
                if self.0.len() >= DOWN_LOG_MAX {
                    self.0.remove(0);
                }
                self.0.push((to, 1));
                1
            }
        };
        let mut p = 1;
        while p < n {
            p = p.saturating_mul(10);
        }
        (p == n).then_some(n)
    }
}

/// GSO and GRO on one socket, the paths' sizes learnt, what was refused.
pub(crate) struct Offload {
    /// GSO trains are sent (off after the kernel refused one).
    pub gso: bool,
    /// Receives may hold coalesced datagrams (UDP_GRO is on).
    pub gro: bool,
    /// GRO not asked for yet: it is at the socket's first burst of large
    /// datagrams (`start_gro`).
    pub gro_later: bool,
    pub verbose: bool,
    /// Failed sends per address, for `verbose`'s lines.
    down_log: DownLog,
    /// News of paths not yet taken (sizes, failures), one per path and
    /// kind: bounded by `NEWS_MAX`, whatever the network does.
    pub news: Vec<PathNews>,
    /// Messages of the last batch the kernel refused.
    pub refused: Vec<Refused>,
    /// A datagram's pieces copied together (a refused one sent again).
    joined: Vec<u8>,
}

impl Offload {
    /// Whether the kernel offers GSO on `fd` (a segment size of 0 set on
    /// the socket: accepted where GSO exists); GRO is asked for later.
    pub fn new(fd: RawFd) -> Offload {
        let gso = crate::sys::probe_gso(fd);
        Offload {
            gso,
            gro: false,
            gro_later: true,
            verbose: false,
            down_log: DownLog::default(),
            news: Vec::new(),
            refused: Vec::new(),
            joined: Vec::new(),
        }
    }

    /// Asks the kernel for GRO on `fd`, once, for good (the socket's first
    /// burst of large datagrams, `UdpTransport::recv_batch`). With GRO on
    /// every receive is a `recvmsg` (its size comes only in a control
    /// message), ~50 ns more than `recvfrom` each, found or not: a short
    /// round trip 1.13x the build before congestion control (bb4a521) with
    /// it on from bind, 1.05x with it refused
    /// (`ramp bench --runs 3`, 3 rounds): so a ping-pong never asks. Safe
    /// at any moment, unlike turning it off: a train that came before was
    /// split by the kernel on arrival (`udp_unexpected_gso`), and one after
    /// is read with its size.
    pub fn start_gro(&mut self, fd: RawFd) {
        if self.gro_later {
            self.gro_later = false;
            self.gro = crate::sys::enable_gro(fd).is_ok();
        }
    }

    /// `dgram` to `to` was refused as larger than its route carries: the
    /// path's size is noted for the protocol, and the datagram goes once
    /// with IP fragmentation allowed.
    pub fn too_big(&mut self, sock: &UdpSocket, to: SocketAddr, dgram: &[u8]) -> io::Result<()> {
        let size = crate::sys::path_datagram(to).unwrap_or(MIN_PATH);
        self.note(to, size);
        let v6 = to.is_ipv6();
        crate::sys::set_fragmenting(sock.as_raw_fd(), v6, true)?;
        let r = sock.send_to(dgram, to);
        crate::sys::set_fragmenting(sock.as_raw_fd(), v6, false)?;
        match r {
            Ok(_) => Ok(()),
            // lost like any other: the protocol resends it
            Err(e) if e.kind() != io::ErrorKind::Interrupted => {
                if self.verbose {
                    eprintln!(
                        "ramp: a datagram of {} bytes to {to} not sent: {e}",
                        dgram.len()
                    );
                }
                Ok(())
            }
            Err(_) => Ok(()),
        }
    }

    /// Notes that `to` carries datagrams of at most `size` bytes.
    fn note(&mut self, to: SocketAddr, size: usize) {
        let path = Path::from_name(to);
        for n in &mut self.news {
            if let PathNews::Datagram { path: p, size: s } = n {
                if *p == path {
                    *s = (*s).min(size);
                    return;
                }
            }
        }
        self.push(PathNews::Datagram { path, size });
    }

    /// Notes that a send to `to` failed with `errno`, a path error
    /// (`sys::is_path_error`); the datagram is lost.
    pub fn note_down(&mut self, to: SocketAddr, errno: i32) {
        let path = Path::from_name(to);
        let known = |n: &PathNews| matches!(n, PathNews::Down { path: p, .. } if *p == path);
        if !self.news.iter().any(known) {
            self.push(PathNews::Down { path, errno });
        }
        if self.verbose {
            if let Some(n) = self.down_log.count(to) {
                let e = io::Error::from_raw_os_error(errno);
                eprintln!("ramp: a send to {to} failed ({e}; {n} so far): the path is down");
            }
        }
    }

    fn push(&mut self, n: PathNews) {
        if self.news.len() >= NEWS_MAX {
            self.news.remove(0);
        }
        self.news.push(n);
    }

    /// Sends again, one by one, the datagrams of `dgrams` in the messages
    /// the kernel refused (`refused`): a train refused, or a datagram over
    /// its route's MTU.
    pub fn resend_refused(&mut self, sock: &UdpSocket, dgrams: &[Outgoing<'_>]) -> io::Result<()> {
        let refused = std::mem::take(&mut self.refused);
        for r in &refused {
            let (first, count) = (r.first, r.count);
            // (EINVAL of a train is the kernel's refusal of GSO)
            if crate::sys::is_path_error(r.errno) && (count == 1 || r.errno != libc::EINVAL) {
                // (not sent again: the path is broken; the protocol hears)
                self.note_down(dgrams[first].0.remote, r.errno);
                continue;
            }
            if count > 1 {
                self.train_refused(dgrams[first].0.remote, r.errno, dgrams[first].1);
            }
            for (path, parts) in &dgrams[first..first + count] {
                let mut joined = std::mem::take(&mut self.joined);
                joined.clear();
                for p in parts {
                    crate::sys::extend_bytes(&mut joined, p);
                }
                let to = path.remote;
                let r = match sock.send_to(&joined, to) {
                    Err(e) if e.raw_os_error() == Some(libc::EMSGSIZE) => {
                        self.too_big(sock, to, &joined)
                    }
                    Err(e) if e.raw_os_error().is_some_and(crate::sys::is_path_error) => {
                        self.note_down(to, e.raw_os_error().unwrap_or(0));
                        Ok(())
                    }
                    _ => Ok(()),
                };
                self.joined = joined;
                r?;
            }
        }
        self.refused = refused;
        self.refused.clear();
        Ok(())
    }

    /// A GSO train to `to` whose first datagram is `first` was refused
    /// with `errno`: its segments over the route's MTU (the path shrank:
    /// told), or the kernel does not do GSO here (off from now on).
    fn train_refused(&mut self, to: SocketAddr, errno: i32, first: crate::sys::Gathered<'_>) {
        let seg: usize = first.iter().map(|p| p.len()).sum();
        if let Ok(size) = crate::sys::path_datagram(to) {
            if seg > size {
                self.note(to, size);
                return;
            }
        }
        self.gso = false;
        if self.verbose {
            let e = io::Error::from_raw_os_error(errno);
            eprintln!("ramp: the kernel refused a UDP GSO send ({e}): datagrams go one by one");
        }
    }
}

/// The size told for a path whose route's MTU could not be read: IPv6's
/// least MTU (1280) less its headers.
const MIN_PATH: usize = 1232;

/// The datagrams a receive of `buf` holds: with UDP GRO's segment size
/// `gro`, back to back, each `gro` bytes but the last (which may be
/// shorter); else `buf` alone. Whatever the size says (0, larger than the
/// buffer), every byte is in exactly one datagram and none is read past
/// the buffer; each is checked by the protocol on its own.
pub fn segments(buf: &[u8], gro: Option<usize>) -> impl Iterator<Item = &[u8]> {
    let size = match gro {
        Some(s) if s > 0 && s < buf.len() => s,
        _ => buf.len().max(1),
    };
    let whole = buf.is_empty().then_some(buf);
    buf.chunks(size).chain(whole)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_down_paths_failed_sends_are_told_at_1_10_100_not_each() {
        let mut log = super::DownLog::default();
        let a: std::net::SocketAddr = "10.0.0.1:9".parse().unwrap();
        let b: std::net::SocketAddr = "10.0.0.2:9".parse().unwrap();
        let told: Vec<u64> = (0..1000).filter_map(|_| log.count(a)).collect();
        assert_eq!(told, [1, 10, 100, 1000]);
        // another path is counted apart
        assert_eq!(log.count(b), Some(1));
        assert_eq!(log.count(b), None);
        // bounded: many addresses forget the oldest, whatever the network does
        for port in 0..100u16 {
            log.count(std::net::SocketAddr::new(a.ip(), port));
        }
        assert!(log.0.len() <= super::DOWN_LOG_MAX);
    }

    use super::*;

    fn split(buf: &[u8], gro: Option<usize>) -> Vec<Vec<u8>> {
        segments(buf, gro).map(<[u8]>::to_vec).collect()
    }

    #[test]
    fn a_coalesced_receive_is_cut_at_its_segment_size() {
        let buf: Vec<u8> = (0..10).collect();
        assert_eq!(
            split(&buf, Some(4)),
            [vec![0, 1, 2, 3], vec![4, 5, 6, 7], vec![8, 9]]
        );
        assert_eq!(
            split(&buf, Some(5)),
            [vec![0, 1, 2, 3, 4], vec![5, 6, 7, 8, 9]]
        );
        assert_eq!(split(&buf, None), std::slice::from_ref(&buf));
    }

    #[test]
    fn hostile_segment_sizes_give_whole_bytes_never_more() {
        let buf: Vec<u8> = (0..10).collect();
        // 0, as large as the buffer, larger, absurd: the buffer alone
        for gro in [Some(0), Some(10), Some(11), Some(usize::MAX)] {
            assert_eq!(split(&buf, gro), std::slice::from_ref(&buf), "{gro:?}");
        }
        // a truncated last segment is a short datagram of its own
        assert_eq!(
            split(&buf[..9], Some(3)),
            [vec![0, 1, 2], vec![3, 4, 5], vec![6, 7, 8]]
        );
        assert_eq!(
            split(&buf[..7], Some(3)),
            [vec![0, 1, 2], vec![3, 4, 5], vec![6]]
        );
        // size 1: every byte its own datagram; an empty receive: one empty
        assert_eq!(split(&buf[..3], Some(1)), [vec![0], vec![1], vec![2]]);
        assert_eq!(split(&[], Some(4)), [Vec::<u8>::new()]);
        assert_eq!(split(&[], None), [Vec::<u8>::new()]);
        // every byte in exactly one segment, in order, for many sizes
        let big: Vec<u8> = (0..=255).cycle().take(4000).collect();
        for s in 1..300 {
            let parts = split(&big, Some(s));
            assert_eq!(parts.concat(), big, "size {s}");
            assert!(parts.iter().all(|p| !p.is_empty() && p.len() <= s));
        }
    }
}
