//! How an SPMD process ends: the exit callback and the kill hook, the
//! launcher's finalize hook, and the watcher thread that ends a rank as
//! soon as its launcher orders it (`exit` and `abort`, which tell the
//! launcher first, are in `mod.rs`).

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};

use once_cell::sync::Lazy;
use parking_lot::Mutex;

use super::JOB;
use crate::am;

pub(super) type ExitHook = Box<dyn Fn(i32) + Send + Sync>;
pub(super) static EXIT_CALLBACK: Lazy<Mutex<Option<ExitHook>>> = Lazy::new(|| Mutex::new(None));
/// How the process ends (the C ABI installs one that flushes C stdio and
/// calls the application's kill-my-process pointer).
pub(super) static KILL: Lazy<Mutex<Option<ExitHook>>> = Lazy::new(|| Mutex::new(None));

/// How a rank leaves its launcher from any thread (PMIx: `PMIx_Finalize`,
/// at most once); set by bootstraps that need it.
type FinalizeHook = Box<dyn FnOnce() + Send>;
static LAUNCHER_FINALIZE: Lazy<Mutex<Option<FinalizeHook>>> = Lazy::new(|| Mutex::new(None));

pub(crate) fn set_launcher_finalize(f: FinalizeHook) {
    *LAUNCHER_FINALIZE.lock() = Some(f);
}

/// Set once a job-end notice is ending this process from the watcher's
/// thread: a collective of the main thread that fails from then on (the
/// launcher connection was just finalized under it) waits for the exit
/// instead of reporting an error the application would act on.
static ENDING: AtomicBool = AtomicBool::new(false);

/// Parks the calling thread when the process is being ended by a notice.
pub(crate) fn park_if_ending() {
    while ENDING.load(Ordering::Acquire) {
        crate::clock::Clock::Real.sleep(1_000 * crate::time::MILLIS);
    }
}

/// Runs the launcher finalize hook, if any (the notice watcher, before it
/// ends its process).
pub(crate) fn finalize_launcher() {
    ENDING.store(true, Ordering::Release);
    let hook = LAUNCHER_FINALIZE.lock().take();
    if let Some(f) = hook {
        f();
    }
}

/// A thread that ends this process as soon as the launcher orders it
/// (another rank exited with a code, or died), whatever the main thread is
/// doing: the exit callback runs and the process ends through the kill
/// hook with the launcher's code, with no signal and no message, as an
/// AMUDP rank ends when another calls exit. Inside a collective the order
/// is the collective's to read (`collective`); the thread waits for it to
/// finish.
pub(super) fn watch_ends(fd: RawFd) {
    let spawned = std::thread::Builder::new()
        .name("ramp-spmd-watch".into())
        .spawn(move || loop {
            if !crate::sys::poll_fds(&[fd], -1)[0] {
                continue;
            }
            let code = {
                let Some(mut g) = JOB.try_lock() else {
                    // a collective reads the connection now
                    crate::clock::Clock::Real.sleep(5 * crate::time::MILLIS);
                    continue;
                };
                match g.as_mut() {
                    Some(job) => job.boot.end_ordered(),
                    None => return,
                }
            };
            if let Some(code) = code {
                end_with(code, false);
            }
        });
    if let Err(e) = spawned {
        eprintln!("ramp: cannot start the SPMD watcher thread ({e}): other ranks' exits reach this one only in its SPMD calls");
    }
}

pub fn set_exit_callback(cb: Option<ExitHook>) {
    *EXIT_CALLBACK.lock() = cb;
}

pub fn set_kill_hook(k: Option<ExitHook>) {
    *KILL.lock() = k;
}

/// Ends this process with `code`: the exit callback, the AM layer, then the
/// kill hook (default: exit).
pub fn end_process(code: i32) -> ! {
    end_with(code, true)
}

/// Ends this process with `code`: the exit callback, the job's bundle
/// freed when `free` (not from the watcher thread: the application's
/// thread may be inside it), then the kill hook (default: exit).
fn end_with(code: i32, free: bool) -> ! {
    if let Some(cb) = EXIT_CALLBACK.lock().take() {
        cb(code);
    }
    if !free {
        if let Some(k) = KILL.lock().take() {
            k(code);
        }
        std::process::exit(code)
    }
    // the job's bundle freed: its progress thread stops
    let job_bundle = JOB
        .try_lock()
        .and_then(|j| j.as_ref().map(|j| j.bundle.clone()));
    if let Some(b) = job_bundle {
        let _ = am::free_bundle(&b);
    }
    if let Some(k) = KILL.lock().take() {
        k(code);
    }
    std::process::exit(code)
}
