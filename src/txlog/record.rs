//! The records of a transaction log and their byte layout (little-endian).
//! Every decode checks lengths and values: a record's bytes are untrusted.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// A message as the log keeps it: enough to send it again (an issued
/// request), to run it after a restart (an acknowledged request) or to
/// answer a duplicate (a kept reply).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoggedMsg {
    pub handler: u8,
    /// AM-2 category: 0 short, 1 medium, 2 long.
    pub category: u8,
    pub args: Vec<u32>,
    pub dest_offset: u64,
    pub payload: Vec<u8>,
}

/// The state tuple of a transaction (ramp_txn_state_t's fields).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxnState {
    pub ack: u8,
    pub progress: u8,
    pub abandon: u8,
    pub status: i32,
}

/// A transaction at its target: who issued it (address, incarnation) and its id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct TargetKey {
    pub peer: SocketAddr,
    /// The initiator's incarnation (stable across restarts with a log).
    pub incarnation: u64,
    pub txn: u64,
}

/// Hashed as a few words (a target looks one up for every record it
/// writes): the same fields as `Eq` compares, so equal keys hash alike.
impl std::hash::Hash for TargetKey {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        match self.peer {
            SocketAddr::V4(a) => {
                h.write_u64(u64::from(a.ip().to_bits()) << 16 | u64::from(a.port()))
            }
            SocketAddr::V6(a) => {
                h.write_u128(a.ip().to_bits());
                h.write_u64(u64::from(a.port()) | u64::from(a.scope_id()) << 16);
                h.write_u32(a.flowinfo());
            }
        }
        h.write_u64(self.incarnation);
        h.write_u64(self.txn);
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    /// The initiator issued transaction `txn` to `dest`.
    Issued {
        txn: u64,
        dest: SocketAddr,
        msg: LoggedMsg,
    },
    /// The initiator's view of `txn` changed.
    State { txn: u64, state: TxnState },
    /// The initiator released `txn` (ramp_TxnRelease): forgotten.
    Released { txn: u64 },
    /// The target acknowledged a request (before its handler starts).
    Acked { key: TargetKey, msg: LoggedMsg },
    /// The target started the handler.
    Started { key: TargetKey },
    /// The target acknowledged a request and started its handler: `Acked`
    /// and `Started` in one record (what a target writes before the ack
    /// leaves; a crash can fall before both or after both, never between),
    /// with the transactions of the same peer and incarnation forgotten as
    /// it arrived (the floor it carried passed them), as `Forgotten` would;
    /// their ids in increasing order.
    AckedStarted {
        key: TargetKey,
        msg: LoggedMsg,
        forgotten: Vec<u64>,
    },
    /// The handler finished; the reply (if it sent one) is kept.
    Finished {
        key: TargetKey,
        reply: Option<LoggedMsg>,
    },
    /// The initiator has the reply: the target forgets the transaction.
    Forgotten { key: TargetKey },
    /// Transaction ids below this are used (written when the log is compacted).
    TxnFloor { next: u64 },
}

const ISSUED: u8 = 1;
const STATE: u8 = 2;
const RELEASED: u8 = 3;
const ACKED: u8 = 4;
const STARTED: u8 = 5;
const FINISHED: u8 = 6;
const FORGOTTEN: u8 = 7;
const TXN_FLOOR: u8 = 8;
const ACKED_STARTED: u8 = 9;

/// Most arguments a message carries (AM-2).
const MAX_ARGS: usize = 16;
/// Largest payload a logged message may carry (a long message: 1 MiB).
pub const MAX_PAYLOAD: usize = 1 << 20;

impl Record {
    pub fn kind(&self) -> u8 {
        match self {
            Record::Issued { .. } => ISSUED,
            Record::State { .. } => STATE,
            Record::Released { .. } => RELEASED,
            Record::Acked { .. } => ACKED,
            Record::Started { .. } => STARTED,
            Record::Finished { .. } => FINISHED,
            Record::Forgotten { .. } => FORGOTTEN,
            Record::TxnFloor { .. } => TXN_FLOOR,
            Record::AckedStarted { .. } => ACKED_STARTED,
        }
    }

    /// Appends the record's body to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Record::Issued { txn, dest, msg } => {
                out.extend_from_slice(&txn.to_le_bytes());
                put_addr(out, dest);
                put_msg(out, msg);
            }
            Record::State { txn, state } => {
                out.extend_from_slice(&txn.to_le_bytes());
                out.extend_from_slice(&[state.ack, state.progress, state.abandon, 0]);
                out.extend_from_slice(&state.status.to_le_bytes());
            }
            Record::Released { txn } | Record::TxnFloor { next: txn } => {
                out.extend_from_slice(&txn.to_le_bytes())
            }
            Record::Acked { key, msg } => {
                put_key(out, key);
                put_msg(out, msg);
            }
            Record::AckedStarted {
                key,
                msg,
                forgotten,
            } => {
                put_key(out, key);
                out.extend_from_slice(&(forgotten.len() as u32).to_le_bytes());
                for t in forgotten {
                    out.extend_from_slice(&t.to_le_bytes());
                }
                put_msg(out, msg);
            }
            Record::Started { key } | Record::Forgotten { key } => put_key(out, key),
            Record::Finished { key, reply } => {
                put_key(out, key);
                match reply {
                    None => out.push(0),
                    Some(m) => {
                        out.push(1);
                        put_msg(out, m);
                    }
                }
            }
        }
    }

    /// Decodes a body of record kind `kind`; None when it is not one.
    pub fn decode(kind: u8, body: &[u8]) -> Option<Record> {
        let mut r = Reader(body);
        let rec = match kind {
            ISSUED => Record::Issued {
                txn: r.u64()?,
                dest: r.addr()?,
                msg: r.msg()?,
            },
            STATE => {
                let txn = r.u64()?;
                let b = r.take(4)?;
                Record::State {
                    txn,
                    state: TxnState {
                        ack: b[0],
                        progress: b[1],
                        abandon: b[2],
                        status: r.i32()?,
                    },
                }
            }
            RELEASED => Record::Released { txn: r.u64()? },
            TXN_FLOOR => Record::TxnFloor { next: r.u64()? },
            ACKED => Record::Acked {
                key: r.key()?,
                msg: r.msg()?,
            },
            ACKED_STARTED => {
                let key = r.key()?;
                let n = r.u32()? as usize;
                if n > r.0.len() / 8 {
                    return None;
                }
                let mut forgotten = Vec::with_capacity(n);
                for _ in 0..n {
                    forgotten.push(r.u64()?);
                }
                Record::AckedStarted {
                    key,
                    msg: r.msg()?,
                    forgotten,
                }
            }
            STARTED => Record::Started { key: r.key()? },
            FORGOTTEN => Record::Forgotten { key: r.key()? },
            FINISHED => {
                let key = r.key()?;
                let reply = match r.u8()? {
                    0 => None,
                    1 => Some(r.msg()?),
                    _ => return None,
                };
                Record::Finished { key, reply }
            }
            _ => return None,
        };
        // every byte accounted for
        r.0.is_empty().then_some(rec)
    }
}

