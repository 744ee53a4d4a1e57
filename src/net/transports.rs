//! The transports of one endpoint, and the one place a datagram is routed.
//!
//! An endpoint owns a `Transports`: the transport at its name, which
//! reaches every peer (the fallback: UDP, or the simulator's network), and
//! optionally shared memory, preferred for the same-host peers it reaches
//! (held as `SharedMemory`, with its `ExpressLane` when it offers one).
//! A datagram goes by its path (`crate::path::Path`, chosen by the
//! protocol): a ring when one reaches the path's remote address (a full
//! ring spills to the fallback), else the transport of the path's rail:
//! rail 0 is the fallback (the name), rails 1.. the endpoint's further
//! local addresses (`RAMP_RAILS`, UDP each), a run of datagrams for one
//! rail leaving as one batch. Receiving drains every transport (the
//! fallback and the further rails, a system call each, less often while
//! rings carry the traffic) and tells each datagram's path
//! (its source and the rail it came in on); every transport's descriptor
//! wakes `AM_WaitSema` (the waits poll them all). Datagrams are counted
//! per rail, and each rail's news of its paths (`PathNews`) carries it. What the AM layer asks of the capabilities goes through
//! the set too (`transports_caps.rs`).

use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;

use super::{earliest, ExpressLane, Outgoing, PathNews, SharedMemory, Transport, SEND_BATCH};
use crate::config::MAX_RAILS;
use crate::path::Rail;
use crate::time::Instant;

#[path = "transports_caps.rs"]
mod caps;
#[path = "transports_recv.rs"]
mod recv;

pub struct Transports {
    /// Shared memory, preferred for the peers it reaches.
    near: Option<Near>,
    /// Rail 0: the transport at the endpoint's name; reaches every peer.
    fallback: Box<dyn Transport>,
    /// Rails 1..: the transports at the endpoint's further addresses,
    /// rail k at k - 1 (at most `MAX_RAILS` - 1).
    rails: Vec<Box<dyn Transport>>,
    /// Datagrams handed to each rail's transport, and received from it
    /// (rail k at k; rings' datagrams are no rail's).
    rail_sent: [u64; MAX_RAILS],
    rail_received: [u64; MAX_RAILS],
    /// News of broken paths (`PathNews::Down`) each rail told.
    rail_down: [u64; MAX_RAILS],
    /// When each further rail was last read, and last brought a datagram
    /// (`Instant::ZERO`: never); a quiet rail is read every `RAIL_GAP`.
    rail_polled: [Instant; MAX_RAILS],
    rail_seen: [Instant; MAX_RAILS],
    /// A sleep was prepared (`fds`): the next receive reads every rail.
    rails_woke: std::cell::Cell<bool>,
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

/// Shared memory as the set holds it: with its express lane, or without
/// one (fault injection).
enum Near {
    Lane(Box<dyn ExpressLane>),
    Rings(Box<dyn SharedMemory>),
}

impl Near {
    #[inline]
    fn rings(&self) -> &dyn SharedMemory {
        match self {
            Near::Lane(t) => &**t,
            Near::Rings(t) => &**t,
        }
    }

