//! Stage 3, the lexer: the grammar's terminals → the frozen [`crate::lexer::LexerDfa`] and
//! its [`crate::lexer::LexFollow`] tables.
//!
//! Passes, in order:
//! 0. [`contextual`] (for grammars lexed contextually): the grammar's follow sets → lexer
//!    modes on its terminals, so that each lexeme is lexed among the terminals that can
//!    follow the one before it.
//! 1. [`build`]: each terminal's regex → an anchored leftmost-first DFA; their product →
//!    one byte-level lexer DFA whose states emit the top-priority terminals they complete
//!    (maximal munch by inhibited terminals happens at run time). Counted terminals
//!    (`count`) keep a margin of explicit layers before each bound and store the
//!    stretches in between once, as runs of virtual states. It also records which string
//!    states may be read terminal by terminal (`strings`). After it: state 0 is dead,
//!    state 1 the start, and every other state can still reach an emitting state.
//! 2. `follow`: lexer DFA → which terminals can come next from each state, at a growing
//!    lexeme and at a boundary. After it: the recognizer's and the automaton's viability
//!    checks are table lookups.

pub mod build;
pub(crate) mod contextual;
mod count;
pub(crate) mod follow;
mod strings;
