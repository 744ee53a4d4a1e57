//! The wire format (version 5): a packet is one fixed header in network
//! byte order whose verification tag names the association, up to 16
//! 32-bit arguments, the payload fragment, then the integrity trailer
//! (`Integrity`: a CRC32C, or with a job key a MAC) over everything before
//! it. A datagram carries one packet, or several DATA, ACK and NACK packets
//! back to back (a bundle, as SCTP bundles chunks), each with its own
//! header and trailer, at most `MAX_BUNDLE`. Where each field lies is
//! named once, in `layout.rs`.
//!
//! Parsing is split from encoding: `packets` frames a datagram's packets by
//! their headers (`frame.rs`), `decode` checks each one's length, magic,
//! version and trailer, then yields a parsed `Packet` (`decode.rs`);
//! nothing panics on any input. `encode.rs` writes every packet type.

#[cfg(test)]
mod codec_tests;
mod decode;
mod encode;
mod frame;
mod integrity;
pub mod layout;
#[cfg(test)]
mod layout_tests;
pub mod mac;
mod mac_digest;
mod message;
#[cfg(test)]
mod more_tests;
mod packet;
mod polyhash;
mod split_key;

pub use decode::{decode, decode_deferred, DEFER_MIN};
#[cfg(any(test, feature = "testing"))]
pub use encode::encode_ack;
pub use encode::{
    encode_abort, encode_ack_dup, encode_alias, encode_cookie_ack, encode_cookie_echo_listing,
    encode_data, encode_data_gathered, encode_heartbeat, encode_init_ack_listing,
    encode_init_listing, encode_more, encode_more_gathered, encode_nack, encode_shutdown,
    encode_unknown_cookie,
};
#[cfg(any(test, feature = "testing"))]
pub use encode::{encode_cookie_echo, encode_init, encode_init_ack};
#[cfg(test)]
pub use frame::any_packet;
pub use frame::{association_vtag, packets, MAX_BUNDLE};
#[cfg(any(test, feature = "testing"))]
pub use integrity::DIGEST_SEALS;
pub use integrity::{Integrity, PayloadPiece, MAC_TRAILER_LEN};
#[cfg(any(test, feature = "testing"))]
pub use layout::{ACK_LEN, COMMON_LEN, INIT_ACK_LEN};
pub use layout::{ADDR_LEN, MAX_LISTED};
pub use layout::{DATA_HEADER_LEN, MORE_HEADER_LEN};
pub use mac_digest::PayloadDigest;
pub use message::{Category, MsgKind, MsgMeta, Placed, MAX_ARGS};
pub use packet::{Addrs, Common, Packet};

/// Packet magic ("RA") and version.
pub const MAGIC: u16 = 0x5241;
/// 5: a later fragment of a message goes with the short header
/// (`FLAG_MORE`: offset and length only); 4: INIT, INIT_ACK and
/// COOKIE_ECHO list the sender's other rail addresses (3: a datagram may
/// carry several packets; 2: one packet per datagram; a peer of another
/// version refuses every packet as foreign).
pub const VERSION: u8 = 5;

/// Why a datagram was not accepted as a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Shorter than its header says, or longer.
    Truncated,
    /// Not a ramp packet (magic), or another protocol version.
    Foreign,
    /// The integrity trailer does not match.
    Checksum,
    /// A field holds a value no sender produces.
    Malformed,
}

/// Size of the cookie an INIT_ACK carries and a COOKIE_ECHO returns.
pub const COOKIE_LEN: usize = 48;

/// Size of the CRC32C trailer (`Integrity::Crc32c`).
pub const CRC_LEN: usize = 4;

/// The two logical channels between a pair of endpoints. Replies have their own
/// channel so that they are never held up behind requests.
pub const CHANNEL_REQUEST: u8 = 0;
pub const CHANNEL_REPLY: u8 = 1;
pub const NUM_CHANNELS: usize = 2;

/// The longest integrity trailer any `Integrity` variant adds (the job
/// key's MAC: a 12-byte nonce and a 16-byte tag).
pub const MAX_TRAILER_LEN: usize = MAC_TRAILER_LEN;

/// Largest packet a DATA header plus 16 arguments plus trailer takes.
pub const MAX_OVERHEAD: usize = DATA_HEADER_LEN + 4 * MAX_ARGS + MAX_TRAILER_LEN;

