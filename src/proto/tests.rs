//! Unit tests of `Protocol` that look at its private state: sequence numbers
//! across the wrap, the timer queue, the reordering timer. Their nodes start
//! with an association in place (`associate`); the handshake itself is
//! tested in `tests/proto_sim_assoc.rs`.

use super::*;
use crate::time::{MICROS, MILLIS};
use crate::wire::{Category, MsgKind, CHANNEL_REQUEST};

fn meta(k: u32) -> MsgMeta {
    MsgMeta::new(MsgKind::User, Category::Short, 1, &[k])
}

/// Node 0 and node 1, associated (tags 0xA0 and 0xB1); each calls the
/// other by its number.
pub(super) fn pair() -> [Protocol<u32>; 2] {
    pair_with(ProtoConfig::default())
}

/// `pair` with configuration `cfg`.
pub(super) fn pair_with(cfg: ProtoConfig) -> [Protocol<u32>; 2] {
    let mut n = [
        Protocol::new(cfg.clone(), &[0x10; 32]),
        Protocol::new(cfg, &[0x20; 32]),
    ];
    n[0].associate(1, 0xA0, 0xB1);
    n[1].associate(0, 0xB1, 0xA0);
    n
}

impl<A: PeerAddr> Protocol<A> {
    /// An established association with `addr`: our tag `local`, its `peer`
    /// (also `alias_tests.rs`'s, over socket addresses).
    pub(super) fn associate(&mut self, addr: A, local: u64, peer: u64) {
        let s = self.peer_entry(addr);
        let a = &mut self.peers[s].assoc;
        a.state = AssocState::Established;
        a.local_tag = local;
        a.peer_tag = peer;
        a.keyed(&self.cfg.integrity);
    }
}

impl Protocol<u32> {
    fn peer_mut(&mut self, addr: u32) -> &mut Peer<u32> {
        let s = self.slots[&addr] as usize;
        &mut self.peers[s]
    }
}

/// A segment a test places long messages into (`Placement`): every one
/// claimed (generation 7), its bytes written at their `dest_offset`, each
/// `write` counted; `summed`: it sums the bytes as it copies them
/// (`write_summed`, CRC32C's way: `deferred_tests.rs`), else the protocol
/// checks them first and then `write`s them (the MAC's way:
/// `sealed_place_tests.rs`).
pub(super) struct Seg {
    pub(super) mem: Vec<u8>,
    pub(super) claimed: u32,
    pub(super) writes: usize,
    summed: bool,
}

impl Seg {
    pub(super) fn new(len: usize, summed: bool) -> Seg {
        Seg {
            mem: vec![0; len],
            claimed: 0,
            writes: 0,
            summed,
        }
    }
}

impl Placement<u32> for Seg {
    fn claim(&mut self, _: u32, _: u8, _: &MsgMeta, _: usize) -> Option<u32> {
        self.claimed += 1;
        Some(7)
    }
    fn write(&mut self, meta: &MsgMeta, at: usize, bytes: &[u8]) {
        let off = meta.dest_offset as usize + at;
        self.mem[off..off + bytes.len()].copy_from_slice(bytes);
        self.writes += 1;
    }
    fn write_summed(&mut self, meta: &MsgMeta, at: usize, bytes: &[u8]) -> Option<u32> {
        if !self.summed {
            return None;
        }
        let off = meta.dest_offset as usize + at;
        crate::wire::copy_sum(&mut self.mem[off..off + bytes.len()], bytes)
    }
}

/// The datagrams of one long message of `payload` (handler 3, argument
/// 9, summed at offset 0) from node 0 of `n` to node 1, sent at 1 ms.
pub(super) fn long_message(n: &mut [Protocol<u32>; 2], payload: &[u8]) -> Vec<Vec<u8>> {
    let meta = MsgMeta::new(MsgKind::User, Category::Long, 3, &[9]);
    let p = n[0].payload_summed(payload, 0);
    n[0].send(Instant(1_000_000), 1, CHANNEL_REQUEST, meta, p);
    let mut d = Vec::new();
    n[0].drain_transmits::<8>(|b| d.extend(b.iter().map(|(_, pieces)| pieces.concat())));
    d
}

fn out(p: &mut Protocol<u32>) -> Vec<Vec<u8>> {
    let mut b = Vec::new();
    std::iter::from_fn(|| p.poll_transmit(&mut b).map(|_| b.clone())).collect()
}

fn feed(p: &mut Protocol<u32>, now: Instant, from: u32, d: &[u8]) {
    p.handle_datagram(now, from, d);
    p.handle_timeout(now);
}

