//! Memory regions ramp allocates so that same-host peers can map them
//! (`am/rma_shared.rs`, docs/rma-shm-design.md section 2): a sealed memfd
//! `[control page][data]`, its owner's view ([`OwnedRegion`]) and a peer's
//! view ([`PeerRegion`]).
//!
//! The control page holds `state` (generation << 1 | live) and `active`
//! (peers inside a copy). A peer copies only between `active += 1; state
//! still what it mapped` and `active -= 1` (a Dekker pair with the owner's
//! `state = not live; wait for active == 0`); a get checks the state again
//! after its copy (it needs no write access). Nothing the owner reads from
//! the control page matters for its own safety: `active` only bounds a
//! wait, and revocation unmaps the owner's view, so a peer that ignores the
//! protocol writes into pages no longer the owner's memory.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::*};
use std::time::{Duration, Instant};

use super::fdpass::{memfd, size_sealed};

/// Bytes before the data (the control page).
pub const CONTROL: usize = 4096;
const STATE: usize = 0;
const ACTIVE: usize = 8;
/// Largest data length (a mapping must stay far from the address space's end).
pub const MAX_REGION: usize = 1 << 40;

fn page() -> usize {
    4096
}

/// A mapping of a whole region file: [control][data].
struct View {
    map: memmap2::MmapRaw,
    len: usize,
}

impl View {
    fn state(&self) -> &AtomicU64 {
        // SAFETY: the mapping is at least CONTROL bytes and page-aligned,
        // so this 8-aligned word lies inside it and lives as long as
        // `self`; any bit pattern is a valid u64, touched only atomically.
        unsafe { &*(self.map.as_mut_ptr().add(STATE) as *const AtomicU64) }
    }

    fn active(&self) -> &AtomicU32 {
        // SAFETY: as for `state`.
        unsafe { &*(self.map.as_mut_ptr().add(ACTIVE) as *const AtomicU32) }
    }

    /// The data's address.
    fn data(&self) -> *mut u8 {
        // SAFETY: CONTROL < the mapping's length (checked by the makers).
        unsafe { self.map.as_mut_ptr().add(CONTROL) }
    }

    fn holds(&self, off: usize, n: usize) -> bool {
        off.checked_add(n).is_some_and(|e| e <= self.len)
    }

    /// Copies `src` to data offset `off` (checked).
    fn write(&self, off: usize, src: &[u8]) -> bool {
        if !self.holds(off, src.len()) {
            return false;
        }
        // SAFETY: inside the data (checked above); `src` is memory of ours
        // that cannot overlap a MAP_SHARED mapping made here; nothing hands
        // out references into the mapping.
        unsafe { super::copy::copy_raw(src.as_ptr(), self.data().add(off), src.len()) };
        true
    }

    /// Copies data at `off` (checked) into `dst`.
    fn read(&self, off: usize, dst: &mut [u8]) -> bool {
        if !self.holds(off, dst.len()) {
            return false;
        }
        // SAFETY: inside the data (checked above); `dst` is exclusively
        // ours. A concurrent writer can only make the copy hold wrong bytes.
        unsafe { super::copy::copy_raw(self.data().add(off), dst.as_mut_ptr(), dst.len()) };
        true
    }

    /// The 64-bit word at data offset `off` (inside, 8-aligned), for
    /// atomic loads and stores only.
    fn word64(&self, off: usize) -> Option<&AtomicU64> {
        if !self.holds(off, 8) || !off.is_multiple_of(8) {
            return None;
        }
        // SAFETY: inside the data (checked above) and 8-aligned (the data
        // is page-aligned); any bit pattern is a valid u64, touched only
        // atomically here; it lives as long as `self`.
        Some(unsafe { &*(self.data().add(off) as *const AtomicU64) })
    }

    /// The release store of a notification word at `off` (checked; not
    /// 4-aligned: a release fence, then its bytes, as for user memory).
    fn word(&self, off: usize, v: u32) -> bool {
        if !self.holds(off, 4) {
            return false;
        }
        if !off.is_multiple_of(4) {
            std::sync::atomic::fence(Release);
            return self.write(off, &v.to_ne_bytes());
        }
        // SAFETY: inside the data, 4-aligned (the data is page-aligned).
        let w = unsafe { &*(self.data().add(off) as *const AtomicU32) };
        w.store(v, Release);
        true
    }
}

/// The owner's side of a region it allocated.
pub(crate) struct OwnedRegion {
    file: File,
    /// None once revoked (the owner's view unmapped).
    view: parking_lot::RwLock<Option<View>>,
    base: usize,
    len: usize,
}

impl OwnedRegion {
    /// `len` zero bytes (rounded up to pages), live, generation 1.
    pub(crate) fn new(len: usize) -> io::Result<OwnedRegion> {
        Self::with_generation(len, 1)
    }

