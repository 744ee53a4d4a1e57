//! Where every field of a packet lies, named once: the offsets (`*_AT`,
//! bytes from the packet's start) that the encoder, the decoder, the
//! framing walk and anything else that peeks at a packet's bytes use. Wire
//! version 5, all fields big-endian; the width of a field is its type's.
//!
//! ```text
//! common (32 bytes, every packet)
//!   0 magic u16 | 2 version u8 | 3 type u8 | 4 vtag u64
//!  12 channel u8 | 13 flags u8 | 14 epoch u16 | 16 seq u32
//!  20 ack_next[request] u32 | 24 ack_next[reply] u32
//!  28 ack_epoch[request] u16 | 30 ack_epoch[reply] u16
//! vtag: the verification tag of the association, the RECEIVER's tag (0
//! only in INIT). Handshake packets leave bytes 12..32 zero.
//! ACK:  32 sack bitmap u64 (bit i: seq+1+i has arrived); flag 16: a
//!       DATA of this channel arrived twice since the last ACK (a resent
//!       copy was needless: the sender's timer was short, after D-SACK),
//!       then 40 its sequence number u32
//! NACK: (nothing more; seq is the refused sequence number; flag 8: the
//!       refusal is final, the message is given up with ECONGESTION)
//! DATA: 32 txn u32 | 36 handler u8 | 37 kind<<4|category u8 | 38 nargs u8
//!       39 status u8 | 40 tag u64 | 48 dest_offset u64 | 56 msg_len u32
//!       60 frag_off u32 | 64 frag_len u32 | 68 args (4*nargs) | payload
//!       flag 4: a returned request; flag 32: it may be delivered ahead
//!       of a gap (`FLAG_UNORDERED`)
//! DATA with flag 64 (`FLAG_MORE`, `Packet::More`): a later fragment
//!       (frag_off > 0), which repeats nothing its message's first packet
//!       gave (txn, handler, kind, status, tag, dest_offset, msg_len,
//!       args): 32 frag_off u32 | 36 frag_len u32 | 40 payload. The
//!       receiver takes it only in sequence order, as the next bytes of
//!       the message it is reassembling (`proto/recv.rs`): 28 + 4*nargs
//!       bytes less per datagram than the full header
//! INIT:        32 initiator tag u64 | 40 zero padding (the INIT_ACK's
//!              cookie) | 88 the sender's other rail addresses (ADDRS_LEN)
//! INIT_ACK:    32 responder tag u64 | 40 cookie (COOKIE_LEN) | 88 addresses
//! COOKIE_ECHO: 32 cookie (COOKIE_LEN) | 80 the initiator's addresses again
//! addresses (`ADDRS_LEN`): count u8 (at most `MAX_LISTED`), then
//!              `MAX_LISTED` entries of ADDR_LEN: family u8 (1: a simulated
//!              node, its number in the next 4 bytes; 4: IPv4 in the next 4;
//!              6: IPv6 in the next 16) | 16 address bytes | port u16;
//!              entries past the count all zero
//! COOKIE_ACK, ABORT: nothing more
//! UNKNOWN_COOKIE: 32 the responder tag of the echo u64
//! HEARTBEAT, HEARTBEAT_ACK, SHUTDOWN, SHUTDOWN_ACK: 32 nonce u64
//! ALIAS, ALIAS_ACK: 32 port u64 (1..=65535)
//! then the integrity trailer (`Integrity`: CRC32C, or with a job key the
//! nonce (12) and MAC tag (16)) over everything before it
//! ```

use super::{COOKIE_LEN, NUM_CHANNELS};

// The common header, every packet.
/// `MAGIC`, u16.
pub const MAGIC_AT: usize = 0;
/// `VERSION`, u8.
pub const VERSION_AT: usize = 2;
/// `PacketType`, u8.
pub const TYPE_AT: usize = 3;
/// The receiver's verification tag, u64.
pub const VTAG_AT: usize = 4;
/// DATA, ACK, NACK: the logical channel, u8.
pub const CHANNEL_AT: usize = 12;
/// DATA, ACK, NACK: `FLAG_*`, u8.
pub const FLAGS_AT: usize = 13;
/// DATA, ACK, NACK: the channel's epoch, u16.
pub const EPOCH_AT: usize = 14;
/// DATA, ACK, NACK: the sequence number, u32.
pub const SEQ_AT: usize = 16;
/// The piggybacked cumulative ack of each reverse channel: next expected
/// sequence number (u32) and its epoch (u16), by channel.
pub const ACK_NEXT_AT: [usize; NUM_CHANNELS] = [20, 24];
pub const ACK_EPOCH_AT: [usize; NUM_CHANNELS] = [28, 30];
/// Size of the header shared by every packet type.
pub const COMMON_LEN: usize = ACK_EPOCH_AT[1] + 2;

