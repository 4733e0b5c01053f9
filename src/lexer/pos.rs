//! Where the lexer stands between two bytes.

use crate::ids::LexStateId;

/// Where the lexer stands in a configuration.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum LexPos {
    /// Inside a lexeme (lexer state, never the start state) that will grow further.
    Pending(LexStateId),
    /// Between lexemes; the next byte must not extend the lexeme whose final state is the
    /// inhibitor (`LexerDfa::DEAD` when nothing is inhibited).
    Boundary(LexStateId),
}
