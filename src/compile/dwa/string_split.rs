//! Pass: a recognizer lexer and its string facts → the lexer the mask automaton is built
//! over, its start positions, and the split table the runtime reads it with
//! (`dwa::split`; `lexer::strings` says when reading a string state as a union of
//! single-terminal states is exact).
//!
//! The automaton's lexer is the recognizer's with every single-terminal state a split
//! state uses inserted before the run templates; split states are not start positions
//! (their tuples can be nearly all of a counted schema's positions).
//! Tokens still end in the recognizer's states, and lex on through them once a string
//! closes. Depends on the lexer, its follow sets, the vocabulary's token parts and the
//! runtime split table; build time only.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use hashbrown::HashMap;

use crate::compile::dwa::terminal_trie::start_positions;
use crate::compile::interner::Interner;
use crate::dwa::split::{Entry, Part, StringSplit, UnitValues, NOT_SPLIT};
use crate::ids::{LexStateId, TerminalId};
use crate::lexer::strings::{Step, UnitDfa, NO_STATE};
use crate::lexer::{LexFollow, LexPos, LexerDfa};
use crate::termset::TermSet;
use crate::vocab::{TokenParts, Vocab};

/// When string states are split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SplitMode {
    /// When the split states outnumber the single-terminal states they need at least
    /// twice (a grammar with one string terminal gains nothing).
    #[default]
    Auto,
    /// Whenever some state can be split (tests).
    Always,
    /// Never.
    Never,
}

/// The lexer a mask automaton is built over, when string states are split.
pub struct SplitLexer {
    /// The recognizer's lexer with the single-terminal states inserted.
    pub lexer: LexerDfa,
    /// Its follow sets.
    pub follow: LexFollow,
    /// Its start positions: every one of the plain lexer's but the split states, and the
    /// single-terminal states.
    pub positions: Vec<LexPos>,
    split: SplitBuilder,
    from: u32,
    shift: u32,
    bounds: Vec<Option<(u32, u32)>>,
    unit: Option<UnitDfa>,
}

/// A [`SplitLexer`] without its follow sets: all of it that needs only the recognizer's
/// lexer, so that it can be made while the lexer's follow sets are ([`SplitPlan::finish`]
/// adds them).
pub struct SplitPlan {
    lexer: LexerDfa,
    positions: Vec<LexPos>,
    split: SplitBuilder,
    from: u32,
    shift: u32,
    bounds: Vec<Option<(u32, u32)>>,
    unit: Option<UnitDfa>,
    /// The single-terminal states' pending follow sets (each can become only its terminal).
    pending: Vec<TermSet>,
}

/// The automaton's lexer for `lexer` but for its follow sets, or `None` when no string
/// state is split (no facts, nothing to split, or not worth it under `mode`).
pub fn plan(lexer: &LexerDfa, mode: SplitMode) -> Option<SplitPlan> {
    // A longest-match lexer's shadowed states are not split (`forked_half` builds
    // over the lexer as it is).
    if mode == SplitMode::Never || lexer.longest_match() {
        return None;
    }
    let facts = lexer.string_facts()?;
    let n = lexer.num_states();
    let split: Vec<usize> = (2..n)
        .filter(|&q| lexer.can_extend(LexStateId::new(q)) && !facts.pairs_of(q).is_empty())
        .collect();
    if split.is_empty() {
        return None;
    }
    // The single-terminal states the split states stand in, closed under transitions.
    let mut extra: Vec<(TerminalId, u32)> = Vec::new();
    let mut id_of: HashMap<(TerminalId, u32), u32> = HashMap::new();
    for &q in &split {
        for &pair in facts.pairs_of(q) {
            if !id_of.contains_key(&pair) {
                id_of.insert(pair, extra.len() as u32);
                extra.push(pair);
            }
        }
    }
    let stride = lexer.num_classes();
    let mut i = 0;
    while i < extra.len() {
        let (t, x) = extra[i];
        i += 1;
        let comp = facts.components[t.index()]
            .as_ref()
            .expect("split states name terminals with components");
        for &y in &comp.trans[x as usize * stride..(x as usize + 1) * stride] {
            if y != NO_STATE && !id_of.contains_key(&(t, y)) {
                id_of.insert((t, y), extra.len() as u32);
                extra.push((t, y));
            }
        }
    }
    if mode == SplitMode::Auto && split.len() < 2 * extra.len() {
        return None;
    }
    let from = lexer.run_from();
    let m = extra.len() as u32;
    let wid = |j: u32| from + j;
    let mut rows: Vec<u32> = Vec::with_capacity(extra.len() * stride);
    let mut emits: Vec<Vec<TerminalId>> = Vec::with_capacity(extra.len());
    let width = lexer.terminals().len() + 1;
    let mut pending: Vec<TermSet> = Vec::with_capacity(extra.len());
    for &(t, x) in &extra {
        let comp = facts.components[t.index()]
            .as_ref()
            .expect("split states name terminals with components");
        let row = &comp.trans[x as usize * stride..(x as usize + 1) * stride];
        rows.extend(row.iter().map(|&y| {
            if y == NO_STATE {
                0
            } else {
                wid(id_of[&(t, y)])
            }
        }));
        emits.push(if comp.complete[x as usize] {
            vec![t]
        } else {
            Vec::new()
        });
        // A single-terminal state can still become its terminal, and nothing else.
        let mut set = TermSet::new(width);
        if row.iter().any(|&y| y != NO_STATE) {
            set.insert(t);
        }
        pending.push(set);
    }
    // Fails only past the id space (billions of counted states): read unsplit then.
    let walk_lexer = lexer.with_extra_states(&rows, emits).ok()?;
    let shift = |q: usize| {
        if q as u32 >= from {
            q as u32 + m
        } else {
            q as u32
        }
    };
    let mut is_split = vec![false; walk_lexer.num_states()];
    let mut builder = SplitBuilder::new(n);
    for &q in &split {
        is_split[shift(q) as usize] = true;
        let parts = facts
            .pairs_of(q)
            .iter()
            .map(|&(t, x)| Part {
                state: LexStateId::from_u32(wid(id_of[&(t, x)])),
                term: t,
            })
            .collect();
        let (u, k) = facts.count[q].unwrap_or((0, 0));
        builder.split(q, parts, u, k);
    }
    let positions: Vec<LexPos> = start_positions(&walk_lexer)
        .into_iter()
        .filter(|p| !matches!(p, LexPos::Pending(q) if is_split[q.index()]))
        .collect();
    let bounds = facts
        .bounds
        .iter()
        .map(|b| b.map(|(lo, hi)| (lo, hi.unwrap_or(u32::MAX))))
        .collect();
    Some(SplitPlan {
        lexer: walk_lexer,
        positions,
        split: builder,
        from,
        shift: m,
        bounds,
        unit: facts.unit.clone(),
        pending,
    })
}

