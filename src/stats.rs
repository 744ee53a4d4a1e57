//! Endpoint statistics: the one type that the protocol core (`proto`) and
//! the AM layer (`am`) count into, that the C ABI hands out as `ramp_stats_t`
//! (`include/ramp.h`; cbindgen reads this file too) and that the Python
//! package reads with ctypes. Below `proto` and `am`: it uses nothing of the
//! crate.
//!
//! Each endpoint keeps two instances, one per layer, and each layer counts
//! only its own fields (see each field's doc); `Endpoint::statistics()` sums
//! the two with `aggregate`, the same sum as over the endpoints of a job. The
//! two sets are disjoint but for `corrupt_dropped`, which both layers count
//! (summed); a field a layer never counts stays at its initial value, the
//! identity of `aggregate` (0, or `u64::MAX` for the minimums).

use std::fmt::Write;

/// Counters of one endpoint (or a sum of several). Arrays are indexed by
/// category: short, medium, long (`ramp_category_t`). Latencies are in
/// nanoseconds. The layout is C's `ramp_stats_t`, whose first block is
/// AMUDP's `amudp_stats_t`: fields are neither reordered nor renamed but
/// for C's PascalCase (`requests_sent` is `RequestsSent`).
/// cbindgen:rename-all=PascalCase
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Statistics {
    /// Requests sent (AM layer).
    pub requests_sent: [u64; 3],
    /// Replies sent (AM layer).
    pub replies_sent: [u64; 3],
    /// DATA packets of requests retransmitted (protocol).
    pub requests_retransmitted: [u64; 3],
    /// DATA packets of replies retransmitted (protocol).
    pub replies_retransmitted: [u64; 3],
    /// Replies whose request was no longer awaited (AM layer).
    pub replies_squashed: [u64; 3],
    /// Requests received (AM layer).
    pub requests_received: [u64; 3],
    /// Replies received (AM layer).
    pub replies_received: [u64; 3],
    /// Messages returned to their sender (AM layer).
    pub returned_messages: u64,
    /// Request DATA packets that arrived ahead of a gap (protocol).
    pub out_of_order_requests: u64,
    /// Reply DATA packets that arrived ahead of a gap (protocol).
    pub out_of_order_replies: u64,
    /// Request latency, send to reply (AM layer).
    pub request_min_latency: u64,
    pub request_max_latency: u64,
    pub request_sum_latency: u64,
    /// Payload bytes of requests sent (AM layer).
    pub request_data_bytes_sent: [u64; 3],
    /// Payload bytes of replies sent (AM layer).
    pub reply_data_bytes_sent: [u64; 3],
    /// Datagram bytes of request DATA packets, first transmissions (protocol).
    pub request_total_bytes_sent: [u64; 3],
    /// Datagram bytes of reply DATA packets, first transmissions (protocol).
    pub reply_total_bytes_sent: [u64; 3],
    /// Every datagram byte sent, control and retransmissions included
    /// (protocol).
    pub total_bytes_sent: u64,
    /// Requests whose latency was sampled (AM layer).
    pub request_latency_samples: u64,
    /// Packets sent (protocol): small ones to one peer share a datagram
    /// (and a long message's last fragment may ride with the next one's
    /// first), so datagrams are fewer.
    pub packets_sent: u64,
    /// Packets received (protocol), each packet of a datagram counted.
    pub packets_received: u64,
    /// DATA packets retransmitted: the sum of `requests_retransmitted` and
    /// `replies_retransmitted` (protocol).
    pub packets_retransmitted: u64,
    /// Acknowledgements sent and received (protocol).
    pub acks_sent: u64,
    pub acks_received: u64,
    /// NACKs sent and received (protocol).
    pub nacks_sent: u64,
    pub nacks_received: u64,
    /// DATA packets that arrived a second time and were dropped (protocol).
    pub duplicates_dropped: u64,
    /// Datagrams dropped for a bad length or checksum or a malformed field
    /// (protocol), and messages of a kind their channel does not carry (AM
    /// layer).
    pub corrupt_dropped: u64,
    /// Packets outside an association (no association with the sender's
    /// address, a wrong verification tag, a refused cookie or ABORT, an
    /// unanswered INIT past the rate limit), or of an older epoch or out of
    /// the window, dropped (protocol); replies and returned messages that
    /// answer no request of ours to their sender, dropped (AM layer).
    pub stale_dropped: u64,
    /// Packet round trip, DATA to its acknowledgement (protocol).
    pub rtt_min_ns: u64,
    pub rtt_max_ns: u64,
    pub rtt_sum_ns: u64,
    pub rtt_samples: u64,
    /// Congestion control (protocol, `proto/congestion.rs`): windows
    /// reduced for congestion, losses taken as random (reduced gently),
    /// windows collapsed by a retransmission timeout, collapses undone
    /// (the timeout was spurious), times pacing held packets back.
    pub cc_reductions: u64,
    pub cc_random_losses: u64,
    pub cc_timeouts: u64,
    pub cc_undone: u64,
    pub cc_paced: u64,
}

