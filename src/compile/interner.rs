//! Values stored once each, numbered in order of first appearance: the one interner the
//! builders share (trie shapes, class → atom tables, the automaton's class sets).
//!
//! Each value's hash is kept beside it, so growing the index rehashes from the stored
//! hashes, never from the values (a class table lists thousands of atoms), and a caller
//! may hash on another thread ([`Interner::intern_hashed`]) or with a hash of its own
//! (class sets are hashed by a fingerprint: roaring bitmaps are not `Hash`). Ids are
//! `u32`; a wrapper gives them its own newtype.

use std::hash::{BuildHasher, Hash};

use hashbrown::hash_table::Entry;
use hashbrown::{DefaultHashBuilder, HashTable};

/// Distinct values with their ids (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct Interner<T> {
    list: Vec<T>,
    hashes: Vec<u64>,
    /// Ids into `list`, by the value's hash.
    index: HashTable<u32>,
    hasher: DefaultHashBuilder,
}

impl<T> Default for Interner<T> {
    fn default() -> Self {
        Self {
            list: Vec::new(),
            hashes: Vec::new(),
            index: HashTable::new(),
            hasher: DefaultHashBuilder::default(),
        }
    }
}

impl<T> Interner<T> {
    /// The value of an id.
    #[inline]
    pub(crate) fn get(&self, id: u32) -> &T {
        &self.list[id as usize]
    }

    /// The values, by id.
    pub(crate) fn list(&self) -> &[T] {
        &self.list
    }

    /// The values, by id, without the index.
    pub(crate) fn into_list(self) -> Vec<T> {
        self.list
    }

    /// A hash made by this interner's hasher, for callers that hash a stand-in of the
    /// value (a fingerprint).
    pub(crate) fn hash_of<K: Hash>(&self, k: &K) -> u64 {
        self.hasher.hash_one(k)
    }
}

impl<T: PartialEq> Interner<T> {
    /// The id of `t`, whose hash is `h`, if it is interned.
    pub(crate) fn find_hashed(&self, t: &T, h: u64) -> Option<u32> {
        let (list, hashes) = (&self.list, &self.hashes);
        self.index
            .find(h, |&i| hashes[i as usize] == h && list[i as usize] == *t)
            .copied()
    }

    /// Adds `t`, whose hash is `h` and which [`Interner::find_hashed`] just did not find:
    /// one probe where [`Interner::intern_hashed`] would compare again.
    pub(crate) fn push_new(&mut self, t: T, h: u64) -> u32 {
        let id = self.list.len() as u32;
        self.list.push(t);
        self.hashes.push(h);
        let hashes = &self.hashes;
        self.index.insert_unique(h, id, |&i| hashes[i as usize]);
        id
    }

    /// Interns `t`, whose hash is `h` (every caller of one interner hashes alike).
    pub(crate) fn intern_hashed(&mut self, t: T, h: u64) -> u32 {
        let Self {
            list,
            hashes,
            index,
            ..
        } = self;
        match index.entry(
            h,
            |&i| hashes[i as usize] == h && list[i as usize] == t,
            |&i| hashes[i as usize],
        ) {
            Entry::Occupied(e) => *e.get(),
            Entry::Vacant(e) => {
                let id = list.len() as u32;
                list.push(t);
                hashes.push(h);
                e.insert(id);
                id
            }
        }
    }
}

impl<T: Hash + PartialEq> Interner<T> {
    /// The hash [`Interner::intern_hashed`] wants for `t` (callers may compute it on
    /// other threads).
    pub(crate) fn hash(&self, t: &T) -> u64 {
        self.hasher.hash_one(t)
    }

    /// Interns `t`.
    pub(crate) fn intern(&mut self, t: T) -> u32 {
        let h = self.hash(&t);
        self.intern_hashed(t, h)
    }
}

#[cfg(test)]
mod tests {
    use super::Interner;

    /// Ids follow first appearance, equal values share one, and a value found by its
    /// hash is the one interned under it.
    #[test]
    fn ids_follow_first_appearance() {
        let mut i: Interner<Vec<u32>> = Interner::default();
        assert_eq!(i.intern(vec![3, 1]), 0);
        assert_eq!(i.intern(vec![2]), 1);
        assert_eq!(i.intern(vec![3, 1]), 0);
        let h = i.hash(&vec![2]);
        assert_eq!(i.find_hashed(&vec![2], h), Some(1));
        assert_eq!(i.find_hashed(&vec![9], i.hash(&vec![9])), None);
        // Many values, so the index grows and rehashes from the stored hashes.
        for k in 0..1000u32 {
            assert_eq!(i.intern(vec![k, k]), k + 2);
        }
        assert_eq!(i.intern(vec![500, 500]), 502);
        assert_eq!(i.get(1), &vec![2]);
        assert_eq!(i.list().len(), 1002);
    }
}