fn delivered_args(p: &mut Protocol<u32>) -> Vec<u32> {
    std::iter::from_fn(|| p.poll_event())
        .map(|ev| match ev {
            Event::Delivered { meta, .. } => meta.args()[0],
            other => panic!("{other:?}"),
        })
        .collect()
}

#[test]
fn sequence_numbers_wrap_under_loss_and_reordering() {
    let mut n = pair();
    let mut now = Instant(1_000_000);
    n[0].send(now, 1, CHANNEL_REQUEST, meta(0), vec![1]);
    for d in out(&mut n[0]) {
        feed(&mut n[1], now, 0, &d);
    }
    assert_eq!(delivered_args(&mut n[1]), [0]);
    // Both ends of the channel jump to just before the wrap.
    let start = u32::MAX - 20;
    n[0].peer_mut(1).tx[0].next_seq = start;
    n[0].peer_mut(1).tx[0].in_flight.clear();
    n[1].peer_mut(0).rx[0].next = start;
    for k in 1..=60 {
        n[0].send(now, 1, CHANNEL_REQUEST, meta(k), vec![k as u8; 3]);
    }
    let mut got = Vec::new();
    let mut dropped = 0u32;
    for _ in 0..10_000 {
        // every 7th datagram lost, each batch delivered backwards
        let mut moved = false;
        let mut batch = out(&mut n[0]);
        batch.reverse();
        for d in batch {
            moved = true;
            dropped += 1;
            if !dropped.is_multiple_of(7) {
                feed(&mut n[1], now, 0, &d);
            }
        }
        for d in out(&mut n[1]) {
            moved = true;
            feed(&mut n[0], now, 1, &d);
        }
        got.extend(delivered_args(&mut n[1]));
        if !moved {
            match n.iter().filter_map(|p| p.next_timeout()).min() {
                Some(t) => {
                    now = now.max(t);
                    n.iter_mut().for_each(|p| p.handle_timeout(now));
                }
                None => break,
            }
        }
    }
    // each once; requests whole in a packet delivered ahead of gaps
    // across the wrap too
    let mut once = got.clone();
    once.sort_unstable();
    assert_eq!(once, (1..=60).collect::<Vec<u32>>());
    assert_ne!(got, once, "none delivered ahead of a gap");
    let tx = &n[0].peer_mut(1).tx[0];
    assert!(
        tx.next_seq < 100,
        "the sequence numbers wrapped: {}",
        tx.next_seq
    );
    assert!(tx.in_flight.is_empty());
    assert!(n[0].is_idle() && n[1].is_idle());
}

#[test]
fn timer_queue_serves_due_peers_and_forgets_finished_ones() {
    let cfg = ProtoConfig::default();
    let rto = cfg.rto_initial;
    let mut a: Protocol<u32> = Protocol::new(cfg, &[0x10; 32]);
    let t0 = Instant(1_000_000);
    for peer in 1..=3 {
        a.associate(peer, 0x50 + peer as u64, 0x60 + peer as u64);
        a.send(t0, peer, CHANNEL_REQUEST, meta(peer), vec![]);
    }
    assert_eq!(out(&mut a).len(), 3);
    assert_eq!(a.next_timeout(), Some(t0.plus(rto)));
    a.handle_timeout(t0.plus(rto - 1));
    assert_eq!(out(&mut a).len(), 0, "nothing is due before the deadline");
    // Peer 1 acknowledges its packet: nothing is left to time for it.
    let mut ack = Vec::new();
    let c = wire::Common {
        vtag: 0x51,
        channel: CHANNEL_REQUEST,
        epoch: 0,
        seq: 1,
        ..Default::default()
    };
    let integ = wire::Integrity::default();
    wire::encode_ack(&mut ack, &integ, &c, 0);
    feed(&mut a, t0.plus(MILLIS), 1, &ack);
    assert_eq!(a.unfinished_to(&1), 0);
    // Peers 2 and 3 time out and are served once each, peer 1 not at all.
    a.handle_timeout(t0.plus(rto));
    assert_eq!(a.out.stats.requests_retransmitted[0], 2);
    let mut b = Vec::new();
    let sent: Vec<u32> = std::iter::from_fn(|| a.poll_transmit(&mut b)).collect();
    assert_eq!(sent, [2, 3], "served in slot order");
    assert_eq!(a.next_timeout(), Some(t0.plus(rto + 2 * rto)), "backed off");
    // Now they answer too: after one more look, no timer is left at all.
    for (peer, tag) in [(2u32, 0x52u64), (3, 0x53)] {
        let mut ack = Vec::new();
        wire::encode_ack(&mut ack, &integ, &wire::Common { vtag: tag, ..c }, 0);
        feed(&mut a, t0.plus(rto + MILLIS), peer, &ack);
    }
    assert!(a.is_idle());
    if let Some(t) = a.next_timeout() {
        a.handle_timeout(t);
    }
    assert_eq!(a.next_timeout(), None);
    assert!(a.timers.is_empty(), "stale entries left: {:?}", a.timers);
    assert!(out(&mut a).is_empty());
}

