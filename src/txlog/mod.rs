//! The transaction log (`ramp_LogOpen`, `RAMP_LOG_DIR`): an endpoint's
//! identity, the transactions it issued with their states, and at the
//! target what it acknowledged, started and finished with the kept
//! replies, in a memory-mapped file that survives a crash of the process.
//!
//! Layout (little-endian), version 3 (transaction ids are 64 bits: an
//! initiator's counter, at a target the trailer's high half and the
//! header's id; version 2 kept the 32-bit wire ids and is refused):
//!
//! ```text
//!   0     header, HEADER_LEN bytes: magic "RAMPTXLG", version, header length,
//!         capacity of each record area, generation when the file was made,
//!         creation time, the endpoint's 32-byte secret and its address;
//!         CRC32C of it
//!   4096  record area 0, capacity bytes; then record area 1, as long
//!   each area: an epoch frame (kind 0, seq 0, body: its generation), then
//!         records, each at an 8-byte boundary:
//!           commit u32 | crc u32 | len u32 | kind u8 | 0 0 0 | seq u64 | body[len]
//!         crc is CRC32C over len..body; seq counts from 1 without a gap;
//!         commit is COMMIT xor the area's generation.
//! ```
//!
//! The live area is the one whose epoch frame is whole with the higher
//! generation. A compaction writes the live state into the other area
//! with the next generation and commits that area's epoch frame last: the
//! switch is that one word, and the two areas' pages are written over
//! again and again (a page of the file touched for the first time costs a
//! page fault and the file system's block allocation, several
//! microseconds: more than the records on it).
//!
//! A record is written whole and its commit word last (after a compiler
//! and CPU fence), so a process killed mid-write leaves a record without
//! its commit word: the end of the log. Before a record is committed the
//! commit word of the slot after it is cleared, so what an area held in an
//! earlier generation (or a record's body) is never read as a record: the
//! end is the first slot without the area's commit word. A record whose commit word is there
//! but whose CRC fails is a torn write (a machine crash wrote pages out of
//! order): dropped when it is the last, and the file refused when valid
//! records follow it (never trusted). A file that is not a log, of another
//! version, or whose records contradict each other (a handler finished that
//! never started) is refused with a message naming the file and the
//! problem. Durability: every record is in the page cache as soon as it is
//! written, which survives a crash of the process (kill -9); `sync` mode
//! (RAMP_LOG_SYNC=1) also msyncs each record, which survives a crash of the
//! machine, at the cost of a disk write per record.
//!
//! When the live area is full the log is compacted: the live state is
//! written as the fewest records that rebuild it into the other area (see
//! above); when the live state alone fills half of an area, the areas
//! double instead, in a new file which replaces the old one by rename
//! (atomic).

mod area;
#[cfg(test)]
mod compaction_tests;
#[cfg(test)]
mod damage_tests;
#[cfg(test)]
mod mutation_tests;
pub mod record;
pub mod state;
mod target_map;
#[cfg(test)]
mod tests;

use std::fs::{File, OpenOptions};
use std::io;
use std::net::SocketAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use area::{
    commit_word, frame_size, live_area, replay, stage_fields, write_epoch, write_records,
    write_staged, EPOCH_LEN, FIELDS_LEN,
};
use record::Record;
use state::LogState;

use crate::sys::MappedFile;

pub const MAGIC: &[u8; 8] = b"RAMPTXLG";
pub const VERSION: u32 = 3;
pub const HEADER_LEN: usize = 4096;
/// The part of the header the CRC covers (the CRC follows it).
const HEADER_USED: usize = 72 + record::ADDR_LEN;
/// The default size of each of the two record areas: 1 MiB (a record area
/// is reused from one compaction to the next; it doubles when the live
/// state needs it).
pub const DEFAULT_CAPACITY: u64 = 1 << 20;

/// The permissions a log is created with: its owner's alone. It holds the
/// endpoint's secret (from which its association tags and cookies are
/// derived) and the messages of its transactions.
const LOG_MODE: u32 = 0o600;

/// Who the endpoint is: what a restarted process needs to come back as the
/// same endpoint at the same name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub secret: [u8; 32],
    pub addr: SocketAddr,
    pub created_unix_ns: u64,
}

/// A log that cannot be opened or trusted: the file and the problem.
#[derive(Debug)]
pub struct LogError {
    pub path: PathBuf,
    pub problem: String,
}

impl std::fmt::Display for LogError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "transaction log {}: {}",
            self.path.display(),
            self.problem
        )
    }
}

impl std::error::Error for LogError {}

