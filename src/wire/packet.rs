//! A packet as parsed (`Packet`, borrowing its payload from the datagram)
//! and the fields every association packet carries (`Common`). Their bytes
//! are in `layout.rs`; `encode.rs` writes them, `decode.rs` reads them.

use super::layout::{ADDRS_LEN, ADDR_LEN, MAX_LISTED};
use super::{AckField, MsgMeta, COOKIE_LEN, NUM_CHANNELS};

/// The address list of an INIT, INIT_ACK or COOKIE_ECHO (`layout.rs`),
/// as checked by the decoder: a count within `MAX_LISTED`, a known family
/// in every entry counted, zeros in every entry past the count. What an
/// address means is the protocol's (`proto::PeerAddr::from_wire`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Addrs<'a>(pub &'a [u8; ADDRS_LEN]);

/// An empty list (no other rail).
pub const NO_ADDRS: [u8; ADDRS_LEN] = [0; ADDRS_LEN];

impl<'a> Addrs<'a> {
    /// An empty list.
    #[cfg(any(test, feature = "testing"))]
    pub const NONE: Addrs<'static> = Addrs(&NO_ADDRS);

    /// The bytes of a list of `entries` (at most `MAX_LISTED`: the rest
    /// are left out).
    pub fn encode(entries: &[[u8; ADDR_LEN]]) -> [u8; ADDRS_LEN] {
        let mut b = NO_ADDRS;
        let n = entries.len().min(MAX_LISTED);
        b[0] = n as u8;
        for (i, e) in entries[..n].iter().enumerate() {
            b[1 + i * ADDR_LEN..][..ADDR_LEN].copy_from_slice(e);
        }
        b
    }

    /// Whether `b` is a well-formed list.
    pub fn valid(b: &[u8; ADDRS_LEN]) -> bool {
        let n = b[0] as usize;
        n <= MAX_LISTED
            && (0..MAX_LISTED).all(|i| {
                let e = &b[1 + i * ADDR_LEN..][..ADDR_LEN];
                if i < n {
                    matches!(e[0], 1 | 4 | 6)
                } else {
                    e.iter().all(|&x| x == 0)
                }
            })
    }

    /// The entries counted.
    pub fn iter(&self) -> impl Iterator<Item = &'a [u8; ADDR_LEN]> + 'a {
        let b: &'a [u8; ADDRS_LEN] = self.0;
        let n = (b[0] as usize).min(MAX_LISTED);
        (0..n).filter_map(move |i| b[1 + i * ADDR_LEN..].first_chunk::<ADDR_LEN>())
    }
}

/// Fields every packet of an association (DATA, ACK, NACK) carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Common {
    /// The receiver's verification tag of the association.
    pub vtag: u64,
    pub channel: u8,
    pub epoch: u16,
    pub seq: u32,
    /// DATA on the request channel (`FLAG_UNORDERED`): whole in this
    /// packet, a user request, and nothing that needs order before it
    /// (remote memory, names, probes) unacknowledged on its channel when
    /// it was first sent: it may be delivered ahead of a gap
    /// (`proto/recv.rs`). False in every other packet.
    pub unordered: bool,
    /// Piggybacked cumulative acks for the reverse channels, indexed by channel.
    pub acks: [AckField; NUM_CHANNELS],
}

/// A parsed, checked packet borrowing its payload from the datagram.
#[derive(Debug, PartialEq, Eq)]
pub enum Packet<'a> {
    Data {
        common: Common,
        meta: MsgMeta,
        msg_len: u32,
        frag_off: u32,
        payload: &'a [u8],
    },
    /// A later fragment of a message (`FLAG_MORE`): its bytes at
    /// `frag_off` (never 0); what the message is, its first packet said.
    More {
        common: Common,
        frag_off: u32,
        payload: &'a [u8],
    },
    Ack {
        common: Common,
        sack: u64,
        /// The sequence number of a DATA that arrived twice since the last
        /// ACK of the channel.
        dup: Option<u32>,
    },
    Nack {
        common: Common,
        /// The receiver will never take this packet in this epoch: the
        /// sender gives the message up (ECONGESTION).
        last: bool,
    },
    /// Opens an association: the initiator's tag (never 0). Its vtag is 0.
    Init { init_tag: u64, addrs: Addrs<'a> },
    /// The answer to an INIT (vtag: the initiator's tag): the responder's
    /// tag and the cookie to echo.
    InitAck {
        vtag: u64,
        resp_tag: u64,
        cookie: &'a [u8; COOKIE_LEN],
        addrs: Addrs<'a>,
    },
    /// The cookie sent back (vtag: the responder's tag).
    CookieEcho {
        vtag: u64,
        cookie: &'a [u8; COOKIE_LEN],
        addrs: Addrs<'a>,
    },
    /// The association is established (vtag: the initiator's tag).
    CookieAck { vtag: u64 },
    /// The COOKIE_ECHO carrying `resp_tag` cannot be opened by the
    /// endpoint it went to (vtag: the initiator's tag its cookie names).
    UnknownCookie { vtag: u64, resp_tag: u64 },
    /// Ends the association whose tag it carries.
    Abort { vtag: u64 },
    /// Asks the peer of an association (vtag: its tag) to answer; `nonce`
    /// comes back in the HEARTBEAT_ACK.
    Heartbeat { vtag: u64, nonce: u64 },
    /// The answer to a HEARTBEAT (vtag: the asker's tag).
    HeartbeatAck { vtag: u64, nonce: u64 },
    /// Asks the peer to free the idle association (vtag: its tag);
    /// `nonce` grows with every SHUTDOWN of the association.
    Shutdown { vtag: u64, nonce: u64 },
    /// The association is freed (vtag: the asker's tag, or its SHUTDOWN's
    /// tag reflected); `nonce` echoes the SHUTDOWN's.
    ShutdownAck { vtag: u64, nonce: u64 },
    /// The sender's packets of the association (vtag: the receiver's tag)
    /// may also come from `port` of its host (never 0).
    Alias { vtag: u64, port: u16 },
    /// `port` is taken as the asker's (vtag: the asker's tag).
    AliasAck { vtag: u64, port: u16 },
}
