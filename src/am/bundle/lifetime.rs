//! The Rust API's beginnings and ends: the configuration checked
//! (`init`), bundles allocated and freed, endpoints opened in a bundle,
//! freed and moved. Handles are the `Arc`s themselves: the C ABI's ids and
//! its registry of live handles are the C ABI's (`ffi/registry.rs`).
//!
//! Requests held for a batch (`messages/batch.rs`) leave even when the
//! program exits without freeing its endpoints: `init` has every open
//! endpoint's sent at exit.

use std::sync::{Arc, Weak};

use once_cell::sync::Lazy;
use parking_lot::Mutex;

use super::set::{Bundle, BundleMode};
use crate::am::endpoint::core::Endpoint;
#[cfg(feature = "testing")]
use crate::am::endpoint::host::Host;
use crate::error::{Error, Result};

/// Checks the `RAMP_*` configuration (read once) and applies what it says
/// of the clock. Fails only when the configuration is bad.
pub fn init() -> Result<()> {
    match crate::config::global() {
        Ok(cfg) => {
            crate::sys::clock_counter(cfg.clock_counter);
            static AT_EXIT: std::sync::Once = std::sync::Once::new();
            AT_EXIT.call_once(|| {
                crate::sys::at_exit(send_held_requests);
            });
            Ok(())
        }
        Err(msg) => {
            eprintln!("{msg}");
            Err(Error::BadArg(
                "bad RAMP_* configuration (see the message above)",
            ))
        }
    }
}

/// The endpoints opened, for the exit (freed ones are skipped there).
static OPENED: Lazy<Mutex<Vec<Weak<Endpoint>>>> = Lazy::new(Default::default);

/// At process exit: every endpoint's requests held for a batch are sent
/// (an endpoint another thread holds at that moment is skipped: waiting
/// for it could hang the exit).
fn send_held_requests() {
    let eps: Vec<Arc<Endpoint>> = match OPENED.try_lock() {
        Some(o) => o.iter().filter_map(Weak::upgrade).collect(),
        None => return,
    };
    for ep in eps {
        if ep.holder().is_some() {
            ep.send_held_at_exit();
        }
    }
}

/// A new bundle, with its progress thread when `RAMP_PROGRESS_THREAD`
/// says so.
pub fn allocate_bundle(mode: BundleMode) -> Result<Arc<Bundle>> {
    let b = Bundle::new(mode);
    if crate::config::global().is_ok_and(|c| c.progress_thread) {
        b.set_progress_thread(true)?;
    }
    Ok(b)
}

/// A new bundle whose endpoints run on `host` (the simulator's).
#[cfg(feature = "testing")]
pub(crate) fn allocate_bundle_on(mode: BundleMode, host: Host) -> Result<Arc<Bundle>> {
    Ok(Bundle::on(mode, host))
}

/// Frees a bundle: its endpoints are taken out (freed) and its progress
/// thread stops.
pub fn free_bundle(b: &Arc<Bundle>) -> Result<()> {
    b.remove_all();
    b.set_progress_thread(false)
}

/// Opens an endpoint in bundle `b`, configured by `RAMP_*`.
pub fn allocate_endpoint(b: &Arc<Bundle>) -> Result<Arc<Endpoint>> {
    let cfg = crate::config::global().map_err(|_| Error::BadArg("bad RAMP_* configuration"))?;
    allocate_endpoint_with(b, cfg)
}

/// Opens an endpoint in bundle `b` with an explicit configuration instead
/// of the process-wide one (tests, and programs that configure from code).
pub fn allocate_endpoint_with(
    b: &Arc<Bundle>,
    cfg: &crate::config::Config,
) -> Result<Arc<Endpoint>> {
    let ep = Endpoint::open(cfg, &b.host)?;
    if let Some(dir) = &cfg.log_dir {
        static LOGGED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = LOGGED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        ep.log_open(
            &dir.join(format!("endpoint-{n}.ramplog")),
            cfg.log_sync,
            cfg,
        )?;
    }
    b.add(ep.clone());
    let mut opened = OPENED.lock();
    opened.retain(|e| e.strong_count() > 0);
    opened.push(Arc::downgrade(&ep));
    Ok(ep)
}

/// Frees an endpoint: it leaves its bundle (and closes once the last
/// handle to it is dropped; a thread that polled its bundle, other than
/// this one, keeps one until its next poll: `polled.rs`).
pub fn free_endpoint(ep: &Arc<Endpoint>) -> Result<()> {
    if crate::config::global().is_ok_and(|c| c.verbose) {
        // what congestion control saw on each path (`RAMP_VERBOSE`)
        eprint!("{}", ep.paths_report());
    }
    match ep.holder() {
        None => Err(Error::BadArg("not a live endpoint")),
        Some(b) if b.remove(ep.id) => Ok(()),
        Some(_) => Err(Error::Resource("the endpoint is not in its bundle")),
    }
}

/// Moves an endpoint from bundle `from` to bundle `to`.
pub fn move_endpoint(ep: &Arc<Endpoint>, from: &Arc<Bundle>, to: &Arc<Bundle>) -> Result<()> {
    if !ep.is_held_by(&from.as_holder()) {
        return Err(Error::Resource("the endpoint is not in the source bundle"));
    }
    if Arc::ptr_eq(from, to) {
        return Ok(());
    }
    from.remove(ep.id);
    to.add(ep.clone());
    Ok(())
}
