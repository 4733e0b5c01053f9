//! Class → token tables: built over atoms (see `token_atoms`), frozen into one pool of
//! token words that every position's classes index.
//!
//! At build time a position's table lists, per class, the atoms it holds ([`ClassAtoms`]):
//! cheap to build, filter (inhibited boundaries) and intern. Frozen, each class is one
//! range of a shared word pool ([`freeze`]): a class of one atom uses the atom's words,
//! and a class of several atoms gets the merged words of that atom set, computed once
//! however many positions have it, or, when a large set is a few atoms from one stored
//! before, patches on that one's words. So the mask write stays one pass over the words
//! of the decided classes, as if each class had been built from tokens.
//!
//! Depends on `token_atoms` (input) and `dwa::automaton` (the frozen form).

use hashbrown::HashMap;
use smallvec::SmallVec;

use crate::compile::dwa::token_atoms::NO_ATOM;
use crate::dwa::word_pool::WordPool;
use crate::dwa::ClassTokens;
use crate::rng::SplitMix64;

/// Class → atom table of one start position (build time).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ClassAtoms {
    /// `atoms[offsets[c]..offsets[c + 1]]` are class `c`'s atoms.
    offsets: Vec<u32>,
    /// Atom ids, sorted within a class.
    atoms: Vec<u32>,
}

