//! Forged packets' parts, for the tests that forge them: over real
//! sockets (`tests/hostile.rs`) and on the simulated network
//! (`common/sim.rs`, which includes this file itself). A test file
//! includes it with `#[path = "common/forge.rs"] mod forge;`.
#![allow(dead_code)] // each file uses part of it

use ramp::wire::{self, Common, Integrity, MsgMeta};

/// The integrity trailer of the tests' datagrams.
pub const I: Integrity = Integrity::Crc32c;

/// The common header of a forged packet: the tag, channel, epoch and
/// sequence number the forger guessed (or learnt), nothing else.
pub fn header(vtag: u64, channel: u8, epoch: u16, seq: u32) -> Common {
    Common {
        vtag,
        channel,
        epoch,
        seq,
        ..Default::default()
    }
}

/// A forged DATA packet under `c`: a whole message, `payload` all of it.
pub fn data(c: &Common, meta: &MsgMeta, payload: &[u8]) -> Vec<u8> {
    let mut d = Vec::new();
    let len = payload.len() as u32;
    wire::encode_data(&mut d, &I, c, meta, len, 0, payload);
    d
}
