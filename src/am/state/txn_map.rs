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
    slots: Vec<Slot<V>>,
    /// Ids whose place in `slots` was taken when they came.
    overflow: FxHashMap<u32, V>,
    len: usize,
    /// The length at which the table grows: half its size, until it is
    /// `MAX_SLOTS` long (0: no table yet).
    grow_at: usize,
}

/// A place of the table: its id's value, or none (its id then means
/// nothing). (Not an `Option<(u32, V)>`: a pair made whole and written
/// there went through the stack, a request's address copied back with
/// loads wider than the stores that had just written it; a value written
/// into its `Option` is written where it goes.)
struct Slot<V> {
    id: u32,
    v: Option<V>,
}

impl<V> Slot<V> {
    #[inline(always)]
    fn holds(&self, id: u32) -> bool {
        self.v.is_some() && self.id == id
    }
}

impl<V> Default for TxnMap<V> {
    fn default() -> Self {
        TxnMap {
            slots: Vec::new(),
            overflow: FxHashMap::default(),
            len: 0,
            grow_at: 0,
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
        if let Some(s) = self.slots.get(self.place(*id)) {
            if s.holds(*id) {
                return s.v.as_ref();
            }
        }
        if self.overflow.is_empty() {
            return None;
        }
        self.overflow_get(id)
    }

    #[inline]
    pub(in crate::am) fn get_mut(&mut self, id: &u32) -> Option<&mut V> {
        let i = self.place(*id);
        if let Some(s) = self.slots.get(i) {
            if s.holds(*id) {
                return self.slots[i].v.as_mut();
            }
        }
        if self.overflow.is_empty() {
            return None;
        }
        self.overflow.get_mut(id)
    }

    // (The hash map's look-ups out of line: inlined, their probe loops
    // widened the frames of the hot callers, `take_txn_id`'s and the
    // express answer's.)
    #[cold]
    #[inline(never)]
    fn overflow_get(&self, id: &u32) -> Option<&V> {
        self.overflow.get(id)
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
        if self.len >= self.grow_at {
            self.grow();
        }
        let i = self.place(id);
        let s = &mut self.slots[i];
        let old = if s.holds(id) {
            return s.v.replace(make());
        } else if s.v.is_none() && (self.overflow.is_empty() || !self.overflow.contains_key(&id)) {
            // (an id may wait in the hash map with its place free again)
            s.id = id;
            s.v = Some(make());
            None
        } else {
            self.overflow.insert(id, make())
        };
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    /// Inserts the value `make` makes under `id`, which is in use nowhere
    /// (`take_txn_id` took it); the value where it went. One look at the
    /// table: no value to replace, no hash map to search while its place
    /// is free; the table's growth and the hash map out of line (inlined,
    /// they gave the caller a frame of its own for the value).
    #[inline]
    pub(in crate::am) fn insert_new(&mut self, id: u32, make: impl FnOnce() -> V) -> &mut V {
        debug_assert!(!self.contains_key(&id), "id {id} in use");
        let i = self.place(id);
        if self.len < self.grow_at && self.slots[i].v.is_none() {
            self.len += 1;
            let s = &mut self.slots[i];
            s.id = id;
            return s.v.insert(make());
        }
        self.insert_new_slow(id, make())
    }

    #[cold]
    #[inline(never)]
    fn insert_new_slow(&mut self, id: u32, v: V) -> &mut V {
        if self.len >= self.grow_at {
            self.grow();
        }
        self.len += 1;
        let i = self.place(id);
        let s = &mut self.slots[i];
        if s.v.is_none() {
            s.id = id;
            return s.v.insert(v);
        }
        self.overflow.entry(id).insert_entry(v).into_mut()
    }

    /// Removes `id` when `take` makes something of its value (which it
    /// sees where it lies, not moved out); that, or None (nothing
    /// changes). One look at the table.
    #[inline]
    pub(in crate::am) fn remove_if<R>(
        &mut self,
        id: u32,
        take: impl FnOnce(&V) -> Option<R>,
    ) -> Option<R> {
        let i = self.place(id);
        if let Some(s) = self.slots.get_mut(i) {
            if s.id == id {
                if let Some(v) = &s.v {
                    let r = take(v)?;
                    s.v = None;
                    self.len -= 1;
                    return Some(r);
                }
            }
        }
        if self.overflow.is_empty() {
            return None;
        }
        self.overflow_remove_if(id, take)
    }

    #[cold]
    #[inline(never)]
    fn overflow_remove_if<R>(&mut self, id: u32, take: impl FnOnce(&V) -> Option<R>) -> Option<R> {
        let r = take(self.overflow.get(&id)?)?;
        self.overflow.remove(&id);
        self.len -= 1;
        Some(r)
    }

    /// Removes `id`; returns its value.
    #[inline]
    pub(in crate::am) fn remove(&mut self, id: &u32) -> Option<V> {
        let i = self.place(*id);
        let v = match self.slots.get_mut(i) {
            Some(s) if s.holds(*id) => s.v.take(),
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
            Some(s) if s.holds(*id) => {
                s.v = None;
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
        let empty = (0..n).map(|_| Slot { id: 0, v: None }).collect();
        let old = std::mem::replace(&mut self.slots, empty);
        self.grow_at = if n < MAX_SLOTS { n / 2 } else { usize::MAX };
        let spilled = std::mem::take(&mut self.overflow);
        let placed = old.into_iter().filter_map(|s| Some((s.id, s.v?)));
        for (id, v) in placed.chain(spilled) {
            let i = self.place(id);
            let s = &mut self.slots[i];
            if s.v.is_none() {
                s.id = id;
                s.v = Some(v);
            } else {
                self.overflow.insert(id, v);
            }
        }
    }

    pub(in crate::am) fn iter(&self) -> impl Iterator<Item = (&u32, &V)> + '_ {
        self.slots
            .iter()
            .filter_map(|s| s.v.as_ref().map(|v| (&s.id, v)))
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

    /// `insert_new` (an id in use nowhere) and `remove_if` against a hash
    /// map: in the table, in the hash map (a place taken by an id left
    /// waiting), across the table's growth; `remove_if` changes nothing
    /// when its test refuses the value or the id is absent.
    #[test]
    fn insert_new_and_remove_if_behave_as_a_hash_map() {
        let mut m = TxnMap::default();
        let mut h = HashMap::new();
        let mut rng = crate::rng::Rng::new(11);
        let mut next = u32::MAX - 3000;
        for step in 0..100_000u32 {
            let r = rng.next_u64();
            if r.is_multiple_of(2) {
                let id = next;
                next = next.wrapping_add(1);
                if h.contains_key(&id) {
                    continue;
                }
                *m.insert_new(id, || 0u32) = step;
                h.insert(id, step);
            } else {
                // mostly the newest; sometimes an old one or an odd value
                let back = (r >> 8) as u32
                    % if (r >> 20).is_multiple_of(16) {
                        6000
                    } else {
                        40
                    };
                let id = next.wrapping_sub(back);
                let odd = (r >> 30).is_multiple_of(2);
                let want = h.get(&id).filter(|&&v| (v % 2 == 1) == odd).copied();
                let got = m.remove_if(id, |&v| ((v % 2 == 1) == odd).then_some(v));
                assert_eq!(got, want);
                if want.is_some() {
                    h.remove(&id);
                }
            }
            assert_eq!(m.len(), h.len());
        }
        let mut a: Vec<_> = m.iter().map(|(&k, &v)| (k, v)).collect();
        let mut b: Vec<_> = h.iter().map(|(&k, &v)| (k, v)).collect();
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b);
        assert!(!m.overflow.is_empty(), "the hash map was used");
        assert_eq!(m.slots.len(), MAX_SLOTS, "the table grew to its largest");
    }
}
