//! Rails over real UDP on this host's loopback (127.0.0.0/8 is loopback
//! on Linux: any of its addresses binds): a datagram leaves on its path's
//! rail and comes in told with the rail it reached; every rail's socket
//! wakes a wait; a send a rail cannot make is news of that path, never an
//! error, and the batch's other datagrams still go.

use super::RAIL_GAP;
use super::*;
use crate::net::UdpTransport;
use crate::path::Path;

/// A set with one UDP transport per address of `ips`, rail 0 first.
fn set_on(ips: &[&str]) -> Transports {
    let bind = |ip: &str| {
        let a = SocketAddr::new(ip.parse().unwrap(), 0);
        Box::new(UdpTransport::bind(a, 1 << 20).unwrap())
    };
    let mut set = Transports::new(bind(ips[0]));
    for (k, ip) in ips.iter().enumerate().skip(1) {
        assert_eq!(set.add_rail(bind(ip)), Rail(k as u8));
    }
    set
}

/// Receives until `n` datagrams came (each with its path), waiting on the
/// set's descriptors (at most 200 waits of 100 ms: a loopback datagram is
/// there at once; the bound only keeps a broken test from hanging).
fn take(set: &mut Transports, n: usize) -> Vec<(Vec<u8>, Path<SocketAddr>)> {
    let mut got = Vec::new();
    for _ in 0..200 {
        set.recv_batch(Instant::ZERO, &mut |d, proven| {
            assert!(!proven);
            let (b, path) = d.expect("a whole datagram");
            got.push((b.to_vec(), path));
        })
        .unwrap();
        if got.len() >= n {
            break;
        }
        let fds: Vec<RawFd> = set.fds().collect();
        crate::sys::poll_fds(&fds, 100);
    }
    got
}

#[test]
fn a_datagram_leaves_on_its_rail_and_comes_in_told_with_its_rail() {
    let mut a = set_on(&["127.0.0.1", "127.0.0.2"]);
    let mut b = set_on(&["127.0.0.3", "127.0.0.4"]);
    let (ra, rb) = (a.rail_addrs(), b.rail_addrs());
    assert_eq!(ra.len(), 2);
    assert_eq!(rb[0], b.local_addr(), "rail 0 is the name");
    assert_eq!(b.fds().count(), 2, "every rail's socket wakes a wait");
    // every rail of a to every address of b, in one batch of mixed rails
    let mut msgs = Vec::new();
    for (i, &(rail, to)) in [(0u8, 0), (1, 1), (1, 0), (0, 1), (1, 1)]
        .iter()
        .enumerate()
    {
        let path = Path {
            remote: rb[to],
            rail: Rail(rail),
        };
        msgs.push((path, vec![i as u8; 10 + i]));
    }
    let batch: Vec<Outgoing<'_>> = msgs.iter().map(|(p, d)| (*p, [&d[..], &[], &[]])).collect();
    a.send_batch(Instant::ZERO, &batch).unwrap();
    let mut got = take(&mut b, msgs.len());
    got.sort_by_key(|(d, _)| d[0]);
    assert_eq!(got.len(), msgs.len());
    for ((d, path), (sent_on, sent)) in got.iter().zip(&msgs) {
        assert_eq!(d, sent);
        // from the address of the rail it left on, to the rail it was sent to
        let remote = ra[usize::from(sent_on.rail.0)];
        let rail = Rail(rb.iter().position(|&x| x == sent_on.remote).unwrap() as u8);
        assert_eq!(*path, Path { remote, rail }, "datagram {}", d[0]);
    }
    let [sent, _, down] = a.rail_counts();
    assert_eq!((&sent[..2], &down[..2]), (&[2, 3][..], &[0, 0][..]));
    let [_, received, _] = b.rail_counts();
    assert_eq!(&received[..2], &[2, 3]);
    // an answer goes back on the path a datagram came on
    let back = got[1].1;
    b.send_batch(Instant::ZERO, &[(back, [b"back", &[], &[]])])
        .unwrap();
    let reply = take(&mut a, 1);
    assert_eq!(reply[0].0, b"back");
    assert_eq!(reply[0].1.rail, msgs[1].0.rail);
}

