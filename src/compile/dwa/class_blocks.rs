//! Classes no weight tells apart, merged into one (the last pass before the freeze).
//!
//! A class is the tokens with equal outcomes from a position, but the automaton often
//! cannot tell two outcomes apart: every weight it built holds both classes or neither.
//! A walk only intersects and unites weights, so every set it reaches holds such classes
//! together too, and they can be one class whose tokens are their union. Merging them
//! shrinks every class set a walk carries (its words) and every decided set's expansion
//! (its classes): a statement boundary of `python.lark` × Llama-3 has 3,536 classes in
//! 936 blocks. Only shapes of [`MIN_WIDE`] classes or more take part.
//!
//! Rules after the walk (`droppable`, `indentation`) read virtual classes and set the
//! classes decided from them one by one: virtual classes merge only with virtual ones
//! (the rules clear them after reading), and a decided class only with decided ones
//! whose rules read the same blocks.
//!
//! The blocks are the coarsest partition of each shape's classes that every weight is a
//! union of blocks of, found by refinement: each weight splits the blocks it holds part
//! of, in time linear in the weights' classes.

use hashbrown::HashMap;
use roaring::RoaringBitmap;

use crate::dwa::drops::{DropRule, Drops};
use crate::dwa::indents::{IndentRule, Indents};
use crate::dwa::word_pool::WordPool;
use crate::dwa::{ClassTokens, StartPos};

/// The merge: each old class's new id, and the new class space's shape layout.
#[derive(Debug)]
pub(super) struct ClassBlocks {
    /// Per old class, its new id (shape `s`'s new classes are `base[s]..base[s] +
    /// counts[s]`, in the order of their first old class).
    new_id: Vec<u32>,
    /// Per shape, its first old class.
    old_base: Vec<u32>,
    /// Per shape, its first new class.
    pub base: Vec<u32>,
    /// Per shape, its number of new classes.
    pub counts: Vec<u32>,
}

/// A merge pays for its remapping only when it removes at least this share (1/n) of the
/// classes: a small schema's few merges would not shorten its walks by a word.
const MIN_SHARE_REMOVED: u32 = 8;

/// How rules after the walk treat a class (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Kind {
    /// Read and set by the weights alone.
    Plain = 0,
    /// Read by rules, then cleared.
    Virtual = 1,
    /// Set by rules too.
    Decided = 2,
}

/// Shapes with fewer classes keep them: a walk's sets there are two words at most, and
/// their merging would cost a schema's compile more than its masks gain.
const MIN_WIDE: u32 = 128;

/// A block a weight holds whole (see [`ClassBlocks::find`]).
const WHOLE: u32 = u32::MAX - 1;

