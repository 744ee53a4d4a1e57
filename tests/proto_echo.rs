//! A COOKIE_ECHO that goes unanswered: a responder that restarted after
//! its INIT_ACK cannot open the cookie (its new secret) and drops the echo
//! without a word; the initiator asks again with an INIT after two echoes,
//! and the association comes up at once, not after the peer timeout (a
//! restarted target of transactions was taken for dead). An INIT sent
//! again because the COOKIE_ACKs were lost gets the tag of the
//! association the responder has: its echo changes nothing, and the
//! responder sees no restart (its messages do not fail).

use std::cell::Cell;
use std::collections::VecDeque;

use ramp::proto::{Event, ProtoConfig, Protocol};
use ramp::time::{Instant, Nanos, MILLIS};
use ramp::wire::{self, Category, MsgKind, MsgMeta, Packet, CHANNEL_REQUEST};

const I: wire::Integrity = wire::Integrity::Crc32c;
const SECOND: Nanos = 1000 * MILLIS;

fn meta(k: u32) -> MsgMeta {
    MsgMeta::new(MsgKind::User, Category::Short, 1, &[k])
}

/// Two nodes, 0 and 1, each calling the other by its number.
struct Two {
    p: [Protocol<u32>; 2],
    now: Instant,
    /// What each delivered (its argument) and what failed at each.
    delivered: [Vec<u32>; 2],
    failed: [usize; 2],
}

impl Two {
    fn new() -> Two {
        Two {
            p: [node(0x11), node(0x22)],
            now: Instant(1_000_000_000),
            delivered: Default::default(),
            failed: [0; 2],
        }
    }

    fn send(&mut self, i: usize, k: u32) {
        let now = self.now;
        self.p[i].send(now, 1 - i as u32, CHANNEL_REQUEST, meta(k), Vec::new());
    }

    /// Moves datagrams (at once; `lose(from, datagram)` true drops one)
    /// and fires timers, until `cond` holds or `limit` passes.
    fn run(
        &mut self,
        limit: Nanos,
        mut lose: impl FnMut(usize, &[u8]) -> bool,
        mut cond: impl FnMut(&Two) -> bool,
    ) -> bool {
        let end = self.now.plus(limit);
        loop {
            self.take_events();
            if cond(self) {
                return true;
            }
            if self.now >= end {
                return false;
            }
            let mut moved = false;
            for i in 0..2 {
                let mut b = Vec::new();
                let mut out = Vec::new();
                while self.p[i].poll_transmit(&mut b).is_some() {
                    out.push(b.clone());
                }
                for d in out {
                    moved = true;
                    if !lose(i, &d) {
                        let now = self.now;
                        self.p[1 - i].handle_datagram(now, i as u32, &d);
                        self.p[1 - i].handle_timeout(now);
                    }
                }
            }
            if !moved {
                let Some(t) = self.p.iter().filter_map(|p| p.next_timeout()).min() else {
                    return cond(self);
                };
                self.now = self.now.max(t);
                let now = self.now;
                self.p.iter_mut().for_each(|p| p.handle_timeout(now));
            }
        }
    }

    /// What node `i` sends now, in order.
    fn out(&mut self, i: usize) -> Vec<Vec<u8>> {
        let mut b = Vec::new();
        let mut out = Vec::new();
        while self.p[i].poll_transmit(&mut b).is_some() {
            out.push(b.clone());
        }
        out
    }

    /// Node `i` takes datagram `d` from the other node now.
    fn feed(&mut self, i: usize, d: &[u8]) {
        let now = self.now;
        self.p[i].handle_datagram(now, 1 - i as u32, d);
        self.p[i].handle_timeout(now);
    }

    /// Time moves to node `i`'s next timer, which fires (node `i` alone:
    /// the other is off the CPU).
    fn fire(&mut self, i: usize) {
        self.now = self.p[i].next_timeout().expect("a timer");
        let now = self.now;
        self.p[i].handle_timeout(now);
    }

    fn take_events(&mut self) {
        for i in 0..2 {
            while let Some(ev) = self.p[i].poll_event() {
                match ev {
                    Event::Delivered { meta, .. } => self.delivered[i].push(meta.args()[0]),
                    Event::Failed { .. } => self.failed[i] += 1,
                }
            }
        }
    }
}

fn node(seed: u8) -> Protocol<u32> {
    Protocol::new(ProtoConfig::default(), &[seed; 32])
}

fn is_echo(d: &[u8]) -> bool {
    matches!(wire::decode(&I, d), Ok(Packet::CookieEcho { .. }))
}