#[test]
fn a_rail_that_cannot_reach_an_address_tells_the_path_and_sends_the_rest() {
    let mut a = set_on(&["127.0.0.1", "127.0.0.2"]);
    let mut b = set_on(&["127.0.0.3"]);
    let peer = b.local_addr();
    // a loopback socket cannot send beyond this host (EINVAL; ENETUNREACH
    // where no route is): the path from rail 1 to there is broken
    let far: SocketAddr = "203.0.113.9:9".parse().unwrap();
    let bad = Path {
        remote: far,
        rail: Rail(1),
    };
    let good = Path {
        remote: peer,
        rail: Rail(1),
    };
    let batch: [Outgoing<'_>; 3] = [
        (good, [b"one", &[], &[]]),
        (bad, [b"lost", &[], &[]]),
        (good, [b"two", &[], &[]]),
    ];
    a.send_batch(Instant::ZERO, &batch)
        .expect("a path error is not the endpoint's");
    // alone, by the plain send
    a.send_batch(Instant::ZERO, &[(bad, [b"alone", &[], &[]])])
        .expect("nor alone");
    let mut news = Vec::new();
    a.path_news(&mut |n| news.push(n));
    assert_eq!(news.len(), 1, "one news per path: {news:?}");
    match news[0] {
        PathNews::Down { path, errno } => {
            assert_eq!(path, bad);
            assert!(crate::sys::is_path_error(errno), "{errno}");
        }
        n => panic!("{n:?}"),
    }
    let got = take(&mut b, 2);
    let got: Vec<&[u8]> = got.iter().map(|(d, _)| &d[..]).collect();
    assert_eq!(got, [&b"one"[..], &b"two"[..]], "the batch's others went");
    // taken: told once, and counted on its rail
    a.path_news(&mut |n| panic!("told again: {n:?}"));
    assert_eq!(&a.rail_counts()[2][..2], &[0, 1]);
}

#[test]
fn news_of_broken_paths_is_bounded_whatever_is_refused() {
    let mut a = set_on(&["127.0.0.2"]);
    for k in 0..1000u32 {
        let remote = SocketAddr::new(std::net::Ipv4Addr::from(0xcb00_7100 + k).into(), 9);
        let path = Path::from_name(remote);
        a.send_batch(Instant::ZERO, &[(path, [b"x", &[], &[]])])
            .unwrap();
    }
    let mut news = 0;
    a.path_news(&mut |_| news += 1);
    assert!((1..=64).contains(&news), "{news}");
}

/// Counts its receives, brings `n` datagrams each.
struct Counted {
    n: usize,
    calls: std::sync::Arc<parking_lot::Mutex<usize>>,
}

