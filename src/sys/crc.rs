//! CRC32C with the CPU's own instructions, the same checksum as the
//! `crc32c` crate's:
//! - short buffers (a packet up to 256 bytes): SSE4.2 `crc32`, eight bytes
//!   a step, without the crate's set-up for long buffers (three
//!   interleaved streams, alignment, tables), which costs more than the
//!   whole sum of a 72-byte packet;
//! - long buffers (a bulk packet): carry-less multiplication folding
//!   (VPCLMULQDQ, 256 bytes a step, in four 512-bit accumulators with
//!   AVX-512 or eight 256-bit ones with AVX2, as Intel's "Fast CRC
//!   Computation Using PCLMULQDQ" and ISA-L's `crc32_iscsi_by16`), the
//!   folded 16 bytes and the tail finished with `crc32`. The `crc32`
//!   instruction alone tops out at 8 bytes a cycle (three streams); the
//!   512-bit folding runs at the cache's speed, 2-3x the crate's on a
//!   Zen 4; the 256-bit one 1.2x on a Zen 3 (25.8 against 21.1 GB/s over
//!   64 KiB), whose VPCLMULQDQ on 256 bits issues every other cycle.
//!   CPUs without VPCLMULQDQ use the crate.
//! - from 16 KiB with AVX-512: the folding and three `crc32` chains at
//!   once over four parts of the buffer, joined at the end (`hybrid_state`):
//!   on a Zen 4 the folding is bound by VPCLMULQDQ (two cycles each, 16
//!   bytes a cycle, 58 GB/s), which leaves `crc32` free: 1.14x over a 64
//!   KiB packet (67 GB/s), 1.17x over 1 MiB.

mod summed;
pub use summed::{
    copy_sum, copy_summed, crc32c_append_summed, crc32c_extend, extend_sum, SUM_BLOCK,
};

/// Buffers up to this long are summed here; longer ones gain from the
/// crate's interleaved streams.
pub const SHORT_CRC_MAX: usize = 256;

/// The CRC32C of `data` (at most `SHORT_CRC_MAX` bytes, else None), None
/// also when the CPU lacks SSE4.2 (the caller uses the crate then).
#[inline]
pub fn crc32c_short(data: &[u8]) -> Option<u32> {
    if data.len() > SHORT_CRC_MAX {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("sse4.2") {
            // SAFETY: the CPU has SSE4.2 (checked just above), the only
            // requirement of a `target_feature` function.
            return Some(unsafe { crc32c_sse42(data) });
        }
    }
    None
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
fn crc32c_sse42(data: &[u8]) -> u32 {
    !crc32c_sse42_state(u32::MAX, data)
}

/// The `crc32` instruction's register after `data`, from `state` (the
/// register, not the inverted CRC: `!crc`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
fn crc32c_sse42_state(state: u32, data: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u64, _mm_crc32_u8};
    let mut words = data.chunks_exact(8);
    let mut crc = u64::from(state);
    for w in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        crc = _mm_crc32_u64(crc, u64::from_le_bytes(b));
    }
    let mut crc = crc as u32;
    for &b in words.remainder() {
        crc = _mm_crc32_u8(crc, b);
    }
    crc
}

/// Bytes folded per step: four 512-bit accumulators.
const FOLD_STEP: usize = 256;

/// The CRC32C `crc` continued over `data` (what `crc32c::crc32c_append`
/// gives; `crc` = 0 starts a new sum), folded with VPCLMULQDQ: None when
/// `data` is shorter than one folding step (256 bytes) or the CPU cannot
/// fold (`folder`; the caller uses the crate then).
#[inline]
pub fn crc32c_append_long(crc: u32, data: &[u8]) -> Option<u32> {
    if data.len() < FOLD_STEP {
        return None;
    }
    folder().map(|f| fold_with(f, crc, data))
}

