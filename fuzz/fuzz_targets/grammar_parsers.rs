//! Arbitrary text through the Lark, GBNF and JSON Schema front ends and the lexer
//! builder: every outcome is a grammar or an error value, never a panic; a grammar that
//! compiles lexes arbitrary bytes without panicking either.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stackmask::compile::frontend::json_schema::{self, SchemaOptions};
use stackmask::compile::{compile_grammar_bytes, build_lexer, GrammarFormat};
use stackmask::lexer::lex;

fuzz_target!(|data: &[u8]| {
    // First byte picks the format (and schema options); the rest is grammar text, then
    // (after a NUL) a document.
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let (text, doc) = match rest.iter().position(|&b| b == 0) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &[][..]),
    };
    let compiled = match sel % 3 {
        0 => compile_grammar_bytes(text, GrammarFormat::Lark).map_err(|_| ()),
        1 => compile_grammar_bytes(text, GrammarFormat::Gbnf).map_err(|_| ()),
        _ => {
            let Ok(text) = std::str::from_utf8(text) else {
                return;
            };
            let opts = SchemaOptions {
                compact: sel & 4 != 0,
                lenient: sel & 8 != 0,
            };
            json_schema::compile(text, &opts).map(|l| l.grammar).map_err(|_| ())
        }
    };
    if let Ok(g) = compiled {
        assert!(g.validate().is_ok());
        if let Ok(lexer) = build_lexer(&g) {
            let _ = lex(&lexer, doc);
        }
    }
});
