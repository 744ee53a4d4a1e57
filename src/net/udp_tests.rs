//! The UDP transport's tests: receive batches, connected sockets, path sizes, GSO and GRO.
use super::*;
use crate::net::udp_conns::MAX_CONNS;

fn take(t: &mut UdpTransport) -> usize {
    let mut got = 0;
    let n = t
        .recv_batch(&mut |d| {
            assert_eq!(d.map(|(b, _)| b.len()), Some(3));
            got += 1;
        })
        .unwrap();
    assert_eq!(n, got);
    n
}

/// A lone datagram (a ping-pong) is read one at a time; a burst, once
/// two receives in a row found datagrams, in batches that double.
#[test]
fn receives_grow_only_in_a_burst() {
    let mut t = UdpTransport::bind("127.0.0.1:0".parse().unwrap(), 1 << 20).unwrap();
    let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
    let to = t.local_addr();
    let wait_for = |t: &mut UdpTransport| loop {
        crate::sys::wait_readable(&[t.fd()], 1000);
        if let n @ 1.. = take(t) {
            return n;
        }
    };
    for _ in 0..3 {
        peer.send_to(b"abc", to).unwrap();
        assert_eq!(wait_for(&mut t), 1);
        assert_eq!(take(&mut t), 0);
    }
    for _ in 0..12 {
        peer.send_to(b"abc", to).unwrap();
    }
    // loopback delivers at once: all twelve wait
    let mut sizes = vec![wait_for(&mut t)];
    while sizes.iter().sum::<usize>() < 12 {
        sizes.push(wait_for(&mut t));
    }
    assert_eq!(sizes, [1, 1, 2, 4, 4]);
    assert_eq!(take(&mut t), 0);
    // after the burst, a lone datagram is read by itself again
    peer.send_to(b"abc", to).unwrap();
    assert_eq!(wait_for(&mut t), 1);
}

/// Every receive finding exactly one datagram (one thread polling two
/// endpoints in turn): at most one receive in three asks for a batch.
#[test]
fn one_datagram_per_receive_asks_for_a_batch_rarely() {
    let mut t = UdpTransport::bind("127.0.0.1:0".parse().unwrap(), 1 << 20).unwrap();
    let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
    let to = t.local_addr();
    let mut asked = Vec::new();
    for _ in 0..9 {
        peer.send_to(b"abc", to).unwrap();
        asked.push(t.want);
        // readable first: no receive finds nothing
        crate::sys::wait_readable(&[t.fd()], 1000);
        assert_eq!(take(&mut t), 1);
    }
    assert_eq!(asked, [1, 1, 2, 1, 1, 2, 1, 1, 2]);
}

/// A datagram the tests' `connectable` picks.
fn data_packet() -> Vec<u8> {
    b"D\x05 an association's packet".to_vec()
}

/// The tests' association tag: a 'D' datagram's second byte.
fn tag_of(d: &[u8]) -> Option<u64> {
    (d.first() == Some(&b'D')).then(|| u64::from(d[1]))
}

fn connectable(announce: bool) -> Connectable {
    Connectable { tag_of, announce }
}

fn connecting() -> UdpTransport {
    let mut t = UdpTransport::bind("127.0.0.1:0".parse().unwrap(), 1 << 20).unwrap();
    t.set_connectable(Some(connectable(false)));
    t
}

/// The ports `aliases_to_announce` names at `now`.
fn to_announce(t: &mut UdpTransport, now: Instant) -> Vec<(SocketAddr, u16)> {
    let mut v = Vec::new();
    t.aliases_to_announce(now, &mut |to, port| v.push((to, port)));
    v
}

