//! Encoding and decoding of packets. Layout, wire version 3 (all big-endian):
//!
//! A datagram holds one packet, or (a bundle) several DATA, ACK and NACK
//! packets of one association back to back, each with its own header and
//! trailer: a packet's length is known from its header (DATA: header,
//! 4*nargs, frag_len, trailer; ACK: its fixed length, 4 more with the dup
//! flag; NACK: fixed). Handshake, heartbeat and shutdown packets are alone
//! in their datagram. `packets` splits a datagram; `decode` checks each.
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
//! INIT:        32 initiator tag u64 | 40 zero padding to the INIT_ACK's size
//! INIT_ACK:    32 responder tag u64 | 40 cookie (COOKIE_LEN)
//! COOKIE_ECHO: 32 cookie (COOKIE_LEN)
//! COOKIE_ACK, ABORT: nothing more
//! HEARTBEAT, HEARTBEAT_ACK, SHUTDOWN, SHUTDOWN_ACK: 32 nonce u64
//! ALIAS, ALIAS_ACK: 32 port u64 (1..=65535)
//! then the integrity trailer (`Integrity`: CRC32C, or with a job key the
//! nonce (12) and MAC tag (16)) over everything before it
//! ```

use super::{
    AckField, Category, DecodeError, Integrity, MsgKind, MsgMeta, PacketType, PayloadPiece,
    ACK_LEN, COMMON_LEN, COOKIE_LEN, CRC_LEN, DATA_HEADER_LEN, INIT_ACK_LEN, MAGIC, MAX_ARGS,
    NUM_CHANNELS, VERSION,
};

const FLAG_ACK_REQ: u8 = 1;
const FLAG_ACK_REP: u8 = 2;
const FLAG_RETURNED_REQUEST: u8 = 4;
const FLAG_FINAL: u8 = 8;
const FLAG_DUP: u8 = 16;

/// Fields every packet of an association (DATA, ACK, NACK) carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Common {
    /// The receiver's verification tag of the association.
    pub vtag: u64,
    pub channel: u8,
    pub epoch: u16,
    pub seq: u32,
    /// Piggybacked cumulative acks for the reverse channels, indexed by channel.
    pub acks: [AckField; NUM_CHANNELS],
}

/// A parsed, checked packet borrowing its payload from the datagram.
#[derive(Debug, PartialEq, Eq)]
pub enum Packet<'a> {
    Data {
        common: Common,
        meta: MsgMeta,
        msg_len: u32,
        frag_off: u32,
        payload: &'a [u8],
    },
    Ack {
        common: Common,
        sack: u64,
        /// The sequence number of a DATA that arrived twice since the last
        /// ACK of the channel.
        dup: Option<u32>,
    },
    Nack {
        common: Common,
        /// The receiver will never take this packet in this epoch: the
        /// sender gives the message up (ECONGESTION).
        last: bool,
    },
    /// Opens an association: the initiator's tag (never 0). Its vtag is 0.
    Init { init_tag: u64 },
    /// The answer to an INIT (vtag: the initiator's tag): the responder's
    /// tag and the cookie to echo.
    InitAck {
        vtag: u64,
        resp_tag: u64,
        cookie: &'a [u8; COOKIE_LEN],
    },
    /// The cookie sent back (vtag: the responder's tag).
    CookieEcho {
        vtag: u64,
        cookie: &'a [u8; COOKIE_LEN],
    },
    /// The association is established (vtag: the initiator's tag).
    CookieAck { vtag: u64 },
    /// Ends the association whose tag it carries.
    Abort { vtag: u64 },
    /// Asks the peer of an association (vtag: its tag) to answer; `nonce`
    /// comes back in the HEARTBEAT_ACK.
    Heartbeat { vtag: u64, nonce: u64 },
    /// The answer to a HEARTBEAT (vtag: the asker's tag).
    HeartbeatAck { vtag: u64, nonce: u64 },
    /// Asks the peer to free the idle association (vtag: its tag);
    /// `nonce` grows with every SHUTDOWN of the association.
    Shutdown { vtag: u64, nonce: u64 },
    /// The association is freed (vtag: the asker's tag, or its SHUTDOWN's
    /// tag reflected); `nonce` echoes the SHUTDOWN's.
    ShutdownAck { vtag: u64, nonce: u64 },
    /// The sender's packets of the association (vtag: the receiver's tag)
    /// may also come from `port` of its host (never 0).
    Alias { vtag: u64, port: u16 },
    /// `port` is taken as the asker's (vtag: the asker's tag).
    AliasAck { vtag: u64, port: u16 },
}

