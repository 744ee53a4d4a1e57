//! GHASH (the hash under AES-GMAC, `gmac.rs`) sixteen blocks at a time
//! with 256-bit VPCLMULQDQ, for CPUs that have it without AVX-512 (AMD Zen 3,
//! Intel Alder Lake and later cores without AVX-512), where AWS-LC's
//! GHASH is its 128-bit PCLMULQDQ one (`gcm_ghash_avx`, 7.6 GB/s on Zen
//! 3: a third of a large packet's time at each end under the MAC). With
//! AVX-512 AWS-LC's own (`gcm_ghash_avx512`) is used as before.
//!
//! Computed as POLYVAL (RFC 8452, appendix A): GHASH(H, X_1..X_n) =
//! rev(POLYVAL(mulX(rev(H)), rev(X_1), ..., rev(X_n))), rev reversing a
//! block's bytes, so that a block is `u128::from_be_bytes` of its bytes
//! and no bit is reflected. POLYVAL's product is a·b·x^-128 modulo
//! x^128 + x^127 + x^126 + x^121 + 1, reduced in two carry-less steps by
//! 0xc2 << 56 (a Montgomery reduction). Sixteen blocks are multiplied by
//! H^16..H^1 (kept), their products summed unreduced and reduced once;
//! fewer left over the same way with 128-bit PCLMULQDQ. The tags are
//! checked against AWS-LC's bit for bit (`gmac.rs`'s tests).
//!
//! Measured on Zen 3: `target/release/ramp bench`'s integrity line, GMAC
//! over 64 KiB, 14.6 GB/s (AWS-LC's 7.6). By payload size (a loop of
//! `GmacCtx::tag` over a 60-byte header and the payload, this against
//! AWS-LC, ns a tag; a throwaway test, not kept): 60 bytes 88 / 130,
//! 300: 108 / 159, 1,500: 204 / 313, 9,000: 704 / 1,284, 65,536: 4,482 /
//! 8,606.

#![cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]

#[cfg(not(target_arch = "x86_64"))]
pub(crate) use elsewhere::*;
#[cfg(target_arch = "x86_64")]
pub(crate) use x86::*;

/// Other CPUs: never available (AWS-LC's GHASH is used).
#[cfg(not(target_arch = "x86_64"))]
mod elsewhere {
    pub(crate) fn available() -> bool {
        false
    }

    pub(crate) struct Ghash;

