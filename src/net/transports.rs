//! The transports of one endpoint, and the one place a send is routed.
//!
//! An endpoint owns a `Transports`: one or more transports in order of
//! preference. A send goes out on the first transport that reaches the peer
//! (today only UDP, which reaches every peer; a same-host transport added
//! before it would take the peers it has a path to). Receiving drains every
//! transport, and every transport's descriptor wakes `AM_WaitSema`. Several
//! paths to one peer (rails) would replace `route` with a choice by health.

use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;

use super::{DatagramSink, Gathered, Transport, SEND_BATCH};
use crate::time::Instant;

/// Which transport of a set (its position: lower is preferred).
pub type TransportId = usize;

pub struct Transports {
    /// In order of preference; the last reaches every peer.
    list: Vec<Box<dyn Transport>>,
    /// When the fallback was last polled (`Instant::ZERO`: at the next
    /// receive).
    polled: std::cell::Cell<Instant>,
    /// A gathered datagram joined for a ring (kept: no allocation per send).
    joined: Vec<u8>,
    /// The fallback's last receive found datagrams: the next one does not
    /// wait for the gap.
    fallback_busy: bool,
    /// When the fallback last brought a datagram (`Instant::ZERO`: never).
    fallback_seen: Instant,
    /// When `region_take` looks next (`Instant::ZERO`: at the next call,
    /// after a sleep).
    next_region_look: std::cell::Cell<Instant>,
}

/// How often `region_take` asks the transports.
const REGION_LOOK: crate::time::Nanos = 10 * crate::time::MICROS;

/// While a preferred transport (shared memory) carries traffic, the
/// fallback's receive (a system call, dearer than a whole shared-memory
/// round trip) is tried only this often while busy-polling (bounding what it
/// adds to a UDP datagram's latency), and after every sleep.
const FALLBACK_GAP: crate::time::Nanos = 2 * crate::time::MICROS;
/// The fallback's longest wait while every pump finds datagrams in a ring
/// (a stream over shared memory does not starve UDP: datagrams a full
/// ring spilled, peers on other hosts).
const FALLBACK_GAP_BUSY: crate::time::Nanos = 50 * crate::time::MICROS;
/// The fallback's gap while it has brought nothing for `FALLBACK_QUIET`:
/// every peer that talks to us does so through a ring, and a system call
/// every `FALLBACK_GAP` (here one costs 1-2 us, most of a shared-memory
/// round trip) would delay noticing the ring's next datagram. A datagram
/// from a new peer, or one a full ring spilled, waits at most this long;
/// the first one found brings the short gap back.
const FALLBACK_GAP_QUIET: crate::time::Nanos = 50 * crate::time::MICROS;
/// The longest a datagram waits in the fallback for a pump to read it
/// while a preferred transport carries traffic (the larger gap).
#[cfg(test)]
pub(crate) const FALLBACK_WAIT_MAX: crate::time::Nanos = if FALLBACK_GAP_BUSY > FALLBACK_GAP_QUIET {
    FALLBACK_GAP_BUSY
} else {
    FALLBACK_GAP_QUIET
};
/// How long the fallback must have been quiet for `FALLBACK_GAP_QUIET`.
const FALLBACK_QUIET: crate::time::Nanos = crate::time::MILLIS;

/// While a preferred transport is active and the fallback brought nothing
/// at its last receive: the instant from which a receive reads the
/// fallback again, it last having been read at `polled` and having
/// brought something at `seen` (`rings_took`: that receive takes
/// datagrams from a ring).
#[inline]
fn fallback_from(polled: Instant, seen: Instant, now: Instant, rings_took: bool) -> Instant {
    let gap = if rings_took {
        FALLBACK_GAP_BUSY
    } else if now.since(seen) >= FALLBACK_QUIET {
        FALLBACK_GAP_QUIET
    } else {
        FALLBACK_GAP
    };
    polled.plus(gap)
}