/// How this CPU folds: 512-bit VPCLMULQDQ with AVX-512 (Intel since Ice
/// Lake, AMD since Zen 4), or 256-bit VPCLMULQDQ with AVX2 (AMD Zen 3,
/// Intel cores without AVX-512). SSE4.2 for the tail either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Folder {
    Avx512,
    Avx2,
}

/// The best `Folder` of this CPU, None when it has neither.
#[inline]
pub fn folder() -> Option<Folder> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        if !(has!("vpclmulqdq") && has!("pclmulqdq") && has!("sse4.2")) {
            return None;
        }
        if has!("avx512f") {
            return Some(Folder::Avx512);
        }
        if has!("avx2") {
            return Some(Folder::Avx2);
        }
    }
    None
}

/// `crc32c_append_long` with folder `f` (the only use outside
/// `crc32c_append_long`: tests of each folder); panics when the CPU
/// lacks it.
fn fold_with(f: Folder, crc: u32, data: &[u8]) -> u32 {
    assert!(data.len() >= FOLD_STEP);
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        let base = has!("vpclmulqdq") && has!("pclmulqdq") && has!("sse4.2");
        match f {
            Folder::Avx512 if base && has!("avx512f") => {
                // SAFETY: the CPU has every feature the function is
                // compiled for (checked just above), the only requirement
                // of a `target_feature` function.
                return !unsafe {
                    if data.len() >= HYBRID_MIN {
                        hybrid_state(!crc, data)
                    } else {
                        fold_state(!crc, data)
                    }
                };
            }
            Folder::Avx2 if base && has!("avx2") => {
                // SAFETY: as above, for the 256-bit function's features.
                return !unsafe { fold_state_avx2(!crc, data) };
            }
            _ => {}
        }
    }
    panic!("this CPU cannot fold with {f:?}")
}

/// x^n mod P, P the CRC32C polynomial (bit d is x^d; x^32 implied).
const fn xpow_mod(n: u32) -> u32 {
    let mut r: u64 = 1;
    let mut i = 0;
    while i < n {
        r <<= 1;
        if r & (1 << 32) != 0 {
            r ^= 0x1_1edc_6f41;
        }
        i += 1;
    }
    r as u32
}

/// The constants that fold a 128-bit lane `bits` further on, as the lane
/// holds them (low quadword, high quadword). The data are bit-reflected:
/// a lane's low quadword holds its 64 highest-degree coefficients (L, as
/// x^64 L) and its high one the rest (H); L x^(64+bits) + H x^bits is
/// congruent to the sum of the carry-less products of L with x^(63+bits)
/// mod P and of H with x^(bits-1) mod P, each reflected into the high half
/// of a quadword (a reflected product comes out one degree short: the 1
/// taken off the exponents). Degree below 96: the sum fits the lane.
const fn fold_k(bits: u32) -> (i64, i64) {
    (reflected(64 + bits - 1), reflected(bits - 1))
}

/// x^n mod P reflected into the high half of a quadword.
const fn reflected(n: u32) -> i64 {
    ((xpow_mod(n).reverse_bits() as u64) << 32) as i64
}

const K2048: (i64, i64) = fold_k(2048);
const K512: (i64, i64) = fold_k(512);
const K384: (i64, i64) = fold_k(384);
const K256: (i64, i64) = fold_k(256);
const K128: (i64, i64) = fold_k(128);

#[cfg(target_arch = "x86_64")]
mod fold {
    use std::arch::x86_64::*;

    /// The four 128-bit lanes of `a` folded by the constants of `k`,
    /// added (XOR) to `next`.
    #[inline]
    #[target_feature(enable = "avx512f,vpclmulqdq")]
    pub(super) fn fold(a: __m512i, k: __m512i, next: __m512i) -> __m512i {
        let lo = _mm512_clmulepi64_epi128(a, k, 0x00);
        let hi = _mm512_clmulepi64_epi128(a, k, 0x11);
        _mm512_ternarylogic_epi64(lo, hi, next, 0x96)
    }

    /// The same constants in every lane.
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub(super) fn splat(k: (i64, i64)) -> __m512i {
        _mm512_set4_epi64(k.1, k.0, k.1, k.0)
    }

