//! A message on its way out, and its fragments.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::proto::bufpool::BufPool;
use crate::proto::event::MsgId;
use crate::proto::out_msg::OutMsg;
use crate::wire::{self, Integrity};

use super::GATHER_MIN;

/// A payload as the layer above hands it to `Protocol::send`:
/// its bytes (the layer above may append to them before it sends) and
/// the CRC32C sums of their first blocks (`Protocol::payload_summed`).
#[derive(Debug)]
pub struct Payload {
    pub bytes: Vec<u8>,
    pub(in crate::proto) sums: Vec<u32>,
    pub(in crate::proto) digest: Option<crate::wire::PayloadDigest>,
}

impl From<Vec<u8>> for Payload {
    /// Bytes without sums.
    fn from(bytes: Vec<u8>) -> Payload {
        Payload {
            bytes,
            sums: Vec::new(),
            digest: None,
        }
    }
}

/// How a fragment holds its message. A message that fits one datagram (the
/// usual case) is owned by its only fragment, in a box that is reused when
/// it is acknowledged (no allocation, no reference count); a larger one is
/// shared by its fragments.
#[derive(Debug)]
pub enum MsgRef {
    One(Box<OutMsg>),
    Shared(Arc<OutMsg>),
}

impl MsgRef {
    /// The message shared, for fragments that each hold it.
    fn into_shared(self) -> Arc<OutMsg> {
        match self {
            MsgRef::Shared(a) => a,
            MsgRef::One(b) => Arc::new(*b),
        }
    }
}

impl std::ops::Deref for MsgRef {
    type Target = OutMsg;

    fn deref(&self) -> &OutMsg {
        match self {
            MsgRef::One(b) => b,
            MsgRef::Shared(a) => a,
        }
    }
}

/// Boxes of acknowledged one-fragment messages kept for reuse.
const SPARE_MSGS: usize = 32;

/// Spare boxes and payload buffers of acknowledged messages: the
/// allocations themselves are what is kept (a message moves into a box
/// without allocating; the layer above copies the next payload into a
/// kept buffer, `Protocol::payload_buffer`).
#[derive(Debug, Default)]
pub struct SpareMsgs {
    #[allow(clippy::vec_box)]
    pub(super) boxes: Vec<Box<OutMsg>>,
    pub bufs: BufPool,
    /// Block-sum vectors of acknowledged messages (`OutMsg::sums`).
    pub sums: Vec<Vec<u32>>,
}

impl SpareMsgs {
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.boxes.len()
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.boxes.is_empty()
    }

    /// Bytes kept (boxes and buffers).
    #[cfg(any(test, feature = "testing"))] // inspection for tests and the simulator
    pub fn memory_bytes(&self) -> usize {
        use std::mem::size_of;
        self.boxes.capacity() * size_of::<Box<OutMsg>>()
            + self.boxes.len() * size_of::<OutMsg>()
            + self.bufs.memory_bytes()
            + self.sums.capacity() * size_of::<Vec<u32>>()
            + self.sums.iter().map(|v| v.capacity() * 4).sum::<usize>()
    }

    /// Asserts the bounds (`Protocol::check_invariants`).
    #[cfg(any(test, feature = "testing"))]
    pub fn check_bounds(&self) {
        assert!(
            self.boxes.len() <= SPARE_MSGS && self.sums.len() <= SPARE_MSGS,
            "spare messages: {} boxes, {} sum vectors",
            self.boxes.len(),
            self.sums.len()
        );
        self.bufs.check_bounds();
    }

    /// An empty vector for a message's block sums: a kept one when there
    /// is one.
    #[inline]
    pub fn take_sums(&mut self) -> Vec<u32> {
        self.sums.pop().unwrap_or_default()
    }

    /// Keeps `v` (a message's block sums) for the next message, within the
    /// bound.
    #[inline]
    fn give_sums(&mut self, mut v: Vec<u32>) {
        if v.capacity() != 0 && self.sums.len() < SPARE_MSGS {
            v.clear();
            self.sums.push(v);
        }
    }
}

