//! The C ABI's handles: the process-wide registry of live bundles and
//! endpoints by id (an `eb_t` or `ep_t` is the id), AM_Init's reference
//! count, and AM_Terminate, which frees everything. The Rust API
//! (`am::allocate_bundle`, ...) knows nothing of it: there the `Arc`s are
//! the handles.

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

/// AM_Init: reference counted. Fails only when the `RAMP_*` configuration is bad.
pub fn init() -> Result<()> {
    am::init()?;
    REGISTRY.write().init_count += 1;
    Ok(())
}

/// AM_Terminate: the last matching call frees every bundle and endpoint.
pub fn terminate() -> Result<()> {
    let mut r = REGISTRY.write();
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
    let mut r = REGISTRY.write();
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
    REGISTRY.write().bundles.insert(b.id, b.clone());
}

/// Registers an endpoint made outside (`spmd::start_worker`'s).
pub(crate) fn adopt_endpoint(ep: &Arc<Endpoint>) {
    REGISTRY.write().endpoints.insert(ep.id, ep.clone());
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
    let mut r = REGISTRY.write();
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
    let mut r = REGISTRY.write();
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
    let mut r = REGISTRY.write();
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
    let r = REGISTRY.write();
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
