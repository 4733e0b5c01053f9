//! Counted runs: a stretch of a counted lexeme (a long JSON string under `maxLength`)
//! where one layer of lexer states repeats, stored once.
//!
//! A lexer that counts units (see `compile::grammar::ir::Counted`) has one layer of states per
//! count. Far from every bound the layers are alike: the same states, the same
//! transitions, only the count differs. A run keeps one such layer explicitly (its
//! *template*, iteration 0) and gives iterations `1..len` *virtual* ids above every
//! explicit state; the transition function derives a virtual state's successor from its
//! template's row. After the last iteration, completing a unit leaves through `exits`
//! into the explicit layers before the bound.
//!
//! Depends only on the id newtypes.

use serde::{Deserialize, Serialize};

/// The runs of a counting lexer, as `LexerDfa::from_parts_with_runs` takes them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CountRuns {
    /// First template state (the lexer's state count when there are no runs).
    pub run_from: u32,
    /// The runs, templates in id order.
    pub runs: Vec<CountRun>,
    /// Counted layers kept explicit before each bound (0 without runs).
    pub margin: u32,
}

/// One run (see the module docs).
///
/// Invariants (checked by `LexerDfa::validate`): the template is the explicit states
/// `first..first + width`, its unit-start states (those entered by completing a unit)
/// first, `starts` of them; `len ≥ 2`; iteration `j ≥ 1` of template state `i` has the id
/// `virtual_base + (j − 1) · width + i`; `exits[i]` is the explicit state that completing
/// a unit into unit-start state `i` leads to from the last iteration. In the stored
/// table a template row's unit completions go back into the template (the *collapsed*
/// view); its other transitions stay inside the template or leave every run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CountRun {
    /// First template state.
    pub first: u32,
    /// States per layer.
    pub width: u32,
    /// Unit-start states among them (the first `starts`).
    pub starts: u32,
    /// Iterations, the template's included.
    pub len: u32,
    /// Id of iteration 1's first state.
    pub virtual_base: u32,
    /// Per unit-start state: where the last iteration's unit completion leads.
    pub exits: Vec<u32>,
}

impl CountRun {
    /// Number of virtual ids (iterations `1..len`).
    pub fn virtual_len(&self) -> u64 {
        u64::from(self.width) * u64::from(self.len.saturating_sub(1))
    }

    /// Whether `s` is one of this run's states (template or virtual).
    #[inline]
    pub fn holds(&self, s: u32) -> bool {
        s.wrapping_sub(self.first) < self.width
            || (s >= self.virtual_base && u64::from(s - self.virtual_base) < self.virtual_len())
    }

    /// `(iteration, index in the layer)` of a state of this run.
    #[inline]
    pub fn decode(&self, s: u32) -> (u32, u32) {
        if s.wrapping_sub(self.first) < self.width {
            (0, s - self.first)
        } else {
            let v = s - self.virtual_base;
            (1 + v / self.width, v % self.width)
        }
    }

    /// The id of iteration `j`, layer index `i`.
    #[inline]
    pub fn encode(&self, j: u32, i: u32) -> u32 {
        if j == 0 {
            self.first + i
        } else {
            self.virtual_base + (j - 1) * self.width + i
        }
    }

    /// The successor of iteration `j` given its template row's target `t`: a unit
    /// completion (into a unit-start state) moves to the next iteration, or out through
    /// `exits` after the last; a move within the unit stays in the iteration; anything
    /// else has left the run.
    #[inline]
    pub fn follow(&self, j: u32, t: u32) -> u32 {
        let i = t.wrapping_sub(self.first);
        if i < self.starts {
            if j + 1 < self.len {
                self.encode(j + 1, i)
            } else {
                self.exits[i as usize]
            }
        } else if i < self.width {
            self.encode(j, i)
        } else {
            t
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run() -> CountRun {
        CountRun {
            first: 10,
            width: 3,
            starts: 2,
            len: 4,
            virtual_base: 20,
            exits: vec![5, 6],
        }
    }

    /// Ids round-trip through (iteration, index), and nothing outside the run decodes.
    #[test]
    fn ids_round_trip() {
        let r = run();
        assert_eq!(r.virtual_len(), 9);
        for j in 0..4 {
            for i in 0..3 {
                let s = r.encode(j, i);
                assert!(r.holds(s));
                assert_eq!(r.decode(s), (j, i));
            }
        }
        for s in [0, 9, 13, 19, 29, 30, u32::MAX] {
            assert!(!r.holds(s), "{s}");
        }
    }

    /// Completions advance the iteration and leave through the exits after the last;
    /// moves inside a unit keep it; other targets pass through.
    #[test]
    fn follow_counts_units() {
        let r = run();
        assert_eq!(r.follow(0, 11), r.encode(1, 1));
        assert_eq!(r.follow(2, 10), r.encode(3, 0));
        assert_eq!(r.follow(3, 10), 5);
        assert_eq!(r.follow(3, 11), 6);
        assert_eq!(r.follow(3, 12), r.encode(3, 2));
        assert_eq!(r.follow(1, 4), 4);
        assert_eq!(r.follow(1, 0), 0);
    }
}
