//! A COOKIE_ECHO that goes unanswered. A responder that restarted after
//! its INIT_ACK cannot open the cookie (its new secret): it says so
//! (UNKNOWN_COOKIE naming the echo), the initiator starts again with a
//! fresh tag, and the association comes up at once, not after the peer
//! timeout (a restarted target of transactions was taken for dead). A
//! responder that is only slow, or whose COOKIE_ACKs are lost, keeps the
//! one association the initiator ends up in: the initiator never gives up
//! the cookie it echoes on its own (an INIT again of the same tag after
//! unanswered echoes, 3b45d36, left a half-open association); a late INIT
//! gets the tag of the association the responder has, and the responder
//! sees no restart (its messages do not fail). An UNKNOWN_COOKIE that is
//! forged (other tags) or replayed changes nothing.

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

fn is_unknown_cookie(d: &[u8]) -> bool {
    matches!(wire::decode(&I, d), Ok(Packet::UnknownCookie { .. }))
}

/// The restart: the echo is lost and the responder restarts (a new
/// secret). Its answer to the echo sent again names the cookie it cannot
/// open; the initiator starts again with a fresh tag and the message is
/// delivered a few round trips later, not after the peer timeout. That
/// answer replayed later (the association established) changes nothing.
#[test]
fn an_echo_a_restarted_responder_cannot_open_starts_the_handshake_again() {
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
    let mut unknown = Vec::new();
    assert!(t.run(
        timeout,
        |from, d| {
            if from == 1 && is_unknown_cookie(d) {
                unknown.push(d.to_vec());
            }
            false
        },
        |t| t.delivered[1] == [7]
    ));
    assert!(
        t.now.since(t0) < timeout / 4,
        "delivered {} ns after the restart",
        t.now.since(t0)
    );
    assert_eq!(unknown.len(), 1, "one echo the new secret cannot open");
    assert_eq!(t.failed, [0, 0]);
    let tags = t.p[0].association(&1);
    assert!(tags.is_some());
    t.feed(0, &unknown[0]);
    t.run(SECOND, |_, _| false, |_| false);
    assert_eq!(t.p[0].association(&1), tags, "a replay changes nothing");
    assert_eq!(t.failed, [0, 0]);
}

/// COOKIE_ACKs lost: the responder has the association, the initiator
/// echoes again and again (four times, more than the two after which the
/// fallback of 3b45d36 gave up the cookie) and never gives the cookie up;
/// a late copy of its INIT reaches the responder meanwhile and gets the
/// association's own tag. The association stays, nothing fails, the
/// responder sees no restart; the initiator sends no INIT again.
#[test]
fn an_init_again_after_lost_cookie_acks_keeps_the_association() {
    let mut t = Two::new();
    t.send(0, 7);
    let mut init = Vec::new();
    // node 1 takes the echo; its COOKIE_ACKs are lost
    let lost_acks = |from: usize, d: &[u8]| {
        if from == 0 && is_init(d) && init.is_empty() {
            init = d.to_vec();
        }
        from == 1 && matches!(wire::decode(&I, d), Ok(Packet::CookieAck { .. }))
    };
    assert!(t.run(SECOND, lost_acks, |t| t.p[1].association(&0).is_some()));
    let tags = t.p[1].association(&0);
    // it sends; nothing of node 1's arrives while node 0 echoes four times
    // more, and a late copy of node 0's INIT arrives
    t.send(1, 9);
    let (echoes, inits) = (Cell::new(0), Cell::new(0));
    assert!(t.run(
        SECOND,
        |from, d| {
            echoes.set(echoes.get() + usize::from(from == 0 && is_echo(d)));
            inits.set(inits.get() + usize::from(from == 0 && is_init(d)));
            from == 1
        },
        |_| echoes.get() >= 4
    ));
    t.feed(1, &init);
    assert!(t.run(SECOND, |_, _| false, |t| t.delivered == [vec![9], vec![7]]));
    assert_eq!(inits.get(), 0, "no INIT again");
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

/// UNKNOWN_COOKIEs that do not name the cookie being echoed (another tag
/// of either end: forged, or late from an earlier handshake) change
/// nothing: the initiator echoes the same cookie on. A forged echo (a
/// cookie no secret made, naming the initiator's tag) at the responder
/// gets an UNKNOWN_COOKIE, which the established initiator drops.
#[test]
fn an_unknown_cookie_naming_another_echo_changes_nothing() {
    let mut t = Two::new();
    t.send(0, 7);
    let init = t.out(0);
    t.feed(1, &init[0]);
    let ack = t.out(1);
    let Ok(Packet::InitAck {
        vtag: a,
        resp_tag: r,
        ..
    }) = wire::decode(&I, &ack[0])
    else {
        panic!("an INIT_ACK");
    };
    t.feed(0, &ack[0]);
    let echo = t.out(0);
    assert!(echo.len() == 1 && is_echo(&echo[0]));
    for (vtag, resp_tag) in [(a ^ 1, r), (a, r ^ 1), (r, a)] {
        let mut d = Vec::new();
        wire::encode_unknown_cookie(&mut d, &I, vtag, resp_tag);
        t.feed(0, &d);
        assert!(t.out(0).is_empty(), "nothing sent");
    }
    // node 1 off the CPU: node 0 echoes the same cookie on its timer
    t.fire(0);
    assert_eq!(t.out(0), echo);
    t.feed(1, &echo[0]);
    assert!(t.run(SECOND, |_, _| false, |t| t.delivered[1] == [7]));
    let tags = t.p[1].association(&0);
    assert_eq!(tags, Some((r, a)));
    assert_eq!(t.p[0].association(&1), Some((a, r)));
    // a forged echo naming node 0's tag, at node 1
    let mut cookie = [0x5au8; 48];
    cookie[8..16].copy_from_slice(&a.to_be_bytes());
    let mut d = Vec::new();
    wire::encode_cookie_echo(&mut d, &I, r, &cookie);
    t.feed(1, &d);
    let answer = t.out(1);
    assert_eq!(answer.len(), 1);
    assert_eq!(
        wire::decode(&I, &answer[0]),
        Ok(Packet::UnknownCookie {
            vtag: a,
            resp_tag: r
        })
    );
    assert!(answer[0].len() < d.len());
    t.feed(0, &answer[0]);
    t.run(SECOND, |_, _| false, |_| false);
    assert_eq!(t.p[1].association(&0), tags);
    assert_eq!(t.p[0].association(&1), Some((a, r)));
    assert_eq!(t.failed, [0, 0]);
}
