//! The retransmission timers restarted on progress (RFC 6298 5.3 and
//! 5.6, as TCP's one timer is): with congestion control on, a packet that
//! waits in a bottleneck's queue behind the rest of the window is not
//! resent while acknowledgements of the packets before it still arrive,
//! nor once a timeout fired for an older one. (Per-packet deadlines set
//! at send time assume the path drains a burst at 500 MB/s,
//! `BURST_NS_PER_BYTE`; a 100 Mbit/s link drains 64 KiB in 5 ms, the
//! least timeout.)

use super::*;

impl SendChannel {
    /// Every packet in flight on its retransmission timeout (not a
    /// reordering timer or probe, not waiting out a timeout's verdict)
    /// waits at least `rto` from `now`.
    pub fn restart_timers(&mut self, now: Instant, rto: Nanos) {
        let at = now.plus(rto);
        for p in self.in_flight.iter_mut() {
            if p.counts() && !p.reorder_timer && p.deadline != DEFERRED && p.deadline < at {
                p.deadline = at;
            }
        }
    }
}

impl SendChannel {
    /// Failover (`proto/path.rs`): every packet in flight and not SACKed
    /// is taken as lost on the path that failed and goes again at the
    /// next opportunity (on the path the peer takes now); no timeout's
    /// verdict is awaited any more. Its sequence number stays: the
    /// receiver drops a copy it has (exactly once). The retry limit
    /// counts afresh on the new path (the failed one's timeouts say
    /// nothing of it; the peer timeout still bounds the whole).
    pub fn resend_all(&mut self) {
        for p in self.in_flight.iter_mut().filter(|p| !p.sacked) {
            p.resend = true;
            p.reorder_timer = false;
            p.retries = 0;
        }
        self.rto_at = None;
        self.frto_sent = 0;
        self.recount();
    }

    /// Path `lane` failed: its packets in flight (not SACKed) go again at
    /// once (on the path the next `transmit` names), their sequence
    /// numbers kept.
    pub fn resend_lane(&mut self, lane: u8) {
        for p in self.in_flight.iter_mut() {
            if p.lane == lane && !p.sacked && !p.resend {
                p.resend = true;
                p.reorder_timer = false;
            }
        }
        self.recount();
    }

    /// Adds the bytes in flight on each path to `flights` (by lane).
    pub fn lane_flights(&self, flights: &mut [u64; super::MAX_LANES]) {
        for p in self.in_flight.iter().filter(|p| p.counts()) {
            flights[p.lane as usize % super::MAX_LANES] += p.flight_len();
        }
    }
}

impl SendChannel {
    /// `restart_timers` of the packets whose last copy took path `lane`
    /// (its progress restarts its own: `path/clock.rs`).
    pub fn restart_lane_timers(&mut self, now: Instant, lane: u8, rto: Nanos) {
        let at = now.plus(rto);
        for p in self.in_flight.iter_mut().filter(|p| p.lane == lane) {
            if p.counts() && !p.reorder_timer && p.deadline != DEFERRED && p.deadline < at {
                p.deadline = at;
            }
        }
    }
}
