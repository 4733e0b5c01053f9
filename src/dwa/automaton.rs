//! The frozen mask automaton.

use roaring::RoaringBitmap;
use serde::{Deserialize, Serialize};

use crate::ids::{DwaStateId, LrStateId, TokenId, WeightId};
use crate::lexer::LexPos;

/// One state: what the walk does with the next (deeper) stack id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DwaState {
    /// `(stack id, edge)`, sorted by stack id ([`NO_EDGE`]: the id ends the path).
    pub trans: Vec<(LrStateId, u32)>,
    /// The edge for every id not in `trans` ([`NO_EDGE`]: such ids end the path).
    pub default: u32,
}

/// What reading one id does: classes decided, and where the still-undecided ones go.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Edge {
    /// Classes allowed once this edge is taken.
    pub decided: WeightId,
    /// Range in the automaton's target list: `(next state, classes that may still be
    /// decided there)`. Usually one target; several where the build fell back to one
    /// state per suspended effect.
    pub targets: (u32, u32),
}

/// Class → token expansion of one start position: per class, the nonzero 32-bit words of
/// its token set, so the final mask write costs the words touched, not the tokens.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct ClassTokens {
    /// The first class of this table's shape in the automaton's class space.
    pub base: u32,
    /// `words[offsets[c]..offsets[c + 1]]` are class `c`'s `(word index, bits)`.
    pub offsets: Vec<u32>,
    /// `(word index, bits)` pairs, sorted by word within a class.
    pub words: Vec<(u32, u32)>,
}

impl ClassTokens {
    /// Builds the expansion table from per-class token sets.
    pub fn new(base: u32, classes: &[RoaringBitmap]) -> Self {
        let mut offsets = Vec::with_capacity(classes.len() + 1);
        let mut words: Vec<(u32, u32)> = Vec::new();
        offsets.push(0);
        // Tokens are read in batches: roaring's per-element iterator was most of the
        // automaton build for schemas whose positions each see the whole vocabulary.
        let mut buf = [0u32; 1024];
        for c in classes {
            let mut it = c.iter();
            // `u32::MAX` is no word index (token ids are below 2^32), so the first token
            // of every class starts a word.
            let (mut w, mut bits) = (u32::MAX, 0u32);
            loop {
                let batch = it.next_many(&mut buf);
                if batch.is_empty() {
                    break;
                }
                for &t in batch.iter() {
                    if t / 32 != w {
                        if bits != 0 {
                            words.push((w, bits));
                        }
                        (w, bits) = (t / 32, 0);
                    }
                    bits |= 1 << (t % 32);
                }
            }
            if bits != 0 {
                words.push((w, bits));
            }
            offsets.push(words.len() as u32);
        }
        Self {
            base,
            offsets,
            words,
        }
    }

    /// The same classes with only the tokens `keep` accepts (a class may become empty);
    /// equal to [`ClassTokens::new`] over the filtered token sets, without rebuilding them.
    pub fn filtered(&self, keep: impl Fn(u32) -> bool) -> Self {
        let mut offsets = Vec::with_capacity(self.offsets.len());
        let mut words: Vec<(u32, u32)> = Vec::new();
        offsets.push(0);
        for c in self.offsets.windows(2) {
            for &(w, bits) in &self.words[c[0] as usize..c[1] as usize] {
                let mut kept = 0u32;
                let mut rest = bits;
                while rest != 0 {
                    let b = rest.trailing_zeros();
                    rest &= rest - 1;
                    if keep(w * 32 + b) {
                        kept |= 1 << b;
                    }
                }
                if kept != 0 {
                    words.push((w, kept));
                }
            }
            offsets.push(words.len() as u32);
        }
        Self {
            base: self.base,
            offsets,
            words,
        }
    }

    /// Number of classes.
    pub fn num_classes(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// The words of the class space this table's classes occupy.
    #[inline]
    pub fn word_range(&self) -> std::ops::Range<usize> {
        let (lo, hi) = (self.base as usize, self.base as usize + self.num_classes());
        lo / 64..hi.div_ceil(64)
    }

    /// ORs into `out` the tokens of `classes`: dense class-set words starting at word
    /// `first_word` of the class space (classes outside this table are ignored).
    #[inline]
    pub fn expand(&self, classes: &[u64], first_word: usize, out: &mut [u32]) {
        let (lo, hi) = (self.base as usize, self.base as usize + self.num_classes());
        for (i, &word) in classes.iter().enumerate() {
            let mut word = word;
            while word != 0 {
                let c = (first_word + i) * 64 + word.trailing_zeros() as usize;
                word &= word - 1;
                if c < lo || c >= hi {
                    continue;
                }
                self.expand_one(c - lo, out);
            }
        }
    }

    #[inline]
    fn expand_one(&self, c: usize, out: &mut [u32]) {
        let (a, b) = (self.offsets[c], self.offsets[c + 1]);
        for &(w, bits) in &self.words[a as usize..b as usize] {
            out[w as usize] |= bits;
        }
    }
}

/// Why a mask automaton is inconsistent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid mask automaton: {0}")]
pub struct DwaValidateError(pub String);

/// Where a configuration at one lexer position starts, and how its classes expand.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StartPos {
    /// The lexer position.
    pub pos: LexPos,
    /// Index of its shape (its part of the class space).
    pub shape: u32,
    /// Index of its class → token table.
    pub table: u32,
}

