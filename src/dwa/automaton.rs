//! The frozen mask automaton.

use roaring::RoaringBitmap;

use crate::ids::{DwaStateId, LrStateId, TokenId, WeightId};
use crate::lexer::LexPos;

/// One state: the tokens decided here, and transitions keyed by the next (deeper) stack id.
#[derive(Debug, Clone, PartialEq)]
pub struct DwaState {
    /// Tokens allowed once this state is reached (with the path's weight).
    pub final_weight: WeightId,
    /// `(stack id, next state, edge weight)`, sorted by stack id. The edge weight holds the
    /// tokens that may still be decided past it (tokens decided here are subtracted).
    pub trans: Vec<(LrStateId, DwaStateId, WeightId)>,
}

/// Why a mask automaton is inconsistent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid mask automaton: {0}")]
pub struct DwaValidateError(pub String);

/// The automaton. Weight 0 is the empty set. `starts` maps each lexer position a
/// configuration can be in to the state that reads the top of the stack first.
#[derive(Debug, Clone, PartialEq)]
pub struct Dwa {
    weights: Vec<RoaringBitmap>,
    states: Vec<DwaState>,
    starts: Vec<(LexPos, DwaStateId)>,
    vocab_len: u32,
    eos: Vec<TokenId>,
}

impl Dwa {
    /// Assembles and validates an automaton.
    pub fn from_parts(
        weights: Vec<RoaringBitmap>,
        states: Vec<DwaState>,
        mut starts: Vec<(LexPos, DwaStateId)>,
        vocab_len: usize,
        eos: Vec<TokenId>,
    ) -> Result<Self, DwaValidateError> {
        starts.sort();
        let d = Self {
            weights,
            states,
            starts,
            vocab_len: vocab_len as u32,
            eos,
        };
        d.validate()?;
        Ok(d)
    }

    /// Checks ids are in range, transitions sorted, weights within the vocabulary.
    pub fn validate(&self) -> Result<(), DwaValidateError> {
        let bad = |m: &str| Err(DwaValidateError(m.into()));
        if self.weights.first().is_none_or(|w| !w.is_empty()) {
            return bad("weight 0 must be the empty set");
        }
        let nw = self.weights.len();
        let ns = self.states.len();
        for w in &self.weights {
            if w.max().is_some_and(|m| m >= self.vocab_len) {
                return bad("weight holds a token outside the vocabulary");
            }
        }
        for s in &self.states {
            if s.final_weight.index() >= nw {
                return bad("final weight out of range");
            }
            if s.trans.windows(2).any(|w| w[0].0 >= w[1].0) {
                return bad("transitions not sorted");
            }
            if s.trans
                .iter()
                .any(|&(_, t, w)| t.index() >= ns || w.index() >= nw)
            {
                return bad("transition out of range");
            }
        }
        if self.starts.iter().any(|(_, s)| s.index() >= ns) {
            return bad("start state out of range");
        }
        if self.eos.iter().any(|t| t.as_u32() >= self.vocab_len) {
            return bad("EOS token out of range");
        }
        Ok(())
    }

    /// The state that reads the top of a stack for a configuration at `pos`.
    pub fn start(&self, pos: LexPos) -> Option<DwaStateId> {
        self.starts
            .binary_search_by_key(&pos, |(p, _)| *p)
            .ok()
            .map(|i| self.starts[i].1)
    }

    /// The transition on stack id `x`.
    #[inline]
    pub fn step(&self, s: DwaStateId, x: LrStateId) -> Option<(DwaStateId, WeightId)> {
        let t = &self.states[s.index()].trans;
        t.binary_search_by_key(&x, |(y, _, _)| *y)
            .ok()
            .map(|i| (t[i].1, t[i].2))
    }

    /// A state.
    pub fn state(&self, s: DwaStateId) -> &DwaState {
        &self.states[s.index()]
    }

    /// An interned weight.
    #[inline]
    pub fn weight(&self, w: WeightId) -> &RoaringBitmap {
        &self.weights[w.index()]
    }

    /// The number of states.
    pub fn num_states(&self) -> usize {
        self.states.len()
    }

    /// The number of distinct weights.
    pub fn num_weights(&self) -> usize {
        self.weights.len()
    }

    /// The number of transitions.
    pub fn num_transitions(&self) -> usize {
        self.states.iter().map(|s| s.trans.len()).sum()
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
