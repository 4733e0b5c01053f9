//! The byte-level lexer DFA: one deterministic automaton that runs every terminal of a
//! grammar at once, and the whole-document maximal-munch lexer built on it ([`lex`]).
//!
//! Built by `compile::lexer::build` from the grammar IR; read by the reference oracle, the
//! GLR commit path and the mask automaton builder. A state stands for the bytes of the
//! current lexeme read so far; it knows which terminals that lexeme completes (only those
//! of top priority: the ones that would be emitted) and whether any byte can extend it.
//! With lexer modes, each mode has a start state (the empty lexeme among that mode's
//! terminals) and an emitted lexeme's terminals name the mode of the next one
//! ([`LexerDfa::start_after`]); a further mode's plain boundary is written
//! `Boundary(its start)`, as mode 0's is `Boundary(DEAD)`.
//! This module depends only on the id newtypes.

mod dfa;
mod follow;
mod indent;
mod lex;
mod pos;
mod run;
mod shadow;
pub mod strings;

pub use dfa::{LexTerminal, LexerDfa, LexerValidateError, RunExits};
pub use follow::LexFollow;
pub use indent::{Indenter, Tail};
pub use lex::{lex, LexError, LexErrorKind, Lexeme};
pub use pos::LexPos;
pub use run::{CountRun, CountRuns};
pub use shadow::Shadows;
