//! Shared memory: a faster datagram pipe to endpoints on the same host.
//!
//! Each endpoint owns one anonymous shared memory file (a memfd, sealed
//! against any change of size; it has no name in /dev/shm or anywhere, so
//! nothing is left behind however the processes end): a header (magic,
//! owner pid, address, boot id, a sleep word, a bitmask of slots in use) and
//! `SLOTS` slots, each a single-producer single-consumer ring one sending
//! endpoint claims (with its pid). Each endpoint also binds an abstract Unix
//! datagram socket named after its UDP address (and the network and pid
//! namespaces: two may bind the same address, pids are compared); the name
//! goes with the process. A sender that wants to reach a peer (at its
//! first datagram, or earlier: every peer of an endpoint's table once it
//! is complete, `Transports::ask_rings`) sends HELLO
//! to the peer's socket; the peer answers with its file's descriptor
//! (SCM_RIGHTS) to the sender's socket, only to a process of its own user
//! (the kernel's SCM_CREDENTIALS), and the sender maps it only from the
//! socket of that address and only sealed. Until then, and whenever there
//! is no answer or free slot, or the owner is gone: UDP. The protocol above
//! keeps naming peers by `SocketAddr` and carries the same datagrams as over
//! UDP (sequence, ACKs, MAC, credits unchanged).
//!
//! Records are `[u32 word][pad to 8][bytes]`, each starting on a cache line
//! (`REC_ALIGN`); a record that does not fit before the end of the ring is
//! preceded by a wrap marker. The word is `READY | len`, or `WRAP`, or 0:
//! nothing yet. The receiver learns of a record by the word where its next
//! one starts (no shared tail to read: one cache line moves per short
//! datagram, as in a bare ping-pong); the receiver clears the word of every
//! line a record covered when it takes it (and the whole ring when it
//! frees a slot), so stale bytes of an earlier lap never look like a
//! record and the sender writes only its record's lines (of a long record,
//! the receiver clears the first line only, and the sender clears the word
//! after a record of its own where a long one left a line uncleared:
//! `tx_ring::Stale`). The receiver's head (a byte counter on a cache
//! line of its own) is published only every `HEAD_PUBLISH` bytes, and the
//! sender reads it only when its cached copy says the ring is full. A full
//! ring refuses the datagram, which then goes by UDP.
//!
//! Wake-ups: a receiver about to sleep (`fd()` is asked only then) sets the
//! sleep word, then looks at its rings for `SLEEP_GRACE`; a sender that
//! finds the word set after a push (no fence between: the grace covers
//! the record's late visibility) clears it and sends one byte to the
//! receiver's socket, which `AM_WaitSema` and the progress thread poll.
//! The socket is read before sleeping and every `WAKE_CHECK` while busy
//! (HELLOs answered, descriptors taken). Everything read from the mapping
//! or the socket is hostile input: another process of the same user writes
//! the one, anyone in the network namespace the other.
//!
//! Express records (`express.rs`, `am/express.rs`): a short AM request or
//! reply the layer above writes whole into an open ring (`express_send`:
//! never spilled to UDP; false when the ring is full or not open), read by
//! the receiver like any record and told apart by its first bytes. While
//! one may be unread (the published head below its end), a datagram that
//! finds the ring full is dropped for the protocol to resend, not sent by
//! UDP, where it could be handled before the record. The receiver also
//! publishes its head whenever it drains a ring, so a sender sees its
//! records read; one left unread with the head still for `stuck_after`
//! (the protocol's peer timeout: a receiver that stopped polling) drops the
//! ring, as a dead receiver does. A ring dropped (its receiver gone or
//! stuck, or our slot no longer open and ours) is reported once by
//! `take_dropped`: the express requests in it will never be answered.
//!
//! The rooms: this file (the layout, the transport and its `Transport`
//! core: datagrams in rings), `shm_caps.rs` (the `SharedMemory`
//! capability: a ring's identity and claim words, region messages, a
//! same-host datagram by UDP), `shm_lane.rs` (the `ExpressLane`
//! capability), `shm_ring.rs` (records: the transport's push, a
//! receiver's drain), `shm_tx_ring.rs` (a sender's ring: push, wake-up,
//! held express records), `shm_setup.rs` (the socket: HELLO, the
//! descriptor, a slot claimed), `shm_peers.rs` (liveness), `shm_proof.rs`
//! (the express lane's proof of a job under a job key).
//!
//! Failure: senders and receivers check each other's pid now and then
//! (`flush_due`); a dead receiver's ring is dropped (its messages fail by
//! the protocol's peer timeout, as over UDP), a dead sender's slot freed;
//! the memory goes with the last process that maps it. Files that versions
//! before the memfd left in /dev/shm when killed are removed by the first
//! endpoint of a process and by `ramp-run` when a job ends
//! ([`remove_stale_files`]).

