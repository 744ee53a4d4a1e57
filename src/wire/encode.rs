//! Encoding every packet type, each field at its offset (`layout.rs`),
//! sealed with its integrity trailer.

use super::layout::*;
#[cfg(any(test, feature = "testing"))]
use super::packet::NO_ADDRS;
use super::{Common, Integrity, MsgMeta, PacketType, PayloadPiece, COOKIE_LEN, MAGIC, VERSION};

/// Fills the common part (the first `COMMON_LEN` bytes) of a header.
#[inline(always)]
fn put_common<const N: usize>(h: &mut [u8; N], ptype: PacketType, c: &Common, extra_flags: u8) {
    let mut flags = extra_flags;
    if c.unordered {
        flags |= FLAG_UNORDERED;
    }
    for (a, flag) in c.acks.iter().zip([FLAG_ACK_REQ, FLAG_ACK_REP]) {
        if a.valid {
            flags |= flag;
        }
    }
    put_start(h, ptype, c.vtag);
    h[CHANNEL_AT] = c.channel;
    h[FLAGS_AT] = flags;
    put16(h, EPOCH_AT, c.epoch);
    put32(h, SEQ_AT, c.seq);
    for (ch, a) in c.acks.iter().enumerate() {
        put32(h, ACK_NEXT_AT[ch], a.next);
        put16(h, ACK_EPOCH_AT[ch], a.epoch);
    }
}

/// Writes the fields every packet starts with: magic, version, type, tag.
#[inline(always)]
fn put_start<const N: usize>(h: &mut [u8; N], ptype: PacketType, vtag: u64) {
    put16(h, MAGIC_AT, MAGIC);
    h[VERSION_AT] = VERSION;
    h[TYPE_AT] = ptype as u8;
    put64(h, VTAG_AT, vtag);
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
    super::extend_bytes(buf, payload);
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
    put32(&mut h, TXN_AT, meta.txn);
    h[HANDLER_AT] = meta.handler;
    h[KIND_CATEGORY_AT] = ((meta.kind as u8) << 4) | meta.category as u8;
    h[NARGS_AT] = meta.nargs;
    h[STATUS_AT] = meta.status;
    put64(&mut h, TAG_AT, meta.tag);
    put64(&mut h, DEST_OFFSET_AT, meta.dest_offset);
    put32(&mut h, MSG_LEN_AT, msg_len);
    put32(&mut h, FRAG_OFF_AT, frag_off);
    put32(&mut h, FRAG_LEN_AT, frag_len);
    buf.extend_from_slice(&h);
    // the arguments at `ARGS_AT`, just after the fixed header
    const _: () = assert!(ARGS_AT == DATA_HEADER_LEN);
    for a in meta.args() {
        buf.extend_from_slice(&a.to_be_bytes());
    }
}

/// Appends a later fragment (`FLAG_MORE`, `frag_off` > 0) carrying
/// `payload`: the short header, which repeats nothing of its message's
/// first packet (`layout.rs`).
pub fn encode_more(
    buf: &mut Vec<u8>,
    integ: &Integrity,
    common: &Common,
    frag_off: u32,
    payload: &[u8],
) {
    let start = buf.len();
    buf.reserve(MORE_HEADER_LEN + payload.len() + integ.trailer_len());
    encode_more_header(buf, common, frag_off, payload.len() as u32);
    super::extend_bytes(buf, payload);
    integ.seal(buf, start);
}

/// `encode_more` as two pieces around `payload` (`encode_data_gathered`);
/// returns where the trailer starts in `buf`.
pub fn encode_more_gathered(
    buf: &mut Vec<u8>,
    integ: &Integrity,
    common: &Common,
    frag_off: u32,
    payload: PayloadPiece<'_>,
) -> usize {
    let start = buf.len();
    encode_more_header(buf, common, frag_off, payload.bytes().len() as u32);
    let trailer = buf.len();
    integ.seal_gathered(buf, start, payload);
    trailer
}

