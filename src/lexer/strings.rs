//! What the lexer builder knows about a lexer's *string states*, kept for the mask
//! automaton's builder: which states are a lexeme inside a JSON-style string that can be
//! read as the union of single-terminal automata, and those automata.
//!
//! The lexer runs every terminal at once, so inside a string its state is the tuple of
//! every string terminal's state (and of the count, for length-bounded ones): a schema
//! with a few patterns and a `maxLength` has tens of thousands of such tuples, and the
//! mask automaton's build paid for each one. When every terminal still alive in a state
//! has the same priority and all of them lie inside one prefix-free language (a quote,
//! then non-quote bytes or escapes, then a closing quote), no two of them interact:
//! their lexemes end on the same byte, and one completing never suppresses another. The
//! tokens such a state allows are then the union of what each alive terminal alone
//! allows from its own state, and a length bound whose completions depend only on the
//! unit position (a plain `maxLength` string) is a filter on the tokens' unit counts.
//!
//! These facts are derived at build time and not serialized: a lexer loaded from bytes
//! has none, and a mask automaton built from it reads its tuples as they are (exact
//! either way). Depends only on the id newtypes.

use std::sync::Arc;

use crate::ids::TerminalId;

/// No transition in [`Component::trans`] and [`UnitDfa::trans`].
pub const NO_STATE: u32 = u32::MAX;

/// One string terminal alone, over the lexer's byte classes: its automaton as the lexer
/// builder ran it (for a counted terminal, its pattern without the count).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Component {
    /// `trans[s * stride + class]`, [`NO_STATE`] where the terminal dies.
    pub trans: Vec<u32>,
    /// Whether state `s` completes the terminal.
    pub complete: Vec<bool>,
}

impl Component {
    /// Number of states.
    pub fn num_states(&self) -> usize {
        self.complete.len()
    }
}

/// The unit automaton counted terminals share (one character of a JSON string), over
/// bytes: what a token's unit count is measured with.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UnitDfa {
    /// Byte → class.
    pub classes: Vec<u8>,
    /// Classes per row.
    pub stride: u32,
    /// `trans[u * stride + class]` ([`NO_STATE`]: the unit cannot go on); state 0 is
    /// between units and is never re-entered inside one.
    pub trans: Vec<u32>,
    /// Whether state `u` ends a unit.
    pub complete: Vec<bool>,
    /// The byte that closes the lexeme between units.
    pub close: u8,
}

/// How a token's bytes fare against the units from one unit position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitWalk {
    /// The unit automaton dies on some byte before any close.
    Dead,
    /// The close byte comes after `n` whole units.
    Closes(u32),
    /// No close: `n` whole units, plus one if the token ends inside a unit.
    Open(u32),
}

impl UnitDfa {
    /// Walks `bytes` from unit position `u` (see [`UnitWalk`]).
    pub fn walk(&self, mut u: u32, bytes: &[u8]) -> UnitWalk {
        let mut n = 0;
        for &b in bytes {
            match self.step(u, b) {
                Step::Close => return UnitWalk::Closes(n),
                Step::Dead => return UnitWalk::Dead,
                Step::Inside(next, done) => {
                    n += u32::from(done);
                    u = next;
                }
            }
        }
        UnitWalk::Open(n + u32::from(u != 0))
    }

    /// One byte from unit position `u`.
    #[inline]
    pub fn step(&self, u: u32, b: u8) -> Step {
        if u == 0 && b == self.close {
            return Step::Close;
        }
        let next =
            self.trans[u as usize * self.stride as usize + self.classes[b as usize] as usize];
        if next == NO_STATE {
            Step::Dead
        } else if self.complete[next as usize] {
            Step::Inside(0, true)
        } else {
            Step::Inside(next, false)
        }
    }

    /// Number of unit positions.
    pub fn num_states(&self) -> usize {
        self.complete.len()
    }
}