    #[inline]
    fn rings_mut(&mut self) -> &mut dyn SharedMemory {
        match self {
            Near::Lane(t) => &mut **t,
            Near::Rings(t) => &mut **t,
        }
    }
}

/// While shared memory carries traffic, the fallback's receive (a system
/// call, dearer than a whole shared-memory round trip) is tried only this
/// often while busy-polling (bounding what it adds to a UDP datagram's
/// latency), and after every sleep.
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
/// A further rail that brought nothing for `RAIL_QUIET` is read only every
/// `RAIL_GAP` while the endpoint busy-polls (and after every sleep, whose
/// wait its socket wakes): a ping-pong on rail 0 pays no system call per
/// idle rail per pump (measured: +0.3-0.5 us on a 5.9 us UDP round trip
/// with one idle rail read at every pump); a datagram on an idle rail
/// waits at most this long, and its rail is read at every receive again.
const RAIL_GAP: crate::time::Nanos = 50 * crate::time::MICROS;
const RAIL_QUIET: crate::time::Nanos = crate::time::MILLIS;

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
            near: None,
            fallback,
            rails: Vec::new(),
            rail_sent: [0; MAX_RAILS],
            rail_received: [0; MAX_RAILS],
            rail_down: [0; MAX_RAILS],
            rail_polled: [Instant::ZERO; MAX_RAILS],
            rail_seen: [Instant::ZERO; MAX_RAILS],
            rails_woke: std::cell::Cell::new(false),
            polled: std::cell::Cell::new(Instant::ZERO),
            joined: Vec::new(),
            fallback_busy: false,
            fallback_seen: Instant::ZERO,
            next_region_look: std::cell::Cell::new(Instant::ZERO),
        }
    }

    /// Adds shared memory, preferred to the fallback for the peers it
    /// reaches, with its express lane if it offers one.
    pub fn prefer(&mut self, t: Box<dyn SharedMemory>) {
        debug_assert!(self.near.is_none(), "one shared memory per endpoint");
        self.near = Some(match t.into_express_lane() {
            Ok(lane) => Near::Lane(lane),
            Err(rings) => Near::Rings(rings),
        });
    }

    /// Adds a further rail (a transport at another address of this host,
    /// which reaches every peer its address can): the next `Rail`, which
    /// it returns.
    pub fn add_rail(&mut self, t: Box<dyn Transport>) -> Rail {
        assert!(
            self.rails.len() + 1 < MAX_RAILS,
            "at most {MAX_RAILS} rails"
        );
        self.rails.push(t);
        Rail(self.rails.len() as u8)
    }

    /// Every rail's address, rail 0's (the name) first: what the endpoint
    /// tells the protocol its rails are (`Protocol::set_local_rails`).
    pub fn rail_addrs(&self) -> Vec<SocketAddr> {
        std::iter::once(&self.fallback)
            .chain(&self.rails)
            .map(|t| t.local_addr())
            .collect()
    }

    /// Datagrams handed to each rail's transport and received from it,
    /// and the news of broken paths it told, since the set was made: rail
    /// k at k (zero beyond the last rail).
    pub fn rail_counts(&self) -> [[u64; MAX_RAILS]; 3] {
        [self.rail_sent, self.rail_received, self.rail_down]
    }

    /// The address peers know this endpoint by (the fallback's).
    pub fn local_addr(&self) -> SocketAddr {
        self.fallback.local_addr()
    }

    /// Whether the set has shared memory.
    #[inline]
    pub fn has_shared_memory(&self) -> bool {
        self.near.is_some()
    }

    /// Whether a datagram to `to` leaves on the fallback (UDP): no ring
    /// reaches it.
    #[inline]
    pub fn on_fallback(&self, to: SocketAddr) -> bool {
        self.near.as_ref().is_none_or(|n| !n.rings().reaches(to))
    }

    /// Starts setting up a ring to each of `peers` (those of this host
    /// answer with their file), so that a job's first messages find their
    /// rings ready rather than going by UDP until the answers are read
    /// (`ShmTransport::reaches`): only when every peer could have a ring,
    /// else each is asked at its first datagram, as always, so that the
    /// slots go to the peers that are written to.
    pub fn ask_rings(&self, peers: &[SocketAddr]) {
        if let Some(n) = &self.near {
            if peers.len() <= super::shm::SLOTS {
                for &p in peers {
                    n.rings().reaches(p);
                }
            }
        }
    }

    /// Shared memory when a ring of it reaches `to`.
    #[inline]
    fn ring_reaching(&self, to: SocketAddr) -> Option<&dyn SharedMemory> {
        self.near
            .as_ref()
            .map(Near::rings)
            .filter(|t| t.reaches(to))
    }

    /// Sends one datagram as `send_batch` does (a ring that reaches `to`,
    /// spilling to the fallback when full).
    #[cfg(test)]
    pub fn send(&mut self, now: Instant, to: SocketAddr, dgram: &[u8]) -> io::Result<()> {
        let path = crate::path::Path::from_name(to);
        self.send_batch(now, &[(path, [dgram, &[], &[]])])
    }

    /// Sends datagrams in order, each by its path: on a ring that reaches
    /// its remote address, else on its rail's transport (a rail the set
    /// lacks: the fallback's); each run of datagrams for one rail leaves
    /// as one batch.
    #[inline]
    pub fn send_batch(&mut self, now: Instant, dgrams: &[Outgoing<'_>]) -> io::Result<()> {
        if self.near.is_none() && self.rails.is_empty() {
            self.rail_sent[0] += dgrams.len() as u64;
            return self.fallback.send_batch(now, dgrams);
        }
        let mut out = RailsOut {
            fallback: &mut *self.fallback,
            rails: &mut self.rails,
            sent: &mut self.rail_sent,
        };
        // taken for the loop and put back (an error drops it: allocated again)
        let mut joined = std::mem::take(&mut self.joined);
        // dgrams[s..i]: datagrams for one rail, sent as one batch when a
        // ring's datagram, another rail's or the end comes (no array to
        // fill per call)
        let mut run: Option<usize> = None;
        for (i, &(path, parts)) in dgrams.iter().enumerate() {
            if let Some(s) = run.filter(|&s| dgrams[s].0.rail != path.rail) {
                out.send(now, &dgrams[s..i])?;
                run = None;
            }
            let Some(set_near) = &mut self.near else {
                run.get_or_insert(i);
                continue;
            };
            let to = path.remote;
            let near = set_near.rings_mut();
            // a ring takes the datagram whole
            let mut sent = match parts {
                // one piece (a short message): one look-up of the route
                [d, [], []] => near.send_reached(now, to, d),
                // a gathered one: written in pieces (or joined) for a ring
                // that reaches `to`
                _ => near.send_gathered_reached(now, to, parts, &mut joined),
            };
            if let (Some(Err(e)), Near::Lane(lane)) = (&sent, &mut *set_near) {
                if e.kind() == io::ErrorKind::WouldBlock && lane.express_open(to) {
                    // a full ring whose receiver proved our job: the datagram
                    // may be unsealed (`wire::Integrity::SameHost`), which the
                    // receiver would refuse by UDP. Lost instead, for the
                    // protocol to resend, as a full router queue drops.
                    sent = Some(Ok(()));
                }
            }
            match sent {
                None => {}
                Some(Err(e)) if e.kind() == io::ErrorKind::WouldBlock => {} // full: spills
                Some(r) => {
                    r?;
                    if let Some(s) = run.take() {
                        out.send(now, &dgrams[s..i])?;
                    }
                    continue;
                }
            }
            run.get_or_insert(i);
        }
        if let Some(s) = run {
            out.send(now, &dgrams[s..])?;
        }
        self.joined = joined;
        Ok(())
    }

    /// The descriptors that become readable when a datagram arrives; asked
    /// just before the endpoint sleeps on them.
    /// (The fallback is polled at the next receive: it may be what wakes
    /// the endpoint.)
    pub fn fds(&self) -> impl Iterator<Item = RawFd> + '_ {
        self.polled.set(Instant::ZERO);
        self.rails_woke.set(true);
        self.next_region_look.set(Instant::ZERO);
        let near = self.near.as_ref().map(|n| n.rings().fd());
        near.into_iter()
            .chain(std::iter::once(self.fallback.fd()))
            .chain(self.rails.iter().map(|t| t.fd()))
            .filter(|&fd| fd >= 0)
    }

    /// Whether a pump at `now` would find something: a transport's
    /// receive (the fallback's only when `recv_batch` would poll it: past
    /// its gap), or region messages when `region_take` looks.
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    pub fn readable(&self, now: Instant) -> bool {
        let near = self.near.as_ref().map(Near::rings);
        near.is_some_and(|n| n.readable() || (self.region_look_due(now) && n.regions_waiting()))
            || (self.udp_readable(now) && self.fallback_gap_end(now).is_none())
    }

    /// Whether a rail's socket holds a datagram that a receive at `now`
    /// reads (rail 0's; a further rail's unless it is in its gap), its
    /// gap beside a ring aside.
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    fn udp_readable(&self, now: Instant) -> bool {
        let woke = self.rails_woke.get();
        let due = |k: usize| woke || rail_due(self.rail_polled[k], self.rail_seen[k], now);
        self.fallback.readable()
            || (self.rails.iter().enumerate()).any(|(k, t)| due(k + 1) && t.readable())
    }

    /// When the first further rail that holds a datagram but is quiet is
    /// next read at a receive after `now` (None: none such).
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    fn rail_gap_end(&self, now: Instant) -> Option<Instant> {
        if self.rails_woke.get() {
            return None;
        }
        let waiting = self.rails.iter().enumerate().filter(|(_, t)| t.readable());
        waiting
            .map(|(k, _)| (self.rail_polled[k + 1], self.rail_seen[k + 1]))
            .filter(|&(polled, seen)| !rail_due(polled, seen, now))
            .map(|(polled, _)| polled.plus(RAIL_GAP))
            .min()
    }

    /// When a pump next finds what waits now but is not taken at `now`
    /// (see `readable`): shared memory's next look at its socket, the next
    /// region look, the end of the fallback's gap, of a quiet rail's.
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    pub fn next_look(&self, now: Instant) -> Option<Instant> {
        let rails = self.rail_gap_end(now);
        let Some(near) = self.near.as_ref().map(Near::rings) else {
            return rails;
        };
        let regions = near.regions_waiting().then(|| self.next_region_look.get());
        let gap = self
            .udp_readable(now)
            .then(|| self.fallback_gap_end(now))
            .flatten();
        let looks = near.next_look().into_iter().chain(regions).chain(gap);
        looks.chain(rails).min()
    }

    /// Until when a receive with empty rings finds nothing a full pump
    /// would (the fallback in its gap, no region look due, the rings'
    /// periodic work not due), asked at the end of a pump at `now`: the
    /// express lane's fast poll skips the full one until then
    /// (`am/express/express_poll.rs`). `now` when the fallback is read
    /// at every receive (no ring active, or its last receive found
    /// datagrams), or there is no shared memory. (The further rails are
    /// read with the fallback: its gap is theirs.)
    pub fn quiet_until(&self, now: Instant) -> Instant {
        let Some(near) = self.near.as_ref().map(Near::rings) else {
            return now;
        };
        if self.fallback_busy || !near.active() {
            return now;
        }
        let mut until = fallback_from(self.polled.get(), self.fallback_seen, now, false)
            .min(near.checks_due_at());
        if near.regions_waiting() {
            until = until.min(self.next_region_look.get());
        }
        until
    }

    /// When `recv_batch` at `now`, its rings found empty, would poll the
    /// fallback again; None: at once.
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    fn fallback_gap_end(&self, now: Instant) -> Option<Instant> {
        let near = self.near.as_ref()?;
        if !near.rings().active() || self.fallback_busy {
            return None;
        }
        let end = fallback_from(self.polled.get(), self.fallback_seen, now, false);
        (now < end).then_some(end)
    }

    /// Sends what the transports hold back and is due, and does their
    /// periodic work; returns the next time one of them needs a call.
    pub fn flush_due(&mut self, now: Instant) -> Option<Instant> {
        let near = self
            .near
            .as_mut()
            .and_then(|n| n.rings_mut().flush_due(now));
        let mut next = earliest(near, self.fallback.flush_due(now));
        for t in self.rails.iter_mut() {
            next = earliest(next, t.flush_due(now));
        }
        next
    }

    /// What the rails' transports learnt of their paths (`PathNews`, each
    /// with the rail it came from): smaller datagrams, broken paths.
    /// Shared memory keeps its own sizes.
    pub fn path_news(&mut self, each: &mut dyn FnMut(PathNews)) {
        // (every pump asks: a loop, no iterator chain)
        for k in 0..=self.rails.len() {
            let t: &mut dyn Transport = match k {
                0 => &mut *self.fallback,
                _ => &mut *self.rails[k - 1],
            };
            let (rail, down) = (Rail(k as u8), &mut self.rail_down[k]);
            t.path_news(&mut |n| {
                if let PathNews::Down { .. } = n {
                    *down += 1;
                }
                each(n.on_rail(rail))
            });
        }
    }
}