    /// `new`, live at generation `g` (an AM-2 segment: each one of an
    /// endpoint its own generation, so that a request naming the one it
    /// was copied into is never taken for its replacement's).
    pub(crate) fn with_generation(len: usize, g: u64) -> io::Result<OwnedRegion> {
        if len == 0 || len > MAX_REGION || g == 0 || g >= 1 << 62 {
            return Err(io::ErrorKind::InvalidInput.into());
        }
        let len = len.next_multiple_of(page());
        let file = memfd("ramp-region", CONTROL + len)?;
        let map = memmap2::MmapOptions::new()
            .len(CONTROL + len)
            .map_raw(&file)?;
        let view = View { map, len };
        view.state().store(g << 1 | 1, SeqCst);
        let base = view.data() as usize;
        Ok(OwnedRegion {
            file,
            view: parking_lot::RwLock::new(Some(view)),
            base,
            len,
        })
    }

    pub(crate) fn base(&self) -> usize {
        self.base
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Its state word (generation << 1 | live); None once revoked.
    pub(crate) fn state(&self) -> Option<u64> {
        self.view.read().as_ref().map(|v| v.state().load(SeqCst))
    }

    /// A descriptor for a peer: the file itself (read-write), or reopened
    /// read-only through /proc (`writable` false), so that the kernel
    /// refuses any writable mapping of it.
    pub(crate) fn fd_for_peer(&self, writable: bool) -> io::Result<OwnedFd> {
        if writable {
            return Ok(self.file.try_clone()?.into());
        }
        let path = format!("/proc/self/fd/{}", self.file.as_raw_fd());
        Ok(File::open(path)?.into())
    }

    /// Ends sharing: not live, a new generation; waits (at most `bound`)
    /// for peers inside a copy; then unmaps our view (the address is
    /// invalid afterwards). Returns whether the peers left in time.
    pub(crate) fn revoke(&self, bound: Duration) -> bool {
        let mut g = self.view.write();
        let Some(v) = g.as_ref() else {
            return true;
        };
        let s = v.state().load(SeqCst);
        v.state().store(((s >> 1) + 1) << 1, SeqCst);
        let until = Instant::now() + bound;
        let mut left = true;
        while v.active().load(SeqCst) != 0 {
            if Instant::now() > until {
                left = false;
                break;
            }
            std::hint::spin_loop();
            std::thread::yield_now();
        }
        *g = None;
        left
    }

    /// A new generation, still live: peers' mappings made before are
    /// stale (they ask again, and are checked again).
    pub(crate) fn reshare(&self) {
        if let Some(v) = self.view.read().as_ref() {
            let s = v.state().load(SeqCst);
            v.state().store(((s >> 1) + 1) << 1 | 1, SeqCst);
        }
    }

    /// Copies `src` to `off` (false: outside, or revoked).
    pub(crate) fn write(&self, off: usize, src: &[u8]) -> bool {
        self.view.read().as_ref().is_some_and(|v| v.write(off, src))
    }

    /// Copies `dst.len()` bytes at `off` into `dst`.
    pub(crate) fn read(&self, off: usize, dst: &mut [u8]) -> bool {
        self.view.read().as_ref().is_some_and(|v| v.read(off, dst))
    }

    /// The release store of the 32-bit word at `off`.
    pub(crate) fn write_word(&self, off: usize, v: u32) -> bool {
        self.view.read().as_ref().is_some_and(|w| w.word(off, v))
    }

    /// The release store of the 64-bit word at `off` (8-aligned; false:
    /// outside, misaligned or revoked).
    pub(crate) fn store_u64(&self, off: usize, v: u64) -> bool {
        let g = self.view.read();
        let w = g.as_ref().and_then(|view| view.word64(off));
        w.map(|w| w.store(v, Release)).is_some()
    }

    /// Runs `f` on the address of `[off, off + len)` of our view while the
    /// read lock keeps it mapped (NotFound: revoked; InvalidInput: outside).
    fn with_range<R>(
        &self,
        off: usize,
        len: usize,
        f: impl FnOnce(*mut u8) -> io::Result<R>,
    ) -> io::Result<R> {
        let g = self.view.read();
        let v = g.as_ref().ok_or(io::ErrorKind::NotFound)?;
        if !v.holds(off, len) {
            return Err(io::ErrorKind::InvalidInput.into());
        }
        // SAFETY: `off` is inside our mapping (checked above): the address
        // stays within it.
        f(unsafe { v.data().add(off) })
    }

    /// Fills `[off, off + len)` with `len` bytes at `remote` of process
    /// `pid` (Cross Memory Attach).
    pub(crate) fn fill_from_process(
        &self,
        off: usize,
        len: usize,
        pid: u32,
        remote: usize,
    ) -> io::Result<()> {
        self.with_range(off, len, |p| {
            // SAFETY: `len` bytes inside our mapping (`with_range`), which
            // its read lock keeps mapped during the copy; the slice is only
            // handed to the kernel to fill.
            let dst = unsafe { std::slice::from_raw_parts_mut(p, len) };
            super::read_from_process(pid, remote, dst)
        })
    }

    /// Copies `[off, off + len)` to `remote` of process `pid`.
    pub(crate) fn copy_to_process(
        &self,
        off: usize,
        len: usize,
        pid: u32,
        remote: usize,
    ) -> io::Result<()> {
        self.with_range(off, len, |p| {
            // SAFETY: as in `fill_from_process`; only read by the kernel.
            let src = unsafe { std::slice::from_raw_parts(p, len) };
            super::write_to_process(pid, remote, src)
        })
    }
}

impl Drop for OwnedRegion {
    fn drop(&mut self) {
        self.revoke(Duration::from_millis(10));
    }
}

/// A peer's region mapped by us (the initiator of puts and gets).
pub(crate) struct PeerRegion {
    view: View,
    /// The state it had when mapped (live, its generation).
    state: u64,
    writable: bool,
}

impl PeerRegion {
    /// Maps the region file `fd` a peer sent: only a memfd sealed against
    /// any change of size (no SIGBUS ever), of a page-multiple length above
    /// the control page, live. Read-only when the descriptor is.
    pub(crate) fn map(fd: OwnedFd) -> io::Result<PeerRegion> {
        let file = File::from(fd);
        let bad = |what| io::Error::new(io::ErrorKind::InvalidData, what);
        if !size_sealed(&file) {
            return Err(bad("region file not sealed"));
        }
        let size = usize::try_from(file.metadata()?.len()).map_err(|_| bad("too large"))?;
        if size <= CONTROL || !size.is_multiple_of(page()) || size - CONTROL > MAX_REGION {
            return Err(bad("region file of a wrong size"));
        }
        // SAFETY: fcntl F_GETFL on a descriptor we own, no argument.
        let flags = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
        if flags < 0 {
            return Err(io::Error::last_os_error());
        }
        let writable = flags & libc::O_ACCMODE == libc::O_RDWR;
        let mut o = memmap2::MmapOptions::new();
        o.len(size).populate();
        let map = if writable {
            o.map_raw(&file)?
        } else {
            o.map_raw_read_only(&file)?
        };
        let view = View {
            map,
            len: size - CONTROL,
        };
        let state = view.state().load(SeqCst);
        if state & 1 == 0 {
            return Err(bad("region not live"));
        }
        Ok(PeerRegion {
            view,
            state,
            writable,
        })
    }

