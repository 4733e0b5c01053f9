//! Stage 1, front ends: grammar text → the grammar IR ([`crate::compile::grammar`]).
//!
//! Each front end parses its syntax, resolves names, and hands rule bodies to the shared
//! EBNF expansion (`crate::compile::grammar::ebnf`); errors carry line:column (or a
//! JSON pointer) and name what is unsupported.
//!
//! - [`lark`]: Lark EBNF (start rule `start`), with Lark's `common` terminals.
//! - `gbnf`: llama.cpp GBNF (start rule `root`), lowered over one-character terminals.
//! - [`json_schema`]: JSON Schema drafts 4 to 2020-12, exact or refused by keyword.
//! - `regex`: a whole-output regular expression.
//! - `special`: special tokens as Lark and GBNF rules name them (`<|name|>`, `<[id]>`).
//! - [`structural_tag`]: XGrammar's structural tags (free text with tool calls after
//!   triggers), whose free text and bodies are lexed in lexer modes
//!   ([`crate::compile::grammar::ir::LexMode`]).
//!
//! After this stage: a [`crate::compile::Grammar`] whose terminals are regular
//! expressions (with priorities, some ignored or counted) and whose rules are plain BNF.

pub(crate) mod gbnf;
pub mod json_schema;
pub mod lark;
pub(crate) mod regex;
pub(crate) mod special;
pub mod structural_tag;
