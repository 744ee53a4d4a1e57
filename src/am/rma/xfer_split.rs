//! A direct Xfer's copy split between its two processes
//! (`xfer_direct.rs`): the target copies the head, `[0, split)`, with
//! `process_vm_readv` from the sender, while the sender, which only waits
//! meanwhile, writes the tail, `[split, n)`, into the target's segment
//! with `process_vm_writev`. At 1 MiB one copy is most of a message's
//! time (~100 us of 100-145, one core copying while the other waits).
//!
//! The claim word of the Xfer (in the sender's ring slot, `net::shm`)
//! carries the hand-over, each step one compare-and-swap:
//! - the sender offers the split in the descriptor (`split < n`) and sets
//!   the word to `claim(id)` as before;
//! - the target, after its checks, swaps `claim(id)` for `granted(addr)`,
//!   `addr` where the tail goes in its segment, which it holds locked
//!   (`SegmentMemory::fill_with`) until it answers; then copies the head;
//! - the sender, polling for its answer, sees the grant and swaps it for
//!   `writing(id)`, writes the tail, then swaps in `written(id)` (or
//!   `refused(id)` when the kernel refused: it offers no split to that
//!   peer again, and the target copies the tail itself);
//! - the target, its head copied, takes the grant back (`granted` ->
//!   `claim(id)`) if the sender has not taken it, and copies the tail
//!   itself; else it waits for `written` or `refused`; a sender that is
//!   gone (`process_vm_readv` fails) or does not finish within `GRACE`
//!   makes it answer "fall back" with no handler run.
//! - The target commits (`claim(id)` or `written(id)` -> `committed(id)`)
//!   only with both parts in place, then runs the handler once.
//!
//! The sender's call returns only after the commit (its buffer is read
//! by both until then), as without the split; a sender that died
//! mid-copy never has its request's handler run.

use super::rma_direct::GRACE;

/// Xfers this large or larger are offered split. Measured with GASNet's
/// testbulk over shm (`./testbulk 2 L N SIZE`, the quiet 2-core host,
/// whole and split alternated, 4 rounds each, MB/s, whole -> split):
/// 32 KiB 4713/3635/4399/3785 -> 5273/4227/4294/3477 (a wash: the
/// hand-over costs about what half the copy saves), 48 KiB
/// 5342/4837/4760/4668 -> 6675/5377/5380/3886, 65,000 bytes
/// 5735/5918/4807/4262 -> 7405/5834/5460/6211, and 8 rounds more of
/// 65,000 medians 5300 -> 6150, split higher in 7; earlier (loaded host)
/// 128 KiB 6230 -> 8148, 256 KiB 7355 -> 12006. Where: the middle; 30 to
/// 65% of the bytes to the target measured alike within the noise.
pub const SPLIT_MIN: u64 = 48 << 10;

/// How long the target waits for the sender's tail as a busy loop (the
/// rest of a 1 MiB copy's tail at ~10 GB/s): past it, a sender
/// descheduled on the loaded host is waited for sleeping, which leaves
/// it a core.
const SPIN: u64 = 50_000;

/// How often the target, waiting for the sender's tail, looks whether the
/// sender is still there (a one-byte `process_vm_readv`, a system call):
/// a 65,000-byte tail is written in ~4 us, so it costs nothing then. (It
/// looked every 64 turns, ~3 us: in a trace of GASNet's testbulk over
/// shm, 65,000 bytes, with uprobes, each message's look began as the
/// sender's write ended, on the message's critical path; without the
/// probes, this change alone measured within the noise, 22 rounds.)
const CHECK_EVERY: u64 = 20_000;

/// The claim word of direct Xfer `id` while its sender waits (never 0).
pub(in crate::am) fn claim(id: u32) -> u64 {
    u64::from(id) << 1 | 1
}

/// The claim word of direct Xfer `id` once its target committed.
pub(in crate::am) fn committed(id: u32) -> u64 {
    claim(id) | 1 << 63
}

const GRANTED: u64 = 1 << 62;
const WRITING: u64 = 1 << 61;
const WRITTEN: u64 = 1 << 60;
const REFUSED: u64 = 1 << 59;
/// Addresses a grant can carry (below the marks).
const ADDR_LIMIT: u64 = 1 << 58;

fn granted(addr: u64) -> u64 {
    addr | GRANTED
}