impl Transports {
    /// A set of one transport, which must reach every peer: it is the
    /// fallback, and its address is the endpoint's name.
    pub fn new(fallback: Box<dyn Transport>) -> Transports {
        Transports {
            joined: Vec::new(),
            fallback_busy: false,
            fallback_seen: Instant::ZERO,
            next_region_look: std::cell::Cell::new(Instant::ZERO),
            list: vec![fallback],
            polled: std::cell::Cell::new(Instant::ZERO),
        }
    }

    /// Adds a transport preferred to those already there for the peers it
    /// reaches.
    pub fn prefer(&mut self, t: Box<dyn Transport>) {
        self.list.insert(0, t);
    }

    /// The address peers know this endpoint by (the fallback's).
    pub fn local_addr(&self) -> SocketAddr {
        self.fallback().local_addr()
    }

    fn fallback(&self) -> &dyn Transport {
        self.list.last().expect("a set holds a transport").as_ref()
    }

    /// The transport a datagram to `to` leaves on.
    #[inline]
    pub fn route(&self, to: SocketAddr) -> TransportId {
        let last = self.list.len() - 1;
        if last == 0 {
            return 0;
        }
        self.list[..last]
            .iter()
            .position(|t| t.reaches(to))
            .unwrap_or(last)
    }

    /// Whether the set has a transport besides the fallback (a ring).
    #[inline]
    pub fn has_preferred(&self) -> bool {
        self.list.len() > 1
    }

    /// Whether a datagram to `to` leaves on the fallback (UDP): no ring
    /// reaches it.
    #[inline]
    pub fn on_fallback(&self, to: SocketAddr) -> bool {
        self.route(to) + 1 == self.list.len()
    }

    /// Our pid and ring secret when a ring reaches `to` (`Transport::ring_to`).
    pub fn ring_to(&self, to: SocketAddr) -> Option<(u32, u64)> {
        let i = self.route(to);
        if i + 1 < self.list.len() {
            self.list[i].ring_to(to)
        } else {
            None
        }
    }

    /// Whether a ring receives from `from`, written by `pid` knowing
    /// `secret` (`Transport::ring_from`); never for the fallback (UDP).
    pub fn ring_from(&self, from: SocketAddr, pid: u32, secret: u64) -> bool {
        let last = self.list.len() - 1;
        self.list[..last]
            .iter()
            .any(|t| t.ring_from(from, pid, secret))
    }

    /// `Transport::region_send` on the transports besides the fallback.
    pub fn region_send(&self, to: SocketAddr, body: &[u8], fd: Option<RawFd>) -> bool {
        let last = self.list.len() - 1;
        self.list[..last]
            .iter()
            .any(|t| t.region_send(to, body, fd))
    }

    /// `Transport::region_take` of the transports besides the fallback.
    /// Asked every poll, looks at most every `REGION_LOOK` (none is read
    /// more often: a ring's transport reads its socket every millisecond
    /// while busy, and before sleeping), without allocating when there is
    /// none.
    #[inline]
    pub fn region_take(&self, now: Instant) -> (Vec<super::RegionMsg>, u64) {
        if !self.region_look_due(now) {
            return (Vec::new(), 0);
        }
        self.region_take_now(now)
    }

    /// Whether `region_take` would look at the transports now (else it
    /// returns nothing: an empty poll need not build its empty answer).
    #[inline]
    pub fn region_look_due(&self, now: Instant) -> bool {
        self.list.len() > 1 && now >= self.next_region_look.get()
    }

    #[inline(never)]
    fn region_take_now(&self, now: Instant) -> (Vec<super::RegionMsg>, u64) {
        let last = self.list.len() - 1;
        self.next_region_look.set(now.plus(REGION_LOOK));
        let mut all = Vec::new();
        let mut dropped = 0;
        for t in &self.list[..last] {
            let (got, d) = t.region_take();
            dropped += d;
            if all.is_empty() {
                all = got;
            } else {
                all.extend(got);
            }
        }
        (all, dropped)
    }

    /// `Transport::express_send` on the transports besides the fallback:
    /// whether a ring took the record.
    #[inline]
    pub fn express_send(&mut self, to: SocketAddr, rec: &[u8], hold: bool) -> bool {
        let last = self.list.len() - 1;
        self.list[..last]
            .iter_mut()
            .any(|t| t.express_send(to, rec, hold))
    }

