//! Interned class sets: the weights of the mask automaton while it is built.

use hashbrown::HashMap;
use roaring::RoaringBitmap;

use crate::ids::WeightId;

/// Distinct sets, each stored once; [`WeightId`] 0 is the empty set.
#[derive(Debug, Clone)]
pub struct WeightTable {
    sets: Vec<RoaringBitmap>,
    /// By serialized form: roaring bitmaps are not `Hash`.
    index: HashMap<Vec<u8>, WeightId>,
    and_memo: HashMap<(WeightId, WeightId), WeightId>,
}

impl Default for WeightTable {
    fn default() -> Self {
        let mut t = Self {
            sets: Vec::new(),
            index: HashMap::new(),
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
        // its contents, so the serialized form is canonical, and roaring's subtraction
        // from run containers is slow (it removes ranges one at a time).
        let w = w.clone();
        let mut key = Vec::with_capacity(w.serialized_size());
        // Writing into a Vec cannot fail.
        w.serialize_into(&mut key).expect("serialize into memory");
        if let Some(&id) = self.index.get(&key) {
            return id;
        }
        let id = WeightId::new(self.sets.len());
        self.sets.push(w);
        self.index.insert(key, id);
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
