//! Remote memory against a peer that sends what ramp never would: chunk
//! headers out of line, lengths that disagree, answers for chunks never
//! asked, from unmapped sources or with the wrong tag; and what a long put
//! or a peer that takes none of its answers leaves queued. Between
//! simulated processes (`sim::World`: whole endpoints on virtual time, a
//! node each), the seeds `sim::seeds` gives; the forged messages are
//! handed to the sender's protocol as they are, past every check of
//! `put`/`get`.

use super::rma_target::{Chunk, CHUNK};
use crate::am::state::region::{REGION_READ, REGION_WRITE};
use crate::am::{Endpoint, SegmentMemory, VecSegment};
use crate::config::Config;
use crate::error::ReturnStatus;
use crate::sim::{seeds, Node, World};
use crate::time::{Nanos, MILLIS};
use crate::wire::{Category, MsgKind, MsgMeta, CHANNEL_REPLY, CHANNEL_REQUEST};

const TAG: u64 = 0x7a9;
/// Virtual time within which an answer a test waits for comes: a few
/// round trips (40 us each) and a handshake, with room to spare.
const SOON: Nanos = 10 * MILLIS;

/// `n` new nodes of `w`, each mapping the first two (index 0 and 1),
/// with datagrams of at most `max_datagram` bytes when given.
fn nodes(w: &World, n: usize, max_datagram: Option<usize>) -> Vec<Node> {
    let mut cfg = Config::from_lookup(|_| None).unwrap();
    if let Some(d) = max_datagram {
        cfg.proto.max_datagram = d;
    }
    let nodes: Vec<Node> = (0..n).map(|_| w.node(&cfg)).collect();
    for e in nodes.iter().map(|n| &n.ep) {
        e.set_tag(TAG);
        e.map(0, nodes[0].ep.name(), TAG).unwrap();
        e.map(1, nodes[1].ep.name(), TAG).unwrap();
        e.set_expected_resources(2, 8).unwrap();
    }
    nodes
}

/// Runs the world until `done`, failing after `limit` of virtual time.
fn until(w: &World, limit: Nanos, what: &str, done: impl FnMut() -> bool) {
    assert!(
        w.run_until(limit, done),
        "not within {limit} ns of virtual time: {what}"
    );
}

/// Sends `meta` + `payload` from `from` to `to` on `channel`, unchecked.
fn raw(from: &Endpoint, to: &Endpoint, channel: u8, meta: MsgMeta, payload: Vec<u8>) {
    let addr = to.addr();
    from.with(|s| s.send_message(s.clock.now(), addr, channel, meta, payload));
}

fn put_chunk(region: u32, total: u64, index: u32) -> Chunk {
    let rel = index as u64 * CHUNK as u64;
    Chunk {
        region,
        notify: None,
        start: 0,
        total,
        index,
        len: (total - rel.min(total)).min(CHUNK as u64) as u32,
    }
}

#[test]
fn malformed_chunks_are_refused_and_write_nothing() {
    for seed in seeds(2) {
        let w = World::seeded(seed);
        let n = nodes(&w, 3, None);
        let e: Vec<_> = n.iter().map(|n| n.ep.clone()).collect();
        let mem = VecSegment::new(1 << 20);
        let r = e[1]
            .register_region(mem.clone(), REGION_READ | REGION_WRITE)
            .unwrap();
        let stale = || e[0].statistics().stale_dropped;
        let send =
            |meta: MsgMeta, payload: Vec<u8>| raw(&e[0], &e[1], CHANNEL_REQUEST, meta, payload);
        let base = stale();
        // the chunk's length argument disagrees with its payload
        let c = put_chunk(r, 100, 0);
        send(c.meta(MsgKind::Put, 900, TAG), vec![1; 99]);
        // arguments missing
        let mut m = c.meta(MsgKind::Put, 901, TAG);
        m.nargs = 3;
        send(m, vec![1; 100]);
        // an offset outside its operation
        let mut m = c.meta(MsgKind::Put, 902, TAG);
        m.dest_offset = 5000;
        send(m, vec![1; 100]);
        // a chunk index past the operation's end
        let mut m = put_chunk(r, 100, 0).meta(MsgKind::Put, 903, TAG);
        m.args[6] = 7;
        send(m, vec![1; 100]);
        // a get that carries bytes
        send(c.meta(MsgKind::Get, 904, TAG), vec![1; 100]);
        // unknown flag bits
        let mut m = c.meta(MsgKind::Put, 905, TAG);
        m.args[1] = 0x80;
        send(m, vec![1; 100]);
        // a put whose notification word lies outside the region
        let mut cn = c;
        cn.notify = Some(((1 << 20) - 2, 1));
        send(cn.meta(MsgKind::Put, 906, TAG), vec![1; 100]);
        // a wrong tag
        send(c.meta(MsgKind::Put, 907, TAG + 1), vec![1; 100]);
        // answers come back for transactions e0 never issued: dropped, counted
        until(&w, SOON, "the refusals", || stale() == base + 8);
        assert!(
            mem.snapshot().iter().all(|&x| x == 0),
            "a refused chunk wrote"
        );
        // from a source e1 has not mapped: refused too
        raw(
            &e[2],
            &e[1],
            CHANNEL_REQUEST,
            c.meta(MsgKind::Put, 908, TAG),
            vec![1; 100],
        );
        until(&w, SOON, "the unmapped source's refusal", || {
            e[2].statistics().stale_dropped == 1
        });
        assert!(mem.snapshot().iter().all(|&x| x == 0));
        // a well-formed one from the mapped peer is performed
        raw(
            &e[0],
            &e[1],
            CHANNEL_REQUEST,
            c.meta(MsgKind::Put, 909, TAG),
            vec![3; 100],
        );
        until(&w, SOON, "the good chunk", || mem.snapshot()[99] == 3);
        // its answer too: no operation of e0's
        until(&w, SOON, "the good chunk's answer dropped", || {
            stale() == base + 9
        });
    }
}

