//! Class → token tables: built over atoms (see `token_atoms`), frozen into one pool of
//! token words that every position's classes index.
//!
//! At build time a position's table lists, per class, the atoms it holds ([`ClassAtoms`]):
//! cheap to build, filter (inhibited boundaries) and intern. Frozen, each class is one
//! range of `(word index, bits)` pairs in a shared pool ([`freeze`]): a class of one atom
//! uses the atom's words, and a class of several atoms gets the merged words of that atom
//! set, computed once however many positions have it. So the mask write stays one pass
//! over the words of the decided classes, as if each class had been built from tokens.
//!
//! Depends on `token_atoms` (input) and `dwa::automaton` (the frozen form).

use hashbrown::HashMap;
use roaring::RoaringBitmap;

use crate::dwa::ClassTokens;

/// Class → atom table of one start position (build time).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ClassAtoms {
    /// `atoms[offsets[c]..offsets[c + 1]]` are class `c`'s atoms.
    offsets: Vec<u32>,
    /// Atom ids, sorted within a class.
    atoms: Vec<u32>,
}

impl ClassAtoms {
    /// Builds the table from per-class atom sets.
    pub fn new(classes: &[RoaringBitmap]) -> Self {
        let mut offsets = Vec::with_capacity(classes.len() + 1);
        let mut atoms: Vec<u32> = Vec::new();
        offsets.push(0);
        for c in classes {
            atoms.extend(c.iter());
            offsets.push(atoms.len() as u32);
        }
        Self { offsets, atoms }
    }

    /// The same classes with only the atoms `keep` accepts (a class may become empty).
    pub fn filtered(&self, keep: impl Fn(u32) -> bool) -> Self {
        let mut offsets = Vec::with_capacity(self.offsets.len());
        let mut atoms: Vec<u32> = Vec::new();
        offsets.push(0);
        for c in self.offsets.windows(2) {
            atoms.extend(
                self.atoms[c[0] as usize..c[1] as usize]
                    .iter()
                    .copied()
                    .filter(|&a| keep(a)),
            );
            offsets.push(atoms.len() as u32);
        }
        Self { offsets, atoms }
    }

    /// The atoms of class `c`.
    pub fn class(&self, c: usize) -> &[u32] {
        &self.atoms[self.offsets[c] as usize..self.offsets[c + 1] as usize]
    }

    /// Number of classes.
    pub fn num_classes(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }
}

/// The words of a token set: `(word index, bits)` for every nonzero 32-bit word, sorted.
fn words_of(tokens: &[u32], out: &mut Vec<(u32, u32)>) {
    let start = out.len();
    for &t in tokens {
        match out[start..].last_mut() {
            Some((w, bits)) if *w == t / 32 => *bits |= 1 << (t % 32),
            _ => out.push((t / 32, 1 << (t % 32))),
        }
    }
}

/// Freezes build-time tables (`(base, table)`: the table's first class in the class
/// space) into run-time ones over one word pool, given each atom's sorted token ids and
/// the vocabulary size. Returns the tables, in order, and the pool.
pub fn freeze(
    tables: &[(u32, ClassAtoms)],
    atoms: &[Vec<u32>],
    vocab_len: usize,
) -> (Vec<ClassTokens>, Vec<(u32, u32)>) {
    let mut pool: Vec<(u32, u32)> = Vec::new();
    let mut atom_range: Vec<(u32, u32)> = Vec::with_capacity(atoms.len());
    for tokens in atoms {
        let lo = pool.len() as u32;
        words_of(tokens, &mut pool);
        atom_range.push((lo, pool.len() as u32));
    }
    // Merging scratch: word values, and which words are nonzero (read back in order).
    let nw = vocab_len.div_ceil(32);
    let mut acc = vec![0u32; nw];
    let mut touched = vec![0u64; nw.div_ceil(64)];
    let mut merged: HashMap<&[u32], (u32, u32)> = HashMap::new();
    let frozen = tables
        .iter()
        .map(|(base, t)| {
            let ranges = (0..t.num_classes())
                .map(|c| match t.class(c) {
                    [] => (0, 0),
                    &[a] => atom_range[a as usize],
                    set => *merged.entry(set).or_insert_with(|| {
                        for &a in set {
                            let (lo, hi) = atom_range[a as usize];
                            for &(w, bits) in &pool[lo as usize..hi as usize] {
                                acc[w as usize] |= bits;
                                touched[w as usize / 64] |= 1 << (w % 64);
                            }
                        }
                        let lo = pool.len() as u32;
                        for (i, word) in touched.iter_mut().enumerate() {
                            while *word != 0 {
                                let w = i * 64 + word.trailing_zeros() as usize;
                                *word &= *word - 1;
                                pool.push((w as u32, std::mem::take(&mut acc[w])));
                            }
                        }
                        (lo, pool.len() as u32)
                    }),
                })
                .collect();
            ClassTokens {
                base: *base,
                ranges,
            }
        })
        .collect();
    (frozen, pool)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    #[test]
    fn frozen_classes_hold_exactly_the_tokens_of_their_atoms() {
        let mut rng = SplitMix64::new(5);
        let vocab_len = 130_000usize;
        for _ in 0..6 {
            // Random disjoint atoms, sparse and dense, dealt to the classes of two tables.
            let mut atoms: Vec<Vec<u32>> = vec![Vec::new(); 1 + rng.below(40)];
            for t in 0..vocab_len as u32 {
                let a = rng.below(atoms.len() + 1);
                if a < atoms.len() {
                    atoms[a].push(t);
                }
            }
            let tables: Vec<(u32, ClassAtoms)> = (0..2)
                .map(|i| {
                    let mut classes = vec![RoaringBitmap::new(); 1 + rng.below(10)];
                    for a in 0..atoms.len() as u32 {
                        let c = rng.below(classes.len() + 1);
                        if c < classes.len() {
                            classes[c].insert(a);
                        }
                    }
                    (i * 11, ClassAtoms::new(&classes))
                })
                .collect();
            let (frozen, pool) = freeze(&tables, &atoms, vocab_len);
            for ((base, t), f) in tables.iter().zip(&frozen) {
                assert_eq!(f.base, *base);
                assert_eq!(f.ranges.len(), t.num_classes());
                for c in 0..t.num_classes() {
                    let mut want: Vec<u32> = t
                        .class(c)
                        .iter()
                        .flat_map(|&a| atoms[a as usize].clone())
                        .collect();
                    want.sort_unstable();
                    let mut want_words = Vec::new();
                    words_of(&want, &mut want_words);
                    let (lo, hi) = f.ranges[c];
                    assert_eq!(pool[lo as usize..hi as usize], want_words[..], "class {c}");
                }
            }
        }
    }

    #[test]
    fn filtering_keeps_exactly_the_accepted_atoms() {
        let classes: Vec<RoaringBitmap> = vec![
            [1u32, 2, 5].into_iter().collect(),
            [3u32].into_iter().collect(),
        ];
        let t = ClassAtoms::new(&classes).filtered(|a| a != 2 && a != 3);
        assert_eq!(t.num_classes(), 2);
        assert_eq!(t.class(0), &[1, 5]);
        assert_eq!(t.class(1), &[] as &[u32]);
    }
}
