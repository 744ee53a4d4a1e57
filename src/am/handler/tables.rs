//! The translation table (index -> peer name and tag) and the handler table.

use std::cell::Cell;
use std::net::SocketAddr;

use super::args::HandlerFn;
use super::name::EndpointName;
use crate::error::{Error, Result};
use crate::fxhash::FxHashMap;

/// Special tag values.
pub const TAG_NONE: u64 = 0;
pub const TAG_ALL: u64 = 1;

/// Whether an endpoint tagged `own` takes a message tagged `msg`.
#[inline]
pub(in crate::am) fn tag_accepts(own: u64, msg: u64) -> bool {
    match own {
        TAG_NONE => false,
        TAG_ALL => true,
        t => t == msg,
    }
}

/// AM-2's initial and maximum translation table sizes.
pub const INIT_TRANSLATIONS: usize = 256;
pub const MAX_TRANSLATIONS: usize = 1 << 20;
pub const NUM_HANDLERS: usize = 256;

#[derive(Clone, Debug)]
pub struct Translation {
    pub name: EndpointName,
    pub addr: SocketAddr,
    pub tag: u64,
    /// Requests sent to this peer whose reply has not come yet (credits used).
    pub outstanding: u32,
    /// `addr` is the table's endpoint's own (`TranslationTable::set_own`):
    /// a request to it runs at once (loopback), found without the
    /// address compared per request.
    pub to_self: bool,
}

#[derive(Debug)]
pub struct TranslationTable {
    entries: Vec<Option<Translation>>,
    by_addr: FxHashMap<SocketAddr, u32>,
    /// The last answer of `index_of` (a ping-pong asks for one peer).
    last: Cell<Option<(SocketAddr, u32)>>,
    /// Moves at each map and unmap: an answer of `index_of` kept beside
    /// the generation it was given in holds while the generation does.
    generation: u64,
    /// The address of the endpoint this table belongs to (`set_own`).
    own: Option<SocketAddr>,
}

impl Default for TranslationTable {
    fn default() -> Self {
        TranslationTable {
            entries: vec![None; INIT_TRANSLATIONS],
            by_addr: FxHashMap::default(),
            last: Cell::new(None),
            generation: 0,
            own: None,
        }
    }
}

impl TranslationTable {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The table of the endpoint at `own`.
    pub fn owned_by(own: SocketAddr) -> Self {
        let mut t = TranslationTable::default();
        t.set_own(own);
        t
    }

    /// The endpoint's address is `own` from now on (its start, or the
    /// address a transaction log gave back): each entry's `to_self` says
    /// whether it names it.
    pub fn set_own(&mut self, own: SocketAddr) {
        self.own = Some(own);
        for e in self.entries.iter_mut().flatten() {
            e.to_self = e.addr == own;
        }
    }

    pub fn mapped(&self) -> usize {
        self.entries.iter().filter(|e| e.is_some()).count()
    }

    /// The addresses the table maps other than the endpoint's own, each
    /// once, in the order of their first entries.
    pub fn peers(&self) -> Vec<SocketAddr> {
        let mut v: Vec<(u32, SocketAddr)> = self
            .by_addr
            .iter()
            .filter(|(a, _)| Some(**a) != self.own)
            .map(|(a, i)| (*i, *a))
            .collect();
        v.sort_unstable();
        v.into_iter().map(|(_, a)| a).collect()
    }

    fn slot(&self, index: i64) -> Result<usize> {
        if index < 0 || index as usize >= self.entries.len() {
            return Err(Error::BadArg("translation index out of range"));
        }
        Ok(index as usize)
    }

    pub fn get(&self, index: i64) -> Result<Option<&Translation>> {
        let i = self.slot(index)?;
        Ok(self.entries[i].as_ref())
    }

    pub fn get_mut(&mut self, index: u32) -> Option<&mut Translation> {
        self.entries
            .get_mut(index as usize)
            .and_then(|e| e.as_mut())
    }

