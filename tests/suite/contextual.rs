//! Contextual lexing (issue 90 point 1): free text beside JSON Schemas embedded in Lark
//! grammars (`%json`), where each lexeme is lexed among the terminals that can follow the
//! one before it. Masks equal the reference's (which reads the modes from the grammar IR)
//! and the GLR walk's at every step, on real tokenizers, canonical and random
//! segmentations (and the corpus cases `json_in_text` and `contextual` under every
//! engine); global lexing refuses the same documents; what it cannot compose with is
//! refused by name.

use stackmask::compile::{Compiler, GrammarError, GrammarFormat, Lexing};
use stackmask::glr::walk::SortedTokens;
use stackmask::ids::TokenId;
use stackmask::runtime::Matcher;
use stackmask::vocab::segment::random_segmentation;
use stackmask::vocab::Vocab;

use super::common::resolve;
use super::special_tokens::{bit, engines, replay};
use super::structural_tag::documents_match_the_reference;

fn corpus_grammar(case: &str) -> String {
    let path = format!(
        "{}/tests/corpus/{case}/grammar.lark",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn free_text_beside_json_bodies_matches_the_reference() {
    let docs = [
        "Sure, let me check.<tool_call>{\"name\": \"weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call> Done.",
        "<tool_call>{\"name\":\"search\",\"arguments\":{\"query\":\"a < b\",\"limit\":3}}</tool_call> and {\"x\": 1} \"more\"",
        "Only text that looks like a body: {\"name\": \"weather\", \"arguments\": {}}",
        "One.\n<tool_call>{\"name\": \"weather\", \"arguments\": {\"city\": \"\"}}</tool_call>\nTwo:\n<tool_call>{\"name\": \"search\", \"arguments\": {\"query\": \"}\"}}</tool_call>",
    ];
    documents_match_the_reference(&corpus_grammar("json_in_text"), GrammarFormat::Lark, &docs);
}

/// The same documents under global lexing: the free-text terminal takes the body's text
/// (a longer match than `{`), so the first call is refused where its body starts.
#[test]
fn global_lexing_refuses_the_body_contextual_lexing_takes() {
    let v = Vocab::load(&resolve("shared:tokenizers/llama3.json")).unwrap();
    let grammar = corpus_grammar("json_in_text");
    let doc =
        "Sure.<tool_call>{\"name\": \"search\", \"arguments\": {\"query\": \"q\"}}</tool_call>";
    let body = doc.find('{').unwrap();
    for (lexing, refused_at) in [
        (Lexing::Auto, None),
        (Lexing::Contextual, None),
        (Lexing::Global, Some(body)),
    ] {
        let c = Compiler::new(&v).with_lexing(lexing);
        let compiled = c.compile(&grammar, GrammarFormat::Lark).unwrap();
        let mut m = Matcher::from_compiled(&compiled);
        let fed = doc.bytes().position(|b| m.commit_bytes(&[b]).is_err());
        assert_eq!(fed, refused_at, "{lexing:?}");
    }
}

/// Free text of any characters, then a special token, a JSON body and a second special
/// token (Llama-3.1's `<|python_tag|>` … `<|eom_id|>` format, with base Llama-3's
/// header tokens standing in): the text's terminal matches everything but a special
/// token's lexeme, so only contextual lexing lets a body be lexed at all.
#[test]
fn free_text_between_special_tokens_matches_the_reference() {
    let v = Vocab::load(&resolve("shared:tokenizers/llama3.json")).unwrap();
    let (open, close) = (TokenId::from_u32(128006), TokenId::from_u32(128007));
    let grammar = "start: TEXT? (call TEXT?)*\n\
                   TEXT: /(.|\\n)+/\n\
                   call: <|start_header_id|> tool <|end_header_id|>\n\
                   tool: %json {\"type\": \"object\", \"properties\": {\"name\": {\"const\": \"search\"}, \
                   \"query\": {\"type\": \"string\"}}, \"required\": [\"name\", \"query\"], \
                   \"additionalProperties\": false}\n";
    let e = engines(&v, grammar, GrammarFormat::Lark);
    let sorted = SortedTokens::new(&v);
    let parts: [&[&str]; 2] = [
        &[
            "Any text: <b>{\"x\"}</b>",
            "{\"name\": \"search\", \"query\": \"<|x|>\"}",
            " more {text}",
        ],
        &["", "{\"name\":\"search\",\"query\":\"\"}", ""],
    ];
    for (d, texts) in parts.iter().enumerate() {
        for seg in 0..2u64 {
            let encode = |s: &str| match seg {
                0 => v.encode(s).unwrap(),
                k => random_segmentation(&v, s.as_bytes(), 7 + k).unwrap(),
            };
            let mut ids = encode(texts[0]);
            ids.push(open);
            ids.extend(encode(texts[1]));
            ids.push(close);
            ids.extend(encode(texts[2]));
            let what = format!("doc {d} seg {seg}");
            let masks = replay(&e, &v, &sorted, &ids, &what);
            assert!(bit(masks.last().unwrap(), v.eos()[0]), "{what}: cannot end");
            // In free text the opening token is allowed and the closing one is not; right
            // after the opening token, neither is (a body comes first).
            let before_open = encode(texts[0]).len();
            assert!(bit(&masks[before_open], open), "{what}");
            assert!(!bit(&masks[before_open], close), "{what}");
            assert!(!bit(&masks[before_open + 1], open), "{what}");
            assert!(!bit(&masks[before_open + 1], close), "{what}");
        }
    }
}

/// Contextual lexing does not compose with a post-lexer, longest match, droppable
/// terminals or modes of a grammar's own: each is refused by name when asked for, and
/// `auto` leaves such a grammar lexed globally.
#[test]
fn contextual_lexing_refuses_what_it_does_not_compose_with() {
    let v = Vocab::load(&resolve("shared:tokenizers/llama3.json")).unwrap();
    let json = "start: \"<\" body \">\"\nbody: %json {\"type\": \"integer\"}\n";
    let with_drop = "start: A EOS? B\nA: \"a\"\nB: \"b\"\nEOS: \";\"\n";
    let tag = r#"{"type": "structural_tag", "structures": [{"begin": "<f>", "schema": {"type": "integer"}, "end": "</f>"}], "triggers": ["<f>"]}"#;
    let refused = |c: Compiler, text: &str, format: GrammarFormat, what: &str| match c
        .grammar(text, format)
    {
        Err(GrammarError::Unsupported {
            construct, reason, ..
        }) => {
            assert_eq!(construct, "contextual lexing");
            assert!(reason.contains(what), "{reason}");
        }
        other => panic!("{what}: {other:?}"),
    };
    let c = || Compiler::new(&v).with_lexing(Lexing::Contextual);
    refused(
        c().with_longest_match(true),
        json,
        GrammarFormat::Lark,
        "longest-match",
    );
    refused(
        c().with_droppable(&["EOS"]),
        with_drop,
        GrammarFormat::Lark,
        "droppable",
    );
    refused(
        c(),
        tag,
        GrammarFormat::StructuralTag,
        "lexer modes of its own",
    );
    // `auto` lexes a `%json` grammar with longest match globally: it compiles.
    let auto = Compiler::new(&v).with_longest_match(true);
    auto.compile(json, GrammarFormat::Lark).unwrap();
}