pub(super) fn fail<T>(path: &Path, problem: impl Into<String>) -> Result<T, LogError> {
    Err(LogError {
        path: path.to_path_buf(),
        problem: problem.into(),
    })
}

/// What reading a log found besides its state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadReport {
    pub records: u64,
    /// Bytes of records in use.
    pub used: usize,
    pub capacity: usize,
    pub generation: u64,
    /// A last record with a bad CRC was dropped at this offset.
    pub torn_tail_at: Option<usize>,
}

/// An open log, locked for this process.
pub struct TxLog {
    path: PathBuf,
    file: MappedFile,
    identity: Identity,
    generation: u64,
    /// The live area: its offset from the file's start, and its end.
    area: usize,
    area_end: usize,
    /// Offset (from the file's start) where the next record goes.
    end: usize,
    seq: u64,
    state: LogState,
    sync: bool,
    scratch: Vec<u8>,
}

impl TxLog {
    /// Opens the log at `path`, or creates it with the identity `fresh()`
    /// gives when no file is there. Returns the log and what reading it
    /// found. A foreign, corrupt or inconsistent file is refused; so is a
    /// log another process has open.
    pub fn open(
        path: &Path,
        fresh: impl FnOnce() -> Identity,
        sync: bool,
    ) -> Result<(TxLog, ReadReport), LogError> {
        let existed = path.exists();
        // (a FIFO or a device under the name is not a log, and opening one
        // could wait or read forever)
        if existed && !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
            return fail(path, "not a regular file");
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(LOG_MODE)
            .open(path)
            .or_else(|e| fail(path, format!("cannot open: {e}")))?;
        let meta = file.metadata().ok();
        let len = meta.as_ref().map_or(0, |m| m.len());
        // one an older version made readable by others: closed to them
        // (a file of another owner keeps its mode: not ours to change)
        if meta
            .is_some_and(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o077 != 0)
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = file.set_permissions(std::fs::Permissions::from_mode(LOG_MODE));
        }
        if !existed || len == 0 {
            let id = fresh();
            let log = TxLog::create(path, file, id, DEFAULT_CAPACITY, 0, sync)?;
            let report = log.report(None);
            return Ok((log, report));
        }
        if len < HEADER_LEN as u64 {
            return fail(
                path,
                format!("{len} bytes: too short to be a ramp transaction log"),
            );
        }
        let header = read_header(path, &file)?;
        let total = HEADER_LEN as u64 + 2 * header.capacity;
        if len < total {
            return fail(
                path,
                format!("{len} bytes, but its header says {total}: truncated"),
            );
        }
        let mapped = map(path, file, total)?;
        let capacity = header.capacity as usize;
        let (state, report, end, seq) = replay(path, mapped.bytes(), &header)?;
        let area = live_area(mapped.bytes(), capacity).map_or(HEADER_LEN, |(a, _)| a);
        let mut log = TxLog {
            path: path.to_path_buf(),
            file: mapped,
            identity: header.identity,
            generation: report.generation,
            area,
            area_end: area + capacity,
            end,
            seq,
            state,
            sync,
            scratch: Vec::new(),
        };
        if report.torn_tail_at.is_some() {
            // the torn record and whatever followed it are gone for good
            let area_end = log.area_end;
            let bytes = log.file.bytes_mut();
            bytes[end..area_end].fill(0);
        }
        Ok((log, report))
    }

    fn create(
        path: &Path,
        file: File,
        identity: Identity,
        capacity: u64,
        generation: u64,
        sync: bool,
    ) -> Result<TxLog, LogError> {
        let mut mapped = map(path, file, HEADER_LEN as u64 + 2 * capacity)?;
        let h = encode_header(&identity, capacity, generation);
        mapped.bytes_mut()[..HEADER_LEN].copy_from_slice(&h);
        write_epoch(mapped.bytes_mut(), HEADER_LEN, generation);
        if sync {
            mapped
                .sync_range(0, HEADER_LEN + EPOCH_LEN)
                .or_else(|e| fail(path, format!("msync: {e}")))?;
        }
        Ok(TxLog {
            path: path.to_path_buf(),
            file: mapped,
            identity,
            generation,
            area: HEADER_LEN,
            area_end: HEADER_LEN + capacity as usize,
            end: HEADER_LEN + EPOCH_LEN,
            seq: 0,
            state: LogState::default(),
            sync,
            scratch: Vec::new(),
        })
    }

    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    pub fn state(&self) -> &LogState {
        &self.state
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn report(&self, torn: Option<usize>) -> ReadReport {
        ReadReport {
            records: self.seq,
            used: self.end - self.area,
            capacity: self.area_end - self.area,
            generation: self.generation,
            torn_tail_at: torn,
        }
    }

    /// Appends a record (after checking it against the state: a record
    /// that contradicts it is refused and nothing is written).
    pub fn append(&mut self, rec: &Record) -> Result<(), LogError> {
        self.append_mut(&mut rec.clone())
    }

    /// `append`, moving the messages the state keeps out of `rec` rather
    /// than copying them (what is left of `rec` is for its allocations).
    pub fn append_mut(&mut self, rec: &mut Record) -> Result<(), LogError> {
        // the frame staged whole beside the file (its fields, then the
        // body), summed there, then stored to the file (`write_staged`)
        let mut staged = std::mem::take(&mut self.scratch);
        staged.clear();
        staged.resize(FIELDS_LEN, 0);
        rec.encode(&mut staged);
        let need = frame_size(staged.len() - FIELDS_LEN);
        // room first: a compaction writes the state as it is before this record
        if self.end + need > self.area_end {
            self.compact(need)?;
        }
        // `apply` changes nothing when it refuses a record (every arm checks
        // before it writes), so the state need not be copied to try it
        if let Err(why) = self.state.apply(rec) {
            self.scratch = staged;
            return fail(&self.path, format!("refused a record: {why}"));
        }
        self.seq += 1;
        stage_fields(&mut staged, rec.kind(), self.seq);
        let commit = commit_word(self.generation);
        let cleared = write_staged(
            self.file.bytes_mut(),
            self.end,
            self.area_end,
            commit,
            &staged,
        );
        self.end += need;
        self.scratch = staged;
        if self.sync {
            self.file
                .sync_range(self.end - need, need + cleared)
                .or_else(|e| fail(&self.path, format!("msync: {e}")))?;
        }
        Ok(())
    }

    /// Rewrites the live state into the other area (or, when it needs
    /// more room, into a new file with larger areas that replaces this
    /// one); `room` more bytes must fit after it.
    fn compact(&mut self, room: usize) -> Result<(), LogError> {
        let records = self.state.records();
        let mut bodies = Vec::with_capacity(records.len());
        let mut live = EPOCH_LEN;
        for r in &records {
            let mut b = Vec::new();
            r.encode(&mut b);
            live += frame_size(b.len());
            bodies.push((r.kind(), b));
        }
        let old = self.area_end - self.area;
        let mut capacity = old;
        while (live + room) * 2 > capacity {
            capacity *= 2;
        }
        let generation = self.generation + 1;
        if capacity == old {
            // the other area, written whole before its epoch commits
            let other = if self.area == HEADER_LEN {
                HEADER_LEN + old
            } else {
                HEADER_LEN
            };
            let (end, seq) = write_records(
                self.file.bytes_mut(),
                other,
                other + old,
                generation,
                &bodies,
            );
            if self.sync {
                self.file
                    .sync_range(other, (end + 4).min(other + old) - other)
                    .or_else(|e| fail(&self.path, format!("msync: {e}")))?;
            }
            write_epoch(self.file.bytes_mut(), other, generation);
            if self.sync {
                self.file
                    .sync_range(other, EPOCH_LEN)
                    .or_else(|e| fail(&self.path, format!("msync: {e}")))?;
            }
            self.area = other;
            self.area_end = other + old;
            self.end = end;
            self.seq = seq;
            self.generation = generation;
            return Ok(());
        }
        let tmp = self.path.with_extension("compacting");
        let _ = std::fs::remove_file(&tmp);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(LOG_MODE)
            .open(&tmp)
            .or_else(|e| fail(&tmp, format!("cannot create: {e}")))?;
        // its epoch frame is written first: nothing reads it before the rename
        let mut new = TxLog::create(
            &tmp,
            file,
            self.identity.clone(),
            capacity as u64,
            generation,
            self.sync,
        )?;
        let (end, seq) = write_records(
            new.file.bytes_mut(),
            new.area,
            new.area_end,
            generation,
            &bodies,
        );
        new.end = end;
        new.seq = seq;
        if self.sync {
            new.file
                .sync_range(0, new.end)
                .or_else(|e| fail(&tmp, format!("msync: {e}")))?;
        }
        std::fs::rename(&tmp, &self.path).or_else(|e| {
            fail(
                &self.path,
                format!("cannot replace it when compacting: {e}"),
            )
        })?;
        new.path = self.path.clone();
        new.state = std::mem::take(&mut self.state);
        *self = new;
        Ok(())
    }
}

