//! Split string states: where a configuration inside a string reads the automaton as the
//! union of single-terminal positions, and the unit-count filters of length-bounded ones.
//!
//! The recognizer's lexer keeps, inside a string, the tuple of every string terminal's
//! state; the automaton was built over a lexer in which each such terminal also runs
//! alone, without its count (`lexer::strings` says when that is exact). A configuration
//! at a split state `q` asks each alive terminal's position in turn and unites the
//! answers; a terminal no stack head has an action on cannot contribute and is skipped.
//! A counted terminal's answer is then filtered by the tokens' *values* from the unit
//! position: the units a token writes before the close (if it closes), or the units it
//! writes plus one if it ends inside a unit. With `k` units so far, bounds `lo..=hi`
//! keep a token iff its value is at most `hi − k`, and a closing one iff it writes at
//! least `lo − k`. Depends on the lexer position type and the id newtypes.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::ids::{LexStateId, TerminalId, TokenId};
use crate::lexer::LexPos;

/// `StringSplit::of_state` entry of a state that is not split.
pub const NOT_SPLIT: u32 = u32::MAX;
/// Unit positions with more live tokens than this keep dense sets for small thresholds.
pub const DENSE_OVER: usize = 4096;
/// Thresholds below this have dense sets (where kept): above it, few tokens are excluded.
pub const DENSE_LEVELS: u32 = 16;

/// One alive terminal of a split state: its position in the automaton's lexer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Part {
    /// The terminal's state alone, in the automaton's lexer.
    pub state: LexStateId,
    /// The terminal.
    pub term: TerminalId,
}

/// A split state: its parts (a range of [`StringSplit::parts`]) and where its count is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The range of its parts.
    pub parts: (u32, u32),
    /// Unit position (0 when the state does not count).
    pub u: u32,
    /// Units so far.
    pub k: u32,
}

/// The tokens' values from one unit position (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct UnitValues {
    /// Dense sets kept: `dense[j * words .. (j + 1) * words]` holds the tokens of value at
    /// most `j`, for `j < levels`.
    levels: u32,
    dense: Vec<u32>,
    /// `(value, token)` by value, largest first: every live token when there are no dense
    /// sets, else those of value at least `levels`.
    by_value: Vec<(u32, TokenId)>,
    /// `(units before the close, token)` of the closing tokens, fewest first.
    closing: Vec<(u32, TokenId)>,
    /// The largest value of a live token.
    max_value: u32,
}

impl UnitValues {
    /// From every live token's `(value, token, closes)`, over a vocabulary of `words`
    /// mask words.
    pub fn new(mut values: Vec<(u32, TokenId, bool)>, words: usize) -> Self {
        let max_value = values.iter().map(|v| v.0).max().unwrap_or(0);
        let mut closing: Vec<(u32, TokenId)> = values
            .iter()
            .filter(|v| v.2)
            .map(|&(n, t, _)| (n, t))
            .collect();
        closing.sort_unstable();
        let levels = if values.len() > DENSE_OVER {
            DENSE_LEVELS.min(max_value + 1)
        } else {
            0
        };
        let mut dense = vec![0u32; levels as usize * words];
        for &(v, t, _) in &values {
            for j in v..levels {
                dense[j as usize * words + t.index() / 32] |= 1 << (t.as_u32() % 32);
            }
        }
        values.retain(|v| v.0 >= levels);
        let mut by_value: Vec<(u32, TokenId)> =
            values.into_iter().map(|(v, t, _)| (v, t)).collect();
        by_value.sort_unstable_by(|a, b| b.cmp(a));
        Self {
            levels,
            dense,
            by_value,
            closing,
            max_value,
        }
    }
}

/// A filter to apply to one part's tokens: at most `hi` (if set), and for closing
/// tokens, at least `lo` (if set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Filter {
    unit: u32,
    hi: Option<u32>,
    lo: Option<u32>,
}

/// The split states of an automaton's lexer (see the module docs).
///
/// Invariants (checked by [`StringSplit::validate`]): `of_state` names entries, entries
/// name ranges of `parts`, a counting entry's unit position has values, and every token
/// named is in the vocabulary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StringSplit {
    /// Recognizer lexer ids at or above `from` are `shift` higher in the automaton's
    /// lexer (its single-terminal states sit just below the run templates).
    from: u32,
    shift: u32,
    /// Per explicit recognizer lexer state: its entry, or [`NOT_SPLIT`].
    of_state: Vec<u32>,
    entries: Vec<Entry>,
    parts: Vec<Part>,
    /// Per terminal: `(lo, hi)` units when its count is a filter (`hi = u32::MAX`: none).
    bounds: Vec<Option<(u32, u32)>>,
    /// Per unit position: the tokens' values (empty where no filter reads them; shared
    /// by every grammar over one vocabulary).
    units: Vec<Arc<UnitValues>>,
}