impl ClassBlocks {
    /// The blocks of the classes of shapes laid out at `base` (`counts[s]` classes each,
    /// bases ascending) that every one of `weights` is a union of. `kind[c]` says how
    /// rules after the walk treat class `c` (see the module docs); `rule_key(s, local,
    /// block)` is what the rules deciding a [`Kind::Decided`] class read, given each
    /// class's block. `None` when merging would remove less than an eighth of the
    /// classes.
    pub(super) fn find(
        weights: &[RoaringBitmap],
        base: &[u32],
        counts: &[u32],
        kind: &[Kind],
        rule_key: impl Fn(usize, u32, &dyn Fn(u32) -> u32) -> Vec<u32>,
    ) -> Option<Self> {
        let n: usize = counts.iter().map(|&c| c as usize).sum();
        // Blocks start as the shapes' classes of each kind.
        let mut block = vec![0u32; n];
        let mut size: Vec<u32> = Vec::new();
        // Narrow shapes' classes stay alone: their sets are a word or two either way.
        let mut wide: Vec<(u32, u32)> = Vec::new();
        for (&b, &c) in base.iter().zip(counts) {
            if c < MIN_WIDE {
                for old in b..b + c {
                    block[old as usize] = size.len() as u32;
                    size.push(1);
                }
                continue;
            }
            wide.push((b, b + c));
            let first = size.len() as u32;
            size.extend([0; 3]);
            for old in b..b + c {
                let id = first + kind[old as usize] as u32;
                block[old as usize] = id;
                size[id as usize] += 1;
            }
        }
        // Refinement: a weight holding part of a block splits off that part. Per weight,
        // first count its classes per block, then move them where the block is not whole.
        let mut hits = vec![0u32; size.len()];
        let mut stamp = vec![u32::MAX; size.len()];
        let mut split_to = vec![0u32; size.len()];
        let mut values: Vec<u32> = Vec::new();
        for (i, w) in weights.iter().enumerate() {
            let i = i as u32;
            values.clear();
            let (Some(lo), Some(hi)) = (w.min(), w.max()) else {
                continue;
            };
            let first = wide.partition_point(|&(_, end)| end <= lo);
            for &(a, b) in wide[first..].iter().take_while(|&&(a, _)| a <= hi) {
                values.extend(w.range(a..b));
            }
            for &c in &values {
                let b = block[c as usize] as usize;
                if stamp[b] != i {
                    stamp[b] = i;
                    hits[b] = 0;
                    split_to[b] = u32::MAX;
                }
                hits[b] += 1;
            }
            for &c in &values {
                let b = block[c as usize] as usize;
                if split_to[b] == u32::MAX {
                    // Decided at the block's first class, before any leaves it.
                    split_to[b] = if hits[b] == size[b] {
                        WHOLE
                    } else {
                        size.push(0);
                        hits.push(0);
                        stamp.push(u32::MAX);
                        split_to.push(0);
                        size.len() as u32 - 1
                    };
                }
                let nb = split_to[b];
                if nb == WHOLE {
                    continue;
                }
                block[c as usize] = nb;
                size[b] -= 1;
                size[nb as usize] += 1;
            }
        }
        // Decided classes apart where their rules read different blocks.
        let mut by_key: hashbrown::HashMap<(u32, Vec<u32>), u32> = Default::default();
        let mut moved = Vec::new();
        for (s, (&b, &c)) in base.iter().zip(counts).enumerate() {
            for old in b..b + c {
                if kind[old as usize] != Kind::Decided {
                    continue;
                }
                let key = rule_key(s, old - b, &|local| block[(b + local) as usize]);
                let next = (size.len() + by_key.len()) as u32;
                moved.push((
                    old,
                    *by_key.entry((block[old as usize], key)).or_insert(next),
                ));
            }
        }
        size.resize(size.len() + by_key.len(), 0);
        for (old, id) in moved {
            block[old as usize] = id;
        }
        // Numbering: shape by shape, blocks in the order of their first class.
        let mut new_of_block = vec![u32::MAX; size.len()];
        let mut new_id = vec![0u32; n];
        let mut new_base = Vec::with_capacity(base.len());
        let mut new_counts = Vec::with_capacity(base.len());
        let mut next = 0u32;
        for (&b, &c) in base.iter().zip(counts) {
            new_base.push(next);
            for old in b..b + c {
                let k = &mut new_of_block[block[old as usize] as usize];
                if *k == u32::MAX {
                    *k = next;
                    next += 1;
                }
                new_id[old as usize] = *k;
            }
            new_counts.push(next - new_base.last().copied().unwrap_or(0));
        }
        if (n as u32 - next) * MIN_SHARE_REMOVED < n as u32 {
            return None;
        }
        Some(Self {
            new_id,
            old_base: base.to_vec(),
            base: new_base,
            counts: new_counts,
        })
    }

    /// The new classes in all.
    pub(super) fn num_classes(&self) -> u32 {
        self.base.last().copied().unwrap_or(0) + self.counts.last().copied().unwrap_or(0)
    }

    /// Shape `s`'s new local id of its old local class `local`.
    fn local(&self, s: usize, local: u32) -> u32 {
        self.new_id[(self.old_base[s] + local) as usize] - self.base[s]
    }

    /// The new id of old class `c`.
    #[inline]
    pub(super) fn new_id(&self, c: u32) -> u32 {
        self.new_id[c as usize]
    }

