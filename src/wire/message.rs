//! The AM-level description of a message carried in a DATA packet.

pub const MAX_ARGS: usize = 16;

/// AM-2 message categories.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Category {
    Short = 0,
    Medium = 1,
    Long = 2,
}

impl Category {
    pub fn from_u8(v: u8) -> Option<Category> {
        match v {
            0 => Some(Category::Short),
            1 => Some(Category::Medium),
            2 => Some(Category::Long),
            _ => None,
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

/// What a DATA message is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum MsgKind {
    /// A user request or reply that runs a handler.
    User = 0,
    /// The empty reply sent when a request handler did not reply; runs no handler.
    AutoReply = 1,
    /// A message refused by its receiver, sent back with a status.
    Returned = 2,
    /// One-sided remote memory (`am/rma.rs`), request channel: a chunk of a
    /// put, written into a region at the target without a handler.
    Put = 3,
    /// Request channel: a chunk of a get, read from a region at the target.
    Get = 4,
    /// Reply channel: a get chunk's bytes (or its refusal status).
    GetReply = 5,
    /// Reply channel: a put chunk is in the target's memory (or its refusal status).
    RmaDone = 6,
    /// Handler names (`am/names.rs`): "which handler is named X?", on the
    /// request channel; medium, one argument (the query id), the name as
    /// payload. Runs no handler.
    NameQuery = 8,
    /// Handler names: the answer, on the reply channel; short, three
    /// arguments (query id, status, handler index). Runs no handler.
    NameAnswer = 9,
    /// Transactions (`am/txn.rs`): the target has started the handler of
    /// request `txn` (reply channel, short, no arguments). Runs no handler.
    TxnAck = 10,
    /// Transactions: "how far is `txn`?", on the request channel (short,
    /// two arguments: the initiator's incarnation). Answered with a
    /// `TxnAck` (status 1: unknown there) or the kept reply. Runs no handler.
    TxnProbe = 11,
    /// Published endpoint names (`am/services.rs`): "publish this name
    /// under service S" or "which name is published under S?", on the
    /// request channel; medium, two arguments (the query id, the
    /// operation), the service (after the name, for a publish) as payload.
    /// Runs no handler.
    ServiceQuery = 12,
    /// Published names: the answer, on the reply channel; three arguments
    /// (query id, status, a check of the service asked); medium with the
    /// 32-byte name when a look-up found one, else short. Runs no handler.
    ServiceAnswer = 13,
}

impl MsgKind {
    /// Whether a request of this kind keeps its channel's order: no
    /// request sent after it is delivered before it (remote memory's: a
    /// put or get is performed before the handler of any request sent
    /// later runs, ramp.h; names and transaction probes too, their
    /// handling being state a later request may read). A user request
    /// keeps none (AM-2 promises no order between requests): whole in one
    /// packet, it may be delivered ahead of a gap (`Common::unordered`).
    pub fn keeps_order(self) -> bool {
        self != MsgKind::User
    }

    /// Whether the kind is one of remote memory's (performed without a handler).
    pub fn is_rma(self) -> bool {
        matches!(
            self,
            MsgKind::Put | MsgKind::Get | MsgKind::GetReply | MsgKind::RmaDone
        )
    }

    /// A message of the name exchanges: handler names (`am/names.rs`),
    /// published endpoint names (`am/services.rs`).
    pub fn is_name(self) -> bool {
        matches!(
            self,
            MsgKind::NameQuery
                | MsgKind::NameAnswer
                | MsgKind::ServiceQuery
                | MsgKind::ServiceAnswer
        )
    }

    pub fn from_u8(v: u8) -> Option<MsgKind> {
        match v {
            0 => Some(MsgKind::User),
            1 => Some(MsgKind::AutoReply),
            2 => Some(MsgKind::Returned),
            3 => Some(MsgKind::Put),
            4 => Some(MsgKind::Get),
            5 => Some(MsgKind::GetReply),
            6 => Some(MsgKind::RmaDone),
            8 => Some(MsgKind::NameQuery),
            9 => Some(MsgKind::NameAnswer),
            10 => Some(MsgKind::TxnAck),
            11 => Some(MsgKind::TxnProbe),
            12 => Some(MsgKind::ServiceQuery),
            13 => Some(MsgKind::ServiceAnswer),
            _ => None,
        }
    }
}

/// Header fields of one AM message (every fragment carries them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsgMeta {
    pub kind: MsgKind,
    pub category: Category,
    pub handler: u8,
    pub nargs: u8,
    pub args: [u32; MAX_ARGS],
    pub tag: u64,
    pub dest_offset: u64,
    /// Transaction id: chosen by the requester, echoed by the reply.
    pub txn: u32,
    /// For `Returned`: the AM status code; else 0.
    pub status: u8,
    /// For `Returned`: whether the refused message was a request.
    pub returned_request: bool,
    /// Never on the wire (decoding leaves it false): the message came as
    /// an express record of a shared-memory ring (`am/express.rs`).
    pub express: bool,
    /// Never on the wire (decoding leaves it `None`): the long message's
    /// bytes were written into the receiver's segment as they arrived
    /// (`proto::Placement`); its delivered payload is empty.
    pub placed: Option<Placed>,
    /// Never on the wire (decoding leaves it 0): a request delivered ahead
    /// of a gap (`proto/recv.rs`): how many packets before it on its
    /// channel had not been delivered (the start window counts them as
    /// handlers that may start after it: `am/messages/started.rs`). 0 when
    /// delivered in order.
    pub overtook: u8,
}

/// A long message written into its destination as it arrived: its
/// length, and the generation of the segment it went into (the layer
/// above counts its segments: a message placed into one that was replaced
/// since is refused, not run on the new one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placed {
    pub len: u32,
    pub gen: u32,
}

