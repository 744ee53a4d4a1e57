//! Checking and parsing one packet (`decode`), each field read at its
//! offset (`layout.rs`); and a large DATA packet under CRC32C whose
//! payload is checked where it is copied (`decode_deferred`).

use super::layout::*;
use super::{
    AckField, Addrs, Category, Common, DecodeError, Integrity, MsgKind, MsgMeta, Packet,
    PacketType, COOKIE_LEN, CRC_LEN, MAGIC, MAX_ARGS, NUM_CHANNELS, VERSION,
};

/// Checks (magic, version, trailer) and parses one packet (a datagram's
/// whole, or one of `packets`). Never panics.
pub fn decode<'a>(integ: &Integrity, dgram: &'a [u8]) -> Result<Packet<'a>, DecodeError> {
    let Some(start) = dgram.first_chunk::<{ TYPE_AT + 1 }>() else {
        return Err(DecodeError::Truncated);
    };
    if be16(start, MAGIC_AT) != MAGIC || start[VERSION_AT] != VERSION {
        return Err(DecodeError::Foreign);
    }
    decode_body(integ.open(dgram)?)
}

/// Payloads from this long may be checked as they are copied where they
/// go (`decode_deferred`).
pub const DEFER_MIN: usize = 4096;

/// A DATA packet under CRC32C whose payload (at least `DEFER_MIN` bytes)
/// is checked where the receiver copies it (`wire::copy_sum`) instead of
/// before: the packet parsed from its unchecked bytes, and what its sum
/// must give (`DeferredCrc::holds`). Nothing of it may be believed before
/// that: None for anything else (the caller decodes it with `decode`,
/// which checks first and says what is wrong).
pub fn decode_deferred(dgram: &[u8]) -> Option<(Packet<'_>, DeferredCrc<'_>)> {
    let start = dgram.first_chunk::<{ TYPE_AT + 1 }>()?;
    if be16(start, MAGIC_AT) != MAGIC
        || start[VERSION_AT] != VERSION
        || start[TYPE_AT] != PacketType::Data as u8
    {
        return None;
    }
    let (body, trailer) = dgram.split_last_chunk::<CRC_LEN>()?;
    let pkt = decode_body(body).ok()?;
    let (Packet::Data { payload, .. } | Packet::More { payload, .. }) = &pkt else {
        return None;
    };
    if payload.len() < DEFER_MIN {
        return None;
    }
    let check = DeferredCrc {
        head: &body[..body.len() - payload.len()],
        len: payload.len(),
        want: u32::from_be_bytes(*trailer),
    };
    Some((pkt, check))
}

/// What a deferred packet's payload must sum to (`decode_deferred`).
#[derive(Clone, Copy, Debug)]
pub struct DeferredCrc<'a> {
    /// The packet's bytes before its payload (summed only when the payload
    /// was: a packet that goes the checked way costs no sum here).
    head: &'a [u8],
    len: usize,
    /// The trailer.
    want: u32,
}

impl DeferredCrc<'_> {
    /// Whether the packet's trailer holds, its payload's sum (`copy_sum`)
    /// being `sum`.
    pub fn holds(&self, sum: u32) -> bool {
        crate::sys::crc32c_extend(super::crc32c(self.head), sum, self.len) == Some(self.want)
    }
}

/// A packet's fields from its bytes before the trailer (checked).
fn decode_body(body: &[u8]) -> Result<Packet<'_>, DecodeError> {
    let Some(h) = body.first_chunk::<COMMON_LEN>() else {
        return Err(DecodeError::Truncated);
    };
    let vtag = be64(h, VTAG_AT);
    let flags = h[FLAGS_AT];
    let channel = h[CHANNEL_AT];
    if channel as usize >= NUM_CHANNELS {
        return Err(DecodeError::Malformed);
    }
    let common = Common {
        vtag,
        channel,
        epoch: be16(h, EPOCH_AT),
        seq: be32(h, SEQ_AT),
        unordered: h[TYPE_AT] == PacketType::Data as u8 && flags & FLAG_UNORDERED != 0,
        acks: [
            AckField {
                valid: flags & FLAG_ACK_REQ != 0,
                next: be32(h, ACK_NEXT_AT[0]),
                epoch: be16(h, ACK_EPOCH_AT[0]),
            },
            AckField {
                valid: flags & FLAG_ACK_REP != 0,
                next: be32(h, ACK_NEXT_AT[1]),
                epoch: be16(h, ACK_EPOCH_AT[1]),
            },
        ],
    };
    const DATA: u8 = PacketType::Data as u8;
    const ACK: u8 = PacketType::Ack as u8;
    const NACK: u8 = PacketType::Nack as u8;
    match h[TYPE_AT] {
        DATA if flags & FLAG_MORE != 0 => decode_more(body, common, flags),
        DATA => decode_data(body, common, flags),
        ACK => {
            let (a, dup) = if flags & FLAG_DUP != 0 {
                let Ok(a) = <&[u8; ACK_DUP_LEN]>::try_from(body) else {
                    return Err(DecodeError::Truncated);
                };
                (&a[..ACK_LEN], Some(be32(a, DUP_AT)))
            } else {
                (body, None)
            };
            let Ok(a) = <&[u8; ACK_LEN]>::try_from(a) else {
                return Err(DecodeError::Truncated);
            };
            Ok(Packet::Ack {
                common,
                sack: be64(a, SACK_AT),
                dup,
            })
        }
        NACK => {
            if body.len() != NACK_LEN {
                return Err(DecodeError::Truncated);
            }
            Ok(Packet::Nack {
                common,
                last: flags & FLAG_FINAL != 0,
            })
        }
        t => decode_handshake(t, vtag, body),
    }
}

