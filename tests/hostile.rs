//! A hostile sender on the same network, over real sockets: a live pair of
//! endpoints exchanges requests while a plain UDP socket (another port: an
//! unprivileged process cannot spoof a source address) sends what the
//! findings of the hostile-sender review sent, forged with `ramp::wire`:
//! returned messages and Long replies with guessed tags (findings 1, 3),
//! 44-byte ACKs with random tags (2), requests from an unknown address (5),
//! garbage; and, through an association of its own (it can prove its own
//! address), returned messages, replies and requests with valid tags, and
//! the replay of its cookie from yet another port. No handler may run for a
//! forged packet, nothing may be written into a segment, nothing may be
//! lost or delivered twice, and the real exchange must complete.

mod common;
#[path = "common/forge.rs"]
mod forge;

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use forge::I;
use ramp::am::{self, handler, BundleMode, Data, Message, VecSegment};
use ramp::wire::{self, Category, MsgKind, MsgMeta, Packet};

const TAG: u64 = 77;

/// A xorshift for the forger's guesses.
struct Guess(u64);

impl Guess {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn data(vtag: u64, ch: u8, seq: u32, meta: &MsgMeta, payload: &[u8]) -> Vec<u8> {
    forge::data(&forge::header(vtag, ch, 0, seq), meta, payload)
}

/// A later fragment (the short header: offset and length alone) at `off`.
fn more(vtag: u64, ch: u8, seq: u32, off: u32, payload: &[u8]) -> Vec<u8> {
    let mut d = Vec::new();
    wire::encode_more(&mut d, &I, &forge::header(vtag, ch, 0, seq), off, payload);
    d
}

fn answer_meta(kind: MsgKind, cat: Category, txn: u32) -> MsgMeta {
    let mut m = MsgMeta::new(kind, cat, 11, &[0xBAD]);
    m.txn = txn;
    m.tag = TAG;
    m.status = 5; // any return status
    m.returned_request = kind == MsgKind::Returned;
    m
}

/// Everything the forger sends to `to` without an association.
fn blind_round(s: &UdpSocket, to: SocketAddr, g: &mut Guess) {
    for txn in 1..=4 {
        // finding 1: a returned message, tag 0 ("destination id 0")
        let m = answer_meta(MsgKind::Returned, Category::Short, txn);
        let _ = s.send_to(&data(0, wire::CHANNEL_REPLY, 0, &m, &[]), to);
        // finding 3: a Long reply into the segment, a guessed tag
        let m = answer_meta(MsgKind::User, Category::Long, txn);
        let _ = s.send_to(&data(g.next(), wire::CHANNEL_REPLY, 0, &m, &[0xEE; 64]), to);
        let m = answer_meta(MsgKind::AutoReply, Category::Short, txn);
        let _ = s.send_to(&data(g.next(), wire::CHANNEL_REPLY, 0, &m, &[]), to);
    }
    // finding 2: 44-byte ACKs with random tags
    for _ in 0..4 {
        let c = forge::header(g.next(), (g.next() & 1) as u8, 0, g.next() as u32);
        let mut a = Vec::new();
        wire::encode_ack(&mut a, &I, &c, g.next());
        assert_eq!(a.len(), 44);
        let _ = s.send_to(&a, to);
    }
    // later fragments (short headers) with guessed tags, no first
    for off in [1, 64, 4096] {
        let ch = (g.next() & 1) as u8;
        let _ = s.send_to(&more(g.next(), ch, g.next() as u32, off, &[0xEE; 64]), to);
    }
    // finding 5: a request from an address nobody mapped
    let mut m = MsgMeta::new(MsgKind::User, Category::Short, 10, &[999_999]);
    m.tag = TAG;
    let _ = s.send_to(&data(g.next(), wire::CHANNEL_REQUEST, 0, &m, &[]), to);
    // garbage, and a packet of the wrong version
    let junk: Vec<u8> = (0..(g.next() % 200) as usize)
        .map(|_| g.next() as u8)
        .collect();
    let _ = s.send_to(&junk, to);
    let _ = s.send_to(&[0x52, 0x41, 1, 1, 0, 0, 0, 0], to);
}

/// Runs the handshake from `s` (with a read timeout) with `to`, sending
/// again after each timeout for as long as it takes (the test's watchdog
/// limits it): returns (our tag, its tag) and the COOKIE_ECHO sent.
fn handshake(s: &UdpSocket, to: SocketAddr) -> (u64, u64, Vec<u8>) {
    let my_tag = 0x0123_4567_89ab_cdef;
    let mut init = Vec::new();
    wire::encode_init(&mut init, &I, my_tag);
    let mut buf = [0u8; 2048];
    loop {
        s.send_to(&init, to).unwrap();
        let Ok((n, from)) = s.recv_from(&mut buf) else {
            continue;
        };
        assert!(n <= init.len(), "an INIT_ACK larger than the INIT");
        if from != to {
            continue;
        }
        if let Ok(Packet::InitAck {
            vtag,
            resp_tag,
            cookie,
            ..
        }) = wire::decode(&I, &buf[..n])
        {
            assert_eq!(vtag, my_tag);
            let mut echo = Vec::new();
            wire::encode_cookie_echo(&mut echo, &I, resp_tag, cookie);
            loop {
                s.send_to(&echo, to).unwrap();
                if let Ok((n, _)) = s.recv_from(&mut buf) {
                    if let Ok(Packet::CookieAck { vtag }) = wire::decode(&I, &buf[..n]) {
                        assert_eq!(vtag, my_tag);
                        return (my_tag, resp_tag, echo);
                    }
                }
            }
        }
    }
}

/// What the forger received, by kind.
#[derive(Default, Debug)]
struct Received {
    aborts: u64,
    init_acks: u64,
    data: u64,
    other: u64,
    max_len: usize,
}

fn drain(s: &UdpSocket, r: &mut Received) {
    let mut buf = [0u8; 70_000];
    while let Ok((n, _)) = s.recv_from(&mut buf) {
        r.max_len = r.max_len.max(n);
        match wire::decode(&I, &buf[..n]) {
            Ok(Packet::Abort { .. }) => r.aborts += 1,
            Ok(Packet::InitAck { .. }) => r.init_acks += 1,
            Ok(Packet::Data { .. } | Packet::More { .. }) => r.data += 1,
            _ => r.other += 1,
        }
    }
}

#[test]
fn forged_packets_change_nothing_while_a_real_exchange_completes() {
    let _watchdog = common::watchdog(
        "hostile::forged_packets_change_nothing_while_a_real_exchange_completes",
        Duration::from_secs(120),
    );
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e0 = am::allocate_endpoint(&b).unwrap();
    let e1 = am::allocate_endpoint(&b).unwrap();
    let segs = [VecSegment::new(4096), VecSegment::new(4096)];
    for (e, seg) in [&e0, &e1].into_iter().zip(&segs) {
        e.set_tag(TAG);
        e.map(0, e0.name(), TAG).unwrap();
        e.map(1, e1.name(), TAG).unwrap();
        e.set_expected_resources(2, 8).unwrap();
        e.set_segment(Some(seg.clone()));
    }
    const N: usize = 300;
    let handled: Arc<Vec<AtomicU64>> = Arc::new((0..N).map(|_| AtomicU64::new(0)).collect());
    let replied: Arc<Vec<AtomicU64>> = Arc::new((0..N).map(|_| AtomicU64::new(0)).collect());
    let bad = Arc::new(AtomicU64::new(0));
    let h = handled.clone();
    let bad1 = bad.clone();
    e1.set_handler(
        10,
        handler(move |a| {
            match h.get(a.args[0] as usize) {
                Some(c) => {
                    c.fetch_add(1, Ordering::SeqCst);
                }
                None => {
                    bad1.fetch_add(1, Ordering::SeqCst);
                }
            }
            assert!(matches!(a.data, Data::Medium(_)));
            am::reply(a.token, &Message::short(11, &[a.args[0]])).unwrap();
        }),
    );
    let r = replied.clone();
    let bad0 = bad.clone();
    e0.set_handler(
        11,
        handler(move |a| match r.get(a.args[0] as usize) {
            Some(c) => {
                c.fetch_add(1, Ordering::SeqCst);
            }
            None => {
                bad0.fetch_add(1, Ordering::SeqCst);
            }
        }),
    );
    let returned = Arc::new(AtomicU64::new(0));
    for e in [&e0, &e1] {
        let rt = returned.clone();
        e.set_handler(
            0,
            handler(move |a| {
                eprintln!("handler 0 ran: {:?}", a.args);
                rt.fetch_add(1, Ordering::SeqCst);
            }),
        );
    }
    let (a0, a1) = (e0.addr(), e1.addr());

    // The forger, in its own thread, until the exchange is over: it tells
    // the test when it holds its association, how many rounds it sent, and
    // whether an INIT_ACK and an ABORT came back to it.
    let stop = Arc::new(AtomicBool::new(false));
    let associated = Arc::new(AtomicBool::new(false));
    let rounds = Arc::new(AtomicU64::new(0));
    let answered = Arc::new(AtomicBool::new(false));
    let (st, assoc, rnds, ans) = (
        stop.clone(),
        associated.clone(),
        rounds.clone(),
        answered.clone(),
    );
    let forger = std::thread::spawn(move || {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        let mut g = Guess(0x9e37_79b9_7f4a_7c15);
        // an association of its own with e0 (its own address: legitimate)
        let (mine, theirs, echo) = handshake(&s, a0);
        assoc.store(true, Ordering::SeqCst);
        // its cookie replayed from another port: refused, no COOKIE_ACK
        let other = UdpSocket::bind("127.0.0.1:0").unwrap();
        other.set_nonblocking(true).unwrap();
        other.send_to(&echo, a0).unwrap();
        s.set_nonblocking(true).unwrap();
        let mut got = Received::default();
        let mut blind = 0u64;
        let mut seq = 0u32;
        let mut inits = 0u64;
        while !st.load(Ordering::SeqCst) {
            for to in [a0, a1] {
                blind_round(&s, to, &mut g);
                blind += 1;
            }
            // with valid tags, through its association with e0: answers
            // to e0's transactions (guessed)
            for txn in 1..=8u32 {
                for (kind, cat, p) in [
                    (MsgKind::Returned, Category::Short, &[][..]),
                    (MsgKind::AutoReply, Category::Short, &[][..]),
                    (MsgKind::User, Category::Long, &[0xEE; 64][..]),
                ] {
                    let m = answer_meta(kind, cat, txn);
                    let _ = s.send_to(&data(theirs, wire::CHANNEL_REPLY, seq, &m, p), a0);
                    seq += 1;
                }
                // a Long reply in two fragments, the second with the short
                // header; then a later fragment of no message, and one
                // past its message's end
                let m = answer_meta(MsgKind::User, Category::Long, txn);
                let reply = wire::CHANNEL_REPLY;
                let first = |seq, msg_len| {
                    let c = forge::header(theirs, reply, 0, seq);
                    let mut d = Vec::new();
                    wire::encode_data(&mut d, &I, &c, &m, msg_len, 0, &[0xEE; 64]);
                    d
                };
                for d in [
                    first(seq, 128),
                    more(theirs, reply, seq + 1, 64, &[0xEE; 64]),
                    more(theirs, reply, seq + 2, 4096, &[0xEE; 64]),
                    first(seq + 3, 96),
                    more(theirs, reply, seq + 4, 64, &[0xEE; 200]),
                ] {
                    let _ = s.send_to(&d, a0);
                }
                seq += 5;
            }
            // an INIT now and then
            let mut init = Vec::new();
            wire::encode_init(&mut init, &I, g.next() | 1);
            let _ = s.send_to(&init, a1);
            inits += 1;
            drain(&s, &mut got);
            if got.init_acks >= 1 && got.aborts >= 1 {
                ans.store(true, Ordering::SeqCst);
            }
            rnds.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(50));
        drain(&s, &mut got);
        let mut on_other = Received::default();
        drain(&other, &mut on_other);
        assert_ne!(mine, theirs);
        (got, on_other, blind, inits)
    });

    // The forger's handshake is answered while the endpoints poll.
    common::waiting_for("the forger's own association");
    while !associated.load(Ordering::SeqCst) {
        b.poll().unwrap();
    }
    // The real exchange under fire: e0 asks e1 N times (medium, to be
    // checked), polling.
    for k in 0..N {
        let len = (k * 37) % 500;
        e0.request(
            1,
            &Message::medium(10, &[k as u32], &vec![k as u8; len]),
            false,
        )
        .unwrap();
        if k % 10 == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    common::waiting_for("the real exchange to finish");
    while replied
        .iter()
        .map(|c| c.load(Ordering::SeqCst))
        .sum::<u64>()
        < N as u64
    {
        b.poll().unwrap();
    }
    // a little longer under fire: a few more of the forger's rounds, until
    // both endpoints dropped forgeries and the forger was answered (an
    // INIT_ACK, an ABORT) as it may be
    let more = rounds.load(Ordering::SeqCst) + 3;
    common::waiting_for("three more rounds of forgeries, dropped by both, answered");
    while rounds.load(Ordering::SeqCst) < more
        || !answered.load(Ordering::SeqCst)
        || e0.statistics().stale_dropped == 0
        || e1.statistics().stale_dropped == 0
    {
        b.poll().unwrap();
    }
    stop.store(true, Ordering::SeqCst);
    let (got, on_other, blind, inits) = forger.join().unwrap();
    for _ in 0..100 {
        b.poll().unwrap();
    }
    eprintln!("forger: {blind} blind rounds, {inits} INITs; received {got:?}");

    for k in 0..N {
        assert_eq!(handled[k].load(Ordering::SeqCst), 1, "request {k}");
        assert_eq!(replied[k].load(Ordering::SeqCst), 1, "reply {k}");
    }
    assert_eq!(bad.load(Ordering::SeqCst), 0, "a handler ran for a forgery");
    assert_eq!(returned.load(Ordering::SeqCst), 0, "handler 0 ran");
    for s in &segs {
        assert!(
            s.snapshot().iter().all(|&x| x == 0),
            "a segment was written"
        );
    }
    // What came back to the forger: ABORTs and INIT_ACKs no larger than
    // what provoked them, ACKs of what it sent in its association, never a
    // DATA (finding 5: a request from an address without an association is
    // not refused with a DATA). Its replayed cookie got nothing.
    assert_eq!(got.data, 0, "DATA sent to an address: {got:?}");
    assert!(got.max_len <= wire::INIT_ACK_LEN + wire::CRC_LEN, "{got:?}");
    assert!(got.init_acks >= 1 && got.aborts >= 1, "{got:?}");
    assert_eq!(
        on_other.aborts + on_other.data + on_other.init_acks + on_other.other,
        0
    );
    let s0 = e0.statistics();
    let s1 = e1.statistics();
    assert!(s0.stale_dropped > 0 && s1.stale_dropped > 0);
    assert_eq!(s0.returned_messages + s1.returned_messages, 0);
}
