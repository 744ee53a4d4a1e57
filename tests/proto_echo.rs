//! A COOKIE_ECHO that goes unanswered: a responder that restarted after
//! its INIT_ACK cannot open the cookie (its new secret) and drops the echo
//! without a word; the initiator asks again with an INIT after two echoes,
//! and the association comes up at once, not after the peer timeout (a
//! restarted target of transactions was taken for dead). An INIT sent
//! again because the COOKIE_ACKs were lost gets the tag of the
//! association the responder has: its echo changes nothing, and the
//! responder sees no restart (its messages do not fail).

use std::cell::Cell;

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