impl Default for Statistics {
    fn default() -> Self {
        Statistics::initial()
    }
}

fn add3(a: &mut [u64; 3], b: &[u64; 3]) {
    for i in 0..3 {
        a[i] += b[i];
    }
}

impl Statistics {
    /// The identity of aggregation: all zero, minimums at their largest.
    pub const fn initial() -> Statistics {
        Statistics {
            requests_sent: [0; 3],
            replies_sent: [0; 3],
            requests_retransmitted: [0; 3],
            replies_retransmitted: [0; 3],
            replies_squashed: [0; 3],
            requests_received: [0; 3],
            replies_received: [0; 3],
            returned_messages: 0,
            out_of_order_requests: 0,
            out_of_order_replies: 0,
            request_min_latency: u64::MAX,
            request_max_latency: 0,
            request_sum_latency: 0,
            request_data_bytes_sent: [0; 3],
            reply_data_bytes_sent: [0; 3],
            request_total_bytes_sent: [0; 3],
            reply_total_bytes_sent: [0; 3],
            total_bytes_sent: 0,
            request_latency_samples: 0,
            packets_sent: 0,
            packets_received: 0,
            packets_retransmitted: 0,
            acks_sent: 0,
            acks_received: 0,
            nacks_sent: 0,
            nacks_received: 0,
            duplicates_dropped: 0,
            corrupt_dropped: 0,
            stale_dropped: 0,
            rtt_min_ns: u64::MAX,
            rtt_max_ns: 0,
            rtt_sum_ns: 0,
            rtt_samples: 0,
            cc_reductions: 0,
            cc_random_losses: 0,
            cc_timeouts: 0,
            cc_undone: 0,
            cc_paced: 0,
        }
    }

    /// One request's latency, from its send to its reply (AM layer).
    pub fn record_latency(&mut self, ns: u64) {
        self.request_min_latency = self.request_min_latency.min(ns);
        self.request_max_latency = self.request_max_latency.max(ns);
        self.request_sum_latency += ns;
        self.request_latency_samples += 1;
    }

    /// One packet round trip, from a DATA packet to its acknowledgement
    /// (protocol).
    pub fn record_rtt(&mut self, ns: u64) {
        self.rtt_min_ns = self.rtt_min_ns.min(ns);
        self.rtt_max_ns = self.rtt_max_ns.max(ns);
        self.rtt_sum_ns += ns;
        self.rtt_samples += 1;
    }

