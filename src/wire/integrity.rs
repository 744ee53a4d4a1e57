//! The trailer that protects every datagram: how it is written (`seal`) and
//! checked (`open`). One type, so that the packet codec does not care which
//! protection is in use.
//!
//! - Without a job key: CRC32C (catches corruption, not forgery).
//! - With a job key (`wire::mac::MacKey`, AES-128-GMAC, or Poly1305-AES
//!   for short packets, over the whole packet, header and payload), following the nonce rule of `wire::mac`,
//!   the trailer is the 96-bit nonce (12 bytes) then the tag (16); the
//!   receiver reads the nonce from it:
//!   - handshake packets (INIT, INIT_ACK, COOKIE_ECHO, COOKIE_ACK, ABORT):
//!     the job key itself ([`Integrity::JobMac`], `ProtoConfig::integrity`);
//!     nonce = a random 96-bit start drawn per endpoint (from its secret)
//!     plus the count of packets it sealed under the job key: two
//!     endpoints of a job repeat a nonce only if their 32-bit high parts
//!     agree and their 64-bit ranges overlap (with 10^4 endpoints, 10^9
//!     packets each: about 10^-12); no random generator per packet;
//!   - DATA, ACK, NACK: a key per association and direction, derived once
//!     when both tags are known ([`Integrity::for_association`]); nonce =
//!     a 32-bit prefix, the number of the keying at this endpoint, then the
//!     64-bit count of packets sealed under the key. The counter is shared
//!     by every copy of the sealing key (an `Arc`), starts at 0 and never
//!     goes back while the key lives. Only the endpoint whose tag comes
//!     first in the key's context seals under it; the prefix keeps its
//!     nonces apart if it keys the same pair of tags twice (a replayed
//!     COOKIE_ECHO re-establishing an association that was closed gives
//!     the same key). Replays of a whole packet pass the MAC and are the
//!     protocol's duplicates.
//!
//! A packet whose trailer does not check is refused with
//! `DecodeError::Checksum` (the protocol drops and counts it).
//!
//! - On a same-host ring whose two ends proved the same job
//!   ([`Integrity::SameHost`], `net/shm_proof.rs`): DATA, ACK and NACK
//!   carry a trailer of the usual length, zeros, neither computed nor
//!   checked (the datagram is framed as any). Memory does not corrupt
//!   what it holds, and whoever can write into the ring (a process of the
//!   same user that received the sealed file, and proved it holds the job
//!   key) could forge the MAC anyway. The receiver opens a datagram so
//!   only when it came through such a ring (`Protocol::handle_ring_datagram`);
//!   the same bytes by UDP fail their check.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use super::mac::{MacKey, MAC_LEN, NONCE_LEN};
use super::mac_digest::PayloadDigest;

/// Packets sealed from a payload digest (`seal_gathered`), for tests.
#[cfg(any(test, feature = "testing"))]
pub static DIGEST_SEALS: AtomicU64 = AtomicU64::new(0);
use super::{crc32c, crc32c_append, DecodeError, CRC_LEN};

/// The payload piece of a gathered datagram: `whole[off..off + len]`,
/// with the CRC32C sums of `whole`'s blocks when its copy made them
/// (`wire::copy_summed`; empty otherwise).
#[derive(Clone, Copy, Debug)]
pub struct PayloadPiece<'a> {
    whole: &'a [u8],
    sums: &'a [u32],
    off: usize,
    len: usize,
    /// `whole`'s MAC digest, made as it was copied (`wire/mac_digest.rs`).
    digest: Option<&'a PayloadDigest>,
}

impl<'a> PayloadPiece<'a> {
    /// `bytes`, without sums.
    pub fn plain(bytes: &'a [u8]) -> Self {
        PayloadPiece {
            whole: bytes,
            sums: &[],
            off: 0,
            len: bytes.len(),
            digest: None,
        }
    }

    /// `whole[off..off + len]`, `sums` those `wire::copy_summed` kept of
    /// `whole` (any number, none included). Panics when the range is not
    /// within `whole`.
    pub fn summed(whole: &'a [u8], sums: &'a [u32], off: usize, len: usize) -> Self {
        let _ = &whole[off..off + len];
        PayloadPiece {
            whole,
            sums,
            off,
            len,
            digest: None,
        }
    }