    /// `Transport::release_held` on the transports besides the fallback.
    pub fn release_held(&mut self) {
        let last = self.list.len() - 1;
        for t in &mut self.list[..last] {
            t.release_held();
        }
    }

    /// `Transport::express_take` on the transports besides the fallback:
    /// the first that finds something decides; `Other` without any.
    pub fn express_take(
        &mut self,
        rec: &mut super::express::TakenRecord,
    ) -> super::express::ExpressTake {
        use super::express::ExpressTake;
        let last = self.list.len() - 1;
        let mut found = ExpressTake::Other;
        for t in &mut self.list[..last] {
            match t.express_take(rec) {
                ExpressTake::Nothing => found = ExpressTake::Nothing,
                x => return x,
            }
        }
        found
    }

    /// `Transport::express_open` on the transports besides the fallback.
    #[inline]
    pub fn express_open(&mut self, to: SocketAddr) -> bool {
        let last = self.list.len() - 1;
        self.list[..last].iter_mut().any(|t| t.express_open(to))
    }

    /// `Transport::set_connectable` on every transport.
    pub fn set_connectable(&mut self, f: Option<super::Connectable>) {
        for t in &mut self.list {
            t.set_connectable(f);
        }
    }

    /// `Transport::aliases_to_announce` on every transport.
    pub fn aliases_to_announce(&mut self, now: Instant, each: &mut dyn FnMut(SocketAddr, u16)) {
        for t in &mut self.list {
            t.aliases_to_announce(now, each);
        }
    }

    /// `Transport::alias_accepted` on every transport.
    pub fn alias_accepted(&mut self, to: SocketAddr, port: u16, tag: u64) {
        for t in &mut self.list {
            t.alias_accepted(to, port, tag);
        }
    }

    /// `Transport::set_express_prover` on the transports besides the
    /// fallback.
    pub fn set_express_prover(&mut self, prover: Option<super::ExpressProver>) {
        let last = self.list.len() - 1;
        for t in &mut self.list[..last] {
            t.set_express_prover(prover.clone());
        }
    }

    /// `Transport::take_express_refused` summed over the transports
    /// besides the fallback.
    #[inline]
    pub fn take_express_refused(&mut self) -> u64 {
        let last = self.list.len() - 1;
        self.list[..last]
            .iter_mut()
            .map(|t| t.take_express_refused())
            .sum()
    }

    /// `Transport::express_send_unproven` (tests).
    #[cfg(test)]
    pub fn express_send_unproven(&mut self, to: SocketAddr, rec: &[u8]) -> bool {
        let last = self.list.len() - 1;
        self.list[..last]
            .iter_mut()
            .any(|t| t.express_send_unproven(to, rec))
    }

    /// `Transport::take_dropped` of the transports besides the fallback.
    #[inline]
    pub fn take_dropped(&mut self) -> Option<SocketAddr> {
        let last = self.list.len() - 1;
        self.list[..last].iter_mut().find_map(|t| t.take_dropped())
    }

    /// `Transport::claim_to` on the transport that reaches `to`; None for
    /// the fallback (UDP).
    pub fn claim_to(&self, to: SocketAddr, k: usize, current: u64, new: u64) -> Option<bool> {
        let i = self.route(to);
        if i + 1 < self.list.len() {
            self.list[i].claim_to(to, k, current, new)
        } else {
            None
        }
    }

    /// `Transport::claim_from` on the transports besides the fallback.
    pub fn claim_from(
        &self,
        from: SocketAddr,
        owner: (u32, u64),
        k: usize,
        current: u64,
        new: u64,
    ) -> bool {
        let last = self.list.len() - 1;
        self.list[..last]
            .iter()
            .any(|t| t.claim_from(from, owner, k, current, new))
    }