    /// Each class table over the new classes of its shape (`positions` say which), a
    /// block's tokens the union of its classes', stored in `pool` (whose ranges write
    /// words below `vocab_words`).
    pub(super) fn tables(
        &self,
        tables: &mut [ClassTokens],
        positions: &[StartPos],
        pool: &mut WordPool,
        vocab_words: usize,
    ) {
        let mut shape_of = vec![u32::MAX; tables.len()];
        for p in positions {
            shape_of[p.table as usize] = p.shape;
        }
        // Unions met before (positions with equal classes share ranges), by members.
        let mut made: hashbrown::HashMap<Vec<(u32, u32)>, (u32, u32)> = Default::default();
        let mut row = vec![0u32; vocab_words];
        let mut members: Vec<Vec<(u32, u32)>> = Vec::new();
        let mut words: Vec<(u32, u32)> = Vec::new();
        for (t, table) in tables.iter_mut().enumerate() {
            let s = shape_of[t];
            if s == u32::MAX {
                continue;
            }
            let s = s as usize;
            members.clear();
            members.resize(self.counts[s] as usize, Vec::new());
            for (local, &r) in table.ranges.iter().enumerate() {
                members[self.local(s, local as u32) as usize].push(r);
            }
            let ranges = members
                .iter()
                .map(|m| {
                    if let [r] = m[..] {
                        return r;
                    }
                    if let Some(&r) = made.get(m) {
                        return r;
                    }
                    for &r in m {
                        pool.or_into(r, &mut row);
                    }
                    // The whole row is read (a few thousand words, against the
                    // members' own words).
                    words.clear();
                    for (w, x) in row.iter_mut().enumerate() {
                        if *x != 0 {
                            words.push((w as u32, *x));
                            *x = 0;
                        }
                    }
                    let r = pool.push(&words);
                    made.insert(m.clone(), r);
                    r
                })
                .collect();
            table.base = self.base[s];
            table.ranges = ranges;
        }
    }

    /// The droppable lexemes' trees over the new classes, one rule per decided class.
    pub(super) fn drops(&self, drops: &mut Drops) {
        // Trees may be shared: each node is renumbered once.
        let mut done = vec![false; drops.nodes.len()];
        let mut rules = Vec::with_capacity(drops.rules.len());
        for (s, sd) in drops.shapes.iter_mut().enumerate() {
            let mut seen = hashbrown::HashMap::new();
            let from = rules.len() as u32;
            for r in &drops.rules[sd.rules.0 as usize..sd.rules.1 as usize] {
                let len = (1usize << (r.levels + 1)) - 1;
                let at = r.start as usize..r.start as usize + len;
                for (v, d) in drops.nodes[at.clone()].iter_mut().zip(&mut done[at]) {
                    if !std::mem::replace(d, true) {
                        *v = self.local(s, *v);
                    }
                }
                // Merged classes' rules read the same blocks: one class's rules serve
                // (a class may have several, ORed).
                let class = self.local(s, r.class);
                if *seen.entry(class).or_insert(r.class) == r.class {
                    rules.push(DropRule { class, ..*r });
                }
            }
            sd.rules = (from, rules.len() as u32);
            sd.virtuals = self.range(s, sd.virtuals);
        }
        drops.rules = rules;
    }

    /// The indentation rules over the new classes, one rule per decided class.
    pub(super) fn indents(&self, indents: &mut Indents) {
        // Terms may be shared between rules: each is renumbered once.
        let mut done = vec![false; indents.terms.len()];
        let mut rules = Vec::with_capacity(indents.rules.len());
        for (s, si) in indents.shapes.iter_mut().enumerate() {
            let mut seen = hashbrown::HashMap::new();
            for g in &mut indents.groups[si.groups.0 as usize..si.groups.1 as usize] {
                let from = rules.len() as u32;
                for r in &indents.rules[g.rules.0 as usize..g.rules.1 as usize] {
                    let at = r.terms.0 as usize..r.terms.1 as usize;
                    for (t, d) in indents.terms[at.clone()].iter_mut().zip(&mut done[at]) {
                        if !std::mem::replace(d, true) {
                            t.out = self.local(s, t.out);
                            t.inside = self.local(s, t.inside);
                        }
                    }
                    // Merged classes' rules read the same blocks: one class's rules serve
                    // (a class may have several, ORed).
                    let class = self.local(s, r.class);
                    if *seen.entry(class).or_insert(r.class) == r.class {
                        rules.push(IndentRule { class, ..*r });
                    }
                }
                g.rules = (from, rules.len() as u32);
            }
            si.virtuals = self.range(s, si.virtuals);
        }
        indents.rules = rules;
    }