impl StringSplit {
    /// A split from its tables (made by `compile::dwa::string_split`; [`Self::validate`]
    /// checks them): `from` and `shift` place the inserted states, `of_state` names each
    /// recognizer state's entry or [`NOT_SPLIT`], entries name ranges of `parts`, and
    /// `bounds` and `units` are the count filters' data.
    pub fn from_parts(
        from: u32,
        shift: u32,
        of_state: Vec<u32>,
        entries: Vec<Entry>,
        parts: Vec<Part>,
        bounds: Vec<Option<(u32, u32)>>,
        units: Vec<Arc<UnitValues>>,
    ) -> Self {
        Self {
            from,
            shift,
            of_state,
            entries,
            parts,
            bounds,
            units,
        }
    }

    /// Checks the invariants on the type, for an automaton over `vocab_len` tokens and a
    /// grammar of `num_terminals` terminals.
    pub fn validate(&self, vocab_len: usize, num_terminals: usize) -> Result<(), String> {
        if self
            .of_state
            .iter()
            .any(|&e| e != NOT_SPLIT && e as usize >= self.entries.len())
        {
            return Err("split entry out of range".into());
        }
        if self.bounds.len() != num_terminals
            || self.parts.iter().any(|p| p.term.index() >= num_terminals)
        {
            return Err("split terminal out of range".into());
        }
        if self.from.checked_add(self.shift).is_none() {
            return Err("split shift overflows".into());
        }
        let words = vocab_len.div_ceil(32);
        for e in &self.entries {
            if e.parts.0 > e.parts.1 || e.parts.1 as usize > self.parts.len() {
                return Err("split parts out of range".into());
            }
            let counted = self.parts[e.parts.0 as usize..e.parts.1 as usize]
                .iter()
                .any(|p| self.bounds[p.term.index()].is_some());
            if counted && e.u as usize >= self.units.len() {
                return Err("split unit position out of range".into());
            }
        }
        for v in &self.units {
            let token_ok = |t: &TokenId| t.index() < vocab_len;
            if v.dense.len() != v.levels as usize * words
                || !v.by_value.iter().all(|(_, t)| token_ok(t))
                || !v.closing.iter().all(|(_, t)| token_ok(t))
                || v.by_value.windows(2).any(|w| w[0].0 < w[1].0)
                || v.closing.windows(2).any(|w| w[0].0 > w[1].0)
            {
                return Err("split unit values malformed".into());
            }
        }
        Ok(())
    }

    /// Checks the split against the recognizer's lexer of `num_states` explicit states
    /// whose run templates start at `run_from`: one entry slot per explicit state, the
    /// inserted states placed where the recognizer's run templates begin, and every part
    /// naming an inserted state.
    pub fn validate_lexer(&self, num_states: usize, run_from: u32) -> Result<(), String> {
        if self.of_state.len() != num_states {
            return Err("split state table size".into());
        }
        if self.from != run_from {
            return Err("split states not placed at the run templates".into());
        }
        let inserted = u64::from(self.from)..u64::from(self.from) + u64::from(self.shift);
        if self
            .parts
            .iter()
            .any(|p| !inserted.contains(&u64::from(p.state.as_u32())))
        {
            return Err("split part names a state the automaton's lexer lacks".into());
        }
        Ok(())
    }

    /// The explicit states of the automaton's lexer, for a recognizer lexer of
    /// `num_states`: the recognizer's and the inserted single-terminal states.
    pub fn automaton_lexer_states(&self, num_states: usize) -> usize {
        num_states + self.shift as usize
    }

    /// The number of terminals the bounds table covers.
    pub fn num_terminals(&self) -> usize {
        self.bounds.len()
    }

    /// A recognizer lexer position in the automaton's lexer.
    #[inline]
    pub fn lexer_pos(&self, pos: LexPos) -> LexPos {
        let map = |q: LexStateId| {
            if q.as_u32() >= self.from {
                LexStateId::from_u32(q.as_u32().saturating_add(self.shift))
            } else {
                q
            }
        };
        match pos {
            LexPos::Pending(q) => LexPos::Pending(map(q)),
            LexPos::Boundary(q) => LexPos::Boundary(map(q)),
        }
    }

    /// The parts of a configuration at `pos` (a stand-in: see `LexerDfa::rep_pos`) and
    /// its entry, if `pos` is a split state.
    #[inline]
    pub fn parts_at(&self, pos: LexPos) -> Option<(&[Part], SplitAt)> {
        let LexPos::Pending(q) = pos else {
            return None;
        };
        let &e = self.of_state.get(q.index())?;
        if e == NOT_SPLIT {
            return None;
        }
        let e = self.entries[e as usize];
        Some((
            &self.parts[e.parts.0 as usize..e.parts.1 as usize],
            SplitAt { u: e.u, k: e.k },
        ))
    }