#[test]
fn forged_answers_do_not_complete_or_corrupt_an_operation() {
    /// How long e1 is kept off the CPU while the forged answers come.
    const ASLEEP: Nanos = 2 * SOON;
    for seed in seeds(2) {
        let w = World::seeded(seed);
        let n = nodes(&w, 3, None);
        let e: Vec<_> = n.iter().map(|n| n.ep.clone()).collect();
        let mem = VecSegment::new(1 << 20);
        let r = e[1].register_region(mem.clone(), REGION_READ).unwrap();
        mem.write(0, &[9; 64]);
        // associations first
        let warm = e[0].put(1, r, 0, &[1], None, true).unwrap();
        assert_eq!(e[0].wait_op(warm).unwrap(), ReturnStatus::BadSegOff as u8);
        let warm = e[2].put(0, 0, 0, &[1], None, true).unwrap();
        // e0 has not mapped e2
        assert_eq!(e[2].wait_op(warm).unwrap(), ReturnStatus::BadEndpoint as u8);
        // an operation of e0 that e1 does not answer yet: its process is
        // off the CPU (what reaches it waits)
        w.deschedule(n[1].index, ASLEEP);
        let wakes = w.now().plus(ASLEEP);
        let dst = VecSegment::new(64);
        let op = e[0].get(1, r, 0, dst.clone(), true).unwrap();
        let id = op as u32;
        let answer = |index: u32, status: u8, data: Vec<u8>| {
            let meta = MsgMeta {
                txn: id,
                status,
                ..MsgMeta::new(MsgKind::GetReply, Category::Long, 0, &[index])
            };
            (meta, data)
        };
        // from a third endpoint: not the operation's peer
        let (m, d) = answer(0, 0, vec![6; 64]);
        raw(&e[2], &e[0], CHANNEL_REPLY, m, d);
        // a chunk index the operation does not have
        let (m, d) = answer(5, 0, vec![6; 64]);
        raw(&e[1], &e[0], CHANNEL_REPLY, m, d);
        // an RmaDone for a get
        let m = MsgMeta {
            txn: id,
            ..MsgMeta::new(MsgKind::RmaDone, Category::Short, 0, &[0])
        };
        raw(&e[1], &e[0], CHANNEL_REPLY, m, Vec::new());
        let drop0 = e[0].statistics().stale_dropped;
        // e1 sleeps: its answer cannot come first
        until(&w, ASLEEP / 2, "the forged answers dropped", || {
            e[0].statistics().stale_dropped == drop0 + 3
        });
        assert_eq!(dst.snapshot(), vec![0; 64], "a forged answer wrote");
        assert_eq!(e[0].wait_op(op).unwrap(), 0);
        assert!(w.now() > wakes, "answered once e1 ran");
        assert_eq!(dst.snapshot(), vec![9; 64]);
        // a reply of the wrong length fails the operation, writing nothing
        let dst2 = VecSegment::new(64);
        let op2 = e[0].get(1, r, 0, dst2.clone(), true).unwrap();
        let (m, d) = answer(0, 0, vec![6; 63]);
        let m = MsgMeta {
            txn: op2 as u32,
            ..m
        };
        raw(&e[1], &e[0], CHANNEL_REPLY, m, d);
        // it arrives before e1's own answer (same channel, sent first)
        assert_eq!(e[0].wait_op(op2).unwrap(), ReturnStatus::BadLength as u8);
        assert_eq!(dst2.snapshot(), vec![0; 64]);
        until(&w, SOON, "e1's late answer dropped", || {
            e[0].statistics().stale_dropped == drop0 + 4
        });
        assert_eq!(dst2.snapshot(), vec![0; 64]);
    }
}

