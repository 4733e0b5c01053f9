//! Every grammar file in the shared corpus either compiles (and lexes a sample of its
//! language as expected) or fails with the expected named error.

use serde::Deserialize;
use stackmask::compile::{build_lexer, compile_grammar, GrammarFormat};
use stackmask::lexer::lex;

use super::common::{data_dir, load_toml, resolve, shared_dir};

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

/// Runs the binary with `args`, reads the first `n` bytes of its output, closes the pipe
/// and waits: every later write fails with a broken pipe. Asserts the run ended quietly
/// (status 0, nothing on stderr, no `println!` panic) and returns the bytes read.
fn head_then_close(args: &[&std::ffi::OsStr], n: usize) -> Vec<u8> {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_stackmask"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs the binary");
    let mut head = vec![0u8; n];
    child
        .stdout
        .take()
        .expect("piped stdout")
        .read_exact(&mut head)
        .expect("the output starts");
    let out = child.wait_with_output().expect("the binary exits");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    head
}

/// `stackmask grammar … | head` ends quietly when the reader closes the pipe. The
/// Kubernetes schema's report is megabytes, far past any pipe buffer, so the write after
/// the close is certain.
#[test]
fn grammar_report_stops_quietly_when_stdout_closes() {
    let file = shared_dir().join("maskbench/Kubernetes---kb_228_Normalized.json");
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).expect("reads the MaskBench file"))
            .expect("MaskBench file is JSON");
    let schema = std::env::temp_dir().join(format!("stackmask-pipe-{}.json", std::process::id()));
    std::fs::write(&schema, doc["schema"].to_string()).unwrap();
    let head = head_then_close(
        &["grammar".as_ref(), "--grammar".as_ref(), schema.as_ref()],
        100,
    );
    std::fs::remove_file(&schema).ok();
    assert!(
        head.starts_with(b"terminals ("),
        "{:?}",
        String::from_utf8_lossy(&head)
    );
}

/// `stackmask sample --n <many> | head` stops at the first write after the reader
/// closes, long before a million documents.
#[test]
fn sample_stops_quietly_when_stdout_closes() {
    let args = ["sample", "--n", "1000000", "--max-tokens", "8"].map(std::ffi::OsStr::new);
    assert_eq!(head_then_close(&args, 15), b"# builtin:json ");
}

/// The main job's documents (built-in JSON, bundled o200k): each complete one parses as
/// JSON, its header's token count is at least one token per 16 bytes of the document
/// (the o200k tokens the draw can pick are short ASCII), and most documents are complete and non-trivial (objects or
/// arrays), not a bare scalar.
#[test]
fn sample_prints_complete_json_documents_with_their_token_counts() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_stackmask"))
        .args(["sample", "--n", "8", "--seed", "3"])
        .output()
        .expect("runs the binary");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let mut lines = text.lines();
    assert!(lines
        .next()
        .is_some_and(|l| l.starts_with("# builtin:json × ")));
    let (mut complete, mut structured) = (0, 0);
    while let Some(head) = lines.next() {
        assert!(head.starts_with("--- sample "), "{head}");
        let doc = lines.next().expect("a document line");
        let tokens: usize = head
            .split(", ")
            .nth(1)
            .and_then(|x| x.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no token count in {head}"));
        assert!(tokens * 16 >= doc.len() && tokens >= 1, "{head}\n{doc}");
        if head.contains(": complete,") {
            complete += 1;
            let v: serde_json::Value = serde_json::from_str(doc)
                .unwrap_or_else(|e| panic!("complete but not JSON ({e}): {doc}"));
            structured += usize::from(v.is_object() || v.is_array());
        }
    }
    assert!(complete >= 6, "{complete} of 8 complete:\n{text}");
    assert!(structured >= 4, "{structured} objects or arrays:\n{text}");
}