    /// How `part`'s tokens are read at a split state.
    #[inline]
    pub fn filter(&self, part: &Part, at: SplitAt) -> PartFilter {
        let Some((lo, hi)) = self.bounds[part.term.index()] else {
            return PartFilter::All;
        };
        let v = &self.units[at.u as usize];
        let hi = if hi == u32::MAX {
            None
        } else {
            let Some(room) = hi.checked_sub(at.k) else {
                return PartFilter::Nothing;
            };
            (room < v.max_value).then_some(room)
        };
        let lo = lo
            .checked_sub(at.k)
            .filter(|&need| v.closing.first().is_some_and(|c| c.0 < need));
        if hi.is_none() && lo.is_none() {
            PartFilter::All
        } else {
            PartFilter::Some(Filter { unit: at.u, hi, lo })
        }
    }

    /// Removes from `words` (one part's tokens, a mask at least as long as the
    /// vocabulary's) those `f` excludes.
    pub fn apply(&self, f: Filter, words: &mut [u32]) {
        let v = &self.units[f.unit as usize];
        let clear = |words: &mut [u32], t: TokenId| {
            words[t.index() / 32] &= !(1 << (t.as_u32() % 32));
        };
        if let Some(hi) = f.hi {
            if hi < v.levels {
                // Validated: the dense sets are `levels` masks of the vocabulary's words.
                let n = v.dense.len() / v.levels as usize;
                let set = &v.dense[hi as usize * n..(hi as usize + 1) * n];
                for (w, s) in words.iter_mut().zip(set) {
                    *w &= s;
                }
            } else {
                for &(value, t) in &v.by_value {
                    if value <= hi {
                        break;
                    }
                    clear(words, t);
                }
            }
        }
        if let Some(lo) = f.lo {
            for &(n, t) in &v.closing {
                if n >= lo {
                    break;
                }
                clear(words, t);
            }
        }
    }
}

/// How one part's tokens are read ([`StringSplit::filter`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartFilter {
    /// Every token the part allows.
    All,
    /// Those the filter keeps.
    Some(Filter),
    /// None: the part's bound is already past.
    Nothing,
}

/// Where a split state's count stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitAt {
    u: u32,
    k: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tok(t: u32) -> TokenId {
        TokenId::from_u32(t)
    }

    /// A filter keeps exactly the tokens of value at most `hi − k`, and the closing ones
    /// of at least `lo − k` units, with and without dense sets.
    #[test]
    fn filters_keep_the_tokens_the_bounds_allow() {
        for many in [false, true] {
            // Token i: value i % 40, closing when i % 3 == 0.
            let n = if many { DENSE_OVER as u32 + 100 } else { 300 };
            let values: Vec<(u32, TokenId, bool)> =
                (0..n).map(|i| (i % 40, tok(i), i % 3 == 0)).collect();
            let words = (n as usize).div_ceil(32);
            let v = UnitValues::new(values.clone(), words);
            assert_eq!(v.levels > 0, many);
            let part = Part {
                state: LexStateId::from_u32(9),
                term: TerminalId::new(0),
            };
            for (lo, hi, k) in [
                (0, 10, 0),
                (0, 100, 3),
                (5, 20, 2),
                (12, 30, 0),
                (0, 50, 40),
            ] {
                // State 2 of 4 is split into `part`, at unit position 0 with no units yet.
                let split = StringSplit::from_parts(
                    5,
                    0,
                    vec![NOT_SPLIT, NOT_SPLIT, 0, NOT_SPLIT],
                    vec![Entry {
                        parts: (0, 1),
                        u: 0,
                        k: 0,
                    }],
                    vec![part],
                    vec![Some((lo, hi))],
                    vec![Arc::new(v.clone())],
                );
                let (_, at0) = split
                    .parts_at(LexPos::Pending(LexStateId::from_u32(2)))
                    .unwrap();
                let at = SplitAt { k, ..at0 };
                let mut w = vec![u32::MAX; words];
                // Bits past the vocabulary stay set in neither case.
                if n % 32 != 0 {
                    *w.last_mut().unwrap() = (1 << (n % 32)) - 1;
                }
                if let PartFilter::Some(f) = split.filter(&part, at) {
                    split.apply(f, &mut w);
                }
                for &(value, t, closes) in &values {
                    let keep = value + k <= hi && (!closes || value + k >= lo);
                    let got = w[t.index() / 32] >> (t.as_u32() % 32) & 1 == 1;
                    assert_eq!(got, keep, "token {t:?} value {value} lo {lo} hi {hi} k {k}");
                }
            }
        }
    }

    #[test]
    fn unsplit_positions_move_past_the_inserted_states() {
        let s = StringSplit::from_parts(6, 4, vec![NOT_SPLIT; 10], vec![], vec![], vec![], vec![]);
        let at = |q| LexStateId::from_u32(q);
        assert_eq!(s.lexer_pos(LexPos::Pending(at(5))), LexPos::Pending(at(5)));
        assert_eq!(
            s.lexer_pos(LexPos::Boundary(at(6))),
            LexPos::Boundary(at(10))
        );
        assert_eq!(
            s.lexer_pos(LexPos::Pending(at(1000))),
            LexPos::Pending(at(1004))
        );
        assert!(s.parts_at(LexPos::Pending(at(3))).is_none());
    }
}
