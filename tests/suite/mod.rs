//! Integration tests, one module per concern; cases live in `tests/data/`.

mod bad_grammars;
mod common;
mod grammars;
mod lexer;
mod vocab;