impl ClassAtoms {
    /// Builds the table from per-class atom sets (bitmaps, or sorted lists).
    pub fn new<'c, C>(classes: &'c [C]) -> Self
    where
        &'c C: IntoIterator,
        <&'c C as IntoIterator>::Item: std::borrow::Borrow<u32>,
    {
        use std::borrow::Borrow;
        let mut offsets = Vec::with_capacity(classes.len() + 1);
        let mut atoms: Vec<u32> = Vec::new();
        offsets.push(0);
        for c in classes {
            atoms.extend(c.into_iter().map(|a| *a.borrow()));
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

/// Each atom's tokens as mask words `(word index, bits)` (bit `t % 32` of word `t / 32`),
/// nonzero and in word order: what [`freeze`] merges. It needs only the atoms, not the
/// tables, so the build makes it while the automaton's class sets are made (with the
/// token → atom map, three passes over the vocabulary: about a millisecond for 128K
/// tokens).
pub struct AtomWords {
    /// Tokens in the vocabulary.
    vocab_len: usize,
    /// Atom `a`'s words are `words[range[a].0..range[a].1]`.
    range: Vec<(u32, u32)>,
    words: Vec<(u32, u32)>,
}

impl AtomWords {
    /// The words of every atom, given each token's atom (`NO_ATOM` for none) and the
    /// number of atoms.
    pub fn new(atom_of_token: &[u32], num_atoms: usize) -> Self {
        // One pass over the tokens in id order to count, one to fill.
        let mut last_word = vec![u32::MAX; num_atoms];
        let mut count = vec![0u32; num_atoms];
        for (t, &a) in atom_of_token.iter().enumerate() {
            if a != NO_ATOM && last_word[a as usize] != t as u32 / 32 {
                last_word[a as usize] = t as u32 / 32;
                count[a as usize] += 1;
            }
        }
        let mut range: Vec<(u32, u32)> = Vec::with_capacity(num_atoms);
        let mut end = 0u32;
        for &c in &count {
            range.push((end, end));
            end += c;
        }
        let mut words: Vec<(u32, u32)> = vec![(u32::MAX, 0); end as usize];
        for (t, &a) in atom_of_token.iter().enumerate() {
            if a == NO_ATOM {
                continue;
            }
            let (w, bit) = (t as u32 / 32, 1u32 << (t % 32));
            let r = &mut range[a as usize];
            if r.1 > r.0 && words[r.1 as usize - 1].0 == w {
                words[r.1 as usize - 1].1 |= bit;
            } else {
                words[r.1 as usize] = (w, bit);
                r.1 += 1;
            }
        }
        Self {
            vocab_len: atom_of_token.len(),
            range,
            words,
        }
    }

    /// Atom `a`'s words.
    fn of(&self, a: u32) -> &[(u32, u32)] {
        let (lo, hi) = self.range[a as usize];
        &self.words[lo as usize..hi as usize]
    }

    /// Number of atoms.
    fn len(&self) -> usize {
        self.range.len()
    }
}

/// Freezes build-time tables (`(base, table)`: the table's first class in the class
/// space, and its index in `list`) into run-time ones over one word pool, given each
/// atom's token words. Returns the tables, in order, and the pool.
///
/// A table stands at many bases (a large schema has thousands of tables at several
/// bases each), so tables are named, not copied, and each is read once: its ranges depend
/// on its classes alone.
pub fn freeze(
    tables: &[(u32, u32)],
    list: &[ClassAtoms],
    atoms: &AtomWords,
) -> (Vec<ClassTokens>, WordPool) {
    let num_atoms = atoms.len();
    let atom_slice = |a: u32| atoms.of(a);
    // The pool holds what classes use: an atom's words when it is a class on its own,
    // an atom set's merged words when they are one class (each once).
    let mut pool = WordPool::new();
    let empty = pool.push(&[]);
    let mut single: Vec<Option<(u32, u32)>> = vec![None; num_atoms];
    // Merging scratch: word values, which words are nonzero (read back in order), and
    // the merged words.
    let nw = atoms.vocab_len.div_ceil(32);
    let mut merge = Merger {
        acc: vec![0u32; nw],
        touched: vec![0u64; nw.div_ceil(64)],
        words: Vec::new(),
        base: &[],
        base_words: Vec::new(),
    };
    let mut merged: HashMap<&[u32], (u32, u32)> = HashMap::new();
    let mut patch = Patcher::new(num_atoms);
    let mut ranges_of: Vec<Option<Vec<(u32, u32)>>> = vec![None; list.len()];
    let frozen = tables
        .iter()
        .map(|&(base, i)| {
            let t = &list[i as usize];
            let ranges = ranges_of[i as usize].get_or_insert_with(|| {
                (0..t.num_classes())
                    .map(|c| match t.class(c) {
                        [] => empty,
                        &[a] => *single[a as usize].get_or_insert_with(|| pool.push(atom_slice(a))),
                        set => *merged.entry(set).or_insert_with(|| {
                            let slot = (c as u32, t.num_classes() as u32);
                            let sketch = match patch.try_patch(
                                set,
                                slot,
                                &atom_slice,
                                &mut merge,
                                &mut pool,
                            ) {
                                Patch::Patched(r) => return r,
                                Patch::Whole(sketch) => sketch,
                            };
                            let words = merge.words_of(set, &atom_slice);
                            let r = pool.push(words);
                            if let Some(sketch) = &sketch {
                                patch.offer(set, sketch, slot, words, r);
                            }
                            r
                        }),
                    })
                    .collect()
            });
            ClassTokens {
                base,
                ranges: ranges.clone(),
            }
        })
        .collect();
    (frozen, pool)
}

/// Stores large atom sets as patches on a close one stored whole ([`WordPool::
/// push_patched`]). Positions inside strings have classes of most of the vocabulary that
/// differ by a few atoms from a class of an earlier position, and each stored whole
/// costs its thousands of words again (tens of MB of pool on such schemas). The close
/// set is rarely the last one stored whole: it is usually the same class (by number) of
/// an earlier table with as many classes, tens of tables back (that class of the tables
/// between was patched on it), and not always the latest such. So the candidates are
/// the latest few bases in the same slot (class number, table's class count), in the
/// same class number, the latest bases holding the set's first and middle atoms, and the
/// latest few sharing a band of the set's [`Sketch`].
struct Patcher<'t> {
    /// The sets stored whole that may be patched: atoms and dense range.
    bases: Vec<(&'t [u32], (u32, u32))>,
    /// Per atom, the latest base holding it (`u32::MAX`: none).
    owner: Vec<u32>,
    /// The latest bases per slot, and per class number (up to [`PATCH_RECENT`]).
    by_slot: HashMap<(u32, u32), SmallVec<[u32; PATCH_RECENT]>>,
    by_class: HashMap<u32, SmallVec<[u32; PATCH_RECENT]>>,
    /// The latest bases per band of their sketch (band number, band value).
    by_band: HashMap<(u8, u64), SmallVec<[u32; PATCH_RECENT]>>,
    /// Each atom's hash, for sketches (hashed once: a large schema's sketches read
    /// millions of atoms).
    atom_hash: Vec<u64>,
}

/// Minhashes per band of a [`Sketch`]: two sets whose atoms agree in proportion `j`
/// (Jaccard) share a band with probability about `j^2`, so near-copies (`j` > 0.99)
/// share every band, and a set a third apart shares each with probability under a half
/// (each band's bucket keeps only its latest bases, so far sets crowd it out less).
const SKETCH_ROWS: usize = 2;

/// Bands of a [`Sketch`].
const SKETCH_BANDS: usize = 4;

/// Bins of a [`Sketch`], a power of two: a hash's top bits pick its bin.
const SKETCH_BINS: usize = SKETCH_BANDS * SKETCH_ROWS;
const _: () = assert!(SKETCH_BINS.is_power_of_two() && SKETCH_BINS > 1);

/// What [`Patcher::try_patch`] made of a set.
enum Patch {
    /// Stored as patches on a base, at this range.
    Patched((u32, u32)),
    /// To be stored whole, with its sketch when it is large enough to be a base (`None`:
    /// its atoms' words add up to less than [`PATCH_MIN_WORDS`]).
    Whole(Option<Sketch>),
}

/// A minhash sketch of a large atom set, to find a close base among thousands.
///
/// Why: the other candidates miss near-copies when large sets of several far-apart
/// families alternate (more than half of such sets can have an earlier base within 1%
/// of their words that those candidates miss). One hash per atom, split into [`SKETCH_BINS`] bins by hash
/// (one-permutation minhash), each bin's least hash kept; a fixed hash ([`SplitMix64`])
/// so the pool does not depend on the process.
struct Sketch([u64; SKETCH_BANDS]);

impl Sketch {
    /// The sketch of `set`, given each atom's hash.
    fn of(set: &[u32], atom_hash: &[u64]) -> Self {
        const SHIFT: u32 = 64 - SKETCH_BINS.trailing_zeros();
        let mut mins = [u64::MAX; SKETCH_BINS];
        for &a in set {
            let h = atom_hash[a as usize];
            let bin = (h >> SHIFT) as usize;
            mins[bin] = mins[bin].min(h);
        }
        let mut bands = [0u64; SKETCH_BANDS];
        for (band, rows) in bands.iter_mut().zip(mins.chunks(SKETCH_ROWS)) {
            *band = rows
                .iter()
                .fold(0u64, |acc, &m| SplitMix64::new(acc ^ m).next_u64());
        }
        Self(bands)
    }

    /// The index keys of the sketch's bands.
    fn keys(&self) -> impl Iterator<Item = (u8, u64)> + '_ {
        self.0.iter().enumerate().map(|(i, &v)| (i as u8, v))
    }
}

/// Sets whose tokens fill fewer words than this are stored whole: patching cannot save
/// much on them, and finding what they lack from a base would cost more.
const PATCH_MIN_WORDS: usize = 256;

/// Bases kept as candidates per slot and per class number.
const PATCH_RECENT: usize = 8;

/// A set is stored as patches when they rewrite at most this fraction (1 / n) of the
/// base's span; otherwise it is stored whole and may become a base.
const PATCH_MAX_SHARE: usize = 4;

impl<'t> Patcher<'t> {
    fn new(num_atoms: usize) -> Self {
        Self {
            bases: Vec::new(),
            owner: vec![u32::MAX; num_atoms],
            by_slot: HashMap::new(),
            by_class: HashMap::new(),
            by_band: HashMap::new(),
            atom_hash: (0..num_atoms as u64)
                .map(|a| SplitMix64::new(a).next_u64())
                .collect(),
        }
    }

    /// `set` as patches on a base, when one is close enough to it (see
    /// [`PATCH_MAX_SHARE`]); else [`Patch::Whole`] to store it whole. `merge`'s scratch
    /// is used and left clean.
    fn try_patch<'a>(
        &mut self,
        set: &'t [u32],
        slot: (u32, u32),
        atom_slice: &impl Fn(u32) -> &'a [(u32, u32)],
        merge: &mut Merger<'t>,
        pool: &mut WordPool,
    ) -> Patch {
        let plain: usize = set.iter().map(|&a| atom_slice(a).len()).sum();
        if plain < PATCH_MIN_WORDS {
            return Patch::Whole(None);
        }
        let mut best: Option<(usize, u32, Vec<u32>, Vec<u32>)> = None;
        let mut tried: SmallVec<[u32; 64]> = SmallVec::new();
        let mut consider = |b: u32, best: &mut Option<(usize, u32, Vec<u32>, Vec<u32>)>| {
            if b == u32::MAX || tried.contains(&b) {
                return;
            }
            tried.push(b);
            let (base, range) = self.bases[b as usize];
            let limit = (pool.span(range) / PATCH_MAX_SHARE)
                .min(best.as_ref().map_or(usize::MAX, |x| x.0.saturating_sub(1)));
            // Most candidates are far off: the walk stops once their words pass the limit.
            if let Some((bound, lacks, adds)) =
                differences(base, set, |a| atom_slice(a).len(), limit)
            {
                *best = Some((bound, b, lacks, adds));
            }
        };
        let none = SmallVec::new();
        let recent = (self.by_slot.get(&slot).unwrap_or(&none).iter())
            .chain(self.by_class.get(&slot.0).unwrap_or(&none))
            .chain([
                &self.owner[set[0] as usize],
                &self.owner[set[set.len() / 2] as usize],
            ]);
        for &b in recent {
            consider(b, &mut best);
        }
        // The sketch only when those fail: hashing a set's atoms cost more than trying
        // them (thousands of atoms in some schemas' sets).
        let mut sketch = None;
        if best.is_none() {
            let s = Sketch::of(set, &self.atom_hash);
            for k in s.keys() {
                for &b in self.by_band.get(&k).unwrap_or(&none) {
                    consider(b, &mut best);
                }
            }
            sketch = Some(s);
        }
        let Some((bound, b, lacks, adds)) = best else {
            return Patch::Whole(sketch);
        };
        let range = self.bases[b as usize].1;
        // Each word the two differ in starts from the base's value; atoms are disjoint
        // token sets, so clearing what `set` lacks and setting what it adds is exact.
        for (&a, clear) in lacks
            .iter()
            .map(|a| (a, true))
            .chain(adds.iter().map(|a| (a, false)))
        {
            for &(w, bits) in atom_slice(a) {
                let (i, bit) = (w as usize / 64, 1u64 << (w % 64));
                if merge.touched[i] & bit == 0 {
                    merge.touched[i] |= bit;
                    merge.acc[w as usize] = pool.dense_word(range, w);
                }
                if clear {
                    merge.acc[w as usize] &= !bits;
                } else {
                    merge.acc[w as usize] |= bits;
                }
            }
        }
        let mut patches: Vec<(u32, u32)> = Vec::with_capacity(bound);
        for (i, word) in merge.touched.iter_mut().enumerate() {
            while *word != 0 {
                let w = i * 64 + word.trailing_zeros() as usize;
                *word &= *word - 1;
                patches.push((w as u32, std::mem::take(&mut merge.acc[w])));
            }
        }
        Patch::Patched(pool.push_patched(range, &patches))
    }

    /// Makes `set`, just stored whole as `words` at `range`, a base if it is large and
    /// dense; `sketch` is the one [`Patcher::try_patch`] gave.
    fn offer(
        &mut self,
        set: &'t [u32],
        sketch: &Sketch,
        slot: (u32, u32),
        words: &[(u32, u32)],
        range: (u32, u32),
    ) {
        if set.len() < BASE_MIN_ATOMS || !WordPool::is_dense(range) || words.len() < PATCH_MIN_WORDS
        {
            return;
        }
        let b = self.bases.len() as u32;
        self.bases.push((set, range));
        let remember = |recent: &mut SmallVec<[u32; PATCH_RECENT]>| {
            if recent.len() == PATCH_RECENT {
                recent.remove(0);
            }
            recent.push(b);
        };
        remember(self.by_slot.entry(slot).or_default());
        remember(self.by_class.entry(slot.0).or_default());
        for k in sketch.keys() {
            remember(self.by_band.entry(k).or_default());
        }
        for &a in set {
            self.owner[a as usize] = b;
        }
    }
}

