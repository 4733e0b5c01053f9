//! Lexer cases from tests/data/lexer/*.toml: a grammar and inputs with the lexemes (text
//! and emitted terminals) or the byte offset of the error.

use serde::Deserialize;
use stackmask::compile::{compile_grammar, lexer_build::build_lexer, GrammarFormat};
use stackmask::lexer::{lex, LexErrorKind};

use super::common::data_dir;

#[derive(Deserialize)]
struct File {
    grammar: String,
    case: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    #[serde(default)]
    input: Option<String>,
    #[serde(default)]
    input_hex: Option<String>,
    #[serde(default)]
    lexemes: Option<Vec<(String, String)>>,
    #[serde(default)]
    error_at: Option<usize>,
    #[serde(default)]
    at_end: bool,
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn lexer_cases() {
    let mut files: Vec<_> = std::fs::read_dir(data_dir().join("lexer"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 6);
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let f: File = toml::from_str(&std::fs::read_to_string(&path).unwrap())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let g = compile_grammar(&f.grammar, GrammarFormat::Lark)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let lexer = build_lexer(&g).unwrap_or_else(|e| panic!("{name}: {e}"));
        for c in &f.case {
            let input = match (&c.input, &c.input_hex) {
                (Some(s), _) => s.as_bytes().to_vec(),
                (None, Some(h)) => hex(h),
                _ => panic!("{name}: case without input"),
            };
            let r = lex(&lexer, &input);
            match (&c.lexemes, c.error_at, r) {
                (Some(want), None, Ok(got)) => {
                    let got: Vec<(String, String)> = got
                        .iter()
                        .map(|l| {
                            let mut names: Vec<&str> = l
                                .terminals
                                .iter()
                                .map(|&t| lexer.terminal_name(t))
                                .collect();
                            names.sort();
                            (
                                String::from_utf8_lossy(&input[l.start..l.end]).into_owned(),
                                names.join("|"),
                            )
                        })
                        .collect();
                    assert_eq!(&got, want, "{name}: {:?}", String::from_utf8_lossy(&input));
                }
                (None, Some(at), Err(e)) => {
                    assert_eq!(
                        e.offset,
                        at,
                        "{name}: {:?}: {e}",
                        String::from_utf8_lossy(&input)
                    );
                    assert_eq!(
                        e.kind == LexErrorKind::UnexpectedEnd,
                        c.at_end,
                        "{name}: {:?}: {e}",
                        String::from_utf8_lossy(&input)
                    );
                }
                (_, _, r) => panic!(
                    "{name}: {:?}: unexpected {r:?}",
                    String::from_utf8_lossy(&input)
                ),
            }
        }
    }
}
