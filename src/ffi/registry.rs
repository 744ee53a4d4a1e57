//! The C ABI's handles: the process-wide registry of live bundles and
//! endpoints by id (an `eb_t` or `ep_t` is the id), AM_Init's reference
//! count, and AM_Terminate, which frees everything. The Rust API
//! (`am::allocate_bundle`, ...) knows nothing of it: there the `Arc`s are
//! the handles.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use once_cell::sync::Lazy;
use parking_lot::RwLock;

use crate::am::{self, Bundle, BundleMode, Endpoint};
use crate::error::{Error, Result};
use crate::fxhash::FxHashMap;

/// Live bundles at once.
const MAX_BUNDLES: usize = 4096;

#[derive(Default)]
struct Registry {
    init_count: u32,
    bundles: FxHashMap<u64, Arc<Bundle>>,
    endpoints: FxHashMap<u64, Arc<Endpoint>>,
}

static REGISTRY: Lazy<RwLock<Registry>> = Lazy::new(Default::default);

/// Changes of the registry, bumped under its write lock: a handle a thread
/// looked up at this count is still live (`with_bundle`).
static GEN: AtomicU64 = AtomicU64::new(0);

/// A handle looked up, kept by the thread at registry count `gen`.
struct Kept<T> {
    id: u64,
    gen: u64,
    obj: Arc<T>,
}

thread_local! {
    static BUNDLE: Cell<Option<Kept<Bundle>>> = const { Cell::new(None) };
    static ENDPOINT: Cell<Option<Kept<Endpoint>>> = const { Cell::new(None) };
}

/// The registry to change: the count bumped, this thread's kept handles
/// dropped (an endpoint or bundle freed here closes at once; one kept by
/// another thread, at that thread's next call or its exit).
fn write() -> parking_lot::RwLockWriteGuard<'static, Registry> {
    let w = REGISTRY.write();
    GEN.fetch_add(1, Ordering::Release);
    let _ = BUNDLE.try_with(Cell::take);
    let _ = ENDPOINT.try_with(Cell::take);
    w
}

/// `f` of the object of handle `id` (`lookup`'s): the one the thread kept
/// from its last call with that handle while the registry has not changed
/// since (one plain load: no lock, no reference count for AM_Poll,
/// ramp_Drain*, ramp_RequestShort1...), else looked up and kept.
fn with_kept<T, R>(
    slot: &'static std::thread::LocalKey<Cell<Option<Kept<T>>>>,
    id: u64,
    lookup: impl FnOnce(&Registry) -> Option<Arc<T>>,
    f: impl FnOnce(&Arc<T>) -> R,
) -> Option<R> {
    let gen = GEN.load(Ordering::Acquire);
    let k = match slot.try_with(Cell::take).ok().flatten() {
        Some(k) if k.id == id && k.gen == gen => k,
        _ => {
            let r = REGISTRY.read();
            Kept {
                id,
                gen: GEN.load(Ordering::Relaxed),
                obj: lookup(&r)?,
            }
        }
    };
    let r = f(&k.obj);
    if GEN.load(Ordering::Relaxed) == k.gen {
        let _ = slot.try_with(|c| c.set(Some(k)));
    }
    Some(r)
}

/// `f` of the live bundle of id `id`; None when there is none.
pub fn with_bundle<R>(id: u64, f: impl FnOnce(&Arc<Bundle>) -> R) -> Option<R> {
    with_kept(&BUNDLE, id, |r| r.bundles.get(&id).cloned(), f)
}

/// `f` of the live endpoint of id `id`; None when there is none.
pub fn with_endpoint<R>(id: u64, f: impl FnOnce(&Arc<Endpoint>) -> R) -> Option<R> {
    with_kept(&ENDPOINT, id, |r| r.endpoints.get(&id).cloned(), f)
}

/// AM_Init: reference counted. Fails only when the `RAMP_*` configuration is bad.
pub fn init() -> Result<()> {
    am::init()?;
    write().init_count += 1;
    Ok(())
}

