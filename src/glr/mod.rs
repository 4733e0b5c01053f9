//! Commit: a GLR recognizer over a graph-structured stack ([`gss`]), one GLR step per
//! emitted terminal ([`step`]), and the byte-level driver with eager emission and
//! inhibited terminals ([`recognizer`]).
//!
//! Inputs are frozen tables ([`Tables`]: lexer DFA, its follow sets, LR tables) built by
//! `compile`; this module never parses grammar text and does not depend on `compile`,
//! `dwa` or `reference`. Recognition only: no parse forests.

pub mod gss;
mod lr_run;
pub mod recognizer;
pub mod step;
pub mod walk;

pub use crate::lexer::LexPos;
pub use recognizer::{CommitError, Config, GlrState, Rejected};

use crate::lexer::{Indenter, LexFollow, LexerDfa};
use crate::lr::LrTable;

/// Everything the recognizer reads, shared by all states of one grammar.
#[derive(Debug, Clone)]
pub struct Tables {
    /// The lexer.
    pub lexer: LexerDfa,
    /// What can follow each lexer position.
    pub follow: LexFollow,
    /// LR tables over the lexer's terminals.
    pub lr: LrTable,
    /// The indentation post-lexer the grammar runs behind, with what can follow each
    /// lexer position inside brackets (where it drops newlines).
    pub indenter: Option<(Indenter, LexFollow)>,
}

/// Why a set of tables does not belong together.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("inconsistent recognizer tables: {0}")]
pub struct TablesError(String);

impl Tables {
    /// Bundles tables after checking they describe the same terminals.
    pub fn from_parts(
        lexer: LexerDfa,
        follow: LexFollow,
        lr: LrTable,
    ) -> Result<Self, TablesError> {
        if lexer.terminals().len() != lr.num_terminals() {
            return Err(TablesError(format!(
                "lexer has {} terminals, LR tables {}",
                lexer.terminals().len(),
                lr.num_terminals()
            )));
        }
        Ok(Self {
            lexer,
            follow,
            lr,
            indenter: None,
        })
    }
}