impl Transport for Counted {
    fn send(&mut self, _now: Instant, _to: SocketAddr, _d: &[u8]) -> io::Result<()> {
        Ok(())
    }
    fn recv_batch(&mut self, each: &mut crate::net::DatagramSink<'_>) -> io::Result<usize> {
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

impl SharedMemory for Counted {
    fn send_reached(&mut self, _: Instant, _: SocketAddr, _: &[u8]) -> Option<io::Result<()>> {
        None
    }
    fn active(&self) -> bool {
        true
    }
    fn fallback_from_host(&self, _from: SocketAddr, _now: Instant) {}
    fn next_look(&self) -> Option<Instant> {
        None
    }
    fn regions_waiting(&self) -> bool {
        false
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
    fn region_take(&self) -> (Vec<crate::net::RegionMsg>, u64) {
        (Vec::new(), 0)
    }
    fn into_express_lane(
        self: Box<Self>,
    ) -> Result<Box<dyn crate::net::ExpressLane>, Box<dyn SharedMemory>> {
        Err(self)
    }
}

/// While a ring carries the traffic, a further rail is read when rail 0
/// is (its gap: no system call per rail per pump), and a rail that
/// brought datagrams is read again at once (a burst), as rail 0 is.
#[test]
fn further_rails_share_the_fallbacks_gap_beside_a_ring() {
    let counter = || std::sync::Arc::new(parking_lot::Mutex::new(0usize));
    let (name, rail) = (counter(), counter());
    let mut set = Transports::new(Box::new(Counted {
        n: 0,
        calls: name.clone(),
    }));
    set.add_rail(Box::new(Counted {
        n: 0,
        calls: rail.clone(),
    }));
    set.prefer(Box::new(Counted {
        n: 1,
        calls: counter(),
    }));
    let t0 = Instant(10 * crate::time::MILLIS);
    set.recv_batch(t0, &mut |_, _| {}).unwrap();
    assert_eq!((*name.lock(), *rail.lock()), (1, 1));
    // within the gap: neither; after it: both
    set.recv_batch(t0.plus(1), &mut |_, _| {}).unwrap();
    assert_eq!((*name.lock(), *rail.lock()), (1, 1));
    set.recv_batch(t0.plus(crate::time::MILLIS), &mut |_, _| {})
        .unwrap();
    assert_eq!((*name.lock(), *rail.lock()), (2, 2));
    // a rail that brings datagrams keeps both read at every receive
    let mut busy = Transports::new(Box::new(Counted {
        n: 0,
        calls: counter(),
    }));
    let rail = counter();
    busy.add_rail(Box::new(Counted {
        n: 3,
        calls: rail.clone(),
    }));
    busy.prefer(Box::new(Counted {
        n: 1,
        calls: counter(),
    }));
    let mut paths = Vec::new();
    for k in 0..3 {
        busy.recv_batch(t0.plus(k), &mut |d, _| paths.push(d.unwrap().1.rail))
            .unwrap();
    }
    assert_eq!(*rail.lock(), 3);
    assert_eq!(paths.iter().filter(|&&r| r == Rail(1)).count(), 9);
}

/// A further rail that brings nothing is read every `RAIL_GAP` while the
/// endpoint busy-polls (rail 0 at every receive), at once after a sleep
/// was prepared (`fds`), and at every receive again once it brings
/// datagrams; `next_look` names the end of its gap when it holds one.
#[test]
fn a_quiet_rail_is_read_every_gap_and_after_a_sleep() {
    let counter = || std::sync::Arc::new(parking_lot::Mutex::new(0usize));
    let (name, rail) = (counter(), counter());
    let mut set = Transports::new(Box::new(Counted {
        n: 0,
        calls: name.clone(),
    }));
    set.add_rail(Box::new(Counted {
        n: 0,
        calls: rail.clone(),
    }));
    let t0 = Instant(10 * crate::time::MILLIS);
    let reads = |set: &mut Transports, at: Instant| {
        set.recv_batch(at, &mut |_, _| {}).unwrap();
        (*name.lock(), *rail.lock())
    };
    assert_eq!(reads(&mut set, t0), (1, 1));
    assert_eq!(reads(&mut set, t0.plus(1)), (2, 1), "in its gap");
    assert_eq!(reads(&mut set, t0.plus(RAIL_GAP - 1)), (3, 1));
    assert_eq!(reads(&mut set, t0.plus(RAIL_GAP)), (4, 2), "its gap over");
    let _ = set.fds().count();
    assert_eq!(
        reads(&mut set, t0.plus(RAIL_GAP + 1)),
        (5, 3),
        "after a sleep"
    );
    assert_eq!(reads(&mut set, t0.plus(RAIL_GAP + 2)), (6, 3));
    // a rail that brings datagrams is read at every receive
    let busy = counter();
    let mut set = Transports::new(Box::new(Counted {
        n: 0,
        calls: counter(),
    }));
    set.add_rail(Box::new(Counted {
        n: 1,
        calls: busy.clone(),
    }));
    for k in 0..5 {
        set.recv_batch(t0.plus(k), &mut |_, _| {}).unwrap();
    }
    assert_eq!(*busy.lock(), 5);
}

/// Always holds a datagram (`readable`), brings nothing.
struct Holding;

impl Transport for Holding {
    fn send(&mut self, _now: Instant, _to: SocketAddr, _d: &[u8]) -> io::Result<()> {
        Ok(())
    }
    fn recv_batch(&mut self, _each: &mut crate::net::DatagramSink<'_>) -> io::Result<usize> {
        Ok(0)
    }
    fn local_addr(&self) -> SocketAddr {
        SocketAddr::from(([10, 0, 0, 2], 2))
    }
    fn fd(&self) -> RawFd {
        -1
    }
    fn readable(&self) -> bool {
        true
    }
}

/// The simulator's readiness with a quiet rail that holds a datagram:
/// not readable in its gap, `next_look` at the gap's end, readable then.
#[test]
fn readiness_counts_a_quiet_rails_gap() {
    let mut set = Transports::new(Box::new(Counted {
        n: 0,
        calls: Default::default(),
    }));
    set.add_rail(Box::new(Holding));
    let t0 = Instant(10 * crate::time::MILLIS);
    assert!(set.readable(t0), "never read: due");
    set.recv_batch(t0, &mut |_, _| {}).unwrap();
    assert!(!set.readable(t0.plus(1)));
    assert_eq!(set.next_look(t0.plus(1)), Some(t0.plus(RAIL_GAP)));
    assert!(set.readable(t0.plus(RAIL_GAP)));
    assert_eq!(set.next_look(t0.plus(RAIL_GAP)), None);
}
