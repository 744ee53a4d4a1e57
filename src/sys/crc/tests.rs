//! Unit tests of `crc.rs` and its folders, against the `crc32c` crate.

use super::hybrid::HYBRID_STEP;
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
                        assert_eq!(fold_with(f, crc, d), want, "{f:?}: length {len} at {start}");
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
