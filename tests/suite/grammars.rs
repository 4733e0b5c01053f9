//! Every grammar file in the shared corpus either compiles (and lexes a sample of its
//! language as expected) or fails with the expected named error.

use serde::Deserialize;
use stackmask::compile::{compile_grammar, lexer_build::build_lexer, GrammarFormat};
use stackmask::lexer::lex;

use super::common::{data_dir, load_toml, shared_dir};

#[derive(Deserialize)]
struct Spec {
    grammar: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    path: String,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    sample: Option<String>,
    #[serde(default)]
    sample_file: Option<String>,
    #[serde(default)]
    expect: Vec<(String, String)>,
    #[serde(default)]
    one_char_lexemes: bool,
}

fn grammar_files(dir: &std::path::Path, out: &mut Vec<String>, root: &std::path::Path) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            grammar_files(&p, out, root);
        } else if p.extension().is_some_and(|x| x == "lark" || x == "gbnf") {
            out.push(p.strip_prefix(root).unwrap().display().to_string());
        }
    }
}

#[test]
fn shared_grammars_load_or_fail_by_name() {
    let spec: Spec = load_toml("grammars.toml");
    let root = shared_dir().join("grammars");
    let mut files = Vec::new();
    grammar_files(&root, &mut files, &root);
    for f in &files {
        assert!(
            spec.grammar.iter().any(|c| &c.path == f),
            "{f} is not listed in tests/data/grammars.toml"
        );
    }
    for case in &spec.grammar {
        let path = root.join(&case.path);
        let text = std::fs::read_to_string(&path).unwrap();
        let format = GrammarFormat::from_path(&case.path);
        let result = compile_grammar(&text, format).and_then(|g| build_lexer(&g).map(|l| (g, l)));
        match (&case.error, result) {
            (Some(want), Err(e)) => {
                let msg = e.to_string();
                assert!(
                    msg.contains(want.as_str()),
                    "{}: error {msg:?} lacks {want:?}",
                    case.path
                );
                if !want.starts_with("no start rule") {
                    assert!(
                        e.span().is_some_and(|s| s.line > 0),
                        "{}: no line:column",
                        case.path
                    );
                }
            }
            (Some(want), Ok(_)) => panic!("{}: loaded, expected error {want:?}", case.path),
            (None, Err(e)) => panic!("{}: {e}", case.path),
            (None, Ok((g, lexer))) => {
                assert!(!g.productions.is_empty());
                let doc = match (&case.sample, &case.sample_file) {
                    (Some(s), _) => s.clone(),
                    (None, Some(f)) => std::fs::read_to_string(data_dir().join(f)).unwrap(),
                    (None, None) => panic!("{}: no sample", case.path),
                };
                let lexemes = lex(&lexer, doc.as_bytes())
                    .unwrap_or_else(|e| panic!("{}: sample does not lex: {e}", case.path));
                // Lexemes tile the document.
                let mut pos = 0;
                for l in &lexemes {
                    assert_eq!(l.start, pos);
                    assert!(l.end > l.start);
                    pos = l.end;
                }
                assert_eq!(pos, doc.len());
                for (text, term) in &case.expect {
                    let found = lexemes.iter().any(|l| {
                        &doc[l.start..l.end] == text
                            && l.terminals.iter().any(|&t| lexer.terminal_name(t) == term)
                    });
                    assert!(found, "{}: no lexeme {text:?} as {term}", case.path);
                }
                if case.one_char_lexemes {
                    assert_eq!(lexemes.len(), doc.chars().count(), "{}", case.path);
                    for l in &lexemes {
                        assert_eq!(l.terminals.len(), 1, "{}: ambiguous atom", case.path);
                    }
                }
            }
        }
    }
}
