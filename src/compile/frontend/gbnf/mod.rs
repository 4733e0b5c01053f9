//! The GBNF front end (llama.cpp's grammar format): text → rules ([`parse`]) → IR
//! ([`lower`]), with one-character terminals so that the character-level language is kept
//! exactly.

mod lower;
mod parse;

use crate::compile::error::GrammarError;
use crate::compile::grammar::ir::Grammar;

/// Compiles GBNF text (start rule `root`) into the grammar IR.
pub fn compile(src: &str) -> Result<Grammar, GrammarError> {
    lower::lower(src, "root")
}