/// A later packet arrived first: the earlier one, sent at the same time, gets
/// a reordering timer of about one round trip, not the full RTO, and when
/// it fires the packet is resent without backing off the RTO.
#[test]
fn reordering_timer_resends_without_backoff() {
    let mut n = pair();
    let t0 = Instant(1_000_000);
    // one datagram each (sent together they would share one)
    let d: Vec<Vec<u8>> = (0..3)
        .flat_map(|k| {
            n[0].send(t0, 1, CHANNEL_REQUEST, meta(k), vec![]);
            out(&mut n[0])
        })
        .collect();
    assert_eq!(d.len(), 3);
    let t1 = t0.plus(20 * MICROS);
    feed(&mut n[1], t1, 0, &d[1]);
    feed(&mut n[1], t1, 0, &d[2]);
    let acks = out(&mut n[1]);
    assert!(!acks.is_empty(), "a gap is acknowledged at once");
    let t2 = t0.plus(50 * MICROS);
    for a in &acks {
        feed(&mut n[0], t2, 1, a);
    }
    assert!(out(&mut n[0]).is_empty(), "packet 0 may only be late");
    let p0 = &n[0].peer_mut(1).tx[0].in_flight[0];
    assert!(p0.reorder_timer && !p0.sacked);
    // about a round trip (50 us) plus a reordering window, far below the RTO
    let fire = p0.deadline;
    assert!(fire > t2 && fire <= t0.plus(250 * MICROS), "{fire:?}");
    assert_eq!(n[0].next_timeout(), Some(fire));
    n[0].handle_timeout(Instant(fire.0 - 1));
    assert!(out(&mut n[0]).is_empty(), "not before its time");
    let rto_before = n[0].peer_mut(1).rtt.rto();
    n[0].handle_timeout(fire);
    assert_eq!(out(&mut n[0]).len(), 1, "packet 0 resent");
    let peer = &n[0].peer_mut(1);
    assert_eq!(peer.tx[0].in_flight[0].retries, 0);
    assert_eq!(peer.rtt.rto(), rto_before, "no backoff");

    // A packet sent well before the one that arrived is resent at once.
    let mut n = pair();
    n[0].send(t0, 1, CHANNEL_REQUEST, meta(0), vec![]);
    let lost = out(&mut n[0]);
    assert_eq!(lost.len(), 1);
    let t1 = t0.plus(MILLIS);
    n[0].send(t1, 1, CHANNEL_REQUEST, meta(1), vec![]);
    for d in out(&mut n[0]) {
        feed(&mut n[1], t1.plus(20 * MICROS), 0, &d);
    }
    for a in out(&mut n[1]) {
        feed(&mut n[0], t1.plus(40 * MICROS), 1, &a);
    }
    assert_eq!(out(&mut n[0]).len(), 1, "packet 0 resent on the SACK");
    assert_eq!(n[0].out.stats.requests_retransmitted[0], 1);
}

/// A NACK pauses the send channel on its own timer: the retransmission
/// timer stops, nothing goes out before the backoff, the refused packet
/// at its end.
#[test]
fn nack_pauses_the_channel_on_its_own_timer() {
    use super::timer::Timer;
    let mut n = pair();
    n[1].set_recv_depth(1);
    let t0 = Instant(1_000_000);
    for k in 0..2 {
        n[0].send(t0, 1, CHANNEL_REQUEST, meta(k), vec![]);
    }
    let t1 = t0.plus(20 * MICROS);
    for d in out(&mut n[0]) {
        feed(&mut n[1], t1, 0, &d);
    }
    assert_eq!(n[1].stats().nacks_sent, 1, "the second is refused");
    let t2 = t1.plus(20 * MICROS);
    for d in out(&mut n[1]) {
        feed(&mut n[0], t2, 1, &d);
    }
    let until = t2.plus(n[0].config().nack_backoff);
    let timers = &n[0].peer_mut(1).timers;
    assert_eq!(timers.get(Timer::Pause(0)), Some(until));
    assert_eq!(timers.get(Timer::Retransmit(0)), None);
    assert_eq!(n[0].next_timeout(), Some(until));
    assert!(out(&mut n[0]).is_empty());
    n[1].poll_event().expect("the first is delivered");
    n[0].handle_timeout(Instant(until.0 - 1));
    assert!(out(&mut n[0]).is_empty(), "paused");
    n[0].handle_timeout(until);
    let again = out(&mut n[0]);
    assert_eq!(again.len(), 1, "the refused packet goes back");
    let timers = &n[0].peer_mut(1).timers;
    assert_eq!(timers.get(Timer::Pause(0)), None);
    assert!(timers.get(Timer::Retransmit(0)).is_some());
    for d in again {
        feed(&mut n[1], until, 0, &d);
    }
    assert_eq!(delivered_args(&mut n[1]), [1]);
}

