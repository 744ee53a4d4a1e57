//! Folding with 512-bit VPCLMULQDQ (AVX-512): 256-byte steps into four
//! accumulators of four 128-bit lanes each, reduced to one lane that,
//! with the tail, goes through `crc32` (`fold_state`); the lane helpers
//! are shared with the hybrid (`hybrid.rs`) and the summed copy
//! (`summed.rs`).

use std::arch::x86_64::*;

use super::{crc32c_sse42_state, FOLD_STEP, K128, K2048, K256, K384, K512};

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

/// The `crc32` register after `data` (at least 256 bytes) from `state`:
/// 256-byte steps folded into four 512-bit accumulators, these folded into
/// one 128-bit lane, which with the tail goes through `crc32`.
#[target_feature(enable = "avx512f,vpclmulqdq,pclmulqdq,sse4.2")]
pub(super) fn fold_state(state: u32, data: &[u8]) -> u32 {
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
#[target_feature(enable = "avx512f,vpclmulqdq,pclmulqdq,sse4.2")]
pub(super) fn reduce(acc: [__m512i; 4]) -> u32 {
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
