//! Malformed and unsupported grammars give errors that name the problem and its
//! line:column (table in tests/data/bad_grammars.toml), and never panic.

use serde::Deserialize;
use stackmask::compile::{
    build_lexer, compile_grammar, compile_grammar_bytes, GrammarError, GrammarFormat,
};

use super::common::load_toml;

#[derive(Deserialize)]
struct Spec {
    case: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    format: String,
    text: String,
    error: String,
    at: String,
}

#[test]
fn bad_grammars_name_the_error_and_position() {
    let spec: Spec = load_toml("bad_grammars.toml");
    assert!(spec.case.len() >= 20);
    let mut failures = Vec::new();
    for c in &spec.case {
        let format = match c.format.as_str() {
            "lark" => GrammarFormat::Lark,
            "gbnf" => GrammarFormat::Gbnf,
            f => panic!("unknown format {f}"),
        };
        let r = compile_grammar(&c.text, format).and_then(|g| build_lexer(&g).map(|_| ()));
        match r {
            Ok(()) => failures.push(format!("{:?}: compiled", c.text)),
            Err(e) => {
                let msg = e.to_string();
                let at = e.span().map(|s| s.to_string()).unwrap_or_default();
                if !msg.contains(&c.error) || at != c.at {
                    failures.push(format!(
                        "{:?}:\n   got {msg:?} at {at:?}\n  want {:?} at {:?}",
                        c.text, c.error, c.at
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn invalid_utf8_grammar_is_an_error() {
    let r = compile_grammar_bytes(b"start: \"\xff\"\n", GrammarFormat::Lark);
    assert_eq!(r.unwrap_err(), GrammarError::InvalidUtf8 { offset: 8 });
}