/// The automaton. Weights are dense sets of token classes, `class_words` 64-bit words
/// each, stored end to end (weight 0 is empty); each shape owns a range of classes.
/// `starts[x]` is the edge taken when `x` is on top of the stack, for every shape at
/// once: a configuration keeps the part inside its shape's classes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dwa {
    pub(crate) class_words: u32,
    pub(crate) weights: Vec<u64>,
    pub(crate) states: Vec<DwaState>,
    pub(crate) edges: Vec<Edge>,
    pub(crate) targets: Vec<(DwaStateId, WeightId)>,
    pub(crate) starts: Vec<u32>,
    pub(crate) shape_classes: Vec<WeightId>,
    pub(crate) num_lr: u32,
    pub(crate) positions: Vec<StartPos>,
    pub(crate) tables: Vec<ClassTokens>,
    pub(crate) vocab_len: u32,
    pub(crate) eos: Vec<TokenId>,
}

/// No edge (a start entry for a stack top that allows nothing).
pub const NO_EDGE: u32 = u32::MAX;

impl Dwa {
    /// Checks every id is in range and every invariant the walk relies on.
    pub fn validate(&self) -> Result<(), DwaValidateError> {
        let bad = |m: &str| Err(DwaValidateError(m.into()));
        let cw = self.class_words as usize;
        if cw == 0 || self.weights.len() % cw != 0 || self.weights[..cw].iter().any(|&w| w != 0) {
            return bad("weights must be whole sets, weight 0 the empty set");
        }
        let (nw, ns, ne) = (self.weights.len() / cw, self.states.len(), self.edges.len());
        for s in &self.states {
            if s.trans.windows(2).any(|w| w[0].0 >= w[1].0) {
                return bad("transitions not sorted");
            }
            if s.trans
                .iter()
                .any(|&(_, e)| e != NO_EDGE && e as usize >= ne)
                || (s.default != NO_EDGE && s.default as usize >= ne)
            {
                return bad("edge out of range");
            }
        }
        for e in &self.edges {
            if e.decided.index() >= nw
                || e.targets.0 > e.targets.1
                || e.targets.1 as usize > self.targets.len()
            {
                return bad("edge contents out of range");
            }
        }
        if self
            .targets
            .iter()
            .any(|&(s, w)| s.index() >= ns || w.index() >= nw)
        {
            return bad("edge target out of range");
        }
        if self.starts.len() != self.num_lr as usize {
            return bad("start table size");
        }
        if self.shape_classes.iter().any(|w| w.index() >= nw) {
            return bad("shape classes out of range");
        }
        let nshapes = self.shape_classes.len();
        if self
            .starts
            .iter()
            .any(|&e| e != NO_EDGE && e as usize >= ne)
        {
            return bad("start edge out of range");
        }
        if self.positions.windows(2).any(|w| w[0].pos >= w[1].pos) {
            return bad("positions not sorted");
        }
        for p in &self.positions {
            if p.shape as usize >= nshapes || p.table as usize >= self.tables.len() {
                return bad("position out of range");
            }
        }
        let vw = (self.vocab_len as usize).div_ceil(32);
        for t in &self.tables {
            if t.offsets.first() != Some(&0)
                || t.offsets.windows(2).any(|w| w[0] > w[1])
                || t.offsets
                    .last()
                    .is_some_and(|&l| l as usize != t.words.len())
            {
                return bad("class table offsets");
            }
            if t.base as usize + t.num_classes() > cw * 64 {
                return bad("class table beyond the class space");
            }
            if t.words.iter().any(|&(w, _)| w as usize >= vw) {
                return bad("class table names a token outside the vocabulary");
            }
        }
        if self.eos.iter().any(|t| t.as_u32() >= self.vocab_len) {
            return bad("EOS token out of range");
        }
        Ok(())
    }

    /// The start entry of a configuration at `pos`.
    pub fn start_pos(&self, pos: LexPos) -> Option<StartPos> {
        self.positions
            .binary_search_by_key(&pos, |p| p.pos)
            .ok()
            .map(|i| self.positions[i])
    }

    /// The edge taken when `x` is on top of the stack (for every shape).
    #[inline]
    pub fn start_edge(&self, x: LrStateId) -> Option<&Edge> {
        let e = *self.starts.get(x.index())?;
        (e != NO_EDGE).then(|| &self.edges[e as usize])
    }

