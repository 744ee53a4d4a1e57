//! A large packet's GMAC tag from a digest of its payload made while the
//! payload was copied (`MacKey::copy_digest`): for a request copied when
//! it was handed in but sent a window later (AMX's 128 credits of 65,000
//! bytes: 8 MB copied ahead), whose GHASH at sending time read the bytes
//! back from outside the cache (2-3x the time of the same instructions on
//! cached bytes). The tag is bit for bit the one `MacKey::tag_pieces`
//! gives for header and payload: nothing changes on the wire or at the
//! receiver, and the MAC is the same AES-128-GMAC.
//!
//! Why it is the same tag. GHASH of A = hdr || P (h + p bytes, n blocks of
//! 16, the last zero-padded), nothing encrypted: Y_i = (Y_{i-1} ^ A_i)·H,
//! S = (Y_n ^ L)·H with L the lengths block, tag = S ^ E_K(nonce || 1).
//! A = (hdr || 0^p) ^ (0^h || P), and GHASH is linear: Y_n = Y(hdr)·H^k ^ Q,
//! Y(hdr) the sum over the header's n_h = ceil(h / 16) blocks, k = n - n_h,
//! Q the sum over 0^r || P with r = h mod 16 (the whole zero blocks in
//! front of it add nothing). So
//!     tag = Y(hdr)·H^(k+1) ^ Q·H ^ L·H ^ E_K(nonce || 1).
//! The digest is Q·H for one r (the header's length modulo 16, known when
//! the payload is copied): AWS-LC's GMAC of 0^r || P under a fixed nonce
//! N0 is T = E_K(N0 || 1) ^ Q·H ^ L_q·H, fed each piece just after it is
//! copied; T is never sent, so N0's reuse gives nothing away (it only ever
//! serves to strip E_K(N0 || 1) again). Y(hdr)·H comes the same way from
//! the header's GMAC under the packet's own nonce. Per packet: that GMAC
//! of ~60 bytes, one AES block, three multiplications in GF(2^128)
//! (`sys::gmac::gf128_mul`), H^k kept for the last few k.

use std::fmt;
use std::sync::Arc;

use super::mac::{MacKey, PieceMac, MAC_LEN, NONCE_LEN, SHORT_MAX};
use super::split_key::{j0, N0};
use crate::sys::gmac::{gf128_mul, GmacCtx};

/// The copy and the hash go in pieces of this many bytes (each hashed
/// while in L1).
const PIECE: usize = 8 << 10;

/// GHASH's lengths block for `bytes` of associated data, nothing encrypted.
fn lengths(bytes: usize) -> u128 {
    ((bytes as u128) * 8) << 64
}

/// The digest of a payload for one key and one header length modulo 16
/// (`MacKey::copy_digest`). Keeps its key alive (so a key made later at
/// the same address is never taken for it).
pub struct PayloadDigest {
    qh: u128,
    phase: u8,
    len: usize,
    key: Arc<PieceMac>,
}

impl fmt::Debug for PayloadDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PayloadDigest({} bytes after {})", self.len, self.phase)
    }
}

impl MacKey {
    /// Appends `src` to `dst` and returns its digest for a packet whose
    /// header is `phase` bytes long modulo 16 (`phase` < 16): the copy and
    /// GHASH go together, piece by piece, the hash reading each piece just
    /// copied.
    pub fn copy_digest(&self, dst: &mut Vec<u8>, src: &[u8], phase: usize) -> PayloadDigest {
        let phase = phase % 16;
        let t = {
            let mut g = self.pieces.ctx.lock();
            let ctx = g.get_or_insert_with(|| GmacCtx::new(&self.pieces.key));
            ctx.begin(&N0);
            ctx.update(&[0u8; 16][..phase]);
            dst.reserve(src.len());
            for piece in src.chunks(PIECE) {
                let at = dst.len();
                super::extend_bytes(dst, piece);
                ctx.update(&dst[at..]);
            }
            u128::from_be_bytes(ctx.finish())
        };
        let s = &self.pieces.split;
        PayloadDigest {
            qh: t ^ s.ek0 ^ gf128_mul(lengths(phase + src.len()), s.h),
            phase: phase as u8,
            len: src.len(),
            key: self.pieces.clone(),
        }
    }