    /// The piece with `whole`'s MAC digest (`Integrity::copy_digest`):
    /// a packet carrying all of `whole` is then sealed from it.
    pub fn with_digest(self, digest: Option<&'a PayloadDigest>) -> Self {
        PayloadPiece { digest, ..self }
    }

    /// The piece's bytes.
    #[inline]
    pub fn bytes(&self) -> &'a [u8] {
        &self.whole[self.off..self.off + self.len]
    }

    /// The CRC32C `crc` continued over the piece: from the block sums
    /// where there are some (the bytes of the blocks the piece holds whole
    /// are not read again), else directly.
    #[inline]
    fn crc32c_append(&self, crc: u32) -> u32 {
        if !self.sums.is_empty() {
            let range = self.off..self.off + self.len;
            if let Some(c) = crate::sys::crc32c_append_summed(crc, self.whole, self.sums, range) {
                return c;
            }
        }
        crc32c_append(crc, self.bytes())
    }
}

/// Trailer of a packet that carries a MAC: nonce and tag.
pub const MAC_TRAILER_LEN: usize = NONCE_LEN + MAC_LEN;

/// An association's key for one direction and, when it seals, the count of
/// packets it sealed (the next nonce).
#[derive(Debug)]
pub struct AssocMac {
    key: MacKey,
    /// The first 4 bytes of every nonce under this copy of the key.
    prefix: [u8; 4],
    sent: AtomicU64,
}

impl AssocMac {
    /// Packets sealed so far under this key.
    #[cfg(any(test, feature = "testing"))]
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }
}

impl AssocMac {
    /// The nonce of the next packet sealed under this key. Never repeats
    /// under it: 2^64 packets at 10^9 a second take 584 years.
    #[inline]
    fn next_nonce(&self) -> [u8; NONCE_LEN] {
        let mut nonce = [0u8; NONCE_LEN];
        nonce[..4].copy_from_slice(&self.prefix);
        let n = self.sent.fetch_add(1, Ordering::Relaxed);
        nonce[4..].copy_from_slice(&n.to_be_bytes());
        nonce
    }
}

impl JobMac {
    /// The nonce of the next handshake packet sealed under the job key.
    fn next_nonce(&self) -> [u8; NONCE_LEN] {
        let mut nonce = [0u8; NONCE_LEN];
        nonce[..4].copy_from_slice(&self.hi);
        let n = self
            .lo
            .wrapping_add(self.sent.fetch_add(1, Ordering::Relaxed));
        nonce[4..].copy_from_slice(&n.to_be_bytes());
        nonce
    }
}

/// The job key with its nonce state at one endpoint.
#[derive(Debug)]
pub struct JobMac {
    key: MacKey,
    /// The endpoint's random nonce start: high 32 bits, low 64 bits.
    hi: [u8; 4],
    lo: u64,
    sent: AtomicU64,
    /// Associations keyed so far (the prefix of their nonces).
    keyings: AtomicU32,
}

/// How datagrams are sealed and checked.
#[derive(Clone, Debug, Default)]
pub enum Integrity {
    /// A CRC32C over everything before it (big-endian u32).
    #[default]
    Crc32c,
    /// The job key's MAC (handshake packets). Clones share the counters.
    JobMac(Arc<JobMac>),
    /// An association's key for one direction with a counter nonce (DATA,
    /// ACK, NACK). Clones share the counter.
    AssocMac(Arc<AssocMac>),
    /// A proven same-host ring's (module doc): a trailer of this many zero
    /// bytes (the endpoint's own integrity's length, so that every
    /// datagram is framed alike), neither computed nor checked.
    SameHost(usize),
}

impl Integrity {
    /// The job key's integrity at an endpoint whose nonces start at
    /// `nonce_start` (random per endpoint).
    pub fn job(key: &MacKey, nonce_start: [u8; NONCE_LEN]) -> Integrity {
        let (hi, lo) = nonce_start.split_at(4);
        Integrity::JobMac(Arc::new(JobMac {
            key: key.clone(),
            hi: hi.try_into().expect("4 bytes"),
            lo: u64::from_be_bytes(lo.try_into().expect("8 bytes")),
            sent: AtomicU64::new(0),
            keyings: AtomicU32::new(0),
        }))
    }