impl MsgMeta {
    /// Whether this message keeps its channel's order: its kind does
    /// (`MsgKind::keeps_order`), or it is a long request, whose bytes land
    /// in the target's segment (placed as they arrive, or copied there
    /// directly when its descriptor is dispatched: `am/rma/xfer_direct.rs`)
    /// before its handler runs: a long request sent after it must not land
    /// its bytes in between (AMX's testbulk: many Xfers to one offset,
    /// each handler checking its own data), nor a request after it run
    /// before those bytes are there.
    #[inline]
    pub fn keeps_order(&self) -> bool {
        self.kind.keeps_order() || self.category == Category::Long
    }

    /// Whether an express record (a short request, reply or automatic
    /// reply through a shared-memory ring, `am/express/lane.rs`) may be
    /// delivered before this message, sent earlier: a user request or
    /// reply, or an automatic reply, that is not long. AM-2 promises no
    /// order among those (am.h, "Order": a short request may run before
    /// requests sent before it; only puts, gets and long requests keep
    /// their place), and an answer frees its own request's credit,
    /// whichever comes first.
    #[inline]
    pub fn may_be_overtaken(&self) -> bool {
        matches!(self.kind, MsgKind::User | MsgKind::AutoReply) && self.category != Category::Long
    }

    pub fn new(kind: MsgKind, category: Category, handler: u8, args: &[u32]) -> MsgMeta {
        let mut a = [0u32; MAX_ARGS];
        let n = args.len().min(MAX_ARGS);
        // (none to copy: no call to memcpy, and the zeroed array written
        // where the header goes, not first on the stack and copied there)
        if n != 0 {
            a[..n].copy_from_slice(&args[..n]);
        }
        MsgMeta {
            kind,
            category,
            handler,
            nargs: n as u8,
            args: a,
            tag: 0,
            dest_offset: 0,
            txn: 0,
            status: 0,
            returned_request: false,
            express: false,
            placed: None,
            overtook: 0,
        }
    }

    pub fn args(&self) -> &[u32] {
        &self.args[..self.nargs as usize]
    }
}
