//! News of paths for the layer above (`RAMP_VERBOSE`, tests): a path
//! failed, came back, was confirmed, became suspect or answered again
//! (cleared); every path of a peer failed (it is
//! partitioned from us) or one answered again (rejoined). The protocol
//! never prints: it queues, bounded (`PATH_EVENTS_MAX`), and the AM driver
//! drains (`Protocol::take_path_event`). Only the protocol's own state
//! changes make news (a timeout, the transport's word, an authentic
//! heartbeat's answer), never a packet by itself: a forged packet makes
//! none, and a full queue drops the newest (counted).

use std::collections::VecDeque;

use super::{PeerAddr, Protocol};
use crate::path::Path;

/// The most path events kept until the layer above takes them.
pub const PATH_EVENTS_MAX: usize = 64;

/// What happened to a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathChange {
    /// A confirming heartbeat was answered: the path may carry data.
    Confirmed,
    /// Failed (timeouts on it, or the transport found it unreachable).
    Failed,
    /// A probe of the failed path was answered: active again.
    Recovered,
    /// Its failure left the peer no active path: partitioned.
    Partitioned,
    /// Its answer ended a partition: the peer is reachable again.
    Rejoined,
    /// Its timeouts made it suspect (`path/suspect.rs`): its traffic
    /// moved to another path, its heartbeat will tell whether it failed.
    Suspect,
    /// Suspect, it answered (its heartbeat, or new data acknowledged on
    /// it): usable again.
    Cleared,
}

/// One path's news: the peer (its name), the path, what happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathEvent<A> {
    pub peer: A,
    pub path: Path<A>,
    pub change: PathChange,
}

/// The bounded queue of path events.
#[derive(Debug)]
pub struct PathEvents<A> {
    q: VecDeque<PathEvent<A>>,
    /// Events dropped for want of room.
    pub dropped: u64,
}

impl<A> Default for PathEvents<A> {
    fn default() -> Self {
        PathEvents {
            q: VecDeque::new(),
            dropped: 0,
        }
    }
}

impl<A> PathEvents<A> {
    pub fn push(&mut self, e: PathEvent<A>) {
        if self.q.len() >= PATH_EVENTS_MAX {
            self.dropped += 1;
        } else {
            self.q.push_back(e);
        }
    }

    #[cfg(any(test, feature = "testing"))]
    pub fn len(&self) -> usize {
        self.q.len()
    }
}

impl<A: PeerAddr> Protocol<A> {
    /// The oldest path event not yet taken (`PathEvent`).
    pub fn take_path_event(&mut self) -> Option<PathEvent<A>> {
        self.path_events.q.pop_front()
    }

    #[cfg(any(test, feature = "testing"))] // inspection for tests
    /// Path events waiting, and dropped because the queue was full.
    pub fn path_event_counts(&self) -> (usize, u64) {
        (self.path_events.len(), self.path_events.dropped)
    }
}

impl PathChange {
    /// How `RAMP_VERBOSE` says it.
    pub fn describe(self) -> &'static str {
        match self {
            PathChange::Confirmed => "confirmed",
            PathChange::Failed => "failed",
            PathChange::Recovered => "recovered",
            PathChange::Partitioned => "failed: every path to the peer is down (partitioned)",
            PathChange::Rejoined => "answered: the peer is reachable again (rejoined)",
            PathChange::Suspect => "suspect: its timeouts moved its traffic to another path",
            PathChange::Cleared => "answered: no longer suspect",
        }
    }
}
