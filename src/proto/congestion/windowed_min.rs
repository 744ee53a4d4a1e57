//! The least of a quantity over a sliding window (`congestion.rs`: the
//! least round trip lately, the standing round trip).

use crate::time::{Instant, Nanos};

/// The least round trip over a sliding window (two buckets: the least of
/// the last one to two windows).
#[derive(Clone, Copy, Debug)]
pub(super) struct WindowedMin {
    cur: Nanos,
    prev: Nanos,
    since: Instant,
}

impl WindowedMin {
    pub(super) fn new() -> WindowedMin {
        WindowedMin {
            cur: Nanos::MAX,
            prev: Nanos::MAX,
            since: Instant::ZERO,
        }
    }

    pub(super) fn sample(&mut self, now: Instant, r: Nanos, window: Nanos) {
        if now.since(self.since) >= window {
            self.prev = self.cur;
            self.cur = Nanos::MAX;
            self.since = now;
        }
        self.cur = self.cur.min(r);
    }

    pub(super) fn get(&self) -> Nanos {
        self.cur.min(self.prev)
    }
}
