//! Requests held back to leave together (`messages/batch.rs`): what is
//! held, and for whom.

use std::net::SocketAddr;

use crate::time::Instant;

/// Requests held back to leave together (Nagle's rule, for requests):
/// a small request to a peer reached over UDP (not a shared-memory ring)
/// that still owes the answer to an earlier one waits in the send queue
/// until `max` of them are queued (they then leave as one datagram, a
/// bundle), or the endpoint's next poll, wait, drain or other request (a
/// request polls when the endpoint was not polled in the last 20 us), or
/// the progress thread's next pass (woken by that earlier answer's
/// arrival), or the endpoint's release, or the process's exit. The program must call ramp to receive that answer,
/// and a lost datagram already waits for such a call to be sent again; a
/// lone request, a ping-pong's, never waits. `RAMP_REQUEST_BATCH`.
#[derive(Clone, Copy, Debug, Default)]
pub(in crate::am) struct Batch {
    /// Most requests in one batch; 0 or 1: none held.
    pub max: u16,
    /// Requests queued and not yet transmitted.
    pub held: u16,
    /// Their destination: a request to another peer sends them first.
    /// (Some exactly while something is held, requests or a fragment.)
    pub to: Option<SocketAddr>,
    /// When the first of them was queued: the protocol's timers of what
    /// was queued since start when they leave (`Protocol::restamp`).
    pub since: Instant,
    /// Instead of requests, a long request's small last fragment is held
    /// in the send queue for the next long request's first to join
    /// (`EpState::tail_hold`): to `to`, since `since`. (Never both: a
    /// request behind a held fragment is not held, and a fragment is held
    /// only once the requests held before it have left. `to` and `since`
    /// serve both: a larger `EpState` cost the UDP round trip 1%.)
    pub tail: bool,
}