/// Announced aliases (without a MAC): an association's packets leave
/// from the name until the layer above says the peer took the socket's
/// port for the association's tag; the port is named at once, then
/// after `ANNOUNCE_EVERY`, each wait twice the last up to 64 times it,
/// until taken; a taking for another port or
/// tag changes nothing; a new association (another tag) waits again;
/// a full set takes no new peer (a port given up could be anyone's).
#[test]
fn announced_aliases_carry_nothing_until_the_peer_takes_them() {
    use crate::net::udp_conns::ANNOUNCE_EVERY;
    let mut t = UdpTransport::bind("127.0.0.1:0".parse().unwrap(), 1 << 20).unwrap();
    t.set_connectable(Some(connectable(true)));
    let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
    let peer_addr = peer.local_addr().unwrap();
    let mut buf = [0u8; 64];
    let now = Instant::ZERO;
    let mut from = |t: &mut UdpTransport, tag: u8| {
        let mut d = data_packet();
        d[1] = tag;
        t.send(now, peer_addr, &d).unwrap();
        peer.recv_from(&mut buf).unwrap().1
    };
    assert_eq!(to_announce(&mut t, now), [], "nothing sent yet");
    assert_eq!(from(&mut t, 7), t.local_addr(), "not taken yet: the name");
    let named = to_announce(&mut t, now);
    assert_eq!(named.len(), 1);
    let (to, port) = named[0];
    assert_eq!(to, peer_addr);
    assert_ne!(port, t.local_addr().port());
    assert_eq!(
        to_announce(&mut t, now.plus(ANNOUNCE_EVERY - 1)),
        [],
        "not again so soon"
    );
    assert_eq!(
        to_announce(&mut t, now.plus(ANNOUNCE_EVERY)),
        named,
        "again"
    );
    // then each wait twice the one before, up to 64 times the first
    let mut at = now.plus(ANNOUNCE_EVERY);
    for k in 1..10u32 {
        let wait = ANNOUNCE_EVERY << k.min(6);
        assert_eq!(to_announce(&mut t, at.plus(wait - 1)), [], "wait {k}");
        at = at.plus(wait);
        assert_eq!(to_announce(&mut t, at), named, "after wait {k}");
    }
    // taken for another port, or by another peer: nothing changes
    t.alias_accepted(peer_addr, port.wrapping_add(1), 7);
    t.alias_accepted(t.local_addr(), port, 7);
    assert_eq!(from(&mut t, 7), t.local_addr());
    // taken for tag 7: its packets leave from the port
    t.alias_accepted(peer_addr, port, 7);
    let conn = from(&mut t, 7);
    assert_eq!(conn, SocketAddr::new(t.local_addr().ip(), port));
    assert_eq!(to_announce(&mut t, now.plus(10 * ANNOUNCE_EVERY)), []);
    // a new association with the peer (tag 8): the name until taken
    assert_eq!(from(&mut t, 8), t.local_addr());
    assert_eq!(to_announce(&mut t, now.plus(10 * ANNOUNCE_EVERY)), named);
    t.alias_accepted(peer_addr, port, 8);
    assert_eq!(from(&mut t, 8), conn);
    // a full set takes no new peer, however idle the others are
    let others: Vec<UdpSocket> = (1..MAX_CONNS)
        .map(|_| UdpSocket::bind("127.0.0.1:0").unwrap())
        .collect();
    for o in &others {
        t.send(now, o.local_addr().unwrap(), &data_packet())
            .unwrap();
    }
    assert_eq!(t.connected().1, MAX_CONNS);
    let late = UdpSocket::bind("127.0.0.1:0").unwrap();
    for _ in 0..5000 {
        from(&mut t, 8);
    }
    t.send(now, late.local_addr().unwrap(), &data_packet())
        .unwrap();
    assert_eq!(late.recv_from(&mut buf).unwrap().1, t.local_addr());
    assert_eq!(
        t.connected(),
        (MAX_CONNS as u64, MAX_CONNS),
        "none replaced"
    );
}

/// An association's packets leave from a port of their own connected
/// to the peer, a handshake's from the endpoint's; what the peer sends
/// back to that port is read after 16 empty receives, as from the
/// peer; `set_connectable(None)`: everything from the endpoint's port.
#[test]
fn association_packets_leave_through_a_socket_connected_to_the_peer() {
    let mut t = connecting();
    let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
    let peer_addr = peer.local_addr().unwrap();
    let mut buf = [0u8; 64];
    let now = Instant::ZERO;
    t.send(now, peer_addr, &data_packet()).unwrap();
    let (_, conn) = peer.recv_from(&mut buf).unwrap();
    assert_eq!(conn.ip(), t.local_addr().ip());
    assert_ne!(conn, t.local_addr(), "another port");
    assert_eq!(t.connected(), (1, 1));
    t.send(now, peer_addr, &data_packet()).unwrap();
    assert_eq!(
        peer.recv_from(&mut buf).unwrap().1,
        conn,
        "the same socket again"
    );
    t.send(now, peer_addr, b"a handshake's").unwrap();
    assert_eq!(peer.recv_from(&mut buf).unwrap().1, t.local_addr());
    // a bulk one: its route look-up is nothing beside its copy
    let mut big = data_packet();
    big.resize(CONNECTED_MAX + 1, 0);
    t.send(now, peer_addr, &big).unwrap();
    let mut bigbuf = vec![0u8; CONNECTED_MAX + 8];
    assert_eq!(
        peer.recv_from(&mut bigbuf).unwrap(),
        (big.len(), t.local_addr())
    );
    // an answer to the connected port, and a stranger's datagram there
    // (the kernel takes only the peer's into a connected socket)
    let stranger = UdpSocket::bind("127.0.0.1:0").unwrap();
    stranger.send_to(b"xyz", conn).unwrap();
    peer.send_to(b"abc", conn).unwrap();
    let mut from = Vec::new();
    for _ in 0..16 {
        t.recv_batch(&mut |d| from.push(d.map(|(b, f)| (b.to_vec(), f))))
            .unwrap();
    }
    assert_eq!(from, [Some((b"abc".to_vec(), peer_addr))]);
    t.set_connectable(None);
    t.send(now, peer_addr, &data_packet()).unwrap();
    assert_eq!(peer.recv_from(&mut buf).unwrap().1, t.local_addr());
    assert_eq!(t.connected(), (0, 0));
}

