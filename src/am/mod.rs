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

pub use crate::stats::Statistics;
pub use crate::wire::Category;
pub use bundle::bundle::{Bundle, BundleMode, NOEVENTS, NOTEMPTY};
#[cfg(feature = "testing")]
pub(crate) use bundle::lifetime::allocate_bundle_on;
pub use bundle::lifetime::{
    allocate_bundle, allocate_endpoint, allocate_endpoint_with, free_bundle, free_endpoint, init,
    move_endpoint,
};
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

pub use crate::config::MAX_NETWORK_DEPTH;
