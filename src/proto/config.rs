//! Tunables of the reliable protocol. Filled from `crate::config::Config`.

use super::send::Cut;
use crate::time::{Nanos, MICROS, MILLIS};
use crate::wire::{Category, Integrity, MsgKind, MsgMeta};

/// Protocol parameters; every time is in nanoseconds.
#[derive(Clone, Debug)]
pub struct ProtoConfig {
    /// Retransmission timeout before any round trip was measured.
    pub rto_initial: Nanos,
    /// Lower and upper bounds of the retransmission timeout.
    pub rto_min: Nanos,
    pub rto_max: Nanos,
    /// Retransmissions of one packet without any answer before every
    /// unfinished message to the peer fails: a second bound, behind
    /// `peer_timeout`, which decides death.
    pub retry_limit: u32,
    /// Silence from a peer we have something to say to (messages queued or
    /// in flight, a handshake, an unanswered HEARTBEAT) after which it is
    /// dead: every unfinished message to it fails (`PeerUnreachable`), and
    /// so does every new one at once, until a new association succeeds.
    /// HEARTBEATs go after a quarter of it without a word from the peer.
    pub peer_timeout: Nanos,
    /// Quiet time after which an established association with nothing
    /// queued, in flight, held or owed is shut down (SHUTDOWN, answered by
    /// SHUTDOWN_ACK once the peer has nothing either): both ends free the
    /// peer's state; the next message opens a new association. 0: never,
    /// the default here; endpoints take `RAMP_IDLE_TIMEOUT_MS`
    /// (`DEFAULT_IDLE_TIMEOUT` unless set).
    pub idle_timeout: Nanos,
    /// Bytes one peer may make us hold before the application has them:
    /// packets held ahead of a gap and partly reassembled messages, both
    /// channels. An out-of-order packet beyond it is dropped (and counted);
    /// the sender sends it again.
    pub peer_buffer: usize,
    /// How long an acknowledgement may wait for a packet to ride on. A
    /// sender's tail-loss probe waits for it (twice: `RttEstimator`'s
    /// prompt answer) on top of two round trips, so it bounds how fast a
    /// lone lost packet is repaired: short, a few round trips of a LAN
    /// (an ACK rides on a reply or the next request, which come at once;
    /// what waits longer for them goes on its own).
    pub ack_delay: Nanos,
    /// Times a receiver out of buffer refuses (NACKs) one message; the next
    /// refusal is final and the sender gives the message up
    /// (`FailReason::Refused`).
    /// The receiver's value counts.
    pub nack_limit: u32,
    /// How long a sender waits after a NACK before going back.
    pub nack_backoff: Nanos,
    /// Requests the receiver holds delivered but not yet handled; beyond it NACKs.
    pub recv_depth: usize,
    /// Packets in flight per channel (at most 64, the SACK bitmap width).
    pub window: usize,
    /// Largest datagram produced.
    pub max_datagram: usize,
    /// The job's packet MAC key (`RAMP_JOB_KEY`, `RAMP_AUTH`): when set,
    /// every packet carries a MAC instead of the CRC32C (`wire::mac`).
    pub mac: Option<crate::wire::mac::MacKey>,
    /// How handshake packets are sealed and checked: CRC32C, or the job
    /// key's MAC (`Protocol::new` sets it from `mac`); DATA, ACK and NACK
    /// use the association's keys derived from it (`wire::Integrity`).
    pub integrity: Integrity,
    /// How long a cookie this endpoint handed out (INIT_ACK) is honoured.
    pub cookie_lifetime: Nanos,
    /// Unsolicited answers (INIT_ACK, ABORT) per second, all peers
    /// together, and how many may go at once (a token bucket). An INIT is
    /// never smaller than its INIT_ACK and an ABORT is smaller than the
    /// DATA it answers, so this bounds work, not amplification; it must let
    /// a job of 10,000 processes start at once.
    pub unsolicited_rate: u64,
    pub unsolicited_burst: u64,
    /// Congestion control and pacing per path (`congestion.rs`); off
    /// (`RAMP_CC=off`): the packet window alone.
    pub congestion: bool,
    /// Bytes in flight at most toward a peer reached by a same-host ring
    /// whose ends proved one job (`Protocol::set_same_host`), whatever the
    /// congestion window allows: what the ring surely holds
    /// (`net::RING_FLIGHT`, set by the AM layer); a full ring loses them.
    pub same_host_flight: u64,
    /// How often a failed path is probed with a HEARTBEAT at first
    /// (`RAMP_PATH_PROBE_MS`, default 100 ms), doubling after each
    /// unanswered probe to at most 1 s (`path::PROBE_MAX`; 0.5 s while
    /// every path to the peer has failed: a partition), not while its
    /// probes cannot be sent (its link down here: `path/probe.rs`); also
    /// the first interval between heartbeats confirming a new path.
    pub path_probe: Nanos,
    /// Messages of at least this many bytes are striped over every active
    /// path (`RAMP_STRIPE_MIN`, default `DEFAULT_STRIPE_MIN`); smaller
    /// ones take the best path (`path/stripe.rs`).
    pub stripe_min: usize,
}

