//! The JSON Schema front end: a schema (drafts 4 to 2020-12 as they occur in practice)
//! lowers into the grammar IR, so JSON-Schema constraints run on the same lexer, GLR
//! and mask automaton as every other grammar.
//!
//! **Exact or refused.** Every keyword is either enforced exactly — the grammar accepts
//! a document iff it is valid JSON whose value satisfies the schema, restricted to the
//! documented spelling rules below — or compilation fails with
//! [`SchemaError::Unsupported`] naming the keyword and its JSON pointer. With
//! [`SchemaOptions::lenient`] such keywords are dropped instead and listed in
//! [`LoweredSchema::dropped`].
//!
//! Spelling rules (they narrow what is accepted, never widen it): object properties
//! appear in the order of `properties` (then required names that `properties` lacks),
//! each at most once; additional properties may appear anywhere between them; numbers
//! under bounds, `multipleOf` or `enum` are written without an exponent; integers
//! without a fraction; non-integers (`not: integer`) with a nonzero fraction digit or a
//! negative exponent on a mantissa ending in 1–9 (`number::NON_INTEGER`); in strings, a
//! `\uXXXX` escape spells only a control, DEL or a non-ASCII character, never printable
//! ASCII (`string`).
//! Whitespace between tokens is any JSON whitespace, or none with
//! [`SchemaOptions::compact`].
//!
//! Owns: `draft` (what a declared old draft changes: `$ref` siblings), `string` (value languages → JSON string literal regexes), `number` (ranges),
//! `format`, `key` (memo keys: a node's assertions only), `resolve` (`$ref`, `allOf` merging, `if` as a disjunction), `complement`
//! (the negations `oneOf`, `if` and `not` need, as unions of schemas that compile), `finite` (an `enum`/`const` beside
//! other keywords: its values filtered by the `jsonschema` validator), `lower` (schema →
//! IR). Depends on the IR, the EBNF expansion and pruning passes, `regex-syntax`,
//! `serde_json` and `jsonschema`.

mod complement;
mod draft;
mod finite;
mod format;
mod key;
mod lower;
mod number;
mod resolve;
mod string;

use crate::compile::error::GrammarError;
use crate::compile::grammar::ir::Grammar;
use crate::compile::interrupt::Interrupt;

/// How a schema is lowered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SchemaOptions {
    /// No whitespace between tokens (else any JSON whitespace is allowed).
    pub compact: bool,
    /// Drop keywords that cannot be enforced exactly (reported in
    /// [`LoweredSchema::dropped`]) instead of refusing the schema.
    pub lenient: bool,
}

/// A keyword dropped in lenient mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// The keyword (e.g. `uniqueItems`).
    pub keyword: String,
    /// JSON pointer of the schema that holds it.
    pub pointer: String,
    /// Why it could not be enforced.
    pub reason: String,
}

/// A schema lowered into the grammar IR.
#[derive(Debug, Clone)]
pub struct LoweredSchema {
    /// The grammar (start symbol: the root schema).
    pub grammar: Grammar,
    /// Keywords dropped in lenient mode (empty otherwise).
    pub dropped: Vec<Dropped>,
}

/// Why a schema could not be compiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// The schema text is not JSON.
    #[error("{line}:{col}: schema is not valid JSON: {message}")]
    Json {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        col: usize,
        /// The parser's message.
        message: String,
    },
    /// A keyword (or combination) that cannot be enforced exactly.
    #[error("{pointer}: unsupported keyword `{keyword}`: {reason}")]
    Unsupported {
        /// The keyword.
        keyword: String,
        /// JSON pointer of the schema holding it.
        pointer: String,
        /// Why.
        reason: String,
    },
    /// A keyword whose value is malformed (e.g. `"minLength": "x"`).
    #[error("{pointer}: invalid `{keyword}`: {reason}")]
    Invalid {
        /// The keyword.
        keyword: String,
        /// JSON pointer of the schema holding it.
        pointer: String,
        /// What is wrong.
        reason: String,
    },
    /// The schema accepts no JSON document at all.
    #[error("the schema accepts no document")]
    Unsatisfiable,
    /// The lowered grammar exceeds a limit or is otherwise rejected by the IR passes.
    #[error("lowered grammar: {0}")]
    Grammar(Box<GrammarError>),
}

impl SchemaError {
    /// A lowering stopped by its compile's cancel flag or time limit: that compile error
    /// (a stopped compile, not the schema's fault); any other error is given back.
    pub(crate) fn into_stopped(self) -> Result<GrammarError, SchemaError> {
        match self {
            SchemaError::Grammar(g)
                if matches!(*g, GrammarError::Cancelled | GrammarError::TimeLimit { .. }) =>
            {
                Ok(*g)
            }
            e => Err(e),
        }
    }

    /// A short, stable name for the kind of error (for tallies such as MaskBench's).
    pub fn kind(&self) -> &'static str {
        match self {
            SchemaError::Json { .. } => "json",
            SchemaError::Unsupported { .. } => "unsupported",
            SchemaError::Invalid { .. } => "invalid",
            SchemaError::Unsatisfiable => "unsatisfiable",
            SchemaError::Grammar(g) => match **g {
                GrammarError::TooLarge { .. } => "too_large",
                GrammarError::Cancelled => "cancelled",
                GrammarError::TimeLimit { .. } => "time_limit",
                _ => "grammar",
            },
        }
    }
}

/// Lowers JSON Schema text into the grammar IR.
pub fn compile(text: &str, opts: &SchemaOptions) -> Result<LoweredSchema, SchemaError> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| SchemaError::Json {
        line: e.line(),
        col: e.column(),
        message: e.to_string(),
    })?;
    compile_value(&value, opts)
}

/// Lowers an already parsed schema into the grammar IR.
pub fn compile_value(
    schema: &serde_json::Value,
    opts: &SchemaOptions,
) -> Result<LoweredSchema, SchemaError> {
    lower::lower(schema, opts, &Interrupt::default())
}

/// [`compile`], stopping with `stop`'s error (as [`SchemaError::Grammar`]) once it says so.
pub(crate) fn compile_until(
    text: &str,
    opts: &SchemaOptions,
    stop: &Interrupt,
) -> Result<LoweredSchema, SchemaError> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| SchemaError::Json {
        line: e.line(),
        col: e.column(),
        message: e.to_string(),
    })?;
    lower::lower(&value, opts, stop)
}
