//! The wire format: one fixed header in network byte order, up to 16 32-bit
//! arguments, the payload fragment, then a CRC32C over everything before it.
//!
//! Parsing is split from encoding: `decode` checks length, magic, version and
//! checksum once, then yields a parsed `Packet`; nothing panics on any input.

mod codec;
pub mod mac;
mod message;

pub use codec::{decode, encode_ack, encode_data, encode_nack, Common, Packet};
pub use message::{Category, MsgKind, MsgMeta, MAX_ARGS};

/// Packet magic ("RA") and version.
pub const MAGIC: u16 = 0x5241;
pub const VERSION: u8 = 1;

/// Size of the header shared by every packet type.
pub const COMMON_LEN: usize = 32;
/// Size of the DATA header (common part included), before the arguments.
pub const DATA_HEADER_LEN: usize = 68;
/// Size of an ACK packet without the checksum.
pub const ACK_LEN: usize = 40;
/// Size of the trailing CRC32C.
pub const CRC_LEN: usize = 4;

/// The two logical channels between a pair of endpoints. Replies have their own
/// channel so that they are never held up behind requests.
pub const CHANNEL_REQUEST: u8 = 0;
pub const CHANNEL_REPLY: u8 = 1;
pub const NUM_CHANNELS: usize = 2;

/// Largest packet a DATA header plus 16 arguments plus checksum takes.
pub const MAX_OVERHEAD: usize = DATA_HEADER_LEN + 4 * MAX_ARGS + CRC_LEN;

/// Packet types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum PacketType {
    Data = 1,
    Ack = 2,
    Nack = 3,
}

/// A piggybacked cumulative acknowledgement for one reverse channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct AckField {
    pub valid: bool,
    pub epoch: u16,
    /// Next sequence number expected (everything before it has arrived).
    pub next: u32,
}

/// Computes the CRC32C used by the wire format.
pub fn crc32c(bytes: &[u8]) -> u32 {
    crc32c::crc32c(bytes)
}
