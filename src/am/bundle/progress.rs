//! A bundle's progress thread (`ramp_SetProgressThread`,
//! `RAMP_PROGRESS_THREAD=1`): it moves its endpoints' packets and so
//! performs remote memory operations (`rma_target.rs`) while the
//! application computes. It never runs a handler: AM messages it receives
//! wait, in order, for the application's poll.
//!
//! It sleeps in poll(2) on the endpoints' descriptors until a datagram
//! arrives or a protocol timer is due (at most [`MAX_SLEEP_MS`], when it also
//! looks at its stop flag), and never waits for an endpoint another thread
//! holds (it comes back to it a moment later).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::set::Bundle;
use crate::am::bundle::set::ProgressThread;
use crate::error::{Error, Result};
use crate::time::{Instant, MILLIS};

/// The longest sleep between looks at the stop flag.
const MAX_SLEEP_MS: u64 = 20;
/// The sleep when an endpoint was busy in another thread.
const BUSY_SLEEP_MS: u64 = 1;

impl ProgressThread {
    fn start(b: Arc<Bundle>) -> Result<ProgressThread> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name(format!("ramp-progress-{}", b.id))
            .spawn(move || run(&b, &flag))
            .map_err(|_| Error::Resource("cannot start the progress thread"))?;
        Ok(ProgressThread::Running { stop, handle })
    }

    /// Stops the thread and waits for it (at most one sleep).
    fn stop(self) {
        if let ProgressThread::Running { stop, handle } = self {
            stop.store(true, Ordering::Relaxed);
            if handle.thread().id() != std::thread::current().id() {
                let _ = handle.join();
            }
        }
    }
}

fn run(b: &Bundle, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let (fds, deadline, busy) = pass(b);
        let max = if busy { BUSY_SLEEP_MS } else { MAX_SLEEP_MS };
        b.clock.wait_readable(&fds, deadline, max * MILLIS);
    }
}

/// One pass of the progress thread over the bundle's endpoints: their
/// packets moved, (the descriptors to sleep on, the next deadline, whether
/// an endpoint was held by another thread). The simulator runs a pass
/// where a real process's thread would (`sim::World`).
pub(crate) fn pass(b: &Bundle) -> (Vec<std::os::fd::RawFd>, Option<Instant>, bool) {
    let eps = b.endpoints();
    let mut fds = Vec::new();
    let mut deadline: Option<Instant> = None;
    let mut busy = false;
    for ep in eps.iter() {
        match ep.try_progress() {
            Some((f, d)) => {
                fds.extend(f);
                deadline = match (deadline, d) {
                    (Some(x), Some(y)) => Some(x.min(y)),
                    (x, y) => x.or(y),
                };
            }
            None => busy = true,
        }
    }
    (fds, deadline, busy)
}

impl Bundle {
    /// Starts (`on`) or stops the bundle's progress thread; idempotent.
    pub fn set_progress_thread(self: &Arc<Self>, on: bool) -> Result<()> {
        let mut slot = self.progress.lock();
        match (on, slot.is_some()) {
            // (on the simulator's clock no thread runs: the simulated
            // world makes the thread's passes, `pass`)
            (true, false) if self.clock.is_virtual() => *slot = Some(ProgressThread::Simulated),
            (true, false) => *slot = Some(ProgressThread::start(self.clone())?),
            (false, true) => {
                if let Some(t) = slot.take() {
                    drop(slot);
                    t.stop();
                }
            }
            _ => {}
        }
        Ok(())
    }

    pub fn has_progress_thread(&self) -> bool {
        self.progress.lock().is_some()
    }
}

impl crate::am::endpoint::core::Endpoint {
    /// One pump of the network for the progress thread, unless another
    /// thread holds the endpoint (None): the descriptors to sleep on and
    /// the next deadline.
    pub(crate) fn try_progress(&self) -> Option<(Vec<std::os::fd::RawFd>, Option<Instant>)> {
        self.try_with(|s| {
            if s.depth.is_none() {
                return (Vec::new(), None);
            }
            let now = s.clock.now();
            // a failed socket is reported to the application's own calls
            let _ = s.pump_network(now);
            let a = s.proto.next_timeout();
            let b = s.transports.flush_due(now);
            let d = match (a, b) {
                (Some(x), Some(y)) => Some(x.min(y)),
                (x, y) => x.or(y),
            };
            (s.transports.fds().collect(), d)
        })
    }
}
