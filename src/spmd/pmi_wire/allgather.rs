//! The all-gather over a key-value space: each rank puts its data
//! hex-encoded (in chunks), all exchange, then each gets every rank's data.

use std::io;

use super::format::{hex, invalid, unhex};
use crate::spmd::bootstrap::Progress;

/// Longest hex chunk stored under one key. Hydra 4.0 announces
/// `vallen_max=1024`, MPICH's own client keeps a put line under 1024
/// characters; 512 stays well inside both.
pub(crate) const MAX_CHUNK_HEX: usize = 512;

/// The key-value operations an all-gather needs.
pub(crate) trait Kvs {
    fn put(&mut self, key: &str, val: &str, progress: &mut Progress<'_>) -> io::Result<()>;
    /// Makes every rank's puts visible to every rank (a barrier for PMI-1,
    /// a fence for PMI-2).
    fn exchange(&mut self, progress: &mut Progress<'_>) -> io::Result<()>;
    fn get(&mut self, key: &str, src: usize, progress: &mut Progress<'_>) -> io::Result<String>;
    /// Longest hex string stored under one key.
    fn chunk_hex(&self) -> usize;
}

/// The key of chunk `c` of `rank`'s contribution to all-gather `seq`.
pub(crate) fn ag_key(seq: u64, rank: usize, c: usize) -> String {
    if c == 0 {
        format!("ramp-ag-{seq}-{rank}")
    } else {
        format!("ramp-ag-{seq}-{rank}-{c}")
    }
}

/// All-gather over a key-value space: each rank puts its data hex-encoded
/// (in chunks), all exchange, then each gets every rank's data.
pub(crate) fn kvs_allgather(
    kvs: &mut dyn Kvs,
    seq: u64,
    rank: usize,
    size: usize,
    data: &[u8],
    progress: &mut Progress<'_>,
) -> io::Result<Vec<u8>> {
    let chunk = (kvs.chunk_hex().max(2)) & !1;
    let text = hex(data);
    let nchunks = text.len().div_ceil(chunk);
    for c in 0..nchunks {
        let piece = &text[c * chunk..((c + 1) * chunk).min(text.len())];
        kvs.put(&ag_key(seq, rank, c), piece, progress)?;
    }
    kvs.exchange(progress)?;
    let mut out = Vec::with_capacity(data.len() * size);
    for r in 0..size {
        if r == rank {
            out.extend_from_slice(data);
            continue;
        }
        let mut t = String::with_capacity(text.len());
        for c in 0..nchunks {
            t.push_str(kvs.get(&ag_key(seq, r, c), r, progress)?.trim());
        }
        let bytes = unhex(&t).ok_or_else(|| {
            let head: String = t.chars().take(80).collect();
            invalid(format!(
                "PMI all-gather {seq}: rank {r}'s value is not hex: {head:?}"
            ))
        })?;
        if bytes.len() != data.len() {
            return Err(invalid(format!(
                "PMI all-gather {seq}: rank {r} contributed {} bytes, this rank {}",
                bytes.len(),
                data.len()
            )));
        }
        out.extend_from_slice(&bytes);
    }
    Ok(out)
}

/// The key under which rank 0 puts the job key.
const JOB_KEY_KVS: &str = "ramp-job-key";

/// Rank 0 puts its job key (`spmd::rank0_job_key`: its `RAMP_JOB_KEY` or
/// a new random one; hex-encoded, so any characters survive the PMI-1
/// format), all exchange, every rank gets rank 0's. Nothing (and no
/// exchange) when `RAMP_AUTH=off`: the launcher gives every rank the same
/// environment, so all ranks decide alike.
pub(crate) fn kvs_share_job_key(
    kvs: &mut dyn Kvs,
    rank: usize,
    progress: &mut Progress<'_>,
) -> io::Result<Option<String>> {
    let off = crate::config::global().is_ok_and(|c| c.auth == crate::config::Auth::Off);
    if off {
        return Ok(None);
    }
    if rank == 0 {
        let k = crate::spmd::rank0_job_key()?
            .ok_or_else(|| invalid("rank 0 has no job key to share".to_string()))?;
        kvs.put(JOB_KEY_KVS, &hex(k.as_bytes()), progress)?;
    }
    kvs.exchange(progress)?;
    let v = kvs.get(JOB_KEY_KVS, 0, progress)?;
    unhex(v.trim())
        .and_then(|b| String::from_utf8(b).ok())
        .map(Some)
        .ok_or_else(|| invalid("PMI: rank 0's job key is not hex".to_string()))
}
