//! Interned class sets: the weights of the mask automaton while it is built.

use roaring::RoaringBitmap;

use crate::compile::interner::Interner;
use crate::ids::WeightId;

/// Distinct sets, each stored once; [`WeightId`] 0 is the empty set.
#[derive(Debug, Clone)]
pub struct WeightTable {
    /// Hashed by their fingerprint (roaring bitmaps are not `Hash`), compared by value.
    sets: Interner<RoaringBitmap>,
}

impl Default for WeightTable {
    fn default() -> Self {
        let mut t = Self {
            sets: Interner::default(),
        };
        t.intern(&RoaringBitmap::new());
        t
    }
}

impl WeightTable {
    /// The id of `w`, adding it on first sight.
    pub fn intern(&mut self, w: &RoaringBitmap) -> WeightId {
        let h = self.fingerprint(w);
        let id = match self.sets.find_hashed(w, h) {
            Some(id) => id,
            None => self.sets.push_new(w.clone(), h),
        };
        WeightId::from_u32(id)
    }

    /// The id of `w`, adding it on first sight without a copy: for a set the caller made
    /// and has no further use for (a union, a grown rider set).
    pub fn intern_owned(&mut self, w: RoaringBitmap) -> WeightId {
        let h = self.fingerprint(&w);
        let id = match self.sets.find_hashed(&w, h) {
            Some(id) => id,
            None => self.sets.push_new(w, h),
        };
        WeightId::from_u32(id)
    }

    /// The id of `w` if it is interned. No run containers (`optimize`): without them a
    /// set's containers depend only on its contents, so equal sets compare equal container
    /// by container; and roaring's subtraction from run containers is slow (it removes
    /// ranges one at a time).
    pub fn find(&self, w: &RoaringBitmap) -> Option<WeightId> {
        self.sets
            .find_hashed(w, self.fingerprint(w))
            .map(WeightId::from_u32)
    }

    /// A hash of `w` from its size, smallest and largest element: sets are compared by
    /// value on a match, and hashing a whole set (8 KiB per dense container) cost more
    /// than its comparisons. More elements from each end tell no more sets apart on large
    /// schemas, and reaching them through roaring's iterators costs five times as much.
    fn fingerprint(&self, w: &RoaringBitmap) -> u64 {
        let len = w.len();
        let key = [
            len,
            u64::from(w.min().unwrap_or(0)),
            u64::from(w.max().unwrap_or(0)),
        ];
        self.sets.hash_of(&key)
    }

    /// The set of an id.
    #[inline]
    pub fn get(&self, id: WeightId) -> &RoaringBitmap {
        self.sets.get(id.as_u32())
    }

    /// The sets, by id.
    pub fn into_sets(self) -> Vec<RoaringBitmap> {
        self.sets.into_list()
    }
}

#[cfg(test)]
mod tests {
    use super::WeightTable;
    use crate::ids::WeightId;
    use roaring::RoaringBitmap;

    /// A set gets one id however it is interned (by reference or owned), equal sets meet
    /// whatever their fingerprints share (same size, least and greatest class), and `find`
    /// sees exactly the interned sets.
    #[test]
    fn owned_and_borrowed_interning_agree() {
        let mut t = WeightTable::default();
        let empty = RoaringBitmap::new();
        assert_eq!(t.intern(&empty), WeightId::new(0));
        // Same size, least and greatest element: one fingerprint, different sets.
        let a: RoaringBitmap = [1u32, 5, 9].into_iter().collect();
        let b: RoaringBitmap = [1u32, 6, 9].into_iter().collect();
        let c: RoaringBitmap = (0u32..70_000).step_by(3).collect();
        assert_eq!(t.find(&a), None);
        let ia = t.intern_owned(a.clone());
        let ib = t.intern(&b);
        let ic = t.intern_owned(c.clone());
        assert_eq!([ia, ib, ic], [1, 2, 3].map(WeightId::new));
        assert_eq!(t.intern(&a), ia);
        assert_eq!(t.intern_owned(b.clone()), ib);
        assert_eq!(t.intern(&c), ic);
        assert_eq!(t.intern_owned(RoaringBitmap::new()), WeightId::new(0));
        assert_eq!(
            [t.find(&a), t.find(&b), t.find(&c)],
            [Some(ia), Some(ib), Some(ic)]
        );
        assert_eq!((t.get(ia), t.get(ib), t.get(ic)), (&a, &b, &c));
        assert_eq!(t.find(&[1u32, 7, 9].into_iter().collect()), None);
    }
}