/// Appends a later fragment's short header for `frag_len` bytes at `frag_off`.
fn encode_more_header(buf: &mut Vec<u8>, common: &Common, frag_off: u32, frag_len: u32) {
    debug_assert!(frag_off > 0, "a message's first packet has the full header");
    let mut h = [0u8; MORE_HEADER_LEN];
    put_common(&mut h, PacketType::Data, common, FLAG_MORE);
    put32(&mut h, MORE_OFF_AT, frag_off);
    put32(&mut h, MORE_LEN_AT, frag_len);
    buf.extend_from_slice(&h);
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
    let mut h = [0u8; ACK_DUP_LEN];
    let flag = if dup.is_some() { FLAG_DUP } else { 0 };
    put_common(&mut h, PacketType::Ack, common, flag);
    put64(&mut h, SACK_AT, sack);
    put32(&mut h, DUP_AT, dup.unwrap_or(0));
    let len = if dup.is_some() { ACK_DUP_LEN } else { ACK_LEN };
    buf.reserve(len + integ.trailer_len());
    buf.extend_from_slice(&h[..len]);
    integ.seal(buf, start);
}

/// Appends a NACK packet: the receiver has no buffer for `common.seq` of
/// `common.channel`; the sender goes back to it, or, when `last`, gives the
/// message up.
pub fn encode_nack(buf: &mut Vec<u8>, integ: &Integrity, common: &Common, last: bool) {
    let start = buf.len();
    let mut h = [0u8; NACK_LEN];
    put_common(
        &mut h,
        PacketType::Nack,
        common,
        if last { FLAG_FINAL } else { 0 },
    );
    buf.reserve(NACK_LEN + integ.trailer_len());
    buf.extend_from_slice(&h);
    integ.seal(buf, start);
}

/// The bytes before the trailer of a handshake, heartbeat, shutdown or
/// alias packet of type `ptype` with `vtag` (bytes 12..32 zero), its body
/// for the caller to write at its offsets (the largest is an INIT_ACK).
#[inline]
fn handshake_header(ptype: PacketType, vtag: u64) -> [u8; INIT_ACK_LEN] {
    let mut h = [0u8; INIT_ACK_LEN];
    put_start(&mut h, ptype, vtag);
    h
}

/// Appends `packet` (its bytes before the trailer) sealed.
fn push_sealed(buf: &mut Vec<u8>, integ: &Integrity, packet: &[u8]) {
    let start = buf.len();
    buf.extend_from_slice(packet);
    integ.seal(buf, start);
}

/// Appends an INIT offering `init_tag`, padded to the size of the INIT_ACK
/// it provokes (an INIT never buys a larger answer), listing no other rail.
#[cfg(any(test, feature = "testing"))]
pub fn encode_init(buf: &mut Vec<u8>, integ: &Integrity, init_tag: u64) {
    encode_init_listing(buf, integ, init_tag, &NO_ADDRS)
}

/// `encode_init` listing the sender's other rails (`Addrs::encode`).
pub fn encode_init_listing(
    buf: &mut Vec<u8>,
    integ: &Integrity,
    init_tag: u64,
    addrs: &[u8; ADDRS_LEN],
) {
    let mut h = handshake_header(PacketType::Init, 0);
    put64(&mut h, INIT_TAG_AT, init_tag);
    h[INIT_ADDRS_AT..][..ADDRS_LEN].copy_from_slice(addrs);
    push_sealed(buf, integ, &h[..INIT_LEN]);
}

/// Appends an INIT_ACK to the initiator whose tag is `vtag`, listing no
/// other rail.
#[cfg(any(test, feature = "testing"))]
pub fn encode_init_ack(
    buf: &mut Vec<u8>,
    integ: &Integrity,
    vtag: u64,
    resp_tag: u64,
    cookie: &[u8; COOKIE_LEN],
) {
    encode_init_ack_listing(buf, integ, vtag, resp_tag, cookie, &NO_ADDRS)
}

/// `encode_init_ack` listing the responder's other rails.
pub fn encode_init_ack_listing(
    buf: &mut Vec<u8>,
    integ: &Integrity,
    vtag: u64,
    resp_tag: u64,
    cookie: &[u8; COOKIE_LEN],
    addrs: &[u8; ADDRS_LEN],
) {
    let mut h = handshake_header(PacketType::InitAck, vtag);
    put64(&mut h, RESP_TAG_AT, resp_tag);
    h[INIT_ACK_COOKIE_AT..][..COOKIE_LEN].copy_from_slice(cookie);
    h[INIT_ADDRS_AT..][..ADDRS_LEN].copy_from_slice(addrs);
    push_sealed(buf, integ, &h[..INIT_ACK_LEN]);
}