use std::cell::{Cell, RefCell};
use std::fs::File;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixDatagram;
use std::sync::atomic::{fence, Ordering::*};

use once_cell::sync::Lazy;

use super::{
    DatagramSink, ExpressLane, ExpressProver, ProvenSink, RegionMsg, SharedMemory, Transport,
    RECV_BATCH, RECV_SLOT,
};
use crate::clock::Clock;
use crate::fxhash::FxHashMap;
use crate::sys::{euid, memfd, pid_alive, recv_with_fd, send_with_fd, size_sealed, SharedMap};
use crate::time::{Instant, MILLIS};

#[path = "shm_caps.rs"]
mod caps;
#[path = "shm_lane.rs"]
mod lane;
#[path = "shm_peers.rs"]
mod peers;
#[path = "shm_proof.rs"]
mod proof;
#[path = "shm_ring.rs"]
mod ring;
#[path = "shm_setup.rs"]
mod setup;
#[path = "shm_tx_ring.rs"]
mod tx_ring;

use peers::owner_alive;
pub use peers::remove_stale_files;
use ring::RxSlot;
use setup::{stem, wake_addr, HOST};
use tx_ring::TxRing;

const DIR: &str = "/dev/shm";
const PREFIX: &str = "ramp-shm.";
const MAGIC: u64 = u64::from_le_bytes(*b"RAMPSHM1");
/// Sending endpoints one receiver serves through shared memory.
pub const SLOTS: usize = 32; // one bit each of a u32 (see `recv_batch`)
const _: () = assert!(SLOTS == 32);
/// Bytes of one ring (a power of two): room for eight of the largest
/// datagram, and small enough that a pair's two rings stay in the cores'
/// L2 caches (2 MiB each here) as records go round them (with 1 MiB rings
/// the next record's line came from L3 or memory: a ping-pong touched
/// 2 MiB a lap; alternated with them, 256 KiB rings had short round trips
/// ~2% shorter). With 256 KiB a sender kept to what the ring holds
/// (`RING_FLIGHT`) had two 64 KiB datagrams in flight and streamed at half
/// the rate it had when it overfilled the ring and resent what it refused;
/// with 512 KiB five, as fast, without resends (testbulk 4000 x 65000).
pub const RING: usize = 1 << 19;
const HDR: usize = 4096;
const SLOT_HDR: usize = 4096;
const SLOT_SIZE: usize = SLOT_HDR + RING;
const FILE_LEN: usize = HDR + SLOTS * SLOT_SIZE;
/// The records' format (2: a long record's lines but the first are not
/// cleared by the receiver, `tx_ring::CLEAR_ALL_MAX`): a sender of another
/// format does not use the ring (`H_LAYOUT` differs: UDP instead).
const RECORDS: u64 = 2;
const LAYOUT: u64 = (RECORDS << 48) | ((SLOTS as u64) << 32) | RING as u64;

