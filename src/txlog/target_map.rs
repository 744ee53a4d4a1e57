//! The target's transactions in a log's state (`LogState::target`): a hash
//! map, with the entry entered last kept beside it rather than in it.
//!
//! A target that logs writes two records a transaction, and each looks its
//! key up: `AckedStarted` enters the new one and forgets the one before it
//! (the floor its request carried passed it), `Finished` changes the new
//! one. Between round trips that one entry is all the state holds, so it
//! is found without hashing: the map is only used once two or more are
//! live (requests in flight at once, several initiators), and is then
//! what it was before (`benches/txn_cost`: the log's cost per transaction).

use std::ops::Index;

use super::record::TargetKey;
use super::state::TargetPhase;
use crate::fxhash::FxHashMap;

/// By key, at most one phase; a key is either `last` or in `map`, never both.
#[derive(Clone, Debug, Default)]
pub struct TargetMap {
    last: Option<(TargetKey, TargetPhase)>,
    map: FxHashMap<TargetKey, TargetPhase>,
}

impl TargetMap {
    pub fn len(&self) -> usize {
        self.map.len() + usize::from(self.last.is_some())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, k: &TargetKey) -> Option<&TargetPhase> {
        match &self.last {
            Some((lk, v)) if lk == k => Some(v),
            _ if self.map.is_empty() => None,
            _ => self.map.get(k),
        }
    }

    pub fn get_mut(&mut self, k: &TargetKey) -> Option<&mut TargetPhase> {
        match &mut self.last {
            Some((lk, v)) if lk == k => Some(v),
            _ if self.map.is_empty() => None,
            _ => self.map.get_mut(k),
        }
    }

    pub fn contains_key(&self, k: &TargetKey) -> bool {
        self.get(k).is_some()
    }

    /// Takes `k`'s phase out.
    pub fn remove(&mut self, k: &TargetKey) -> Option<TargetPhase> {
        if matches!(&self.last, Some((lk, _)) if lk == k) {
            return self.last.take().map(|(_, v)| v);
        }
        if self.map.is_empty() {
            return None;
        }
        self.map.remove(k)
    }

    /// Enters `k`, which has no phase (checked by the caller).
    pub fn insert_absent(&mut self, k: TargetKey, v: TargetPhase) {
        debug_assert!(!self.contains_key(&k));
        if let Some((lk, lv)) = self.last.replace((k, v)) {
            self.map.insert(lk, lv);
        }
    }

    /// Every entry, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&TargetKey, &TargetPhase)> {
        self.last.iter().map(|(k, v)| (k, v)).chain(self.map.iter())
    }
}

impl Index<&TargetKey> for TargetMap {
    type Output = TargetPhase;

    fn index(&self, k: &TargetKey) -> &TargetPhase {
        self.get(k).expect("no such target transaction")
    }
}

/// The same entries with the same phases, wherever each is kept.
impl PartialEq for TargetMap {
    fn eq(&self, other: &TargetMap) -> bool {
        self.len() == other.len() && self.iter().all(|(k, v)| other.get(k) == Some(v))
    }
}

impl Eq for TargetMap {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::txlog::record::LoggedMsg;

    fn key(txn: u64) -> TargetKey {
        TargetKey {
            peer: "10.0.0.1:7".parse().unwrap(),
            incarnation: 3,
            txn,
        }
    }

    fn reply(h: u8) -> TargetPhase {
        TargetPhase::Finished(Some(LoggedMsg {
            handler: h,
            category: 0,
            args: vec![1, 2],
            dest_offset: 0,
            payload: vec![h; 3],
        }))
    }

    /// The same operations on a plain hash map give the same answers and
    /// the same contents, whichever entry is kept beside the map.
    #[test]
    fn behaves_as_a_hash_map() {
        let mut t = TargetMap::default();
        let mut m: FxHashMap<TargetKey, TargetPhase> = FxHashMap::default();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let k = key(x % 24);
            match x % 7 {
                0 | 1 => assert_eq!(t.remove(&k), m.remove(&k), "step {i}"),
                2 => {
                    if let (Some(a), Some(b)) = (t.get_mut(&k), m.get_mut(&k)) {
                        *a = reply(i as u8);
                        *b = reply(i as u8);
                    }
                }
                3 if !m.contains_key(&k) => {
                    t.insert_absent(k, TargetPhase::Started);
                    m.insert(k, TargetPhase::Started);
                }
                // replaced: out, then in again
                _ => {
                    assert_eq!(t.remove(&k), m.remove(&k), "step {i}");
                    t.insert_absent(k, reply(x as u8));
                    m.insert(k, reply(x as u8));
                }
            }
            assert_eq!(t.len(), m.len(), "step {i}");
            assert_eq!(t.get(&k), m.get(&k), "step {i}");
            assert_eq!(t.contains_key(&key(x % 31)), m.contains_key(&key(x % 31)));
        }
        let mut seen: Vec<_> = t.iter().map(|(k, v)| (*k, v.clone())).collect();
        let mut want: Vec<_> = m.iter().map(|(k, v)| (*k, v.clone())).collect();
        seen.sort_by_key(|(k, _)| *k);
        want.sort_by_key(|(k, _)| *k);
        assert_eq!(seen, want);
    }

    /// Equal when the contents are, wherever each entry is kept.
    #[test]
    fn equality_is_of_contents() {
        let mut a = TargetMap::default();
        let mut b = TargetMap::default();
        a.insert_absent(key(1), TargetPhase::Started);
        a.insert_absent(key(2), reply(4));
        b.insert_absent(key(2), reply(4));
        b.insert_absent(key(1), TargetPhase::Started);
        assert_eq!(a, b);
        *b.get_mut(&key(1)).unwrap() = reply(5);
        assert_ne!(a, b);
        b.remove(&key(1));
        assert_ne!(a, b);
        assert_eq!(a[&key(2)], reply(4));
        assert!(a.remove(&key(2)).is_some() && a.remove(&key(2)).is_none());
        assert_eq!(a.len(), 1);
    }
}
