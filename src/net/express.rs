//! The express record: a short AM request or reply written straight into
//! a shared-memory ring (`shm.rs`), outside the reliable protocol
//! (`am/express.rs` decides when, and what the receiver does with it).
//!
//! A ring record like a datagram, told apart by its first two bytes
//! (`RX`, where a protocol packet has `RA`). Native byte order (same host):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 2 | magic `RX` |
//! | 2 | 1 | kind: 1 request, 2 reply, 3 automatic reply |
//! | 3 | 1 | handler |
//! | 4 | 1 | argument count (at most 16) |
//! | 5 | 3 | zero |
//! | 8 | 4 | transaction id (the requester's; echoed by the reply) |
//! | 12 | 4 | zero |
//! | 16 | 8 | AM tag |
//! | 24 | 4 each | arguments |
//!
//! An automatic reply has no handler (0); its arguments are the ids of the
//! further transactions it answers, all from the same requester (the
//! automatic replies a dispatch owes one peer go as one record, up to 17).
//!
//! With up to 8 arguments, record and ring word fill one cache line.
//! Everything read is hostile: `decode` takes only a record of exactly this
//! shape (its length agrees with its count, the zero bytes are zero).

/// The first two bytes of an express record.
pub const MAGIC: [u8; 2] = *b"RX";
/// Bytes before the arguments.
pub const HEADER: usize = 24;
/// The most arguments a record carries (`wire::MAX_ARGS`).
pub const MAX_ARGS: usize = 16;
/// The longest record.
pub const MAX_LEN: usize = HEADER + 4 * MAX_ARGS;

/// What a record is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum ExpressKind {
    Request = 1,
    Reply = 2,
    AutoReply = 3,
}

/// One record's fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Express {
    pub kind: ExpressKind,
    pub handler: u8,
    pub nargs: u8,
    pub args: [u32; MAX_ARGS],
    pub txn: u32,
    pub tag: u64,
}

/// What a look at the rings' heads for an express record found
/// (`ExpressLane::express_take`, the express lane's fast poll).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpressTake {
    /// Nothing waits at any ring's head.
    Nothing,
    /// Something else waits first (a protocol datagram, a slot not yet
    /// looked at, a record of an unproven slot, or no ring at all): the
    /// full receive takes it.
    Other,
    /// An express record, taken from its ring into the caller's
    /// `TakenRecord`.
    Record,
}

/// Where `ExpressLane::express_take` puts the record it takes: its bytes,
/// how many, and its writer. (Kept by the caller from one poll to the
/// next, filled in place: a record handed back by value was copied at
/// once with wider loads than the stores that wrote it, a stall each.)
#[derive(Clone, Copy, Debug)]
pub struct TakenRecord {
    pub bytes: [u8; MAX_LEN],
    pub len: usize,
    pub from: std::net::SocketAddr,
    /// Which writer `from` is: a number the transport gives each writer
    /// it takes records from, never 0 nor another writer's (what the
    /// reader resolved from one `from`, kept beside this, holds while it
    /// is the same: no address compared per record).
    pub from_gen: u64,
    /// Something may wait behind it (its ring was not empty after it, or
    /// another ring was not looked at): false, a look now would most
    /// likely find nothing, and the fast poll ends without one.
    pub more: bool,
}

impl Default for TakenRecord {
    fn default() -> Self {
        TakenRecord {
            bytes: [0; MAX_LEN],
            len: 0,
            from: std::net::SocketAddr::from(([0, 0, 0, 0], 0)),
            from_gen: 0,
            more: false,
        }
    }
}

impl TakenRecord {
    /// The record's bytes.
    #[inline]
    pub fn record(&self) -> &[u8] {
        &self.bytes[..self.len.min(MAX_LEN)]
    }
}

/// Whether `d` claims to be an express record (a transport that is not a
/// ring drops such datagrams: only a ring may carry one).
#[inline]
pub fn is_express(d: &[u8]) -> bool {
    d.len() >= 2 && d[..2] == MAGIC
}

/// A record's fixed fields, checked (`Head::decode`) as the whole record
/// is: what the fast poll reads first, its arguments then read where they
/// lie (`Head::args`), not copied out with the rest (a whole `Express`
/// made and moved on the way to its handler cost the fast poll ~60
/// instructions a record).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    pub kind: ExpressKind,
    pub handler: u8,
    pub nargs: u8,
    pub txn: u32,
    pub tag: u64,
}

#[inline]
fn word(d: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&d[at..at + 4]);
    u32::from_ne_bytes(w)
}

impl Head {
    /// The fields of the record in `d`, or None when `d` is not exactly
    /// one (its length agrees with its count, the zero bytes are zero, an
    /// automatic reply names no handler).
    #[inline]
    pub fn decode(d: &[u8]) -> Option<Head> {
        if d.len() < HEADER || !is_express(d) {
            return None;
        }
        let kind = match d[2] {
            1 => ExpressKind::Request,
            2 => ExpressKind::Reply,
            3 => ExpressKind::AutoReply,
            _ => return None,
        };
        let n = d[4] as usize;
        if n > MAX_ARGS
            || d.len() != HEADER + 4 * n
            || d[5..8] != [0; 3]
            || d[12..16] != [0; 4]
            || (kind == ExpressKind::AutoReply && d[3] != 0)
        {
            return None;
        }
        let mut tag = [0u8; 8];
        tag.copy_from_slice(&d[16..24]);
        Some(Head {
            kind,
            handler: d[3],
            nargs: n as u8,
            txn: word(d, 8),
            tag: u64::from_ne_bytes(tag),
        })
    }

