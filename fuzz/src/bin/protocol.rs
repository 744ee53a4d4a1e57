//! The protocol core with an established association (nodes 0 and 1, a
//! real exchange done): the input is a sequence of datagrams, each
//! [to: 1 byte][from: 1 byte][len: 2 bytes BE][bytes], fed to node `to % 2`
//! from address `from` (0/1: the real peers; others: strangers), resealed
//! (a valid CRC32C trailer appended) when bit 1 of `to` is set, with the
//! transmits moved between 0 and 1 and the timers run. Never panics; no
//! state for a stranger.
use ramp::proto::{ProtoConfig, Protocol};
use ramp::time::{Instant, MILLIS};
use ramp::wire::{Category, Integrity, MsgKind, MsgMeta};

fn pump(p: &mut [Protocol<u32>; 2], now: Instant) {
    let mut b = Vec::new();
    for _ in 0..8 {
        let mut moved = false;
        for i in 0..2u32 {
            while let Some(to) = p[i as usize].poll_transmit(&mut b) {
                if to < 2 {
                    p[to as usize].handle_datagram(now, i, &b);
                    moved = true;
                }
            }
            while p[i as usize].poll_event().is_some() {}
        }
        if !moved {
            break;
        }
    }
}

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let cfg = ProtoConfig::default();
        let mut p = [
            Protocol::<u32>::new(cfg.clone(), &[1; 32]),
            Protocol::new(cfg, &[2; 32]),
        ];
        let mut now = Instant(1_000_000);
        for (i, len) in [(0u32, 0usize), (1, 300), (0, 3000)] {
            let m = MsgMeta::new(MsgKind::User, Category::Medium, 3, &[i]);
            p[i as usize].send(now, 1 - i, 0, m, vec![7; len]);
        }
        for _ in 0..20 {
            pump(&mut p, now);
            now = now.plus(MILLIS);
            for q in &mut p {
                q.handle_timeout(now);
            }
        }
        let mut rest = data;
        while rest.len() >= 4 {
            let (to, from) = (rest[0] as usize % 2, rest[1] as u32);
            let len = (u16::from_be_bytes([rest[2], rest[3]]) as usize).min(rest.len() - 4);
            let mut d = rest[4..4 + len].to_vec();
            if rest[0] & 2 != 0 {
                Integrity::Crc32c.seal(&mut d, 0);
            }
            rest = &rest[4 + len..];
            p[to].handle_datagram(now, from, &d);
            pump(&mut p, now);
            now = now.plus(MILLIS / 4);
            for q in &mut p {
                q.handle_timeout(now);
            }
            assert!(p[0].peer_count() <= 1 && p[1].peer_count() <= 1);
        }
    });
}