    pub fn mapped_entry(&self, index: u32) -> Option<&Translation> {
        self.entries.get(index as usize).and_then(|e| e.as_ref())
    }

    /// Moves at each map and unmap (see `index_of`).
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The index under which a peer address is mapped (lowest when several).
    pub fn index_of(&self, addr: &SocketAddr) -> Option<u32> {
        if let Some((a, i)) = self.last.get() {
            if a == *addr {
                return Some(i);
            }
        }
        let i = self.by_addr.get(addr).copied()?;
        self.last.set(Some((*addr, i)));
        Some(i)
    }

    pub fn map(&mut self, index: i64, name: EndpointName, tag: u64) -> Result<()> {
        let i = self.slot(index)?;
        let addr = name
            .to_addr()
            .ok_or(Error::BadArg("not an endpoint name"))?;
        if self.entries[i].is_some() {
            return Err(Error::Resource("translation entry already mapped"));
        }
        self.entries[i] = Some(Translation {
            name,
            addr,
            tag,
            outstanding: 0,
            to_self: self.own == Some(addr),
        });
        self.last.set(None);
        self.generation += 1;
        let e = self.by_addr.entry(addr).or_insert(i as u32);
        *e = (*e).min(i as u32);
        Ok(())
    }

    pub fn map_any(&mut self, name: EndpointName, tag: u64) -> Result<u32> {
        name.to_addr()
            .ok_or(Error::BadArg("not an endpoint name"))?;
        let i = self
            .entries
            .iter()
            .position(|e| e.is_none())
            .ok_or(Error::Resource("translation table full"))?;
        self.map(i as i64, name, tag)?;
        Ok(i as u32)
    }

    /// Unmaps entry `index`; returns its address when no other entry maps
    /// it (its protocol state may then be freed).
    pub fn unmap(&mut self, index: i64) -> Result<Option<SocketAddr>> {
        let i = self.slot(index)?;
        let old = self.entries[i]
            .take()
            .ok_or(Error::Resource("translation entry not mapped"))?;
        self.last.set(None);
        self.generation += 1;
        if self.by_addr.get(&old.addr) == Some(&(i as u32)) {
            self.by_addr.remove(&old.addr);
            if let Some(j) = self
                .entries
                .iter()
                .position(|e| e.as_ref().is_some_and(|t| t.addr == old.addr))
            {
                self.by_addr.insert(old.addr, j as u32);
                return Ok(None);
            }
            return Ok(Some(old.addr));
        }
        Ok(None)
    }

    /// Resizes; below 256 means 256. Refuses sizes over the maximum and a
    /// shrink that would drop mapped entries.
    pub fn set_len(&mut self, n: i64) -> Result<()> {
        if n < 0 || n as usize > MAX_TRANSLATIONS {
            return Err(Error::Resource("translation table size beyond the maximum"));
        }
        let n = (n as usize).max(INIT_TRANSLATIONS);
        if n < self.entries.len() && self.entries[n..].iter().any(|e| e.is_some()) {
            return Err(Error::Resource("shrinking would drop mapped translations"));
        }
        self.entries.resize(n, None);
        Ok(())
    }
}

/// The 256 handler slots. Slot 0 holds the returned-message handler (None:
/// the default, which reports and aborts as AM-2 prescribes).
pub struct HandlerTable {
    slots: Vec<Option<HandlerFn>>,
}

impl Default for HandlerTable {
    fn default() -> Self {
        HandlerTable {
            slots: vec![None; NUM_HANDLERS],
        }
    }
}

impl HandlerTable {
    pub fn get(&self, h: u8) -> Option<&HandlerFn> {
        self.slots[h as usize].as_ref()
    }

    pub fn set(&mut self, h: u8, f: HandlerFn) {
        self.slots[h as usize] = Some(f);
    }