    /// Adds `o` into `self` (sums; min and max for the extremes).
    pub fn aggregate(&mut self, o: &Statistics) {
        add3(&mut self.requests_sent, &o.requests_sent);
        add3(&mut self.replies_sent, &o.replies_sent);
        add3(&mut self.requests_retransmitted, &o.requests_retransmitted);
        add3(&mut self.replies_retransmitted, &o.replies_retransmitted);
        add3(&mut self.replies_squashed, &o.replies_squashed);
        add3(&mut self.requests_received, &o.requests_received);
        add3(&mut self.replies_received, &o.replies_received);
        self.returned_messages += o.returned_messages;
        self.out_of_order_requests += o.out_of_order_requests;
        self.out_of_order_replies += o.out_of_order_replies;
        self.request_min_latency = self.request_min_latency.min(o.request_min_latency);
        self.request_max_latency = self.request_max_latency.max(o.request_max_latency);
        self.request_sum_latency += o.request_sum_latency;
        add3(
            &mut self.request_data_bytes_sent,
            &o.request_data_bytes_sent,
        );
        add3(&mut self.reply_data_bytes_sent, &o.reply_data_bytes_sent);
        add3(
            &mut self.request_total_bytes_sent,
            &o.request_total_bytes_sent,
        );
        add3(&mut self.reply_total_bytes_sent, &o.reply_total_bytes_sent);
        self.total_bytes_sent += o.total_bytes_sent;
        self.request_latency_samples += o.request_latency_samples;
        self.packets_sent += o.packets_sent;
        self.packets_received += o.packets_received;
        self.packets_retransmitted += o.packets_retransmitted;
        self.acks_sent += o.acks_sent;
        self.acks_received += o.acks_received;
        self.nacks_sent += o.nacks_sent;
        self.nacks_received += o.nacks_received;
        self.duplicates_dropped += o.duplicates_dropped;
        self.corrupt_dropped += o.corrupt_dropped;
        self.stale_dropped += o.stale_dropped;
        self.rtt_min_ns = self.rtt_min_ns.min(o.rtt_min_ns);
        self.rtt_max_ns = self.rtt_max_ns.max(o.rtt_max_ns);
        self.rtt_sum_ns += o.rtt_sum_ns;
        self.rtt_samples += o.rtt_samples;
        self.cc_reductions += o.cc_reductions;
        self.cc_random_losses += o.cc_random_losses;
        self.cc_timeouts += o.cc_timeouts;
        self.cc_undone += o.cc_undone;
        self.cc_paced += o.cc_paced;
    }

