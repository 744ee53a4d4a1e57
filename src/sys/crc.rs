//! CRC32C of short buffers with the CPU's own instruction (SSE4.2
//! `crc32`), eight bytes a step: the same checksum as the `crc32c`
//! crate's, without its set-up for long buffers (three interleaved
//! streams, alignment, tables), which costs more than the whole sum of a
//! 72-byte packet.

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
    use std::arch::x86_64::{_mm_crc32_u64, _mm_crc32_u8};
    let mut words = data.chunks_exact(8);
    let mut crc = u64::from(u32::MAX);
    for w in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        crc = _mm_crc32_u64(crc, u64::from_le_bytes(b));
    }
    let mut crc = crc as u32;
    for &b in words.remainder() {
        crc = _mm_crc32_u8(crc, b);
    }
    !crc
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
}