/// The indenter by explicit names, and its tab width: a grammar spelling its terminals
/// `NEWLINE` / `INDENT` / `DEDENT` is refused until they are named, and then commits and
/// is checked by the oracle as `_NL` / `_INDENT` / `_DEDENT` would be; a tab counts 8
/// columns unless told otherwise.
#[test]
fn indenter_by_name_and_tab_width() {
    use stackmask::compile::{build_glr_tables, compile_grammar, GrammarFormat, IndenterSpec};
    use stackmask::glr::GlrState;
    use stackmask::reference::Reference;
    let text = "start: (NEWLINE | stmt)*\nstmt: NAME \"=\" NAME NEWLINE | \"if\" NAME \":\" NEWLINE INDENT stmt+ DEDENT\nNAME: /[a-z]+/\nNEWLINE: /\\n[ \\t]*/+\n%ignore \" \"\n%declare INDENT DEDENT\n";
    let g = compile_grammar(text, GrammarFormat::Lark).unwrap();
    let e = build_glr_tables(&g).unwrap_err().to_string();
    assert!(
        e.contains("%declare DEDENT") || e.contains("%declare INDENT"),
        "{e}"
    );
    let mut named = g.clone();
    assert!(named
        .set_indenter(IndenterSpec::named("NL", "INDENT", "DEDENT"))
        .is_err());
    named
        .set_indenter(IndenterSpec::named("NEWLINE", "INDENT", "DEDENT"))
        .unwrap();
    let mut four = named.clone();
    four.set_tab_len(4).unwrap();
    assert!(
        g.clone().set_tab_len(4).is_err(),
        "a tab width without an indenter"
    );
    // A tab, then four spaces: the same level only when a tab counts 4.
    let doc = b"if a:\n\tx = b\n    y = c\n";
    for (g, complete, bad_at) in [(&named, false, Some(17)), (&four, true, None)] {
        let tables = std::sync::Arc::new(build_glr_tables(g).unwrap());
        let reference = Reference::new(g, &tables.lexer);
        assert_eq!(reference.is_complete(doc), complete);
        let mut s = GlrState::new(tables.clone());
        let mut failed = None;
        for (i, b) in doc.iter().enumerate() {
            if s.commit_bytes(std::slice::from_ref(b)).is_err() {
                failed = Some(i);
                break;
            }
        }
        assert_eq!(failed, bad_at);
        assert!(bad_at.is_none_or(|i| !reference.is_viable(&doc[..=i])));
        if failed.is_none() {
            assert_eq!(s.is_accepting(), complete);
        }
    }
}

/// Longest-match lexing, from the CLI: SynCode's Python grammar commits a program whose
/// lines start with `return`, `for`, `from` and `r`/`b`/`u`-prefixed strings only under
/// it (1-lookahead maximal munch stops at the first such line, where `_NL` could have
/// grown into a docstring); the mask automaton's masks under it equal the reference's
/// at every step of a document that backs up.
#[test]
fn longest_match_lexes_python_lines_and_masks_through_the_automaton() {
    let grammar = resolve("shared:grammars/syncode/python.lark");
    let tokenizer = resolve("shared:tokenizers/llama3.json");
    let doc = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/docs/sample.py");
    let run = |extra: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_stackmask"))
            .args(["check", "--grammar", &grammar, "--tokenizer", &tokenizer])
            .args(["--text", doc, "--mask-every", "1000000"])
            .args(extra)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    };
    let longest = run(&["--engine", "glr", "--longest-match"]);
    assert!(longest.contains("tokens, accepted"), "{longest}");
    let munch = run(&["--engine", "glr"]);
    assert!(munch.contains("rejected after"), "{munch}");
    let toy = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/corpus/longest_match/grammar.lark"
    );
    let text = std::env::temp_dir().join(format!("stackmask-longest-{}.txt", std::process::id()));
    std::fs::write(&text, "abcccx abcab c abcccd;").unwrap();
    let check = |extra: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_stackmask"))
            .args(["check", "--grammar", toy, "--tokenizer", &tokenizer])
            .args(["--text", text.to_str().unwrap(), "--engine", "dwa"])
            .args(["--mask-every", "1"])
            .args(extra)
            .output()
            .unwrap();
        let all = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.success(), all)
    };
    let (ok, out) = check(&["--longest-match"]);
    assert!(ok && out.contains("tokens, accepted"), "{out}");
    let (_, munch) = check(&[]);
    assert!(munch.contains("rejected after"), "{munch}");
    std::fs::remove_file(&text).unwrap();
}