impl SplitPlan {
    /// The walker, with follow sets made from `follow`, the follow sets of the lexer this
    /// plan was made from.
    pub fn finish(self, follow: &LexFollow) -> SplitLexer {
        // No single-terminal state is an inhibitor: those that complete cannot grow.
        let boundary = vec![follow.at_boundary(LexerDfa::DEAD).clone(); self.pending.len()];
        let walk_follow = follow.with_extra_states(self.from as usize, self.pending, boundary);
        SplitLexer {
            lexer: self.lexer,
            follow: walk_follow,
            positions: self.positions,
            split: self.split,
            from: self.from,
            shift: self.shift,
            bounds: self.bounds,
            unit: self.unit,
        }
    }
}

impl SplitLexer {
    /// The split table, with the token values its filters read measured over `vocab`'s
    /// tokens (once per vocabulary and unit automaton: [`Vocab::derived`]).
    pub fn into_split(self, vocab: &Vocab) -> StringSplit {
        let needed = self.split.units_read(&self.bounds);
        let words = vocab.len().div_ceil(32);
        let units = match &self.unit {
            Some(unit) if !needed.is_empty() => (0..unit.num_states() as u32)
                .map(|u| {
                    if !needed.contains(&u) {
                        return Arc::new(UnitValues::default());
                    }
                    let mut h = std::hash::DefaultHasher::new();
                    ("unit values", u, unit).hash(&mut h);
                    vocab.derived(h.finish(), || {
                        UnitValues::new(unit_values(unit, u, vocab.parts()), words)
                    })
                })
                .collect(),
            _ => Vec::new(),
        };
        self.split.finish(self.from, self.shift, self.bounds, units)
    }
}

/// Every token's value from unit position `u0` (`dwa::split`): `(value, token, closes)`
/// for the tokens the units do not kill, walked over the vocabulary's tries so shared
/// prefixes are stepped once.
pub fn unit_values(
    unit: &UnitDfa,
    u0: u32,
    tokens: &TokenParts,
) -> Vec<(u32, crate::ids::TokenId, bool)> {
    let mut out = Vec::new();
    // Per depth on the current path: (unit position, units done) after that node.
    let mut path: Vec<(u32, u32)> = Vec::new();
    for j in 0..tokens.num_parts() {
        let nodes = tokens.part_nodes(j);
        let mut node = nodes.start;
        while node < nodes.end {
            let d = tokens.depth(node);
            path.truncate(d - 1);
            let (u, n) = path.last().copied().unwrap_or((u0, 0));
            match unit.step(u, tokens.byte(node)) {
                Step::Close => {
                    out.extend(tokens.subtree_tokens(node).map(|o| (n, tokens.id(o), true)));
                    node = tokens.subtree_end(node);
                }
                Step::Dead => node = tokens.subtree_end(node),
                Step::Inside(u2, done) => {
                    let n2 = n + u32::from(done);
                    let value = n2 + u32::from(u2 != 0);
                    out.extend(tokens.ending_at(node).map(|o| (value, tokens.id(o), false)));
                    path.push((u2, n2));
                    node += 1;
                }
            }
        }
    }
    out
}