/// What sorted atom list `set` lacks of sorted `base`, what it adds, and their summed
/// `cost`; `None` as soon as that passes `limit`.
fn differences(
    base: &[u32],
    set: &[u32],
    cost: impl Fn(u32) -> usize,
    limit: usize,
) -> Option<(usize, Vec<u32>, Vec<u32>)> {
    let (mut lacks, mut adds) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    let mut total = 0usize;
    loop {
        let a = match (base.get(i), set.get(j)) {
            (None, None) => break,
            (Some(x), Some(y)) if x == y => {
                i += 1;
                j += 1;
                continue;
            }
            // The base's atom comes first: `set` lacks it.
            (Some(&x), Some(&y)) if x < y => {
                lacks.push(x);
                i += 1;
                x
            }
            (Some(&x), None) => {
                lacks.push(x);
                i += 1;
                x
            }
            (_, Some(&y)) => {
                adds.push(y);
                j += 1;
                y
            }
        };
        total += cost(a);
        if total > limit {
            return None;
        }
    }
    Some((total, lacks, adds))
}

/// Merges atom sets' words. Large sets come in near-copies (a schema's positions inside
/// strings differ by a few key-prefix atoms among hundreds), so a set close to the last
/// large one merged is made from that one's words, with the atoms it lacks cleared and
/// those it adds set: exact because atoms are disjoint token sets. On 40 median MaskBench
/// schemas (Llama-3) this took freezing from 1.55 to 1.08 ms (median).
struct Merger<'t> {
    /// Word values being merged (zero outside a merge).
    acc: Vec<u32>,
    /// Which words of `acc` may be nonzero, a bit each.
    touched: Vec<u64>,
    /// The merged words of the last set.
    words: Vec<(u32, u32)>,
    /// The last large set merged (empty: none yet), and its words.
    base: &'t [u32],
    base_words: Vec<(u32, u32)>,
}

