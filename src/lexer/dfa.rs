//! The frozen lexer DFA.

use serde::{Deserialize, Serialize};

use crate::ids::{LexStateId, TerminalId};

/// What the lexer keeps about a terminal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LexTerminal {
    /// Display name.
    pub name: String,
    /// Ignored terminals are lexed but never handed to the parser.
    pub ignored: bool,
}

/// Why a set of lexer tables is not a valid [`LexerDfa`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LexerValidateError {
    /// The tables have inconsistent sizes or out-of-range entries.
    #[error("invalid lexer tables: {0}")]
    Invalid(String),
}

/// A byte-level DFA over all terminals of a grammar.
///
/// Layout: bytes map to equivalence classes (`classes`, 256 entries, each `< stride`);
/// `trans[s * stride + c]` is the next state; state 0 is dead (all its transitions go to
/// 0), state 1 is the start (empty lexeme). `emit_offsets[s]..emit_offsets[s + 1]` indexes
/// `emit`: the top-priority terminals the lexeme of state `s` completes, sorted. A state
/// other than 0 always has a path to a state that emits something (dead ends are merged
/// into 0 when the DFA is built).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LexerDfa {
    classes: Vec<u8>,
    stride: u32,
    trans: Vec<u32>,
    emit_offsets: Vec<u32>,
    emit: Vec<TerminalId>,
    extendable: Vec<bool>,
    terminals: Vec<LexTerminal>,
}

impl LexerDfa {
    /// The dead state: no lexeme continues from here.
    pub const DEAD: LexStateId = LexStateId::from_u32(0);
    /// The start state: the empty lexeme.
    pub const START: LexStateId = LexStateId::from_u32(1);

    /// Assembles and validates lexer tables. `per_state_emit[s]` lists the terminals state
    /// `s` emits.
    pub fn from_parts(
        classes: Vec<u8>,
        stride: u32,
        trans: Vec<u32>,
        per_state_emit: Vec<Vec<TerminalId>>,
        terminals: Vec<LexTerminal>,
    ) -> Result<Self, LexerValidateError> {
        let mut emit_offsets = Vec::with_capacity(per_state_emit.len() + 1);
        let mut emit = Vec::new();
        emit_offsets.push(0u32);
        for mut e in per_state_emit {
            e.sort();
            e.dedup();
            emit.extend(e);
            emit_offsets.push(
                u32::try_from(emit.len())
                    .map_err(|_| LexerValidateError::Invalid("too many emit entries".into()))?,
            );
        }
        let n = emit_offsets.len() - 1;
        let stride_us = stride as usize;
        let extendable = (0..n)
            .map(|s| {
                trans
                    .get(s * stride_us..(s + 1) * stride_us)
                    .is_some_and(|row| row.iter().any(|&t| t != 0))
            })
            .collect();
        let dfa = Self {
            classes,
            stride,
            trans,
            emit_offsets,
            emit,
            extendable,
            terminals,
        };
        dfa.validate()?;
        Ok(dfa)
    }

    /// Checks every invariant listed on the type.
    pub fn validate(&self) -> Result<(), LexerValidateError> {
        let bad = |m: &str| Err(LexerValidateError::Invalid(m.to_string()));
        if self.classes.len() != 256 {
            return bad("byte class table must have 256 entries");
        }
        if self.stride == 0 || self.stride > 256 {
            return bad("stride must be in 1..=256");
        }
        if self.classes.iter().any(|&c| c as u32 >= self.stride) {
            return bad("byte class out of range");
        }
        let n = self.emit_offsets.len().saturating_sub(1);
        if n < 2 {
            return bad("need at least the dead and start states");
        }
        if self.trans.len() != n * self.stride as usize {
            return bad("transition table size does not match states × stride");
        }
        if self.trans.iter().any(|&t| t as usize >= n) {
            return bad("transition target out of range");
        }
        if self.trans[..self.stride as usize].iter().any(|&t| t != 0) {
            return bad("the dead state must stay dead");
        }
        if self.emit_offsets.windows(2).any(|w| w[0] > w[1])
            || *self.emit_offsets.last().unwrap_or(&0) as usize != self.emit.len()
        {
            return bad("emit offsets are not monotone");
        }
        if self.emit_offsets[1] != 0 {
            return bad("the dead state emits nothing");
        }
        if self.emit.iter().any(|t| t.index() >= self.terminals.len()) {
            return bad("emitted terminal out of range");
        }
        if self.extendable.len() != n {
            return bad("extendable table size");
        }
        Ok(())
    }

    /// The number of states (dead and start included).
    pub fn num_states(&self) -> usize {
        self.emit_offsets.len() - 1
    }

    /// The number of byte equivalence classes.
    pub fn num_classes(&self) -> usize {
        self.stride as usize
    }

    /// One byte per byte class (the first of each, classes in order of first byte): the
    /// bytes a search over the DFA needs to try.
    pub fn class_representatives(&self) -> Vec<u8> {
        let mut reps: Vec<u8> = Vec::new();
        let mut seen = vec![false; self.num_classes()];
        for b in 0..=255u8 {
            let c = self.class(b) as usize;
            if !seen[c] {
                seen[c] = true;
                reps.push(b);
            }
        }
        reps
    }

    /// The byte equivalence class of `b`.
    #[inline]
    pub fn class(&self, b: u8) -> u8 {
        self.classes[b as usize]
    }

    /// The state after reading byte `b` in state `s` (`DEAD` if the lexeme cannot grow).
    #[inline]
    pub fn next(&self, s: LexStateId, b: u8) -> LexStateId {
        let i = s.index() * self.stride as usize + self.classes[b as usize] as usize;
        LexStateId::from_u32(self.trans[i])
    }

    /// Whether `s` is the dead state.
    #[inline]
    pub fn is_dead(&self, s: LexStateId) -> bool {
        s == Self::DEAD
    }

    /// The terminals the lexeme of state `s` would be emitted as: the top-priority
    /// complete matches (more than one = lexically ambiguous).
    #[inline]
    pub fn emits(&self, s: LexStateId) -> &[TerminalId] {
        let a = self.emit_offsets[s.index()] as usize;
        let b = self.emit_offsets[s.index() + 1] as usize;
        &self.emit[a..b]
    }

    /// Whether some byte extends the lexeme of state `s`.
    #[inline]
    pub fn can_extend(&self, s: LexStateId) -> bool {
        self.extendable[s.index()]
    }

    /// The terminals, indexed by [`TerminalId`].
    pub fn terminals(&self) -> &[LexTerminal] {
        &self.terminals
    }

    /// A terminal's display name.
    pub fn terminal_name(&self, t: TerminalId) -> &str {
        &self.terminals[t.index()].name
    }

    /// Whether a terminal is ignored.
    pub fn is_ignored(&self, t: TerminalId) -> bool {
        self.terminals[t.index()].ignored
    }
}
