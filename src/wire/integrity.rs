//! The trailer that protects every datagram: how it is written (`seal`) and
//! checked (`open`). One type, carried by `ProtoConfig`, so that the packet
//! codec does not care which protection is in use.
//!
//! Today: CRC32C (catches corruption, not forgery). The MAC keyed by the
//! job key (`wire::mac::MacKey`, a 16-byte tag over header and payload)
//! plugs in as one more variant: `trailer_len` 16, `seal` appends the tag,
//! `open` checks it in constant time.

use super::{crc32c, DecodeError, CRC_LEN};

/// How datagrams are sealed and checked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Integrity {
    /// A CRC32C over everything before it (big-endian u32).
    #[default]
    Crc32c,
}

impl Integrity {
    /// Bytes the trailer adds to every datagram.
    #[inline]
    pub fn trailer_len(&self) -> usize {
        match self {
            Integrity::Crc32c => CRC_LEN,
        }
    }

    /// Appends the trailer of the datagram that starts at `buf[start..]`.
    #[inline]
    pub fn seal(&self, buf: &mut Vec<u8>, start: usize) {
        match self {
            Integrity::Crc32c => {
                let crc = crc32c(&buf[start..]);
                buf.extend_from_slice(&crc.to_be_bytes());
            }
        }
    }

    /// Checks the trailer of `dgram`; returns what it protects.
    #[inline]
    pub fn open<'a>(&self, dgram: &'a [u8]) -> Result<&'a [u8], DecodeError> {
        match self {
            Integrity::Crc32c => {
                let Some((body, crc)) = dgram.split_last_chunk::<CRC_LEN>() else {
                    return Err(DecodeError::Truncated);
                };
                if crc32c(body) != u32::from_be_bytes(*crc) {
                    return Err(DecodeError::Checksum);
                }
                Ok(body)
            }
        }
    }
}
