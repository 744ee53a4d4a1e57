//! Memory regions of an endpoint: what one-sided puts and gets (`rma.rs`)
//! may touch at the target. Region 0 is the AM-2 segment; the others are
//! registered by the owner, with access rights, under ids it chooses (never
//! reused while the endpoint lives, so a deregistered id stays invalid).
//!
//! The registry sits in the endpoint's state, under its lock: a put or get
//! is performed entirely under that lock, so once `deregister` returns no
//! byte is ever written into (or read from) the region's memory again.

use std::sync::Arc;

use crate::am::handler::args::SegmentMemory;
use crate::error::{Error, Result, ReturnStatus};
use crate::fxhash::FxHashMap;
use crate::sys::OwnedRegion;

/// Region 0: the endpoint's AM-2 segment.
pub const SEGMENT_REGION: u32 = 0;
/// The id under which a same-host peer asks for the staging area we keep
/// for its long requests (`rma/xfer_staged.rs`); never a region's.
pub(crate) const STAGING_REGION: u32 = u32::MAX;
/// Access rights of a region (or'ed together).
pub const REGION_READ: u32 = 1;
pub const REGION_WRITE: u32 = 2;
/// Regions one endpoint may have registered at once.
pub const MAX_REGIONS: usize = 65536;

pub(in crate::am) struct Region {
    pub(in crate::am) mem: Arc<dyn SegmentMemory>,
    pub(in crate::am) access: u32,
    /// Memory ramp allocated, which same-host peers may map (`rma_shared.rs`).
    pub(in crate::am) shared: Option<Arc<OwnedRegion>>,
}

#[derive(Default)]
pub(in crate::am) struct Regions {
    map: FxHashMap<u32, Region>,
    /// The last id handed out.
    last: u32,
}

impl Regions {
    pub(in crate::am) fn register(
        &mut self,
        mem: Arc<dyn SegmentMemory>,
        access: u32,
    ) -> Result<u32> {
        self.register_with(mem, access, None)
    }

    /// `register` of memory ramp allocated (`rma_shared.rs`).
    pub(in crate::am) fn register_shared(
        &mut self,
        mem: Arc<dyn SegmentMemory>,
        access: u32,
        shared: Arc<OwnedRegion>,
    ) -> Result<u32> {
        self.register_with(mem, access, Some(shared))
    }

    /// Runs `f` on every allocated region's memory.
    pub(in crate::am) fn each_shared(&self, mut f: impl FnMut(&OwnedRegion)) {
        self.map
            .values()
            .filter_map(|r| r.shared.as_ref())
            .for_each(|r| f(r));
    }

    /// An allocated region's memory and access rights.
    pub(in crate::am) fn shared(&self, id: u32) -> Option<(Arc<OwnedRegion>, u32)> {
        let r = self.map.get(&id)?;
        Some((r.shared.clone()?, r.access))
    }

    fn register_with(
        &mut self,
        mem: Arc<dyn SegmentMemory>,
        access: u32,
        shared: Option<Arc<OwnedRegion>>,
    ) -> Result<u32> {
        if access == 0 || access & !(REGION_READ | REGION_WRITE) != 0 {
            return Err(Error::BadArg(
                "access must be RAMP_REGION_READ, RAMP_REGION_WRITE or both",
            ));
        }
        if mem.is_empty() || mem.base() == 0 {
            return Err(Error::BadArg("a region needs a non-NULL base and a length"));
        }
        if mem.base().checked_add(mem.len()).is_none() {
            return Err(Error::BadArg("the region wraps around the address space"));
        }
        if self.map.len() >= MAX_REGIONS {
            return Err(Error::Resource("too many regions registered"));
        }
        if self.last >= STAGING_REGION - 1 {
            return Err(Error::Resource("region ids are used up"));
        }
        self.last += 1;
        self.map.insert(
            self.last,
            Region {
                mem,
                access,
                shared,
            },
        );
        Ok(self.last)
    }