    /// Installs `f` in the lowest unused slot of 1..255.
    pub fn set_any(&mut self, f: HandlerFn) -> Result<u8> {
        let i = (1..NUM_HANDLERS)
            .find(|&i| self.slots[i].is_none())
            .ok_or(Error::Resource("every handler slot is in use"))?;
        self.slots[i] = Some(f);
        Ok(i as u8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(port: u16) -> EndpointName {
        EndpointName::from_addr(SocketAddr::from(([127, 0, 0, 1], port)))
    }

    #[test]
    fn map_unmap_and_lookup() {
        let mut t = TranslationTable::default();
        assert_eq!(t.len(), 256);
        t.map(5, name(1000), 9).unwrap();
        assert!(matches!(t.map(5, name(1001), 9), Err(Error::Resource(_))));
        assert!(matches!(t.map(256, name(1001), 9), Err(Error::BadArg(_))));
        assert!(matches!(t.map(-1, name(1001), 9), Err(Error::BadArg(_))));
        assert_eq!(t.map_any(name(1001), 1).unwrap(), 0);
        assert_eq!(t.index_of(&name(1000).to_addr().unwrap()), Some(5));
        t.map(2, name(1000), 3).unwrap();
        assert_eq!(t.index_of(&name(1000).to_addr().unwrap()), Some(2));
        t.unmap(2).unwrap();
        assert_eq!(t.index_of(&name(1000).to_addr().unwrap()), Some(5));
        assert!(matches!(t.unmap(2), Err(Error::Resource(_))));
        assert_eq!(t.index_of(&name(1001).to_addr().unwrap()), Some(0));
        assert_eq!(t.index_of(&name(1000).to_addr().unwrap()), Some(5));
        t.unmap(5).unwrap();
        assert_eq!(t.index_of(&name(1000).to_addr().unwrap()), None);
        assert_eq!(t.index_of(&name(1001).to_addr().unwrap()), Some(0));
    }

    /// Each entry says whether it names the table's endpoint, as mapped and
    /// after the endpoint's address changes (a transaction log's).
    #[test]
    fn entries_naming_the_endpoint_itself_say_so() {
        let a = |p| name(p).to_addr().unwrap();
        let mut t = TranslationTable::owned_by(a(1000));
        t.map(0, name(1000), 0).unwrap();
        t.map(1, name(1001), 0).unwrap();
        t.map_any(name(1000), 0).unwrap();
        let to_self = |t: &TranslationTable| -> Vec<bool> {
            (0..3).map(|i| t.mapped_entry(i).unwrap().to_self).collect()
        };
        assert_eq!(to_self(&t), [true, false, true]);
        t.set_own(a(1001));
        assert_eq!(to_self(&t), [false, true, false]);
        t.set_len(4096).unwrap();
        t.map(4095, name(1001), 0).unwrap();
        assert!(t.mapped_entry(4095).unwrap().to_self);
        assert_eq!(to_self(&t), [false, true, false]);
    }

    /// The peers whose rings an endpoint asks for when its table is
    /// complete: each mapped address once, never its own, by first entry.
    #[test]
    fn peers_are_the_other_addresses_each_once_by_first_entry() {
        let a = |p| name(p).to_addr().unwrap();
        let mut t = TranslationTable::owned_by(a(1000));
        t.map(7, name(1002), 0).unwrap();
        t.map(3, name(1000), 0).unwrap();
        t.map(9, name(1001), 0).unwrap();
        t.map(1, name(1001), 0).unwrap();
        assert_eq!(t.peers(), [a(1001), a(1002)]);
        t.unmap(1).unwrap();
        t.unmap(9).unwrap();
        assert_eq!(t.peers(), [a(1002)]);
    }

    #[test]
    fn resize_rules() {
        let mut t = TranslationTable::default();
        t.set_len(10).unwrap();
        assert_eq!(t.len(), 256);
        t.set_len(4096).unwrap();
        t.map(4095, name(7), 0).unwrap();
        assert!(t.set_len(1024).is_err());
        assert!(t.set_len(MAX_TRANSLATIONS as i64 + 1).is_err());
        assert_eq!(t.len(), 4096);
    }
}