impl MsgRef {
    /// A one-fragment message, in a spare box when there is one.
    #[inline]
    pub fn one(m: OutMsg, spare: &mut SpareMsgs) -> MsgRef {
        match spare.boxes.pop() {
            Some(mut b) => {
                // field by field: written where they go, not built beside
                // the box and copied in whole
                b.id = m.id;
                b.meta = m.meta;
                b.payload = m.payload;
                b.sums = m.sums;
                b.digest = m.digest;
                MsgRef::One(b)
            }
            None => MsgRef::One(Box::new(m)),
        }
    }

    /// Done with: a one-fragment message's box goes to `spare`, and the
    /// payload buffer of a message no fragment holds any more.
    #[inline]
    pub fn recycle(self, spare: &mut SpareMsgs) {
        match self {
            MsgRef::One(mut b) => {
                spare.bufs.give(std::mem::take(&mut b.payload));
                spare.give_sums(std::mem::take(&mut b.sums));
                b.digest = None;
                if spare.boxes.len() < SPARE_MSGS {
                    spare.boxes.push(b);
                }
            }
            MsgRef::Shared(a) => {
                if let Ok(m) = Arc::try_unwrap(a) {
                    spare.bufs.give(m.payload);
                    spare.give_sums(m.sums);
                }
            }
        }
    }
}

/// A piece of a message that fits one datagram.
#[derive(Debug)]
pub struct Fragment {
    pub msg: MsgRef,
    pub off: u32,
    pub len: u32,
}

impl Fragment {
    /// Whether it is a whole message that keeps no order
    /// (`crate::wire::MsgMeta::keeps_order`): a request that may be delivered ahead of
    /// a gap when nothing ordered before it is unacknowledged.
    #[inline]
    pub fn may_overtake(&self) -> bool {
        self.off == 0 && self.len as usize == self.msg.payload.len() && !self.msg.meta.keeps_order()
    }
}

/// How a message is cut (`ProtoConfig::cut`): a first fragment of at most
/// `lead` bytes (the full header's packet), then fragments of at most
/// `cap` (a later fragment's short header leaves more room); when `head`
/// is not 0, a first one of `head` bytes alone, then one of at most
/// `first` (which fits one datagram beside the head's packet), then
/// fragments of at most `cap`.
#[derive(Clone, Copy, Debug)]
pub struct Cut {
    pub cap: usize,
    pub lead: usize,
    pub head: usize,
    pub first: usize,
}

impl Cut {
    /// Fragments of at most `cap` bytes, the first too, no head of its own.
    pub fn plain(cap: usize) -> Cut {
        Cut {
            cap,
            lead: cap,
            head: 0,
            first: cap,
        }
    }

    /// Whether a fragment of `len` bytes at `off` fits its datagram.
    pub fn fits(&self, off: u32, len: u32) -> bool {
        len as usize <= if off == 0 { self.lead } else { self.cap }
    }
}

/// Queues `msg` as fragments as `cut` says (one, empty, for an empty
/// message).
#[inline]
pub fn push_fragments(q: &mut VecDeque<Fragment>, msg: MsgRef, cut: Cut) {
    let len = msg.payload.len();
    if cut.head > 0 && cut.head < len && cut.head <= cut.lead {
        return push_split(q, msg, cut);
    }
    if len <= cut.lead {
        q.push_back(Fragment {
            msg,
            off: 0,
            len: len as u32,
        });
        return;
    }
    push_split(q, msg, Cut { head: 0, ..cut });
}

/// `push_fragments` of a message in several fragments.
#[inline(never)]
fn push_split(q: &mut VecDeque<Fragment>, msg: MsgRef, cut: Cut) {
    let (cap, head) = (cut.cap, cut.head);
    let shared = msg.into_shared();
    if head > 0 {
        q.push_back(Fragment {
            msg: MsgRef::Shared(shared.clone()),
            off: 0,
            len: head as u32,
        });
    }
    let first = if head > 0 { cut.first } else { cut.lead };
    push_from(q, shared, head, first, cap);
}

