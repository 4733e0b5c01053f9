//! The frozen mask automaton.

use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

use super::drops::Drops;
use super::split::StringSplit;
use super::word_pool::WordPool;
use crate::ids::{DwaStateId, LrStateId, TokenId, WeightId};
use crate::lexer::LexPos;

/// One state as the builder makes it: what the walk does with the next (deeper) stack
/// id. Frozen into [`Dwa`] as a [`StateRow`] over one shared transition list.
#[derive(Debug, Clone, PartialEq)]
pub struct DwaState {
    /// `(stack id, edge)`, sorted by stack id ([`NO_EDGE`]: the id ends the path).
    pub trans: Vec<(LrStateId, u32)>,
    /// The edge for every id not in `trans` ([`NO_EDGE`]: such ids end the path).
    pub default: u32,
}

/// One frozen state: its transitions are `Dwa::trans[start..end]`, and `default` is the
/// edge for every other id. A short list is sorted by stack id; a long one is an
/// open-addressed table of `2^bits` slots ([`EMPTY_SLOT`] keys free), so a lookup costs
/// a cache line or two, not a binary search's dozen (large grammars have states listing
/// hundreds of ids, and a deep walk looks one up per stack entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateRow {
    /// First transition.
    pub start: u32,
    /// One past the last.
    pub end: u32,
    /// The edge for ids not listed ([`NO_EDGE`]: such ids end the path).
    pub default: u32,
    /// 0: a sorted list; else the list is a hash table of `2^bits` slots.
    pub bits: u32,
}

/// The key of a free slot in a state's hash table (no LR state has this id).
pub const EMPTY_SLOT: LrStateId = LrStateId::from_u32(u32::MAX);

/// Lists longer than this are frozen as hash tables (this many fit in two cache lines).
const HASH_OVER: usize = 16;

/// The home slot of `x` in a table of `2^bits` slots (Fibonacci hashing).
#[inline]
fn home(x: LrStateId, bits: u32) -> usize {
    (x.as_u32().wrapping_mul(0x9E37_79B9) >> (32 - bits)) as usize
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

/// Class → token expansion of one start position: per class, a range of the
/// automaton's [`WordPool`] holding the 32-bit words of its token set, so the final mask
/// write costs the words touched, not the tokens (positions with equal classes share
/// ranges).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct ClassTokens {
    /// The first class of this table's shape in the automaton's class space.
    pub base: u32,
    /// Per class, its range in the word pool.
    pub ranges: Vec<(u32, u32)>,
}

impl ClassTokens {
    /// Number of classes.
    pub fn num_classes(&self) -> usize {
        self.ranges.len()
    }

    /// The words of the class space this table's classes occupy.
    #[inline]
    pub fn word_range(&self) -> std::ops::Range<usize> {
        let (lo, hi) = (self.base as usize, self.base as usize + self.num_classes());
        lo / 64..hi.div_ceil(64)
    }

    /// ORs into `out` the tokens of `classes`, whose words are in `pool`: dense class-set
    /// words starting at word `first_word` of the class space (classes outside this table
    /// are ignored). With `fresh` set, `out` holds nothing yet (any garbage): then every
    /// word of it is written, and `fresh` is cleared, if some class is chosen.
    #[inline]
    pub fn expand(
        &self,
        pool: &WordPool,
        classes: &[u64],
        first_word: usize,
        out: &mut [u32],
        fresh: &mut bool,
    ) {
        let (lo, hi) = (self.base as usize, self.base as usize + self.num_classes());
        // The chosen classes' ranges in class order, read off the class words once; a
        // sparse range that continues the one before it in the pool is merged into it.
        // The widest dense or patched one is remembered: into a fresh mask it is copied
        // and the rest of the mask zeroed, so no word is written twice.
        let mut chosen: SmallVec<[(u32, u32); 64]> = SmallVec::new();
        let mut widest: Option<(usize, usize)> = None;
        'words: for (i, &word) in classes.iter().enumerate() {
            let mut word = word;
            while word != 0 {
                let c = (first_word + i) * 64 + word.trailing_zeros() as usize;
                word &= word - 1;
                if c < lo {
                    continue;
                }
                if c >= hi {
                    break 'words;
                }
                let r = self.ranges[c - lo];
                match pool.copy_span(r) {
                    Some(span) => {
                        if widest.is_none_or(|(most, _)| span > most) {
                            widest = Some((span, chosen.len()));
                        }
                        chosen.push(r);
                    }
                    None => match chosen.last_mut() {
                        Some(last) if WordPool::is_sparse(*last) && last.1 == r.0 => last.1 = r.1,
                        _ => chosen.push(r),
                    },
                }
            }
        }
        if chosen.is_empty() {
            return;
        }
        let mut skip = usize::MAX;
        if *fresh {
            match widest {
                Some((_, k)) => {
                    pool.write_into(chosen[k], out);
                    skip = k;
                }
                None => out.fill(0),
            }
            *fresh = false;
        }
        for (k, &r) in chosen.iter().enumerate() {
            if k != skip {
                pool.or_into(r, out);
            }
        }
    }
}