    /// Whether packets carry a MAC.
    pub fn is_mac(&self) -> bool {
        matches!(self, Integrity::JobMac(_) | Integrity::AssocMac(_))
    }

    /// What a proven same-host ring's datagrams carry under this (the
    /// endpoint's) integrity: a trailer of the same length, unchecked.
    pub fn same_host(&self) -> Integrity {
        Integrity::SameHost(self.trailer_len())
    }

    /// The sealing and the opening integrity of the association whose tags
    /// are `local_tag` (ours) and `peer_tag`, under this (the endpoint's)
    /// integrity: CRC32C stays CRC32C; the job key gives a derived key per
    /// direction, each counting its nonces from 0. Called once per
    /// association (a key derivation costs microseconds).
    pub fn for_association(&self, local_tag: u64, peer_tag: u64) -> (Integrity, Integrity) {
        let Integrity::JobMac(job) = self else {
            return (self.clone(), self.clone());
        };
        let prefix = job.keyings.fetch_add(1, Ordering::Relaxed).to_be_bytes();
        let dir = |from: u64, to: u64| {
            let mut ctx = [0u8; 21];
            ctx[..5].copy_from_slice(b"assoc");
            ctx[5..13].copy_from_slice(&from.to_be_bytes());
            ctx[13..].copy_from_slice(&to.to_be_bytes());
            Integrity::AssocMac(Arc::new(AssocMac {
                key: job.key.derive(&ctx),
                prefix,
                sent: AtomicU64::new(0),
            }))
        };
        (dir(local_tag, peer_tag), dir(peer_tag, local_tag))
    }

    /// Bytes the trailer adds to every datagram.
    #[inline]
    pub fn trailer_len(&self) -> usize {
        match self {
            Integrity::Crc32c => CRC_LEN,
            Integrity::JobMac(_) | Integrity::AssocMac(_) => MAC_TRAILER_LEN,
            Integrity::SameHost(n) => *n,
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
            Integrity::JobMac(k) => seal_job(k, buf, start),
            Integrity::AssocMac(a) => {
                let nonce = a.next_nonce();
                let tag = a.key.tag(&nonce, &buf[start..]);
                buf.extend_from_slice(&nonce);
                buf.extend_from_slice(&tag);
            }
            Integrity::SameHost(n) => buf.resize(buf.len() + n, 0),
        }
    }

    /// Appends the trailer of the datagram whose first piece starts at
    /// `buf[start..]` and whose second piece is `rest` (sent from where it
    /// lies, between the two): the same trailer as `seal` of the two
    /// joined, without joining them. CRC32C runs on across the pieces; the
    /// MAC too (`MacKey::tag_pieces`: AWS-LC's GHASH carries the partial
    /// block from one piece to the next), at the same cost per byte.
    /// Under CRC32C, the sum over `rest` is made of its payload's block
    /// sums when it has them (`PayloadPiece::summed`).
    #[inline]
    pub fn seal_gathered(&self, buf: &mut Vec<u8>, start: usize, rest: PayloadPiece<'_>) {
        let (nonce, key) = match self {
            Integrity::Crc32c => {
                let crc = rest.crc32c_append(crc32c(&buf[start..]));
                buf.extend_from_slice(&crc.to_be_bytes());
                return;
            }
            Integrity::JobMac(j) => (j.next_nonce(), &j.key),
            Integrity::AssocMac(a) => (a.next_nonce(), &a.key),
            Integrity::SameHost(n) => {
                buf.resize(buf.len() + n, 0);
                return;
            }
        };
        let whole = rest.off == 0 && rest.len == rest.whole.len();
        let tag = match rest.digest.filter(|_| whole) {
            Some(d) => match key.tag_with_digest(&nonce, &buf[start..], rest.bytes(), d) {
                Some(t) => {
                    #[cfg(any(test, feature = "testing"))]
                    DIGEST_SEALS.fetch_add(1, Ordering::Relaxed);
                    t
                }
                None => key.tag_pieces(&nonce, &[&buf[start..], rest.bytes()]),
            },
            None => key.tag_pieces(&nonce, &[&buf[start..], rest.bytes()]),
        };
        buf.extend_from_slice(&nonce);
        buf.extend_from_slice(&tag);
    }

