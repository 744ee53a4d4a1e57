//! Bulk copies that avoid a trap of the C library's `memcpy` on AMD's Zen
//! cores: from a few KiB up (glibc's `rep movsb` range, between
//! `x86_rep_movsb_threshold`, 2-8 KiB, and the non-temporal threshold),
//! glibc copies with `rep movsb`, and on Zen 3 and Zen 4 `rep movsb` runs
//! 15-25x slower when the destination lies just past the source modulo a
//! page: (dst - src) mod 4096 in 1..=63 (glibc bug 30994, fixed in glibc
//! 2.39 and later by not taking `rep movsb` there; Debian 12 ships 2.36).
//! Measured on the 2-core Zen 3 host (2026-12-04, a C loop over one warm
//! buffer): 64 KiB at 3 GB/s with the distance 8, 16 or 24 past a page,
//! 36-50 GB/s at 0, 32 or 40 past; two `malloc`s of the same size lie 16
//! past a page apart, so a reused pair of buffers copies at the slow speed
//! every time, and a run of a benchmark is fast or slow by the luck of its
//! buffers' addresses.
//!
//! `copy_bytes` and `extend_bytes` copy such a pair in pieces of
//! `PIECE` bytes, below every glibc's `rep movsb` threshold (the vector
//! loop then: 55-80 GB/s here), and any other pair with one `memcpy` as
//! `copy_from_slice` does. The kernel copies with `rep movsb` too (FSRM),
//! as slowly: `cma.rs` bounces such a pair through a buffer of its own.
//! Figures: docs/rep-movsb-trap.md (`scripts/copy-distance.c` measures
//! them); `scripts/copy-spy.sh` counts a
//! program's copies at that distance by call site.

/// Copies shorter than this take glibc's vector loop whatever their
/// addresses (its `rep movsb` threshold is at least 2,048 bytes).
pub const PIECE: usize = 2048;

/// Whether a copy from `src` to `dst` of `len` bytes would take the slow
/// `rep movsb` (see the module doc): longer than `PIECE` and the
/// destination 1 to 63 bytes past the source modulo a page.
#[inline]
pub fn slow_distance(dst: *const u8, src: *const u8, len: usize) -> bool {
    let past = (dst as usize).wrapping_sub(src as usize) & 4095;
    len > PIECE && past != 0 && past < 64
}

/// `dst.copy_from_slice(src)` (the same panic when the lengths differ),
/// in pieces when one `memcpy` would be slow (`slow_distance`).
#[inline]
pub fn copy_bytes(dst: &mut [u8], src: &[u8]) {
    if slow_distance(dst.as_ptr(), src.as_ptr(), src.len()) && dst.len() == src.len() {
        copy_pieces(dst, src);
    } else {
        dst.copy_from_slice(src);
    }
}

#[inline(never)]
fn copy_pieces(dst: &mut [u8], src: &[u8]) {
    for (d, s) in dst.chunks_mut(PIECE).zip(src.chunks(PIECE)) {
        d.copy_from_slice(s);
    }
}

/// `v.extend_from_slice(src)`, in pieces when one `memcpy` into `v`'s
/// spare room would be slow (`slow_distance`).
/// (A short one as `extend_from_slice`, inlined where it was: a short
/// packet's copies cost what they did, 115 instructions a UDP round trip
/// less than with the long case inline.)
#[inline]
pub fn extend_bytes(v: &mut Vec<u8>, src: &[u8]) {
    if src.len() > PIECE {
        extend_long(v, src);
    } else {
        v.extend_from_slice(src);
    }
}

#[inline(never)]
fn extend_long(v: &mut Vec<u8>, src: &[u8]) {
    v.reserve(src.len());
    let to = v.spare_capacity_mut().as_ptr().cast::<u8>();
    if slow_distance(to, src.as_ptr(), src.len()) {
        for s in src.chunks(PIECE) {
            v.extend_from_slice(s);
        }
    } else {
        v.extend_from_slice(src);
    }
}

/// `std::ptr::copy_nonoverlapping(src, dst, len)`, in pieces when one
/// `memcpy` would be slow (`slow_distance`).
///
/// # Safety
/// As `copy_nonoverlapping`'s: `src` valid for reads and `dst` for writes
/// of `len` bytes, the two ranges disjoint.
#[inline]
pub unsafe fn copy_raw(src: *const u8, dst: *mut u8, len: usize) {
    if slow_distance(dst, src, len) {
        // SAFETY: the caller's promise, handed on.
        unsafe { copy_raw_pieces(src, dst, len) };
    } else {
        // SAFETY: the caller's promise.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, len) };
    }
}