/// At most `MAX_CONNS` peers get a connected socket; the next peer is
/// sent to unconnected until one of them has been idle long enough.
#[test]
fn connected_sockets_are_few_and_go_to_the_busy_peers() {
    let mut t = connecting();
    let peers: Vec<UdpSocket> = (0..MAX_CONNS + 1)
        .map(|_| UdpSocket::bind("127.0.0.1:0").unwrap())
        .collect();
    let mut buf = [0u8; 64];
    let now = Instant::ZERO;
    let mut from = |t: &mut UdpTransport, p: &UdpSocket| {
        t.send(now, p.local_addr().unwrap(), &data_packet())
            .unwrap();
        p.recv_from(&mut buf).unwrap().1
    };
    for p in &peers[..MAX_CONNS] {
        assert_ne!(from(&mut t, p), t.local_addr());
    }
    let last = &peers[MAX_CONNS];
    assert_eq!(from(&mut t, last), t.local_addr(), "no room");
    assert_eq!(t.connected(), (MAX_CONNS as u64, MAX_CONNS));
    // the first peers stay busy; the last one idle for long enough
    for _ in 0..5000 {
        for p in &peers[1..MAX_CONNS] {
            from(&mut t, p);
        }
    }
    assert_ne!(from(&mut t, last), t.local_addr(), "the idle one's place");
    assert_eq!(t.connected(), (MAX_CONNS as u64 + 1, MAX_CONNS));
    assert_eq!(from(&mut t, &peers[0]), t.local_addr(), "the first lost it");
}

/// Equal datagrams to one peer leave as GSO trains where the kernel
/// offers GSO (a datagram of another size, or another peer's, ends one),
/// and a receive that GRO coalesced is taken apart: each datagram
/// arrives whole, once, in order.
#[test]
fn trains_of_equal_datagrams_arrive_one_by_one() {
    let lo: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let mut a = UdpTransport::bind(lo, 4 << 20).unwrap();
    let mut b = UdpTransport::bind(lo, 4 << 20).unwrap();
    let mut c = UdpTransport::bind(lo, 4 << 20).unwrap();
    eprintln!(
        "GSO {} GRO {} (a kernel without them sends and receives one by one)",
        a.offload.gso, b.offload.gro
    );
    let len = |i: usize| match i {
        39 | 99 => 300,
        20 => 5000,
        _ => 1400,
    };
    let bodies: Vec<Vec<u8>> = (0..100)
        .map(|i| (0..len(i)).map(|j| (i * 7 + j) as u8).collect())
        .collect();
    let (pb, pc) = (
        crate::path::Path::from_name(b.local_addr()),
        crate::path::Path::from_name(c.local_addr()),
    );
    let e: &[u8] = &[];
    // one for c in the middle of b's
    let out: Vec<Outgoing<'_>> = bodies
        .iter()
        .enumerate()
        .map(|(i, d)| (if i == 50 { pc } else { pb }, [&d[..8], &d[8..], e]))
        .collect();
    for batch in out.chunks(crate::net::SEND_BATCH) {
        a.send_batch(Instant::ZERO, batch).unwrap();
    }
    assert!(a.offload.refused.is_empty() && a.offload.news.is_empty());
    let receive = |t: &mut UdpTransport, n: usize| {
        let mut got: Vec<Vec<u8>> = Vec::new();
        // (a watchdog: 200 waits of at most 100 ms that found nothing)
        let mut waits = 0;
        while got.len() < n {
            assert!(waits < 200, "{} of {n}", got.len());
            crate::sys::wait_readable(&[t.fd()], 100);
            let found = t
                .recv_batch(&mut |d| got.push(d.expect("whole").0.to_vec()))
                .unwrap();
            waits += usize::from(found == 0);
        }
        got
    };
    let want: Vec<Vec<u8>> = bodies
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != 50)
        .map(|(_, d)| d.clone())
        .collect();
    assert_eq!(receive(&mut b, 99), want);
    assert_eq!(receive(&mut c, 1), [bodies[50].clone()]);
}