    /// Appends `src` to `dst`, with its MAC digest for a packet whose
    /// header is `header_len` bytes when this is an association's MAC
    /// (`wire/mac_digest.rs`: the copy and GHASH in one pass), else
    /// None (a plain copy).
    pub fn copy_digest(
        &self,
        dst: &mut Vec<u8>,
        src: &[u8],
        header_len: usize,
    ) -> Option<PayloadDigest> {
        match self {
            Integrity::AssocMac(a) => Some(a.key.copy_digest(dst, src, header_len % 16)),
            _ => {
                super::extend_bytes(dst, src);
                None
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
            Integrity::JobMac(j) => open_mac(&j.key, dgram),
            Integrity::AssocMac(a) => open_mac(&a.key, dgram),
            Integrity::SameHost(n) => dgram
                .len()
                .checked_sub(*n)
                .map(|body| &dgram[..body])
                .ok_or(DecodeError::Truncated),
        }
    }
}

/// Checks the nonce-and-tag trailer of `dgram` under `k`.
#[inline]
fn open_mac<'a>(k: &MacKey, dgram: &'a [u8]) -> Result<&'a [u8], DecodeError> {
    let Some((body, t)) = dgram.split_last_chunk::<MAC_TRAILER_LEN>() else {
        return Err(DecodeError::Truncated);
    };
    let (nonce, tag) = t
        .split_first_chunk::<NONCE_LEN>()
        .expect("trailer holds a nonce");
    if !k.verify(nonce, body, tag) {
        return Err(DecodeError::Checksum);
    }
    Ok(body)
}

