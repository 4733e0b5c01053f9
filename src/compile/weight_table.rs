//! Interned class sets: the weights of the mask automaton while it is built.

use std::hash::BuildHasher;

use hashbrown::{DefaultHashBuilder, HashTable};
use roaring::RoaringBitmap;

use crate::ids::WeightId;

/// Distinct sets, each stored once; [`WeightId`] 0 is the empty set.
#[derive(Debug, Clone)]
pub struct WeightTable {
    sets: Vec<RoaringBitmap>,
    /// Ids by their set's fingerprint (roaring bitmaps are not `Hash`), compared by
    /// value: no key is stored beside the set.
    index: HashTable<(u64, WeightId)>,
    hasher: DefaultHashBuilder,
}

impl Default for WeightTable {
    fn default() -> Self {
        let mut t = Self {
            sets: Vec::new(),
            index: HashTable::new(),
            hasher: DefaultHashBuilder::default(),
        };
        t.intern(&RoaringBitmap::new());
        t
    }
}

impl WeightTable {
    /// The id of `w`, adding it on first sight.
    pub fn intern(&mut self, w: &RoaringBitmap) -> WeightId {
        // No run containers (`optimize`): without them a set's containers depend only on
        // its contents, so equal sets compare equal container by container; and roaring's
        // subtraction from run containers is slow (it removes ranges one at a time).
        let h = self.fingerprint(w);
        let sets = &self.sets;
        if let Some(&(_, id)) = self
            .index
            .find(h, |&(hh, id)| hh == h && sets[id.index()] == *w)
        {
            return id;
        }
        let id = WeightId::new(self.sets.len());
        self.sets.push(w.clone());
        self.index.insert_unique(h, (h, id), |&(hh, _)| hh);
        id
    }

    /// The id of `w` if it is interned.
    pub fn find(&self, w: &RoaringBitmap) -> Option<WeightId> {
        let h = self.fingerprint(w);
        self.index
            .find(h, |&(hh, id)| hh == h && self.sets[id.index()] == *w)
            .map(|&(_, id)| id)
    }

    /// A hash of `w` from its size, smallest and largest element: sets are compared by
    /// value on a match, and hashing a whole set (8 KiB per dense container) cost more
    /// than its comparisons. More elements from each end did not tell more sets apart
    /// (kb_708: 7,286 comparisons with the 8 smallest and largest, the same with one of
    /// each), and reaching them through roaring's iterators cost 5 times as much.
    fn fingerprint(&self, w: &RoaringBitmap) -> u64 {
        let len = w.len();
        let key = [
            len,
            u64::from(w.min().unwrap_or(0)),
            u64::from(w.max().unwrap_or(0)),
        ];
        self.hasher.hash_one(key)
    }

    /// The set of an id.
    #[inline]
    pub fn get(&self, id: WeightId) -> &RoaringBitmap {
        &self.sets[id.index()]
    }

    /// The number of distinct sets.
    pub fn len(&self) -> usize {
        self.sets.len()
    }

    /// Always false: the empty set is always there.
    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    /// The sets, by id.
    pub fn into_sets(self) -> Vec<RoaringBitmap> {
        self.sets
    }
}
