//! Folding with 256-bit VPCLMULQDQ (AVX2, for CPUs without AVX-512 such
//! as AMD's Zen 3): 256-byte steps into eight 256-bit accumulators,
//! reduced to one 128-bit lane that, with the tail, goes through `crc32`.

use std::arch::x86_64::*;

use super::{crc32c_sse42_state, FOLD_STEP, K128, K2048, K256};

/// The two 128-bit lanes of `a` folded by the constants of `k`,
/// added (XOR) to `next`.
#[inline]
#[target_feature(enable = "avx2,vpclmulqdq")]
fn fold(a: __m256i, k: __m256i, next: __m256i) -> __m256i {
    let lo = _mm256_clmulepi64_epi128(a, k, 0x00);
    let hi = _mm256_clmulepi64_epi128(a, k, 0x11);
    _mm256_xor_si256(_mm256_xor_si256(lo, hi), next)
}

/// The same constants in both lanes.
#[inline]
#[target_feature(enable = "avx2")]
fn splat(k: (i64, i64)) -> __m256i {
    _mm256_set_epi64x(k.1, k.0, k.1, k.0)
}

/// 32 bytes of `b` from `at`.
#[inline]
#[target_feature(enable = "avx2")]
fn load(b: &[u8], at: usize) -> __m256i {
    let b = &b[at..at + 32];
    // SAFETY: `b` is 32 readable bytes (the slice above, bounds
    // checked); the load is unaligned.
    unsafe { _mm256_loadu_si256(b.as_ptr().cast()) }
}

/// `fold_state` with 256-bit registers: 256-byte steps folded into eight
/// 256-bit accumulators (eight chains of VPCLMULQDQ in flight), these
/// folded into one 128-bit lane, which with the tail goes through `crc32`.
#[target_feature(enable = "avx2,vpclmulqdq,pclmulqdq,sse4.2")]
pub(super) fn fold_state_avx2(state: u32, data: &[u8]) -> u32 {
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