/// Queues the bytes of `shared` from `off` on: a fragment of at most
/// `first` bytes, then fragments of at most `cap`.
fn push_from(
    q: &mut VecDeque<Fragment>,
    shared: Arc<OutMsg>,
    mut off: usize,
    first: usize,
    cap: usize,
) {
    let len = shared.payload.len();
    let mut size = first;
    while len - off > size {
        q.push_back(Fragment {
            msg: MsgRef::Shared(shared.clone()),
            off: off as u32,
            len: size as u32,
        });
        off += size;
        size = cap;
    }
    q.push_back(Fragment {
        msg: MsgRef::Shared(shared),
        off: off as u32,
        len: (len - off) as u32,
    });
}

/// Cuts again the fragments of `q` (none numbered yet) when one is longer
/// than its message's cut now allows (the path carries smaller datagrams
/// than when it was cut: `Protocol::path_datagram`): each message from its
/// first fragment in `q` on, as `cut` says when none of it went yet, else
/// in plain fragments from where it stands. A message's fragments in `q`
/// are consecutive and run to its end (they leave from the front).
pub fn recut(q: &mut VecDeque<Fragment>, cut: impl Fn(&OutMsg) -> Cut) {
    if q.iter().all(|f| cut(&f.msg).fits(f.off, f.len)) {
        return;
    }
    let old = std::mem::take(q);
    let mut last: Option<MsgId> = None;
    for f in old {
        if last == Some(f.msg.id) {
            // (the rest of a message already cut again)
            continue;
        }
        last = Some(f.msg.id);
        let c = cut(&f.msg);
        if f.off == 0 {
            push_fragments(q, f.msg, c);
        } else {
            push_rest(q, f.msg, f.off as usize, c.cap);
        }
    }
}

/// Queues the bytes of `msg` from `off` on in fragments of at most `cap`.
fn push_rest(q: &mut VecDeque<Fragment>, msg: MsgRef, off: usize, cap: usize) {
    let shared = msg.into_shared();
    push_from(q, shared, off, cap, cap);
}

/// A large fragment `f`, next to go, cut to end the bundle of small
/// packets the outbox has last for its peer (`room` bytes left in its
/// datagram; `Outbox::open_room`): a message's small last fragment and the
/// next message's first then share one full datagram (a 64 KiB Xfer took
/// two datagrams, the second of ~100 bytes, each costing the kernel its
/// per-datagram work at both ends). The bytes cut off go with the
/// fragment after it in the same message when that is its last and both
/// fit one fragment, or are its last fragment themselves; otherwise
/// (a large fragment follows, which could not take them) nothing is cut.
/// The cut part stays gathered (at least `GATHER_MIN` bytes).
#[inline(never)]
pub(super) fn cut_to_room(
    f: &mut Fragment,
    pending: &mut VecDeque<Fragment>,
    room: usize,
    integ: &Integrity,
    max_datagram: usize,
) {
    let MsgRef::Shared(m) = &f.msg else {
        return;
    };
    // a message's first packet has the full header, a later one the short
    let overhead = |off: u32| {
        let head = match off {
            0 => wire::DATA_HEADER_LEN + 4 * m.meta.nargs as usize,
            _ => wire::MORE_HEADER_LEN,
        };
        head + integ.trailer_len()
    };
    let len = f.len as usize;
    if overhead(f.off) + len <= room || room < overhead(f.off) + GATHER_MIN {
        return;
    }
    let cut = room - overhead(f.off);
    let rest = (len - cut) as u32;
    let end = f.off + f.len;
    match pending.front_mut() {
        Some(n) if matches!(&n.msg, MsgRef::Shared(a) if Arc::ptr_eq(a, m)) && n.off == end => {
            // the next fragment of this message: it takes the rest when
            // it is the last and both fit one fragment
            let last = n.off + n.len == m.payload.len() as u32;
            if !last || overhead(n.off) + (n.len + rest) as usize > max_datagram {
                return;
            }
            n.off -= rest;
            n.len += rest;
        }
        _ => pending.push_front(Fragment {
            msg: MsgRef::Shared(m.clone()),
            off: end - rest,
            len: rest,
        }),
    }
    f.len = cut as u32;
}
