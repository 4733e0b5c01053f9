//! Everything offline: grammar text → grammar IR → lexer DFA (and, in later layers, LR
//! tables and the mask automaton).
//!
//! Front ends ([`lark`], [`gbnf`], [`json_schema`], [`regex`]) parse text and lower it into the IR ([`ir`]) through
//! the shared EBNF expansion ([`ebnf`]) and pruning ([`prune`]) passes;
//! [`lexer_build`] turns the IR's terminals into a [`crate::lexer::LexerDfa`] (a terminal
//! may be an intersection of patterns). The mask automaton is built from the tables and a
//! vocabulary by [`terminal_trie`], [`lexer_equiv`], [`token_classes`], [`lr_equiv`], [`emission_trie`] and [`dwa_build`]. Errors carry
//! line:column ([`error`]). Nothing here runs at decode time, and the decode-time layers
//! never import this module.

pub mod class_tables;
mod compiler;
mod dense_words;
pub mod dwa_build;
mod dwa_determinize;
pub mod ebnf;
pub mod emission_trie;
pub mod error;
pub mod gbnf;
pub mod ir;
pub mod json_schema;
pub mod lark;
pub mod lexer_build;
mod lexer_count;
pub mod lexer_equiv;
pub mod lexer_follow;
mod lexer_strings;
pub mod lr;
pub mod lr_equiv;
pub mod prune;
pub mod regex;
pub mod string_split;
pub mod terminal_trie;
pub mod token_atoms;
pub mod token_classes;
pub mod weight_table;

pub use compiler::Compiler;
pub use error::{GrammarError, Span};
pub use ir::Grammar;

/// The grammar syntaxes stackmask reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrammarFormat {
    /// Lark-style EBNF (start rule `start`).
    Lark,
    /// llama.cpp GBNF (start rule `root`).
    Gbnf,
    /// A JSON Schema (strict: unsupported keywords are refused).
    JsonSchema,
    /// A regular expression the whole output must match.
    Regex,
}

impl GrammarFormat {
    /// Guesses the format from a file name (`*.gbnf` GBNF, `*.json` JSON Schema, `*.regex`
    /// a regular expression, anything else Lark).
    pub fn from_path(path: &str) -> Self {
        if path.ends_with(".gbnf") {
            GrammarFormat::Gbnf
        } else if path.ends_with(".schema.json") || path.ends_with(".json") {
            GrammarFormat::JsonSchema
        } else if path.ends_with(".regex") {
            GrammarFormat::Regex
        } else {
            GrammarFormat::Lark
        }
    }
}

/// The built-in JSON grammar (RFC 8259), in Lark syntax.
pub const BUILTIN_JSON: &str = include_str!("builtin/json.lark");

/// Compiles grammar text in the given format into the IR.
pub fn compile_grammar(text: &str, format: GrammarFormat) -> Result<Grammar, GrammarError> {
    match format {
        GrammarFormat::Lark => lark::compile(text),
        GrammarFormat::Gbnf => gbnf::compile(text),
        GrammarFormat::JsonSchema => json_schema::compile(text, &Default::default())
            .map(|l| l.grammar)
            .map_err(GrammarError::from),
        GrammarFormat::Regex => regex::compile(text),
    }
}

/// Compiles grammar bytes, rejecting invalid UTF-8 with the offset of the first bad byte.
pub fn compile_grammar_bytes(bytes: &[u8], format: GrammarFormat) -> Result<Grammar, GrammarError> {
    let text = std::str::from_utf8(bytes).map_err(|e| GrammarError::InvalidUtf8 {
        offset: e.valid_up_to(),
    })?;
    compile_grammar(text, format)
}

/// Compiles a grammar IR into the tables the GLR recognizer runs on (counted strings keep
/// [`lexer_build::COUNT_MARGIN`] explicit layers before each bound, enough for a mask
/// automaton over any vocabulary whose tokens are at most that long).
pub fn build_glr_tables(g: &Grammar) -> Result<crate::glr::Tables, GrammarError> {
    build_glr_tables_with(g, &lexer_build::LexerOptions::default())
}

/// [`build_glr_tables`] with explicit lexer options (e.g.
/// [`lexer_build::LexerOptions::for_vocab`], the smallest margin a vocabulary allows).
pub fn build_glr_tables_with(
    g: &Grammar,
    opts: &lexer_build::LexerOptions,
) -> Result<crate::glr::Tables, GrammarError> {
    // The lexer (with its follow sets) and the LR automaton come from the grammar alone:
    // built side by side. A lexer error is reported first, as when built in turn.
    let (lexer, lr) = rayon::join(
        || {
            lexer_build::build_lexer_with(g, opts).map(|lexer| {
                let follow = lexer_follow::build_follow(&lexer);
                (lexer, follow)
            })
        },
        || lr::build_lr(g),
    );
    let (lexer, follow) = lexer?;
    let lr = lr?.table;
    // The lexer and LR tables come from the same grammar, so they agree on terminals.
    Ok(crate::glr::Tables::from_parts(lexer, follow, lr).expect("tables from one grammar"))
}