// header offsets
const H_MAGIC: usize = 0;
const H_PID: usize = 8;
const H_CLOSED: usize = 12;
const H_LAYOUT: usize = 16;
const H_ADDR: usize = 64;
const H_BOOT: usize = 128;
const H_SLEEP: usize = 256;
/// How long a receiver about to sleep looks at its rings after it set its
/// sleep word (`fd`): far longer than a store buffer takes to drain (well
/// under a microsecond), so a record whose sender looked at the word
/// before it was set is seen.
const SLEEP_GRACE: crate::time::Nanos = 20 * crate::time::MICROS;
const H_ACTIVE: usize = 384;
const TEXT: usize = 64;
// slot header offsets
const S_OWNER: usize = 0;
const S_STATE: usize = 4;
/// The sender's secret (random, never 0): a direct copy of a large put or
/// get names it, proving its author can read this file (`am/rma_direct.rs`).
const S_SECRET: usize = 8;
const S_FROM: usize = 64;
const S_HEAD: usize = 256;
/// `CLAIMS` words by which a direct Xfer's sender and its target agree,
/// by compare-and-swap, on which of them decided its fate (`claim_to`,
/// `claim_from`; `am/xfer_direct.rs`).
const S_CLAIMS: usize = 512;
pub const CLAIMS: usize = 8;
const _: () = assert!(S_CLAIMS + 8 * CLAIMS <= SLOT_HDR);
const FREE: u32 = 0;
const OPEN: u32 = 1;
const CLOSING: u32 = 2;
/// A record's word: the rest of the ring is skipped, the next record is at 0.
const WRAP: u32 = u32::MAX;
/// A record's word: a datagram of `word & !READY` bytes follows.
const READY: u32 = 1 << 31;
/// Records start on a cache line of their own (a short datagram and its
/// word arrive together).
const REC_ALIGN: usize = 64;
/// The receiver publishes its head after taking this many bytes (the sender
/// sees the ring at most this much fuller than it is: far from refusing the
/// largest record, `RECV_SLOT`, twice over, as a wrap may need).
const HEAD_PUBLISH: u64 = (RING / 8) as u64;
const _: () = assert!(HEAD_PUBLISH as usize + 2 * (RECV_SLOT + 2 * REC_ALIGN) < RING);
/// Bytes of DATA a sender keeps in flight at most toward a peer it reaches
/// by a proven ring (`ProtoConfig::same_host_flight`; the AM layer sets
/// it): what the ring surely holds, from its geometry. The ring, less the
/// head's publishing lag (the sender sees it up to `HEAD_PUBLISH` fuller),
/// a wrap (less than one largest record wasted), the zeroed word after the
/// last record, and one largest record more, as the window lets a packet
/// go while any room is left. A ring refuses what does not fit, and a
/// refused datagram sealed for the ring is lost (`Transports::send_batch`):
/// with the congestion window alone (far above this) the 256 KiB ring
/// overfilled: ~450 of testbulk's 8,000 requests of 65,000 bytes and ~700
/// of its replies resent (4000 x 65000, both ways); with this, ~10 each.
pub const RING_FLIGHT: usize =
    RING - HEAD_PUBLISH as usize - 2 * record_bytes(RECV_SLOT) - REC_ALIGN;
const _: () = assert!(RING_FLIGHT >= RECV_SLOT);

/// Ring bytes of a record of a datagram of `len` bytes (`TxRing::push`).
const fn record_bytes(len: usize) -> usize {
    (8 + len).next_multiple_of(REC_ALIGN)
}

/// How often each side checks that the other is alive.
const CHECK_EVERY: u64 = 100 * MILLIS;
/// How long a peer without a ring is reached by UDP before looking again.
const RETRY_AFTER: u64 = 200 * MILLIS;
/// How often a busy endpoint reads its socket (HELLOs, descriptors).
const WAKE_CHECK: u64 = MILLIS;
/// How often it reads it at most while a path is being set up: a peer of
/// this host sends by UDP (it may have asked us), or we asked a peer.
const SETUP_CHECK: u64 = 20 * crate::time::MICROS;
/// Socket messages besides the one-byte wake-up: a request for the file,
/// and the answer that carries its descriptor.
const HELLO: &[u8; 8] = b"RAMPHI1\0";
const GIVE: &[u8; 8] = b"RAMPFD1\0";
/// A region message (`region_send`): the tag, the sender's UDP address as
/// text (one length byte first), opaque bytes; perhaps a descriptor.
const REGION: &[u8; 8] = b"RAMPRG1\0";
/// Region messages kept until taken (more are dropped, descriptors closed).
const REGION_QUEUE: usize = 64;
/// Bytes of one socket message read at most.
const SOCK_MSG: usize = 256;
/// Socket messages read at most per look (a flood waits for the next).
const WAKE_BUDGET: usize = 64;
/// The same for a look while a path is set up (at most every `SETUP_CHECK`).
const SETUP_BUDGET: usize = 4;

