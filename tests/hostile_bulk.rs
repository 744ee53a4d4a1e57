//! Corrupted bulk packets over a real socket: a peer with an association
//! of its own (its own address, a real handshake) sends Long requests of
//! 60,000 bytes (one datagram) and of 70,000 (two fragments) into the
//! segment of an endpoint, each first in copies with one bit flipped
//! (header, payload at the edges of the CRC32C's 64- and 256-byte folding
//! steps and between them, trailer), then as it should be. No flipped copy
//! may run a handler or write a byte of the segment (the long packet's
//! CRC32C, folded with VPCLMULQDQ where the CPU has it, must refuse every
//! one), and the true ones must land whole, once each.

mod common;

use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ramp::am::{self, handler, BundleMode, Data, EndpointName, SegmentMemory, VecSegment};
use ramp::wire::{self, Category, Common, Integrity, MsgKind, MsgMeta};

const TAG: u64 = 0x5eed;
const I: Integrity = Integrity::Crc32c;
const H: u8 = 20;
const SEG: usize = 131_072;
const ONE: usize = 60_000;
const TWO: usize = 70_000;
const FIRST: usize = 40_000;

/// What the handler saw: argument, offset, length, every byte equal to
/// the argument.
type Run = (u32, usize, usize, bool);

/// A DATA packet on the request channel: `frag` of a Long request of
/// `msg_len` bytes for handler `H` (argument `arg`) into offset `dest`.
fn long_frag(
    vtag: u64,
    seq: u32,
    arg: u32,
    dest: u64,
    msg_len: usize,
    off: usize,
    frag: &[u8],
) -> Vec<u8> {
    let c = Common {
        vtag,
        channel: wire::CHANNEL_REQUEST,
        seq,
        ..Default::default()
    };
    let mut m = MsgMeta::new(MsgKind::User, Category::Long, H, &[arg]);
    m.tag = TAG;
    m.dest_offset = dest;
    let mut d = Vec::new();
    wire::encode_data(&mut d, &I, &c, &m, msg_len as u32, off as u32, frag);
    d
}

/// Copies of `good` with one bit flipped: in the header, across the
/// payload (which starts at `head`) and in the trailer.
fn flipped(good: &[u8], head: usize) -> Vec<Vec<u8>> {
    let body = good.len() - 4 - head;
    let mut at = vec![20, 30, head - 1];
    for p in [
        0,
        1,
        63,
        64,
        255,
        256,
        257,
        4095,
        body / 2,
        body - 256,
        body - 17,
        body - 1,
    ] {
        at.push(head + p);
    }
    at.extend([good.len() - 4, good.len() - 1]);
    at.iter()
        .enumerate()
        .map(|(i, &p)| {
            let mut b = good.to_vec();
            b[p] ^= 1 << (i % 8);
            b
        })
        .collect()
}

