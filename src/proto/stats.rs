//! Counters kept by the protocol core.

use crate::wire::NUM_CHANNELS;

/// Packet-level counters of one protocol instance (one endpoint).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProtoStats {
    pub packets_sent: u64,
    pub packets_received: u64,
    /// DATA packets retransmitted, by [channel][category].
    pub retransmits: [[u64; 3]; NUM_CHANNELS],
    /// Datagram bytes of DATA packets sent (first transmissions), by [channel][category].
    pub data_bytes_on_wire: [[u64; 3]; NUM_CHANNELS],
    /// Every datagram byte sent, control and retransmissions included.
    pub total_bytes_sent: u64,
    pub acks_sent: u64,
    pub acks_received: u64,
    pub nacks_sent: u64,
    pub nacks_received: u64,
    /// DATA packets that arrived a second time and were dropped.
    pub duplicates: u64,
    /// Datagrams dropped for a bad length or checksum, or a malformed field.
    pub corrupt: u64,
    /// Packets addressed to an earlier incarnation or epoch, dropped.
    pub stale: u64,
    /// DATA packets that arrived ahead of a gap, by channel.
    pub out_of_order: [u64; NUM_CHANNELS],
    pub rtt_min: u64,
    pub rtt_max: u64,
    pub rtt_sum: u64,
    pub rtt_samples: u64,
}

impl ProtoStats {
    pub fn new() -> ProtoStats {
        ProtoStats {
            rtt_min: u64::MAX,
            ..Default::default()
        }
    }

    pub fn rtt_sample(&mut self, ns: u64) {
        self.rtt_min = self.rtt_min.min(ns);
        self.rtt_max = self.rtt_max.max(ns);
        self.rtt_sum += ns;
        self.rtt_samples += 1;
    }
}
