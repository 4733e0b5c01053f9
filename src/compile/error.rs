//! Errors of the compile layer: everything wrong with a grammar, with its position.

use std::fmt;

/// A 1-based line and column (in characters) in grammar text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    /// 1-based line.
    pub line: u32,
    /// 1-based column, counted in characters.
    pub col: u32,
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

/// Why a grammar could not be compiled. Every variant that comes from grammar text carries
/// the line:column it refers to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GrammarError {
    /// The text does not follow the grammar syntax.
    #[error("{span}: syntax error: {message}")]
    Syntax {
        /// Where.
        span: Span,
        /// What was expected or found.
        message: String,
    },
    /// A construct stackmask does not support (named), rejected rather than ignored.
    #[error("{span}: unsupported construct `{construct}`: {reason}")]
    Unsupported {
        /// Where.
        span: Span,
        /// The construct as written (e.g. `%declare _INDENT`).
        construct: String,
        /// Why it cannot be supported, or what to use instead.
        reason: String,
    },
    /// A rule or terminal is used but never defined.
    #[error("{span}: undefined {kind} `{name}`")]
    Undefined {
        /// Where it is used.
        span: Span,
        /// "rule" or "terminal".
        kind: &'static str,
        /// Its name.
        name: String,
    },
    /// A rule or terminal is defined twice.
    #[error("{span}: `{name}` is already defined at {first}")]
    Duplicate {
        /// The second definition.
        span: Span,
        /// The first definition.
        first: Span,
        /// Its name.
        name: String,
    },
    /// A terminal's regular expression is invalid.
    #[error("{span}: bad regular expression in terminal `{terminal}`: {message}")]
    BadRegex {
        /// Where the terminal is defined.
        span: Span,
        /// The terminal.
        terminal: String,
        /// The regex engine's message.
        message: String,
    },
    /// A terminal matches the empty string (terminals must consume input).
    #[error("{span}: terminal `{terminal}` matches the empty string")]
    EmptyTerminal {
        /// Where the terminal is defined.
        span: Span,
        /// The terminal.
        terminal: String,
    },
    /// A terminal refers to itself (terminals must be regular).
    #[error("{span}: terminal `{terminal}` is defined in terms of itself")]
    RecursiveTerminal {
        /// Where the terminal is defined.
        span: Span,
        /// The terminal.
        terminal: String,
    },
    /// The start rule is missing.
    #[error("no start rule `{name}`")]
    NoStart {
        /// The rule that was expected.
        name: String,
    },
    /// The start rule derives no finite document.
    #[error("start rule `{name}` derives no finite document")]
    NoDocument {
        /// The start rule.
        name: String,
    },
    /// The grammar exceeds a size limit (which bounds memory and compile time).
    #[error("{span}: grammar too large: {what} exceeds the limit of {limit}")]
    TooLarge {
        /// Where, if known (else 0:0).
        span: Span,
        /// What grew too large.
        what: String,
        /// The limit.
        limit: usize,
    },
    /// A JSON Schema that could not be lowered (refused keyword, bad value…).
    #[error("{0}")]
    Schema(Box<crate::compile::frontend::json_schema::SchemaError>),
    /// A JSON Schema embedded in a Lark grammar (`%json { … }`) that could not be lowered.
    #[error("{span}: %json schema: {error}")]
    EmbeddedSchema {
        /// Where `%json` is written.
        span: Span,
        /// Why the schema was refused.
        error: Box<crate::compile::frontend::json_schema::SchemaError>,
    },
    /// A structural tag spec that is not well formed or asks for what lexer modes cannot
    /// express (see `frontend::structural_tag`).
    #[error("structural tag: {message}")]
    StructuralTag {
        /// What is wrong, naming the field or structure.
        message: String,
    },
    /// A structure's body (its JSON Schema, Lark grammar or regex) that was refused.
    #[error("structural tag, structure {index}: {error}")]
    InStructure {
        /// The structure's index in `structures`.
        index: usize,
        /// Why its body was refused.
        error: Box<GrammarError>,
    },
    /// The compile was cancelled: its cancellation flag was set
    /// ([`crate::compile::Compiler::with_cancel`]).
    #[error("compile cancelled")]
    Cancelled,
    /// The compile ran past its time limit
    /// ([`crate::compile::Compiler::with_time_limit`]).
    #[error("compile stopped at its time limit of {limit_ms} ms")]
    TimeLimit {
        /// The limit.
        limit_ms: u64,
    },
    /// A special token the grammar names cannot be used with this tokenizer (or without
    /// one).
    #[error("{span}: special token `{token}`: {reason}")]
    SpecialToken {
        /// Where the grammar names it.
        span: Span,
        /// The token as written (`<|tool_call|>`, `<[128010]>`).
        token: String,
        /// Why it cannot be used.
        reason: String,
    },
    /// The grammar text is not valid UTF-8.
    #[error("grammar is not valid UTF-8 (byte {offset})")]
    InvalidUtf8 {
        /// Offset of the first invalid byte.
        offset: usize,
    },
}

impl GrammarError {
    /// The position the error refers to, if it has one.
    pub fn span(&self) -> Option<Span> {
        match self {
            GrammarError::Syntax { span, .. }
            | GrammarError::Unsupported { span, .. }
            | GrammarError::Undefined { span, .. }
            | GrammarError::Duplicate { span, .. }
            | GrammarError::BadRegex { span, .. }
            | GrammarError::EmptyTerminal { span, .. }
            | GrammarError::RecursiveTerminal { span, .. }
            | GrammarError::SpecialToken { span, .. }
            | GrammarError::EmbeddedSchema { span, .. }
            | GrammarError::TooLarge { span, .. } => Some(*span),
            GrammarError::NoStart { .. }
            | GrammarError::Schema(_)
            | GrammarError::NoDocument { .. }
            | GrammarError::InvalidUtf8 { .. }
            | GrammarError::Cancelled
            | GrammarError::StructuralTag { .. }
            | GrammarError::InStructure { .. }
            | GrammarError::TimeLimit { .. } => None,
        }
    }
}

impl From<crate::compile::frontend::json_schema::SchemaError> for GrammarError {
    fn from(e: crate::compile::frontend::json_schema::SchemaError) -> Self {
        GrammarError::Schema(Box::new(e))
    }
}
