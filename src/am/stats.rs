//! Per-endpoint statistics: AM counters by category plus the protocol's
//! packet counters, with aggregation and a printable report.

use std::fmt::Write;

use crate::proto::ProtoStats;
use crate::wire::{CHANNEL_REPLY, CHANNEL_REQUEST};

/// Counters of one endpoint (or a sum of several). Arrays are indexed by
/// category: short, medium, long. Latencies are in nanoseconds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statistics {
    pub requests_sent: [u64; 3],
    pub replies_sent: [u64; 3],
    pub requests_retransmitted: [u64; 3],
    pub replies_retransmitted: [u64; 3],
    pub replies_squashed: [u64; 3],
    pub requests_received: [u64; 3],
    pub replies_received: [u64; 3],
    pub returned_messages: u64,
    pub out_of_order_requests: u64,
    pub out_of_order_replies: u64,
    pub request_min_latency: u64,
    pub request_max_latency: u64,
    pub request_sum_latency: u64,
    pub request_data_bytes_sent: [u64; 3],
    pub reply_data_bytes_sent: [u64; 3],
    pub request_total_bytes_sent: [u64; 3],
    pub reply_total_bytes_sent: [u64; 3],
    pub total_bytes_sent: u64,
    pub request_latency_samples: u64,
    pub packets_sent: u64,
    pub packets_received: u64,
    pub packets_retransmitted: u64,
    pub acks_sent: u64,
    pub acks_received: u64,
    pub nacks_sent: u64,
    pub nacks_received: u64,
    pub duplicates_dropped: u64,
    pub corrupt_dropped: u64,
    pub stale_dropped: u64,
    pub rtt_min_ns: u64,
    pub rtt_max_ns: u64,
    pub rtt_sum_ns: u64,
    pub rtt_samples: u64,
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
    pub fn initial() -> Statistics {
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
        }
    }

    pub fn record_latency(&mut self, ns: u64) {
        self.request_min_latency = self.request_min_latency.min(ns);
        self.request_max_latency = self.request_max_latency.max(ns);
        self.request_sum_latency += ns;
        self.request_latency_samples += 1;
    }

    /// Adds the protocol's packet counters.
    pub fn merge_proto(&mut self, p: &ProtoStats) {
        let (rq, rp) = (CHANNEL_REQUEST as usize, CHANNEL_REPLY as usize);
        add3(&mut self.requests_retransmitted, &p.retransmits[rq]);
        add3(&mut self.replies_retransmitted, &p.retransmits[rp]);
        add3(
            &mut self.request_total_bytes_sent,
            &p.data_bytes_on_wire[rq],
        );
        add3(&mut self.reply_total_bytes_sent, &p.data_bytes_on_wire[rp]);
        self.total_bytes_sent += p.total_bytes_sent;
        self.out_of_order_requests += p.out_of_order[rq];
        self.out_of_order_replies += p.out_of_order[rp];
        self.packets_sent += p.packets_sent;
        self.packets_received += p.packets_received;
        self.packets_retransmitted += p.retransmits.iter().flatten().sum::<u64>();
        self.acks_sent += p.acks_sent;
        self.acks_received += p.acks_received;
        self.nacks_sent += p.nacks_sent;
        self.nacks_received += p.nacks_received;
        self.duplicates_dropped += p.duplicates;
        self.corrupt_dropped += p.corrupt;
        self.stale_dropped += p.stale;
        self.rtt_min_ns = self.rtt_min_ns.min(p.rtt_min);
        self.rtt_max_ns = self.rtt_max_ns.max(p.rtt_max);
        self.rtt_sum_ns += p.rtt_sum;
        self.rtt_samples += p.rtt_samples;
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
                let _ = writeln!(
                    s,
                    "retransmitted {:.2}% of packets; {} duplicates suppressed (useless retransmissions or network duplicates)",
                    100.0 * retx as f64 / self.packets_sent as f64,
                    self.duplicates_dropped
                );
            }
        }
        s
    }
}