/// The edge row `st` takes on stack id `x` (`NO_EDGE` for none), its transitions in
/// `trans`.
#[inline]
fn row_edge(trans: &[(LrStateId, u32)], st: StateRow, x: LrStateId) -> u32 {
    let trans = &trans[st.start as usize..st.end as usize];
    if st.bits == 0 {
        match trans.binary_search_by_key(&x, |(y, _)| *y) {
            Ok(i) => trans[i].1,
            Err(_) => st.default,
        }
    } else {
        // Validated: the length is 2^bits and some slot is free, so this ends.
        let mask = trans.len() - 1;
        let mut i = home(x, st.bits);
        loop {
            let (y, e) = trans[i];
            if y == x {
                break e;
            }
            if y == EMPTY_SLOT {
                break st.default;
            }
            i = (i + 1) & mask;
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

/// Where one weight's words are stored: class-space words `lo..hi`, at `start` in the
/// automaton's weight words. The span runs from the first to the last shape the weight
/// has a class in, each whole: a shape's word range is inside the span or the weight has
/// no class in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WeightSpan {
    pub start: u64,
    pub lo: u32,
    pub hi: u32,
}

/// One shape's view of the weights: each weight's words over the shape's word range (a
/// walk reads one shape only, and nothing outside its classes can be set on its paths).
#[derive(Debug, Clone, Copy)]
pub struct ShapeWeights<'a> {
    words: &'a [u64],
    spans: &'a [WeightSpan],
    lo: usize,
    cw: usize,
}

impl<'a> ShapeWeights<'a> {
    /// The view of `words`, stored as `spans` say, over class words `range` (inside the
    /// class space, which weight 0's span covers).
    #[inline]
    pub fn new(words: &'a [u64], spans: &'a [WeightSpan], range: std::ops::Range<usize>) -> Self {
        ShapeWeights {
            words,
            spans,
            lo: range.start,
            cw: range.len(),
        }
    }

    /// The class-space words the shape's sets cover.
    #[inline]
    pub fn range(&self) -> std::ops::Range<usize> {
        self.lo..self.lo + self.cw
    }

    /// Weight `w` restricted to the shape's words.
    #[inline]
    pub fn get(&self, w: WeightId) -> &'a [u64] {
        let s = self.spans[w.index()];
        let (lo, hi) = (s.lo as usize, s.hi as usize);
        if lo <= self.lo && self.lo + self.cw <= hi {
            let at = s.start as usize + (self.lo - lo);
            &self.words[at..at + self.cw]
        } else {
            // The weight has no class in this shape (see `WeightSpan`): the empty
            // weight's words, which span the whole class space.
            &self.words[..self.cw]
        }
    }
}

/// The automaton. Weights are sets of token classes over a class space of `class_words`
/// 64-bit words, each stored as the dense words of its span (`weight_spans`; weight 0 is
/// empty and spans the whole space); each shape owns a range of classes.
/// `starts[x]` is the edge taken when `x` is on top of the stack, for every shape at
/// once: a configuration keeps the part inside its shape's classes. Only states that can
/// top a stack (the start state and shift targets) have one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dwa {
    pub(crate) class_words: u32,
    #[serde(with = "super::zero_runs")]
    pub(crate) weights: Vec<u64>,
    pub(crate) weight_spans: Vec<WeightSpan>,
    pub(crate) states: Vec<StateRow>,
    pub(crate) trans: Vec<(LrStateId, u32)>,
    pub(crate) edges: Vec<Edge>,
    pub(crate) targets: Vec<(DwaStateId, WeightId)>,
    pub(crate) starts: Vec<u32>,
    pub(crate) shape_classes: Vec<WeightId>,
    pub(crate) num_lr: u32,
    pub(crate) positions: Vec<StartPos>,
    pub(crate) tables: Vec<ClassTokens>,
    /// The token words class tables' ranges point into.
    pub(crate) words: WordPool,
    pub(crate) vocab_len: u32,
    pub(crate) eos: Vec<TokenId>,
    /// How configurations at split string states read the automaton (`None`: the
    /// automaton's lexer is the recognizer's).
    pub(crate) split: Option<StringSplit>,
    /// Classes with droppable lexemes, decided from virtual classes after the walk, and
    /// tokens the recognizer decides (empty without droppable terminals).
    pub(crate) drops: Drops,
    /// Classes behind an indenter, decided from virtual classes after the walk (empty
    /// without one).
    pub(crate) indents: super::indents::Indents,
    /// Expansions of decided classes into token words, remembered across masks (never
    /// serialized).
    #[serde(skip)]
    pub(crate) expansions: super::expansions::Expansions,
}

