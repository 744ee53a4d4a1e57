//! The set's routing: a send takes shared memory when it reaches the
//! peer, else the fallback; a receive drains both, the fallback after its
//! gap while rings carry the traffic; readiness (the simulator's) counts
//! that gap and the region look.

use std::sync::Arc;

use parking_lot::Mutex;

use super::*;
use crate::net::shm::SLOTS;
use crate::net::{DatagramSink, ExpressLane, RegionMsg};

/// Shared memory's capability, as the stubs (rings of nothing) have it.
/// `regions`: whether region messages wait (none unless given).
macro_rules! no_rings {
    ($t:ty) => {
        no_rings!($t, |_| false);
    };
    ($t:ty, $regions:expr) => {
        impl SharedMemory for $t {
            fn send_reached(
                &mut self,
                now: Instant,
                to: SocketAddr,
                dgram: &[u8],
            ) -> Option<io::Result<()>> {
                self.reaches(to).then(|| self.send(now, to, dgram))
            }
            fn active(&self) -> bool {
                true
            }
            fn fallback_from_host(&self, _from: SocketAddr, _now: Instant) {}
            fn next_look(&self) -> Option<Instant> {
                None
            }
            fn regions_waiting(&self) -> bool {
                let regions: fn(&Self) -> bool = $regions;
                regions(self)
            }
            fn ring_to(&self, _to: SocketAddr) -> Option<(u32, u64)> {
                None
            }
            fn ring_from(&self, _from: SocketAddr, _pid: u32, _secret: u64) -> bool {
                false
            }
            fn claim_to(&self, _: SocketAddr, _: usize, _: u64, _: u64) -> Option<bool> {
                None
            }
            fn claim_from(&self, _: SocketAddr, _: (u32, u64), _: usize, _: u64, _: u64) -> bool {
                false
            }
            fn region_send(&self, _to: SocketAddr, _body: &[u8], _fd: Option<RawFd>) -> bool {
                false
            }
            fn region_take(&self) -> (Vec<RegionMsg>, u64) {
                (Vec::new(), 0)
            }
            fn into_express_lane(
                self: Box<Self>,
            ) -> Result<Box<dyn ExpressLane>, Box<dyn SharedMemory>> {
                Err(self)
            }
        }
    };
}

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

no_rings!(Stub);

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
    assert!(set.on_fallback(near));
    set.prefer(stub("shm", Some(near), -1));
    assert!(!set.on_fallback(near) && set.on_fallback(far));
    assert_eq!(set.local_addr(), SocketAddr::from(([10, 0, 0, 9], 9)));
    set.send(Instant::ZERO, near, b"a").unwrap();
    set.send(Instant::ZERO, far, b"b").unwrap();
    assert_eq!(*log.lock(), [("shm", near), ("udp", far)]);
    assert_eq!(set.fds().collect::<Vec<_>>(), [7]);
    // after the sleep `fds` prepares, every transport is polled
    let mut got = Vec::new();
    let t0 = Instant(1_000_000);
    let n = set
        .recv_batch(t0, &mut |d, _| got.push(d.unwrap().0.to_vec()))
        .unwrap();
    assert_eq!((n, got), (2, vec![b"shm".to_vec(), b"udp".to_vec()]));
    // a fallback that had datagrams is read again at once (a burst)
    let mut udp = 0;
    set.recv_batch(t0.plus(1), &mut |d, _| {
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

no_rings!(Counting);

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
        set.recv_batch(t0, &mut |_, _| {}).unwrap();
        assert_eq!(*calls.lock(), 1);
        set.recv_batch(t0.plus(gap - 1), &mut |_, _| {}).unwrap();
        assert_eq!(*calls.lock(), 1, "ring {ring}: polled before its gap");
        set.recv_batch(t0.plus(gap), &mut |_, _| {}).unwrap();
        assert_eq!(*calls.lock(), 2, "ring {ring}: not polled after its gap");
    }
}

/// Has something waiting (`readable`) or not, brings nothing, has region
/// messages waiting or not.
struct Waiting {
    readable: bool,
    regions: bool,
}

