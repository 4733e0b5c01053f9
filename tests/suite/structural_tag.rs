//! Structural tags (issue 90 point 3): free text with tool calls after triggers, lexed in
//! lexer modes. Masks equal the reference's (which reads the modes from the grammar IR,
//! not from the lexer's tables) and the GLR walk's at every step, with real tokenizers,
//! canonical and random segmentations (and the corpus case `structural_tag` under every
//! engine); a trigger split across tokens is caught.

use stackmask::compile::{Compiler, GrammarError, GrammarFormat};
use stackmask::glr::walk::SortedTokens;
use stackmask::ids::TokenId;
use stackmask::runtime::Matcher;
use stackmask::vocab::segment::random_segmentation;
use stackmask::vocab::Vocab;

use super::common::resolve;
use super::special_tokens::{bit, engines, replay};

/// Two tools after `<function=`, Llama-3.1's custom tool-call format.
const FUNCTIONS: &str = r#"{
  "type": "structural_tag",
  "structures": [
    {"begin": "<function=get_weather>",
     "schema": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 8}},
                "required": ["city"], "additionalProperties": false},
     "end": "</function>"},
    {"begin": "<function=search>",
     "schema": {"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}},
                "required": ["q"], "additionalProperties": false},
     "end": "</function>"}
  ],
  "triggers": ["<function="]
}"#;

fn vocabs() -> Vec<Vocab> {
    ["llama3.json", "qwen2_5.json", "llama2.json"]
        .iter()
        .map(|f| Vocab::load(&resolve(&format!("shared:tokenizers/{f}"))).unwrap())
        .collect()
}

fn segmentations(v: &Vocab, doc: &str) -> Vec<Vec<TokenId>> {
    vec![
        v.encode(doc).unwrap(),
        random_segmentation(v, doc.as_bytes(), 11).unwrap(),
    ]
}

#[test]
fn function_calls_in_free_text_match_the_reference() {
    let docs = [
        "Let me check. <function=get_weather>{\"city\": \"Oslo\"}</function> It is cold.",
        "<function=search>{\"q\": \"a <b> {c}\", \"n\": 3}</function><function=get_weather>{\"city\":\"Rome\"}</function>",
        "No call here, only text with {braces} and \"quotes\" and <tags>.",
        "Almost <function but not quite.",
    ];
    documents_match_the_reference(FUNCTIONS, GrammarFormat::StructuralTag, &docs);
}

/// Replays each document (canonical and a random segmentation, on Llama-3, Qwen2.5 and
/// Llama-2) through `spec`, masks checked against the reference at every step; each
/// document may end.
pub(super) fn documents_match_the_reference(spec: &str, format: GrammarFormat, docs: &[&str]) {
    for v in vocabs() {
        let sorted = SortedTokens::new(&v);
        let e = engines(&v, spec, format);
        for (d, doc) in docs.iter().enumerate() {
            for (n, ids) in segmentations(&v, doc).iter().enumerate() {
                let what = format!("{} doc {d} seg {n}", v.name());
                let masks = replay(&e, &v, &sorted, ids, &what);
                assert!(bit(masks.last().unwrap(), v.eos()[0]), "{what}: cannot end");
            }
        }
    }
}

/// Texts that break the format are refused at their first bad byte by commit.
#[test]
fn broken_calls_do_not_commit() {
    let v = &vocabs()[0];
    let e = engines(v, FUNCTIONS, GrammarFormat::StructuralTag);
    for (bad, ok_prefix) in [
        // An unknown tool after the trigger.
        ("Hi <function=get_time>{}</function>", "Hi <function=get_"),
        // A city past maxLength 8.
        (
            "<function=get_weather>{\"city\": \"Reykjavik\"}</function>",
            "<function=get_weather>{\"city\": \"Reykjavi",
        ),
        // A body that does not end with the end string.
        (
            "<function=search>{\"q\": \"x\"}</func>",
            "<function=search>{\"q\": \"x\"}</func",
        ),
    ] {
        let mut m = Matcher::new(e.tables.clone(), e.dwa.clone());
        let mut fed = 0;
        let mut failed = false;
        for &b in bad.as_bytes() {
            if m.commit_bytes(&[b]).is_err() {
                failed = true;
                break;
            }
            fed += 1;
        }
        assert!(failed, "{bad}: committed whole");
        assert_eq!(&bad[..fed], ok_prefix, "{bad}: refused at the wrong byte");
        // The reference agrees on where the text stops being viable.
        assert!(e.reference.is_viable(&bad.as_bytes()[..fed]), "{bad}");
        assert!(!e.reference.is_viable(&bad.as_bytes()[..fed + 1]), "{bad}");
    }
}