/// No edge (a start entry for a stack top that allows nothing).
pub const NO_EDGE: u32 = u32::MAX;

impl Dwa {
    /// Checks every id is in range and every invariant the walk relies on.
    pub fn validate(&self) -> Result<(), DwaValidateError> {
        let bad = |m: &str| Err(DwaValidateError(m.into()));
        let cw = self.class_words as usize;
        let empty = WeightSpan {
            start: 0,
            lo: 0,
            hi: cw as u32,
        };
        if cw == 0
            || self.weight_spans.first() != Some(&empty)
            || self.weights.len() < cw
            || self.weights[..cw].iter().any(|&w| w != 0)
        {
            return bad("weight 0 must be the empty set over the whole class space");
        }
        if self.weight_spans.iter().any(|s| {
            s.lo > s.hi
                || s.hi as usize > cw
                || s.start
                    .checked_add(u64::from(s.hi - s.lo))
                    .is_none_or(|end| end > self.weights.len() as u64)
        }) {
            return bad("weight span outside the class space or the weight words");
        }
        let nw = self.weight_spans.len();
        let (ns, ne) = (self.states.len(), self.edges.len());
        for s in &self.states {
            if s.start > s.end || s.end as usize > self.trans.len() {
                return bad("state transitions out of range");
            }
            let trans = &self.trans[s.start as usize..s.end as usize];
            if s.bits == 0 {
                if trans.windows(2).any(|w| w[0].0 >= w[1].0) {
                    return bad("transitions not sorted");
                }
            } else if s.bits > 31
                || trans.len() != 1 << s.bits
                || !trans.iter().any(|t| t.0 == EMPTY_SLOT)
            {
                // A free slot ends every probe sequence.
                return bad("transition table malformed");
            }
            if trans.iter().any(|&(_, e)| e != NO_EDGE && e as usize >= ne)
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
        // Per shape, the first class and class count of its positions' tables: the walk
        // reads a shape's classes at one place of the class space.
        let mut placed: Vec<Option<(u32, usize)>> = vec![None; nshapes];
        for p in &self.positions {
            if p.shape as usize >= nshapes || p.table as usize >= self.tables.len() {
                return bad("position out of range");
            }
            let t = &self.tables[p.table as usize];
            let here = (t.base, t.num_classes());
            if *placed[p.shape as usize].get_or_insert(here) != here {
                return bad("tables of one shape placed apart");
            }
        }
        let vw = (self.vocab_len as usize).div_ceil(32);
        if !self.words.sizes_ok() {
            return bad("word pool too large for its range tags");
        }
        for t in &self.tables {
            if t.base as usize + t.num_classes() > cw * 64 {
                return bad("class table beyond the class space");
            }
            if t.ranges.iter().any(|&r| !self.words.range_ok(r, vw)) {
                return bad("class table range outside the word pool or the vocabulary");
            }
        }
        if !self.words.pairs_ok(vw) {
            return bad("word pool names a token outside the vocabulary");
        }
        if self.eos.iter().any(|t| t.as_u32() >= self.vocab_len) {
            return bad("EOS token out of range");
        }
        if let Some(s) = &self.split {
            s.validate(self.vocab_len as usize, s.num_terminals())
                .map_err(DwaValidateError)?;
        }
        // Each shape's class count, from a table of a position that reads it.
        let mut classes = vec![u32::MAX; nshapes];
        for p in &self.positions {
            let n = self.tables[p.table as usize].num_classes() as u32;
            classes[p.shape as usize] = classes[p.shape as usize].min(n);
        }
        self.drops.validate(&classes).map_err(DwaValidateError)?;
        self.indents.validate(&classes).map_err(DwaValidateError)?;
        if self
            .drops
            .overflow
            .iter()
            .any(|(t, _)| t.as_u32() >= self.vocab_len)
        {
            return bad("overflowing token out of range");
        }
        Ok(())
    }

    /// Classes with droppable lexemes and the tokens the recognizer decides.
    #[inline]
    pub fn drops(&self) -> &Drops {
        &self.drops
    }

    /// Classes behind an indenter.
    #[inline]
    pub fn indents(&self) -> &super::indents::Indents {
        &self.indents
    }

    /// Derives what each shape's indentation rules need at mask time (see
    /// [`super::indents::Indents::prepare`]) now rather than at the shape's first mask;
    /// nothing without an indenter. Called once the automaton is built or loaded and
    /// validated (a clone derives it again on first use).
    pub fn prepare_indents(&self) {
        if self.indents.shapes.is_empty() {
            return;
        }
        self.indents.prepare(self.positions.iter().map(|p| {
            let t = &self.tables[p.table as usize];
            let r = t.word_range();
            (p.shape, t.base as usize, r.start, r.len())
        }));
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

    /// The weights over class words `range` (a shape's: its table's `word_range`, which
    /// validation keeps inside the class space).
    #[inline]
    pub fn shape_weights(&self, range: std::ops::Range<usize>) -> ShapeWeights<'_> {
        ShapeWeights::new(&self.weights, &self.weight_spans, range)
    }

    /// The classes of a shape, as a weight.
    #[inline]
    pub fn shape_classes(&self, shape: u32) -> WeightId {
        self.shape_classes[shape as usize]
    }

    /// The edge state `s` takes on stack id `x`.
    #[inline]
    pub fn edge(&self, s: DwaStateId, x: LrStateId) -> Option<&Edge> {
        let e = row_edge(&self.trans, self.states[s.index()], x);
        (e != NO_EDGE).then(|| &self.edges[e as usize])
    }

    /// Freezes the builder's states into rows over one transition list: short lists as
    /// they are, long ones as hash tables at most half full.
    pub(crate) fn freeze_states(states: Vec<DwaState>) -> (Vec<StateRow>, Vec<(LrStateId, u32)>) {
        let mut trans = Vec::with_capacity(states.iter().map(|s| s.trans.len()).sum());
        let rows = states
            .into_iter()
            .map(|s| {
                let start = trans.len();
                let bits = if s.trans.len() <= HASH_OVER {
                    trans.extend_from_slice(&s.trans);
                    0
                } else {
                    let bits = (2 * s.trans.len()).next_power_of_two().trailing_zeros();
                    let mask = (1 << bits) - 1;
                    trans.resize(start + (1 << bits), (EMPTY_SLOT, NO_EDGE));
                    let table = &mut trans[start..];
                    for &(x, e) in &s.trans {
                        let mut i = home(x, bits);
                        while table[i].0 != EMPTY_SLOT {
                            i = (i + 1) & mask;
                        }
                        table[i] = (x, e);
                    }
                    bits
                };
                StateRow {
                    start: start as u32,
                    end: trans.len() as u32,
                    default: s.default,
                    bits,
                }
            })
            .collect();
        (rows, trans)
    }

    /// A class → token table.
    #[inline]
    pub fn table(&self, i: u32) -> &ClassTokens {
        &self.tables[i as usize]
    }

    /// The word pool class tables' ranges point into.
    #[inline]
    pub fn words(&self) -> &WordPool {
        &self.words
    }

    /// Rows in the memo of class → token expansions (see `dwa::expansions`).
    pub fn expansion_rows(&self) -> usize {
        self.expansions.rows()
    }

    /// The number of states.
    pub fn num_states(&self) -> usize {
        self.states.len()
    }

    /// The number of distinct weights.
    pub fn num_weights(&self) -> usize {
        self.weight_spans.len()
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
        self.trans.iter().filter(|t| t.0 != EMPTY_SLOT).count()
            + self.states.iter().filter(|s| s.default != NO_EDGE).count()
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

    /// The split string states, if any (see [`super::split`]).
    #[inline]
    pub fn split(&self) -> Option<&StringSplit> {
        self.split.as_ref()
    }

    /// A recognizer lexer position in this automaton's lexer (the same unless string
    /// states are split).
    #[inline]
    pub fn lexer_pos(&self, pos: LexPos) -> LexPos {
        match &self.split {
            Some(s) => s.lexer_pos(pos),
            None => pos,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frozen_states_answer_every_id_as_their_lists_do() {
        // Lists below, at and over the hash threshold, with ids spread and clustered, and
        // defaults both set and absent; every id up to past the largest is asked.
        let mut rng = crate::rng::SplitMix64::new(7);
        let mut states = Vec::new();
        for (len, spread) in [
            (0, 1),
            (5, 3),
            (16, 7),
            (17, 1),
            (100, 5),
            (300, 2),
            (64, 64),
        ] {
            let mut ids: Vec<u32> = (0..len * spread).step_by(spread as usize).collect();
            ids.retain(|_| rng.next_u64() % 8 != 0);
            let trans = ids
                .iter()
                .map(|&x| (LrStateId::from_u32(x), (rng.next_u64() % 1000) as u32))
                .collect();
            let default = if len % 2 == 0 { NO_EDGE } else { 5000 };
            states.push(DwaState { trans, default });
        }
        let (rows, trans) = Dwa::freeze_states(states.clone());
        assert!(rows.iter().any(|r| r.bits > 0) && rows.iter().any(|r| r.bits == 0));
        for (st, row) in states.iter().zip(&rows) {
            for x in 0..2000u32 {
                let x = LrStateId::from_u32(x);
                let want = st
                    .trans
                    .iter()
                    .find(|t| t.0 == x)
                    .map_or(st.default, |t| t.1);
                assert_eq!(row_edge(&trans, *row, x), want, "id {x:?}");
            }
        }
    }

    #[test]
    fn expanding_classes_writes_the_words_of_exactly_the_chosen_classes() {
        // Classes 60..63 of the class space (straddling a class-set word), each with one
        // range of a small pool.
        let mut pool = WordPool::new();
        let ranges = vec![
            pool.push(&[(0, 0b1), (2, 0b10)]),
            pool.push(&[(0, 0b100)]),
            pool.push(&[(1, 0b1000), (2, 0b1)]),
        ];
        let t = ClassTokens { base: 62, ranges };
        assert_eq!(t.word_range(), 0..2);
        // Choose classes 62 and 64 (table classes 0 and 2), and 61, outside the table.
        let chosen = [1u64 << 62 | 1 << 61, 1];
        let mut out = vec![0u32; 3];
        t.expand(&pool, &chosen, 0, &mut out, &mut false);
        assert_eq!(out, vec![0b1, 0b1000, 0b11]);
        // All three: their sparse ranges follow each other in the pool and are written
        // as one; into a fresh mask of garbage, every other word is zeroed.
        let all = [3u64 << 62, 1];
        let mut out = vec![0u32; 3];
        t.expand(&pool, &all, 0, &mut out, &mut false);
        assert_eq!(out, vec![0b101, 0b1000, 0b11]);
        let mut out = vec![u32::MAX; 4];
        let mut fresh = true;
        t.expand(&pool, &all, 0, &mut out, &mut fresh);
        assert!(!fresh);
        assert_eq!(out, vec![0b101, 0b1000, 0b11, 0]);
    }

    /// Into a fresh mask (garbage in every word, padding included), expanding writes the
    /// chosen classes' tokens and zeroes the rest, whichever class is copied first; with
    /// nothing chosen the mask is left as it was, still fresh.
    #[test]
    fn expanding_into_a_fresh_mask_writes_every_word() {
        let mut pool = WordPool::new();
        let wide: Vec<(u32, u32)> = (2..14u32).map(|w| (w, 0x10 | w)).collect();
        let narrow: Vec<(u32, u32)> = (5..13u32).map(|w| (w, 0x100 << (w % 8))).collect();
        let wide_r = pool.push(&wide);
        let ranges = vec![
            pool.push(&[(0, 0b1), (15, 0b10)]),
            pool.push(&narrow),
            wide_r,
            pool.push_patched(wide_r, &[(1, 0b1), (6, 0), (16, 0x4)]),
        ];
        let t = ClassTokens { base: 0, ranges };
        let garbage = || -> Vec<u32> {
            (0..20u32)
                .map(|w| w.wrapping_mul(0x9e37_79b9) | 1)
                .collect()
        };
        for chosen in 1u64..16 {
            let mut want = vec![0u32; 20];
            t.expand(&pool, &[chosen], 0, &mut want, &mut false);
            let mut out = garbage();
            let mut fresh = true;
            t.expand(&pool, &[chosen], 0, &mut out, &mut fresh);
            assert!(!fresh, "classes {chosen:b}");
            assert_eq!(out, want, "classes {chosen:b}");
        }
        // Nothing chosen in this table (class 40 is outside it).
        let mut out = garbage();
        let mut fresh = true;
        t.expand(&pool, &[1 << 40], 0, &mut out, &mut fresh);
        assert!(fresh);
        assert_eq!(out, garbage());
    }
}
