//! Shared memory, liveness (`shm.rs`): senders and receivers check each
//! other's pid now and then (`check_peers`, from `flush_due`): a dead or
//! closed sender's slot is freed, a dead, closed or stuck receiver's ring
//! dropped and reported; files older versions left in /dev/shm removed.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::atomic::Ordering::*;

use super::*;

/// Whether the file's header is ours and its owner `addr` is alive here.
pub(super) fn owner_alive(m: &SharedMap) -> bool {
    m.u64_at(H_MAGIC).load(Acquire) == MAGIC
        && m.u32_at(H_CLOSED).load(Acquire) == 0
        && pid_alive(m.u32_at(H_PID).load(Relaxed))
}

/// Removes the files in /dev/shm whose owner process is gone (killed before
/// it could remove its own). Returns how many. Only regular files of this
/// user (never through a symbolic link: /dev/shm is anyone's to write)
/// named for this host's network and pid namespaces (a pid means
/// something only in the namespace it was read in: a container sharing
/// /dev/shm has its own, and its live files are not ours to judge).
pub fn remove_stale_files() -> usize {
    remove_stale_files_in(Path::new(DIR), &crate::sys::secs_since)
}

/// `remove_stale_files` in `dir`, a file's age in seconds told by `age`
/// from its modification time (None: not known, or in the future).
pub(super) fn remove_stale_files_in(
    dir: &Path,
    age: &dyn Fn(std::time::SystemTime) -> Option<u64>,
) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let ours = format!("{PREFIX}{}.", HOST.1);
    let mut n = 0;
    for e in entries.flatten() {
        if !e.file_name().to_string_lossy().starts_with(&ours) {
            continue;
        }
        // (a directory entry's metadata does not follow a link)
        let Ok(meta) = e.metadata() else {
            continue;
        };
        if !meta.file_type().is_file() || meta.uid() != euid() {
            continue;
        }
        let path = e.path();
        let old = meta.modified().ok().and_then(age).is_some_and(|s| s >= 10);
        let stale = match SharedMap::open(&path, HDR) {
            Ok(m) if m.u64_at(H_MAGIC).load(Acquire) == MAGIC => {
                !pid_alive(m.u32_at(H_PID).load(Relaxed))
            }
            // never finished: its creator died while making it
            _ => old,
        };
        if stale && std::fs::remove_file(&path).is_ok() {
            n += 1;
        }
    }
    n
}

impl ShmTransport {
    /// Frees slot `i` of our file (its sender is gone or misbehaved).
    pub(super) fn free_slot(&mut self, i: usize) {
        let s = slot_off(i);
        let m = &self.map;
        m.u64_at(H_ACTIVE).fetch_and(!(1 << i), AcqRel);
        m.u32_at(s + S_STATE).store(FREE, Relaxed);
        m.u64_at(s + S_SECRET).store(0, Relaxed);
        m.u64_at(s + S_HEAD).store(0, Relaxed);
        // the next sender's ring starts clear (every line's word 0), as a
        // ring whose records were all taken is (`clear_taken`)
        self.clear_taken(s + SLOT_HDR, 0, RING);
        m.u32_at(s + S_OWNER).store(0, Release);
        self.slots[i] = RxSlot::default();
    }

    /// Frees the slots of senders that are gone, forgets rings of receivers
    /// that are gone.
    pub(super) fn check_peers(&mut self, now: Instant) {
        let active = self.map.u64_at(H_ACTIVE).load(Acquire);
        for i in (0..SLOTS).filter(|i| active & (1 << i) != 0) {
            let s = slot_off(i);
            let owner = self.map.u32_at(s + S_OWNER).load(Acquire);
            // a closed sender's ring is freed once drained
            let closing =
                self.map.u32_at(s + S_STATE).load(Acquire) == CLOSING && !self.record_at_head(i);
            if closing || !pid_alive(owner) {
                self.free_slot(i);
            }
        }
        let tx = self.tx.get_mut();
        for (to, r) in tx.routes.iter_mut() {
            if let Route::Ring(k) = *r {
                // its owner gone, or our slot freed by it (never reused by
                // us: express records need their answers from this ring)
                let gone = match tx.rings[k].as_mut() {
                    None => true,
                    Some(t) => {
                        !owner_alive(&t.map)
                            || !t.slot_ours(self.pid)
                            || t.stuck(now, self.stuck_after)
                    }
                };
                if gone {
                    if let Some(t) = &tx.rings[k] {
                        // (a stuck receiver frees the slot once it drains it)
                        t.map
                            .u32_at(slot_off(t.slot) + S_STATE)
                            .store(CLOSING, Release);
                    }
                    // (with any records it held: returned as the others)
                    tx.rings[k] = None;
                    if tx.held_in == Some(k) {
                        tx.held_in = None;
                    }
                    tx.express_last = None;
                    tx.dropped.push(*to);
                    *r = Route::Udp {
                        retry_at: now.plus(RETRY_AFTER),
                    };
                }
            }
        }
    }
}
