//! The requests an endpoint waits on, by wire transaction id (`request.rs`'s
//! `outstanding`): a table indexed by the id's low bits, beside a hash map.
//! Ids are taken in sequence, so the ones waiting at once usually fall in
//! places of their own: one look at the table, no hashing. An id whose
//! place is taken (a request left waiting while many newer ones came and
//! went) lives in the hash map; the table grows (to `MAX_SLOTS`) while more
//! than half of it is in use. Iteration order is unspecified, as a hash
//! map's.

use crate::fxhash::FxHashMap;

/// The table's first size and its largest (a power of two each).
const MIN_SLOTS: usize = 32;
const MAX_SLOTS: usize = 4096;

pub(in crate::am) struct TxnMap<V> {
    /// `slots[id & (len - 1)]`: empty until the first insert.
    slots: Vec<Option<(u32, V)>>,
    /// Ids whose place in `slots` was taken when they came.
    overflow: FxHashMap<u32, V>,
    len: usize,
}

impl<V> Default for TxnMap<V> {
    fn default() -> Self {
        TxnMap {
            slots: Vec::new(),
            overflow: FxHashMap::default(),
            len: 0,
        }
    }
}

impl<V> TxnMap<V> {
    pub(in crate::am) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    fn place(&self, id: u32) -> usize {
        id as usize & (self.slots.len().wrapping_sub(1))
    }

    #[inline]
    pub(in crate::am) fn get(&self, id: &u32) -> Option<&V> {
        if let Some(Some((k, v))) = self.slots.get(self.place(*id)) {
            if k == id {
                return Some(v);
            }
        }
        if self.overflow.is_empty() {
            return None;
        }
        self.overflow.get(id)
    }

    #[inline]
    pub(in crate::am) fn get_mut(&mut self, id: &u32) -> Option<&mut V> {
        let i = self.place(*id);
        if let Some(Some((k, _))) = self.slots.get(i) {
            if k == id {
                return self.slots[i].as_mut().map(|(_, v)| v);
            }
        }
        if self.overflow.is_empty() {
            return None;
        }
        self.overflow.get_mut(id)
    }

    #[inline]
    pub(in crate::am) fn contains_key(&self, id: &u32) -> bool {
        self.get(id).is_some()
    }

    /// Inserts `v` under `id`; returns the value `id` had (as a hash map).
    #[inline]
    pub(in crate::am) fn insert(&mut self, id: u32, v: V) -> Option<V> {
        self.insert_with(id, || v)
    }

    /// Inserts the value `make` makes under `id`: made where it goes when
    /// that is the table (a value made first and moved in was copied with
    /// wider loads than the stores that had just written it, a stall);
    /// returns the value `id` had (as a hash map).
    #[inline]
    pub(in crate::am) fn insert_with(&mut self, id: u32, make: impl FnOnce() -> V) -> Option<V> {
        if self.slots.len() < MAX_SLOTS && self.len >= self.slots.len() / 2 {
            self.grow();
        }
        let i = self.place(id);
        let old = match &mut self.slots[i] {
            Some((k, old)) if *k == id => return Some(std::mem::replace(old, make())),
            // (an id may wait in the hash map with its place free again)
            s @ None if self.overflow.is_empty() || !self.overflow.contains_key(&id) => {
                *s = Some((id, make()));
                None
            }
            _ => self.overflow.insert(id, make()),
        };
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    /// Removes `id`; returns its value.
    #[inline]
    pub(in crate::am) fn remove(&mut self, id: &u32) -> Option<V> {
        let i = self.place(*id);
        let v = match self.slots.get_mut(i) {
            Some(s @ Some(_)) if s.as_ref().is_some_and(|(k, _)| k == id) => {
                s.take().map(|(_, v)| v)
            }
            _ if self.overflow.is_empty() => None,
            _ => self.overflow.remove(id),
        };
        if v.is_some() {
            self.len -= 1;
        }
        v
    }

    /// Removes `id` where it lies (its value dropped there, not moved
    /// out first: a request's entry is large); whether it was there.
    #[inline]
    pub(in crate::am) fn discard(&mut self, id: &u32) -> bool {
        let i = self.place(*id);
        let found = match self.slots.get_mut(i) {
            Some(s @ Some(_)) if s.as_ref().is_some_and(|(k, _)| k == id) => {
                *s = None;
                true
            }
            _ if self.overflow.is_empty() => false,
            _ => self.overflow.remove(id).is_some(),
        };
        if found {
            self.len -= 1;
        }
        found
    }

    /// Doubles the table (or makes its first) and places every entry again,
    /// those of the hash map too where their place is free.
    fn grow(&mut self) {
        let n = (self.slots.len() * 2).max(MIN_SLOTS);
        let old = std::mem::replace(&mut self.slots, (0..n).map(|_| None).collect());
        let spilled = std::mem::take(&mut self.overflow);
        for (id, v) in old.into_iter().flatten().chain(spilled) {
            let i = self.place(id);
            match &mut self.slots[i] {
                s @ None => *s = Some((id, v)),
                Some(_) => {
                    self.overflow.insert(id, v);
                }
            }
        }
    }

    pub(in crate::am) fn iter(&self) -> impl Iterator<Item = (&u32, &V)> + '_ {
        self.slots
            .iter()
            .filter_map(|s| s.as_ref().map(|(k, v)| (k, v)))
            .chain(self.overflow.iter())
    }