    /// The tag of `head || payload` under `nonce` (as `tag_pieces`) from
    /// `d`, the payload's digest; None when `d` is not for this key, this
    /// payload's length or this header's length, or the packet is short
    /// (Poly1305-AES): the caller then hashes the bytes.
    pub fn tag_with_digest(
        &self,
        nonce: &[u8; NONCE_LEN],
        head: &[u8],
        payload: &[u8],
        d: &PayloadDigest,
    ) -> Option<[u8; MAC_LEN]> {
        let total = head.len() + payload.len();
        if !Arc::ptr_eq(&d.key, &self.pieces)
            || d.len != payload.len()
            || head.len() % 16 != d.phase as usize
            || total <= SHORT_MAX
        {
            return None;
        }
        let th = {
            let mut g = self.pieces.ctx.lock();
            let ctx = g.get_or_insert_with(|| GmacCtx::new(&self.pieces.key));
            u128::from_be_bytes(ctx.tag(nonce, &[head]))
        };
        let s = &self.pieces.split;
        let mask = j0(&s.aes, nonce);
        // Y(hdr)·H, then the tag as the module doc says
        let yh = th ^ mask ^ gf128_mul(lengths(head.len()), s.h);
        let k = total.div_ceil(16) - head.len().div_ceil(16);
        let tag = gf128_mul(yh, s.power(k)) ^ d.qh ^ gf128_mul(lengths(total), s.h) ^ mask;
        Some(tag.to_be_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::gmac::gf128_mul_soft;
    use crate::wire::split_key::ONE;

    /// xorshift64* (the wire layer takes no generator from above it).
    struct Rng(u64);

    impl Rng {
        fn new(seed: u64) -> Rng {
            Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
        }

        fn next_u64(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next_u64() % n
        }
    }

    #[test]
    fn the_field_product_is_gcms() {
        // SP 800-38D's test case 2: H = E_0(0), GHASH of one zero block
        // under it (X_1 = 0 * H), and H * H against the bitwise product
        let h = 0x66e94bd4ef8a2c3b884cfa59ca342b2e_u128;
        assert_eq!(gf128_mul(0, h), 0);
        assert_eq!(gf128_mul(ONE, h), h, "1 is the top bit");
        let mut r = Rng::new(7);
        for _ in 0..2000 {
            let mut w = || u128::from(r.next_u64()) << 64 | u128::from(r.next_u64());
            let (a, b) = (w(), w());
            assert_eq!(gf128_mul(a, b), gf128_mul_soft(a, b));
            assert_eq!(gf128_mul(a, b), gf128_mul(b, a));
        }
    }

    /// On random headers, payloads and pieces, the tag from the digest is
    /// `tag_pieces`' (and the copy is the bytes); a digest of another
    /// key, length or phase gives none.
    #[test]
    fn the_tag_from_a_digest_is_the_tag_of_the_packet() {
        let k = MacKey::from_job_key("0123456789abcdef0123456789abcdef");
        let other = k.derive(b"another");
        let mut r = Rng::new(11);
        for round in 0..300 {
            let h = 1 + r.below(130) as usize;
            let p = match round % 3 {
                0 => r.below(300) as usize,
                1 => r.below(70_000) as usize,
                _ => 8192 * (1 + r.below(8) as usize) + r.below(3) as usize,
            };
            let bytes: Vec<u8> = (0..h + p).map(|_| r.next_u64() as u8).collect();
            let (head, payload) = bytes.split_at(h);
            let mut dst = vec![9u8; round % 5];
            let d = k.copy_digest(&mut dst, payload, h % 16);
            assert_eq!(&dst[round % 5..], payload, "round {round}: the copy");
            let mut nonce = [0u8; NONCE_LEN];
            nonce.iter_mut().for_each(|b| *b = r.next_u64() as u8);
            let want = k.tag_pieces(&nonce, &[head, payload]);
            if h + p <= SHORT_MAX {
                assert_eq!(k.tag_with_digest(&nonce, head, payload, &d), None);
                continue;
            }
            assert_eq!(
                k.tag_with_digest(&nonce, head, payload, &d),
                Some(want),
                "round {round}: header {h}, payload {p}"
            );
            // a retransmission: another nonce, another header of the same
            // length modulo 16
            let head2: Vec<u8> = (0..h + 16).map(|_| r.next_u64() as u8).collect();
            assert_eq!(
                k.tag_with_digest(&[3; NONCE_LEN], &head2, payload, &d),
                Some(k.tag_pieces(&[3; NONCE_LEN], &[&head2, payload])),
            );
            assert_eq!(other.tag_with_digest(&nonce, head, payload, &d), None);
            assert_eq!(
                k.tag_with_digest(&nonce, &bytes[..h + 1], payload, &d),
                None
            );
            if p > 0 {
                let short = &payload[..p - 1];
                assert_eq!(k.tag_with_digest(&nonce, head, short, &d), None);
            }
        }
    }
}