    /// 64 bytes of `b` from `at`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub(super) fn load(b: &[u8], at: usize) -> __m512i {
        let b = &b[at..at + 64];
        // SAFETY: `b` is 64 readable bytes (the slice above, bounds
        // checked); the load is unaligned.
        unsafe { _mm512_loadu_si512(b.as_ptr().cast()) }
    }

    /// The four accumulators of the first 256 bytes of `b`, the register
    /// `state` entering as their first 32 bits.
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub(super) fn first(state: u32, b: &[u8]) -> [__m512i; 4] {
        let init = _mm512_mask_set1_epi32(_mm512_setzero_si512(), 1, state as i32);
        [
            _mm512_xor_si512(load(b, 0), init),
            load(b, 64),
            load(b, 128),
            load(b, 192),
        ]
    }

    /// `acc` folded 2048 bits on (`k`) over the 256 bytes of `b` from `at`.
    #[inline]
    #[target_feature(enable = "avx512f,vpclmulqdq")]
    pub(super) fn step(acc: &mut [__m512i; 4], k: __m512i, b: &[u8], at: usize) {
        for (i, a) in acc.iter_mut().enumerate() {
            *a = fold(*a, k, load(b, at + 64 * i));
        }
    }
}

/// The `crc32` register after `data` (at least 256 bytes) from `state`:
/// 256-byte steps folded into four 512-bit accumulators, these folded into
/// one 128-bit lane, which with the tail goes through `crc32`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,vpclmulqdq,pclmulqdq,sse4.2")]
fn fold_state(state: u32, data: &[u8]) -> u32 {
    use fold::{first, splat, step};
    let mut steps = data.chunks_exact(FOLD_STEP);
    let mut acc = first(state, steps.next().expect("at least one folding step"));
    let k = splat(K2048);
    for s in &mut steps {
        step(&mut acc, k, s, 0);
    }
    crc32c_sse42_state(reduce(acc), steps.remainder())
}

/// The `crc32` register after the data folded into the four accumulators
/// `acc` (from a register whose value went into the first 32 bits).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,vpclmulqdq,pclmulqdq,sse4.2")]
fn reduce(acc: [std::arch::x86_64::__m512i; 4]) -> u32 {
    use fold::{fold, splat};
    use std::arch::x86_64::*;
    let k = splat(K512);
    let x = fold(acc[0], k, acc[1]);
    let x = fold(x, k, acc[2]);
    let x = fold(x, k, acc[3]);
    // lanes 0, 1, 2 folded onto lane 3 (384, 256, 128 bits on)
    let k = _mm512_set_epi64(0, 0, K128.1, K128.0, K256.1, K256.0, K384.1, K384.0);
    let prod = _mm512_xor_si512(
        _mm512_clmulepi64_epi128(x, k, 0x00),
        _mm512_clmulepi64_epi128(x, k, 0x11),
    );
    let t = _mm512_mask_blend_epi64(0b1100_0000, prod, x);
    let v = _mm_xor_si128(
        _mm_xor_si128(
            _mm512_extracti32x4_epi32::<0>(t),
            _mm512_extracti32x4_epi32::<1>(t),
        ),
        _mm_xor_si128(
            _mm512_extracti32x4_epi32::<2>(t),
            _mm512_extracti32x4_epi32::<3>(t),
        ),
    );
    // the folded 16 bytes as data, from a zero register
    let lo = _mm_cvtsi128_si64(v) as u64;
    let hi = _mm_extract_epi64::<1>(v) as u64;
    _mm_crc32_u64(_mm_crc32_u64(0, lo), hi) as u32
}

