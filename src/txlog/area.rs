//! The record areas of a log file (see `mod.rs` for the layout): frames
//! written with their commit word last, the epoch frame that makes an area
//! the live one, and the replay of the live area's records, every byte of
//! which is checked as untrusted.

use std::path::Path;
use std::sync::atomic::{fence, Ordering};

use super::record::{self, Record};
use super::state::LogState;
use super::{fail, Header, LogError, ReadReport, HEADER_LEN};

pub(super) const COMMIT: u32 = 0x5458_4C47; // "GLXT"
pub(super) const FRAME_LEN: usize = 24;
/// An area's epoch frame: a frame whose body is the generation.
pub(super) const EPOCH_LEN: usize = FRAME_LEN + 8;

/// The commit word of records of generation `g`.
pub(super) fn commit_word(g: u64) -> u32 {
    COMMIT ^ g as u32
}

/// Writes `bodies` as records 1.. of generation `generation` into the area
/// at `area..area_end` (after its epoch frame, which is not touched):
/// where the next record goes and the last sequence number.
pub(super) fn write_records(
    bytes: &mut [u8],
    area: usize,
    area_end: usize,
    generation: u64,
    bodies: &[(u8, Vec<u8>)],
) -> (usize, u64) {
    let mut at = area + EPOCH_LEN;
    let mut seq = 0;
    let commit = commit_word(generation);
    // an empty area ends at once (whatever an older generation left there)
    bytes[at..at + 4].fill(0);
    let mut staged = Vec::new();
    for (kind, body) in bodies {
        seq += 1;
        staged.clear();
        staged.resize(FIELDS_LEN, 0);
        staged.extend_from_slice(body);
        stage_fields(&mut staged, *kind, seq);
        write_staged(bytes, at, area_end, commit, &staged);
        at += frame_size(body.len());
    }
    (at, seq)
}

/// Writes the epoch frame of the area at `area` (its commit word last):
/// from then on it is the live area, if its generation is the higher.
pub(super) fn write_epoch(bytes: &mut [u8], area: usize, generation: u64) {
    let f = &mut bytes[area..area + EPOCH_LEN];
    f[8..12].copy_from_slice(&8u32.to_le_bytes());
    f[12..24].fill(0);
    f[24..32].copy_from_slice(&generation.to_le_bytes());
    let crc = crc(&f[8..EPOCH_LEN]);
    f[4..8].copy_from_slice(&crc.to_le_bytes());
    fence(Ordering::Release);
    f[0..4].copy_from_slice(&commit_word(generation).to_le_bytes());
}

/// The generation of the area at `area`, when its epoch frame is whole.
pub(super) fn epoch_of(bytes: &[u8], area: usize) -> Option<u64> {
    let f = bytes.get(area..area + EPOCH_LEN)?;
    let word = |i: usize| u32::from_le_bytes(f[i..i + 4].try_into().unwrap_or([0; 4]));
    let g = u64::from_le_bytes(f[24..32].try_into().unwrap_or([0; 8]));
    let whole = word(8) == 8
        && f[12..24].iter().all(|&b| b == 0)
        && word(0) == commit_word(g)
        && word(4) == crc(&f[8..EPOCH_LEN]);
    whole.then_some(g)
}

/// The live area of a file whose areas are `capacity` bytes long: its
/// offset and generation (None when neither area has a whole epoch frame).
pub(super) fn live_area(bytes: &[u8], capacity: usize) -> Option<(usize, u64)> {
    let a = epoch_of(bytes, HEADER_LEN).map(|g| (HEADER_LEN, g));
    let b = epoch_of(bytes, HEADER_LEN + capacity).map(|g| (HEADER_LEN + capacity, g));
    match (a, b) {
        (Some(x), Some(y)) => Some(if y.1 > x.1 { y } else { x }),
        (x, y) => x.or(y),
    }
}

/// CRC32C with the CPU's instruction for a short record, else the crate's.
pub(super) fn crc(data: &[u8]) -> u32 {
    crate::sys::crc32c_short(data).unwrap_or_else(|| crc32c::crc32c(data))
}

pub(super) fn frame_size(body: usize) -> usize {
    (FRAME_LEN + body).next_multiple_of(8)
}

/// The bytes of a frame between its CRC and its body: the body's length,
/// the kind (and three zeros), the sequence number.
pub(super) const FIELDS_LEN: usize = FRAME_LEN - 8;