fn put_text(m: &SharedMap, off: usize, s: &str) {
    let mut b = [0u8; TEXT];
    let n = s.len().min(TEXT);
    b[..n].copy_from_slice(&s.as_bytes()[..n]);
    m.write(off, &b);
}

fn get_text(m: &SharedMap, off: usize) -> String {
    let mut b = [0u8; TEXT];
    m.read(off, &mut b);
    let n = b.iter().position(|&c| c == 0).unwrap_or(TEXT);
    String::from_utf8_lossy(&b[..n]).into_owned()
}

fn slot_off(i: usize) -> usize {
    HDR + i * SLOT_SIZE
}

enum Route {
    Ring(usize),
    /// HELLO sent, no descriptor yet: UDP meanwhile, ask again at `retry_at`
    Asked {
        retry_at: Instant,
    },
    Udp {
        retry_at: Instant,
    },
}

#[derive(Default)]
struct Tx {
    routes: FxHashMap<SocketAddr, Route>,
    rings: Vec<Option<TxRing>>,
    /// Peers whose ring was dropped, for `take_dropped` (at most one entry
    /// per ring ever opened between two polls).
    dropped: Vec<SocketAddr>,
    /// The peer and ring of the last express record (`express_send`): no
    /// hash look-up for a stream to one peer. Forgotten whenever a route
    /// changes (`adopt`, `check_peers`).
    express_last: Option<(SocketAddr, usize)>,
    /// The ring holding express records back (`TxRing::hold`), if any: one
    /// at most (another's record releases them).
    held_in: Option<usize>,
}

pub struct ShmTransport {
    local: SocketAddr,
    /// the memfd behind `map`, handed to senders that ask
    file: File,
    map: SharedMap,
    wake: UnixDatagram,
    slots: [RxSlot; SLOTS],
    /// The last `RxSlot::epoch` given (each sender a slot takes: a new one).
    slot_epoch: u64,
    /// The slot the next receive starts at (fairness between senders).
    next: usize,
    buf: Vec<u8>,
    tx: RefCell<Tx>,
    next_check: Cell<Instant>,
    next_wake_check: Cell<Instant>,
    next_setup_check: Cell<Instant>,
    /// The gap to the next such look: `SETUP_CHECK`, doubled (up to
    /// `WAKE_CHECK`) by every look that found nothing, so a same-host peer
    /// that stays on UDP (no free slot) does not cost a system call each
    /// `SETUP_CHECK`.
    setup_gap: Cell<u64>,
    pid: u32,
    /// Region messages read, waiting for `region_take`.
    regions: RefCell<Vec<RegionMsg>>,
    /// Region messages refused on arrival (malformed, not from the
    /// endpoint they name, or past `REGION_QUEUE`), since `region_take`.
    regions_dropped: Cell<u64>,
    /// How long a ring's receiver may leave an express record unread
    /// before the ring is dropped (the protocol's peer timeout: what it
    /// allows a peer that does not answer).
    pub(super) stuck_after: crate::time::Nanos,
    /// The job key's keyed hash (`shm_proof.rs`); None: no job key.
    prover: Option<ExpressProver>,
    /// Express records dropped for want of their sender's proof, for
    /// `take_express_refused`.
    express_refused: u64,
    /// The endpoint's clock.
    clock: Clock,
}

impl ShmTransport {
    /// Creates the receiving file and the socket of the endpoint whose UDP
    /// address is `local` (`AddrInUse`: a live endpoint of this host has it).
    #[cfg(test)]
    pub fn open(local: SocketAddr) -> io::Result<ShmTransport> {
        ShmTransport::open_with(local, Clock::Real)
    }

