//! Interned class sets: the weights of the mask automaton while it is built.

use std::hash::BuildHasher;

use hashbrown::{DefaultHashBuilder, HashMap, HashTable};
use roaring::RoaringBitmap;

use crate::ids::WeightId;

/// Distinct sets, each stored once; [`WeightId`] 0 is the empty set.
#[derive(Debug, Clone)]
pub struct WeightTable {
    sets: Vec<RoaringBitmap>,
    /// Ids by the hash of their set's serialized form (roaring bitmaps are not `Hash`),
    /// compared by value: no key is stored beside the set.
    index: HashTable<(u64, WeightId)>,
    hasher: DefaultHashBuilder,
    /// Serialization scratch, reused by every lookup.
    scratch: Vec<u8>,
    and_memo: HashMap<(WeightId, WeightId), WeightId>,
}

impl Default for WeightTable {
    fn default() -> Self {
        let mut t = Self {
            sets: Vec::new(),
            index: HashTable::new(),
            hasher: DefaultHashBuilder::default(),
            scratch: Vec::new(),
            and_memo: HashMap::new(),
        };
        t.intern(&RoaringBitmap::new());
        t
    }
}

impl WeightTable {
    /// The id of `w`, adding it on first sight.
    pub fn intern(&mut self, w: &RoaringBitmap) -> WeightId {
        // No run containers (`optimize`): without them a set's containers depend only on
        // its contents, so equal sets serialize, and hash, alike; and roaring's
        // subtraction from run containers is slow (it removes ranges one at a time).
        self.scratch.clear();
        // Writing into a Vec cannot fail.
        w.serialize_into(&mut self.scratch)
            .expect("serialize into memory");
        let h = self.hasher.hash_one(&self.scratch[..]);
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

    /// The set of an id.
    #[inline]
    pub fn get(&self, id: WeightId) -> &RoaringBitmap {
        &self.sets[id.index()]
    }

    /// The id of `a ∩ b` (memoized).
    pub fn and(&mut self, a: WeightId, b: WeightId) -> WeightId {
        let key = if a <= b { (a, b) } else { (b, a) };
        if let Some(&w) = self.and_memo.get(&key) {
            return w;
        }
        let w = self.get(a) & self.get(b);
        let id = self.intern(&w);
        self.and_memo.insert(key, id);
        id
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