/// A frame staged beside the file: `staged` holds `FIELDS_LEN` bytes, then
/// the body; this fills the fields.
pub(super) fn stage_fields(staged: &mut [u8], kind: u8, seq: u64) {
    let len = (staged.len() - FIELDS_LEN) as u32;
    staged[0..4].copy_from_slice(&len.to_le_bytes());
    staged[4..8].copy_from_slice(&[kind, 0, 0, 0]);
    staged[8..16].copy_from_slice(&seq.to_le_bytes());
}

/// Writes a record staged whole (`stage_fields`) at `at` (it fits before
/// `area_end`), its commit word `commit` last, after clearing the commit
/// word of the slot after it: how many bytes past the record were written
/// (0 or 4). Its CRC is summed over the staged copy: the file's bytes are only stored to, never read
/// back. (Summed where it was written, each new line of the file was
/// waited for before the sum could read it: a record's lines are not in
/// the cache until written.)
pub(super) fn write_staged(
    bytes: &mut [u8],
    at: usize,
    area_end: usize,
    commit: u32,
    staged: &[u8],
) -> usize {
    let crc = crc(staged);
    let size = frame_size(staged.len() - FIELDS_LEN);
    let next = at + size;
    let cleared = if next + 4 <= area_end {
        bytes[next..next + 4].fill(0);
        4
    } else {
        0
    };
    let f = &mut bytes[at..next];
    f[8..8 + staged.len()].copy_from_slice(staged);
    f[4..8].copy_from_slice(&crc.to_le_bytes());
    // the commit word last: a record without it was never written
    fence(Ordering::Release);
    f[0..4].copy_from_slice(&commit.to_le_bytes());
    cleared
}

/// Reads every record of the live area (the file's areas are `capacity`
/// bytes long): the state, the report, where the next record goes and the
/// last sequence number.
pub(super) fn replay(
    path: &Path,
    bytes: &[u8],
    header: &Header,
) -> Result<(LogState, ReadReport, usize, u64), LogError> {
    let capacity = header.capacity as usize;
    let (area, generation) = live_area(bytes, capacity).ok_or(()).or_else(|()| {
        fail(
            path,
            "neither record area starts with a whole epoch frame (corrupt)",
        )
    })?;
    if generation < header.generation {
        return fail(
            path,
            format!(
                "its live record area is of generation {generation}, older than the file ({})",
                header.generation
            ),
        );
    }
    let bytes = &bytes[..area + capacity];
    let commit = commit_word(generation);
    let mut state = LogState::default();
    let mut at = area + EPOCH_LEN;
    let mut seq = 0u64;
    let mut torn = None;
    while at + FRAME_LEN <= bytes.len() {
        let f = &bytes[at..];
        let word = |i: usize| u32::from_le_bytes(f[i..i + 4].try_into().unwrap_or([0; 4]));
        if word(0) != commit {
            break; // never committed: the end
        }
        let len = word(8) as usize;
        let size = frame_size(len);
        let whole = len <= record::MAX_PAYLOAD + 4096 && at + size <= bytes.len();
        let crc_ok = whole && crc(&f[8..24 + len]) == word(4);
        if !crc_ok {
            // torn: only acceptable as the very last record
            let next = at
                + if whole {
                    size
                } else {
                    FRAME_LEN.next_multiple_of(8)
                };
            let more = next + 4 <= bytes.len() && bytes[next..next + 4] == commit.to_le_bytes();
            if more {
                return fail(
                    path,
                    format!(
                        "record {} at offset {at} is corrupt and records follow it",
                        seq + 1
                    ),
                );
            }
            torn = Some(at);
            break;
        }
        let rseq = u64::from_le_bytes(f[16..24].try_into().unwrap_or([0; 8]));
        if rseq != seq + 1 {
            return fail(
                path,
                format!(
                    "record at offset {at} has sequence number {rseq}, expected {}",
                    seq + 1
                ),
            );
        }
        let rec = Record::decode(f[12], &f[24..24 + len])
            .ok_or(())
            .or_else(|()| {
                fail(
                    path,
                    format!("record {rseq} at offset {at} is malformed (kind {})", f[12]),
                )
            })?;
        let mut rec = rec;
        state
            .apply(&mut rec)
            .or_else(|why| fail(path, format!("record {rseq} at offset {at}: {why}")))?;
        seq = rseq;
        at += size;
    }
    let report = ReadReport {
        records: seq,
        used: at - area,
        capacity,
        generation,
        torn_tail_at: torn,
    };
    Ok((state, report, at, seq))
}