/// The address of a grant, None when `w` is none.
pub(in crate::am) fn grant_addr(w: u64) -> Option<u64> {
    let a = w & !GRANTED;
    (w & GRANTED != 0 && w >> 63 == 0 && a != 0 && a < ADDR_LIMIT).then_some(a)
}

pub(in crate::am) fn writing(id: u32) -> u64 {
    u64::from(id) << 1 | WRITING
}

pub(in crate::am) fn written(id: u32) -> u64 {
    u64::from(id) << 1 | WRITTEN
}

pub(in crate::am) fn refused(id: u32) -> u64 {
    u64::from(id) << 1 | REFUSED
}

/// Where an Xfer of `n` bytes is split when offered (its tail the
/// sender's), or `n` when it is not.
pub(in crate::am) fn split_point(n: u64) -> u64 {
    if n < SPLIT_MIN {
        return n;
    }
    (n / 2) & !63
}

/// The sender's step, in its wait for the answer: when the word
/// (`load`) holds a grant, takes it (`cas`) and writes `tail` there in
/// process `pid` (`write`). Some(true) when written, Some(false) when the
/// kernel refused, None when there was nothing to take.
pub(in crate::am) fn take_grant(
    id: u32,
    load: impl Fn() -> Option<u64>,
    cas: impl Fn(u64, u64) -> bool,
    write: impl FnOnce(u64) -> bool,
) -> Option<bool> {
    let addr = grant_addr(load()?)?;
    if !cas(granted(addr), writing(id)) {
        return None;
    }
    let ok = write(addr);
    let done = if ok { written(id) } else { refused(id) };
    // (only we move the word from `writing`)
    let swapped = cas(writing(id), done);
    debug_assert!(swapped);
    Some(ok)
}

/// How the target's copy of an Xfer ended.
#[derive(Debug, PartialEq, Eq)]
pub(in crate::am) enum Copied {
    /// All in place: commit from this word (`claim` or `written`); the
    /// sender wrote the tail (true) or not.
    Whole(u64, bool),
    /// Not all: answer "fall back", run no handler.
    Failed,
}

/// The target's copy of `dst.len()` bytes at `remote` in the sender
/// `pid`, split at `split` (no split when `split >= dst.len()`): `cas` on
/// the claim word, `read(at, buf)` copies the sender's `remote + at`,
/// `now` the clock (ns), `pause(long)` between looks while the sender
/// writes, `long` once it takes longer than its part should (`SPIN`).
pub(in crate::am) fn target_copy(
    id: u32,
    dst: &mut [u8],
    split: usize,
    cas: impl Fn(u64, u64) -> bool,
    read: impl Fn(usize, &mut [u8]) -> bool,
    now: impl Fn() -> u64,
    pause: impl Fn(bool),
) -> Copied {
    let addr = dst.as_ptr() as u64 + split as u64;
    let offered = split > 0 && split < dst.len() && addr < ADDR_LIMIT;
    if !offered || !cas(claim(id), granted(addr)) {
        // not split, or withdrawn already (the commit will fail)
        return match read(0, dst) {
            true => Copied::Whole(claim(id), false),
            false => Copied::Failed,
        };
    }
    let (head, tail) = dst.split_at_mut(split);
    let head_ok = read(0, head);
    // the grant back if the sender has not taken it: the tail is ours
    if cas(granted(addr), claim(id)) {
        return match head_ok && read(split, tail) {
            true => Copied::Whole(claim(id), false),
            false => Copied::Failed,
        };
    }
    // the sender writes the tail: wait for it (never answer before, so
    // that no write of its lands after the handler ran)
    let since = now();
    let deadline = since.saturating_add(GRACE);
    let mut checked = since;
    loop {
        if cas(written(id), written(id)) {
            return match head_ok {
                true => Copied::Whole(written(id), true),
                false => Copied::Failed,
            };
        }
        if cas(refused(id), claim(id)) {
            return match head_ok && read(split, tail) {
                true => Copied::Whole(claim(id), false),
                false => Copied::Failed,
            };
        }
        // every `CHECK_EVERY`: is the sender still there (a process gone
        // has no memory to read), is it late?
        let t = now();
        if t >= checked.saturating_add(CHECK_EVERY) {
            if !read(0, &mut [0u8]) || t > deadline {
                return Copied::Failed;
            }
            checked = t;
        }
        pause(t > since + SPIN);
    }
}