fn map(path: &Path, file: File, len: u64) -> Result<MappedFile, LogError> {
    MappedFile::map(file, len).or_else(|e| {
        if e.kind() == io::ErrorKind::WouldBlock {
            fail(path, "in use by another process (it holds the file's lock)")
        } else {
            fail(path, format!("cannot map: {e}"))
        }
    })
}

pub(super) struct Header {
    identity: Identity,
    capacity: u64,
    generation: u64,
}

fn encode_header(id: &Identity, capacity: u64, generation: u64) -> Vec<u8> {
    let mut h = vec![0u8; HEADER_LEN];
    h[0..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&(HEADER_LEN as u32).to_le_bytes());
    h[16..24].copy_from_slice(&capacity.to_le_bytes());
    h[24..32].copy_from_slice(&generation.to_le_bytes());
    h[32..40].copy_from_slice(&id.created_unix_ns.to_le_bytes());
    h[40..72].copy_from_slice(&id.secret);
    h[72..HEADER_USED].copy_from_slice(&record::encode_addr(&id.addr));
    let crc = crc32c::crc32c(&h[..HEADER_USED]);
    h[HEADER_USED..HEADER_USED + 4].copy_from_slice(&crc.to_le_bytes());
    h
}

fn read_header(path: &Path, file: &File) -> Result<Header, LogError> {
    use std::os::unix::fs::FileExt;
    let mut h = vec![0u8; HEADER_LEN];
    file.read_exact_at(&mut h, 0)
        .or_else(|e| fail(path, format!("cannot read its header: {e}")))?;
    decode_header(path, &h)
}