/// A [`StringSplit`] under construction: split states' entries, their part lists each
/// stored once (equal lists share one range of the parts table).
#[derive(Debug, Default)]
pub struct SplitBuilder {
    of_state: Vec<u32>,
    entries: Vec<Entry>,
    parts: Vec<Part>,
    /// Part lists by id, and the range of `parts` each id's list occupies.
    lists: Interner<Vec<Part>>,
    ranges: Vec<(u32, u32)>,
}

impl SplitBuilder {
    /// A builder for a recognizer lexer of `num_states` explicit states.
    pub fn new(num_states: usize) -> Self {
        Self {
            of_state: vec![NOT_SPLIT; num_states],
            ..Self::default()
        }
    }

    /// Splits state `q` into `parts`, with `(u, k)` its unit position and count.
    pub fn split(&mut self, q: usize, parts: Vec<Part>, u: u32, k: u32) {
        let id = self.lists.intern(parts) as usize;
        if id == self.ranges.len() {
            let a = self.parts.len() as u32;
            self.parts.extend_from_slice(self.lists.get(id as u32));
            self.ranges.push((a, self.parts.len() as u32));
        }
        self.of_state[q] = self.entries.len() as u32;
        self.entries.push(Entry {
            parts: self.ranges[id],
            u,
            k,
        });
    }

    /// The unit positions a filter of a terminal with bounds in `bounds` may read.
    pub fn units_read(&self, bounds: &[Option<(u32, u32)>]) -> Vec<u32> {
        let mut out: Vec<u32> = Vec::new();
        for e in &self.entries {
            let parts = &self.parts[e.parts.0 as usize..e.parts.1 as usize];
            if parts.iter().any(|p| bounds[p.term.index()].is_some()) && !out.contains(&e.u) {
                out.push(e.u);
            }
        }
        out
    }

    /// The frozen split.
    pub fn finish(
        self,
        from: u32,
        shift: u32,
        bounds: Vec<Option<(u32, u32)>>,
        units: Vec<Arc<UnitValues>>,
    ) -> StringSplit {
        StringSplit::from_parts(
            from,
            shift,
            self.of_state,
            self.entries,
            self.parts,
            bounds,
            units,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::SplitBuilder;
    use crate::dwa::split::Part;
    use crate::ids::{LexStateId, TerminalId};
    use crate::lexer::LexPos;

    fn part(state: u32, term: usize) -> Part {
        Part {
            state: LexStateId::from_u32(state),
            term: TerminalId::new(term),
        }
    }

    /// States with equal part lists read one range of the parts table; a state's entry
    /// keeps its own count; the unit positions read are those of states with a bounded
    /// part, each once.
    #[test]
    fn equal_part_lists_share_one_range() {
        let mut b = SplitBuilder::new(6);
        b.split(2, vec![part(10, 0), part(11, 1)], 3, 1);
        b.split(3, vec![part(12, 1)], 4, 0);
        b.split(4, vec![part(10, 0), part(11, 1)], 3, 2);
        assert_eq!(b.parts.len(), 3);
        assert_eq!(b.entries[0].parts, b.entries[2].parts);
        assert_eq!(b.entries[1].parts, (2, 3));
        assert_eq!(b.units_read(&[None, Some((0, 5))]), vec![3, 4]);
        assert_eq!(b.units_read(&[Some((0, 5)), None]), vec![3]);
        let split = b.finish(5, 7, vec![None, None], vec![]);
        let at = |q| LexPos::Pending(LexStateId::from_u32(q));
        let (p2, c2) = split.parts_at(at(2)).unwrap();
        let (p4, c4) = split.parts_at(at(4)).unwrap();
        assert_eq!(
            (p2, p4),
            (
                &[part(10, 0), part(11, 1)][..],
                &[part(10, 0), part(11, 1)][..]
            )
        );
        assert_ne!(c2, c4);
        assert!(split.parts_at(at(5)).is_none());
    }

    /// Overlapping quoted strings are split under maximal munch and never under longest
    /// match (the conformance tests check one automaton per longest-match case on this).
    #[test]
    fn longest_match_lexers_are_never_split() {
        use super::{plan, SplitMode};
        use crate::compile::{build_glr_tables, frontend::lark};
        let text = "start: (A | B)*\nA: /\"[ab]*\"/\nB: /\"a[ab]*\"/\n";
        let mut g = lark::compile(text).unwrap();
        let munch = build_glr_tables(&g).unwrap();
        assert!(plan(&munch.lexer, SplitMode::Always).is_some());
        g.longest_match = true;
        let longest = build_glr_tables(&g).unwrap();
        assert!(plan(&longest.lexer, SplitMode::Always).is_none());
    }
}