/// A trigger split across tokens is caught: after `<func` and `tion=`, only a begin's
/// rest may follow, where before the trigger any text could.
#[test]
fn a_trigger_split_across_tokens_starts_the_call() {
    let v = &vocabs()[0];
    let e = engines(v, FUNCTIONS, GrammarFormat::StructuralTag);
    let hello = v.encode(" hello").unwrap();
    assert_eq!(hello.len(), 1);
    let mut m = Matcher::new(e.tables.clone(), e.dwa.clone());
    let mut words = vec![0u32; v.len().div_ceil(32)];
    for (piece, hello_allowed) in [("Sure <func", true), ("tion=", false), ("search>", false)] {
        for t in v.encode(piece).unwrap() {
            m.commit(v, t).unwrap();
        }
        m.fill_mask(&mut words).unwrap();
        assert_eq!(bit(&words, hello[0]), hello_allowed, "after {piece:?}");
    }
    // Inside the body a JSON object starts: `{` yes, text no.
    let brace = v.encode("{").unwrap()[0];
    assert!(bit(&words, brace));
}

/// Special tokens as trigger and end (Llama-3.1's `<|python_tag|>` … `<|eom_id|>`, ids
/// 128010 and 128008, which the Llama-3 tokenizer here names as reserved tokens 5 and 4):
/// the trigger is allowed anywhere in free text, the end exactly where a body completes.
#[test]
fn special_token_triggers_and_ends_match_the_reference() {
    let v = &vocabs()[0];
    let spec = r#"{"type": "structural_tag",
      "structures": [{"begin": "<[128010]>", "end": "<|reserved_special_token_4|>",
        "schema": {"type": "object", "properties": {"name": {"const": "f"}, "x": {"type": "integer"}},
                   "required": ["name", "x"], "additionalProperties": false}}],
      "triggers": ["<[128010]>"], "at_least_one": true}"#;
    let sorted = SortedTokens::new(v);
    let e = engines(v, spec, GrammarFormat::StructuralTag);
    let tag = TokenId::from_u32(128010);
    let eom = special(v, "<|reserved_special_token_4|>");
    let mut ids = v.encode("Calling f now: ").unwrap();
    ids.push(tag);
    ids.extend(v.encode(r#"{"name": "f", "x": 12}"#).unwrap());
    ids.push(eom);
    ids.extend(v.encode(" done").unwrap());
    let masks = replay(&e, v, &sorted, &ids, "special trigger");
    let at_tag = ids.iter().position(|&t| t == tag).unwrap();
    let at_eom = ids.iter().position(|&t| t == eom).unwrap();
    for (i, m) in masks.iter().enumerate() {
        let free = i <= at_tag || i > at_eom;
        assert_eq!(bit(m, tag), free, "step {i}: the trigger");
        assert_eq!(bit(m, eom), i == at_eom, "step {i}: the end");
        // At least one call: the sequence may end only after it.
        assert_eq!(bit(m, v.eos()[0]), i > at_eom, "step {i}: end of sequence");
    }
}

fn special(v: &Vocab, name: &str) -> TokenId {
    v.special_tokens()
        .iter()
        .find(|(_, n)| n == name)
        .unwrap_or_else(|| panic!("{name}"))
        .0
}

/// Bodies written as a Lark grammar (one with a `%json` rule item inside) and as a regex,
/// beside a schema, after two triggers one of which ends the other (`<tool>` and `l>`:
/// the longer wins where both end).
#[test]
fn lark_and_regex_bodies_match_the_reference() {
    let spec = r#"{"type": "structural_tag",
      "structures": [
        {"begin": "<tool>sum ", "grammar": "start: NUM (\"+\" NUM)*\nNUM: /[0-9]+/\n", "end": "</tool>"},
        {"begin": "<tool>word ", "regex": "[a-z]+( [a-z]+)*", "end": "</tool>"},
        {"begin": "<tool>set ", "grammar": "start: KEY \"=\" %json {\"type\": \"array\", \"items\": {\"type\": \"integer\"}}\nKEY: /[a-z]+/\n", "end": "</tool>"},
        {"begin": "l>", "schema": {"type": "boolean"}, "end": "."}
      ],
      "triggers": ["<tool>", "l>"]}"#;
    let docs = [
        "Adding: <tool>sum 1+22+333</tool> and <tool>word to be or not</tool>!",
        "cool l>true. <tool>sum 4</tool><tool>set xs=[1, -2, 30]</tool> ok",
    ];
    documents_match_the_reference(spec, GrammarFormat::StructuralTag, &docs);
}