    /// Shape `s`'s virtual classes `lo..hi` over the new classes: virtual blocks hold
    /// only virtual classes and are numbered by their first, so they stay one range.
    fn range(&self, s: usize, (lo, hi): (u32, u32)) -> (u32, u32) {
        if lo == hi {
            return (lo, hi);
        }
        let ids = (lo..hi).map(|c| self.local(s, c));
        let (a, b) = ids.fold((u32::MAX, 0), |(a, b), x| (a.min(x), b.max(x + 1)));
        (a, b)
    }
}

/// Per class (of `num_classes`, shapes at `base`), how rules after the walk treat it.
pub(super) fn class_kinds(
    drops: &Drops,
    indents: &Indents,
    base: &[u32],
    num_classes: u32,
) -> Vec<Kind> {
    let mut kind = vec![Kind::Plain; num_classes as usize];
    let mut set = |s: usize, c: u32, k: Kind| kind[(base[s] + c) as usize] = k;
    for (s, sd) in drops.shapes.iter().enumerate() {
        (sd.virtuals.0..sd.virtuals.1).for_each(|c| set(s, c, Kind::Virtual));
        for r in &drops.rules[sd.rules.0 as usize..sd.rules.1 as usize] {
            set(s, r.class, Kind::Decided);
        }
    }
    for (s, si) in indents.shapes.iter().enumerate() {
        (si.virtuals.0..si.virtuals.1).for_each(|c| set(s, c, Kind::Virtual));
        for g in &indents.groups[si.groups.0 as usize..si.groups.1 as usize] {
            for r in &indents.rules[g.rules.0 as usize..g.rules.1 as usize] {
                set(s, r.class, Kind::Decided);
            }
        }
    }
    kind
}

/// The rules deciding each class after the walk, by (shape, class): indices into
/// [`Drops::rules`] and into [`Indents::rules`] with their group.
#[derive(Default)]
pub(super) struct RuleIndex {
    drops: HashMap<(usize, u32), Vec<usize>>,
    indents: HashMap<(usize, u32), Vec<(usize, usize)>>,
}

impl RuleIndex {
    pub(super) fn new(drops: &Drops, indents: &Indents) -> Self {
        let mut out = Self::default();
        for (s, sd) in drops.shapes.iter().enumerate() {
            for i in sd.rules.0 as usize..sd.rules.1 as usize {
                out.drops
                    .entry((s, drops.rules[i].class))
                    .or_default()
                    .push(i);
            }
        }
        for (s, si) in indents.shapes.iter().enumerate() {
            for g in si.groups.0 as usize..si.groups.1 as usize {
                let (lo, hi) = indents.groups[g].rules;
                for i in lo as usize..hi as usize {
                    let at = (s, indents.rules[i].class);
                    out.indents.entry(at).or_default().push((g, i));
                }
            }
        }
        out
    }