    /// A human-readable report; `global` adds loss and retransmission analysis
    /// meant for statistics aggregated over a whole job.
    pub fn report(&self, global: bool) -> String {
        let mut s = String::new();
        let sum = |a: &[u64; 3]| a.iter().sum::<u64>();
        let cats = |a: &[u64; 3]| format!("{:>10} {:>10} {:>10} {:>11}", a[0], a[1], a[2], sum(a));
        let us = |ns: u64| ns as f64 / 1000.0;
        let _ = writeln!(s, "--- ramp statistics ---");
        let _ = writeln!(
            s,
            "{:<26}{:>10} {:>10} {:>10} {:>11}",
            "", "short", "medium", "long", "total"
        );
        let rows: [(&str, &[u64; 3]); 9] = [
            ("requests sent", &self.requests_sent),
            ("requests received", &self.requests_received),
            ("requests retransmitted", &self.requests_retransmitted),
            ("replies sent", &self.replies_sent),
            ("replies received", &self.replies_received),
            ("replies retransmitted", &self.replies_retransmitted),
            ("replies squashed", &self.replies_squashed),
            ("request data bytes sent", &self.request_data_bytes_sent),
            ("reply data bytes sent", &self.reply_data_bytes_sent),
        ];
        for (name, a) in rows {
            let _ = writeln!(s, "{name:<26}{}", cats(a));
        }
        let _ = writeln!(
            s,
            "{:<26}{}",
            "request bytes on wire",
            cats(&self.request_total_bytes_sent)
        );
        let _ = writeln!(
            s,
            "{:<26}{}",
            "reply bytes on wire",
            cats(&self.reply_total_bytes_sent)
        );
        let _ = writeln!(
            s,
            "total bytes sent: {}   returned messages: {}",
            self.total_bytes_sent, self.returned_messages
        );
        let _ = writeln!(
            s,
            "packets sent: {}  received: {}  retransmitted: {}  acks sent/received: {}/{}  nacks sent/received: {}/{}",
            self.packets_sent, self.packets_received, self.packets_retransmitted,
            self.acks_sent, self.acks_received, self.nacks_sent, self.nacks_received
        );
        let _ =
            writeln!(
            s,
            "dropped: duplicates {}  corrupt {}  stale {}   out of order: requests {} replies {}",
            self.duplicates_dropped, self.corrupt_dropped, self.stale_dropped,
            self.out_of_order_requests, self.out_of_order_replies
        );
        if let Some(mean) = self
            .request_sum_latency
            .checked_div(self.request_latency_samples)
        {
            let _ = writeln!(
                s,
                "request latency (us): min {:.2}  mean {:.2}  max {:.2}  ({} samples)",
                us(self.request_min_latency),
                us(mean),
                us(self.request_max_latency),
                self.request_latency_samples
            );
        }
        if let Some(mean) = self.rtt_sum_ns.checked_div(self.rtt_samples) {
            let _ = writeln!(
                s,
                "packet round trip (us): min {:.2}  mean {:.2}  max {:.2}  ({} samples)",
                us(self.rtt_min_ns),
                us(mean),
                us(self.rtt_max_ns),
                self.rtt_samples
            );
        }
        let _ = writeln!(
            s,
            "congestion: reductions {}  random losses {}  timeouts {} (undone {})  paced {}",
            self.cc_reductions,
            self.cc_random_losses,
            self.cc_timeouts,
            self.cc_undone,
            self.cc_paced
        );
        if global {
            let sent = sum(&self.requests_sent) + sum(&self.replies_sent);
            let recv = sum(&self.requests_received) + sum(&self.replies_received);
            let retx = self.packets_retransmitted;
            let _ = writeln!(
                s,
                "messages sent {sent}, received {recv}, unaccounted {}",
                sent as i128 - recv as i128
            );
            if self.packets_sent > 0 {
                // A copy of a packet the receiver already had arrives as a
                // duplicate: needless (or a network duplicate); the rest
                // replaced a lost packet or answered a lost ACK.
                let pct = |n: u64| 100.0 * n as f64 / self.packets_sent as f64;
                let _ = writeln!(
                    s,
                    "retransmitted {:.2}% of packets: needless {:.2}% ({} duplicates received: useless retransmissions or network duplicates), needed {:.2}%",
                    pct(retx),
                    pct(self.duplicates_dropped),
                    self.duplicates_dropped,
                    pct(retx.saturating_sub(self.duplicates_dropped))
                );
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::Statistics;

    /// `initial()` is the identity of `aggregate`, so the sum of the AM
    /// layer's and the protocol's instances (disjoint fields) is exact,
    /// minimums included.
    #[test]
    fn the_two_layers_sum_exactly() {
        let mut am = Statistics::initial();
        am.requests_sent[1] = 3;
        am.record_latency(500);
        am.record_latency(200);
        am.corrupt_dropped = 1;
        let mut proto = Statistics::initial();
        proto.packets_sent = 9;
        proto.record_rtt(70);
        proto.corrupt_dropped = 2;
        for x in [am, proto] {
            let mut left = Statistics::initial();
            left.aggregate(&x);
            assert_eq!(left, x);
            let mut right = x;
            right.aggregate(&Statistics::initial());
            assert_eq!(right, x);
        }
        let mut both = am;
        both.aggregate(&proto);
        assert_eq!(both.requests_sent, [0, 3, 0]);
        assert_eq!(
            (both.request_min_latency, both.request_max_latency),
            (200, 500)
        );
        assert_eq!(
            (both.request_sum_latency, both.request_latency_samples),
            (700, 2)
        );
        assert_eq!(
            (both.rtt_min_ns, both.rtt_max_ns, both.rtt_samples),
            (70, 70, 1)
        );
        assert_eq!((both.packets_sent, both.corrupt_dropped), (9, 3));
    }

    /// The layout of C's `ramp_stats_t`: 60 `uint64_t`, in order, no padding.
    #[test]
    fn layout_is_the_c_struct() {
        assert_eq!(std::mem::size_of::<Statistics>(), 60 * 8);
        assert_eq!(
            std::mem::offset_of!(Statistics, returned_messages),
            7 * 3 * 8
        );
        assert_eq!(
            std::mem::offset_of!(Statistics, request_data_bytes_sent),
            (21 + 6) * 8
        );
        assert_eq!(
            std::mem::offset_of!(Statistics, total_bytes_sent),
            (27 + 12) * 8
        );
        assert_eq!(std::mem::offset_of!(Statistics, rtt_samples), 54 * 8);
        assert_eq!(std::mem::offset_of!(Statistics, cc_paced), 59 * 8);
    }
}