    /// `open`, keeping time by `clock` (the endpoint's).
    pub fn open_with(local: SocketAddr, clock: Clock) -> io::Result<ShmTransport> {
        static CLEANED: std::sync::Once = std::sync::Once::new();
        CLEANED.call_once(|| {
            remove_stale_files();
        });
        let wake = UnixDatagram::bind_addr(&wake_addr(local)?)?;
        wake.set_nonblocking(true)?;
        socket2::SockRef::from(&wake).set_passcred(true)?;
        let file = memfd(&stem(local), FILE_LEN)?;
        let map = SharedMap::of_file(&file, FILE_LEN)?;
        let pid = std::process::id();
        put_text(&map, H_ADDR, &local.to_string());
        put_text(&map, H_BOOT, &HOST.0);
        map.u32_at(H_PID).store(pid, Relaxed);
        map.u64_at(H_LAYOUT).store(LAYOUT, Relaxed);
        map.u64_at(H_MAGIC).store(MAGIC, Release);
        let now = clock.now();
        Ok(ShmTransport {
            clock,
            local,
            file,
            map,
            wake,
            slots: [RxSlot::default(); SLOTS],
            slot_epoch: 0,
            next: 0,
            buf: vec![0; RECV_SLOT],
            tx: RefCell::new(Tx::default()),
            next_check: Cell::new(now.plus(CHECK_EVERY)),
            next_wake_check: Cell::new(now.plus(WAKE_CHECK)),
            next_setup_check: Cell::new(now),
            setup_gap: Cell::new(SETUP_CHECK),
            pid,
            regions: RefCell::new(Vec::new()),
            regions_dropped: Cell::new(0),
            stuck_after: 10_000 * MILLIS,
            prover: None,
            express_refused: 0,
        })
    }

    /// Whether a message waits on the socket (a look, no read).
    fn socket_waiting(&self) -> bool {
        crate::sys::poll_fds(&[self.wake.as_raw_fd()], 0)
            .first()
            .copied()
            .unwrap_or(false)
    }

    /// The protocol's peer timeout (`ProtoConfig::peer_timeout`), as what
    /// a ring's receiver is allowed: how long it may leave an express
    /// record unread before the ring is dropped (`stuck_after`).
    pub fn with_peer_timeout(mut self, d: crate::time::Nanos) -> ShmTransport {
        self.stuck_after = d;
        self
    }
}

impl ShmTransport {
    /// `flush_due`'s work when some is due: the socket read, the liveness
    /// checks.
    #[cold]
    #[inline(never)]
    fn checks_due(&mut self, now: Instant) {
        if now >= self.next_wake_check.get() {
            self.next_wake_check.set(now.plus(WAKE_CHECK));
            self.read_socket();
        }
        if now >= self.next_check.get() {
            self.next_check.set(now.plus(CHECK_EVERY));
            self.check_peers(now);
        }
    }
}

impl ShmTransport {
    /// `recv_batch`, each datagram told with whether its slot's sender
    /// proved our job (`ExpressLane::recv_proven`).
    #[inline]
    pub(super) fn recv_rings(&mut self, each: &mut ProvenSink<'_>) -> io::Result<usize> {
        self.release_held();
        self.awake();
        let active = self.map.u64_at(H_ACTIVE).load(Acquire);
        if active == 0 {
            return Ok(0);
        }
        let mut n = 0;
        // the slots in use, from `next` round (fairness between senders)
        let mut bits = (active as u32).rotate_right(self.next as u32);
        while bits != 0 {
            let i = (self.next + bits.trailing_zeros() as usize) % SLOTS;
            bits &= bits - 1;
            let slot = &self.slots[i];
            if slot.from.is_some() && slot.head == slot.published && !self.record_at_head(i) {
                // an empty poll's usual case: nothing new, the head published
                continue;
            }
            n += self.drain_slot(i, RECV_BATCH - n, each);
            if n == RECV_BATCH {
                self.next = (i + 1) % SLOTS;
                break;
            }
        }
        Ok(n)
    }
}

impl Transport for ShmTransport {
    fn send(&mut self, _now: Instant, to: SocketAddr, dgram: &[u8]) -> io::Result<()> {
        let tx = self.tx.get_mut();
        let Some(&Route::Ring(k)) = tx.routes.get(&to) else {
            return Ok(()); // `reaches` said no: the set does not call us
        };
        self.push_ring(k, dgram)
    }