    /// Data bytes (from our own mapping's size, never from a message).
    pub(crate) fn len(&self) -> usize {
        self.view.len
    }

    pub(crate) fn writable(&self) -> bool {
        self.writable
    }

    /// The state it had when mapped (live, its generation).
    pub(crate) fn mapped_state(&self) -> u64 {
        self.state
    }

    /// Whether the owner still shares it as when mapped.
    pub(crate) fn live(&self) -> bool {
        self.view.state().load(SeqCst) == self.state
    }

    /// Copies `src` to `off`, then (`notify`) the word at its offset with a
    /// release store; false when not done (outside, read-only, revoked):
    /// nothing was written then.
    pub(crate) fn put(&self, off: usize, src: &[u8], notify: Option<(usize, u32)>) -> bool {
        if !self.writable
            || !self.view.holds(off, src.len())
            || notify.is_some_and(|(f, _)| !self.view.holds(f, 4))
        {
            return false;
        }
        let active = self.view.active();
        active.fetch_add(1, SeqCst);
        if self.view.state().load(SeqCst) != self.state {
            active.fetch_sub(1, Release);
            return false;
        }
        self.view.write(off, src);
        if let Some((f, v)) = notify {
            self.view.word(f, v);
        }
        active.fetch_sub(1, Release);
        true
    }

    /// The acquire load of the 64-bit word at `off` (8-aligned); None when
    /// outside or misaligned. (Whatever the owner stores: a hint, checked
    /// by its user.)
    pub(crate) fn load_u64(&self, off: usize) -> Option<u64> {
        self.view.word64(off).map(|w| w.load(Acquire))
    }