/// AM_Terminate: the last matching call frees every bundle and endpoint.
pub fn terminate() -> Result<()> {
    let mut r = write();
    if r.init_count == 0 {
        return Ok(());
    }
    r.init_count -= 1;
    if r.init_count == 0 {
        let bundles: Vec<_> = r.bundles.drain().map(|(_, b)| b).collect();
        r.endpoints.clear();
        drop(r);
        for b in bundles {
            am::free_bundle(&b)?;
        }
    }
    Ok(())
}

fn require_init(r: &Registry) -> Result<()> {
    if r.init_count == 0 {
        Err(Error::NotInit("AM_Init has not been called"))
    } else {
        Ok(())
    }
}

/// AM_AllocateBundle.
pub fn allocate_bundle(mode: BundleMode) -> Result<Arc<Bundle>> {
    let mut r = write();
    require_init(&r)?;
    if r.bundles.len() >= MAX_BUNDLES {
        return Err(Error::Resource("too many bundles"));
    }
    let b = am::allocate_bundle(mode)?;
    r.bundles.insert(b.id, b.clone());
    Ok(b)
}

/// Registers a bundle made outside (`spmd::start_worker`'s).
pub(crate) fn adopt_bundle(b: &Arc<Bundle>) {
    write().bundles.insert(b.id, b.clone());
}

/// Registers an endpoint made outside (`spmd::start_worker`'s).
pub(crate) fn adopt_endpoint(ep: &Arc<Endpoint>) {
    write().endpoints.insert(ep.id, ep.clone());
}

/// The live bundle of id `id`.
pub fn bundle(id: u64) -> Option<Arc<Bundle>> {
    REGISTRY.read().bundles.get(&id).cloned()
}

/// The live endpoint of id `id`.
pub fn endpoint(id: u64) -> Option<Arc<Endpoint>> {
    REGISTRY.read().endpoints.get(&id).cloned()
}

/// AM_FreeBundle: the bundle and its endpoints.
pub fn free_bundle(id: u64) -> Result<()> {
    let mut r = write();
    let b = r
        .bundles
        .remove(&id)
        .ok_or(Error::BadArg("not a live bundle"))?;
    for ep in b.endpoints().iter() {
        r.endpoints.remove(&ep.id);
    }
    drop(r);
    am::free_bundle(&b)
}

/// AM_AllocateEndpoint, configured by `RAMP_*`.
pub fn allocate_endpoint(bundle_id: u64) -> Result<Arc<Endpoint>> {
    let b = {
        let r = REGISTRY.read();
        require_init(&r)?;
        r.bundles
            .get(&bundle_id)
            .cloned()
            .ok_or(Error::BadArg("not a live bundle"))?
    };
    let ep = am::allocate_endpoint(&b)?;
    let mut r = write();
    if !r.bundles.contains_key(&bundle_id) {
        drop(r);
        let _ = am::free_endpoint(&ep);
        return Err(Error::BadArg("the bundle was freed meanwhile"));
    }
    r.endpoints.insert(ep.id, ep.clone());
    Ok(ep)
}

/// AM_FreeEndpoint.
pub fn free_endpoint(id: u64) -> Result<()> {
    let mut r = write();
    let ep = r
        .endpoints
        .get(&id)
        .cloned()
        .ok_or(Error::BadArg("not a live endpoint"))?;
    am::free_endpoint(&ep)?;
    r.endpoints.remove(&id);
    Ok(())
}

/// AM_MoveEndpoint.
pub fn move_endpoint(ep_id: u64, from: u64, to: u64) -> Result<()> {
    let r = write();
    let ep = r
        .endpoints
        .get(&ep_id)
        .ok_or(Error::BadArg("not a live endpoint"))?;
    let fb = r
        .bundles
        .get(&from)
        .ok_or(Error::BadArg("not a live bundle"))?;
    let tb = r
        .bundles
        .get(&to)
        .ok_or(Error::BadArg("not a live bundle"))?;
    am::move_endpoint(ep, fb, tb)
}
