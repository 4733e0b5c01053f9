//! Longest-match lexing: a lexeme may be emitted at a complete match that later bytes
//! grow past, as long as they never complete a longer one (flex's rule; DESIGN.md §1 is
//! the 1-lookahead special case, where the first byte that cannot extend decides).
//!
//! The recognizers keep their fork: at a complete match that can grow, one branch emits
//! and the other grows. Under 1-lookahead the emitting branch dies if the next byte
//! extends the lexeme; under longest match it carries the lexeme's state on as a
//! *shadow*, moved by every later byte: a shadow that completes a match kills its branch
//! (a longer lexeme existed), one that dies is forgotten, and the growing branch dies
//! where its lexeme dies incomplete (the emitting branch stands for the fallback).
//!
//! The shadows live in the lexer's states: a longest-match lexer has, beside the plain
//! states (ids below [`Shadows::base`], no shadow), one state per (plain state, set of
//! shadows) reached. Its transition table moves both; a transition where a shadow
//! completes is dead. The *boundary table* says where the first byte after an emission
//! leads: from `Boundary(p)`, byte `b` starts a lexeme in `next(START, b)` with the
//! shadows of `p`, and `p` itself, moved by `b`.
//!
//! Depends only on the id newtypes.

use serde::{Deserialize, Serialize};

/// The boundary table of a longest-match lexer (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shadows {
    /// States below this id carry no shadow.
    pub base: u32,
    /// `boundary[p * stride + class]`: the state the first byte after an emission in state
    /// `p` leads to (0: a shadow completes, no lexeme starts with the byte, or `p`
    /// completes no lexeme and so is never emitted in).
    pub boundary: Vec<u32>,
}
