//! Lexer cases from tests/data/lexer/*.toml: a grammar and inputs with the lexemes (text
//! and emitted terminals) or the byte offset of the error.

use serde::Deserialize;
use stackmask::compile::{build_lexer, compile_grammar, GrammarFormat};
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

/// A counting lexer's run table is checked when loaded: every field corrupted in a way the
/// transition function would trip over (a run of one iteration, exits that miss or point
/// into a template, virtual ids overlapping explicit ones or out of order, templates that
/// do not tile the states) fails validation instead of loading.
#[test]
fn corrupt_run_tables_are_refused() {
    use serde_json::{json, Value};
    use stackmask::lexer::LexerDfa;
    let schema = r#"{"type": "object", "properties": {"a": {"type": "string", "maxLength": 600}, "b": {"type": "string", "minLength": 1, "maxLength": 2000}}}"#;
    let g = compile_grammar(schema, GrammarFormat::JsonSchema).unwrap();
    let lexer = build_lexer(&g).unwrap();
    assert!(lexer.runs().len() >= 2, "the schema should give two runs");
    let good = serde_json::to_value(&lexer).unwrap();
    let load = |v: &Value| {
        serde_json::from_value::<LexerDfa>(v.clone())
            .unwrap()
            .validate()
    };
    assert!(load(&good).is_ok());
    let n = lexer.num_states() as u64;
    let first = u64::from(lexer.runs()[0].first);
    type Edit = Box<dyn Fn(&mut Value)>;
    let edits: Vec<(&str, Edit)> = vec![
        (
            "one iteration",
            Box::new(|v| v["runs"][0]["len"] = json!(1)),
        ),
        (
            "exit missing",
            Box::new(|v| {
                v["runs"][0]["exits"].as_array_mut().unwrap().pop();
            }),
        ),
        (
            "exit into a template",
            Box::new(move |v| v["runs"][0]["exits"][0] = json!(first)),
        ),
        (
            "exit dead",
            Box::new(|v| v["runs"][0]["exits"][0] = json!(0)),
        ),
        (
            "virtual ids overlap",
            Box::new(move |v| v["runs"][0]["virtual_base"] = json!(n - 1)),
        ),
        (
            "virtual ids out of order",
            Box::new(|v| {
                let b = v["runs"][1]["virtual_base"].as_u64().unwrap();
                v["runs"][1]["virtual_base"] = json!(b + 1);
            }),
        ),
        (
            "templates do not tile",
            Box::new(|v| {
                let w = v["runs"][0]["width"].as_u64().unwrap();
                v["runs"][0]["width"] = json!(w - 1);
            }),
        ),
        (
            "run start past the states",
            Box::new(move |v| v["run_from"] = json!(n + 1)),
        ),
        (
            "template row into another run",
            Box::new(|v| {
                let stride = v["stride"].as_u64().unwrap();
                let (a, b) = (&v["runs"][0]["first"], &v["runs"][1]["first"]);
                let (a, b) = (a.as_u64().unwrap(), b.as_u64().unwrap());
                v["trans"][(a * stride) as usize] = json!(b);
            }),
        ),
        (
            "transition past the states",
            Box::new(move |v| {
                let last = v["trans"].as_array().unwrap().len() - 1;
                v["trans"][last] = json!(n);
            }),
        ),
        (
            "too many virtual ids",
            Box::new(|v| v["runs"][1]["len"] = json!(u32::MAX)),
        ),
        (
            "unit starts beyond the layer",
            Box::new(|v| {
                let w = v["runs"][0]["width"].as_u64().unwrap();
                v["runs"][0]["starts"] = json!(w + 1);
            }),
        ),
    ];
    for (what, edit) in &edits {
        let mut v = good.clone();
        edit(&mut v);
        assert!(load(&v).is_err(), "{what}: loaded");
    }
}
