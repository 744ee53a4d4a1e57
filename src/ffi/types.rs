//! C-visible types of the ABI (`include/am.h`, `include/ramp.h`).
#![allow(non_camel_case_types, non_snake_case)]

use std::os::raw::c_int;

use crate::am::{EndpointName, Statistics};

/// Opaque bundle, named only through `eb_t` handles.
#[repr(C)]
pub struct ramp_bundle {
    _private: [u8; 0],
}

/// Opaque endpoint, named only through `ep_t` handles.
#[repr(C)]
pub struct ramp_endpoint {
    _private: [u8; 0],
}

/// A bundle handle (the bundle's id; never dereferenced).
pub type eb_t = *mut ramp_bundle;
/// An endpoint handle (the endpoint's id; never dereferenced).
pub type ep_t = *mut ramp_endpoint;
pub type tag_t = u64;
pub type handler_t = u8;
/// Only in the C header (handler 0's opcode type); no Rust code uses it.
#[allow(dead_code)]
pub type op_t = c_int;
/// A handler function of any of the AM-2 prototypes.
pub type am_handler_fn_t = Option<unsafe extern "C" fn()>;

/// An endpoint name: 32 opaque bytes, copied by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct en_t {
    pub _opaque: [u64; 4],
}

impl From<EndpointName> for en_t {
    fn from(n: EndpointName) -> en_t {
        let mut o = [0u64; 4];
        for (i, w) in o.iter_mut().enumerate() {
            let mut b = [0u8; 8];
            b.copy_from_slice(&n.0[i * 8..i * 8 + 8]);
            *w = u64::from_ne_bytes(b);
        }
        en_t { _opaque: o }
    }
}

impl From<en_t> for EndpointName {
    fn from(e: en_t) -> EndpointName {
        let mut b = [0u8; 32];
        for (i, w) in e._opaque.iter().enumerate() {
            b[i * 8..i * 8 + 8].copy_from_slice(&w.to_ne_bytes());
        }
        EndpointName(b)
    }
}

/// Message categories, also the index of the `[3]` arrays of `ramp_stats_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(clippy::enum_variant_names)] // the C names
pub enum ramp_category_t {
    ramp_Short = 0,
    ramp_Medium = 1,
    ramp_Long = 2,
    /// Only for C (the length of the `[3]` arrays).
    #[allow(dead_code)]
    ramp_NumCategories = 3,
}

/// Endpoint statistics; the first block is laid out as AMUDP's `amudp_stats_t`.
/// Latencies are in nanoseconds.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ramp_stats_t {
    pub RequestsSent: [u64; 3],
    pub RepliesSent: [u64; 3],
    pub RequestsRetransmitted: [u64; 3],
    pub RepliesRetransmitted: [u64; 3],
    pub RepliesSquashed: [u64; 3],
    pub RequestsReceived: [u64; 3],
    pub RepliesReceived: [u64; 3],
    pub ReturnedMessages: u64,
    pub OutOfOrderRequests: u64,
    pub OutOfOrderReplies: u64,
    pub RequestMinLatency: u64,
    pub RequestMaxLatency: u64,
    pub RequestSumLatency: u64,
    pub RequestDataBytesSent: [u64; 3],
    pub ReplyDataBytesSent: [u64; 3],
    pub RequestTotalBytesSent: [u64; 3],
    pub ReplyTotalBytesSent: [u64; 3],
    pub TotalBytesSent: u64,
    pub RequestLatencySamples: u64,
    pub PacketsSent: u64,
    pub PacketsReceived: u64,
    pub PacketsRetransmitted: u64,
    pub AcksSent: u64,
    pub AcksReceived: u64,
    pub NacksSent: u64,
    pub NacksReceived: u64,
    pub DuplicatesDropped: u64,
    pub CorruptDropped: u64,
    pub StaleDropped: u64,
    pub RttMinNs: u64,
    pub RttMaxNs: u64,
    pub RttSumNs: u64,
    pub RttSamples: u64,
}

/// `ramp_initial_stats`: all zero but the minimums.
pub const INITIAL_STATS: ramp_stats_t = ramp_stats_t {
    RequestsSent: [0; 3],
    RepliesSent: [0; 3],
    RequestsRetransmitted: [0; 3],
    RepliesRetransmitted: [0; 3],
    RepliesSquashed: [0; 3],
    RequestsReceived: [0; 3],
    RepliesReceived: [0; 3],
    ReturnedMessages: 0,
    OutOfOrderRequests: 0,
    OutOfOrderReplies: 0,
    RequestMinLatency: u64::MAX,
    RequestMaxLatency: 0,
    RequestSumLatency: 0,
    RequestDataBytesSent: [0; 3],
    ReplyDataBytesSent: [0; 3],
    RequestTotalBytesSent: [0; 3],
    ReplyTotalBytesSent: [0; 3],
    TotalBytesSent: 0,
    RequestLatencySamples: 0,
    PacketsSent: 0,
    PacketsReceived: 0,
    PacketsRetransmitted: 0,
    AcksSent: 0,
    AcksReceived: 0,
    NacksSent: 0,
    NacksReceived: 0,
    DuplicatesDropped: 0,
    CorruptDropped: 0,
    StaleDropped: 0,
    RttMinNs: u64::MAX,
    RttMaxNs: 0,
    RttSumNs: 0,
    RttSamples: 0,
};

macro_rules! stats_fields {
    ($m:ident) => {
        $m! {
            RequestsSent requests_sent, RepliesSent replies_sent,
            RequestsRetransmitted requests_retransmitted, RepliesRetransmitted replies_retransmitted,
            RepliesSquashed replies_squashed, RequestsReceived requests_received,
            RepliesReceived replies_received, ReturnedMessages returned_messages,
            OutOfOrderRequests out_of_order_requests, OutOfOrderReplies out_of_order_replies,
            RequestMinLatency request_min_latency, RequestMaxLatency request_max_latency,
            RequestSumLatency request_sum_latency, RequestDataBytesSent request_data_bytes_sent,
            ReplyDataBytesSent reply_data_bytes_sent, RequestTotalBytesSent request_total_bytes_sent,
            ReplyTotalBytesSent reply_total_bytes_sent, TotalBytesSent total_bytes_sent,
            RequestLatencySamples request_latency_samples, PacketsSent packets_sent,
            PacketsReceived packets_received, PacketsRetransmitted packets_retransmitted,
            AcksSent acks_sent, AcksReceived acks_received, NacksSent nacks_sent,
            NacksReceived nacks_received, DuplicatesDropped duplicates_dropped,
            CorruptDropped corrupt_dropped, StaleDropped stale_dropped, RttMinNs rtt_min_ns,
            RttMaxNs rtt_max_ns, RttSumNs rtt_sum_ns, RttSamples rtt_samples
        }
    };
}

macro_rules! to_c {
    ($($c:ident $r:ident),*) => {
        impl From<&Statistics> for ramp_stats_t {
            fn from(s: &Statistics) -> ramp_stats_t {
                ramp_stats_t { $($c: s.$r),* }
            }
        }
        impl From<&ramp_stats_t> for Statistics {
            fn from(s: &ramp_stats_t) -> Statistics {
                Statistics { $($r: s.$c),* }
            }
        }
    };
}
stats_fields!(to_c);
