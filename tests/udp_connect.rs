//! Connected sends over real sockets (`net/udp_conns.rs`, `proto/alias.rs`)
//! without a packet MAC (CRC32C alone): nothing but its address proves
//! where a packet comes from, so an association's packets leave from the
//! endpoint's name until the peer took the connected socket's port as
//! the endpoint's, announced by an ALIAS from the name. A taking from
//! anywhere else, or for another port, changes nothing. Then the packets
//! leave from the port, and an ABORT sent back there (the peer restarted)
//! ends the association at once (its request comes back) and the next
//! request opens a new one from the name. The peer here is a plain socket
//! speaking the wire (`ramp::wire`), as a restarted process would. (The
//! endpoint's peer timeout and retransmission limit are far beyond the
//! test's watchdog: the request that comes back can only have been ended
//! by the ABORT, whatever the speed.)

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ramp::am::{self, handler, BundleMode, Message};
use ramp::wire::{self, Integrity, Packet};

const TAG: u64 = 77;
const I: Integrity = Integrity::Crc32c;

#[test]
fn without_a_mac_packets_leave_from_an_announced_port_once_taken_and_an_abort_there_ends_the_association(
) {
    let _watchdog = common::watchdog(
        "udp_connect::without_a_mac_packets_leave_from_an_announced_port",
        Duration::from_secs(60),
    );
    let mut cfg = ramp::config::Config::from_lookup(|_| None).unwrap();
    cfg.proto.peer_timeout = 3_600_000 * ramp::time::MILLIS;
    cfg.proto.retry_limit = 1_000_000;
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e = am::allocate_endpoint_with(&b, &cfg).unwrap();
    let peer = UdpSocket::bind(SocketAddr::new(e.addr().ip(), 0)).unwrap();
    peer.set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let pa = peer.local_addr().unwrap();
    e.set_tag(TAG);
    e.map(0, e.name(), TAG).unwrap();
    e.map(1, ramp::am::EndpointName::from_addr(pa), TAG)
        .unwrap();
    let returned = Arc::new(AtomicU64::new(0));
    let r = returned.clone();
    e.set_handler(
        0,
        handler(move |_| {
            r.fetch_add(1, Ordering::SeqCst);
        }),
    );
    e.set_expected_resources(2, 8).unwrap();
    let (theirs, _) = common::wire_handshake(&peer, e.addr(), 0x5eed, &|| b.poll().unwrap());
    e.request(1, &Message::short(10, &[1]), false).unwrap();
    // the request's DATA, and an ALIAS naming a port of its host: both
    // from the endpoint's name
    let mut buf = [0u8; 2048];
    let (mut data, mut port) = (false, None);
    common::waiting_for("the request's DATA and an ALIAS");
    while !data || port.is_none() {
        b.poll().unwrap();
        if let Ok((n, from)) = peer.recv_from(&mut buf) {
            match wire::decode(&I, &buf[..n]) {
                Ok(Packet::Data { common, .. }) => {
                    assert_eq!(common.vtag, 0x5eed);
                    assert_eq!(from, e.addr(), "not taken yet: from the name");
                    data = true;
                }
                Ok(Packet::Alias { vtag, port: p }) => {
                    assert_eq!(vtag, 0x5eed);
                    assert_eq!(from, e.addr(), "an ALIAS comes from the name");
                    assert_ne!(p, e.addr().port());
                    port = Some(p);
                }
                _ => {}
            }
        }
    }
    let port = port.unwrap();
    let conn = SocketAddr::new(e.addr().ip(), port);
    let taken = |p: u16| {
        let mut b = Vec::new();
        wire::encode_alias(&mut b, &I, theirs, true, p);
        b
    };
    // takings that answer nothing asked: from a stranger, for another port;
    // once the endpoint took both (they are the only packets it gets
    // meanwhile), its DATA still leave from the name
    let stranger = UdpSocket::bind(SocketAddr::new(e.addr().ip(), 0)).unwrap();
    let received = e.statistics().packets_received;
    stranger.send_to(&taken(port), e.addr()).unwrap();
    peer.send_to(&taken(port ^ 1), e.addr()).unwrap();
    common::waiting_for("the endpoint to take the two takings");
    while e.statistics().packets_received < received + 2 {
        b.poll().unwrap();
    }
    // (what the peer got before: sent before the takings were taken)
    peer.set_nonblocking(true).unwrap();
    while peer.recv_from(&mut buf).is_ok() {}
    peer.set_nonblocking(false).unwrap();
    e.request(1, &Message::short(10, &[2]), false).unwrap();
    common::waiting_for("DATA after the takings");
    let mut after = 0;
    while after < 2 {
        b.poll().unwrap();
        if let Ok((n, from)) = peer.recv_from(&mut buf) {
            if let Ok(Packet::Data { .. }) = wire::decode(&I, &buf[..n]) {
                assert_eq!(from, e.addr(), "still from the name");
                after += 1;
            }
        }
    }
    // the peer's taking: from now on the association's packets leave
    // from the port (the requests' DATA, resent: the peer acknowledges
    // nothing)
    peer.send_to(&taken(port), e.addr()).unwrap();
    common::waiting_for("DATA from the connected socket's port");
    loop {
        b.poll().unwrap();
        if let Ok((n, from)) = peer.recv_from(&mut buf) {
            if let Ok(Packet::Data { .. }) = wire::decode(&I, &buf[..n]) {
                if from == conn {
                    break;
                }
            }
        }
    }
    // The peer "restarted": it answers the DATA with an ABORT, to the
    // port the DATA came from, as any receiver answers a sender.
    let mut abort = Vec::new();
    wire::encode_abort(&mut abort, &I, theirs);
    peer.send_to(&abort, conn).unwrap();
    // The endpoint reads it there: the association is over, the request
    // comes back at once (not after the peer timeout, resent into a port
    // nobody reads), and the next request opens a new association from
    // the endpoint's name.
    peer.set_nonblocking(true).unwrap();
    common::waiting_for("the requests to come back: the ABORT read at the port");
    while returned.load(Ordering::SeqCst) < 2 {
        b.poll().unwrap();
        std::thread::sleep(Duration::from_micros(100));
    }
    e.request(1, &Message::short(10, &[3]), false).unwrap();
    common::waiting_for("an INIT from the endpoint's name");
    loop {
        b.poll().unwrap();
        if let Ok((n, from)) = peer.recv_from(&mut buf) {
            match wire::decode(&I, &buf[..n]) {
                Ok(Packet::Init { .. }) => {
                    assert_eq!(
                        from,
                        e.addr(),
                        "a handshake leaves from the endpoint's name"
                    );
                    break;
                }
                Ok(Packet::Data { .. } | Packet::More { .. }) => {
                    panic!("DATA in the association the peer ended")
                }
                _ => {}
            }
        }
        std::thread::sleep(Duration::from_micros(100));
    }
}