impl Transport for Waiting {
    fn send(&mut self, _now: Instant, _to: SocketAddr, _d: &[u8]) -> io::Result<()> {
        Ok(())
    }
    fn recv_batch(&mut self, _each: &mut DatagramSink<'_>) -> io::Result<usize> {
        Ok(0)
    }
    fn local_addr(&self) -> SocketAddr {
        SocketAddr::from(([10, 0, 0, 1], 1))
    }
    fn fd(&self) -> RawFd {
        -1
    }
    fn readable(&self) -> bool {
        self.readable
    }
}

no_rings!(Waiting, |w| w.regions);

/// The simulator's readiness: beside an active ring, what waits on the
/// fallback is found by a pump only once the fallback's gap is over, and
/// region messages only at the next region look; `next_look` names the
/// first of them. Without shared memory the fallback's readiness is the
/// set's.
#[test]
fn readiness_counts_the_fallbacks_gap_and_the_region_look() {
    let fallback = || {
        Box::new(Waiting {
            readable: true,
            regions: false,
        })
    };
    let t0 = Instant(10 * crate::time::MILLIS);
    let alone = Transports::new(fallback());
    assert!(alone.readable(t0));
    assert_eq!(alone.next_look(t0), None);
    for regions in [false, true] {
        let mut set = Transports::new(fallback());
        set.prefer(Box::new(Waiting {
            readable: false,
            regions,
        }));
        // read the fallback (and looked for regions) at t0; quiet since
        // long before: its gap is FALLBACK_GAP_QUIET
        set.recv_batch(t0, &mut |_, _| {}).unwrap();
        let _ = set.region_take(t0);
        let region_look = set.next_region_look.get();
        assert!(t0 < region_look && region_look < t0.plus(FALLBACK_GAP_QUIET));
        let gap_end = t0.plus(FALLBACK_GAP_QUIET);
        let first = if regions { region_look } else { gap_end };
        assert!(!set.readable(t0.plus(1)), "regions {regions}");
        assert_eq!(set.next_look(t0.plus(1)), Some(first), "regions {regions}");
        assert!(set.readable(first), "regions {regions}");
        assert!(set.readable(gap_end), "regions {regions}");
    }
}

/// Shared memory that logs the peers it is asked to reach (where a ring
/// sends its HELLO) and reaches none yet.
struct Asked(Arc<Mutex<Vec<SocketAddr>>>);

impl Transport for Asked {
    fn send(&mut self, _now: Instant, _to: SocketAddr, _d: &[u8]) -> io::Result<()> {
        Ok(())
    }
    fn recv_batch(&mut self, _each: &mut DatagramSink<'_>) -> io::Result<usize> {
        Ok(0)
    }
    fn local_addr(&self) -> SocketAddr {
        SocketAddr::from(([10, 0, 0, 9], 9))
    }
    fn fd(&self) -> RawFd {
        -1
    }
    fn readable(&self) -> bool {
        false
    }
    fn reaches(&self, to: SocketAddr) -> bool {
        self.0.lock().push(to);
        false
    }
}

no_rings!(Asked);

#[test]
fn the_rings_of_a_table_are_asked_for_only_when_every_peer_could_have_one() {
    let udp = || {
        Box::new(Stub {
            name: "udp",
            only: None,
            fd: 7,
            log: Arc::new(Mutex::new(Vec::new())),
        })
    };
    let peers: Vec<SocketAddr> = (1..=SLOTS as u16 + 1)
        .map(|p| SocketAddr::from(([10, 0, 0, 1], p)))
        .collect();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let mut set = Transports::new(udp());
    set.ask_rings(&peers); // no shared memory: nothing to ask
    set.prefer(Box::new(Asked(asked.clone())));
    set.ask_rings(&peers[..SLOTS]);
    assert_eq!(*asked.lock(), peers[..SLOTS], "each peer asked, once");
    asked.lock().clear();
    // one peer more than a file has slots: each is asked at its first
    // datagram instead, so that the slots go to the peers written to
    set.ask_rings(&peers);
    assert!(asked.lock().is_empty());
}