    fn recv_batch(&mut self, each: &mut DatagramSink<'_>) -> io::Result<usize> {
        self.recv_rings(&mut |d, _| each(d))
    }

    fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// A record at an open ring's head, or a message on the socket (a
    /// peer's HELLO or its file, a wake-up, a region message) when a pump
    /// now reads the socket (`flush_due`: every `WAKE_CHECK`; else at the
    /// endpoint's next sleep, `fd`, or `next_look`).
    fn readable(&self) -> bool {
        let active = self.map.u64_at(H_ACTIVE).load(Acquire);
        (0..SLOTS)
            .filter(|i| active & (1 << i) != 0)
            .any(|i| self.slot_waiting(i))
            || (self.clock.now() >= self.next_wake_check.get() && self.socket_waiting())
    }

    /// Asked just before the endpoint sleeps: arms the sleep word.
    fn fd(&self) -> RawFd {
        self.read_socket();
        let sleep = self.map.u32_at(H_SLEEP);
        sleep.store(1, SeqCst);
        fence(SeqCst);
        // a datagram that came before the word was set would sleep unseen;
        // and a sender does not fence between its record and its look at
        // the word (`TxRing::wake`): a record whose sender saw no word yet
        // is visible here within a store-buffer drain, so the rings are
        // looked at until `SLEEP_GRACE` has passed since the word was set
        let set = self.clock.now();
        let waiting = loop {
            let active = self.map.u64_at(H_ACTIVE).load(Acquire);
            if (0..SLOTS)
                .filter(|i| active & (1 << i) != 0)
                .any(|i| self.slot_waiting(i))
            {
                break true;
            }
            // (the simulator's time does not pass in a spin: one look)
            if self.clock.is_virtual() || self.clock.now().since(set) >= SLEEP_GRACE {
                break false;
            }
            std::hint::spin_loop();
        };
        if waiting {
            if let Ok(a) = wake_addr(self.local) {
                let _ = self.wake.send_to_addr(&[1], &a);
            }
        }
        self.wake.as_raw_fd()
    }

    fn reaches(&self, to: SocketAddr) -> bool {
        let now = self.clock.now();
        let mut tx = self.tx.borrow_mut();
        match tx.routes.get(&to) {
            Some(Route::Ring(_)) => return true,
            Some(Route::Asked { retry_at }) if now < *retry_at => {
                // the answer may be in: the first messages go by UDP only
                // until it is read
                drop(tx);
                self.read_socket_for_setup(now);
                return matches!(self.tx.borrow().routes.get(&to), Some(Route::Ring(_)));
            }
            Some(Route::Udp { retry_at }) if now < *retry_at => return false,
            _ => {}
        }
        let retry_at = now.plus(RETRY_AFTER);
        let route = match self.ask(to) {
            Ok(()) => Route::Asked { retry_at },
            Err(_) => Route::Udp { retry_at },
        };
        tx.routes.insert(to, route);
        false
    }

    #[inline]
    fn flush_due(&mut self, now: Instant) -> Option<Instant> {
        // (the usual case, nothing due, without the frame of the work)
        if now >= self.next_wake_check.get() || now >= self.next_check.get() {
            self.checks_due(now);
        }
        None
    }
}

impl Drop for ShmTransport {
    fn drop(&mut self) {
        self.map.u32_at(H_CLOSED).store(1, Release);
        for t in self.tx.get_mut().rings.iter().flatten() {
            t.map
                .u32_at(slot_off(t.slot) + S_STATE)
                .store(CLOSING, Release);
        }
    }
}

#[cfg(test)]
#[path = "shm_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "shm_hold_tests.rs"]
mod hold_tests;

#[cfg(test)]
#[path = "shm_proven_tests.rs"]
mod proven_tests;

#[cfg(test)]
#[path = "shm_stale_tests.rs"]
mod stale_tests;

#[cfg(test)]
#[path = "shm_writer_tests.rs"]
mod writer_tests;
