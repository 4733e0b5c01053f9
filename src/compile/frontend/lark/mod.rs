//! The Lark-style EBNF front end: grammar text → tokens (`token`) → statements
//! (`parse`) → IR (`lower`).
//!
//! Supported: rules and terminals, `?rule` / `!rule` / `_rule` (tree shaping only, so they
//! are plain rules here), `-> alias` (ignored), strings with the `i` flag, `/regex/flags`,
//! `"a".."z"` ranges, `|`, `?`, `*`, `+`, `[…]`, `~ n` and `~ n..m`, groups, terminal and
//! rule priorities, `%ignore`, `%import common.X` / `%import common (A, B)`, and
//! `%declare`: declared `_INDENT` and `_DEDENT` beside an `_NL` terminal turn on Lark's
//! indenter (`Grammar::indenter`), as SynCode's Python setup has it. Rejected by name:
//! templates, `%override`, `%extend`, imports of other modules, other declared terminals
//! used by rules (only a post-lexer could make them), anchors in regexes, and look-around
//! that the lexer cannot prove vacuous (`compile::lexer::build::remove_vacuous_look_around`).

mod lower;
mod parse;
mod token;

use crate::compile::error::GrammarError;
use crate::compile::frontend::json_schema::SchemaOptions;
use crate::compile::grammar::ir::Grammar;
use crate::compile::interrupt::Interrupt;

/// Compiles Lark grammar text (start rule `start`) into the grammar IR.
pub fn compile(src: &str) -> Result<Grammar, GrammarError> {
    compile_with_start(src, "start")
}

/// Compiles Lark grammar text with a chosen start rule.
pub fn compile_with_start(src: &str, start: &str) -> Result<Grammar, GrammarError> {
    lower::lower(src, start, &SchemaOptions::default(), &Interrupt::default())
}

/// [`compile`], lowering `%json` schemas with `schema` (whose `lenient` drops are not
/// listed).
pub fn compile_with(src: &str, schema: &SchemaOptions) -> Result<Grammar, GrammarError> {
    lower::lower(src, "start", schema, &Interrupt::default())
}

/// How the names of what a `%json` item adds begin (`%json@3:7` for the item's
/// nonterminal, `%json@3:7.` before each of its schema's terminals and nonterminals).
pub(crate) const JSON_ITEM: &str = "%json@";

/// Whether a grammar this front end lowered embeds a JSON Schema (`%json`): such grammars
/// are lexed contextually by default (see `lexer::contextual`).
pub(crate) fn embeds_json(g: &Grammar) -> bool {
    g.nonterminals.iter().any(|n| n.name.starts_with(JSON_ITEM))
}

/// [`compile`], lowering `%json` schemas with `schema` and stopping with `stop`'s error
/// once it says so.
pub(crate) fn compile_until(
    src: &str,
    schema: &SchemaOptions,
    stop: &Interrupt,
) -> Result<Grammar, GrammarError> {
    lower::lower(src, "start", schema, stop)
}
