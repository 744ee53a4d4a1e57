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
//!
//! Here: the short sum, the choice of a folder, the folding constants.
//! The folders: `fold.rs` (512-bit), `fold256.rs` (256-bit), `hybrid.rs`
//! (folding beside `crc32` chains); `summed.rs` the copy that sums.

#[cfg(target_arch = "x86_64")]
mod fold;
#[cfg(target_arch = "x86_64")]
mod fold256;
#[cfg(target_arch = "x86_64")]
mod hybrid;
#[cfg(target_arch = "x86_64")]
use fold::{fold_state, reduce};
#[cfg(target_arch = "x86_64")]
use fold256::fold_state_avx2;
#[cfg(target_arch = "x86_64")]
pub use hybrid::HYBRID_MIN;
#[cfg(target_arch = "x86_64")]
use hybrid::{hybrid_state, mul_x33, x_pow_mod_reflected};
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

#[cfg(test)]
mod tests;