#[test]
fn a_peer_that_does_not_take_its_gets_holds_a_bounded_backlog() {
    /// How long e0 takes no packet (its process off the CPU).
    const ASLEEP: Nanos = 100 * MILLIS;
    for seed in seeds(2) {
        let w = World::seeded(seed);
        // small datagrams: one answer is ~180 fragments
        let n = nodes(&w, 2, Some(1500));
        let e: Vec<_> = n.iter().map(|n| n.ep.clone()).collect();
        let mem = VecSegment::new(CHUNK);
        let r = e[1].register_region(mem.clone(), REGION_READ).unwrap();
        // associations first
        let warm = e[0].get(1, r, 0, VecSegment::new(1), true).unwrap();
        assert_eq!(e[0].wait_op(warm).unwrap(), 0);
        let gets = 60; // 60 x 255 KiB answers, ~180 datagrams each
        for _ in 0..gets {
            e[0].get(1, r, 0, VecSegment::new(CHUNK), false).unwrap();
        }
        // e0 stops taking packets; e1 runs on (answers, resends)
        w.deschedule(n[0].index, ASLEEP);
        let to = e[0].addr();
        let mut most = 0;
        w.run_until(ASLEEP, || {
            most = most.max(e[1].with(|s| s.proto.unfinished_to(&to)));
            false
        });
        let one_chunk = CHUNK.div_ceil(e[1].with(|s| s.proto.fragment_capacity(1)));
        // in flight (the window), queued behind it up to the answer backlog,
        // and the answer that crossed it
        let window = e[1].with(|s| s.proto.config().window);
        let bound = window + super::rma_target::ANSWER_BACKLOG + one_chunk;
        assert!(
            most <= bound,
            "{most} fragments queued for a peer that takes none (bound {bound})"
        );
        assert!(
            most >= window + super::rma_target::ANSWER_BACKLOG,
            "the test did not fill the backlog"
        );
        // once e0 takes them again, everything completes
        until(&w, 1000 * MILLIS, "every get", || e[0].rma_counts().1 == 0);
        e[0].fence().unwrap();
    }
}

#[test]
fn a_long_put_returns_with_a_bounded_backlog_and_arrives_intact() {
    for seed in seeds(2) {
        let w = World::seeded(seed);
        let n = nodes(&w, 2, None);
        let e: Vec<_> = n.iter().map(|n| n.ep.clone()).collect();
        let chunks = 40; // 10 MiB, far more fragments than the window
        let mem = VecSegment::new(chunks * CHUNK);
        let r = e[1].register_region(mem.clone(), REGION_WRITE).unwrap();
        let warm = e[0].put(1, r, 0, &[1], None, true).unwrap();
        assert_eq!(e[0].wait_op(warm).unwrap(), 0);
        let src: Vec<u8> = (0..chunks * CHUNK).map(|i| (i % 251) as u8).collect();
        let op = e[0].put(1, r, 0, &src, None, true).unwrap();
        // it waited before each chunk while 4 fragments were queued: on
        // return at most those and the last chunk's wait behind the window
        let to = e[1].addr();
        let queued = e[0].with(|s| s.proto.queued_fragments(&to, CHANNEL_REQUEST));
        let one_chunk = CHUNK.div_ceil(e[0].with(|s| s.proto.fragment_capacity(11)));
        assert!(
            queued < crate::am::messages::request::COPY_BACKLOG + one_chunk,
            "{queued} fragments queued behind the window on return"
        );
        until(&w, SOON, "the put", || {
            e[0].with(|s| {
                s.rma
                    .ops
                    .get(&(op as u32))
                    .is_some_and(|o| o.remaining == 0)
            })
        });
        assert_eq!(e[0].wait_op(op).unwrap(), 0);
        assert!(mem.snapshot() == src, "the bytes differ");
    }
}

#[test]
fn a_whole_chunk_is_four_datagrams_of_the_largest_size() {
    let w = World::seeded(1);
    let n = nodes(&w, 2, None);
    let cap = n[0].ep.with(|s| s.proto.fragment_capacity(11));
    assert_eq!(CHUNK.div_ceil(cap), 4, "CRC32C: {cap} bytes a datagram");
    // under the packet MAC the trailer is longer
    let max = crate::proto::ProtoConfig::default().max_datagram;
    let mac_cap = max - crate::wire::DATA_HEADER_LEN - 4 * 11 - crate::wire::MAC_TRAILER_LEN;
    assert_eq!(
        CHUNK.div_ceil(mac_cap),
        4,
        "MAC: {mac_cap} bytes a datagram"
    );
    assert_eq!(
        cap - mac_cap,
        crate::wire::MAC_TRAILER_LEN - crate::wire::CRC_LEN
    );
}