    /// The arguments of the record `d` this head was decoded from, into
    /// the first `nargs` of `args` (the rest untouched).
    #[inline]
    pub fn args(&self, d: &[u8], args: &mut [u32; MAX_ARGS]) {
        let n = (self.nargs as usize).min(MAX_ARGS);
        for (i, a) in args[..n].iter_mut().enumerate() {
            *a = word(d, HEADER + 4 * i);
        }
    }
}

/// Writes the record of these fields into `buf` (its arguments: at most
/// `MAX_ARGS` of `args`); returns its length. (Straight from the message
/// being sent: no `Express` made first.)
#[inline]
pub fn encode(
    kind: ExpressKind,
    handler: u8,
    args: &[u32],
    txn: u32,
    tag: u64,
    buf: &mut [u8; MAX_LEN],
) -> usize {
    let n = args.len().min(MAX_ARGS);
    buf[..2].copy_from_slice(&MAGIC);
    buf[2] = kind as u8;
    buf[3] = handler;
    buf[4] = n as u8;
    buf[5..8].fill(0);
    buf[8..12].copy_from_slice(&txn.to_ne_bytes());
    buf[12..16].fill(0);
    buf[16..24].copy_from_slice(&tag.to_ne_bytes());
    for (i, a) in args[..n].iter().enumerate() {
        buf[HEADER + 4 * i..HEADER + 4 * i + 4].copy_from_slice(&a.to_ne_bytes());
    }
    HEADER + 4 * n
}

impl Express {
    /// Writes the record into `buf`; returns its length.
    pub fn encode(&self, buf: &mut [u8; MAX_LEN]) -> usize {
        let n = (self.nargs as usize).min(MAX_ARGS);
        encode(
            self.kind,
            self.handler,
            &self.args[..n],
            self.txn,
            self.tag,
            buf,
        )
    }

    /// The record in `d`, or None when it is not exactly one (its
    /// arguments past the count zero).
    #[inline]
    pub fn decode(d: &[u8]) -> Option<Express> {
        let h = Head::decode(d)?;
        let mut args = [0u32; MAX_ARGS];
        h.args(d, &mut args);
        Some(Express {
            kind: h.kind,
            handler: h.handler,
            nargs: h.nargs,
            args,
            txn: h.txn,
            tag: h.tag,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(kind: ExpressKind, nargs: u8) -> Express {
        let mut args = [0; MAX_ARGS];
        for (i, a) in args[..nargs as usize].iter_mut().enumerate() {
            *a = 0x0101_0101 * (i as u32 + 1);
        }
        Express {
            kind,
            handler: if kind == ExpressKind::AutoReply { 0 } else { 7 },
            nargs,
            args,
            txn: 0xdead_beef,
            tag: 0x1234_5678_9abc_def0,
        }
    }

    #[test]
    fn records_come_back_as_they_went() {
        let mut buf = [0u8; MAX_LEN];
        for (kind, n) in [
            (ExpressKind::Request, 0),
            (ExpressKind::Request, 16),
            (ExpressKind::Reply, 3),
            (ExpressKind::AutoReply, 0),
            (ExpressKind::AutoReply, 16),
        ] {
            let e = sample(kind, n);
            let len = e.encode(&mut buf);
            assert_eq!(len, HEADER + 4 * n as usize);
            assert_eq!(Express::decode(&buf[..len]), Some(e));
            // the head and the arguments read apart agree with it
            let h = Head::decode(&buf[..len]).unwrap();
            assert_eq!(
                (h.kind, h.handler, h.nargs, h.txn, h.tag),
                (e.kind, e.handler, e.nargs, e.txn, e.tag)
            );
            let mut args = [0u32; MAX_ARGS];
            h.args(&buf[..len], &mut args);
            assert_eq!(args, e.args);
            // written from its parts: the same bytes, over any left before
            let mut other = [0xffu8; MAX_LEN];
            let n = encode(
                kind,
                e.handler,
                &e.args[..n as usize],
                e.txn,
                e.tag,
                &mut other,
            );
            assert_eq!(other[..n], buf[..len]);
        }
    }

    #[test]
    fn anything_else_is_refused() {
        let mut buf = [0u8; MAX_LEN];
        let len = sample(ExpressKind::Request, 4).encode(&mut buf);
        let good = buf;
        // shorter, longer than its count says, cut in the header
        assert_eq!(Express::decode(&good[..len - 1]), None);
        assert_eq!(Express::decode(&good[..len + 4]), None);
        assert_eq!(Express::decode(&good[..HEADER - 1]), None);
        assert_eq!(Express::decode(&good[..1]), None);
        let bad = |at: usize, v: u8| {
            let mut b = good;
            b[at] = v;
            // the head alone refuses what the whole record refuses
            assert_eq!(
                Head::decode(&b[..len]).is_none(),
                Express::decode(&b[..len]).is_none()
            );
            Express::decode(&b[..len])
        };
        assert_eq!(bad(0, b'Q'), None); // magic
        assert_eq!(bad(1, b'A'), None); // a protocol packet's magic
        assert_eq!(bad(2, 0), None); // kind
        assert_eq!(bad(2, 4), None);
        assert_eq!(bad(4, 17), None); // more arguments than there can be
        assert_eq!(bad(4, 255), None);
        assert_eq!(bad(4, 5), None); // the count disagrees with the length
        assert_eq!(bad(6, 1), None); // padding
        assert_eq!(bad(13, 1), None);
        // an automatic reply carries no handler
        for nargs in [0, 5] {
            let mut b = [0u8; MAX_LEN];
            let n = sample(ExpressKind::AutoReply, nargs).encode(&mut b);
            b[3] = 1;
            assert_eq!(Express::decode(&b[..n]), None);
        }
        assert!(!is_express(b"RA\x02"));
        assert!(is_express(b"RX"));
    }
}