/// A handshake packet under the job key (rare packets).
#[cold]
fn seal_job(j: &JobMac, buf: &mut Vec<u8>, start: usize) {
    let nonce = j.next_nonce();
    let tag = j.key.tag(&nonce, &buf[start..]);
    buf.extend_from_slice(&nonce);
    buf.extend_from_slice(&tag);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> Integrity {
        let k = MacKey::from_job_key("0123456789abcdef0123456789abcdef");
        Integrity::job(&k, [9; NONCE_LEN])
    }

    #[test]
    fn job_mac_seals_and_opens_with_fresh_nonces() {
        let i = job();
        let mut a = b"header and payload".to_vec();
        let mut b = a.clone();
        i.seal(&mut a, 0);
        i.seal(&mut b, 0);
        assert_eq!(a.len(), 18 + MAC_TRAILER_LEN);
        assert_ne!(a, b, "another nonce each time");
        assert_eq!(a[18..22], [9; 4]);
        assert_eq!(a[22..30], 0x0909090909090909u64.to_be_bytes());
        assert_eq!(b[22..30], 0x090909090909090au64.to_be_bytes());
        assert_eq!(i.open(&a).unwrap(), b"header and payload");
        for bit in 0..a.len() * 8 {
            let mut f = a.clone();
            f[bit / 8] ^= 1 << (bit % 8);
            assert_eq!(i.open(&f), Err(DecodeError::Checksum), "bit {bit}");
        }
        assert!(Integrity::Crc32c.open(&a).is_err());
        assert_eq!(i.open(&a[..5]), Err(DecodeError::Truncated));
    }

    /// A gathered packet under an association's MAC opens like a whole
    /// one; a byte changed in either piece (header or payload) is refused.
    #[test]
    fn a_mac_seals_a_packet_in_pieces() {
        let (tx, rx) = job().for_association(5, 6);
        let (_, peer_rx) = job().for_association(6, 5);
        let _ = rx;
        let head = vec![0x11u8; 77];
        let rest: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
        let mut buf = vec![0xEE; 3]; // after an earlier datagram
        buf.extend_from_slice(&head);
        tx.seal_gathered(&mut buf, 3, PayloadPiece::plain(&rest));
        let joined = [&buf[3..3 + head.len()], &rest[..], &buf[3 + head.len()..]].concat();
        assert_eq!(joined.len(), head.len() + rest.len() + MAC_TRAILER_LEN);
        let body = peer_rx.open(&joined).expect("opens as a whole packet");
        assert_eq!(body.len(), head.len() + rest.len());
        for at in [0, 76, 77, 2000, head.len() + rest.len() - 1] {
            let mut f = joined.clone();
            f[at] ^= 4;
            assert_eq!(peer_rx.open(&f), Err(DecodeError::Checksum), "byte {at}");
        }
        // the next packet gets the next nonce, as with `seal`
        let mut again = head.clone();
        tx.seal(&mut again, 0);
        assert_eq!(again[head.len() + 4..head.len() + 12], 1u64.to_be_bytes());
    }

    /// A proven same-host ring's trailer: as long as the endpoint's own,
    /// zeros, never checked; the same bytes fail every real check (what
    /// the receiver does with them when they come by UDP).
    #[test]
    fn same_host_trailers_are_framed_alike_and_pass_no_other_check() {
        let (tx, rx) = job().for_association(5, 6);
        let (_, peer_rx) = job().for_association(6, 5);
        let _ = rx;
        for own in [Integrity::Crc32c, job(), tx] {
            let same = own.same_host();
            assert_eq!(same.trailer_len(), own.trailer_len());
            assert!(!same.is_mac());
            let mut a = b"header and payload".to_vec();
            same.seal(&mut a, 0);
            assert_eq!(a[18..], vec![0; own.trailer_len()][..]);
            let mut g = b"head".to_vec();
            same.seal_gathered(&mut g, 0, PayloadPiece::plain(b"er and payload"));
            assert_eq!(g[4..], vec![0; own.trailer_len()][..]);
            assert_eq!(same.open(&a).unwrap(), b"header and payload");
            assert!(own.open(&a).is_err());
            assert!(peer_rx.open(&a).is_err());
            assert!(Integrity::Crc32c.open(&a).is_err());
            // a trailer changed: still opened (nothing is checked)
            a[20] ^= 1;
            assert_eq!(same.open(&a).unwrap(), b"header and payload");
            assert_eq!(
                same.open(&a[..own.trailer_len() - 1]),
                Err(DecodeError::Truncated)
            );
        }
    }

    #[test]
    fn association_keys_count_per_direction_and_do_not_cross() {
        let i = job();
        let (a_tx, a_rx) = i.for_association(1, 2);
        let (b_tx, b_rx) = i.for_association(2, 1);
        let mut p = b"DATA".to_vec();
        let mut q = p.clone();
        a_tx.seal(&mut p, 0);
        a_tx.clone().seal(&mut q, 0);
        assert_eq!(&p[8..16], &0u64.to_be_bytes(), "first packet: count 0");
        assert_eq!(&q[8..16], &1u64.to_be_bytes(), "clones share the counter");
        assert_eq!(p[4..8], q[4..8], "one prefix per key");
        assert_eq!(b_rx.open(&p).unwrap(), b"DATA");
        assert_eq!(b_rx.open(&q).unwrap(), b"DATA");
        // reflected, or under the job key, or another association: refused
        assert!(a_rx.open(&p).is_err());
        assert!(b_tx.open(&p).is_err());
        assert!(i.open(&p).is_err());
        assert!(i.for_association(1, 3).1.open(&p).is_err());
        // a counter changed in flight changes the nonce: refused
        let mut f = p.clone();
        f[15] ^= 1;
        assert_eq!(b_rx.open(&f), Err(DecodeError::Checksum));
        let Integrity::AssocMac(m) = &a_tx else {
            panic!()
        };
        assert_eq!(m.sent(), 2);
        // the same tags keyed again: another prefix, so other nonces
        let (again, _) = i.for_association(1, 2);
        let mut r = b"DATA".to_vec();
        again.seal(&mut r, 0);
        assert_ne!(r[4..8], p[4..8]);
        assert_eq!(b_rx.open(&r).unwrap(), b"DATA");
        // without a job key: CRC32C both ways
        let (t, r) = Integrity::Crc32c.for_association(1, 2);
        assert!(!t.is_mac() && !r.is_mac());
    }
}
