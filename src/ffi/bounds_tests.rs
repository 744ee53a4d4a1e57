//! The C boundary's bounds checks, made in every build: memory the
//! application gives (a segment, a region, a get's destination) is never
//! read or written outside its range, and a message's payload or
//! arguments whose range wraps around the address space or is misaligned
//! are refused before they are read (the addresses used here are never
//! touched: without the checks these tests would crash). The exported
//! functions' refusals, as C calls them: `tests/ffi_bounds.rs`.

use std::os::raw::c_void;

use super::ramp::message_parts;
use super::segment::CSegment;
use super::{need, sane_array, sane_range};
use crate::am::SegmentMemory;

/// An address `n` bytes below the end of the address space: `n` bytes
/// from it end at the last address, `n + 1` wrap around.
fn near_top(n: usize) -> usize {
    usize::MAX - n
}

#[test]
fn ranges_that_wrap_or_are_too_long_for_a_slice_are_not_sane() {
    assert!(sane_range(0x1000, 0x1000));
    assert!(sane_range(near_top(16), 16));
    assert!(!sane_range(near_top(16), 17));
    assert!(!sane_range(0x1000, isize::MAX as usize + 1));
    let mut words = [0u64; 4];
    let at = words.as_mut_ptr();
    let odd = (at as usize + 4) as *mut u64;
    assert!(sane_array(at.cast_const(), 4));
    assert!(!sane_array(odd.cast_const(), 1), "misaligned");
    assert!(
        !sane_array(at.cast_const(), usize::MAX / 4),
        "bytes overflow"
    );
    assert!(need(odd).is_err());
    assert!(need(std::ptr::null_mut::<u64>()).is_err());
    assert!(need(at).is_ok());
}

#[test]
fn a_segment_is_never_read_or_written_outside_its_range() {
    // the segment is the first 32 bytes of 64: the rest must stay 0xee
    let mut mem = vec![0xeeu8; 64];
    let base = mem.as_mut_ptr() as usize;
    let seg = CSegment::new(base, 32, "test").unwrap();
    seg.write(0, &[1; 32]);
    seg.write(16, &[2; 17]); // one byte past the end
    seg.write(usize::MAX, &[3; 2]); // offset + length overflows
    seg.write(33, &[]);
    seg.write_word(29, 0x0404_0404); // a word past the end
    seg.write_word(usize::MAX - 1, 5);
    assert!(!seg.fill_with(31, 2, &mut |d| d.fill(6)));
    assert!(!seg.fill_with(usize::MAX, 2, &mut |d| d.fill(6)));
    let refused =
        |r: std::io::Result<()>| r.unwrap_err().kind() == std::io::ErrorKind::InvalidInput;
    let pid = std::process::id();
    let other = [9u8; 64];
    assert!(refused(seg.fill_from_process(
        0,
        33,
        pid,
        other.as_ptr() as usize
    )));
    assert!(refused(seg.copy_to_process(
        usize::MAX,
        2,
        pid,
        other.as_ptr() as usize
    )));
    let mut out = Vec::new();
    seg.read_into(1, 32, &mut out);
    seg.read_into(usize::MAX, 2, &mut out);
    assert!(
        out.is_empty(),
        "a read past the end appended {} bytes",
        out.len()
    );
    // inside: as before
    seg.read_into(0, 32, &mut out);
    assert_eq!(out, [1; 32]);
    seg.write_word(28, 0x0707_0707);
    assert!(seg.fill_with(0, 4, &mut |d| d.fill(8)));
    let mem = std::hint::black_box(mem);
    assert_eq!(&mem[..4], &[8; 4]);
    assert_eq!(&mem[28..32], &[7; 4]);
    assert!(mem[32..].iter().all(|&b| b == 0xee), "written past the end");
    // memory that wraps around, or is longer than a slice may be
    assert!(CSegment::new(near_top(16), 17, "wraps").is_err());
    assert!(CSegment::new(0x1000, isize::MAX as usize + 1, "long").is_err());
}

#[test]
fn a_message_whose_payload_or_arguments_would_be_read_outside_is_refused() {
    use crate::wire::Category;
    let args = [5i32; 4];
    let payload = [1u8; 8];
    let refused = |r: crate::error::Result<_>| matches!(r, Err(crate::error::Error::BadArg(_)));
    // SAFETY: every pointer is refused before it is read, or is the
    // arrays above with their lengths.
    unsafe {
        let wraps = near_top(4) as *const c_void;
        assert!(refused(message_parts(
            Category::Medium,
            wraps,
            8,
            0,
            args.as_ptr()
        )));
        let odd = (args.as_ptr() as usize + 1) as *const i32;
        assert!(refused(message_parts(
            Category::Short,
            std::ptr::null(),
            0,
            2,
            odd
        )));
        let (a, n, p) = message_parts(
            Category::Medium,
            payload.as_ptr().cast(),
            8,
            4,
            args.as_ptr(),
        )
        .unwrap();
        assert_eq!((&a[..n], p), (&[5u32; 4][..], &payload[..]));
    }
}