fn is_init(d: &[u8]) -> bool {
    matches!(wire::decode(&I, d), Ok(Packet::Init { .. }))
}

#[test]
#[ignore = "the echo-to-INIT fallback (3b45d36) broke a 64-process start-up (ABORTs to established peers); being redone"]
fn an_echo_a_restarted_responder_cannot_open_gives_way_to_an_init() {
    let mut t = Two::new();
    let timeout = ProtoConfig::default().peer_timeout;
    t.send(0, 7);
    // INIT, INIT_ACK; the echo is lost, and node 1 restarts
    let echoed = Cell::new(false);
    assert!(t.run(
        SECOND,
        |from, d| {
            let echo = from == 0 && is_echo(d);
            echoed.set(echoed.get() | echo);
            echo
        },
        |_| echoed.get()
    ));
    t.p[1] = node(0x33);
    let t0 = t.now;
    assert!(t.run(timeout, |_, _| false, |t| t.delivered[1] == [7]));
    assert!(
        t.now.since(t0) < timeout / 4,
        "delivered {} ns after the restart",
        t.now.since(t0)
    );
    assert_eq!(t.failed, [0, 0]);
}

#[test]
#[ignore = "the echo-to-INIT fallback (3b45d36) broke a 64-process start-up (ABORTs to established peers); being redone"]
fn an_init_again_after_lost_cookie_acks_keeps_the_association() {
    let mut t = Two::new();
    t.send(0, 7);
    // node 1 takes the echo; its COOKIE_ACKs are lost
    let lost_acks = |from: usize, d: &[u8]| {
        from == 1 && matches!(wire::decode(&I, d), Ok(Packet::CookieAck { .. }))
    };
    assert!(t.run(SECOND, lost_acks, |t| t.p[1].association(&0).is_some()));
    let tags = t.p[1].association(&0);
    // it sends; nothing of node 1's arrives until node 0 asks again
    t.send(1, 9);
    let asked = Cell::new(false);
    assert!(t.run(
        SECOND,
        |from, d| {
            asked.set(asked.get() | (from == 0 && is_init(d)));
            from == 1 && !asked.get()
        },
        |_| asked.get()
    ));
    assert!(t.run(SECOND, |_, _| false, |t| t.delivered == [vec![9], vec![7]]));
    assert_eq!(t.p[1].association(&0), tags, "the same association");
    assert_eq!(t.p[0].association(&1).map(|(a, b)| (b, a)), tags);
    assert_eq!(t.failed, [0, 0], "no restart seen, nothing failed");
}

/// A responder off the CPU for many RTOs (64 processes on two cores): the
/// initiator's INIT goes three times before the first is answered, the
/// later two wait at the responder, and its echo goes unanswered for four
/// RTOs. When the responder runs again it answers the two INITs (no slot:
/// each with a fresh tag), takes the echo (COOKIE_ACK) and so on. The
/// initiator must end up in the association the responder has: an
/// initiator that had gone back to an INIT after unanswered echoes (the
/// fallback of 3b45d36) took the late INIT_ACK of a fresh tag, and the
/// COOKIE_ACK of the first cookie (it does not say which cookie it
/// answers) established that one: half open, its DATA dropped by the
/// responder, which later freed its idle slot and ABORTed the DATA.
#[test]
fn a_responder_off_the_cpu_for_many_rtos_ends_in_one_association() {
    let mut t = Two::new();
    t.send(0, 7);
    let mut queued: VecDeque<Vec<u8>> = t.out(0).into();
    for _ in 0..2 {
        t.fire(0);
        queued.extend(t.out(0));
    }
    assert_eq!(queued.len(), 3);
    assert!(queued.iter().all(|d| is_init(d)));
    // the responder runs for one datagram: the first INIT is answered
    let first = queued.pop_front().unwrap();
    t.feed(1, &first);
    for d in t.out(1) {
        t.feed(0, &d);
    }
    queued.extend(t.out(0));
    assert!(queued.back().is_some_and(|d| is_echo(d)));
    // off the CPU for four more RTOs of the initiator
    for _ in 0..4 {
        t.fire(0);
        queued.extend(t.out(0));
    }
    // back: it takes all that waited, the initiator all it answered
    for d in queued.drain(..) {
        t.feed(1, &d);
    }
    for d in t.out(1) {
        t.feed(0, &d);
    }
    assert!(t.run(SECOND, |_, _| false, |t| t.delivered[1] == [7]));
    let tags = t.p[1].association(&0);
    assert!(tags.is_some());
    assert_eq!(t.p[0].association(&1).map(|(a, b)| (b, a)), tags);
    assert_eq!(t.failed, [0, 0]);
}
