//! The split copy's hand-over (`xfer_split.rs`) with real copies
//! (`process_vm_readv` / `process_vm_writev` on this process) and a
//! thread playing the sender on a claim word of its own: the target
//! returns only with both parts in place, bytes whole at the boundary
//! and at odd sizes; a grant not taken, or refused by the kernel, is
//! copied by the target; a sender gone mid-write is never committed.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;

use crate::clock::Clock;
use crate::time::{Nanos, MILLIS};

use super::xfer_split::*;
use crate::sys::{read_from_process, write_to_process};

const ID: u32 = 0x1234_5677;

fn pattern(n: usize, seed: u32) -> Vec<u8> {
    (0..n as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13 ^ seed) as u8)
        .collect()
}

fn cas(w: &AtomicU64) -> impl Fn(u64, u64) -> bool + '_ {
    move |a, b| w.compare_exchange(a, b, SeqCst, SeqCst).is_ok()
}

/// The target's copy of `src` into `dst` (its bytes read from this
/// process), split at `split`, against the claim word `w`; `gone` makes
/// every read fail (a sender that exited) once set; `head` is set once
/// the head was read whole; with `taken`, the
/// head is read only once the sender took the grant (whatever the
/// threads' timing, the target then finds the tail being written).
fn target(
    w: &AtomicU64,
    src: &[u8],
    dst: &mut [u8],
    split: usize,
    gone: &AtomicBool,
    taken: bool,
) -> Copied {
    target_with(w, src, dst, split, gone, taken, &AtomicBool::new(false))
}

fn target_with(
    w: &AtomicU64,
    src: &[u8],
    dst: &mut [u8],
    split: usize,
    gone: &AtomicBool,
    taken: bool,
    head: &AtomicBool,
) -> Copied {
    let (pid, at) = (std::process::id(), src.as_ptr() as usize);
    let read = |off: usize, buf: &mut [u8]| {
        let until = Clock::Real.now().as_nanos() + 30_000 * MILLIS;
        while taken && off == 0 && buf.len() > 1 && grant_addr(w.load(SeqCst)).is_some() {
            // (a failure, not a hang, if the sender's thread gave up)
            assert!(
                Clock::Real.now().as_nanos() < until,
                "the grant was never taken"
            );
            std::hint::spin_loop();
        }
        let ok = !gone.load(SeqCst) && read_from_process(pid, at + off, buf).is_ok();
        head.fetch_or(ok && off == 0 && buf.len() > 1, SeqCst);
        ok
    };
    let now = || Clock::Real.now().as_nanos();
    let pause = |_| std::thread::yield_now();
    target_copy(ID, dst, split, cas(w), read, now, pause)
}

/// The sender: waits for the grant, takes it, waits `delay` (a sender
/// slow to write), writes `tail` (or is refused when `refuse`).
fn sender(w: Arc<AtomicU64>, tail: Vec<u8>, delay: Nanos, refuse: bool) -> Option<bool> {
    loop {
        let load = || Some(w.load(SeqCst));
        let write = |addr: u64| {
            Clock::Real.sleep(delay);
            !refuse && write_to_process(std::process::id(), addr as usize, &tail).is_ok()
        };
        if let Some(r) = take_grant(ID, load, cas(&w), write) {
            return Some(r);
        }
        // (a grant that came after `take_grant` looked is taken next turn)
        let now = w.load(SeqCst);
        if now != claim(ID) && grant_addr(now).is_none() {
            return None; // taken back, or never offered
        }
        std::hint::spin_loop();
    }
}

#[test]
fn the_target_answers_only_with_the_senders_slow_tail_in_place() {
    // odd sizes and an odd destination: not multiples of a page, nor of
    // the split's alignment
    for (n, at) in [((1 << 20) + 13, 3), (SPLIT_MIN as usize + 1, 4099)] {
        let src = pattern(n, n as u32);
        let split = split_point(n as u64) as usize;
        assert!(split > 0 && split < n && split.is_multiple_of(64));
        let w = Arc::new(AtomicU64::new(claim(ID)));
        let mut buf = vec![0u8; n + at + 7];
        let tail = src[split..].to_vec();
        let s = {
            let w = w.clone();
            std::thread::spawn(move || sender(w, tail, 30 * MILLIS, false))
        };
        let gone = AtomicBool::new(false);
        let r = target(&w, &src, &mut buf[at..at + n], split, &gone, true);
        // checked before the sender's thread is joined: the target waited
        assert_eq!(r, Copied::Whole(written(ID), true), "size {n}");
        assert!(buf[at..at + n] == src[..], "bytes of size {n}");
        assert!(buf[..at].iter().chain(&buf[at + n..]).all(|&b| b == 0));
        assert_eq!(s.join().unwrap(), Some(true));
        assert_eq!(w.load(SeqCst), written(ID));
    }
}