/// The bytes `put_addr` writes.
pub const ADDR_LEN: usize = 19;

/// The bytes `put_key` writes: the address, the incarnation, the id.
const KEY_LEN: usize = ADDR_LEN + 16;

/// An address as the log writes it (in records, and alone in the log's
/// header for the endpoint's): the family (4 or 6), 16 bytes of IP (a v4
/// one in the first 4, the rest 0), the port. (Made whole on the stack
/// and appended once: appended piece by piece, a record's fields cost
/// most of its encoding.)
pub fn encode_addr(a: &SocketAddr) -> [u8; ADDR_LEN] {
    let mut b = [0u8; ADDR_LEN];
    match a.ip() {
        IpAddr::V4(v4) => {
            b[0] = 4;
            b[1..5].copy_from_slice(&v4.octets());
        }
        IpAddr::V6(v6) => {
            b[0] = 6;
            b[1..17].copy_from_slice(&v6.octets());
        }
    }
    b[17..].copy_from_slice(&a.port().to_le_bytes());
    b
}

fn put_addr(out: &mut Vec<u8>, a: &SocketAddr) {
    out.extend_from_slice(&encode_addr(a));
}

fn put_key(out: &mut Vec<u8>, k: &TargetKey) {
    let mut b = [0u8; KEY_LEN];
    b[..ADDR_LEN].copy_from_slice(&encode_addr(&k.peer));
    b[ADDR_LEN..ADDR_LEN + 8].copy_from_slice(&k.incarnation.to_le_bytes());
    b[ADDR_LEN + 8..].copy_from_slice(&k.txn.to_le_bytes());
    out.extend_from_slice(&b);
}

/// A message's fixed part: handler, category, argument count, 0, the
/// arguments, the destination offset and the payload's length; then the
/// payload.
fn put_msg(out: &mut Vec<u8>, m: &LoggedMsg) {
    let n = m.args.len().min(MAX_ARGS);
    let mut b = [0u8; 4 + 4 * MAX_ARGS + 12];
    b[..4].copy_from_slice(&[m.handler, m.category, n as u8, 0]);
    for (w, a) in b[4..4 + 4 * n].chunks_exact_mut(4).zip(&m.args) {
        w.copy_from_slice(&a.to_le_bytes());
    }
    let at = 4 + 4 * n;
    b[at..at + 8].copy_from_slice(&m.dest_offset.to_le_bytes());
    b[at + 8..at + 12].copy_from_slice(&(m.payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&b[..at + 12]);
    out.extend_from_slice(&m.payload);
}

pub fn decode_addr(b: &[u8]) -> Option<SocketAddr> {
    Reader(b).addr()
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }

    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn i32(&mut self) -> Option<i32> {
        Some(i32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn addr(&mut self) -> Option<SocketAddr> {
        let fam = self.u8()?;
        let ip: [u8; 16] = self.take(16)?.try_into().ok()?;
        let port = u16::from_le_bytes(self.take(2)?.try_into().ok()?);
        let ip = match fam {
            4 if ip[4..].iter().all(|&b| b == 0) => {
                IpAddr::V4(Ipv4Addr::new(ip[0], ip[1], ip[2], ip[3]))
            }
            6 => IpAddr::V6(Ipv6Addr::from(ip)),
            _ => return None,
        };
        Some(SocketAddr::new(ip, port))
    }

    fn key(&mut self) -> Option<TargetKey> {
        Some(TargetKey {
            peer: self.addr()?,
            incarnation: self.u64()?,
            txn: self.u64()?,
        })
    }

    fn msg(&mut self) -> Option<LoggedMsg> {
        let h = self.take(4)?;
        let (handler, category, n) = (h[0], h[1], h[2] as usize);
        if category > 2 || n > MAX_ARGS || h[3] != 0 {
            return None;
        }
        let mut args = Vec::with_capacity(n);
        for _ in 0..n {
            args.push(self.u32()?);
        }
        let dest_offset = self.u64()?;
        let len = self.u32()? as usize;
        if len > MAX_PAYLOAD {
            return None;
        }
        let payload = self.take(len)?.to_vec();
        Some(LoggedMsg {
            handler,
            category,
            args,
            dest_offset,
            payload,
        })
    }
}