/// One byte of a [`UnitDfa`] walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The lexeme closes.
    Close,
    /// The units cannot go on.
    Dead,
    /// Inside, at this unit position; `true` when a unit just ended.
    Inside(u32, bool),
}

/// The build-time facts (see the module docs).
///
/// Invariants: `components` and `bounds` have one entry per terminal; a state's pairs
/// name terminals that have a component, each at a state of that component; a state with
/// a count names only terminals whose count is uncounted or has `bounds`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StringFacts {
    /// Per terminal: its automaton when it is a string terminal the split may use.
    pub components: Vec<Option<Component>>,
    /// Per counted terminal whose bound is a filter on unit counts: `(lo, hi)` units
    /// (`hi`: `None` for no upper bound).
    pub bounds: Vec<Option<(u32, Option<u32>)>>,
    /// Per explicit lexer state: `split[s]..split[s + 1]` indexes `pairs` (empty: the
    /// state is not split).
    pub split: Vec<u32>,
    /// `(terminal, its component's state)` of the split states, by state.
    pub pairs: Vec<(TerminalId, u32)>,
    /// Per explicit lexer state: `(unit position, units so far)` when it counts.
    pub count: Vec<Option<(u32, u32)>>,
    /// The counted terminals' unit automaton, when there are counted terminals.
    pub unit: Option<UnitDfa>,
}

impl StringFacts {
    /// The alive terminals of split state `s` with their component states (empty when
    /// `s` is not split).
    pub fn pairs_of(&self, s: usize) -> &[(TerminalId, u32)] {
        match (self.split.get(s), self.split.get(s + 1)) {
            (Some(&a), Some(&b)) => &self.pairs[a as usize..b as usize],
            _ => &[],
        }
    }

    /// Number of split states.
    pub fn num_split(&self) -> usize {
        self.split.windows(2).filter(|w| w[0] != w[1]).count()
    }
}

/// [`StringFacts`] as a lexer carries them: shared, never serialized, and ignored by
/// equality (two lexers with the same tables are the same lexer, facts or not).
#[derive(Debug, Clone, Default)]
pub struct BuildFacts(pub Option<Arc<StringFacts>>);

impl PartialEq for BuildFacts {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for BuildFacts {}

#[cfg(test)]
mod tests {
    use super::*;

    /// A unit automaton for `[a-z]` and `\x` (two-byte escape) units, closed by `"`.
    fn unit() -> UnitDfa {
        // Classes: 0 other, 1 letter, 2 backslash, 3 quote.
        let mut classes = vec![0u8; 256];
        for b in b'a'..=b'z' {
            classes[b as usize] = 1;
        }
        classes[b'\\' as usize] = 2;
        classes[b'"' as usize] = 3;
        // States: 0 between units, 1 after a backslash, 2 a unit's end.
        let n = NO_STATE;
        UnitDfa {
            classes,
            stride: 4,
            trans: vec![n, 2, 1, n, n, 2, 2, 2, n, n, n, n],
            complete: vec![false, false, true],
            close: b'"',
        }
    }

    #[test]
    fn unit_walks_count_whole_units_and_stop_at_the_close() {
        let u = unit();
        assert_eq!(u.walk(0, b"abc"), UnitWalk::Open(3));
        assert_eq!(
            u.walk(0, b"ab\\"),
            UnitWalk::Open(3),
            "an open escape counts"
        );
        assert_eq!(
            u.walk(0, b"a\\\"b"),
            UnitWalk::Open(3),
            "an escaped quote is a unit"
        );
        assert_eq!(u.walk(0, b"ab\"xyz"), UnitWalk::Closes(2));
        assert_eq!(
            u.walk(1, b"\"\""),
            UnitWalk::Closes(1),
            "the escape ends first"
        );
        assert_eq!(u.walk(0, b"a1"), UnitWalk::Dead);
        assert_eq!(u.walk(0, b""), UnitWalk::Open(0));
    }
}