/// Specs the lexer modes cannot express, or that are malformed, are refused by name.
#[test]
fn bad_specs_are_refused_by_name() {
    let v = &vocabs()[0];
    let c = Compiler::new(v);
    let obj = r#"{"type": "object"}"#;
    let cases = [
        (
            format!(
                r#"{{"structures": [{{"begin": "<a>", "schema": {obj}, "end": ""}}], "triggers": ["<a>"]}}"#
            ),
            "the end is empty",
        ),
        (
            format!(
                r#"{{"structures": [{{"begin": "<b>", "schema": {obj}, "end": "</b>"}}], "triggers": ["<a>"]}}"#
            ),
            "starts with no trigger",
        ),
        (
            format!(
                r#"{{"structures": [{{"begin": "<a>x", "schema": {obj}, "end": "."}}, {{"begin": "<a>x", "schema": {obj}, "end": ";"}}], "triggers": ["<a>"]}}"#
            ),
            "structures 0 and 1 have the same begin",
        ),
        (
            format!(
                r#"{{"structures": [{{"begin": "<a>", "schema": {obj}, "end": "."}}], "triggers": ["<a>", "<z>"]}}"#
            ),
            "trigger `<z>` starts no structure",
        ),
        (
            format!(
                r#"{{"structures": [{{"begin": "<a>", "schema": {obj}, "regex": "x", "end": "."}}], "triggers": ["<a>"]}}"#
            ),
            "exactly one body",
        ),
        (
            format!(
                r#"{{"structures": [{{"begin": "<a>", "schema": {obj}, "end": "."}}], "triggers": ["<a>"], "extra": 1}}"#
            ),
            "unknown field `extra`",
        ),
        (r#"{"structures": [], "#.to_string(), "not JSON at 1:"),
        (
            format!(
                r#"{{"structures": [{{"begin": "<a>", "schema": {obj}, "end": "<[1,2]>"}}], "triggers": ["<a>"]}}"#
            ),
            "structure 0: end `<[1,2]>`",
        ),
    ];
    for (spec, want) in &cases {
        match c.grammar(spec, GrammarFormat::StructuralTag) {
            Err(e @ GrammarError::StructuralTag { .. }) => {
                assert!(e.to_string().contains(want), "{spec}: {e}")
            }
            other => panic!("{spec}: {other:?}"),
        }
    }
    // An end a body terminal also matches: the lexer could not tell which mode follows.
    let spec = r#"{"structures": [{"begin": "<a>", "schema": {"type": "object"}, "end": "}"}], "triggers": ["<a>"]}"#;
    let g = c.grammar(spec, GrammarFormat::StructuralTag).unwrap();
    match c.tables(&g) {
        Err(e @ GrammarError::Unsupported { .. }) => {
            assert!(e.to_string().contains("different lexer modes"), "{e}")
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    // A body's own error names the structure.
    let spec = r#"{"structures": [{"begin": "<a>", "schema": {"type": "nope"}, "end": "."}], "triggers": ["<a>"]}"#;
    assert!(matches!(
        c.grammar(spec, GrammarFormat::StructuralTag),
        Err(GrammarError::InStructure { index: 0, .. })
    ));
}
