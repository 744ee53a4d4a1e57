//! Bundles: sets of endpoints polled together, with an event mask for
//! `wait_sema`. Endpoint lists are copy-on-write snapshots so that handlers
//! may create, move or free endpoints while a poll runs.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;

use parking_lot::RwLock;

use super::polled::{self, Polled};
use crate::am::endpoint::core::{Endpoint, Holder};
use crate::am::endpoint::host::Host;
use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::time::MILLIS;

pub const NOEVENTS: i32 = 0;
pub const NOTEMPTY: i32 = 1;

/// AM_SEQ: used by one thread at a time. AM_PAR: by several at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BundleMode {
    Seq,
    Par,
}

static NEXT_BUNDLE_ID: AtomicU64 = AtomicU64::new(1);

pub struct Bundle {
    pub id: u64,
    pub mode: BundleMode,
    endpoints: RwLock<Arc<Vec<Arc<Endpoint>>>>,
    /// Changes of `endpoints`, bumped under its write lock: a thread's
    /// kept list of this generation is the current one (`polled.rs`).
    generation: AtomicU64,
    mask: AtomicI32,
    /// The clock of the bundle and its endpoints: the real one, or the
    /// simulator's (`sim::World`); the host's.
    pub(crate) clock: Clock,
    /// Where its endpoints run: their clock and network.
    pub(crate) host: Host,
    /// The progress thread, when on (`progress.rs`).
    pub(in crate::am) progress: parking_lot::Mutex<Option<ProgressThread>>,
}

impl Bundle {
    pub fn new(mode: BundleMode) -> Arc<Bundle> {
        Bundle::on(mode, Host::default())
    }

    /// A bundle whose endpoints run on `host` (the simulator's).
    pub(crate) fn on(mode: BundleMode, host: Host) -> Arc<Bundle> {
        Arc::new(Bundle {
            id: NEXT_BUNDLE_ID.fetch_add(1, Ordering::Relaxed),
            mode,
            endpoints: RwLock::new(Arc::new(Vec::new())),
            generation: AtomicU64::new(0),
            mask: AtomicI32::new(NOEVENTS),
            clock: host.clock.clone(),
            host,
            progress: parking_lot::Mutex::new(None),
        })
    }

    pub fn endpoints(&self) -> Arc<Vec<Arc<Endpoint>>> {
        self.endpoints.read().clone()
    }

    /// The list and its generation, read together.
    fn snapshot(&self) -> Polled {
        let r = self.endpoints.read();
        Polled {
            bundle: self.id,
            gen: self.generation.load(Ordering::Relaxed),
            eps: r.clone(),
        }
    }