/// The address list at `at` of a handshake packet: malformed unless
/// `Addrs::valid` (too many addresses, an unknown family, bytes past the
/// count): such a packet is refused whole, nothing of it kept.
fn addrs_at(b: &[u8], at: usize) -> Result<Addrs<'_>, DecodeError> {
    match b.get(at..).and_then(|r| r.first_chunk::<ADDRS_LEN>()) {
        Some(a) if Addrs::valid(a) => Ok(Addrs(a)),
        Some(_) => Err(DecodeError::Malformed),
        None => Err(DecodeError::Truncated),
    }
}

/// A handshake, heartbeat, shutdown or alias packet of type `t` (`body`:
/// its bytes before the trailer; `vtag` read already).
fn decode_handshake(t: u8, vtag: u64, body: &[u8]) -> Result<Packet<'_>, DecodeError> {
    const INIT: u8 = PacketType::Init as u8;
    const INIT_ACK: u8 = PacketType::InitAck as u8;
    const COOKIE_ECHO: u8 = PacketType::CookieEcho as u8;
    const COOKIE_ACK: u8 = PacketType::CookieAck as u8;
    const ABORT: u8 = PacketType::Abort as u8;
    const HEARTBEAT: u8 = PacketType::Heartbeat as u8;
    const HEARTBEAT_ACK: u8 = PacketType::HeartbeatAck as u8;
    const SHUTDOWN: u8 = PacketType::Shutdown as u8;
    const SHUTDOWN_ACK: u8 = PacketType::ShutdownAck as u8;
    const ALIAS: u8 = PacketType::Alias as u8;
    const ALIAS_ACK: u8 = PacketType::AliasAck as u8;
    const UNKNOWN_COOKIE: u8 = PacketType::UnknownCookie as u8;
    match t {
        INIT => {
            let Ok(b) = <&[u8; INIT_LEN]>::try_from(body) else {
                return Err(DecodeError::Truncated);
            };
            let init_tag = be64(b, INIT_TAG_AT);
            let addrs = addrs_at(b, INIT_ADDRS_AT)?;
            if vtag != 0 || init_tag == 0 {
                return Err(DecodeError::Malformed);
            }
            Ok(Packet::Init { init_tag, addrs })
        }
        INIT_ACK => {
            let Ok(b) = <&[u8; INIT_ACK_LEN]>::try_from(body) else {
                return Err(DecodeError::Truncated);
            };
            let resp_tag = be64(b, RESP_TAG_AT);
            let Some(cookie) = b[INIT_ACK_COOKIE_AT..].first_chunk::<COOKIE_LEN>() else {
                return Err(DecodeError::Truncated);
            };
            let addrs = addrs_at(b, INIT_ADDRS_AT)?;
            if vtag == 0 || resp_tag == 0 {
                return Err(DecodeError::Malformed);
            }
            Ok(Packet::InitAck {
                vtag,
                resp_tag,
                cookie,
                addrs,
            })
        }
        COOKIE_ECHO => {
            let Ok(b) = <&[u8; COOKIE_ECHO_LEN]>::try_from(body) else {
                return Err(DecodeError::Truncated);
            };
            let Some(cookie) = b[ECHO_COOKIE_AT..].first_chunk::<COOKIE_LEN>() else {
                return Err(DecodeError::Truncated);
            };
            let addrs = addrs_at(b, ECHO_ADDRS_AT)?;
            Ok(Packet::CookieEcho {
                vtag,
                cookie,
                addrs,
            })
        }
        UNKNOWN_COOKIE => {
            let Ok(b) = <&[u8; UNKNOWN_COOKIE_LEN]>::try_from(body) else {
                return Err(DecodeError::Truncated);
            };
            let resp_tag = be64(b, UNKNOWN_TAG_AT);
            if vtag == 0 || resp_tag == 0 {
                return Err(DecodeError::Malformed);
            }
            Ok(Packet::UnknownCookie { vtag, resp_tag })
        }
        COOKIE_ACK | ABORT => {
            if body.len() != BARE_LEN {
                return Err(DecodeError::Truncated);
            }
            Ok(if t == ABORT {
                Packet::Abort { vtag }
            } else {
                Packet::CookieAck { vtag }
            })
        }
        HEARTBEAT | HEARTBEAT_ACK | SHUTDOWN | SHUTDOWN_ACK => {
            let Ok(b) = <&[u8; NONCE_LEN]>::try_from(body) else {
                return Err(DecodeError::Truncated);
            };
            let nonce = be64(b, NONCE_AT);
            if vtag == 0 {
                return Err(DecodeError::Malformed);
            }
            Ok(match t {
                HEARTBEAT => Packet::Heartbeat { vtag, nonce },
                HEARTBEAT_ACK => Packet::HeartbeatAck { vtag, nonce },
                SHUTDOWN => Packet::Shutdown { vtag, nonce },
                _ => Packet::ShutdownAck { vtag, nonce },
            })
        }
        ALIAS | ALIAS_ACK => {
            let Ok(b) = <&[u8; ALIAS_LEN]>::try_from(body) else {
                return Err(DecodeError::Truncated);
            };
            let Some(port) = u16::try_from(be64(b, PORT_AT)).ok().filter(|&p| p != 0) else {
                return Err(DecodeError::Malformed);
            };
            if vtag == 0 {
                return Err(DecodeError::Malformed);
            }
            Ok(if t == ALIAS {
                Packet::Alias { vtag, port }
            } else {
                Packet::AliasAck { vtag, port }
            })
        }
        _ => Err(DecodeError::Malformed),
    }
}

