//! Stage 2, the grammar IR and its passes: what every front end lowers into, and what
//! the lexer, LR and reference builders read.
//!
//! - [`ir`]: terminals (regular expressions with a priority; ignored, counted or
//!   intersected ones) and a plain BNF over terminals and nonterminals.
//! - `ebnf`: EBNF trees → BNF productions, expanded the way Lark does, so LR tables
//!   look like Lark's.
//! - `prune`: drops what the start symbol cannot reach and unproductive rules, and
//!   refuses cycles and hidden left recursion by name. After it: every rule is reachable
//!   and productive, ids are dense.

pub(crate) mod ebnf;
pub(crate) mod indent_check;
pub mod ir;
pub(crate) mod prune;