    /// Sets the list (under its write lock `w`) and counts the change.
    fn replace(&self, w: &mut Arc<Vec<Arc<Endpoint>>>, v: Vec<Arc<Endpoint>>) {
        *w = Arc::new(v);
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// Puts an endpoint in: this bundle holds it from now on.
    pub(crate) fn add(self: &Arc<Self>, ep: Arc<Endpoint>) {
        ep.set_holder(Some(self.as_holder()));
        let mut w = self.endpoints.write();
        let mut v = (**w).clone();
        v.push(ep);
        self.replace(&mut w, v);
        drop(w);
        polled::forget(self.id);
    }

    /// Takes an endpoint out (no bundle holds it then); false when it is
    /// not in this bundle.
    pub(crate) fn remove(&self, ep_id: u64) -> bool {
        let mut w = self.endpoints.write();
        let mut v = (**w).clone();
        let before = v.len();
        v.retain(|e| {
            let keep = e.id != ep_id;
            if !keep {
                e.set_holder(None);
            }
            keep
        });
        let found = v.len() != before;
        self.replace(&mut w, v);
        drop(w);
        // this thread no longer keeps the old list (`polled.rs`)
        polled::forget(self.id);
        found
    }

    /// Takes every endpoint out (the bundle is freed).
    pub(crate) fn remove_all(&self) {
        let mut w = self.endpoints.write();
        for e in w.iter() {
            e.set_holder(None);
        }
        self.replace(&mut w, Vec::new());
        drop(w);
        polled::forget(self.id);
    }

    /// This bundle as its endpoints see it.
    pub(crate) fn as_holder(self: &Arc<Self>) -> Weak<dyn Holder> {
        let w: Weak<Bundle> = Arc::downgrade(self);
        w
    }

    pub fn event_mask(&self) -> i32 {
        self.mask.load(Ordering::Relaxed)
    }

    pub fn set_event_mask(&self, mask: i32) -> Result<()> {
        if mask != NOEVENTS && mask != NOTEMPTY {
            return Err(Error::BadArg(
                "event mask must be AM_NOEVENTS or AM_NOTEMPTY",
            ));
        }
        self.mask.store(mask, Ordering::Relaxed);
        Ok(())
    }

    /// AM_Poll: polls every endpoint that is ready; returns the first error.
    /// (A busy loop's turn on the simulator's clock: `Clock::yield_now`.)
    /// Over the list this thread kept from its last poll while the bundle
    /// has not changed since: no lock, no count (`polled.rs`).
    pub fn poll(&self) -> Result<()> {
        let first = self.with_endpoints(|eps| {
            let mut first = Ok(());
            for ep in eps {
                let r = ep.poll();
                if first.is_ok() {
                    first = r;
                }
            }
            first
        });
        self.clock.yield_now();
        first
    }

    /// `f` of the endpoint list: the one this thread kept from its last
    /// poll while the bundle has not changed since, else a snapshot, kept
    /// after unless the bundle changed meanwhile (`polled.rs`).
    pub(super) fn with_endpoints<R>(&self, f: impl FnOnce(&[Arc<Endpoint>]) -> R) -> R {
        let gen = self.generation.load(Ordering::Acquire);
        match polled::with_kept(self.id, gen, f) {
            Ok(r) => {
                if self.generation.load(Ordering::Relaxed) != gen {
                    // changed during the poll: the kept list goes now
                    polled::forget(self.id);
                }
                r
            }
            Err(f) => {
                let p = self.snapshot();
                let r = f(&p.eps);
                if self.generation.load(Ordering::Relaxed) == p.gen {
                    polled::keep(p);
                }
                r
            }
        }
    }

    /// AM_WaitSema: sleeps in the kernel until a message waits on some
    /// endpoint (timers still run meanwhile), then polls once.
    pub fn wait_sema(&self) -> Result<()> {
        if self.event_mask() == NOEVENTS {
            return Err(Error::Resource(
                "AM_WaitSema with the event mask AM_NOEVENTS would never return",
            ));
        }
        loop {
            let eps = self.endpoints();
            let ready: Vec<&Arc<Endpoint>> = eps.iter().filter(|e| e.is_ready()).collect();
            if ready.is_empty() {
                self.mask.store(NOEVENTS, Ordering::Relaxed);
                return Err(Error::NotInit("no endpoint of the bundle can receive yet"));
            }
            for ep in &ready {
                if let Err(e) = ep.progress() {
                    self.mask.store(NOEVENTS, Ordering::Relaxed);
                    return Err(e);
                }
                if ep.has_events() {
                    return self.poll();
                }
            }
            self.wait_for_activity(100);
        }
    }

    /// Sleeps in the kernel until a datagram reaches an endpoint of the
    /// bundle, a protocol timer is due, or `max_ms` pass.
    pub fn wait_for_activity(&self, max_ms: u64) {
        self.wait_for_activity_with(None, max_ms)
    }

    /// Like `wait_for_activity`, also waking when `extra` is readable.
    pub fn wait_for_activity_with(&self, extra: Option<std::os::fd::RawFd>, max_ms: u64) {
        let eps = self.endpoints();
        let ready: Vec<&Arc<Endpoint>> = eps.iter().filter(|e| e.is_ready()).collect();
        let deadline = ready.iter().filter_map(|e| e.before_sleep()).min();
        let mut fds: Vec<_> = ready.iter().flat_map(|e| e.fds()).collect();
        fds.extend(extra);
        self.clock.wait_readable(&fds, deadline, max_ms * MILLIS);
    }
}

/// A bundle's progress thread (`progress.rs`), when on.
pub(crate) enum ProgressThread {
    Running {
        stop: Arc<AtomicBool>,
        handle: JoinHandle<()>,
    },
    /// On the simulator's clock (`pass`).
    Simulated,
}

impl Holder for Bundle {
    fn poll(&self) -> Result<()> {
        Bundle::poll(self)
    }

    fn wait_for_activity(&self, max_ms: u64) {
        Bundle::wait_for_activity(self, max_ms)
    }

    fn remove(&self, ep_id: u64) -> bool {
        Bundle::remove(self, ep_id)
    }
}
