//! CRC32C folded into the copy a sender makes anyway: a bulk message's
//! payload is copied once, into the buffer it is kept in for
//! retransmission, and the same loop folds each 4 KiB block of it
//! (`copy_summed`: the loads the copy makes are the folding's, so the sum
//! costs almost nothing beside the copy: 52 GB/s copied and summed against
//! 55 GB/s copied alone and 29 GB/s copied, then summed, over 64 KiB on a
//! Zen 4). A datagram's sum over any range of the payload is then made of
//! the blocks' sums (`crc32c_append_summed`): each block the range holds
//! whole moves the register one block on (one carry-less multiplication)
//! and adds its sum; only the partial blocks at the range's ends are read
//! again.
//!
//! The sum of a block is the `crc32` register after it from a zero
//! register: CRC32C is linear, the register after data D from register s
//! is s moved over |D| zero bytes plus the register after D from zero.

use super::{fold, mul_x33, reduce, xpow_mod, Folder, FOLD_STEP, K2048};
use std::mem::MaybeUninit;

/// Bytes of a block whose sum `copy_summed` keeps.
pub const SUM_BLOCK: usize = 4096;

/// x^(8 SUM_BLOCK - 33) mod P, reflected: `mul_x33` by it moves a
/// register over a block of zero bytes.
const BLOCK_SHIFT: u32 = xpow_mod(8 * SUM_BLOCK as u32 - 33).reverse_bits();