/// A later fragment (`FLAG_MORE`): its offset (never 0: a message starts
/// with the full header) and payload; no flag of the full header's.
#[inline(always)]
fn decode_more(body: &[u8], common: Common, flags: u8) -> Result<Packet<'_>, DecodeError> {
    let Some(h) = body.first_chunk::<MORE_HEADER_LEN>() else {
        return Err(DecodeError::Truncated);
    };
    let frag_off = be32(h, MORE_OFF_AT);
    let frag_len = be32(h, MORE_LEN_AT) as usize;
    if body.len() != MORE_HEADER_LEN + frag_len {
        return Err(DecodeError::Truncated);
    }
    if frag_off == 0 || flags & (FLAG_RETURNED_REQUEST | FLAG_UNORDERED) != 0 {
        return Err(DecodeError::Malformed);
    }
    Ok(Packet::More {
        common,
        frag_off,
        payload: &body[MORE_HEADER_LEN..],
    })
}

#[inline(always)]
fn decode_data(body: &[u8], common: Common, flags: u8) -> Result<Packet<'_>, DecodeError> {
    let Some(h) = body.first_chunk::<DATA_HEADER_LEN>() else {
        return Err(DecodeError::Truncated);
    };
    let kind_cat = h[KIND_CATEGORY_AT];
    let kind = MsgKind::from_u8(kind_cat >> 4).ok_or(DecodeError::Malformed)?;
    let category = Category::from_u8(kind_cat & 0xf).ok_or(DecodeError::Malformed)?;
    let nargs = h[NARGS_AT] as usize;
    if nargs > MAX_ARGS {
        return Err(DecodeError::Malformed);
    }
    let msg_len = be32(h, MSG_LEN_AT);
    let frag_off = be32(h, FRAG_OFF_AT);
    let frag_len = be32(h, FRAG_LEN_AT) as usize;
    let args_end = ARGS_AT + 4 * nargs;
    if body.len() != args_end + frag_len {
        return Err(DecodeError::Truncated);
    }
    if (frag_off as u64) + frag_len as u64 > msg_len as u64 {
        return Err(DecodeError::Malformed);
    }
    let (arg_bytes, payload) = body[ARGS_AT..].split_at(4 * nargs);
    let mut args = [0u32; MAX_ARGS];
    for (a, b) in args.iter_mut().zip(arg_bytes.chunks_exact(4)) {
        let mut x = [0u8; 4];
        x.copy_from_slice(b);
        *a = u32::from_be_bytes(x);
    }
    let meta = MsgMeta {
        kind,
        category,
        handler: h[HANDLER_AT],
        nargs: nargs as u8,
        args,
        tag: be64(h, TAG_AT),
        dest_offset: be64(h, DEST_OFFSET_AT),
        txn: be32(h, TXN_AT),
        status: h[STATUS_AT],
        returned_request: flags & FLAG_RETURNED_REQUEST != 0,
        express: false,
        placed: None,
        overtook: 0,
    };
    Ok(Packet::Data {
        common,
        meta,
        msg_len,
        frag_off,
        payload,
    })
}