#[test]
fn flipped_bits_in_long_packets_never_reach_the_segment() {
    let _watchdog = common::watchdog(
        "hostile_bulk::flipped_bits_in_long_packets_never_reach_the_segment",
        Duration::from_secs(120),
    );
    am::init().unwrap();
    let b = am::allocate_bundle(BundleMode::Seq).unwrap();
    let e = am::allocate_endpoint(&b).unwrap();
    let seg = VecSegment::new(SEG);
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
    e.set_tag(TAG);
    e.map(0, EndpointName::from_addr(s.local_addr().unwrap()), TAG)
        .unwrap();
    e.set_expected_resources(1, 8).unwrap();
    e.set_segment(Some(seg.clone()));
    let runs: Arc<Mutex<Vec<Run>>> = Arc::default();
    let r = runs.clone();
    let seg_in = seg.clone();
    e.set_handler(
        H,
        handler(move |a| {
            let Data::Long { addr, len } = a.data else {
                panic!("not a long message");
            };
            let snap = seg_in.snapshot();
            let off = addr - seg_in.base();
            let whole = snap[off..off + len].iter().all(|&x| x == a.args[0] as u8);
            r.lock().unwrap().push((a.args[0], off, len, whole));
        }),
    );
    let others = Arc::new(AtomicU64::new(0));
    for h in [0u8, H + 1, H ^ 1, H ^ 2] {
        let o = others.clone();
        e.set_handler(
            h,
            handler(move |_| {
                o.fetch_add(1, Ordering::SeqCst);
            }),
        );
    }
    let to = e.addr();
    // What the endpoint did so far, published after each of its polls:
    // handlers run, and packets received (each datagram the peer sends is
    // one packet, counted whether it is taken or dropped). The peer sends
    // a datagram only once the endpoint has taken every earlier one: a
    // 60 KB datagram waits in the socket's buffer, which holds only a few
    // of them; one the kernel dropped would not be tested.
    let handled = Arc::new(AtomicU64::new(0));
    let received = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let (hd, rx, dn) = (handled.clone(), received.clone(), done.clone());
    let sender = std::thread::spawn(move || {
        let (theirs, mut sent) = common::wire_handshake(&s, to, 0x0bad_f00d_0bad_f00d, &|| {});
        s.set_nonblocking(true).unwrap();
        let send = |d: &[u8], sent: &mut u64| {
            while rx.load(Ordering::SeqCst) < *sent {
                std::thread::yield_now();
            }
            s.send_to(d, to).unwrap();
            *sent += 1;
        };
        let head = wire::DATA_HEADER_LEN + 4;
        let mut sent_bad = 0u64;
        // one datagram: 60,000 bytes of 1 at offset 0
        let good = long_frag(theirs, 0, 1, 0, ONE, 0, &[1u8; ONE]);
        for bad in flipped(&good, head) {
            send(&bad, &mut sent);
            sent_bad += 1;
        }
        while hd.load(Ordering::SeqCst) < 1 {
            send(&good, &mut sent);
            // taken: then its handler ran in that poll, or it is to run
            while rx.load(Ordering::SeqCst) < sent {
                std::thread::yield_now();
            }
        }
        // two fragments: 70,000 bytes of 2 at offset 60,000; the second
        // fragment flipped first
        let a = long_frag(theirs, 1, 2, ONE as u64, TWO, 0, &[2u8; FIRST]);
        let z = long_frag(theirs, 2, 2, ONE as u64, TWO, FIRST, &[2u8; TWO - FIRST]);
        send(&a, &mut sent);
        for bad in flipped(&z, head) {
            send(&bad, &mut sent);
            sent_bad += 1;
        }
        while hd.load(Ordering::SeqCst) < 2 {
            send(&a, &mut sent);
            send(&z, &mut sent);
            while rx.load(Ordering::SeqCst) < sent {
                std::thread::yield_now();
            }
        }
        dn.store(true, Ordering::SeqCst);
        (sent_bad, sent)
    });
    let publish = || {
        handled.store(runs.lock().unwrap().len() as u64, Ordering::SeqCst);
        received.store(e.statistics().packets_received, Ordering::SeqCst);
    };
    common::waiting_for("the sender's handshake and messages");
    while !done.load(Ordering::SeqCst) {
        b.poll().unwrap();
        publish();
    }
    let (sent_bad, sent) = sender.join().unwrap();
    // every datagram sent taken (none waits in the socket to run later)
    common::waiting_for("the last datagrams to be taken");
    while e.statistics().packets_received < sent {
        b.poll().unwrap();
    }
    for _ in 0..100 {
        b.poll().unwrap();
    }
    let runs = runs.lock().unwrap().clone();
    assert_eq!(
        runs,
        vec![(1, 0, ONE, true), (2, ONE, TWO, true)],
        "each true message once, whole, no flipped one"
    );
    assert_eq!(others.load(Ordering::SeqCst), 0, "another handler ran");
    let snap = seg.snapshot();
    assert!(snap[..ONE].iter().all(|&x| x == 1));
    assert!(snap[ONE..ONE + TWO].iter().all(|&x| x == 2));
    assert!(
        snap[ONE + TWO..].iter().all(|&x| x == 0),
        "written past the messages"
    );
    let st = e.statistics();
    // the flips in the payload and trailer fail the checksum (those in the
    // header may fail an earlier check)
    assert!(
        st.corrupt_dropped >= sent_bad - 6,
        "{sent_bad} flipped, {st:?}"
    );
}
