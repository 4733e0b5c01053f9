//! Which terminal can come next, from where the lexer stands (one-terminal lexical
//! lookahead; the parser decides whether that terminal fits).
//!
//! Two positions matter. At a *boundary* (the last lexeme was just emitted, and the bytes
//! that would have extended it — given by its lexer state, the *inhibitor* — may not start
//! the next one), the next terminal is any terminal whose lexeme can start with an allowed
//! byte, reached possibly through ignored lexemes; end of input is always possible. Inside
//! a *pending* lexeme that grows by at least one more byte, the next terminal is one the
//! lexeme can still complete into, or, if it completes into an ignored terminal, whatever
//! can follow that boundary. A droppable terminal counts as itself and, since the parser
//! may skip it, as transparent as an ignored one. End of input is the extra bit
//! `num_terminals`.

use serde::{Deserialize, Serialize};

use crate::ids::LexStateId;
use crate::termset::TermSet;

/// Per-lexer-state follow sets (see the module docs).
///
/// Invariant: both tables have one set per lexer state, each over `num_terminals + 1`
/// bits; `boundary[0]` (the dead state as inhibitor) means "nothing inhibited".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LexFollow {
    boundary: Vec<TermSet>,
    pending: Vec<TermSet>,
}

impl LexFollow {
    /// Wraps the two tables, checking their shapes.
    pub fn from_parts(
        boundary: Vec<TermSet>,
        pending: Vec<TermSet>,
        num_states: usize,
        num_terminals: usize,
    ) -> Result<Self, super::LexerValidateError> {
        let f = Self { boundary, pending };
        f.validate(num_states, num_terminals)?;
        Ok(f)
    }

    /// Checks the tables fit a lexer with `num_states` states and `num_terminals`
    /// terminals (as after loading them from bytes).
    pub fn validate(
        &self,
        num_states: usize,
        num_terminals: usize,
    ) -> Result<(), super::LexerValidateError> {
        let ok = self.boundary.len() == num_states
            && self.pending.len() == num_states
            && self
                .boundary
                .iter()
                .chain(&self.pending)
                .all(|s| s.width() == num_terminals + 1 && s.is_valid());
        if !ok {
            return Err(super::LexerValidateError::Invalid(
                "follow tables do not match the lexer".into(),
            ));
        }
        Ok(())
    }

    /// These tables with the sets of extra states inserted at `at` (as
    /// `LexerDfa::with_extra_states` inserts their states): `pending[j]` and
    /// `boundary[j]` are extra state `j`'s.
    pub fn with_extra_states(
        &self,
        at: usize,
        pending: Vec<TermSet>,
        boundary: Vec<TermSet>,
    ) -> Self {
        let splice = |old: &[TermSet], extra: Vec<TermSet>| {
            let mut v = Vec::with_capacity(old.len() + extra.len());
            v.extend_from_slice(&old[..at]);
            v.extend(extra);
            v.extend_from_slice(&old[at..]);
            v
        };
        Self {
            boundary: splice(&self.boundary, boundary),
            pending: splice(&self.pending, pending),
        }
    }

    /// Terminals (and end of input) that can come next at a boundary whose inhibitor is
    /// `inhibitor` (`LexerDfa::DEAD` for none).
    #[inline]
    pub fn at_boundary(&self, inhibitor: LexStateId) -> &TermSet {
        &self.boundary[inhibitor.index()]
    }

    /// Terminals (and end of input) reachable from pending lexeme state `q` after at least
    /// one more byte.
    #[inline]
    pub fn after_pending(&self, q: LexStateId) -> &TermSet {
        &self.pending[q.index()]
    }
}
