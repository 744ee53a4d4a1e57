//! AM-2 semantics: bundles, endpoints, translation and handler tables, tags,
//! segments, tokens, the request/reply categories, handler dispatch and
//! returned messages; remote memory, transactions, the express lane, names.
//! This file is the layer's face: it re-exports what the rest of the crate
//! uses. The C ABI's registry of handles is the C ABI's (`ffi/registry.rs`).
//!
//! Rooms, from the ground up (`tests/layering.rs` holds the order: a room
//! imports only itself and the rooms below it, never this face):
//!
//! | room | files | what it holds |
//! |---|---|---|
//! | `handler/` | `args.rs`, `message.rs`, `name.rs`, `tables.rs` | what a handler is and receives, `TokenId`; `Message`, its limits and the status byte's flags; endpoint names; translation and handler tables, tags |
//! | `queue/` | `incoming.rs` | the queue of incoming AM messages, the tag each arrived under, the remote memory request stalling it |
//! | `state/` | `batch.rs`, `express.rs`, `handler_names.rs`, `outstanding.rs`, `region.rs`, `rma.rs`, `services.rs`, `txn.rs`, `txn_map.rs`, `txn_target.rs` | the subsystems' state in `EpState`, plain data that knows no endpoint: held requests, the express lane's counts and owed replies, names, requests waiting for replies (`TxnMap`), regions and remote memory operations, kept transactions at both ends |
//! | `endpoint/` | `core.rs`, `host.rs` | `EpState`, the `Endpoint` that locks it, the calls that set it up and read it; the bundle holding it as it sees it (`Holder`); the host (`endpoint_tests.rs`) |
//! | `txn/` | `initiator.rs`, `txn_probe.rs`, `txn_target.rs`, `txn_log.rs` | transactions: the initiator's state tuple, acks, wait, list; late answers and probes; at-most-once at the target; the log wired in (`txn_tests.rs`, `txn_id64_tests.rs`, `txn_crash_tests.rs`, `txn_lost_ack_tests.rs`) |
//! | `messages/` | `request.rs`, `batch.rs`, `reply.rs`, `token.rs`, `loopback.rs`, `driver.rs`, `placement.rs`, `drain.rs`, `started.rs`, `returned.rs`, `work.rs`, `dispatch.rs` | the request path and its credits; requests held for a batch; replies and tokens; loopback; the I/O driver; long messages placed as they arrive; the in-order draining into the queue; the start window; arrival checks and returned messages; AM_Poll (`batch_tests.rs`, `placement_tests.rs`) |
//! | `rma/` | `initiator.rs`, `rma_target.rs`, `rma_direct.rs`, `rma_shared.rs`, `xfer_direct.rs`, `xfer_shared.rs` | remote memory: put/get at the initiator; chunks on the wire and at the target; direct copies and shared regions to a same-host peer; large long requests copied or in place (`rma_tests.rs`, `rma_direct_tests.rs`, `rma_shared_tests.rs`, `xfer_shared_tests.rs`) |
//! | `express/` | `lane.rs`, `express_poll.rs` | the express lane: short requests and replies straight into a ring; its fast poll (`express_tests.rs`, `express_owed_tests.rs`, `express_poll_tests.rs`) |
//! | `names/` | `handler_names.rs`, `services.rs` | handler names and their look-ups at peers (wire kinds 8, 9); published endpoint names (wire kinds 12, 13) |
//! | `bundle/` | `set.rs`, `polled.rs`, `progress.rs`, `pull.rs`, `lifetime.rs` | bundles and AM_WaitSema; the list a thread polled last (`polled_tests.rs`); the progress thread; pull-style receive; the Rust API's beginnings and ends (`init`, allocate, free, move) |
//!
//! Beside the rooms: `tests.rs` (the basic exchange in the simulated world,
//! `sim::World`; helpers the other tests share), `world_tests.rs`, and
//! `timing_world_tests.rs` (the time behaviour the tests on real processes
//! no longer assert: ACKs riding on messages, bundled replies, held requests,
//! a killed receiver's returned requests).

mod bundle;
mod endpoint;
mod express;
mod handler;
mod messages;
mod names;
#[cfg(test)]
mod pace_world_tests;
mod queue;
#[cfg(test)]
mod rails_world_tests;
#[cfg(test)]
mod repair_world_tests;
mod rma;
mod state;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod timing_world_tests;
mod txn;
#[cfg(test)]
mod world_tests;
pub(crate) use messages::token;

pub use crate::stats::Statistics;
pub use crate::wire::Category;
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
pub use bundle::set::{Bundle, BundleMode, NOEVENTS, NOTEMPTY};
pub use endpoint::core::{Endpoint, LockWait, RailStatistics};
#[cfg(feature = "testing")]
pub(crate) use endpoint::host::Host;
#[cfg(feature = "testing")]
pub(crate) use endpoint::host::{MakeSecret, OpenTransports};
pub use endpoint::paths::{interface_of, path_line, state_name, PeerPath};
pub use handler::args::{handler, Data, HandlerArgs, HandlerFn, SegmentMemory, VecSegment};
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
pub use handler::args::TokenId;
pub use handler::tables::{MAX_TRANSLATIONS, NUM_HANDLERS};
pub use messages::reply::{reply, reply_with, return_to_sender};
pub use messages::started::{returned_may_have_run, START_WINDOW};
pub use messages::token::in_handler;
pub use rma::rma_target::CHUNK as RMA_CHUNK;
pub use rma::xfer_direct::XFER_DIRECT_MIN;
pub use rma::xfer_split::SPLIT_MIN as XFER_SPLIT_MIN;
pub use state::rma::MAX_OPS;
pub use state::txn::{Abandon, Ack, Progress, TxnState, MAX_KEPT_TXNS};
pub use state::txn_target::{TargetCounts, MAX_ENTRIES_PER_PEER, MAX_KEPT_BYTES};

pub use crate::config::MAX_NETWORK_DEPTH;
