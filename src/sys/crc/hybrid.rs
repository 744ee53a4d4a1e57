//! The hybrid sum of long buffers (from `HYBRID_MIN`, with AVX-512): the
//! 512-bit folding (`fold.rs`) and three chains of `crc32` at once over
//! four parts of the buffer, joined at the end by multiplications by
//! powers of x mod P made in log time.

use std::arch::x86_64::*;

use super::fold::{first, reduce, splat, step};
use super::{crc32c_sse42_state, FOLD_STEP, K2048};

/// Words each of the three `crc32` streams of the hybrid takes per step:
/// 6 `crc32` beside the step's 8 VPCLMULQDQ on 512 bits. On a Zen 4 a
/// `crc32` beside the folding takes about two cycles, a VPCLMULQDQ two:
/// 2 words gave 1.16x the folding alone over 64 KiB, 3 words 1.10x, 8
/// words 0.55x (`hybrid_speed` below).
const HYBRID_WORDS: usize = 2;
const HYBRID_SCALAR: usize = 8 * HYBRID_WORDS;
/// Bytes of a hybrid step: a folding step and the streams' words.
pub(super) const HYBRID_STEP: usize = FOLD_STEP + 3 * HYBRID_SCALAR;
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
#[target_feature(enable = "avx512f,vpclmulqdq,pclmulqdq,sse4.2")]
pub(super) fn hybrid_state(state: u32, data: &[u8]) -> u32 {
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
#[target_feature(enable = "pclmulqdq,sse4.2")]
pub(super) fn mul_x33(a: u32, b: u32) -> u32 {
    let p = _mm_clmulepi64_si128(_mm_cvtsi32_si128(a as i32), _mm_cvtsi32_si128(b as i32), 0);
    _mm_crc32_u64(0, _mm_cvtsi128_si64(p) as u64) as u32
}

/// x^n mod P reflected (bit 31 is x^0), in log(n) steps: n halved
/// (less 16) until small, the bits dropped kept on a stack; the small
/// power made directly (times x^32 per `crc32` of a zero word); then
/// squared back up, `mul_x33` squaring with an x^33 too much, which the
/// halving's -16 and a dropped bit's shift take back (Corsix's
/// `xnmodp`).
#[target_feature(enable = "pclmulqdq,sse4.2")]
pub(super) fn x_pow_mod_reflected(mut n: u64) -> u32 {
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