impl Default for ProtoConfig {
    fn default() -> Self {
        ProtoConfig {
            rto_initial: 20 * MILLIS,
            rto_min: 5 * MILLIS,
            rto_max: 1000 * MILLIS,
            retry_limit: 30,
            peer_timeout: 10_000 * MILLIS,
            idle_timeout: 0,
            peer_buffer: 4 << 20,
            ack_delay: 25 * MICROS,
            nack_limit: 200,
            nack_backoff: MILLIS,
            recv_depth: 1024,
            window: 64,
            max_datagram: 65507,
            mac: None,
            integrity: Integrity::default(),
            cookie_lifetime: 60_000 * MILLIS,
            unsolicited_rate: 20_000,
            unsolicited_burst: 4096,
            congestion: true,
            same_host_flight: u64::MAX,
            path_probe: DEFAULT_PATH_PROBE,
            stripe_min: DEFAULT_STRIPE_MIN,
        }
    }
}

/// `ProtoConfig::path_probe` unless `RAMP_PATH_PROBE_MS` says otherwise.
pub const DEFAULT_PATH_PROBE: Nanos = 100 * MILLIS;

/// `ProtoConfig::stripe_min` unless `RAMP_STRIPE_MIN` says otherwise:
/// measured in the simulator on two equal 100 Mbit/s paths
/// (`stripe_tests::striping_pays_from_the_default_threshold_on`), messages
/// of 32 to 128 KiB (one to three datagrams) gain nothing striped (0.93x
/// to 1.00x), of 256 KiB and more 1.6x.
pub const DEFAULT_STRIPE_MIN: usize = 256 << 10;
/// The largest `RAMP_STRIPE_MIN` (1 GiB: larger is never striped anyway).
pub const MAX_STRIPE_MIN: usize = 1 << 30;

/// An endpoint's idle timeout unless `RAMP_IDLE_TIMEOUT_MS` says otherwise.
pub const DEFAULT_IDLE_TIMEOUT: Nanos = 120_000 * MILLIS;

impl ProtoConfig {
    /// Silence from a busy peer after which a HEARTBEAT goes.
    pub fn heartbeat_interval(&self) -> Nanos {
        (self.peer_timeout / 4).max(1)
    }

    /// How long a dead peer keeps its (small) state, so that new messages
    /// to it fail at once, before its slot is freed.
    pub fn dead_linger(&self) -> Nanos {
        self.peer_timeout.saturating_mul(6)
    }

    /// Bytes of payload one datagram carries in the first packet of a
    /// message with `nargs` arguments (a later one carries more:
    /// `more_capacity_in`).
    pub fn fragment_capacity(&self, nargs: usize) -> usize {
        self.capacity_in(self.max_datagram, nargs)
    }

    /// Bytes of payload a datagram of `max` bytes carries for a message
    /// with `nargs` arguments in its first packet (the full header; at
    /// least 64: see `Protocol::path_datagram`).
    pub fn capacity_in(&self, max: usize, nargs: usize) -> usize {
        let overhead = crate::wire::DATA_HEADER_LEN + 4 * nargs + self.integrity.trailer_len();
        max.saturating_sub(overhead).max(64)
    }

    /// Bytes of payload a datagram of `max` bytes carries in a later
    /// fragment of a message (the short header, `wire::Packet::More`).
    pub fn more_capacity_in(&self, max: usize) -> usize {
        let overhead = crate::wire::MORE_HEADER_LEN + self.integrity.trailer_len();
        max.saturating_sub(overhead).max(64)
    }

    /// How a message of `len` bytes is cut into fragments of datagrams of
    /// at most `max` bytes (its path's: `Paths::datagram`)
    /// (`send::push_fragments`). Under CRC32C a long user message of at
    /// least `PLACED_SPLIT_MIN` bytes (one the receiver may place in its
    /// segment) first sends `PLACED_HEAD` bytes alone: that packet, checked
    /// before its bytes are written, tells the receiver where the message
    /// goes, and the rest then follows in fragments whose own headers decide
    /// nothing, which it checks as it copies them there
    /// (`Protocol::take_deferred`): one pass over their bytes, not two.
    /// Every fragment after the first has the short header
    /// (`more_capacity_in`), and every datagram of a long message is as
    /// long (GSO sends them in one call).
    pub fn cut(&self, meta: &MsgMeta, len: usize, max: usize) -> Cut {
        let lead = self.capacity_in(max, meta.nargs as usize);
        let cap = self.more_capacity_in(max);
        let packet = max.saturating_sub(lead);
        let placeable = matches!(self.integrity, Integrity::Crc32c)
            && meta.kind == MsgKind::User
            && meta.category == Category::Long
            && len >= PLACED_SPLIT_MIN
            && cap >= packet + PLACED_HEAD + 64;
        if !placeable {
            return Cut {
                lead,
                ..Cut::plain(cap)
            };
        }
        // the head's packet and the first fragment after it fill one
        // datagram
        Cut {
            cap,
            lead,
            head: PLACED_HEAD,
            first: cap - packet - PLACED_HEAD,
        }
    }
}

/// The first fragment of a long message cut for placing (`ProtoConfig::cut`).
pub const PLACED_HEAD: usize = 64;
/// Long messages from this long are cut for placing: the rest after the
/// head is worth checking as it is copied (`wire::DEFER_MIN`).
pub const PLACED_SPLIT_MIN: usize = PLACED_HEAD + crate::wire::DEFER_MIN;