/// A train of equal datagrams to `to` from `a`, sent as one GSO train
/// where the kernel offers GSO: `count` datagrams of `size` bytes, each
/// of its own bytes.
fn send_train(a: &mut UdpTransport, to: SocketAddr, count: usize, size: usize) -> Vec<Vec<u8>> {
    let bodies: Vec<Vec<u8>> = (0..count)
        .map(|i| (0..size).map(|j| (i * 31 + j) as u8).collect())
        .collect();
    let p = crate::path::Path::from_name(to);
    let e: &[u8] = &[];
    let out: Vec<Outgoing<'_>> = bodies.iter().map(|d| (p, [&d[..], e, e])).collect();
    a.send_batch(Instant::ZERO, &out).unwrap();
    assert!(a.offload.refused.is_empty() && a.offload.news.is_empty());
    bodies
}

/// The receive of a socket with GRO on that asks for one datagram (the
/// ping-pong's, `want` 1) still reads the kernel's segment size: a GSO
/// train that loopback hands over whole is taken apart by that one
/// receive, every datagram whole, in order; never the train as one.
#[test]
fn a_lone_receive_takes_a_coalesced_train_apart() {
    let lo: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let mut a = UdpTransport::bind(lo, 4 << 20).unwrap();
    let mut b = UdpTransport::bind(lo, 4 << 20).unwrap();
    // (GRO as after a burst of large datagrams)
    let fd = b.fd();
    b.offload.start_gro(fd);
    let bodies = send_train(&mut a, b.local_addr(), 10, 1400);
    assert_eq!(b.want, 1);
    crate::sys::wait_readable(&[b.fd()], 5000);
    let mut got: Vec<Vec<u8>> = Vec::new();
    let n = b
        .recv_batch(&mut |d| got.push(d.expect("whole").0.to_vec()))
        .unwrap();
    assert_eq!(n, got.len());
    assert!(got.iter().all(|d| d.len() == 1400), "a merged datagram");
    if a.offload.gso && b.offload.gro {
        // (loopback keeps a GSO train whole for a socket with GRO on)
        assert_eq!(got, bodies);
    } else {
        eprintln!("GSO {} GRO {}: no train", a.offload.gso, b.offload.gro);
        assert_eq!(got, bodies[..n]);
    }
}

/// Why a socket with GRO on never reads with plain `recvfrom` (the
/// cheaper call `recv_batch` makes for one datagram otherwise): the
/// kernel gives a coalesced train's segment size only in a control
/// message (net/ipv4/udp.c, `udp_recvmsg` -> `udp_cmsg_recv`), so
/// `recvfrom` returns the train's datagrams as one buffer. Turning GRO
/// off does not help either: a train queued before stays coalesced, and
/// with GRO off `udp_recvmsg` gives no size at all.
#[test]
fn recvfrom_on_a_gro_socket_merges_a_train() {
    let lo: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let mut a = UdpTransport::bind(lo, 4 << 20).unwrap();
    let rx = UdpSocket::bind(lo).unwrap();
    let gro = crate::sys::enable_gro(rx.as_raw_fd()).is_ok();
    let bodies = send_train(&mut a, rx.local_addr().unwrap(), 3, 100);
    let mut buf = [0u8; 1000];
    let (n, _) = rx.recv_from(&mut buf).unwrap();
    if a.offload.gso && gro {
        assert_eq!(buf[..n], bodies.concat()[..]);
    } else {
        eprintln!("GSO {} GRO {}: no train", a.offload.gso, gro);
        assert_eq!(buf[..n], bodies[0][..]);
    }
}

