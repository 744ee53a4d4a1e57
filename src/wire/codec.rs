//! Encoding and decoding of packets. Layout (all big-endian):
//!
//! ```text
//! common (32 bytes, every packet)
//!   0 magic u16 | 2 version u8 | 3 type u8 | 4 src_id u32 | 8 dst_id u32
//!  12 channel u8 | 13 flags u8 | 14 epoch u16 | 16 seq u32
//!  20 ack_next[request] u32 | 24 ack_next[reply] u32
//!  28 ack_epoch[request] u16 | 30 ack_epoch[reply] u16
//! ACK:  32 sack bitmap u64 (bit i: seq+1+i has arrived)
//! NACK: (nothing more; seq is the refused sequence number; flag 8: the
//!       refusal is final, the message is given up with ECONGESTION)
//! DATA: 32 txn u32 | 36 handler u8 | 37 kind<<4|category u8 | 38 nargs u8
//!       39 status u8 | 40 tag u64 | 48 dest_offset u64 | 56 msg_len u32
//!       60 frag_off u32 | 64 frag_len u32 | 68 args (4*nargs) | payload
//! then CRC32C (u32) over everything before it
//! ```

use super::{
    crc32c, AckField, Category, MsgKind, MsgMeta, PacketType, ACK_LEN, COMMON_LEN, CRC_LEN,
    DATA_HEADER_LEN, MAGIC, MAX_ARGS, NUM_CHANNELS, VERSION,
};

const FLAG_ACK_REQ: u8 = 1;
const FLAG_ACK_REP: u8 = 2;
const FLAG_RETURNED_REQUEST: u8 = 4;
const FLAG_FINAL: u8 = 8;

/// Fields every packet carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Common {
    pub src_id: u32,
    pub dst_id: u32,
    pub channel: u8,
    pub epoch: u16,
    pub seq: u32,
    /// Piggybacked cumulative acks for the reverse channels, indexed by channel.
    pub acks: [AckField; NUM_CHANNELS],
}

/// A parsed, checksum-verified packet borrowing its payload from the datagram.
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
    },
    Nack {
        common: Common,
        /// The receiver will never take this packet in this epoch: the
        /// sender gives the message up (ECONGESTION).
        last: bool,
    },
}

impl Packet<'_> {
    pub fn common(&self) -> &Common {
        match self {
            Packet::Data { common, .. }
            | Packet::Ack { common, .. }
            | Packet::Nack { common, .. } => common,
        }
    }
}

/// Why a datagram was not accepted as a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Shorter than its header says, or longer.
    Truncated,
    /// Not a ramp packet (magic), or another protocol version.
    Foreign,
    /// The checksum does not match.
    Checksum,
    /// A field holds a value no sender produces.
    Malformed,
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
    put32(h, 4, c.src_id);
    put32(h, 8, c.dst_id);
    h[12] = c.channel;
    h[13] = flags;
    put16(h, 14, c.epoch);
    put32(h, 16, c.seq);
    put32(h, 20, c.acks[0].next);
    put32(h, 24, c.acks[1].next);
    put16(h, 28, c.acks[0].epoch);
    put16(h, 30, c.acks[1].epoch);
}

#[inline]
fn put_crc(buf: &mut Vec<u8>, start: usize) {
    let crc = crc32c(&buf[start..]);
    buf.extend_from_slice(&crc.to_be_bytes());
}

/// Appends a DATA packet carrying `payload` (one fragment of a message of
/// `msg_len` bytes starting at `frag_off`) to `buf`.
pub fn encode_data(
    buf: &mut Vec<u8>,
    common: &Common,
    meta: &MsgMeta,
    msg_len: u32,
    frag_off: u32,
    payload: &[u8],
) {
    let start = buf.len();
    let head_len = DATA_HEADER_LEN + 4 * meta.nargs as usize;
    buf.reserve(head_len + payload.len() + CRC_LEN);
    let flags = if meta.returned_request {
        FLAG_RETURNED_REQUEST
    } else {
        0
    };
    // The header and the arguments are built on the stack and appended at once.
    let mut h = [0u8; DATA_HEADER_LEN + 4 * MAX_ARGS];
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
    put32(&mut h, 64, payload.len() as u32);
    for (d, a) in h[DATA_HEADER_LEN..head_len]
        .chunks_exact_mut(4)
        .zip(meta.args())
    {
        d.copy_from_slice(&a.to_be_bytes());
    }
    buf.extend_from_slice(&h[..head_len]);
    buf.extend_from_slice(payload);
    put_crc(buf, start);
}

/// Appends an ACK packet: `common.seq` is the cumulative next-expected number
/// of channel `common.channel`; `sack` marks later packets that have arrived.
pub fn encode_ack(buf: &mut Vec<u8>, common: &Common, sack: u64) {
    let start = buf.len();
    let mut h = [0u8; ACK_LEN];
    put_common(&mut h, PacketType::Ack, common, 0);
    put64(&mut h, 32, sack);
    buf.reserve(ACK_LEN + CRC_LEN);
    buf.extend_from_slice(&h);
    put_crc(buf, start);
}