// ACK, after the common header.
/// The SACK bitmap, u64.
pub const SACK_AT: usize = COMMON_LEN;
/// Size of an ACK packet without the trailer (and without `DUP_AT`).
pub const ACK_LEN: usize = SACK_AT + 8;
/// With `FLAG_DUP`: the sequence number that arrived twice, u32.
pub const DUP_AT: usize = ACK_LEN;
/// Size of an ACK packet with `DUP_AT`, without the trailer.
pub const ACK_DUP_LEN: usize = DUP_AT + 4;
/// Size of a NACK packet without the trailer: the common header alone.
pub const NACK_LEN: usize = COMMON_LEN;

// DATA, after the common header.
/// The transaction id, u32.
pub const TXN_AT: usize = COMMON_LEN;
/// The handler, u8.
pub const HANDLER_AT: usize = 36;
/// `kind << 4 | category`, u8.
pub const KIND_CATEGORY_AT: usize = 37;
/// The argument count, u8.
pub const NARGS_AT: usize = 38;
/// The status, u8.
pub const STATUS_AT: usize = 39;
/// The 64-bit tag, u64.
pub const TAG_AT: usize = 40;
/// The offset in the destination segment (Xfer), u64.
pub const DEST_OFFSET_AT: usize = 48;
/// The whole message's length, u32.
pub const MSG_LEN_AT: usize = 56;
/// This fragment's offset in the message, u32.
pub const FRAG_OFF_AT: usize = 60;
/// This fragment's length, u32.
pub const FRAG_LEN_AT: usize = 64;
/// Size of the DATA header (common part included), before the arguments.
pub const DATA_HEADER_LEN: usize = FRAG_LEN_AT + 4;
/// The arguments (4 bytes each, `nargs` of them), then the payload.
pub const ARGS_AT: usize = DATA_HEADER_LEN;

// A later fragment (DATA with `FLAG_MORE`), after the common header.
/// This fragment's offset in the message (never 0), u32.
pub const MORE_OFF_AT: usize = COMMON_LEN;
/// This fragment's length, u32.
pub const MORE_LEN_AT: usize = MORE_OFF_AT + 4;
/// Size of a later fragment's header, the payload after it.
pub const MORE_HEADER_LEN: usize = MORE_LEN_AT + 4;

// Handshake, heartbeat, shutdown and alias packets, after the common header.
/// INIT: the initiator's tag, u64 (then zero padding).
pub const INIT_TAG_AT: usize = COMMON_LEN;
/// INIT_ACK: the responder's tag, u64.
pub const RESP_TAG_AT: usize = COMMON_LEN;
/// INIT_ACK: the cookie, `COOKIE_LEN` bytes.
pub const INIT_ACK_COOKIE_AT: usize = RESP_TAG_AT + 8;
/// INIT, INIT_ACK: the sender's other rail addresses, `ADDRS_LEN` bytes.
pub const INIT_ADDRS_AT: usize = INIT_ACK_COOKIE_AT + COOKIE_LEN;
/// COOKIE_ECHO: the initiator's other rail addresses, `ADDRS_LEN` bytes.
pub const ECHO_ADDRS_AT: usize = ECHO_COOKIE_AT + COOKIE_LEN;
/// One listed address: family u8, 16 address bytes, port u16.
pub const ADDR_LEN: usize = 19;
/// Addresses a handshake packet lists at most: an endpoint's rails but
/// its name (`path::MAX_RAILS` - 1, checked in `proto/rails.rs`).
pub const MAX_LISTED: usize = 3;
/// The address list: its count, then `MAX_LISTED` entries.
pub const ADDRS_LEN: usize = 1 + MAX_LISTED * ADDR_LEN;
/// COOKIE_ECHO: the cookie, `COOKIE_LEN` bytes.
pub const ECHO_COOKIE_AT: usize = COMMON_LEN;
/// UNKNOWN_COOKIE: the responder's tag the refused COOKIE_ECHO carried, u64.
pub const UNKNOWN_TAG_AT: usize = COMMON_LEN;
/// HEARTBEAT(_ACK), SHUTDOWN(_ACK): the nonce, u64.
pub const NONCE_AT: usize = COMMON_LEN;
/// ALIAS(_ACK): the port, u64.
pub const PORT_AT: usize = COMMON_LEN;
/// Size of an INIT_ACK without the trailer.
pub const INIT_ACK_LEN: usize = INIT_ADDRS_AT + ADDRS_LEN;
/// Size of an INIT without the trailer: as large as its answer.
pub const INIT_LEN: usize = INIT_ACK_LEN;
/// Size of a COOKIE_ECHO without the trailer.
pub const COOKIE_ECHO_LEN: usize = ECHO_ADDRS_AT + ADDRS_LEN;
/// Size of an UNKNOWN_COOKIE without the trailer (smaller than the
/// COOKIE_ECHO it answers).
pub const UNKNOWN_COOKIE_LEN: usize = UNKNOWN_TAG_AT + 8;
/// Size of a HEARTBEAT(_ACK) or SHUTDOWN(_ACK) without the trailer.
pub const NONCE_LEN: usize = NONCE_AT + 8;
/// Size of an ALIAS(_ACK) without the trailer.
pub const ALIAS_LEN: usize = PORT_AT + 8;
/// Size of a COOKIE_ACK or ABORT without the trailer: the common header.
pub const BARE_LEN: usize = COMMON_LEN;

