//! AM-2 semantics: bundles, endpoints, translation and handler tables, tags,
//! segments, tokens, the request/reply categories, handler dispatch and
//! returned messages. Also the process-wide registry of live bundles and
//! endpoints, which the C ABI's handles name (this file).
//!
//! | file | what it holds |
//! |---|---|
//! | `bundle.rs` | bundles: endpoints polled together, AM_WaitSema |
//! | `endpoint.rs` | the endpoint's state; tables, tag, segment, handlers, statistics |
//! | `message.rs` | `Message`: what a request or reply carries, and its limits |
//! | `request.rs` | the request path: credits (network depth), waiting for one |
//! | `batch.rs` | requests held back to leave as one datagram while the peer owes an answer (`batch_tests.rs`) |
//! | `reply.rs` | replies through a handler's token |
//! | `loopback.rs` | messages from an endpoint to itself |
//! | `driver.rs` | the I/O driver: transports <-> protocol, timers, transmit |
//! | `dispatch.rs` | AM_Poll: protocol events -> handler calls, automatic replies |
//! | `returned.rs` | checks on arrival, refusals, handler 0 for returned messages |
//! | `express.rs` | the express lane: short requests and their replies straight into a shared-memory ring |
//! | `handler.rs`, `token.rs` | what a handler is and receives; its token |
//! | `pull.rs` | pull-style receive: delivered messages handed to the caller, held until the next drain |
//! | `tables.rs`, `name.rs` | translation/handler tables, names |
//! | `names.rs` | handler names: naming, lookups at peers (wire kinds 8, 9), their cache |
//! | `services.rs` | published endpoint names: the table kept for others, publish and look-up queries (wire kinds 12, 13) |
//! | `region.rs` | memory regions: registry, rights, bounds |
//! | `rma.rs` | one-sided put/get at the initiator: chunks, completion, test/wait/fence |
//! | `rma_target.rs` | remote memory on the wire and at the target; in-order event draining |
//! | `rma_direct.rs` | large puts and gets to a same-host peer copied by the target (process_vm_readv/writev) |
//! | `progress.rs` | the bundle's progress thread |
//! | `txn.rs` | transactions at the initiator: state tuple, ack, abandon reasons, wait, list |
//! | `txn_probe.rs` | late answers: probes, a target restarted (sent again), conclusions, the poll path's look |
//! | `txn_log.rs` | the transaction log wired in: identity, target records, restore |
//! | `txn_target.rs` | transactions at the target: at-most-once, kept replies, floor, bounds |
//! | `txn_tests.rs` | transactions over the in-memory network: duplication, replays, refusals |
//! | `txn_id64_tests.rs` | 64-bit transaction ids: a wire id repeated a lap later, trailers out of reach |
//! | `txn_crash_tests.rs` | either end killed and restarted from its log at random, in the simulated world |
//! | `tests.rs` | the basic exchange in the simulated world (`sim::World`), credits; helpers the other tests share |

mod bundle;
mod endpoint;
mod express;
mod handler;
mod messages;
mod names;
mod queue;
mod rma;
mod state;
#[cfg(test)]
mod tests;
mod txn;
#[cfg(test)]
mod world_tests;
pub(crate) use messages::token;

use std::sync::Arc;

use once_cell::sync::Lazy;
use parking_lot::RwLock;

pub use crate::stats::Statistics;
pub use crate::wire::Category;
pub use bundle::bundle::{Bundle, BundleMode, NOEVENTS, NOTEMPTY};
#[cfg(feature = "testing")]
pub(crate) use bundle::progress::pass as progress_pass;
pub use bundle::pull::{
    drained_token, end as end_drained, end_with as end_drained_with, release as release_drained,
    release_with as release_drained_with, Pulled,
};
pub use endpoint::endpoint::{Endpoint, LockWait};
#[cfg(feature = "testing")]
pub(crate) use endpoint::host::Host;
#[cfg(feature = "testing")]
pub(crate) use endpoint::host::{MakeSecret, OpenTransports};
pub use handler::handler::{handler, Data, HandlerArgs, HandlerFn, SegmentMemory, VecSegment};
pub use handler::message::Message;
pub use handler::message::{MAX_LONG, MAX_MEDIUM, MAX_SHORT};
pub use handler::name::EndpointName;
pub use handler::tables::{TAG_ALL, TAG_NONE};
pub use names::handler_names::{valid_handler_name, MAX_HANDLER_NAME};
pub use names::services::{
    service_check, service_hash, valid_service, ServiceQuery, MAX_PENDING_SERVICE_QUERIES,
    MAX_SERVICE,
};
pub use state::express::ExpressStats;
pub use state::region::{MAX_REGIONS, REGION_READ, REGION_WRITE, SEGMENT_REGION};
pub use state::services::{ServiceAnswer, MAX_SERVICES};

/// Removes the shared-memory files in /dev/shm that versions of ramp before
/// the memfd left behind when killed: those of endpoints whose process
/// is gone, such as killed workers' (launchers call it when a job ends).
/// Returns how many.
pub fn remove_stale_shm_files() -> usize {
    crate::net::remove_stale_files()
}
pub use handler::handler::TokenId;
pub use handler::tables::{MAX_TRANSLATIONS, NUM_HANDLERS};
pub use messages::reply::{reply, reply_with, return_to_sender};
pub use messages::started::{returned_may_have_run, START_WINDOW};
pub use messages::token::in_handler;
pub use rma::rma_target::CHUNK as RMA_CHUNK;
pub use state::rma::MAX_OPS;
pub use state::txn::{Abandon, Ack, Progress, TxnState, MAX_KEPT_TXNS};
pub use state::txn_target::{TargetCounts, MAX_ENTRIES_PER_PEER, MAX_KEPT_BYTES};