    /// Copies `dst.len()` bytes at `off` into `dst`; false when not done
    /// (outside, or revoked before the copy ended: `dst` holds junk then).
    pub(crate) fn get(&self, off: usize, dst: &mut [u8]) -> bool {
        if !self.view.holds(off, dst.len()) || !self.live() {
            return false;
        }
        self.view.read(off, dst);
        std::sync::atomic::fence(SeqCst);
        self.live()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_and_peer_share_and_revocation_stops_the_peer() {
        let r = OwnedRegion::new(10_000).unwrap();
        assert_eq!(r.len(), 12_288);
        let p = PeerRegion::map(r.fd_for_peer(true).unwrap()).unwrap();
        assert_eq!(p.len(), r.len());
        assert!(p.put(100, b"hello", Some((200, 7))));
        let mut b = [0u8; 5];
        assert!(r.read(100, &mut b));
        assert_eq!(&b, b"hello");
        let mut w = [0u8; 4];
        r.read(200, &mut w);
        assert_eq!(u32::from_ne_bytes(w), 7);
        assert!(r.write(0, b"abc"));
        let mut g = [0u8; 3];
        assert!(p.get(0, &mut g));
        assert_eq!(&g, b"abc");
        // bounds
        assert!(!p.put(r.len() - 2, b"abc", None));
        assert!(!p.put(0, b"a", Some((r.len() - 2, 1))));
        assert!(
            p.put(0, b"a", Some((201, 0x0102_0304))),
            "an unaligned flag"
        );
        let mut w = [0u8; 4];
        r.read(201, &mut w);
        assert_eq!(u32::from_ne_bytes(w), 0x0102_0304);
        assert!(!p.get(usize::MAX, &mut g));
        // read-only descriptor: a read-only mapping, no puts
        let ro = PeerRegion::map(r.fd_for_peer(false).unwrap()).unwrap();
        assert!(!ro.writable());
        assert!(!ro.put(0, b"x", None));
        assert!(ro.get(0, &mut g));
        assert!(r.revoke(Duration::from_millis(10)));
        assert!(!p.live() && !p.put(0, b"x", None) && !p.get(0, &mut g));
        assert!(!r.write(0, b"x"), "the owner's view is gone");
        // a new mapping of a revoked region is refused
        assert!(PeerRegion::map(r.fd_for_peer(true).unwrap()).is_err());
    }

    #[test]
    fn hostile_files_are_refused() {
        let f = super::super::fdpass::memfd_unsealed(CONTROL + 4096);
        assert!(PeerRegion::map(f).is_err(), "not sealed");
        let f = memfd("t", CONTROL).unwrap();
        assert!(PeerRegion::map(f.into()).is_err(), "no data");
        let f = memfd("t", CONTROL + 100).unwrap();
        assert!(PeerRegion::map(f.into()).is_err(), "not pages");
        let f = memfd("t", CONTROL + 4096).unwrap();
        assert!(PeerRegion::map(f.into()).is_err(), "not live");
    }

    #[test]
    fn nothing_is_written_once_revocation_returns() {
        use std::sync::atomic::AtomicBool;
        use std::sync::Arc;
        const N: usize = 256 << 10;
        for round in 0..20u8 {
            let r = OwnedRegion::new(N).unwrap();
            let peer = Arc::new(PeerRegion::map(r.fd_for_peer(true).unwrap()).unwrap());
            // another mapping of the same file, to look after the owner's is gone
            let observer = PeerRegion::map(r.fd_for_peer(true).unwrap()).unwrap();
            let revoked = Arc::new(AtomicBool::new(false));
            let (p, rv) = (peer.clone(), revoked.clone());
            let writer = std::thread::spawn(move || {
                let mut late = 0;
                let mut ok = 0;
                for k in 0..20_000u32 {
                    let after = rv.load(SeqCst);
                    let b = vec![(k % 251) as u8 ^ round; N];
                    if p.put(0, &b, Some((N - 4, k))) {
                        ok += 1;
                        late += usize::from(after);
                    }
                    if after && k % 64 == 0 && ok > 0 {
                        break;
                    }
                }
                (ok, late)
            });
            std::thread::sleep(Duration::from_micros(200 * round as u64));
            // false: the writer was preempted inside a copy for the whole
            // bound (a loaded host), which the bound is for: not judged
            let left = r.revoke(Duration::from_millis(100));
            revoked.store(true, SeqCst);
            let mut first = vec![0u8; N];
            observer.view.read(0, &mut first);
            let (ok, late) = writer.join().unwrap();
            let mut last = vec![0u8; N];
            observer.view.read(0, &mut last);
            if !left {
                continue;
            }
            assert_eq!(late, 0, "a put succeeded after the revocation returned");
            assert!(
                first == last,
                "bytes written after the revocation returned (round {round}, {ok} puts)"
            );
        }
    }

    #[test]
    fn a_peer_stuck_inside_a_copy_bounds_the_wait() {
        let r = OwnedRegion::new(4096).unwrap();
        let p = PeerRegion::map(r.fd_for_peer(true).unwrap()).unwrap();
        p.view.active().fetch_add(1, SeqCst);
        assert!(!r.revoke(Duration::from_millis(5)));
    }
}
