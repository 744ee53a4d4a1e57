//! A message on its way out, and its fragments.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::proto::bufpool::BufPool;
use crate::proto::event::MsgId;
use crate::wire::MsgMeta;

/// One message as handed to `send`.
#[derive(Debug)]
pub struct OutMsg {
    pub id: MsgId,
    pub meta: MsgMeta,
    pub payload: Vec<u8>,
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
                if spare.boxes.len() < SPARE_MSGS {
                    spare.boxes.push(b);
                }
            }
            MsgRef::Shared(a) => {
                if let Ok(m) = Arc::try_unwrap(a) {
                    spare.bufs.give(m.payload);
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

/// Queues `msg` as fragments of at most `cap` bytes (one, empty, for an
/// empty message).
#[inline]
pub fn push_fragments(q: &mut VecDeque<Fragment>, msg: MsgRef, cap: usize) {
    let len = msg.payload.len();
    if len <= cap {
        q.push_back(Fragment {
            msg,
            off: 0,
            len: len as u32,
        });
        return;
    }
    push_split(q, msg, cap);
}

/// `push_fragments` of a message longer than `cap`.
#[inline(never)]
fn push_split(q: &mut VecDeque<Fragment>, msg: MsgRef, cap: usize) {
    let len = msg.payload.len();
    let shared = match msg {
        MsgRef::Shared(a) => a,
        MsgRef::One(b) => Arc::new(*b),
    };
    let mut off = 0usize;
    while len - off > cap {
        q.push_back(Fragment {
            msg: MsgRef::Shared(shared.clone()),
            off: off as u32,
            len: cap as u32,
        });
        off += cap;
    }
    q.push_back(Fragment {
        msg: MsgRef::Shared(shared),
        off: off as u32,
        len: (len - off) as u32,
    });
}