use crate::error::{Error, Result};
use crate::fxhash::FxHashMap;

pub use crate::config::MAX_NETWORK_DEPTH;
/// Live bundles at once.
pub const MAX_BUNDLES: usize = 4096;

#[derive(Default)]
struct Registry {
    init_count: u32,
    bundles: FxHashMap<u64, Arc<Bundle>>,
    endpoints: FxHashMap<u64, Arc<Endpoint>>,
}

static REGISTRY: Lazy<RwLock<Registry>> = Lazy::new(Default::default);

/// AM_Init: reference counted. Fails only when the `RAMP_*` configuration is bad.
pub fn init() -> Result<()> {
    match crate::config::global() {
        Ok(cfg) => crate::sys::clock_counter(cfg.clock_counter),
        Err(msg) => {
            eprintln!("{msg}");
            return Err(Error::BadArg(
                "bad RAMP_* configuration (see the message above)",
            ));
        }
    }
    REGISTRY.write().init_count += 1;
    // requests held for a batch (`batch.rs`) leave even when the program
    // exits without AM_Terminate
    static AT_EXIT: std::sync::Once = std::sync::Once::new();
    AT_EXIT.call_once(|| {
        crate::sys::at_exit(send_held_requests);
    });
    Ok(())
}

/// At process exit: every endpoint's requests held for a batch are sent
/// (an endpoint another thread holds at that moment is skipped: waiting
/// for it could hang the exit).
fn send_held_requests() {
    let eps: Vec<Arc<Endpoint>> = match REGISTRY.try_read() {
        Some(r) => r.endpoints.values().cloned().collect(),
        None => return,
    };
    for ep in eps {
        ep.send_held_at_exit();
    }
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
            b.set_progress_thread(false)?;
        }
    }
    Ok(())
}

pub fn is_initialized() -> bool {
    REGISTRY.read().init_count > 0
}

fn require_init(r: &Registry) -> Result<()> {
    if r.init_count == 0 {
        Err(Error::NotInit("AM_Init has not been called"))
    } else {
        Ok(())
    }
}

pub fn allocate_bundle(mode: BundleMode) -> Result<Arc<Bundle>> {
    let mut r = REGISTRY.write();
    require_init(&r)?;
    if r.bundles.len() >= MAX_BUNDLES {
        return Err(Error::Resource("too many bundles"));
    }
    let b = Bundle::new(mode);
    r.bundles.insert(b.id, b.clone());
    drop(r);
    if crate::config::global().is_ok_and(|c| c.progress_thread) {
        b.set_progress_thread(true)?;
    }
    Ok(b)
}

/// Allocates a bundle whose endpoints run on `host` (the simulator's).
#[cfg(feature = "testing")]
pub(crate) fn allocate_bundle_on(mode: BundleMode, host: Host) -> Result<Arc<Bundle>> {
    let mut r = REGISTRY.write();
    require_init(&r)?;
    let b = Bundle::on(mode, host);
    r.bundles.insert(b.id, b.clone());
    Ok(b)
}

pub fn bundle(id: u64) -> Option<Arc<Bundle>> {
    REGISTRY.read().bundles.get(&id).cloned()
}

pub fn endpoint(id: u64) -> Option<Arc<Endpoint>> {
    REGISTRY.read().endpoints.get(&id).cloned()
}

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
    b.set_progress_thread(false)
}

pub fn allocate_endpoint(bundle_id: u64) -> Result<Arc<Endpoint>> {
    let cfg = crate::config::global().map_err(|_| Error::BadArg("bad RAMP_* configuration"))?;
    allocate_endpoint_with(bundle_id, cfg)
}

/// Allocates an endpoint with an explicit configuration instead of the
/// process-wide one (tests, and programs that configure from code).
pub fn allocate_endpoint_with(
    bundle_id: u64,
    cfg: &crate::config::Config,
) -> Result<Arc<Endpoint>> {
    let b = {
        let r = REGISTRY.read();
        require_init(&r)?;
        r.bundles
            .get(&bundle_id)
            .cloned()
            .ok_or(Error::BadArg("not a live bundle"))?
    };
    let ep = Endpoint::open(cfg, bundle_id, &b.host)?;
    if let Some(dir) = &cfg.log_dir {
        static LOGGED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = LOGGED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        ep.log_open(
            &dir.join(format!("endpoint-{n}.ramplog")),
            cfg.log_sync,
            cfg,
        )?;
    }
    register(&b, ep)
}

/// Puts a new endpoint in its bundle and in the registry.
fn register(b: &Arc<Bundle>, ep: Arc<Endpoint>) -> Result<Arc<Endpoint>> {
    let bundle_id = b.id;
    let mut r = REGISTRY.write();
    if !r.bundles.contains_key(&bundle_id) {
        return Err(Error::BadArg("the bundle was freed meanwhile"));
    }
    b.add(ep.clone());
    r.endpoints.insert(ep.id, ep.clone());
    Ok(ep)
}

pub fn free_endpoint(id: u64) -> Result<()> {
    let mut r = REGISTRY.write();
    let ep = r
        .endpoints
        .get(&id)
        .cloned()
        .ok_or(Error::BadArg("not a live endpoint"))?;
    let bid = *ep.bundle.lock();
    let b = r.bundles.get(&bid).cloned();
    if !b.is_some_and(|b| b.remove(id)) {
        return Err(Error::Resource("the endpoint is not in its bundle"));
    }
    r.endpoints.remove(&id);
    Ok(())
}

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
    let mut owner = ep.bundle.lock();
    if *owner != from {
        return Err(Error::Resource("the endpoint is not in the source bundle"));
    }
    if from == to {
        return Ok(());
    }
    fb.remove(ep_id);
    tb.add(ep.clone());
    *owner = to;
    Ok(())
}