/// Appends a NACK packet: the receiver has no buffer for `common.seq` of
/// `common.channel`; the sender goes back to it, or, when `last`, gives the
/// message up.
pub fn encode_nack(buf: &mut Vec<u8>, common: &Common, last: bool) {
    let start = buf.len();
    let mut h = [0u8; COMMON_LEN];
    put_common(
        &mut h,
        PacketType::Nack,
        common,
        if last { FLAG_FINAL } else { 0 },
    );
    buf.reserve(COMMON_LEN + CRC_LEN);
    buf.extend_from_slice(&h);
    put_crc(buf, start);
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

/// Checks and parses one datagram. Never panics.
pub fn decode(dgram: &[u8]) -> Result<Packet<'_>, DecodeError> {
    let Some(magic) = dgram.first_chunk::<4>() else {
        return Err(DecodeError::Truncated);
    };
    if be16(magic, 0) != MAGIC || magic[2] != VERSION {
        return Err(DecodeError::Foreign);
    }
    let Some((body, crc)) = dgram.split_last_chunk::<CRC_LEN>() else {
        return Err(DecodeError::Truncated);
    };
    let Some(h) = body.first_chunk::<COMMON_LEN>() else {
        return Err(DecodeError::Truncated);
    };
    if crc32c(body) != u32::from_be_bytes(*crc) {
        return Err(DecodeError::Checksum);
    }
    let flags = h[13];
    let channel = h[12];
    if channel as usize >= NUM_CHANNELS {
        return Err(DecodeError::Malformed);
    }
    let common = Common {
        src_id: be32(h, 4),
        dst_id: be32(h, 8),
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
    match h[3] {
        t if t == PacketType::Ack as u8 => {
            let Ok(a) = <&[u8; ACK_LEN]>::try_from(body) else {
                return Err(DecodeError::Truncated);
            };
            Ok(Packet::Ack {
                common,
                sack: be64(a, 32),
            })
        }
        t if t == PacketType::Nack as u8 => {
            if body.len() != COMMON_LEN {
                return Err(DecodeError::Truncated);
            }
            Ok(Packet::Nack {
                common,
                last: flags & FLAG_FINAL != 0,
            })
        }
        t if t == PacketType::Data as u8 => decode_data(body, common, flags),
        _ => Err(DecodeError::Malformed),
    }
}

#[inline]
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
mod tests {
    use super::*;

    fn sample_common() -> Common {
        Common {
            src_id: 0xdead_beef,
            dst_id: 7,
            channel: 1,
            epoch: 3,
            seq: 42,
            acks: [
                AckField {
                    valid: true,
                    epoch: 1,
                    next: 9,
                },
                AckField::default(),
            ],
        }
    }

    #[test]
    fn data_round_trip_every_arity() {
        for n in 0..=MAX_ARGS {
            let args: Vec<u32> = (0..n as u32).map(|k| 0xBABE_7001 + k).collect();
            let mut meta = MsgMeta::new(MsgKind::User, Category::Medium, 200, &args);
            meta.tag = 0x1234_5678_9abc_def0;
            meta.dest_offset = 77;
            meta.txn = 5;
            let payload: Vec<u8> = (0..n * 3).map(|i| i as u8).collect();
            let mut buf = Vec::new();
            encode_data(&mut buf, &sample_common(), &meta, 1000, 10, &payload);
            match decode(&buf).unwrap() {
                Packet::Data {
                    common,
                    meta: m,
                    msg_len,
                    frag_off,
                    payload: p,
                } => {
                    assert_eq!(common, sample_common());
                    assert_eq!(m, meta);
                    assert_eq!((msg_len, frag_off), (1000, 10));
                    assert_eq!(p, &payload[..]);
                }
                other => panic!("not data: {other:?}"),
            }
        }
    }

    #[test]
    fn ack_and_nack_round_trip() {
        let mut buf = Vec::new();
        encode_ack(&mut buf, &sample_common(), 0xf0f0);
        assert_eq!(
            decode(&buf).unwrap(),
            Packet::Ack {
                common: sample_common(),
                sack: 0xf0f0
            }
        );
        for last in [false, true] {
            buf.clear();
            encode_nack(&mut buf, &sample_common(), last);
            assert_eq!(
                decode(&buf).unwrap(),
                Packet::Nack {
                    common: sample_common(),
                    last
                }
            );
        }
    }

    #[test]
    fn every_single_bit_flip_and_truncation_is_rejected() {
        let meta = MsgMeta::new(MsgKind::User, Category::Short, 3, &[1, 2, 3]);
        let mut buf = Vec::new();
        encode_data(&mut buf, &sample_common(), &meta, 5, 0, b"hello");
        for i in 0..buf.len() * 8 {
            let mut b = buf.clone();
            b[i / 8] ^= 1 << (i % 8);
            assert!(decode(&b).is_err(), "bit {i} flip accepted");
        }
        for len in 0..buf.len() {
            assert!(decode(&buf[..len]).is_err(), "truncation to {len} accepted");
        }
    }

    #[test]
    fn garbage_never_panics() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for len in 0..300 {
            let v: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            let _ = decode(&v);
        }
    }
}