fn decode_header(path: &Path, h: &[u8]) -> Result<Header, LogError> {
    let u32_at = |i: usize| u32::from_le_bytes(h[i..i + 4].try_into().unwrap_or([0; 4]));
    let u64_at = |i: usize| u64::from_le_bytes(h[i..i + 8].try_into().unwrap_or([0; 8]));
    if &h[0..8] != MAGIC {
        return fail(path, "not a ramp transaction log (no RAMPTXLG magic)");
    }
    if u32_at(8) != VERSION {
        return fail(
            path,
            format!(
                "log format version {}, this library reads {VERSION}{}",
                u32_at(8),
                if u32_at(8) < VERSION {
                    " (older versions kept 32-bit transaction ids)"
                } else {
                    ""
                }
            ),
        );
    }
    if u32_at(12) as usize != HEADER_LEN {
        return fail(
            path,
            format!("header length {}, expected {HEADER_LEN}", u32_at(12)),
        );
    }
    if crc32c::crc32c(&h[..HEADER_USED]) != u32_at(HEADER_USED) {
        return fail(path, "its header fails its checksum (corrupt)");
    }
    let capacity = u64_at(16);
    if capacity < 4096 || capacity % 8 != 0 || capacity > 1 << 40 {
        return fail(path, format!("impossible record area of {capacity} bytes"));
    }
    let addr = record::decode_addr(&h[72..HEADER_USED])
        .ok_or(())
        .or_else(|()| fail(path, "its endpoint address is malformed"))?;
    let mut secret = [0u8; 32];
    secret.copy_from_slice(&h[40..72]);
    Ok(Header {
        identity: Identity {
            secret,
            addr,
            created_unix_ns: u64_at(32),
        },
        capacity,
        generation: u64_at(24),
    })
}

/// Reads a log without opening it for writing (a copy of its bytes; also
/// while its process runs): `ramp log FILE`.
pub fn inspect(path: &Path) -> Result<(Identity, LogState, ReadReport), LogError> {
    use std::os::unix::fs::FileExt;
    // only a regular file, and only the bytes its header says it has (a
    // FIFO would wait, /dev/zero never end)
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .or_else(|e| fail(path, format!("cannot read: {e}")))?;
    let meta = file
        .metadata()
        .or_else(|e| fail(path, format!("cannot read: {e}")))?;
    if !meta.is_file() {
        return fail(path, "not a regular file");
    }
    let len = meta.len();
    if len < HEADER_LEN as u64 {
        return fail(
            path,
            format!("{len} bytes: too short to be a ramp transaction log"),
        );
    }
    let header = read_header(path, &file)?;
    let total = HEADER_LEN as u64 + 2 * header.capacity;
    if len < total {
        return fail(
            path,
            format!("{len} bytes, but its header says {total}: truncated"),
        );
    }
    let mut bytes = Vec::new();
    let total = usize::try_from(total).unwrap_or(usize::MAX);
    if bytes.try_reserve_exact(total).is_err() {
        return fail(
            path,
            format!("{total} bytes: too large to read into memory"),
        );
    }
    bytes.resize(total, 0);
    file.read_exact_at(&mut bytes, 0)
        .or_else(|e| fail(path, format!("cannot read: {e}")))?;
    let (state, report, _, _) = replay(path, &bytes, &header)?;
    Ok((header.identity, state, report))
}