/// Words each of the three `crc32` streams of the hybrid takes per step:
/// 6 `crc32` beside the step's 8 VPCLMULQDQ on 512 bits. On a Zen 4 a
/// `crc32` beside the folding takes about two cycles, a VPCLMULQDQ two:
/// 2 words gave 1.16x the folding alone over 64 KiB, 3 words 1.10x, 8
/// words 0.55x (`hybrid_speed` below).
const HYBRID_WORDS: usize = 2;
const HYBRID_SCALAR: usize = 8 * HYBRID_WORDS;
/// Bytes of a hybrid step: a folding step and the streams' words.
const HYBRID_STEP: usize = FOLD_STEP + 3 * HYBRID_SCALAR;
/// Buffers from this long are summed by the hybrid (below it, the
/// streams' recombination costs about what they save: 0.81x at 4 KiB,
/// 1.02-1.06x at 16 KiB, 1.14x at 64 KiB, 1.17x at 1 MiB).
pub const HYBRID_MIN: usize = 16_384;

/// `fold_state`, with the `crc32` instruction at work beside the folding:
/// VPCLMULQDQ on 512 bits (two cycles each on a Zen 4) leaves the integer
/// unit's `crc32` idle, so the buffer is cut in four: the first part is
/// folded as by `fold_state`, each of the next three goes through a chain
/// of `crc32` (three chains cover its latency), all four in the same
/// loop; the four registers are then joined (each moved over the bytes
/// after its part by a multiplication by x^(8n) mod P) and the tail added
/// (after the hybrid of Corsix's fast-crc32, "v4s3x3"). At least two
/// steps (`HYBRID_MIN` for the gain).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,vpclmulqdq,pclmulqdq,sse4.2")]
fn hybrid_state(state: u32, data: &[u8]) -> u32 {
    use fold::{first, splat, step};
    use std::arch::x86_64::*;
    let steps = data.len() / HYBRID_STEP;
    assert!(steps >= 2, "a hybrid needs two steps");
    let part = steps * HYBRID_SCALAR;
    let (v, rest) = data.split_at(steps * FOLD_STEP);
    let (s1, rest) = rest.split_at(part);
    let (s2, rest) = rest.split_at(part);
    let (s3, tail) = rest.split_at(part);
    let mut acc = first(state, v);
    // What the loop does not wait for goes first, for the core to do
    // beside the loop's first steps: the constant that joins the parts,
    // and the tail summed apart (from a zero register) with its own.
    let shift = x_pow_mod_reflected(8 * part as u64 - 33);
    let (tail, tail_apart) = if tail.len() >= 16 {
        let reg = crc32c_sse42_state(0, tail);
        (
            &tail[..0],
            Some((reg, x_pow_mod_reflected(8 * tail.len() as u64 - 33))),
        )
    } else {
        (tail, None)
    };
    let k = splat(K2048);
    let (mut c1, mut c2, mut c3) = (0u64, 0u64, 0u64);
    let word = |b: &[u8; HYBRID_SCALAR], i: usize| {
        u64::from_le_bytes(*b[8 * i..].first_chunk::<8>().expect("a word"))
    };
    let mut scalar = |a: &[u8; HYBRID_SCALAR], b: &[u8; HYBRID_SCALAR], c: &[u8; HYBRID_SCALAR]| {
        for i in 0..HYBRID_WORDS {
            c1 = _mm_crc32_u64(c1, word(a, i));
            c2 = _mm_crc32_u64(c2, word(b, i));
            c3 = _mm_crc32_u64(c3, word(c, i));
        }
    };
    let (a, _) = s1.as_chunks::<HYBRID_SCALAR>();
    let (b, _) = s2.as_chunks::<HYBRID_SCALAR>();
    let (c, _) = s3.as_chunks::<HYBRID_SCALAR>();
    scalar(&a[0], &b[0], &c[0]);
    for i in 1..steps {
        step(&mut acc, k, v, i * FOLD_STEP);
        scalar(&a[i], &b[i], &c[i]);
    }
    let mut reg = reduce(acc);
    for c in [c1, c2, c3] {
        reg = mul_x33(reg, shift) ^ c as u32;
    }
    if let Some((tail_reg, tail_shift)) = tail_apart {
        reg = mul_x33(reg, tail_shift) ^ tail_reg;
    }
    crc32c_sse42_state(reg, tail)
}

