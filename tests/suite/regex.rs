//! The regex front end: table-driven cases (tests/data/regex.toml) checked against the
//! GLR recognizer, the reference oracle and the regex engine's own full match.

use std::sync::Arc;

use serde::Deserialize;
use stackmask::compile::{build_glr_tables, compile_grammar, GrammarFormat};
use stackmask::glr::GlrState;
use stackmask::reference::Reference;

use super::common::load_toml;

#[derive(Deserialize)]
struct Spec {
    case: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    pattern: String,
    #[serde(default)]
    valid: Vec<String>,
    #[serde(default)]
    invalid: Vec<String>,
    refused: Option<String>,
}

#[test]
fn regex_cases_accept_exactly_the_full_matches() {
    let spec: Spec = load_toml("regex.toml");
    let mut failures = Vec::new();
    for c in &spec.case {
        let compiled = compile_grammar(&c.pattern, GrammarFormat::Regex);
        if let Some(want) = &c.refused {
            match compiled {
                Err(e) if e.to_string().contains(want.as_str()) => {}
                Err(e) => failures.push(format!("{}: want {want:?}, got {e}", c.name)),
                Ok(_) => failures.push(format!("{}: want {want:?}, compiled", c.name)),
            }
            continue;
        }
        let g = match compiled {
            Ok(g) => g,
            Err(e) => {
                failures.push(format!("{}: {e}", c.name));
                continue;
            }
        };
        let tables = Arc::new(build_glr_tables(&g).expect("tables"));
        let reference = Reference::new(&g, &tables.lexer);
        let bare = c.pattern.trim_start_matches('^').trim_end_matches('$');
        let engine = regex_automata::meta::Regex::new(&format!(r"\A(?:{bare})\z")).unwrap();
        for (docs, want) in [(&c.valid, true), (&c.invalid, false)] {
            for d in docs {
                assert_eq!(
                    engine.is_match(d),
                    want,
                    "{}: the case itself is wrong on {d:?}",
                    c.name
                );
                let mut s = GlrState::new(tables.clone());
                let glr = s.commit_bytes(d.as_bytes()).is_ok() && s.is_accepting();
                let oracle = reference.is_complete(d.as_bytes());
                if glr != want || oracle != want {
                    failures.push(format!(
                        "{}: {d:?} should be {} (glr {glr}, reference {oracle})",
                        c.name,
                        if want { "accepted" } else { "rejected" }
                    ));
                }
            }
        }
    }
    assert!(spec.case.len() >= 10);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