/// Whether a receive at `now` reads a further rail last read at `polled`
/// that last brought a datagram at `seen` (`RAIL_GAP`, `RAIL_QUIET`).
#[inline]
fn rail_due(polled: Instant, seen: Instant, now: Instant) -> bool {
    seen != Instant::ZERO && now.since(seen) < RAIL_QUIET || now.since(polled) >= RAIL_GAP
}

/// The rails' transports, for a run of datagrams of one rail.
struct RailsOut<'a> {
    fallback: &'a mut dyn Transport,
    rails: &'a mut [Box<dyn Transport>],
    sent: &'a mut [u64; MAX_RAILS],
}

impl RailsOut<'_> {
    /// Sends `dgrams` (all of one rail) on their rail's transport (a rail
    /// there is not: the fallback), in batches of at most `SEND_BATCH`.
    fn send(&mut self, now: Instant, dgrams: &[Outgoing<'_>]) -> io::Result<()> {
        let k = dgrams.first().map_or(0, |d| usize::from(d.0.rail.0));
        let (k, t): (usize, &mut dyn Transport) = match self.rails.get_mut(k.wrapping_sub(1)) {
            Some(t) => (k, &mut **t),
            None => (0, &mut *self.fallback),
        };
        self.sent[k] += dgrams.len() as u64;
        for c in dgrams.chunks(SEND_BATCH) {
            t.send_batch(now, c)?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "transports_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "rails_tests.rs"]
mod rails_tests;
