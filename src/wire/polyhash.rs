//! Poly1305 (Bernstein; RFC 8439 section 2.5) without its final addition:
//! `h_r(m) mod 2^128`, for the short-packet MAC (`mac::ShortMac` adds
//! AES_k(nonce), which makes it Poly1305-AES). 64-bit limbs of 44, 44 and
//! 42 bits (after poly1305-donna-64), safe Rust, constant time (no branch
//! or index on secret data). Written here rather than taken from the
//! `poly1305` crate because that crate's AVX2 back end, which it picks at
//! run time, costs ~4,000 instructions on a 72-byte packet (its set-up is
//! for long messages); this costs ~40 per 16-byte block. Checked against
//! the crate (a dev-dependency) and Bernstein's vectors in the tests.

const M44: u64 = 0xfff_ffff_ffff;
const M42: u64 = 0x3ff_ffff_ffff;

/// A Poly1305 key's `r`, clamped, in limbs, with the multiples the
/// reduction uses: prepared once per key.
#[derive(Clone)]
pub struct PolyKey {
    r: [u64; 3],
    s: [u64; 2],
}

#[inline(always)]
fn le64(b: &[u8]) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[..8]);
    u64::from_le_bytes(x)
}

#[inline(always)]
fn mul(a: u64, b: u64) -> u128 {
    a as u128 * b as u128
}

impl PolyKey {
    /// `r`: the 16 bytes of the key's first half (clamped here).
    pub fn new(r: &[u8; 16]) -> PolyKey {
        let t0 = le64(&r[0..8]);
        let t1 = le64(&r[8..16]);
        let r0 = t0 & 0xffc_0fff_ffff;
        let r1 = ((t0 >> 44) | (t1 << 20)) & 0xfff_ffc0_ffff;
        let r2 = (t1 >> 24) & 0x00f_ffff_fc0f;
        PolyKey {
            r: [r0, r1, r2],
            s: [r1 * (5 << 2), r2 * (5 << 2)],
        }
    }

    /// `h_r(msg) mod 2^128` (little-endian), the Poly1305 of `msg` before
    /// the pad is added.
    pub fn hash(&self, msg: &[u8]) -> u128 {
        let [r0, r1, r2] = self.r;
        let [s1, s2] = self.s;
        let (mut h0, mut h1, mut h2) = (0u64, 0u64, 0u64);
        let mut block = |b: &[u8], hibit: u64| {
            let t0 = le64(&b[0..8]);
            let t1 = le64(&b[8..16]);
            h0 += t0 & M44;
            h1 += ((t0 >> 44) | (t1 << 20)) & M44;
            h2 += ((t1 >> 24) & M42) | hibit;
            let d0 = mul(h0, r0) + mul(h1, s2) + mul(h2, s1);
            let mut d1 = mul(h0, r1) + mul(h1, r0) + mul(h2, s2);
            let mut d2 = mul(h0, r2) + mul(h1, r1) + mul(h2, r0);
            let mut c = (d0 >> 44) as u64;
            h0 = d0 as u64 & M44;
            d1 += c as u128;
            c = (d1 >> 44) as u64;
            h1 = d1 as u64 & M44;
            d2 += c as u128;
            c = (d2 >> 42) as u64;
            h2 = d2 as u64 & M42;
            h0 += c * 5;
            c = h0 >> 44;
            h0 &= M44;
            h1 += c;
        };
        let mut chunks = msg.chunks_exact(16);
        for b in &mut chunks {
            block(b, 1 << 40);
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 16];
            b[..rest.len()].copy_from_slice(rest);
            b[rest.len()] = 1;
            block(&b, 0);
        }
        // full carry, then h mod p (h or h - p, whichever is below p)
        let mut c = h1 >> 44;
        h1 &= M44;
        h2 += c;
        c = h2 >> 42;
        h2 &= M42;
        h0 += c * 5;
        c = h0 >> 44;
        h0 &= M44;
        h1 += c;
        c = h1 >> 44;
        h1 &= M44;
        h2 += c;
        c = h2 >> 42;
        h2 &= M42;
        h0 += c * 5;
        c = h0 >> 44;
        h0 &= M44;
        h1 += c;
        let mut g0 = h0 + 5;
        c = g0 >> 44;
        g0 &= M44;
        let mut g1 = h1 + c;
        c = g1 >> 44;
        g1 &= M44;
        let mut g2 = h2.wrapping_add(c).wrapping_sub(1 << 42);
        // all ones when g2 did not go below zero (h >= p: take g)
        let take_g = (g2 >> 63).wrapping_sub(1);
        g0 &= take_g;
        g1 &= take_g;
        g2 &= take_g;
        let keep_h = !take_g;
        h0 = (h0 & keep_h) | g0;
        h1 = (h1 & keep_h) | g1;
        h2 = (h2 & keep_h) | g2;
        (h0 as u128) | ((h1 as u128) << 44) | ((h2 as u128) << 88)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use poly1305::universal_hash::KeyInit;

    /// The `poly1305` crate with s = 0 gives the same on every length
    /// 0..300 and random keys (including r's that clamp to large limbs).
    #[test]
    fn same_as_the_poly1305_crate() {
        let mut x = 0x243f_6a88_85a3_08d3u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..40 {
            let mut key = [0u8; 32];
            for c in key[..16].chunks_exact_mut(8) {
                c.copy_from_slice(&next().to_le_bytes());
            }
            if round == 0 {
                key[..16].fill(0xff);
            }
            let r: [u8; 16] = key[..16].try_into().unwrap();
            let mine = PolyKey::new(&r);
            for len in 0..300 {
                let msg: Vec<u8> = (0..len)
                    .map(|i| {
                        if round == 1 {
                            0xff
                        } else {
                            (next() >> (i % 8)) as u8
                        }
                    })
                    .collect();
                let want = poly1305::Poly1305::new(&key.into()).compute_unpadded(&msg);
                let want = u128::from_le_bytes(want.into());
                assert_eq!(mine.hash(&msg), want, "round {round} len {len}");
            }
        }
    }
}