/// `copy_raw` in pieces of `PIECE` bytes.
///
/// # Safety
/// `copy_raw`'s.
#[inline(never)]
unsafe fn copy_raw_pieces(src: *const u8, dst: *mut u8, len: usize) {
    let mut at = 0;
    while at < len {
        let n = PIECE.min(len - at);
        // SAFETY: [at, at + n) lies inside both ranges (the caller's
        // promise for [0, len)).
        unsafe { std::ptr::copy_nonoverlapping(src.add(at), dst.add(at), n) };
        at += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A buffer with `src` at its start and room for a destination
    /// `past` bytes beyond a page boundary after it.
    fn pair(len: usize, past: usize) -> (Vec<u8>, usize) {
        let buf: Vec<u8> = (0..2 * len.next_multiple_of(4096) + 3 * 4096)
            .map(|i| (i * 7 + i / 251) as u8)
            .collect();
        let src_at = buf.as_ptr().align_offset(4096);
        let dst_at = src_at + len.next_multiple_of(4096) + past;
        (buf, dst_at - src_at)
    }

    #[test]
    fn slow_distance_is_1_to_63_past_a_page_and_long() {
        let base = 0x10_0000usize as *const u8;
        for (past, len, slow) in [
            (0, 65536, false),
            (1, 65536, true),
            (16, 65536, true),
            (63, 65536, true),
            (64, 65536, false),
            (4096 + 16, 65536, true),
            (16, PIECE, false),
            (16, PIECE + 1, true),
        ] {
            let dst = base.wrapping_add(past);
            assert_eq!(
                slow_distance(dst, base, len),
                slow,
                "{past} past, {len} bytes"
            );
        }
        // a destination before the source: its distance modulo a page
        let dst = base.wrapping_sub(4096 - 16);
        assert!(slow_distance(dst, base, 65536));
    }

    #[test]
    fn copies_every_byte_at_every_distance_and_length() {
        for len in [0, 1, PIECE - 1, PIECE, PIECE + 1, 3 * PIECE + 17, 65000] {
            for past in [0, 8, 16, 63, 64, 200] {
                let (mut buf, gap) = pair(len, past);
                let src_at = buf.as_ptr().align_offset(4096);
                let want = buf[src_at..src_at + len].to_vec();
                let (a, b) = buf.split_at_mut(src_at + gap);
                copy_bytes(&mut b[..len], &a[src_at..src_at + len]);
                assert_eq!(
                    &buf[src_at + gap..src_at + gap + len],
                    &want[..],
                    "{len} {past}"
                );
                // and appended to a vector: its spare room anywhere
                let mut v = vec![0xeeu8; past];
                extend_bytes(&mut v, &want);
                assert_eq!(&v[past..], &want[..]);
                assert!(v[..past].iter().all(|&b| b == 0xee));
            }
        }
    }

    #[test]
    fn extends_a_vector_whose_room_lies_just_past_the_source() {
        let len = 5 * PIECE + 3;
        let big: Vec<u8> = (0..len + 8192).map(|i| (i % 253) as u8).collect();
        for past in [16, 40] {
            let mut v = vec![7u8; 5];
            v.reserve(len);
            let to = v.spare_capacity_mut().as_ptr() as usize;
            // the source 16 (40) before `to` modulo a page
            let at = to.wrapping_sub(past).wrapping_sub(big.as_ptr() as usize) & 4095;
            let src = &big[at..at + len];
            assert!(slow_distance(to as *const u8, src.as_ptr(), len));
            extend_bytes(&mut v, src);
            assert_eq!(&v[..5], &[7; 5]);
            assert_eq!(&v[5..], src);
        }
    }

    #[test]
    fn copies_raw_at_every_distance() {
        for len in [0, PIECE, PIECE + 1, 4 * PIECE + 5] {
            for past in [0, 16, 64] {
                let (mut buf, gap) = pair(len, past);
                let src_at = buf.as_ptr().align_offset(4096);
                let want = buf[src_at..src_at + len].to_vec();
                let p = buf.as_mut_ptr();
                // SAFETY: both ranges inside `buf`, `gap` >= `len` apart.
                unsafe { copy_raw(p.add(src_at), p.add(src_at + gap), len) };
                assert_eq!(&buf[src_at + gap..src_at + gap + len], &want[..]);
            }
        }
    }

    #[test]
    #[should_panic]
    fn lengths_that_differ_panic_as_copy_from_slice() {
        let src = vec![1u8; 3 * PIECE];
        let mut dst = vec![0u8; 3 * PIECE + 1];
        copy_bytes(&mut dst, &src);
    }
}
