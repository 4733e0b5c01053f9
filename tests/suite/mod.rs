//! Integration tests, one module per concern; cases live in `tests/data/`.

mod artifact;
mod bad_grammars;
mod commit;
mod common;
mod compile_stop;
mod contextual;
mod dwa_programs;
mod glr_state;
mod grammars;
mod json_schema;
mod lexer;
mod matcher_api;
mod mutated_programs;
mod python_programs;
mod regex;
mod special_tokens;
mod structural_tag;
mod vocab;