#[test]
fn a_grant_not_taken_or_refused_by_the_kernel_is_copied_by_the_target() {
    let n = 3 * SPLIT_MIN as usize + 5;
    let src = pattern(n, 9);
    let split = split_point(n as u64) as usize;
    let gone = AtomicBool::new(false);
    // no sender: the grant is taken back after the head
    let w = AtomicU64::new(claim(ID));
    let mut dst = vec![0u8; n];
    assert_eq!(
        target(&w, &src, &mut dst, split, &gone, false),
        Copied::Whole(claim(ID), false)
    );
    assert!(dst == src);
    assert_eq!(w.load(SeqCst), claim(ID), "the grant taken back");
    // a sender the kernel refuses (slowly: the target waits for it)
    let w = Arc::new(AtomicU64::new(claim(ID)));
    let mut dst = vec![0u8; n];
    let s = {
        let (w, tail) = (w.clone(), src[split..].to_vec());
        std::thread::spawn(move || sender(w, tail, 30 * MILLIS, true))
    };
    assert_eq!(
        target(&w, &src, &mut dst, split, &gone, true),
        Copied::Whole(claim(ID), false)
    );
    assert!(dst == src);
    assert_eq!(s.join().unwrap(), Some(false));
    // not offered (split at the end), or withdrawn before the grant
    for (split, word) in [(n, claim(ID)), (split, 0)] {
        let w = AtomicU64::new(word);
        let mut dst = vec![0u8; n];
        let r = target(&w, &src, &mut dst, split, &gone, false);
        assert_eq!(r, Copied::Whole(claim(ID), false));
        assert!(dst == src);
        assert_eq!(w.load(SeqCst), word, "no grant");
    }
}

#[test]
fn a_sender_gone_while_writing_is_never_committed() {
    let n = 2 * SPLIT_MIN as usize;
    let src = pattern(n, 4);
    let split = split_point(n as u64) as usize;
    // the sender took the grant, then died: the word stays `writing`
    let w = AtomicU64::new(claim(ID));
    let gone = AtomicBool::new(false);
    let mut dst = vec![0u8; n];
    let w2 = &w;
    let head = AtomicBool::new(false);
    let r = std::thread::scope(|sc| {
        sc.spawn(|| {
            while grant_addr(w2.load(SeqCst)).is_none() {
                std::hint::spin_loop();
            }
            let g = w2.load(SeqCst);
            assert!(w2.compare_exchange(g, writing(ID), SeqCst, SeqCst).is_ok());
            // gone once the target has its head whole
            while !head.load(SeqCst) {
                std::hint::spin_loop();
            }
            gone.store(true, SeqCst);
        });
        target_with(&w, &src, &mut dst, split, &gone, true, &head)
    });
    assert_eq!(r, Copied::Failed);
    assert_eq!(w.load(SeqCst), writing(ID), "not committed");
}

#[test]
fn the_words_never_mistake_one_another() {
    let addrs = [1u64, 0x7fff_ffff_f000, (1 << 57) + 3];
    for id in [0, 1, ID, u32::MAX] {
        let mut all = vec![
            0,
            claim(id),
            committed(id),
            writing(id),
            written(id),
            refused(id),
        ];
        for a in addrs {
            let g = grant_addr(a | 1 << 62);
            assert_eq!(g, Some(a));
            all.push(a | 1 << 62);
        }
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n, "id {id}");
        for w in [
            claim(id),
            committed(id),
            writing(id),
            written(id),
            refused(id),
        ] {
            assert_eq!(grant_addr(w), None, "id {id}");
        }
    }
    assert_eq!(split_point(SPLIT_MIN - 1), SPLIT_MIN - 1, "not split");
    assert_eq!(split_point(SPLIT_MIN), SPLIT_MIN / 2);
}

/// The target's wait for the tail on a virtual clock (`step` ns a
/// reading): the sender takes the grant while the head is read and its
/// tail is written `written_at` ns after the wait begins. The target's
/// one-byte looks for a sender still there (system calls) are counted.
fn wait_for_tail(step: u64, written_at: u64) -> (Copied, usize) {
    use std::cell::Cell;
    let n = 2 * SPLIT_MIN as usize;
    let split = split_point(n as u64) as usize;
    let w = AtomicU64::new(claim(ID));
    let (clock, waiting_since, looks) = (Cell::new(0u64), Cell::new(None), Cell::new(0));
    let read = |off: usize, buf: &mut [u8]| {
        if buf.len() == 1 {
            looks.set(looks.get() + 1);
        } else if off == 0 {
            // the sender takes the grant meanwhile
            let g = w.load(SeqCst);
            assert!(grant_addr(g).is_some(), "granted before the head is read");
            assert!(w.compare_exchange(g, writing(ID), SeqCst, SeqCst).is_ok());
        }
        true
    };
    let now = || {
        let t = clock.get() + step;
        clock.set(t);
        let since = waiting_since.get().unwrap_or(t);
        waiting_since.set(Some(since));
        if t >= since + written_at {
            let _ = w.compare_exchange(writing(ID), written(ID), SeqCst, SeqCst);
        }
        t
    };
    let mut dst = vec![0u8; n];
    let r = target_copy(ID, &mut dst, split, cas(&w), read, now, |_| {});
    (r, looks.get())
}

#[test]
fn a_tail_written_in_time_costs_the_target_no_system_call() {
    // 10 ns a turn, the tail after 15 us (a 65,000-byte tail takes ~4):
    // 1,500 turns, and not one look for the sender
    let (r, looks) = wait_for_tail(10, 15_000);
    assert_eq!(r, Copied::Whole(written(ID), true));
    assert_eq!(looks, 0, "a system call on the critical path");
    // a slow tail (1 ms): looked for now and then, not every turn
    let (r, looks) = wait_for_tail(10, 1_000_000);
    assert_eq!(r, Copied::Whole(written(ID), true));
    assert!((10..=100).contains(&looks), "{looks} looks in 1 ms");
}