/// Sets of at least this many atoms are kept as the base of the next ones.
const BASE_MIN_ATOMS: usize = 16;

impl<'t> Merger<'t> {
    fn add(&mut self, ws: &[(u32, u32)]) {
        for &(w, bits) in ws {
            self.acc[w as usize] |= bits;
            self.touched[w as usize / 64] |= 1 << (w % 64);
        }
    }

    /// The nonzero words of the tokens of atom set `set` (sorted), given each atom's.
    fn words_of<'a>(
        &mut self,
        set: &'t [u32],
        atom_slice: &impl Fn(u32) -> &'a [(u32, u32)],
    ) -> &[(u32, u32)] {
        let plain: usize = set.iter().map(|&a| atom_slice(a).len()).sum();
        // From the last large set: its words, minus the atoms `set` lacks, plus those it
        // adds (both sorted lists, walked together), when that is less work.
        let mut from_last = false;
        // Patching reads at least the base's words: for small sets it cannot win, and
        // comparing the atom lists would be wasted.
        if !self.base.is_empty() && self.base_words.len() < plain {
            let (_, lacks, adds) =
                differences(self.base, set, |_| 0, 0).expect("no cost passes no limit");
            let patch: usize = self.base_words.len()
                + lacks
                    .iter()
                    .chain(&adds)
                    .map(|&a| atom_slice(a).len())
                    .sum::<usize>();
            if patch < plain {
                from_last = true;
                // Taken and put back: `add` borrows the merger.
                let base_words = std::mem::take(&mut self.base_words);
                self.add(&base_words);
                self.base_words = base_words;
                for &a in &lacks {
                    for &(w, bits) in atom_slice(a) {
                        self.acc[w as usize] &= !bits;
                    }
                }
                for &a in &adds {
                    self.add(atom_slice(a));
                }
            }
        }
        if !from_last {
            for &a in set {
                self.add(atom_slice(a));
            }
        }
        self.words.clear();
        for (i, word) in self.touched.iter_mut().enumerate() {
            while *word != 0 {
                let w = i * 64 + word.trailing_zeros() as usize;
                *word &= *word - 1;
                let bits = std::mem::take(&mut self.acc[w]);
                if bits != 0 {
                    self.words.push((w as u32, bits));
                }
            }
        }
        if set.len() >= BASE_MIN_ATOMS {
            self.base = set;
            self.base_words.clear();
            self.base_words.extend_from_slice(&self.words);
        }
        &self.words
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;
    use roaring::RoaringBitmap;

    /// Freezes `tables`, each named twice (the second time at another base), checks
    /// that the second copies are the first's ranges at their own base, and returns the
    /// first copies.
    fn freeze_owned(
        tables: &[(u32, ClassAtoms)],
        atoms: &AtomWords,
    ) -> (Vec<ClassTokens>, WordPool) {
        let list: Vec<ClassAtoms> = tables.iter().map(|(_, t)| t.clone()).collect();
        let n = tables.len() as u32;
        let named: Vec<(u32, u32)> = (0..2)
            .flat_map(|copy| {
                tables
                    .iter()
                    .zip(0..n)
                    .map(move |((b, _), i)| (b + copy * 1000, i))
            })
            .collect();
        let (mut frozen, pool) = freeze(&named, &list, atoms);
        let second = frozen.split_off(tables.len());
        for (a, b) in frozen.iter().zip(&second) {
            assert_eq!((a.base + 1000, &a.ranges), (b.base, &b.ranges));
        }
        (frozen, pool)
    }

    /// The words of a sorted token set, one bit at a time.
    fn words_of(tokens: &[u32]) -> Vec<(u32, u32)> {
        let mut out: Vec<(u32, u32)> = Vec::new();
        for &t in tokens {
            match out.last_mut() {
                Some((w, bits)) if *w == t / 32 => *bits |= 1 << (t % 32),
                _ => out.push((t / 32, 1 << (t % 32))),
            }
        }
        out
    }

    #[test]
    fn frozen_classes_hold_exactly_the_tokens_of_their_atoms() {
        let mut rng = SplitMix64::new(5);
        let vocab_len = 130_000usize;
        for _ in 0..6 {
            // Random atoms, sparse and dense, some tokens in none, dealt to the classes
            // of two tables.
            let num_atoms = 1 + rng.below(40);
            let atom_of_token: Vec<u32> = (0..vocab_len)
                .map(|_| {
                    let a = rng.below(num_atoms + 1);
                    if a < num_atoms {
                        a as u32
                    } else {
                        NO_ATOM
                    }
                })
                .collect();
            let tables: Vec<(u32, ClassAtoms)> = (0..2)
                .map(|i| {
                    let mut classes = vec![RoaringBitmap::new(); 1 + rng.below(10)];
                    for a in 0..num_atoms as u32 {
                        let c = rng.below(classes.len() + 1);
                        if c < classes.len() {
                            classes[c].insert(a);
                        }
                    }
                    (i * 11, ClassAtoms::new(&classes))
                })
                .collect();
            let (frozen, pool) = freeze_owned(&tables, &AtomWords::new(&atom_of_token, num_atoms));
            for ((base, t), f) in tables.iter().zip(&frozen) {
                assert_eq!(f.base, *base);
                assert_eq!(f.ranges.len(), t.num_classes());
                for c in 0..t.num_classes() {
                    let want: Vec<u32> = (0..vocab_len as u32)
                        .filter(|&tok| t.class(c).contains(&atom_of_token[tok as usize]))
                        .collect();
                    assert_eq!(pool.words(f.ranges[c]), words_of(&want), "class {c}");
                }
            }
        }
    }

    #[test]
    fn near_copies_of_large_classes_hold_exactly_their_atoms_tokens() {
        // Large classes that differ by a few atoms from the one before (the shape of a
        // schema's string positions) are merged from that one's words and stored as
        // patches on an earlier one: every class must still hold exactly its atoms'
        // tokens, whether atoms were dropped or added. Atoms of ~160 words (few changes
        // fit a patch) and of ~16 (most do).
        for (num_atoms, patched_at_least) in [(300, 5), (3000, 30)] {
            near_copies(num_atoms, patched_at_least);
        }
    }

    fn near_copies(num_atoms: usize, patched_at_least: usize) {
        let mut rng = SplitMix64::new(11);
        let vocab_len = 50_000usize;
        let atom_of_token: Vec<u32> = (0..vocab_len)
            .map(|_| match rng.below(num_atoms + 1) {
                a if a < num_atoms => a as u32,
                _ => NO_ATOM,
            })
            .collect();
        let mut set: RoaringBitmap = (0..num_atoms as u32 * 2 / 3).collect();
        let tables: Vec<(u32, ClassAtoms)> = (0..40)
            .map(|i| {
                // Drop and add a few atoms, now and then a lot, and give the table a
                // small class beside the large one.
                let changes = if i % 10 == 9 { 120 } else { 1 + rng.below(4) };
                for _ in 0..changes {
                    let a = rng.below(num_atoms) as u32;
                    if !set.remove(a) {
                        set.insert(a);
                    }
                }
                let small: RoaringBitmap = [rng.below(num_atoms) as u32].into_iter().collect();
                let large = &set - &small;
                (i * 2, ClassAtoms::new(&[small, large]))
            })
            .collect();
        let (frozen, pool) = freeze_owned(&tables, &AtomWords::new(&atom_of_token, num_atoms));
        let mut patched = 0;
        for ((_, t), f) in tables.iter().zip(&frozen) {
            for c in 0..t.num_classes() {
                let want: Vec<u32> = (0..vocab_len as u32)
                    .filter(|&tok| t.class(c).contains(&atom_of_token[tok as usize]))
                    .collect();
                let r = f.ranges[c];
                assert_eq!(pool.words(r), words_of(&want), "class {c}");
                // The mask write agrees with the words.
                let mut out = vec![0u32; vocab_len.div_ceil(32)];
                pool.or_into(r, &mut out);
                let mut expect = vec![0u32; out.len()];
                for (w, bits) in words_of(&want) {
                    expect[w as usize] = bits;
                }
                assert_eq!(out, expect, "class {c}");
                patched += usize::from(WordPool::is_patched(r));
            }
        }
        // Most of the large classes are a few atoms from the one before.
        assert!(
            patched >= patched_at_least,
            "{num_atoms} atoms: {patched} classes stored as patches"
        );
    }

    #[test]
    fn near_copies_found_among_interleaved_families_by_sketch() {
        // Large classes of twelve far-apart families in turn, each a few atoms from its
        // family's last one: the recent bases by slot, class and atom owner are all of
        // other families, so only the sketch finds the close base. Each class must hold
        // exactly its atoms' tokens, and most after the first round be patches.
        let mut rng = SplitMix64::new(23);
        let (vocab_len, num_atoms, families) = (60_000usize, 2_000usize, 12usize);
        let atom_of_token: Vec<u32> = (0..vocab_len)
            .map(|_| rng.below(num_atoms) as u32)
            .collect();
        let mut sets: Vec<RoaringBitmap> = (0..families)
            .map(|_| (0..num_atoms as u32).filter(|_| rng.below(3) < 2).collect())
            .collect();
        let rounds = 6;
        let tables: Vec<(u32, ClassAtoms)> = (0..families * rounds)
            .map(|i| {
                let set = &mut sets[i % families];
                for _ in 0..1 + rng.below(3) {
                    let a = rng.below(num_atoms) as u32;
                    if !set.remove(a) {
                        set.insert(a);
                    }
                }
                (i as u32, ClassAtoms::new(std::slice::from_ref(set)))
            })
            .collect();
        let (frozen, pool) = freeze_owned(&tables, &AtomWords::new(&atom_of_token, num_atoms));
        let mut patched = 0;
        for ((_, t), f) in tables.iter().zip(&frozen).skip(families) {
            let want: Vec<u32> = (0..vocab_len as u32)
                .filter(|&tok| t.class(0).contains(&atom_of_token[tok as usize]))
                .collect();
            assert_eq!(pool.words(f.ranges[0]), words_of(&want));
            patched += usize::from(WordPool::is_patched(f.ranges[0]));
        }
        let later = families * (rounds - 1);
        assert!(
            patched * 4 >= later * 3,
            "{patched} of {later} near-copies stored as patches"
        );
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