/// `a` times `b` times x^33 mod P, both reflected 32-bit values: their
/// carry-less product (reflected, one degree short: times x) through
/// `crc32` from a zero register (times x^32).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "pclmulqdq,sse4.2")]
fn mul_x33(a: u32, b: u32) -> u32 {
    use std::arch::x86_64::*;
    let p = _mm_clmulepi64_si128(_mm_cvtsi32_si128(a as i32), _mm_cvtsi32_si128(b as i32), 0);
    _mm_crc32_u64(0, _mm_cvtsi128_si64(p) as u64) as u32
}

/// x^n mod P reflected (bit 31 is x^0), in log(n) steps: n halved
/// (less 16) until small, the bits dropped kept on a stack; the small
/// power made directly (times x^32 per `crc32` of a zero word); then
/// squared back up, `mul_x33` squaring with an x^33 too much, which the
/// halving's -16 and a dropped bit's shift take back (Corsix's
/// `xnmodp`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "pclmulqdq,sse4.2")]
fn x_pow_mod_reflected(mut n: u64) -> u32 {
    use std::arch::x86_64::*;
    let mut stack: u64 = !1;
    while n > 191 {
        stack = (stack << 1) + (n & 1);
        n = (n >> 1) - 16;
    }
    stack = !stack;
    let mut acc: u32 = 0x8000_0000 >> (n & 31);
    for _ in 0..n >> 5 {
        acc = _mm_crc32_u32(acc, 0);
    }
    loop {
        let low = stack & 1;
        stack >>= 1;
        if stack == 0 {
            return acc;
        }
        let x = _mm_cvtsi32_si128(acc as i32);
        let y = _mm_cvtsi128_si64(_mm_clmulepi64_si128(x, x, 0)) as u64;
        acc = _mm_crc32_u64(0, y << low) as u32;
    }
}

#[cfg(target_arch = "x86_64")]
mod fold256 {
    use std::arch::x86_64::*;

    /// The two 128-bit lanes of `a` folded by the constants of `k`,
    /// added (XOR) to `next`.
    #[inline]
    #[target_feature(enable = "avx2,vpclmulqdq")]
    pub(super) fn fold(a: __m256i, k: __m256i, next: __m256i) -> __m256i {
        let lo = _mm256_clmulepi64_epi128(a, k, 0x00);
        let hi = _mm256_clmulepi64_epi128(a, k, 0x11);
        _mm256_xor_si256(_mm256_xor_si256(lo, hi), next)
    }

    /// The same constants in both lanes.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) fn splat(k: (i64, i64)) -> __m256i {
        _mm256_set_epi64x(k.1, k.0, k.1, k.0)
    }

    /// 32 bytes of `b` from `at`.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) fn load(b: &[u8], at: usize) -> __m256i {
        let b = &b[at..at + 32];
        // SAFETY: `b` is 32 readable bytes (the slice above, bounds
        // checked); the load is unaligned.
        unsafe { _mm256_loadu_si256(b.as_ptr().cast()) }
    }
}

