//! Arbitrary text through the Lark and GBNF front ends and the lexer builder: every
//! outcome is a grammar or an error value, never a panic; a grammar that compiles lexes
//! arbitrary bytes without panicking either.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stackmask::compile::{compile_grammar_bytes, lexer_build::build_lexer, GrammarFormat};
use stackmask::lexer::lex;

fuzz_target!(|data: &[u8]| {
    // First byte picks the format; the rest is grammar text, then (after a NUL) a document.
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let format = if sel & 1 == 0 {
        GrammarFormat::Lark
    } else {
        GrammarFormat::Gbnf
    };
    let (text, doc) = match rest.iter().position(|&b| b == 0) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &[][..]),
    };
    if let Ok(g) = compile_grammar_bytes(text, format) {
        assert!(g.validate().is_ok());
        if let Ok(lexer) = build_lexer(&g) {
            let _ = lex(&lexer, doc);
        }
    }
});