/// A forged bundle of DATA packets under tags nobody holds, from an
/// address with no association: each is dropped and counted stale, and
/// the datagram draws one ABORT, as a lone DATA does (not one per packet:
/// a bundle is no lever for more unsolicited answers).
#[test]
fn a_forged_bundle_outside_any_association_draws_one_abort() {
    let mut p = Protocol::<u32>::new(ProtoConfig::default(), &[0x30; 32]);
    let integ = p.cfg.integrity.clone();
    let mut d = Vec::new();
    for k in 0..8u32 {
        let c = wire::Common {
            vtag: 0xDEAD_0000 + u64::from(k),
            channel: CHANNEL_REQUEST,
            epoch: 0,
            seq: k,
            ..Default::default()
        };
        wire::encode_data(&mut d, &integ, &c, &meta(k), 0, 0, &[]);
    }
    assert_eq!(wire::packets(&integ, &d).count(), 8);
    let now = Instant::ZERO.plus(1_000 * MILLIS);
    p.handle_datagram(now, 9, &d);
    let sent = out(&mut p);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert!(matches!(
        wire::decode(&integ, &sent[0]),
        Ok(wire::Packet::Abort { .. })
    ));
    assert_eq!(p.out.stats.stale_dropped, 8);
    // the next lone DATA is answered again (the token bucket allowing)
    let mut one = Vec::new();
    let c = wire::Common {
        vtag: 0xBEEF,
        channel: CHANNEL_REQUEST,
        ..Default::default()
    };
    wire::encode_data(&mut one, &integ, &c, &meta(1), 0, 0, &[]);
    p.handle_datagram(now, 9, &one);
    assert_eq!(out(&mut p).len(), 1);
}

/// The invariant walk passes on a sound state and names the peer and the
/// channel of a broken one.
#[test]
#[should_panic(expected = "peer 1 receive channel 0")]
fn the_invariant_walk_names_the_peer_and_channel_of_a_broken_invariant() {
    let mut n = pair();
    n[0].send(Instant(1_000_000), 1, CHANNEL_REQUEST, meta(1), vec![1]);
    n[0].check_invariants();
    n[0].check_peer_invariants(&1);
    n[0].peer_mut(1).rx[0].held_bytes = 7; // nothing is held
    n[0].check_invariants();
}

/// An ACK of the whole flight stops the channel's retransmission timer
/// (nothing left to time out; the next transmit sets it again): a
/// ping-pong's peer is not woken at the old request's probe time.
#[test]
fn an_ack_of_the_whole_flight_stops_the_retransmission_timer() {
    use super::timer::Timer;
    use crate::wire::CHANNEL_REPLY;
    let mut n = pair();
    let mut t = Instant(1_000_000);
    for k in 0..3 {
        n[0].send(t, 1, CHANNEL_REQUEST, meta(k), vec![]);
        assert!(n[0].peer_mut(1).timers.get(Timer::Retransmit(0)).is_some());
        t = t.plus(5 * MICROS);
        for d in out(&mut n[0]) {
            feed(&mut n[1], t, 0, &d);
        }
        n[1].poll_event().expect("the request is delivered");
        n[1].send(t, 0, CHANNEL_REPLY, meta(k), vec![]);
        t = t.plus(5 * MICROS);
        for d in out(&mut n[1]) {
            feed(&mut n[0], t, 1, &d);
        }
        let timers = &n[0].peer_mut(1).timers;
        assert_eq!(timers.get(Timer::Retransmit(0)), None, "round {k}");
        // (the reply's owed ACK is what the peer waits for now)
        assert!(timers.get(Timer::Ack(1)).is_some());
    }
}