    /// What the rules deciding class `c` of shape `s` read, with each virtual class
    /// named by its block (`block`): equal keys decide equally.
    pub(super) fn key(
        &self,
        drops: &Drops,
        indents: &Indents,
        s: usize,
        c: u32,
        block: &dyn Fn(u32) -> u32,
    ) -> Vec<u32> {
        let mut key = Vec::new();
        for &i in self.drops.get(&(s, c)).into_iter().flatten() {
            let r = drops.rules[i];
            let len = (1usize << (r.levels + 1)) - 1;
            key.push(r.levels);
            key.extend(
                drops.nodes[r.start as usize..][..len]
                    .iter()
                    .map(|&v| block(v)),
            );
        }
        key.push(u32::MAX);
        for &(g, i) in self.indents.get(&(s, c)).into_iter().flatten() {
            let (newline, width) = indents.groups[g]
                .first
                .map_or((2, 0), |(n, w)| (u32::from(n), w));
            let r = indents.rules[i];
            // A rule ORs its terms: their order and repeats do not matter.
            let mut terms: Vec<[u32; 4]> = indents.terms[r.terms.0 as usize..r.terms.1 as usize]
                .iter()
                .map(|t| {
                    [
                        u32::from(t.stay),
                        t.delta as u32,
                        block(t.out),
                        block(t.inside),
                    ]
                })
                .collect();
            terms.sort_unstable();
            terms.dedup();
            key.extend([newline, width, terms.len() as u32]);
            key.extend(terms.into_iter().flatten());
        }
        key
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    /// Blocks by brute force: classes of one shape and kind with equal membership in
    /// every weight (and, for decided ones, equal keys).
    fn brute(
        weights: &[RoaringBitmap],
        base: &[u32],
        counts: &[u32],
        kind: &[Kind],
        key: &[u32],
    ) -> Vec<Vec<u32>> {
        let mut groups: Vec<Vec<u32>> = Vec::new();
        for (s, (&b, &c)) in base.iter().zip(counts).enumerate() {
            let mut sig: Vec<(Vec<bool>, Kind, u32, u32)> = Vec::new();
            let mut of: Vec<usize> = Vec::new();
            for old in b..b + c {
                let k = kind[old as usize];
                if c < MIN_WIDE {
                    groups.push(vec![old]);
                    continue;
                }
                let this = (
                    weights.iter().map(|w| w.contains(old)).collect(),
                    k,
                    if k == Kind::Decided {
                        key[old as usize]
                    } else {
                        0
                    },
                    s as u32,
                );
                let i = sig.iter().position(|x| *x == this).unwrap_or_else(|| {
                    sig.push(this);
                    sig.len() - 1
                });
                of.push(i);
            }
            let mut g = vec![Vec::new(); sig.len()];
            for (i, &x) in of.iter().enumerate() {
                g[x].push(b + i as u32);
            }
            groups.extend(g);
        }
        groups.sort();
        groups
    }

    #[test]
    fn blocks_are_the_classes_no_weight_or_rule_tells_apart() {
        let mut rng = SplitMix64::new(7);
        for round in 0..100 {
            let counts: Vec<u32> = (0..1 + rng.next_u64() % 3)
                // Narrow and wide shapes (only wide ones merge).
                .map(|_| (rng.next_u64() % 12) as u32 + MIN_WIDE * (rng.next_u64() % 2) as u32)
                .collect();
            let base: Vec<u32> = counts
                .iter()
                .scan(0, |acc, &c| {
                    let b = *acc;
                    *acc += c;
                    Some(b)
                })
                .collect();
            let n: u32 = counts.iter().sum();
            // Few weights of few classes each, so that some classes stay together.
            let weights: Vec<RoaringBitmap> = (0..rng.next_u64() % 4)
                .map(|_| (0..n).filter(|_| rng.next_u64() % 3 == 0).collect())
                .collect();
            let kind: Vec<Kind> = (0..n)
                .map(|_| match rng.next_u64() % 6 {
                    0 => Kind::Virtual,
                    1 => Kind::Decided,
                    _ => Kind::Plain,
                })
                .collect();
            let key: Vec<u32> = (0..n).map(|_| (rng.next_u64() % 2) as u32).collect();
            let want = brute(&weights, &base, &counts, &kind, &key);
            let Some(blocks) = ClassBlocks::find(&weights, &base, &counts, &kind, |s, c, _| {
                vec![key[(base[s] + c) as usize]]
            }) else {
                // Refused only when fewer than an eighth of the classes would go.
                assert!((n as usize - want.len()) * 8 < n as usize, "round {round}");
                continue;
            };
            let mut got: Vec<Vec<u32>> = vec![Vec::new(); blocks.num_classes() as usize];
            for old in 0..n {
                got[blocks.new_id[old as usize] as usize].push(old);
            }
            got.sort();
            assert_eq!(got, want, "round {round}");
            // Each shape's new classes are its own, in the order of their first class.
            for (s, (&b, &c)) in base.iter().zip(&counts).enumerate() {
                let ids: Vec<u32> = (b..b + c).map(|o| blocks.new_id[o as usize]).collect();
                let mut firsts: Vec<u32> = Vec::new();
                for &x in &ids {
                    if !firsts.contains(&x) {
                        firsts.push(x);
                    }
                }
                let nb = blocks.base[s];
                assert_eq!(
                    firsts,
                    (nb..nb + blocks.counts[s]).collect::<Vec<_>>(),
                    "round {round}"
                );
            }
        }
    }
}