    /// Sends one datagram on the transport that reaches `to` (a full ring
    /// spills to the fallback), as `send_batch` does for each.
    #[cfg(test)]
    pub fn send(&mut self, now: Instant, to: SocketAddr, dgram: &[u8]) -> io::Result<()> {
        let i = self.route(to);
        match self.list[i].send(now, to, dgram) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && i + 1 < self.list.len() => {
                let last = self.list.len() - 1;
                self.list[last].send(now, to, dgram)
            }
            r => r,
        }
    }

    /// Sends datagrams in order, each on the transport that reaches its
    /// peer; each run of datagrams for the fallback (UDP) leaves as one
    /// batch.
    #[inline]
    pub fn send_batch(
        &mut self,
        now: Instant,
        dgrams: &[(SocketAddr, Gathered<'_>)],
    ) -> io::Result<()> {
        if let [t] = &mut self.list[..] {
            return t.send_batch(now, dgrams);
        }
        let last = self.list.len() - 1;
        // taken for the loop and put back (an error drops it: allocated again)
        let mut joined = std::mem::take(&mut self.joined);
        // dgrams[s..i]: datagrams for the fallback, sent as one batch when
        // a ring's datagram or the end comes (no array to fill per call)
        let mut run: Option<usize> = None;
        for (i, &(to, parts)) in dgrams.iter().enumerate() {
            // a ring takes the datagram whole
            let sent = match parts {
                // one piece (a short message): the first preferred
                // transport that reaches `to` takes it, one look-up
                [d, [], []] => self.list[..last]
                    .iter_mut()
                    .find_map(|t| t.send_reached(now, to, d)),
                // a gathered one is joined only for a ring that reaches `to`
                _ => match self.route(to) {
                    t if t < last => {
                        joined.clear();
                        for p in parts {
                            joined.extend_from_slice(p);
                        }
                        Some(self.list[t].send(now, to, &joined))
                    }
                    _ => None,
                },
            };
            match sent {
                None => {}
                Some(Err(e)) if e.kind() == io::ErrorKind::WouldBlock => {} // full: spills
                Some(r) => {
                    r?;
                    if let Some(s) = run.take() {
                        self.send_fallback(now, &dgrams[s..i])?;
                    }
                    continue;
                }
            }
            run.get_or_insert(i);
        }
        if let Some(s) = run {
            self.send_fallback(now, &dgrams[s..])?;
        }
        self.joined = joined;
        Ok(())
    }

    /// Sends `dgrams` on the fallback, in batches of at most `SEND_BATCH`.
    fn send_fallback(
        &mut self,
        now: Instant,
        dgrams: &[(SocketAddr, Gathered<'_>)],
    ) -> io::Result<()> {
        let last = self.list.len() - 1;
        for c in dgrams.chunks(SEND_BATCH) {
            self.list[last].send_batch(now, c)?;
        }
        Ok(())
    }

    /// Receives what waits on every transport (see `Transport::recv_batch`);
    /// returns how many datagrams there were in all. `now`: the caller's
    /// time of this pump (no clock read here).
    #[inline]
    pub fn recv_batch(&mut self, now: Instant, each: &mut DatagramSink<'_>) -> io::Result<usize> {
        let Some((fallback, preferred)) = self.list.split_last_mut() else {
            return Ok(0);
        };
        let mut n = 0;
        let mut active = false;
        for t in preferred.iter_mut() {
            n += t.recv_batch(each)?;
            active |= t.active();
        }
        if active && !self.fallback_busy {
            // A pump that took datagrams from a ring goes on to handle them
            // (and send the answers) without a system call in between:
            // the fallback waits for the next pump, or at most
            // `FALLBACK_GAP_BUSY` while every pump finds ring traffic.
            if now < fallback_from(self.polled.get(), self.fallback_seen, now, n > 0) {
                return Ok(n);
            }
            self.polled.set(now);
        }
        if preferred.is_empty() {
            // only a ring may carry an express record
            let m = fallback.recv_batch(&mut |d| match d {
                Some((b, _)) if super::express::is_express(b) => each(None),
                d => each(d),
            })?;
            self.fallback_busy = m > 0;
            return Ok(n + m);
        }
        // a datagram from this host by UDP: its sender may be asking a
        // preferred transport for a path (shared memory's HELLO)
        let ip = fallback.local_addr().ip();
        let mut from_host = None;
        let m = fallback.recv_batch(&mut |d| {
            if let Some((b, from)) = d {
                if from.ip().is_loopback() || from.ip() == ip {
                    from_host = Some(from);
                }
                if super::express::is_express(b) {
                    // only a ring may carry an express record
                    return each(None);
                }
            }
            each(d)
        })?;
        if let Some(from) = from_host {
            for t in preferred.iter() {
                t.fallback_from_host(from, now);
            }
        }
        // a burst on the fallback is drained at once, gap or not
        self.fallback_busy = m > 0;
        if m > 0 {
            self.fallback_seen = now;
        }
        Ok(n + m)
    }

    /// The descriptors that become readable when a datagram arrives; asked
    /// just before the endpoint sleeps on them.
    /// (The fallback is polled at the next receive: it may be what wakes
    /// the endpoint.)
    pub fn fds(&self) -> impl Iterator<Item = RawFd> + '_ {
        self.polled.set(Instant::ZERO);
        self.next_region_look.set(Instant::ZERO);
        self.list.iter().map(|t| t.fd()).filter(|&fd| fd >= 0)
    }

    /// Whether a pump at `now` would find something: a transport's
    /// receive (the fallback's only when `recv_batch` would poll it: past
    /// its gap), or region messages when `region_take` looks.
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    pub fn readable(&self, now: Instant) -> bool {
        let Some((fallback, preferred)) = self.list.split_last() else {
            return false;
        };
        preferred.iter().any(|t| t.readable())
            || (self.region_look_due(now) && preferred.iter().any(|t| t.regions_waiting()))
            || (fallback.readable() && self.fallback_gap_end(now).is_none())
    }

    /// When a pump next finds what waits now but is not taken at `now`
    /// (see `readable`): a transport's next look, the next region look,
    /// the end of the fallback's gap.
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    pub fn next_look(&self, now: Instant) -> Option<Instant> {
        let (fallback, preferred) = self.list.split_last()?;
        let regions = preferred
            .iter()
            .any(|t| t.regions_waiting())
            .then(|| self.next_region_look.get());
        let gap = fallback
            .readable()
            .then(|| self.fallback_gap_end(now))
            .flatten();
        preferred
            .iter()
            .filter_map(|t| t.next_look())
            .chain(regions)
            .chain(gap)
            .min()
    }

    /// When `recv_batch` at `now`, its rings found empty, would poll the
    /// fallback again; None: at once.
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    fn fallback_gap_end(&self, now: Instant) -> Option<Instant> {
        let (_, preferred) = self.list.split_last()?;
        let active = preferred.iter().any(|t| t.active());
        if !active || self.fallback_busy {
            return None;
        }
        let gap = if now.since(self.fallback_seen) >= FALLBACK_QUIET {
            FALLBACK_GAP_QUIET
        } else {
            FALLBACK_GAP
        };
        let end = self.polled.get().plus(gap);
        (now < end).then_some(end)
    }

    /// Sends what the transports hold back and is due; returns the next
    /// time one of them needs a call.
    pub fn flush_due(&mut self, now: Instant) -> Option<Instant> {
        self.list.iter_mut().filter_map(|t| t.flush_due(now)).min()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use parking_lot::Mutex;

    use super::*;

    /// Reaches `only` (or everyone), logs what it sends, has one datagram
    /// waiting from `only`.
    struct Stub {
        name: &'static str,
        only: Option<SocketAddr>,
        fd: RawFd,
        log: Arc<Mutex<Vec<(&'static str, SocketAddr)>>>,
    }

    impl Transport for Stub {
        fn send(&mut self, _now: Instant, to: SocketAddr, _d: &[u8]) -> io::Result<()> {
            self.log.lock().push((self.name, to));
            Ok(())
        }
        fn recv_batch(&mut self, each: &mut DatagramSink<'_>) -> io::Result<usize> {
            each(Some((self.name.as_bytes(), self.local_addr())));
            Ok(1)
        }
        fn local_addr(&self) -> SocketAddr {
            self.only.unwrap_or(SocketAddr::from(([10, 0, 0, 9], 9)))
        }
        fn fd(&self) -> RawFd {
            self.fd
        }
        fn readable(&self) -> bool {
            false
        }
        fn reaches(&self, to: SocketAddr) -> bool {
            self.only.is_none_or(|a| a == to)
        }
    }

    #[test]
    fn a_send_takes_the_preferred_transport_that_reaches_the_peer() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let near = SocketAddr::from(([10, 0, 0, 1], 1));
        let far = SocketAddr::from(([10, 0, 0, 2], 2));
        let stub = |name, only, fd| {
            Box::new(Stub {
                name,
                only,
                fd,
                log: log.clone(),
            })
        };
        let mut set = Transports::new(stub("udp", None, 7));
        assert_eq!(set.route(near), 0);
        set.prefer(stub("shm", Some(near), -1));
        assert_eq!(set.local_addr(), SocketAddr::from(([10, 0, 0, 9], 9)));
        set.send(Instant::ZERO, near, b"a").unwrap();
        set.send(Instant::ZERO, far, b"b").unwrap();
        assert_eq!(*log.lock(), [("shm", near), ("udp", far)]);
        assert_eq!(set.fds().collect::<Vec<_>>(), [7]);
        // after the sleep `fds` prepares, every transport is polled
        let mut got = Vec::new();
        let t0 = Instant(1_000_000);
        let n = set
            .recv_batch(t0, &mut |d| got.push(d.unwrap().0.to_vec()))
            .unwrap();
        assert_eq!((n, got), (2, vec![b"shm".to_vec(), b"udp".to_vec()]));
        // a fallback that had datagrams is read again at once (a burst)
        let mut udp = 0;
        set.recv_batch(t0.plus(1), &mut |d| {
            udp += usize::from(d.unwrap().0 == b"udp")
        })
        .unwrap();
        assert_eq!(udp, 1);
    }

    /// Brings `n` datagrams per receive and counts its receives.
    struct Counting {
        n: usize,
        calls: Arc<Mutex<usize>>,
    }

    impl Transport for Counting {
        fn send(&mut self, _now: Instant, _to: SocketAddr, _d: &[u8]) -> io::Result<()> {
            Ok(())
        }
        fn recv_batch(&mut self, each: &mut DatagramSink<'_>) -> io::Result<usize> {
            *self.calls.lock() += 1;
            for _ in 0..self.n {
                each(Some((b"x", self.local_addr())));
            }
            Ok(self.n)
        }
        fn local_addr(&self) -> SocketAddr {
            SocketAddr::from(([10, 0, 0, 1], 1))
        }
        fn fd(&self) -> RawFd {
            -1
        }
        fn readable(&self) -> bool {
            false
        }
    }

    /// A fallback that brought datagrams within FALLBACK_QUIET is polled
    /// every FALLBACK_GAP while the ring is quiet, one quiet longer every
    /// FALLBACK_GAP_QUIET, and either only every FALLBACK_GAP_BUSY while
    /// every receive finds datagrams in the ring (none between a ring's
    /// datagram and its answer).
    #[test]
    fn the_fallback_waits_its_gap_and_longer_while_the_ring_brings_datagrams() {
        for (ring, seen, gap) in [
            (0, true, FALLBACK_GAP),
            (1, true, FALLBACK_GAP_BUSY),
            (0, false, FALLBACK_GAP_QUIET),
            (1, false, FALLBACK_GAP_BUSY),
        ] {
            let calls = Arc::new(Mutex::new(0));
            let mut set = Transports::new(Box::new(Counting {
                n: 0,
                calls: calls.clone(),
            }));
            set.prefer(Box::new(Counting {
                n: ring,
                calls: Arc::new(Mutex::new(0)),
            }));
            let t0 = Instant(10 * crate::time::MILLIS);
            if seen {
                set.fallback_seen = Instant(t0.0 - FALLBACK_QUIET / 2);
            }
            set.recv_batch(t0, &mut |_| {}).unwrap();
            assert_eq!(*calls.lock(), 1);
            set.recv_batch(t0.plus(gap - 1), &mut |_| {}).unwrap();
            assert_eq!(*calls.lock(), 1, "ring {ring}: polled before its gap");
            set.recv_batch(t0.plus(gap), &mut |_| {}).unwrap();
            assert_eq!(*calls.lock(), 2, "ring {ring}: not polled after its gap");
        }
    }
}
