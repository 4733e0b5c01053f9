//! Everything offline: grammar text × vocabulary → the frozen recognizer tables
//! ([`crate::glr::Tables`]) and mask automaton ([`crate::dwa::Dwa`]). Nothing here runs
//! at decode time, and the decode-time layers never import this module.
//!
//! The pipeline, one folder per stage:
//! 1. [`frontend`]: Lark, GBNF, JSON Schema, regex and structural-tag text → the grammar IR.
//! 2. [`grammar`]: the IR ([`Grammar`]), EBNF expansion and pruning.
//! 3. [`lexer`]: terminals → the byte-level lexer DFA and its follow tables (for grammars
//!    lexed contextually, first their lexer modes from the grammar's follow sets).
//! 4. [`lr`]: rules → LALR(1) tables that keep every conflict (the GLR parser's).
//! 5. [`dwa`]: tables × vocabulary → the mask automaton.
//!
//! [`Compiler`] runs it for one vocabulary: every caller goes through it. Errors are
//! [`GrammarError`]s with line:column ([`error`]).

mod compiler;
pub mod dwa;
pub mod error;
pub mod frontend;
pub(crate) mod grammar;
mod interner;
mod interrupt;
pub(crate) mod lexer;
pub mod lr;

pub use compiler::{Compiler, Lexing};
pub use dwa::build::DwaLimits;
pub use dwa::string_split::SplitMode;
pub use error::{GrammarError, Span};
pub use frontend::json_schema;
pub use grammar::ir::{Grammar, IndenterSpec};
pub use lexer::build::{build_lexer, LexerOptions};

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
    /// An XGrammar-style structural tag (JSON): free text with tool calls after triggers
    /// (`frontend::structural_tag`).
    StructuralTag,
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
pub const BUILTIN_JSON: &str = include_str!("frontend/builtin/json.lark");

/// Compiles grammar text in the given format into the IR.
pub fn compile_grammar(text: &str, format: GrammarFormat) -> Result<Grammar, GrammarError> {
    match format {
        GrammarFormat::Lark => frontend::lark::compile(text),
        GrammarFormat::Gbnf => frontend::gbnf::compile(text),
        GrammarFormat::JsonSchema => json_schema::compile(text, &Default::default())
            .map(|l| l.grammar)
            .map_err(GrammarError::from),
        GrammarFormat::Regex => frontend::regex::compile(text),
        GrammarFormat::StructuralTag => frontend::structural_tag::compile(text),
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
/// [`lexer::build::COUNT_MARGIN`] explicit layers before each bound, enough for a mask
/// automaton over any vocabulary whose tokens are at most that long).
pub fn build_glr_tables(g: &Grammar) -> Result<crate::glr::Tables, GrammarError> {
    build_glr_tables_with(g, &LexerOptions::default())
}

/// [`build_glr_tables`] with explicit lexer options (e.g.
/// [`LexerOptions::for_vocab`], the smallest margin a vocabulary allows).
pub fn build_glr_tables_with(
    g: &Grammar,
    opts: &LexerOptions,
) -> Result<crate::glr::Tables, GrammarError> {
    build_glr_tables_until(g, opts, &interrupt::Interrupt::default())
}

/// [`build_glr_tables_with`], stopping with `stop`'s error once it says so.
pub(crate) fn build_glr_tables_until(
    g: &Grammar,
    opts: &LexerOptions,
    stop: &interrupt::Interrupt,
) -> Result<crate::glr::Tables, GrammarError> {
    let indenter = g.post_lexer()?;
    // The lexer (with its follow sets) and the LR automaton come from the grammar alone:
    // built side by side. A lexer error is reported first, as when built in turn.
    let (lexer, lr) = rayon::join(
        || {
            lexer::build::build_lexer_until(g, opts, stop).map(|lexer| {
                let follow = lexer::follow::build_follow(&lexer);
                (lexer, follow)
            })
        },
        || lr::build_lr_until(g, stop),
    );
    let (lexer, follow) = lexer?;
    let lr = lr?.table;
    stop.check()?;
    // Inside brackets the indenter drops newlines: what can follow there steps over them.
    let indenter = indenter.map(|ind| {
        let inside = lexer::follow::build_follow_dropping(&lexer, Some(ind.nl));
        (ind, inside)
    });
    // The lexer and LR tables come from the same grammar, so they agree on terminals.
    let mut tables =
        crate::glr::Tables::from_parts(lexer, follow, lr).expect("tables from one grammar");
    tables.indenter = indenter;
    Ok(tables)
}

/// The mask automaton's refusal of a grammar behind an indenter.
pub(crate) fn automaton_refuses_indentation(why: &str) -> GrammarError {
    GrammarError::Unsupported {
        span: Default::default(),
        construct: "indentation (`_INDENT` / `_DEDENT` from an indenter)".into(),
        reason: format!(
            "the mask automaton carries an indenter only where the grammar's parses show its \
             brackets and levels, and here {why}: such a grammar commits (GLR) and is checked \
             by the reference, but has no automaton masks"
        ),
    }
}