// The flags byte (`FLAGS_AT`).
/// The piggybacked ack of the request channel is valid.
pub const FLAG_ACK_REQ: u8 = 1;
/// The piggybacked ack of the reply channel is valid.
pub const FLAG_ACK_REP: u8 = 2;
/// DATA: a request returned to its sender (`MsgMeta::returned_request`).
pub const FLAG_RETURNED_REQUEST: u8 = 4;
/// NACK: the refusal is final.
pub const FLAG_FINAL: u8 = 8;
/// ACK: `DUP_AT` follows.
pub const FLAG_DUP: u8 = 16;
/// DATA: it may be delivered ahead of a gap (`Common::unordered`).
pub const FLAG_UNORDERED: u8 = 32;
/// DATA: a later fragment, the short header (`MORE_HEADER_LEN`).
pub const FLAG_MORE: u8 = 64;

// The sizes the format has always had (a change is a new wire version).
const _: () = assert!(COMMON_LEN == 32 && ACK_LEN == 40 && DATA_HEADER_LEN == 68);
const _: () = assert!(INIT_ACK_LEN == 146 && COOKIE_ECHO_LEN == 138);
const _: () = assert!(UNKNOWN_COOKIE_LEN < COOKIE_ECHO_LEN);
const _: () = assert!(TXN_AT + 4 == HANDLER_AT && STATUS_AT + 1 == TAG_AT);
const _: () = assert!(TAG_AT + 8 == DEST_OFFSET_AT && DEST_OFFSET_AT + 8 == MSG_LEN_AT);
const _: () = assert!(MSG_LEN_AT + 4 == FRAG_OFF_AT && FRAG_OFF_AT + 4 == FRAG_LEN_AT);
const _: () = assert!(MORE_HEADER_LEN == 40 && DATA_HEADER_LEN - MORE_HEADER_LEN == 28);

/// Writes `v` big-endian at `at` of a fixed-size header (constant offsets
/// compile to plain stores).
#[inline(always)]
pub(super) fn put16<const N: usize>(h: &mut [u8; N], at: usize, v: u16) {
    h[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

#[inline(always)]
pub(super) fn put32<const N: usize>(h: &mut [u8; N], at: usize, v: u32) {
    h[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

#[inline(always)]
pub(super) fn put64<const N: usize>(h: &mut [u8; N], at: usize, v: u64) {
    h[at..at + 8].copy_from_slice(&v.to_be_bytes());
}

/// Reads a big-endian field of a fixed-size header (constant offsets compile
/// to plain loads, without bounds checks).
#[inline(always)]
pub(super) fn be16<const N: usize>(b: &[u8; N], at: usize) -> u16 {
    let mut x = [0u8; 2];
    x.copy_from_slice(&b[at..at + 2]);
    u16::from_be_bytes(x)
}

#[inline(always)]
pub(super) fn be32<const N: usize>(b: &[u8; N], at: usize) -> u32 {
    let mut x = [0u8; 4];
    x.copy_from_slice(&b[at..at + 4]);
    u32::from_be_bytes(x)
}

#[inline(always)]
pub(super) fn be64<const N: usize>(b: &[u8; N], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(x)
}

/// The u64 at `at` of a packet's bytes, None when they end before it (for
/// whoever peeks at a packet without decoding it: tests, tools).
#[cfg(any(test, feature = "testing"))]
pub fn read_u64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_be_bytes(*b.get(at..)?.first_chunk::<8>()?))
}

/// The u32 at `at` of a packet's bytes, None when they end before it.
#[cfg(any(test, feature = "testing"))]
pub fn read_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(*b.get(at..)?.first_chunk::<4>()?))
}

/// The u16 at `at` of a packet's bytes, None when they end before it.
#[cfg(any(test, feature = "testing"))]
pub fn read_u16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(*b.get(at..)?.first_chunk::<2>()?))
}