    impl Ghash {
        pub(crate) fn new(_h: &[u8; 16]) -> Option<Ghash> {
            None
        }
        pub(crate) fn reset(&mut self) {}
        pub(crate) fn update(&mut self, _data: &[u8]) {}
        pub(crate) fn finish(&mut self) -> [u8; 16] {
            unreachable!("never made")
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::{
        __m128i, __m256i, _mm256_castsi256_si128, _mm256_clmulepi64_epi128,
        _mm256_extracti128_si256, _mm256_loadu_si256, _mm256_set_m128i, _mm256_setzero_si256,
        _mm256_shuffle_epi32, _mm256_shuffle_epi8, _mm256_xor_si256, _mm256_zextsi128_si256,
        _mm_clmulepi64_si128, _mm_loadu_si128, _mm_set_epi64x, _mm_setzero_si128,
        _mm_shuffle_epi32, _mm_shuffle_epi8, _mm_slli_si128, _mm_srli_si128, _mm_xor_si128,
    };

    /// POLYVAL's reduction constant: x^127 + x^126 + x^121 (the polynomial
    /// without x^128 and 1) in the high half of a 64-bit lane's product.
    const POLY: u64 = 0xc2 << 56;

    /// Blocks hashed by one step of the wide loop (their products summed,
    /// reduced once): with 8, 11.4 GB/s on Zen 3 (the reduction's latency
    /// bounds a step), 16: 14.0-14.5, 32: 15.3.
    const BLOCKS: usize = 16;

    /// Bytes hashed by one step of the wide loop.
    const WIDE: usize = 16 * BLOCKS;

    /// Reverses each 16-byte lane's bytes (`_mm*_shuffle_epi8`): a block
    /// read big-endian.
    const REV_LO: i64 = 0x0809_0a0b_0c0d_0e0f;
    const REV_HI: i64 = 0x0001_0203_0405_0607;

    /// Whether this CPU runs `Ghash` (AVX2, PCLMULQDQ and VPCLMULQDQ).
    pub(crate) fn available() -> bool {
        std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("pclmulqdq")
            && std::arch::is_x86_feature_detected!("vpclmulqdq")
    }

    /// A GHASH in progress under one key. Made only where `available()`.
    pub(crate) struct Ghash {
        /// H^1..H^BLOCKS in POLYVAL's algebra (`powers[i]` = H^(i+1)).
        powers: [u128; BLOCKS],
        /// The POLYVAL state.
        acc: u128,
        /// A partial block carried to the next `update`.
        part: [u8; 16],
        part_len: usize,
        /// Bytes hashed since `reset`.
        len: u64,
    }

    impl Ghash {
        /// A hash under `h` (AES_K(0^128)); None where the CPU cannot run
        /// it.
        pub(crate) fn new(h: &[u8; 16]) -> Option<Ghash> {
            if !available() {
                return None;
            }
            let h = u128::from_be_bytes(*h);
            // mulX_POLYVAL: the key times x (no branch on the key's bits)
            let hx = (h << 1) ^ (0u128.wrapping_sub(h >> 127) & (0xc2 << 120 | 1));
            let mut powers = [hx; BLOCKS];
            for i in 1..BLOCKS {
                // SAFETY: the CPU has PCLMULQDQ (`available` above).
                powers[i] = unsafe { dot(powers[i - 1], hx) };
            }
            Some(Ghash {
                powers,
                acc: 0,
                part: [0; 16],
                part_len: 0,
                len: 0,
            })
        }

        /// Starts a new hash under the same key.
        pub(crate) fn reset(&mut self) {
            self.acc = 0;
            self.part_len = 0;
            self.len = 0;
        }

        /// Hashes `data` after what came before (a partial block carried).
        pub(crate) fn update(&mut self, mut data: &[u8]) {
            self.len += data.len() as u64;
            if self.part_len > 0 {
                let n = (16 - self.part_len).min(data.len());
                self.part[self.part_len..self.part_len + n].copy_from_slice(&data[..n]);
                self.part_len += n;
                data = &data[n..];
                if self.part_len < 16 {
                    return;
                }
                // SAFETY: made only where the CPU has PCLMULQDQ and SSSE3 (`new`);
                // one whole block.
                self.acc = unsafe { absorb_blocks(self.acc, &self.powers, &self.part) };
                self.part_len = 0;
            }
            let wide = data.len() / WIDE * WIDE;
            if wide > 0 {
                // SAFETY: made only where the CPU has AVX2 and VPCLMULQDQ
                // (`new`); `wide` is a multiple of WIDE within `data`.
                self.acc = unsafe { absorb_wide(self.acc, &self.powers, &data[..wide]) };
                data = &data[wide..];
            }
            let whole = data.len() / 16 * 16;
            if whole > 0 {
                // SAFETY: made only where the CPU has PCLMULQDQ and SSSE3 (`new`);
                // fewer than BLOCKS whole blocks.
                self.acc = unsafe { absorb_blocks(self.acc, &self.powers, &data[..whole]) };
                data = &data[whole..];
            }
            self.part[..data.len()].copy_from_slice(data);
            self.part_len = data.len();
        }

        /// GHASH of the bytes given as associated data (nothing
        /// encrypted): the last block zero-padded, then the lengths block.
        pub(crate) fn finish(&mut self) -> [u8; 16] {
            let mut last = [0u8; 32];
            let n = if self.part_len > 0 { 32 } else { 16 };
            let (pad, lengths) = last[..n].split_at_mut(n - 16);
            pad[..self.part_len].copy_from_slice(&self.part[..self.part_len]);
            // GCM's lengths block: the associated data's bits, then the
            // encrypted bits (none), each a 64-bit big-endian number
            lengths[..8].copy_from_slice(&(self.len * 8).to_be_bytes());
            // SAFETY: made only where the CPU has PCLMULQDQ and SSSE3 (`new`); one
            // or two whole blocks.
            self.acc = unsafe { absorb_blocks(self.acc, &self.powers, &last[..n]) };
            self.part_len = 0;
            self.acc.to_be_bytes()
        }
    }

    impl Drop for Ghash {
        fn drop(&mut self) {
            // the key's powers (H itself among them: who knows it forges
            // tags) and the state wiped, as AWS-LC wipes its context's
            // SAFETY: `self` is live and ours; plain data overwritten in
            // place with a valid value.
            unsafe {
                std::ptr::write_volatile(&mut self.powers, [0; BLOCKS]);
                std::ptr::write_volatile(&mut self.acc, 0);
                std::ptr::write_volatile(&mut self.part, [0; 16]);
            }
        }
    }

    /// `u128` and `__m128i` are the same 16 plain bytes (the low 64 bits
    /// in the low lane on this little-endian machine).
    fn m128(v: u128) -> __m128i {
        // SAFETY: both types are 16 bytes of plain data, any bit pattern
        // valid.
        unsafe { std::mem::transmute::<u128, __m128i>(v) }
    }

    fn u128_of(v: __m128i) -> u128 {
        // SAFETY: as for `m128`.
        unsafe { std::mem::transmute::<__m128i, u128>(v) }
    }

    /// The product whose 64-bit partial products are summed in `lo` (low
    /// halves), `mid` (the cross terms) and `hi`, reduced: POLYVAL's
    /// (lo + mid·x^64 + hi·x^128)·x^-128, the low 128 bits folded away by
    /// two carry-less multiplications by `POLY` (Montgomery).
    ///
    /// # Safety
    /// The CPU must have PCLMULQDQ.
    #[target_feature(enable = "pclmulqdq")]
    unsafe fn reduce(lo: __m128i, mid: __m128i, hi: __m128i) -> __m128i {
        let poly = _mm_set_epi64x(0, POLY as i64);
        let lo = _mm_xor_si128(lo, _mm_slli_si128(mid, 8));
        let hi = _mm_xor_si128(hi, _mm_srli_si128(mid, 8));
        let l1 = _mm_xor_si128(
            _mm_shuffle_epi32(lo, 0x4e),
            _mm_clmulepi64_si128(lo, poly, 0x00),
        );
        let l2 = _mm_xor_si128(
            _mm_shuffle_epi32(l1, 0x4e),
            _mm_clmulepi64_si128(l1, poly, 0x00),
        );
        _mm_xor_si128(hi, l2)
    }

    /// POLYVAL's product a·b·x^-128.
    ///
    /// # Safety
    /// The CPU must have PCLMULQDQ.
    #[target_feature(enable = "pclmulqdq")]
    unsafe fn dot(a: u128, b: u128) -> u128 {
        let (a, b) = (m128(a), m128(b));
        let mid = _mm_xor_si128(
            _mm_clmulepi64_si128(a, b, 0x01),
            _mm_clmulepi64_si128(a, b, 0x10),
        );
        u128_of(reduce(
            _mm_clmulepi64_si128(a, b, 0x00),
            mid,
            _mm_clmulepi64_si128(a, b, 0x11),
        ))
    }

    /// The POLYVAL state after `data` (1 to BLOCKS whole blocks) from
    /// `acc`: block j of n times H^(n-j), summed, reduced once.
    ///
    /// # Safety
    /// The CPU must have PCLMULQDQ and SSSE3.
    #[target_feature(enable = "pclmulqdq,ssse3")]
    unsafe fn absorb_blocks(acc: u128, powers: &[u128; BLOCKS], data: &[u8]) -> u128 {
        let n = data.len() / 16;
        debug_assert!(data.len().is_multiple_of(16) && (1..=BLOCKS).contains(&n));
        let rev = _mm_set_epi64x(REV_HI, REV_LO);
        let (mut lo, mut mid, mut hi) = (
            _mm_setzero_si128(),
            _mm_setzero_si128(),
            _mm_setzero_si128(),
        );
        for (j, b) in data.chunks_exact(16).enumerate() {
            // SAFETY: 16 readable bytes (unaligned load).
            let raw = unsafe { _mm_loadu_si128(b.as_ptr().cast::<__m128i>()) };
            let mut x = _mm_shuffle_epi8(raw, rev);
            if j == 0 {
                x = _mm_xor_si128(x, m128(acc));
            }
            let p = m128(powers[n - 1 - j]);
            lo = _mm_xor_si128(lo, _mm_clmulepi64_si128(x, p, 0x00));
            hi = _mm_xor_si128(hi, _mm_clmulepi64_si128(x, p, 0x11));
            mid = _mm_xor_si128(mid, _mm_clmulepi64_si128(x, p, 0x01));
            mid = _mm_xor_si128(mid, _mm_clmulepi64_si128(x, p, 0x10));
        }
        u128_of(reduce(lo, mid, hi))
    }

    /// The POLYVAL state after `data` (a multiple of WIDE bytes) from
    /// `acc`, BLOCKS blocks a step, two to a 256-bit register: block j of
    /// a step times H^(BLOCKS-j), summed (Karatsuba), reduced once.
    ///
    /// # Safety
    /// The CPU must have AVX2, PCLMULQDQ and VPCLMULQDQ.
    #[target_feature(enable = "avx2,pclmulqdq,vpclmulqdq")]
    unsafe fn absorb_wide(acc: u128, powers: &[u128; BLOCKS], data: &[u8]) -> u128 {
        debug_assert!(data.len().is_multiple_of(WIDE));
        let rev = _mm256_set_m128i(
            _mm_set_epi64x(REV_HI, REV_LO),
            _mm_set_epi64x(REV_HI, REV_LO),
        );
        // a pair's powers (lane 0 the earlier block's, the higher), with
        // each lane's halves summed in its low half (Karatsuba's middle)
        let p: [(__m256i, __m256i); BLOCKS / 2] = std::array::from_fn(|k| {
            let v = _mm256_set_m128i(
                m128(powers[BLOCKS - 2 - 2 * k]),
                m128(powers[BLOCKS - 1 - 2 * k]),
            );
            (v, _mm256_xor_si256(v, _mm256_shuffle_epi32(v, 0x4e)))
        });
        let mut acc = m128(acc);
        for step in data.chunks_exact(WIDE) {
            let (mut lo, mut mid, mut hi) = (
                _mm256_setzero_si256(),
                _mm256_setzero_si256(),
                _mm256_setzero_si256(),
            );
            for (k, (pk, pk_sum)) in p.iter().enumerate() {
                // SAFETY: 32 bytes at 32k of a WIDE-byte step (unaligned).
                let raw =
                    unsafe { _mm256_loadu_si256(step.as_ptr().add(32 * k).cast::<__m256i>()) };
                let mut x = _mm256_shuffle_epi8(raw, rev);
                if k == 0 {
                    x = _mm256_xor_si256(x, _mm256_zextsi128_si256(acc));
                }
                lo = _mm256_xor_si256(lo, _mm256_clmulepi64_epi128(x, *pk, 0x00));
                hi = _mm256_xor_si256(hi, _mm256_clmulepi64_epi128(x, *pk, 0x11));
                // (x_lo ^ x_hi)(p_lo ^ p_hi) = mid ^ lo ^ hi
                let x_sum = _mm256_xor_si256(x, _mm256_shuffle_epi32(x, 0x4e));
                mid = _mm256_xor_si256(mid, _mm256_clmulepi64_epi128(x_sum, *pk_sum, 0x00));
            }
            mid = _mm256_xor_si256(mid, _mm256_xor_si256(lo, hi));
            let lanes = |v: __m256i| {
                _mm_xor_si128(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1))
            };
            acc = reduce(lanes(lo), lanes(mid), lanes(hi));
        }
        u128_of(acc)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        /// RFC 8452 appendix A's POLYVAL example: the product and the
        /// reduction as the RFC defines them.
        #[test]
        fn polyval_of_the_rfc_example() {
            // (`dot` needs PCLMULQDQ alone: every x86-64 CPU of the last
            // decade; the wide GHASH is compared in `gmac.rs`)
            if !std::arch::is_x86_feature_detected!("pclmulqdq") {
                println!("this CPU has no PCLMULQDQ: nothing to check");
                return;
            }
            // the RFC's byte strings read little-endian (its field
            // elements): H 25629347..., X_1 4f4f9566..., X_2 d1a24ddd...,
            // POLYVAL f7a3b47b...
            let h = 0x7b754bba_26f8311d_76429258_47936225;
            let x1 = 0x62a2012d_bb621740_b6df838c_66954f4f;
            let x2 = 0x62f3c9d3_205fe4bb_06d02127_dd4da2d1;
            // SAFETY: the CPU has PCLMULQDQ (checked above).
            let s = unsafe { dot(dot(x1, h) ^ x2, h) };
            assert_eq!(s, 0x7eb7e5f5_6c86b7e5_fa196184_7bb4a3f7);
        }
    }
}