    /// The targets of an edge.
    #[inline]
    pub fn targets(&self, e: &Edge) -> &[(DwaStateId, WeightId)] {
        &self.targets[e.targets.0 as usize..e.targets.1 as usize]
    }

    /// The classes of a shape.
    #[inline]
    pub fn shape_classes(&self, shape: u32) -> &[u64] {
        self.weight(self.shape_classes[shape as usize])
    }

    /// The edge state `s` takes on stack id `x`.
    #[inline]
    pub fn edge(&self, s: DwaStateId, x: LrStateId) -> Option<&Edge> {
        let st = &self.states[s.index()];
        let e = match st.trans.binary_search_by_key(&x, |(y, _)| *y) {
            Ok(i) => st.trans[i].1,
            Err(_) => st.default,
        };
        (e != NO_EDGE).then(|| &self.edges[e as usize])
    }

    /// A state.
    #[inline]
    pub fn state(&self, s: DwaStateId) -> &DwaState {
        &self.states[s.index()]
    }

    /// An interned weight (a class set).
    #[inline]
    pub fn weight(&self, w: WeightId) -> &[u64] {
        let cw = self.class_words as usize;
        &self.weights[w.index() * cw..(w.index() + 1) * cw]
    }

    /// A class → token table.
    #[inline]
    pub fn table(&self, i: u32) -> &ClassTokens {
        &self.tables[i as usize]
    }

    /// The number of states.
    pub fn num_states(&self) -> usize {
        self.states.len()
    }

    /// The number of distinct weights.
    pub fn num_weights(&self) -> usize {
        self.weights.len() / self.class_words.max(1) as usize
    }

    /// The number of LR states the automaton reads.
    pub fn num_lr(&self) -> usize {
        self.num_lr as usize
    }

    /// Every start position.
    pub fn positions(&self) -> &[StartPos] {
        &self.positions
    }

    /// Words per class set.
    #[inline]
    pub fn class_words(&self) -> usize {
        self.class_words as usize
    }

    /// The number of transitions (state edges, defaults and start entries).
    pub fn num_transitions(&self) -> usize {
        self.states
            .iter()
            .map(|s| s.trans.len() + usize::from(s.default != NO_EDGE))
            .sum::<usize>()
            + self.starts.iter().filter(|&&e| e != NO_EDGE).count()
    }

    /// The number of distinct shapes (class spaces).
    pub fn num_shapes(&self) -> usize {
        self.shape_classes.len()
    }

    /// The vocabulary size (mask width in bits).
    pub fn vocab_len(&self) -> usize {
        self.vocab_len as usize
    }

    /// The end-of-sequence tokens.
    pub fn eos(&self) -> &[TokenId] {
        &self.eos
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    /// The words of one class, bit by bit (what [`ClassTokens::new`] must compress).
    fn naive_words(tokens: &RoaringBitmap) -> Vec<(u32, u32)> {
        let mut out: Vec<(u32, u32)> = Vec::new();
        for t in tokens {
            match out.last_mut() {
                Some((w, bits)) if *w == t / 32 => *bits |= 1 << (t % 32),
                _ => out.push((t / 32, 1 << (t % 32))),
            }
        }
        out
    }

    /// Disjoint random classes over a 130K vocabulary, sparse and dense, some empty, with
    /// more tokens than one batch of the batched reader.
    fn random_classes(rng: &mut SplitMix64) -> Vec<RoaringBitmap> {
        let mut classes = vec![RoaringBitmap::new(); 1 + rng.below(12)];
        let n = classes.len();
        let skip_class = rng.below(n + 1);
        for t in 0..130_000u32 {
            let c = rng.below(n + 1);
            if c < n && c != skip_class {
                classes[c].insert(t);
            }
        }
        classes
    }

    #[test]
    fn tables_hold_exactly_each_class_tokens() {
        let mut rng = SplitMix64::new(7);
        for _ in 0..8 {
            let classes = random_classes(&mut rng);
            let t = ClassTokens::new(5, &classes);
            assert_eq!(t.base, 5);
            assert_eq!(t.num_classes(), classes.len());
            for (c, set) in classes.iter().enumerate() {
                let (a, b) = (t.offsets[c] as usize, t.offsets[c + 1] as usize);
                assert_eq!(t.words[a..b], naive_words(set)[..], "class {c}");
            }
        }
    }

    #[test]
    fn filtering_a_table_equals_building_it_from_filtered_sets() {
        let mut rng = SplitMix64::new(11);
        for round in 0..8 {
            let classes = random_classes(&mut rng);
            let modulus = 2 + round as u32;
            let keep = |t: u32| (t / 7) % modulus != 0;
            let filtered: Vec<RoaringBitmap> = classes
                .iter()
                .map(|c| c.iter().filter(|&t| keep(t)).collect())
                .collect();
            assert_eq!(
                ClassTokens::new(3, &classes).filtered(keep),
                ClassTokens::new(3, &filtered)
            );
        }
    }
}