    pub(in crate::am) fn values(&self) -> impl Iterator<Item = &V> + '_ {
        self.iter().map(|(_, v)| v)
    }

    #[cfg(test)]
    pub(in crate::am) fn keys(&self) -> impl Iterator<Item = &u32> + '_ {
        self.iter().map(|(k, _)| k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Against a hash map: ids in sequence with some left waiting long
    /// (their places taken by newer ones), wrap-around, replacement,
    /// removal and discarding (from the table and from the hash map).
    #[test]
    fn behaves_as_a_hash_map() {
        let mut m = TxnMap::default();
        let mut h = HashMap::new();
        let mut rng = crate::rng::Rng::new(7);
        let mut next = u32::MAX - 5000;
        for step in 0..200_000u32 {
            let r = rng.next_u64();
            match r % 8 {
                0..=3 => {
                    let id = next;
                    next = next.wrapping_add(1);
                    assert_eq!(m.insert(id, step), h.insert(id, step));
                }
                4..=6 => {
                    // answer one of the newest (most are answered soon)
                    let back = (r >> 8) as u32 % 40;
                    let id = next.wrapping_sub(back);
                    if !(r >> 16).is_multiple_of(64) || back > 30 {
                        // removed, or discarded where it lies (half each)
                        if (r >> 24).is_multiple_of(2) {
                            assert_eq!(m.remove(&id), h.remove(&id));
                        } else {
                            assert_eq!(m.discard(&id), h.remove(&id).is_some());
                        }
                    }
                }
                _ => {
                    let id = next.wrapping_sub((r >> 8) as u32 % 5000);
                    assert_eq!(m.get(&id), h.get(&id));
                    assert_eq!(m.contains_key(&id), h.contains_key(&id));
                    if let (Some(a), Some(b)) = (m.get_mut(&id), h.get_mut(&id)) {
                        *a += 1;
                        *b += 1;
                    }
                    if (r >> 20).is_multiple_of(16) {
                        assert_eq!(m.insert(id, 9), h.insert(id, 9));
                    }
                }
            }
            assert_eq!(m.len(), h.len());
        }
        let mut a: Vec<_> = m.iter().map(|(&k, &v)| (k, v)).collect();
        let mut b: Vec<_> = h.iter().map(|(&k, &v)| (k, v)).collect();
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b);
        assert!(m.len() > 100, "some were left waiting: {}", m.len());
        assert!(!m.overflow.is_empty(), "the hash map was used");
        assert_eq!(m.values().count(), m.len());
        assert_eq!(m.keys().count(), m.len());
    }
}