/// Appends `src` to `dst` (empty) and keeps in `sums` (cleared first) the
/// sum of each whole `SUM_BLOCK` of it, in one pass; true when it did.
/// False, the bytes copied and `sums` left empty, when there is no whole
/// block or the CPU cannot fold with AVX-512 (`crc32c_append_summed` then
/// sums directly: the same result, slower).
pub fn copy_summed(dst: &mut Vec<u8>, src: &[u8], sums: &mut Vec<u32>) -> bool {
    assert!(dst.is_empty(), "blocks count from the buffer's start");
    sums.clear();
    let blocks = src.len() / SUM_BLOCK;
    if blocks == 0 || super::folder() != Some(Folder::Avx512) {
        crate::sys::extend_bytes(dst, src);
        return false;
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("AVX-512 is x86-64's");
    dst.reserve(src.len());
    sums.reserve(blocks);
    let (whole, rest) = src.split_at(blocks * SUM_BLOCK);
    // SAFETY: the CPU has every feature the function is compiled for
    // (`folder` checked AVX-512, VPCLMULQDQ, PCLMULQDQ and SSE4.2), the
    // only requirement of a `target_feature` function.
    unsafe { copy_fold_blocks(&mut dst.spare_capacity_mut()[..whole.len()], whole, sums) };
    // SAFETY: `copy_fold_blocks` wrote every one of the first
    // `whole.len()` bytes of the spare capacity (it stores each block's 64
    // 64-byte lines), within the capacity reserved above.
    unsafe { dst.set_len(whole.len()) };
    crate::sys::extend_bytes(dst, rest);
    true
}

/// Copies `src` (whole blocks) into `out`, pushing each block's sum.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,vpclmulqdq,pclmulqdq,sse4.2")]
fn copy_fold_blocks(out: &mut [MaybeUninit<u8>], src: &[u8], sums: &mut Vec<u32>) {
    assert_eq!(out.len(), src.len());
    for (b, o) in src
        .chunks_exact(SUM_BLOCK)
        .zip(out.chunks_exact_mut(SUM_BLOCK))
    {
        sums.push(copy_fold(o, b));
    }
}

/// Copies `src` into `dst` (as long) and returns its sum: the `crc32`
/// register after it from a zero register, in one pass (the receiver's
/// copy of a packet's payload where it goes, checked by `crc32c_extend`).
/// None, nothing written, when `src` is shorter than a folding step (256
/// bytes) or the CPU cannot fold with AVX-512.
pub fn copy_sum(dst: &mut [u8], src: &[u8]) -> Option<u32> {
    let len = dst.len();
    // SAFETY: the same bytes seen as possibly uninitialised (same size and
    // alignment); `copy_sum_into` writes only initialised bytes (copies of
    // `src`), so `dst` stays initialised.
    let out = unsafe { std::slice::from_raw_parts_mut(dst.as_mut_ptr().cast(), len) };
    copy_sum_into(out, src)
}

/// `copy_sum` appending to `v` (its capacity grows as `reserve` grows
/// it); None, `v` unchanged, when `copy_sum` cannot.
pub fn extend_sum(v: &mut Vec<u8>, src: &[u8]) -> Option<u32> {
    if src.len() < FOLD_STEP || super::folder() != Some(Folder::Avx512) {
        return None;
    }
    v.reserve(src.len());
    let sum = copy_sum_into(&mut v.spare_capacity_mut()[..src.len()], src)?;
    // SAFETY: `copy_sum_into` wrote every byte of the first `src.len()`
    // of the spare capacity (reserved above).
    unsafe { v.set_len(v.len() + src.len()) };
    Some(sum)
}

/// `copy_sum` into possibly uninitialised bytes: every byte of `out` is
/// written when it returns Some.
fn copy_sum_into(out: &mut [MaybeUninit<u8>], src: &[u8]) -> Option<u32> {
    assert_eq!(out.len(), src.len());
    if src.len() < FOLD_STEP || super::folder() != Some(Folder::Avx512) {
        return None;
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("AVX-512 is x86-64's");
    let whole = src.len() / FOLD_STEP * FOLD_STEP;
    let (d, dt) = out.split_at_mut(whole);
    let (s, st) = src.split_at(whole);
    // SAFETY: the CPU has every feature the function is compiled for
    // (checked just above), the only requirement of a `target_feature`
    // function.
    let reg = unsafe { copy_fold(d, s) };
    for (o, b) in dt.iter_mut().zip(st) {
        o.write(*b);
    }
    // SAFETY: as above.
    Some(unsafe { super::crc32c_sse42_state(reg, st) })
}

/// Copies `src` (whole folding steps, at least one) into `out`; the
/// register after it from zero.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,vpclmulqdq,pclmulqdq,sse4.2")]
fn copy_fold(out: &mut [MaybeUninit<u8>], src: &[u8]) -> u32 {
    use fold::{fold, load, splat};
    use std::arch::x86_64::*;
    assert_eq!(out.len(), src.len());
    assert!(src.len() >= FOLD_STEP && src.len().is_multiple_of(FOLD_STEP));
    let store = |out: &mut [MaybeUninit<u8>], at: usize, v: __m512i| {
        let o = &mut out[at..at + 64];
        // SAFETY: `o` is 64 writable bytes (the slice above, bounds
        // checked; uninitialised bytes may be written); the store is
        // unaligned.
        unsafe { _mm512_storeu_si512(o.as_mut_ptr().cast(), v) }
    };
    let mut acc = [load(src, 0), load(src, 64), load(src, 128), load(src, 192)];
    for (i, a) in acc.iter().enumerate() {
        store(out, 64 * i, *a);
    }
    let k = splat(K2048);
    for at in (FOLD_STEP..src.len()).step_by(FOLD_STEP) {
        for (i, a) in acc.iter_mut().enumerate() {
            let v = load(src, at + 64 * i);
            store(out, at + 64 * i, v);
            *a = fold(*a, k, v);
        }
    }
    reduce(acc)
}

/// The CRC32C `crc` continued over `len` (at least 8) bytes whose sum
/// (`copy_sum`, `copy_summed`) is `sum`. None when the CPU cannot fold with
/// AVX-512.
pub fn crc32c_extend(crc: u32, sum: u32, len: usize) -> Option<u32> {
    assert!(len >= 8, "a shift by fewer than 33 bits");
    if super::folder() != Some(Folder::Avx512) {
        return None;
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("AVX-512 is x86-64's");
    // SAFETY: the CPU has PCLMULQDQ and SSE4.2 (an AVX-512 folder has),
    // the only requirement of these `target_feature` functions.
    let shift = unsafe { super::x_pow_mod_reflected(8 * len as u64 - 33) };
    // SAFETY: as above.
    Some(!(unsafe { mul_x33(!crc, shift) } ^ sum))
}

/// The CRC32C `crc` continued over `data[range]`, where `sums` holds the
/// sums of `data`'s first whole blocks (from `data[0]`, as `copy_summed`
/// made them; fewer, or none, are fine). None when the CPU cannot fold
/// with AVX-512 (the caller sums directly).
pub fn crc32c_append_summed(
    crc: u32,
    data: &[u8],
    sums: &[u32],
    range: std::ops::Range<usize>,
) -> Option<u32> {
    if super::folder() != Some(Folder::Avx512) {
        return None;
    }
    let _ = &data[range.clone()];
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("AVX-512 is x86-64's");
    // SAFETY: the CPU has every feature the function is compiled for
    // (checked just above), the only requirement of a `target_feature`
    // function.
    Some(!unsafe { state_summed(!crc, data, sums, range) })
}

/// The `crc32` register after `data[a..b]` from `state`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,vpclmulqdq,pclmulqdq,sse4.2")]
fn state_summed(state: u32, data: &[u8], sums: &[u32], range: std::ops::Range<usize>) -> u32 {
    let (a, b) = (range.start, range.end);
    // the blocks the range holds whole and has a sum of
    let lo = a.div_ceil(SUM_BLOCK);
    let hi = (b / SUM_BLOCK).min(sums.len());
    if lo >= hi {
        return direct(state, &data[a..b]);
    }
    let mut reg = state;
    let head = lo * SUM_BLOCK - a;
    if head > 0 {
        // the end of block lo - 1: from its sum when its start (to take
        // off) is the shorter part, else directly
        let start = (lo - 1) * SUM_BLOCK;
        let before = a - start;
        reg = if before < head && head >= 8 {
            let shift = super::x_pow_mod_reflected(8 * head as u64 - 33);
            let own = sums[lo - 1] ^ mul_x33(direct(0, &data[start..a]), shift);
            mul_x33(reg, shift) ^ own
        } else {
            direct(reg, &data[a..lo * SUM_BLOCK])
        };
    }
    for s in &sums[lo..hi] {
        reg = mul_x33(reg, BLOCK_SHIFT) ^ s;
    }
    direct(reg, &data[hi * SUM_BLOCK..b])
}

/// The `crc32` register after `d` from `state`, by the fastest way for its
/// length.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,vpclmulqdq,pclmulqdq,sse4.2")]
fn direct(state: u32, d: &[u8]) -> u32 {
    if d.len() >= super::HYBRID_MIN {
        super::hybrid_state(state, d)
    } else if d.len() >= FOLD_STEP {
        super::fold_state(state, d)
    } else {
        super::crc32c_sse42_state(state, d)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::noise;
    use super::*;

    #[test]
    fn the_block_shift_is_x_to_the_blocks_bits_less_33() {
        if super::super::folder().is_none() {
            return;
        }
        // SAFETY: a CPU that folds has PCLMULQDQ and SSE4.2.
        let slow = unsafe { super::super::x_pow_mod_reflected(8 * SUM_BLOCK as u64 - 33) };
        assert_eq!(BLOCK_SHIFT, slow);
    }

    #[test]
    fn a_copy_is_the_bytes_and_its_sums_are_each_blocks() {
        for n in [
            0,
            100,
            SUM_BLOCK - 1,
            SUM_BLOCK,
            SUM_BLOCK + 1,
            65_536,
            65_536 + 4000,
            1 << 20,
        ] {
            let src = noise(n, n as u64 + 3);
            let (mut dst, mut sums) = (Vec::new(), vec![7u32; 3]);
            let summed = copy_summed(&mut dst, &src, &mut sums);
            assert_eq!(dst, src, "{n} bytes");
            if !summed {
                assert!(sums.is_empty());
                assert!(n < SUM_BLOCK || super::super::folder() != Some(Folder::Avx512));
                continue;
            }
            assert_eq!(sums.len(), n / SUM_BLOCK, "{n} bytes");
            for (i, s) in sums.iter().enumerate() {
                let block = &src[i * SUM_BLOCK..(i + 1) * SUM_BLOCK];
                // the register from zero is the CRC from !0 of the block,
                // less what the start moved over the block adds
                assert_eq!(
                    *s,
                    !crc32c::crc32c(block) ^ zeros_register(SUM_BLOCK),
                    "block {i} of {n}"
                );
            }
        }
    }

    /// The register after `n` zero bytes from !0 (what a register of !0
    /// adds over `n` bytes).
    fn zeros_register(n: usize) -> u32 {
        !crc32c::crc32c_append(0, &vec![0u8; n])
    }

    #[test]
    fn a_range_summed_from_the_blocks_is_the_crates_sum() {
        let n = 5 * SUM_BLOCK + 1234;
        let src = noise(n, 99);
        let (mut dst, mut sums) = (Vec::new(), Vec::new());
        copy_summed(&mut dst, &src, &mut sums);
        // ranges around every block edge, short and long, and with fewer
        // sums than blocks (a trailer appended after the copy)
        let edges: Vec<usize> = (0..=5)
            .flat_map(|i| {
                let e = i * SUM_BLOCK;
                [
                    e.saturating_sub(300),
                    e.saturating_sub(5),
                    e,
                    e + 3,
                    e + 7,
                    e + 2100,
                ]
            })
            .chain([n - 1, n])
            .filter(|&x| x <= n)
            .collect();
        for &a in &edges {
            for &b in edges.iter().filter(|&&b| b >= a) {
                for crc in [0u32, 0xdead_beef] {
                    let want = crc32c::crc32c_append(crc, &src[a..b]);
                    for k in [sums.len(), 2, 0] {
                        match crc32c_append_summed(crc, &src, &sums[..k.min(sums.len())], a..b) {
                            Some(c) => assert_eq!(c, want, "{a}..{b} with {k} sums"),
                            None => assert_ne!(super::super::folder(), Some(Folder::Avx512)),
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_summed_copy_checks_as_the_crates_sum_across_its_pieces() {
        let src = noise(70_001, 17);
        for len in [0, 8, 255, 256, 257, 4096, 65_435, 70_001] {
            let s = &src[..len];
            let mut dst = vec![0u8; len];
            let Some(sum) = copy_sum(&mut dst, s) else {
                assert!(len < FOLD_STEP || super::super::folder() != Some(Folder::Avx512));
                assert!(dst.iter().all(|&b| b == 0), "nothing written");
                continue;
            };
            assert_eq!(dst, s, "{len} bytes copied");
            // a packet's header summed first, then its payload from its sum
            let head = b"a packet's header and arguments";
            let want = crc32c::crc32c(&[&head[..], s].concat());
            let c = crc32c_extend(crc32c::crc32c(head), sum, len).expect("folds");
            assert_eq!(c, want, "{len} bytes");
            assert_ne!(
                crc32c_extend(crc32c::crc32c(head), sum ^ 4, len),
                Some(want)
            );
            // appended to a buffer, the same sum
            let mut v = b"before".to_vec();
            assert_eq!(extend_sum(&mut v, s), Some(sum));
            assert_eq!(&v[6..], s);
        }
        let mut v = vec![1u8];
        assert_eq!(extend_sum(&mut v, &src[..255]), None, "shorter than a step");
        assert_eq!(v, [1]);
    }

    /// GB/s of a plain copy, a copy then a sum, and `copy_summed`, over
    /// 64 KiB (hot), best of 5: `cargo test --release --lib
    /// copy_summed_speed -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn copy_summed_speed() {
        let n = 65_536;
        let src = noise(n, 5);
        let mut dst = Vec::with_capacity(n);
        let mut sums = Vec::with_capacity(n / SUM_BLOCK);
        let reps = (1usize << 30) / n;
        let mut time = |f: &mut dyn FnMut(&mut Vec<u8>, &mut Vec<u32>) -> u32| {
            (0..5)
                .map(|_| {
                    let t = std::time::Instant::now();
                    let mut x = 0;
                    for _ in 0..reps {
                        dst.clear();
                        x ^= f(std::hint::black_box(&mut dst), &mut sums);
                    }
                    std::hint::black_box(x);
                    (n * reps) as f64 / t.elapsed().as_nanos() as f64
                })
                .fold(0.0, f64::max)
        };
        let copy = time(&mut |d, _| {
            d.extend_from_slice(&src);
            u32::from(d[0])
        });
        let then = time(&mut |d, _| {
            d.extend_from_slice(&src);
            super::super::crc32c_append_long(0, d).unwrap_or(0)
        });
        let summed = time(&mut |d, s| {
            copy_summed(d, &src, s);
            s[0]
        });
        println!(
            "64 KiB: copy {copy:.1} GB/s, copy then sum {then:.1} GB/s, copy summed {summed:.1} GB/s"
        );
    }
}