/// Appends a COOKIE_ECHO to the responder whose tag is `vtag`, listing no
/// other rail.
#[cfg(any(test, feature = "testing"))]
pub fn encode_cookie_echo(
    buf: &mut Vec<u8>,
    integ: &Integrity,
    vtag: u64,
    cookie: &[u8; COOKIE_LEN],
) {
    encode_cookie_echo_listing(buf, integ, vtag, cookie, &NO_ADDRS)
}

/// `encode_cookie_echo` listing the initiator's other rails again (as its
/// INIT did: the cookie covers them).
pub fn encode_cookie_echo_listing(
    buf: &mut Vec<u8>,
    integ: &Integrity,
    vtag: u64,
    cookie: &[u8; COOKIE_LEN],
    addrs: &[u8; ADDRS_LEN],
) {
    let mut h = handshake_header(PacketType::CookieEcho, vtag);
    h[ECHO_COOKIE_AT..][..COOKIE_LEN].copy_from_slice(cookie);
    h[ECHO_ADDRS_AT..][..ADDRS_LEN].copy_from_slice(addrs);
    push_sealed(buf, integ, &h[..COOKIE_ECHO_LEN]);
}

/// Appends a COOKIE_ACK to the initiator whose tag is `vtag`.
pub fn encode_cookie_ack(buf: &mut Vec<u8>, integ: &Integrity, vtag: u64) {
    let h = handshake_header(PacketType::CookieAck, vtag);
    push_sealed(buf, integ, &h[..BARE_LEN]);
}

/// Appends an UNKNOWN_COOKIE to the initiator whose tag is `vtag`: the
/// COOKIE_ECHO it sent with `resp_tag` cannot be opened here.
pub fn encode_unknown_cookie(buf: &mut Vec<u8>, integ: &Integrity, vtag: u64, resp_tag: u64) {
    let mut h = handshake_header(PacketType::UnknownCookie, vtag);
    put64(&mut h, UNKNOWN_TAG_AT, resp_tag);
    push_sealed(buf, integ, &h[..UNKNOWN_COOKIE_LEN]);
}

/// Appends an ABORT carrying `vtag`.
pub fn encode_abort(buf: &mut Vec<u8>, integ: &Integrity, vtag: u64) {
    let h = handshake_header(PacketType::Abort, vtag);
    push_sealed(buf, integ, &h[..BARE_LEN]);
}

/// Appends a HEARTBEAT (or, `ack`, its answer) carrying `vtag` and `nonce`.
pub fn encode_heartbeat(buf: &mut Vec<u8>, integ: &Integrity, vtag: u64, ack: bool, nonce: u64) {
    let t = if ack {
        PacketType::HeartbeatAck
    } else {
        PacketType::Heartbeat
    };
    encode_nonce(buf, integ, t, vtag, nonce);
}

/// Appends a SHUTDOWN (or, `ack`, its answer) carrying `vtag` and `nonce`.
pub fn encode_shutdown(buf: &mut Vec<u8>, integ: &Integrity, vtag: u64, ack: bool, nonce: u64) {
    let t = if ack {
        PacketType::ShutdownAck
    } else {
        PacketType::Shutdown
    };
    encode_nonce(buf, integ, t, vtag, nonce);
}

/// A packet of type `ptype` whose body is one nonce.
fn encode_nonce(buf: &mut Vec<u8>, integ: &Integrity, ptype: PacketType, vtag: u64, nonce: u64) {
    let mut h = handshake_header(ptype, vtag);
    put64(&mut h, NONCE_AT, nonce);
    push_sealed(buf, integ, &h[..NONCE_LEN]);
}

/// Appends an ALIAS (or, `ack`, its answer) carrying `vtag` and `port`.
pub fn encode_alias(buf: &mut Vec<u8>, integ: &Integrity, vtag: u64, ack: bool, port: u16) {
    let t = if ack {
        PacketType::AliasAck
    } else {
        PacketType::Alias
    };
    let mut h = handshake_header(t, vtag);
    put64(&mut h, PORT_AT, u64::from(port));
    push_sealed(buf, integ, &h[..ALIAS_LEN]);
}