    /// Removes region `id`; its allocated memory if it has (to revoke).
    pub(in crate::am) fn deregister(&mut self, id: u32) -> Result<Option<Arc<OwnedRegion>>> {
        if id == SEGMENT_REGION {
            return Err(Error::BadArg(
                "region 0 is the AM-2 segment: change it with AM_SetSeg",
            ));
        }
        self.map
            .remove(&id)
            .map(|r| r.shared)
            .ok_or(Error::BadArg("no such region"))
    }

    pub(in crate::am) fn len(&self) -> usize {
        self.map.len()
    }

    /// The memory of region `id` if it exists and grants `need`, with the
    /// range `[off, off + len)` inside it; else EBADSEGOFF.
    pub(in crate::am) fn check(
        &self,
        segment: Option<&Arc<dyn SegmentMemory>>,
        id: u32,
        need: u32,
        off: u64,
        len: u64,
    ) -> std::result::Result<Arc<dyn SegmentMemory>, ReturnStatus> {
        let (mem, access) = if id == SEGMENT_REGION {
            match segment {
                Some(s) if !s.is_empty() && s.base() != 0 => (s, REGION_READ | REGION_WRITE),
                _ => return Err(ReturnStatus::BadSegOff),
            }
        } else {
            match self.map.get(&id) {
                Some(r) => (&r.mem, r.access),
                None => return Err(ReturnStatus::BadSegOff),
            }
        };
        if access & need != need {
            return Err(ReturnStatus::BadSegOff);
        }
        match off.checked_add(len) {
            Some(end) if end <= mem.len() as u64 => Ok(mem.clone()),
            _ => Err(ReturnStatus::BadSegOff),
        }
    }

    /// `check` for a whole put (`is_put`: written) or get (read) of
    /// `[off, off + len)` of region `id`, and for its notification word at
    /// `notify` (4 writable bytes of the same region); else EBADSEGOFF.
    /// The one check of a remote-memory operation, chunked or direct.
    pub(in crate::am) fn check_operation(
        &self,
        segment: Option<&Arc<dyn SegmentMemory>>,
        id: u32,
        is_put: bool,
        (off, len): (u64, u64),
        notify: Option<u64>,
    ) -> std::result::Result<Arc<dyn SegmentMemory>, ReturnStatus> {
        let need = if is_put { REGION_WRITE } else { REGION_READ };
        let mem = self.check(segment, id, need, off, len)?;
        if let Some(at) = notify {
            self.check(segment, id, REGION_WRITE, at, 4)?;
        }
        Ok(mem)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::am::handler::args::VecSegment;

    #[test]
    fn ids_are_never_reused_and_rights_and_bounds_are_checked() {
        let mut r = Regions::default();
        let a = r.register(VecSegment::new(100), REGION_READ).unwrap();
        let b = r
            .register(VecSegment::new(10), REGION_READ | REGION_WRITE)
            .unwrap();
        assert_ne!(a, b);
        assert!(r.register(VecSegment::new(10), 0).is_err());
        assert!(r.register(VecSegment::new(10), 4).is_err());
        assert!(r.register(VecSegment::new(0), REGION_READ).is_err());
        assert!(r.check(None, a, REGION_READ, 0, 100).is_ok());
        assert_eq!(
            r.check(None, a, REGION_WRITE, 0, 1).err(),
            Some(ReturnStatus::BadSegOff)
        );
        assert!(r.check(None, a, REGION_READ, 1, 100).is_err());
        assert!(r.check(None, a, REGION_READ, u64::MAX, 2).is_err());
        assert!(r.check(None, SEGMENT_REGION, REGION_READ, 0, 0).is_err());
        r.deregister(a).unwrap();
        assert!(r.deregister(a).is_err());
        assert!(r.deregister(SEGMENT_REGION).is_err());
        assert!(r.check(None, a, REGION_READ, 0, 1).is_err());
        let c = r.register(VecSegment::new(10), REGION_READ).unwrap();
        assert!(c != a && c != b);
        assert_eq!(r.len(), 2);
    }
}