/// Packet types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum PacketType {
    Data = 1,
    Ack = 2,
    Nack = 3,
    Init = 4,
    InitAck = 5,
    CookieEcho = 6,
    CookieAck = 7,
    Abort = 8,
    /// Are you there? (vtag: the receiver's; 8 bytes the answer echoes)
    Heartbeat = 9,
    /// Here: the echo of a HEARTBEAT's 8 bytes.
    HeartbeatAck = 10,
    /// Ends an idle association gracefully (vtag: the receiver's; 8 bytes,
    /// a number that grows with every try, echoed by the answer).
    Shutdown = 11,
    /// Done: both ends have freed the association (vtag: the asker's, or
    /// the asker's SHUTDOWN's own tag reflected by an end that had already
    /// freed it).
    ShutdownAck = 12,
    /// Without a packet MAC: "my packets of this association may also come
    /// from this port of my host" (vtag: the receiver's; 8 bytes, the port),
    /// sent from the endpoint's name, the only address that proves who
    /// sends it (`proto/alias.rs`).
    Alias = 13,
    /// The port is taken as the sender's (vtag: the announcer's; the port
    /// echoed).
    AliasAck = 14,
    /// "I cannot open the cookie you echo": the answer of an endpoint whose
    /// secret did not make it (it restarted since its INIT_ACK) to a
    /// COOKIE_ECHO whose MAC fails (vtag: the initiator's tag the cookie
    /// names; 8 bytes: the responder's tag the echo carried).
    UnknownCookie = 15,
}

/// A piggybacked cumulative acknowledgement for one reverse channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct AckField {
    pub valid: bool,
    pub epoch: u16,
    /// Next sequence number expected (everything before it has arrived).
    pub next: u32,
}

/// Computes the CRC32C used by the wire format (a short packet's with the
/// CPU's instruction directly: `sys::crc32c_short`; a long one folded with
/// VPCLMULQDQ where the CPU has it: `sys::crc32c_append_long`; else the
/// crate's: the same sum).
#[inline]
pub fn crc32c(bytes: &[u8]) -> u32 {
    crate::sys::crc32c_short(bytes)
        .or_else(|| crate::sys::crc32c_append_long(0, bytes))
        .unwrap_or_else(|| crc32c::crc32c(bytes))
}

/// Appends a copy of `src` to `dst` (empty), keeping in `sums` the
/// CRC32C sums of its 4 KiB blocks, made in the same pass as the copy
/// where the CPU can (`sys::copy_summed`; else `sums` is left empty): a
/// gathered datagram's trailer over any piece of it then reads only the
/// bytes of the piece's partial blocks again (`PayloadPiece::summed`).
#[inline]
pub fn copy_summed(dst: &mut Vec<u8>, src: &[u8], sums: &mut Vec<u32>) {
    crate::sys::copy_summed(dst, src, sums);
}

/// Copies `src` into `dst` (as long) and returns its sum for
/// `DeferredCrc::holds`, in one pass (`sys::copy_sum`); None, nothing
/// written, where the CPU cannot (the caller checks, then copies).
#[inline]
pub fn copy_sum(dst: &mut [u8], src: &[u8]) -> Option<u32> {
    crate::sys::copy_sum(dst, src)
}

/// `copy_sum` appended to `v`; None, `v` unchanged, where it cannot.
#[inline]
pub fn extend_sum(v: &mut Vec<u8>, src: &[u8]) -> Option<u32> {
    crate::sys::extend_sum(v, src)
}

/// `v.extend_from_slice(src)` for payloads,
/// clear of glibc's slow `rep movsb` on AMD (`sys/copy.rs`).
pub(crate) use crate::sys::extend_bytes;

/// Payloads from this long are worth copying with their sums.
pub const SUM_BLOCK: usize = crate::sys::SUM_BLOCK;

/// The CRC32C `crc` continued over `bytes` (`crc32c::crc32c_append`'s
/// sum; a gathered datagram's second piece).
#[inline]
pub fn crc32c_append(crc: u32, bytes: &[u8]) -> u32 {
    crate::sys::crc32c_append_long(crc, bytes).unwrap_or_else(|| crc32c::crc32c_append(crc, bytes))
}