/// A socket asks for GRO only at its first burst of large datagrams: short
/// ones one by one never turn it on (a ping-pong keeps `recvfrom`); trains
/// of large ones before and after the switch arrive whole, once, in order.
#[test]
fn gro_is_asked_at_the_first_burst_of_large_datagrams() {
    let lo: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let mut a = UdpTransport::bind(lo, 4 << 20).unwrap();
    let mut b = UdpTransport::bind(lo, 4 << 20).unwrap();
    let probe = UdpSocket::bind(lo).unwrap();
    let kernel_gro = crate::sys::enable_gro(probe.as_raw_fd()).is_ok();
    assert!(!b.offload.gro && b.offload.gro_later);
    let take = |b: &mut UdpTransport, n: usize| {
        let mut got: Vec<Vec<u8>> = Vec::new();
        let mut waits = 0;
        while got.len() < n && waits < 200 {
            let k = b
                .recv_batch(&mut |d| got.push(d.expect("whole").0.to_vec()))
                .unwrap();
            if k == 0 {
                crate::sys::wait_readable(&[b.fd()], 100);
                waits += 1;
            }
        }
        got
    };
    // short datagrams, one at a time and in a burst: no GRO
    for i in 0..20u8 {
        let d = [i; 100];
        a.send(Instant::ZERO, b.local_addr(), &d).unwrap();
        assert_eq!(take(&mut b, 1), vec![d.to_vec()]);
    }
    let shorts = send_train(&mut a, b.local_addr(), 10, 100);
    assert_eq!(take(&mut b, 10), shorts);
    assert!(
        !b.offload.gro && b.offload.gro_later,
        "short datagrams asked for GRO"
    );
    // a train of large ones: each whole, in order; GRO on after it
    let first = send_train(&mut a, b.local_addr(), 10, 1400);
    assert_eq!(take(&mut b, 10), first, "the train before GRO");
    assert!(
        !b.offload.gro_later,
        "a burst of large datagrams did not ask"
    );
    assert_eq!(b.offload.gro, kernel_gro);
    let second = send_train(&mut a, b.local_addr(), 10, 1400);
    let got = take(&mut b, 10);
    assert!(got.iter().all(|d| d.len() == 1400), "a merged datagram");
    assert_eq!(got, second, "the train after GRO");
}

/// A receive asked to stop after a datagram (`recv_batch_until`) keeps the
/// rest of its batch, a GRO train's segments included: the endpoint is
/// told not to sleep (`flush_due`, `readable`), and the next receive
/// hands them on, in order, before it reads the socket again.
#[test]
fn a_stopped_receive_keeps_the_rest_of_its_batch_for_the_next() {
    let lo: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let mut a = UdpTransport::bind(lo, 4 << 20).unwrap();
    let mut b = UdpTransport::bind(lo, 4 << 20).unwrap();
    let peer = UdpSocket::bind(lo).unwrap();
    let now = Instant(5);
    // (each datagram told by its first byte and length: short messages)
    let take = |b: &mut UdpTransport, stop_after: usize| {
        let mut got: Vec<(u8, usize)> = Vec::new();
        b.recv_batch_until(&mut |d| {
            let d = d.expect("whole").0;
            got.push((d[0], d.len()));
            got.len() == stop_after
        })
        .unwrap();
        got
    };
    let told = |v: &[Vec<u8>]| v.iter().map(|d| (d[0], d.len())).collect::<Vec<_>>();
    // lone datagrams, all queued before one batch reads them
    b.want = RECV_BATCH;
    let lone: Vec<Vec<u8>> = (0..6u8).map(|i| vec![i; 200 + i as usize]).collect();
    let lone_of = told(&lone);
    for d in &lone {
        peer.send_to(d, b.local_addr()).unwrap();
    }
    crate::sys::wait_readable(&[b.fd()], 5000);
    assert_eq!(b.flush_due(now), None);
    assert_eq!(take(&mut b, 2), lone_of[..2], "stopped after the second");
    assert_eq!(b.flush_due(now), Some(now), "kept: no sleep");
    assert!(b.readable());
    // one more in the socket: the kept ones come first, on their own
    peer.send_to(b"late", b.local_addr()).unwrap();
    assert_eq!(take(&mut b, 1), lone_of[2..3]);
    assert_eq!(take(&mut b, 0), lone_of[3..], "the rest, in order");
    assert_eq!(b.flush_due(now), None, "nothing kept");
    crate::sys::wait_readable(&[b.fd()], 5000);
    assert_eq!(take(&mut b, 0), [(b'l', 4)]);
    // a GRO train stopped inside: its next segments, then what follows
    let fd = b.fd();
    b.offload.start_gro(fd);
    b.want = RECV_BATCH;
    let train = told(&send_train(&mut a, b.local_addr(), 5, 1400));
    let more = told(&send_train(&mut a, b.local_addr(), 1, 900));
    crate::sys::wait_readable(&[b.fd()], 5000);
    assert_eq!(take(&mut b, 2), train[..2]);
    assert_eq!(b.flush_due(now), Some(now));
    let mut rest = take(&mut b, 0);
    while rest.len() < 4 {
        crate::sys::wait_readable(&[b.fd()], 1000);
        rest.extend(take(&mut b, 0));
    }
    assert_eq!(rest[..3], train[2..], "the train's segments after the stop");
    assert_eq!(rest[3..], more[..]);
}
