//! Framing a datagram's packets (a bundle: several DATA, ACK and NACK
//! packets of one association back to back, each with its own header and
//! trailer): a packet's length is known from its header (DATA: header,
//! 4*nargs, frag_len, trailer; a later fragment: its short header,
//! frag_len, trailer; ACK: its fixed length, 4 more with the dup
//! flag; NACK: fixed). Handshake, heartbeat and shutdown packets are alone
//! in their datagram. `packets` splits a datagram; `decode` checks each.

use super::layout::*;
#[cfg(test)]
use super::{decode, Packet};
use super::{DecodeError, Integrity, PacketType, MAGIC, MAX_ARGS, VERSION};

/// The verification tag of a datagram that claims to be a DATA, ACK or
/// NACK (what an association's key protects), None for anything else
/// (handshake packets, under the job key). Trusts nothing: `decode` still
/// checks the whole datagram under the key this chose.
pub fn association_vtag(dgram: &[u8]) -> Option<u64> {
    let h = dgram.first_chunk::<COMMON_LEN>()?;
    const DATA: u8 = PacketType::Data as u8;
    const NACK: u8 = PacketType::Nack as u8;
    matches!(h[TYPE_AT], DATA..=NACK).then(|| be64(h, VTAG_AT))
}

/// Most packets one datagram carries: what follows the 64th is refused.
pub const MAX_BUNDLE: usize = 64;

/// The packets of one datagram, in order (`packets`): each `Ok` is one
/// packet's bytes, framed by its header and not yet checked (`decode`
/// checks it). The walk ends at the first packet that cannot be framed
/// (`Err`, then nothing): its header claims more than the datagram holds,
/// it is not a DATA, ACK or NACK after the first packet, or it is past
/// `MAX_BUNDLE`. A first packet that is not a DATA, ACK or NACK of this
/// version (a handshake packet, garbage) is the whole datagram, for
/// `decode` to check or refuse. Never reads past the datagram.
pub struct Packets<'a> {
    rest: &'a [u8],
    trailer: usize,
    n: usize,
}

/// Splits `dgram` into its packets, each of which ends with a trailer of
/// `integ`'s length (see `Packets`).
#[inline]
pub fn packets<'a>(integ: &Integrity, dgram: &'a [u8]) -> Packets<'a> {
    Packets {
        rest: dgram,
        trailer: integ.trailer_len(),
        n: 0,
    }
}

/// Whether any packet of `dgram` (sealed with the default CRC32C) decodes
/// and satisfies `f`: what a test's network filter asks of a datagram,
/// which may bundle several packets.
#[cfg(test)]
pub fn any_packet(dgram: &[u8], mut f: impl FnMut(&Packet<'_>) -> bool) -> bool {
    let integ = Integrity::default();
    packets(&integ, dgram).any(|p| p.and_then(|p| decode(&integ, p)).is_ok_and(|p| f(&p)))
}

impl<'a> Iterator for Packets<'a> {
    type Item = Result<&'a [u8], DecodeError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.n > 0 && self.rest.is_empty() {
            return None;
        }
        let rest = std::mem::take(&mut self.rest);
        if self.n == MAX_BUNDLE {
            self.n += 1;
            return Some(Err(DecodeError::Malformed));
        }
        if self.n > MAX_BUNDLE {
            return None;
        }
        let first = self.n == 0;
        self.n += 1;
        Some(match frame_len(rest, self.trailer) {
            Ok(Some(len)) => {
                let (p, r) = rest.split_at(len);
                self.rest = r;
                Ok(p)
            }
            // alone in its datagram, or refused
            Ok(None) if first => Ok(rest),
            Ok(None) => Err(DecodeError::Malformed),
            Err(e) => Err(e),
        })
    }
}

/// The length of the DATA, ACK or NACK packet at the start of `b` (its
/// trailer `trailer` bytes long), from its header; None when `b` does not
/// start with one of this version's; an error when its header claims more
/// than `b` holds or an impossible argument count.
#[inline]
fn frame_len(b: &[u8], trailer: usize) -> Result<Option<usize>, DecodeError> {
    let Some(h) = b.first_chunk::<COMMON_LEN>() else {
        return Ok(None);
    };
    if be16(h, MAGIC_AT) != MAGIC || h[VERSION_AT] != VERSION {
        return Ok(None);
    }
    const DATA: u8 = PacketType::Data as u8;
    const ACK: u8 = PacketType::Ack as u8;
    const NACK: u8 = PacketType::Nack as u8;
    let len = match h[TYPE_AT] {
        DATA if h[FLAGS_AT] & FLAG_MORE != 0 => {
            let Some(d) = b.first_chunk::<MORE_HEADER_LEN>() else {
                return Err(DecodeError::Truncated);
            };
            MORE_HEADER_LEN as u64 + u64::from(be32(d, MORE_LEN_AT))
        }
        DATA => {
            let Some(d) = b.first_chunk::<DATA_HEADER_LEN>() else {
                return Err(DecodeError::Truncated);
            };
            let nargs = d[NARGS_AT] as u64;
            if nargs > MAX_ARGS as u64 {
                return Err(DecodeError::Malformed);
            }
            ARGS_AT as u64 + 4 * nargs + u64::from(be32(d, FRAG_LEN_AT))
        }
        ACK if h[FLAGS_AT] & FLAG_DUP != 0 => ACK_DUP_LEN as u64,
        ACK => ACK_LEN as u64,
        NACK => NACK_LEN as u64,
        _ => return Ok(None),
    } + trailer as u64;
    if len > b.len() as u64 {
        return Err(DecodeError::Truncated);
    }
    Ok(Some(len as usize))
}