/// `fold_state` with 256-bit registers: 256-byte steps folded into eight
/// 256-bit accumulators (eight chains of VPCLMULQDQ in flight), these
/// folded into one 128-bit lane, which with the tail goes through `crc32`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,vpclmulqdq,pclmulqdq,sse4.2")]
fn fold_state_avx2(state: u32, data: &[u8]) -> u32 {
    use fold256::{fold, load, splat};
    use std::arch::x86_64::*;
    let mut steps = data.chunks_exact(FOLD_STEP);
    let first = steps.next().expect("at least one folding step");
    // the register enters as the first 32 bits of data
    let init = _mm256_set_epi32(0, 0, 0, 0, 0, 0, 0, state as i32);
    let mut acc = [
        _mm256_xor_si256(load(first, 0), init),
        load(first, 32),
        load(first, 64),
        load(first, 96),
        load(first, 128),
        load(first, 160),
        load(first, 192),
        load(first, 224),
    ];
    let k = splat(K2048);
    for s in &mut steps {
        for (i, a) in acc.iter_mut().enumerate() {
            *a = fold(*a, k, load(s, 32 * i));
        }
    }
    // each accumulator 256 bits before the next
    let k = splat(K256);
    let mut x = acc[0];
    for a in &acc[1..] {
        x = fold(x, k, *a);
    }
    // lane 0 folded onto lane 1 (128 bits on)
    let lane0 = _mm256_castsi256_si128(x);
    let lane1 = _mm256_extracti128_si256::<1>(x);
    let k = _mm_set_epi64x(K128.1, K128.0);
    let v = _mm_xor_si128(
        _mm_xor_si128(
            _mm_clmulepi64_si128(lane0, k, 0x00),
            _mm_clmulepi64_si128(lane0, k, 0x11),
        ),
        lane1,
    );
    // the folded 16 bytes as data, from a zero register, then the tail
    let lo = _mm_cvtsi128_si64(v) as u64;
    let hi = _mm_extract_epi64::<1>(v) as u64;
    let reg = _mm_crc32_u64(_mm_crc32_u64(0, lo), hi) as u32;
    crc32c_sse42_state(reg, steps.remainder())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_short_sum_is_the_crates_for_every_length() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let data: Vec<u8> = (0..SHORT_CRC_MAX + 9)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        for start in 0..8 {
            for len in 0..=SHORT_CRC_MAX {
                let d = &data[start..start + len];
                if let Some(c) = crc32c_short(d) {
                    assert_eq!(c, crc32c::crc32c(d), "length {len} at {start}");
                }
            }
        }
        assert_eq!(crc32c_short(&data[..SHORT_CRC_MAX + 1]), None);
        // the check value of CRC-32C (RFC 3720)
        if let Some(c) = crc32c_short(b"123456789") {
            assert_eq!(c, 0xe306_9283);
        }
    }

    /// `n` bytes of xorshift noise from `seed` (also `summed.rs`'s tests).
    pub(super) fn noise(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect()
    }

    #[test]
    fn the_folded_sum_is_the_crates_for_every_length_and_start() {
        let data = noise(4 * FOLD_STEP + 64, 0x1234_5678);
        for start in 0..16 {
            for len in 0..=data.len() - start {
                let d = &data[start..start + len];
                for crc in [0u32, 0xffff_ffff, 0x0bad_cafe] {
                    let want = crc32c::crc32c_append(crc, d);
                    match crc32c_append_long(crc, d) {
                        Some(c) => assert_eq!(c, want, "length {len} at {start}"),
                        None => assert!(len < FOLD_STEP || folder().is_none(), "length {len}"),
                    }
                    if len >= FOLD_STEP {
                        for f in folders() {
                            assert_eq!(
                                fold_with(f, crc, d),
                                want,
                                "{f:?}: length {len} at {start}"
                            );
                        }
                    }
                }
            }
        }
        // a 64 KiB packet and an odd megabyte, in pieces as the sender
        // gathers them
        for n in [65_536 + 32, (1 << 20) + 13] {
            let d = noise(n, n as u64);
            let want = crc32c::crc32c(&d);
            for f in folders() {
                let (a, b) = d.split_at(300);
                assert_eq!(
                    fold_with(f, fold_with(f, 0, a), b),
                    want,
                    "{f:?}: {n} bytes"
                );
            }
            if let Some(c) = crc32c_append_long(0, &d) {
                assert_eq!(c, want, "{n} bytes");
                let (a, b) = d.split_at(300);
                let c = crc32c_append_long(0, a).expect("folded");
                assert_eq!(crc32c_append_long(c, b), Some(want));
            }
        }
    }

    /// Every folder this CPU has (the best one and those below it).
    fn folders() -> Vec<Folder> {
        match folder() {
            Some(Folder::Avx512) if std::arch::is_x86_feature_detected!("avx2") => {
                vec![Folder::Avx512, Folder::Avx2]
            }
            Some(f) => vec![f],
            None => vec![],
        }
    }

    #[test]
    fn the_hybrid_sum_is_the_crates_around_every_step_and_start() {
        if folder() != Some(Folder::Avx512) {
            return;
        }
        let data = noise(HYBRID_MIN + 3 * HYBRID_STEP + 16, 0x5eed);
        for start in [0, 1, 3, 8, 13] {
            for len in (HYBRID_MIN..=data.len() - start).step_by(7) {
                let d = &data[start..start + len];
                for crc in [0u32, 0xffff_ffff, 0x0bad_cafe] {
                    assert_eq!(
                        fold_with(Folder::Avx512, crc, d),
                        crc32c::crc32c_append(crc, d),
                        "length {len} at {start}"
                    );
                }
            }
        }
        // the smallest hybrids, every tail (none, summed after the join,
        // summed apart), every start
        for start in 0..8 {
            for len in 2 * HYBRID_STEP..4 * HYBRID_STEP {
                let d = &data[start..start + len];
                // SAFETY: the CPU folds with AVX-512 (checked above).
                let reg = unsafe { hybrid_state(!0x0bad_cafe, d) };
                assert_eq!(
                    !reg,
                    crc32c::crc32c_append(0x0bad_cafe, d),
                    "hybrid of {len} at {start}"
                );
            }
        }
    }

    #[test]
    fn powers_of_x_in_log_time_are_the_slow_ones() {
        if folder().is_none() {
            return;
        }
        for n in (0..3000).chain([8 * 65_536, 8 * 13_440 - 33]) {
            // SAFETY: the CPU has PCLMULQDQ and SSE4.2 (`folder` checked).
            let fast = unsafe { x_pow_mod_reflected(n as u64) };
            assert_eq!(fast, xpow_mod(n).reverse_bits(), "x^{n}");
        }
    }

    /// GB/s of the folding alone and of the hybrid over `n` bytes (hot),
    /// best of 5: `cargo test --release --lib hybrid_speed -- --ignored
    /// --nocapture`.
    #[test]
    #[ignore]
    fn hybrid_speed() {
        if folder() != Some(Folder::Avx512) {
            return;
        }
        for n in [4096usize, 16_384, 32_768, 65_536, 65_507, 1 << 20] {
            let d = noise(n, 7);
            let reps = (1usize << 30) / n;
            let time = |f: &dyn Fn(&[u8]) -> u32| {
                (0..5)
                    .map(|_| {
                        let t = std::time::Instant::now();
                        let mut x = 0;
                        for _ in 0..reps {
                            x ^= f(std::hint::black_box(&d));
                        }
                        std::hint::black_box(x);
                        (n * reps) as f64 / t.elapsed().as_nanos() as f64
                    })
                    .fold(0.0, f64::max)
            };
            // SAFETY: the CPU folds with AVX-512 (checked above).
            let fold = time(&|d| unsafe { fold_state(!0, d) });
            // SAFETY: as above.
            let hybrid = time(&|d| unsafe { hybrid_state(!0, d) });
            let sse = time(&|d| crc32c::crc32c(d));
            // SAFETY: as above (a CPU with AVX-512 here has AVX2).
            let avx2 = time(&|d| unsafe { fold_state_avx2(!0, d) });
            println!(
                "{n:>8} B: fold {fold:.1} GB/s, hybrid {hybrid:.1} GB/s ({:.2}x), \
                 256-bit fold {avx2:.1} GB/s, crate {sse:.1} GB/s",
                hybrid / fold
            );
        }
    }

    #[test]
    fn fold_constants_are_powers_of_x() {
        // x^32 mod P is P's low part; x^31 is itself
        assert_eq!(xpow_mod(32), 0x1edc_6f41);
        assert_eq!(xpow_mod(31), 1 << 31);
        assert_eq!(
            fold_k(128).1,
            ((xpow_mod(127).reverse_bits() as u64) << 32) as i64
        );
    }
}