/// Writes `v` big-endian at `at` of a fixed-size header (constant offsets
/// compile to plain stores).
#[inline(always)]
fn put16<const N: usize>(h: &mut [u8; N], at: usize, v: u16) {
    h[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

#[inline(always)]
fn put32<const N: usize>(h: &mut [u8; N], at: usize, v: u32) {
    h[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

#[inline(always)]
fn put64<const N: usize>(h: &mut [u8; N], at: usize, v: u64) {
    h[at..at + 8].copy_from_slice(&v.to_be_bytes());
}

/// Fills the common part (the first `COMMON_LEN` bytes) of a header.
#[inline(always)]
fn put_common<const N: usize>(h: &mut [u8; N], ptype: PacketType, c: &Common, extra_flags: u8) {
    let mut flags = extra_flags;
    if c.acks[0].valid {
        flags |= FLAG_ACK_REQ;
    }
    if c.acks[1].valid {
        flags |= FLAG_ACK_REP;
    }
    put16(h, 0, MAGIC);
    h[2] = VERSION;
    h[3] = ptype as u8;
    put64(h, 4, c.vtag);
    h[12] = c.channel;
    h[13] = flags;
    put16(h, 14, c.epoch);
    put32(h, 16, c.seq);
    put32(h, 20, c.acks[0].next);
    put32(h, 24, c.acks[1].next);
    put16(h, 28, c.acks[0].epoch);
    put16(h, 30, c.acks[1].epoch);
}

/// Appends a DATA packet carrying `payload` (one fragment of a message of
/// `msg_len` bytes starting at `frag_off`) to `buf`.
pub fn encode_data(
    buf: &mut Vec<u8>,
    integ: &Integrity,
    common: &Common,
    meta: &MsgMeta,
    msg_len: u32,
    frag_off: u32,
    payload: &[u8],
) {
    let start = buf.len();
    buf.reserve(DATA_HEADER_LEN + 4 * meta.nargs as usize + payload.len() + integ.trailer_len());
    encode_data_header(buf, common, meta, msg_len, frag_off, payload.len() as u32);
    buf.extend_from_slice(payload);
    integ.seal(buf, start);
}

/// Appends the DATA packet of `payload` as two pieces around it, for a
/// datagram gathered from the header, `payload` where it lies, and the
/// trailer (no copy of the payload). Returns where the trailer starts in
/// `buf` (every integrity seals pieces: `Integrity::seal_gathered`).
#[allow(clippy::too_many_arguments)]
pub fn encode_data_gathered(
    buf: &mut Vec<u8>,
    integ: &Integrity,
    common: &Common,
    meta: &MsgMeta,
    msg_len: u32,
    frag_off: u32,
    payload: PayloadPiece<'_>,
) -> usize {
    let start = buf.len();
    let len = payload.bytes().len() as u32;
    encode_data_header(buf, common, meta, msg_len, frag_off, len);
    let trailer = buf.len();
    integ.seal_gathered(buf, start, payload);
    trailer
}

/// Appends a DATA packet's header and arguments for a fragment of
/// `frag_len` bytes.
fn encode_data_header(
    buf: &mut Vec<u8>,
    common: &Common,
    meta: &MsgMeta,
    msg_len: u32,
    frag_off: u32,
    frag_len: u32,
) {
    let flags = if meta.returned_request {
        FLAG_RETURNED_REQUEST
    } else {
        0
    };
    // The fixed header is built on the stack and appended at once (a copy
    // of known length), then the arguments.
    let mut h = [0u8; DATA_HEADER_LEN];
    put_common(&mut h, PacketType::Data, common, flags);
    put32(&mut h, 32, meta.txn);
    h[36] = meta.handler;
    h[37] = ((meta.kind as u8) << 4) | meta.category as u8;
    h[38] = meta.nargs;
    h[39] = meta.status;
    put64(&mut h, 40, meta.tag);
    put64(&mut h, 48, meta.dest_offset);
    put32(&mut h, 56, msg_len);
    put32(&mut h, 60, frag_off);
    put32(&mut h, 64, frag_len);
    buf.extend_from_slice(&h);
    for a in meta.args() {
        buf.extend_from_slice(&a.to_be_bytes());
    }
}

/// Appends an ACK packet: `common.seq` is the cumulative next-expected number
/// of channel `common.channel`; `sack` marks later packets that have arrived.
#[cfg(any(test, feature = "testing"))] // tests forge ACKs; the protocol says `dup`
pub fn encode_ack(buf: &mut Vec<u8>, integ: &Integrity, common: &Common, sack: u64) {
    encode_ack_dup(buf, integ, common, sack, None);
}

/// `encode_ack`, with (`dup`) the sequence number of a DATA that arrived
/// twice since the last ACK of the channel.
pub fn encode_ack_dup(
    buf: &mut Vec<u8>,
    integ: &Integrity,
    common: &Common,
    sack: u64,
    dup: Option<u32>,
) {
    let start = buf.len();
    let mut h = [0u8; ACK_LEN + 4];
    let flag = if dup.is_some() { FLAG_DUP } else { 0 };
    put_common(&mut h, PacketType::Ack, common, flag);
    put64(&mut h, 32, sack);
    put32(&mut h, ACK_LEN, dup.unwrap_or(0));
    let len = if dup.is_some() { ACK_LEN + 4 } else { ACK_LEN };
    buf.reserve(len + integ.trailer_len());
    buf.extend_from_slice(&h[..len]);
    integ.seal(buf, start);
}

/// Appends a NACK packet: the receiver has no buffer for `common.seq` of
/// `common.channel`; the sender goes back to it, or, when `last`, gives the
/// message up.
pub fn encode_nack(buf: &mut Vec<u8>, integ: &Integrity, common: &Common, last: bool) {
    let start = buf.len();
    let mut h = [0u8; COMMON_LEN];
    put_common(
        &mut h,
        PacketType::Nack,
        common,
        if last { FLAG_FINAL } else { 0 },
    );
    buf.reserve(COMMON_LEN + integ.trailer_len());
    buf.extend_from_slice(&h);
    integ.seal(buf, start);
}

/// Appends a handshake packet of type `ptype` with `vtag`, then `body`
/// (its length is the type's).
fn encode_handshake(
    buf: &mut Vec<u8>,
    integ: &Integrity,
    ptype: PacketType,
    vtag: u64,
    body: &[&[u8]],
) {
    let start = buf.len();
    let mut h = [0u8; COMMON_LEN];
    put16(&mut h, 0, MAGIC);
    h[2] = VERSION;
    h[3] = ptype as u8;
    put64(&mut h, 4, vtag);
    buf.extend_from_slice(&h);
    for b in body {
        buf.extend_from_slice(b);
    }
    integ.seal(buf, start);
}

/// Appends an INIT offering `init_tag`, padded to the size of the INIT_ACK
/// it provokes (an INIT never buys a larger answer).
pub fn encode_init(buf: &mut Vec<u8>, integ: &Integrity, init_tag: u64) {
    let pad = [0u8; INIT_ACK_LEN - COMMON_LEN - 8];
    let tag = init_tag.to_be_bytes();
    encode_handshake(buf, integ, PacketType::Init, 0, &[&tag, &pad]);
}

/// Appends an INIT_ACK to the initiator whose tag is `vtag`.
pub fn encode_init_ack(
    buf: &mut Vec<u8>,
    integ: &Integrity,
    vtag: u64,
    resp_tag: u64,
    cookie: &[u8; COOKIE_LEN],
) {
    let tag = resp_tag.to_be_bytes();
    encode_handshake(buf, integ, PacketType::InitAck, vtag, &[&tag, cookie]);
}

/// Appends a COOKIE_ECHO to the responder whose tag is `vtag`.
pub fn encode_cookie_echo(
    buf: &mut Vec<u8>,
    integ: &Integrity,
    vtag: u64,
    cookie: &[u8; COOKIE_LEN],
) {
    encode_handshake(buf, integ, PacketType::CookieEcho, vtag, &[cookie]);
}

/// Appends a COOKIE_ACK to the initiator whose tag is `vtag`.
pub fn encode_cookie_ack(buf: &mut Vec<u8>, integ: &Integrity, vtag: u64) {
    encode_handshake(buf, integ, PacketType::CookieAck, vtag, &[]);
}

/// Appends an ABORT carrying `vtag`.
pub fn encode_abort(buf: &mut Vec<u8>, integ: &Integrity, vtag: u64) {
    encode_handshake(buf, integ, PacketType::Abort, vtag, &[]);
}

/// Appends a HEARTBEAT (or, `ack`, its answer) carrying `vtag` and `nonce`.
pub fn encode_heartbeat(buf: &mut Vec<u8>, integ: &Integrity, vtag: u64, ack: bool, nonce: u64) {
    let t = if ack {
        PacketType::HeartbeatAck
    } else {
        PacketType::Heartbeat
    };
    encode_handshake(buf, integ, t, vtag, &[&nonce.to_be_bytes()]);
}

/// Appends a SHUTDOWN (or, `ack`, its answer) carrying `vtag` and `nonce`.
pub fn encode_shutdown(buf: &mut Vec<u8>, integ: &Integrity, vtag: u64, ack: bool, nonce: u64) {
    let t = if ack {
        PacketType::ShutdownAck
    } else {
        PacketType::Shutdown
    };
    encode_handshake(buf, integ, t, vtag, &[&nonce.to_be_bytes()]);
}

/// Appends an ALIAS (or, `ack`, its answer) carrying `vtag` and `port`.
pub fn encode_alias(buf: &mut Vec<u8>, integ: &Integrity, vtag: u64, ack: bool, port: u16) {
    let t = if ack {
        PacketType::AliasAck
    } else {
        PacketType::Alias
    };
    encode_handshake(buf, integ, t, vtag, &[&u64::from(port).to_be_bytes()]);
}

/// Reads a big-endian field of a fixed-size header (constant offsets compile
/// to plain loads, without bounds checks).
#[inline(always)]
fn be16<const N: usize>(b: &[u8; N], at: usize) -> u16 {
    let mut x = [0u8; 2];
    x.copy_from_slice(&b[at..at + 2]);
    u16::from_be_bytes(x)
}

#[inline(always)]
fn be32<const N: usize>(b: &[u8; N], at: usize) -> u32 {
    let mut x = [0u8; 4];
    x.copy_from_slice(&b[at..at + 4]);
    u32::from_be_bytes(x)
}

#[inline(always)]
fn be64<const N: usize>(b: &[u8; N], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(x)
}

/// The verification tag of a datagram that claims to be a DATA, ACK or
/// NACK (what an association's key protects), None for anything else
/// (handshake packets, under the job key). Trusts nothing: `decode` still
/// checks the whole datagram under the key this chose.
pub fn association_vtag(dgram: &[u8]) -> Option<u64> {
    let h = dgram.first_chunk::<COMMON_LEN>()?;
    const DATA: u8 = PacketType::Data as u8;
    const NACK: u8 = PacketType::Nack as u8;
    matches!(h[3], DATA..=NACK).then(|| be64(h, 4))
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
    if be16(h, 0) != MAGIC || h[2] != VERSION {
        return Ok(None);
    }
    const DATA: u8 = PacketType::Data as u8;
    const ACK: u8 = PacketType::Ack as u8;
    const NACK: u8 = PacketType::Nack as u8;
    let len = match h[3] {
        DATA => {
            let Some(d) = b.first_chunk::<DATA_HEADER_LEN>() else {
                return Err(DecodeError::Truncated);
            };
            let nargs = d[38] as u64;
            if nargs > MAX_ARGS as u64 {
                return Err(DecodeError::Malformed);
            }
            DATA_HEADER_LEN as u64 + 4 * nargs + u64::from(be32(d, 64))
        }
        ACK if h[13] & FLAG_DUP != 0 => ACK_LEN as u64 + 4,
        ACK => ACK_LEN as u64,
        NACK => COMMON_LEN as u64,
        _ => return Ok(None),
    } + trailer as u64;
    if len > b.len() as u64 {
        return Err(DecodeError::Truncated);
    }
    Ok(Some(len as usize))
}

/// Checks (magic, version, trailer) and parses one packet (a datagram's
/// whole, or one of `packets`). Never panics.
pub fn decode<'a>(integ: &Integrity, dgram: &'a [u8]) -> Result<Packet<'a>, DecodeError> {
    let Some(magic) = dgram.first_chunk::<4>() else {
        return Err(DecodeError::Truncated);
    };
    if be16(magic, 0) != MAGIC || magic[2] != VERSION {
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
    let magic = dgram.first_chunk::<4>()?;
    if be16(magic, 0) != MAGIC || magic[2] != VERSION || magic[3] != PacketType::Data as u8 {
        return None;
    }
    let (body, trailer) = dgram.split_last_chunk::<CRC_LEN>()?;
    let pkt = decode_body(body).ok()?;
    let Packet::Data { payload, .. } = &pkt else {
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
    let vtag = be64(h, 4);
    let flags = h[13];
    let channel = h[12];
    if channel as usize >= NUM_CHANNELS {
        return Err(DecodeError::Malformed);
    }
    let common = Common {
        vtag,
        channel,
        epoch: be16(h, 14),
        seq: be32(h, 16),
        acks: [
            AckField {
                valid: flags & FLAG_ACK_REQ != 0,
                next: be32(h, 20),
                epoch: be16(h, 28),
            },
            AckField {
                valid: flags & FLAG_ACK_REP != 0,
                next: be32(h, 24),
                epoch: be16(h, 30),
            },
        ],
    };
    const DATA: u8 = PacketType::Data as u8;
    const ACK: u8 = PacketType::Ack as u8;
    const NACK: u8 = PacketType::Nack as u8;
    match h[3] {
        DATA => decode_data(body, common, flags),
        ACK => {
            let (a, dup) = if flags & FLAG_DUP != 0 {
                let Ok(a) = <&[u8; ACK_LEN + 4]>::try_from(body) else {
                    return Err(DecodeError::Truncated);
                };
                (&a[..ACK_LEN], Some(be32(a, ACK_LEN)))
            } else {
                (body, None)
            };
            let Ok(a) = <&[u8; ACK_LEN]>::try_from(a) else {
                return Err(DecodeError::Truncated);
            };
            Ok(Packet::Ack {
                common,
                sack: be64(a, 32),
                dup,
            })
        }
        NACK => {
            if body.len() != COMMON_LEN {
                return Err(DecodeError::Truncated);
            }
            Ok(Packet::Nack {
                common,
                last: flags & FLAG_FINAL != 0,
            })
        }
        t => decode_handshake(t, vtag, &body[COMMON_LEN..]),
    }
}

/// The body (after the common header) of a handshake packet of type `t`.
fn decode_handshake(t: u8, vtag: u64, rest: &[u8]) -> Result<Packet<'_>, DecodeError> {
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
    match t {
        INIT => {
            let Ok(b) = <&[u8; INIT_ACK_LEN - COMMON_LEN]>::try_from(rest) else {
                return Err(DecodeError::Truncated);
            };
            let init_tag = be64(b, 0);
            if vtag != 0 || init_tag == 0 {
                return Err(DecodeError::Malformed);
            }
            Ok(Packet::Init { init_tag })
        }
        INIT_ACK => {
            let Ok(b) = <&[u8; INIT_ACK_LEN - COMMON_LEN]>::try_from(rest) else {
                return Err(DecodeError::Truncated);
            };
            let resp_tag = be64(b, 0);
            let Ok(cookie) = <&[u8; COOKIE_LEN]>::try_from(&rest[8..]) else {
                return Err(DecodeError::Truncated);
            };
            if vtag == 0 || resp_tag == 0 {
                return Err(DecodeError::Malformed);
            }
            Ok(Packet::InitAck {
                vtag,
                resp_tag,
                cookie,
            })
        }
        COOKIE_ECHO => {
            let Ok(cookie) = <&[u8; COOKIE_LEN]>::try_from(rest) else {
                return Err(DecodeError::Truncated);
            };
            Ok(Packet::CookieEcho { vtag, cookie })
        }
        COOKIE_ACK | ABORT => {
            if !rest.is_empty() {
                return Err(DecodeError::Truncated);
            }
            Ok(if t == ABORT {
                Packet::Abort { vtag }
            } else {
                Packet::CookieAck { vtag }
            })
        }
        HEARTBEAT | HEARTBEAT_ACK | SHUTDOWN | SHUTDOWN_ACK => {
            let Ok(b) = <&[u8; 8]>::try_from(rest) else {
                return Err(DecodeError::Truncated);
            };
            let nonce = be64(b, 0);
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
            let Ok(b) = <&[u8; 8]>::try_from(rest) else {
                return Err(DecodeError::Truncated);
            };
            let Some(port) = u16::try_from(be64(b, 0)).ok().filter(|&p| p != 0) else {
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

#[inline(always)]
fn decode_data(body: &[u8], common: Common, flags: u8) -> Result<Packet<'_>, DecodeError> {
    let Some(h) = body.first_chunk::<DATA_HEADER_LEN>() else {
        return Err(DecodeError::Truncated);
    };
    let kind_cat = h[37];
    let kind = MsgKind::from_u8(kind_cat >> 4).ok_or(DecodeError::Malformed)?;
    let category = Category::from_u8(kind_cat & 0xf).ok_or(DecodeError::Malformed)?;
    let nargs = h[38] as usize;
    if nargs > MAX_ARGS {
        return Err(DecodeError::Malformed);
    }
    let msg_len = be32(h, 56);
    let frag_off = be32(h, 60);
    let frag_len = be32(h, 64) as usize;
    let args_end = DATA_HEADER_LEN + 4 * nargs;
    if body.len() != args_end + frag_len {
        return Err(DecodeError::Truncated);
    }
    if (frag_off as u64) + frag_len as u64 > msg_len as u64 {
        return Err(DecodeError::Malformed);
    }
    let (arg_bytes, payload) = body[DATA_HEADER_LEN..].split_at(4 * nargs);
    let mut args = [0u32; MAX_ARGS];
    for (a, b) in args.iter_mut().zip(arg_bytes.chunks_exact(4)) {
        let mut x = [0u8; 4];
        x.copy_from_slice(b);
        *a = u32::from_be_bytes(x);
    }
    let meta = MsgMeta {
        kind,
        category,
        handler: h[36],
        nargs: nargs as u8,
        args,
        tag: be64(h, 40),
        dest_offset: be64(h, 48),
        txn: be32(h, 32),
        status: h[39],
        returned_request: flags & FLAG_RETURNED_REQUEST != 0,
        express: false,
        placed: None,
    };
    Ok(Packet::Data {
        common,
        meta,
        msg_len,
        frag_off,
        payload,
    })
}

#[cfg(test)]
mod tests;
