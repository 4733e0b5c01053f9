//! Special tokens named in grammars (`<|name|>`, `<[id]>`, issue 90 point 2): allowed
//! exactly where the grammar places them, under the reference, the GLR walk and the mask
//! automaton alike, with real tokenizers, canonical and random segmentations; committed,
//! validated and forced as tokens; refused with a named error where they cannot be used.

use std::sync::Arc;

use stackmask::compile::{
    build_glr_tables, compile_grammar, Compiler, GrammarError, GrammarFormat,
};
use stackmask::glr::walk::{self, SortedTokens};
use stackmask::ids::TokenId;
use stackmask::reference::Reference;
use stackmask::runtime::Matcher;
use stackmask::vocab::segment::random_segmentation;
use stackmask::vocab::{special_lexeme, TokenKind, Vocab, SPECIAL_MARK};

use super::common::resolve;

/// A tokenizer with two special tokens a grammar names (`a` by name, `b` by id) and, if
/// it has one, a third that no grammar names.
struct Setup {
    vocab: Vocab,
    a: (TokenId, String),
    b: (TokenId, String),
    other: Option<TokenId>,
}

fn setups() -> Vec<Setup> {
    let load = |f: &str| Vocab::load(&resolve(&format!("shared:tokenizers/{f}"))).unwrap();
    let named = |v: &Vocab, id: u32| {
        let t = TokenId::from_u32(id);
        let n = v
            .special_tokens()
            .iter()
            .find(|(i, _)| *i == t)
            .unwrap()
            .1
            .clone();
        (t, n)
    };
    let mut out = Vec::new();
    for (file, a, b, other) in [
        ("llama3.json", 128006, 128010, Some(128011)),
        ("qwen2_5.json", 151644, 151652, Some(151646)),
        ("llama2.json", 1, 0, None),
    ] {
        let vocab = load(file);
        let (a, b) = (named(&vocab, a), named(&vocab, b));
        out.push(Setup {
            vocab,
            a,
            b,
            other: other.map(TokenId::from_u32),
        });
    }
    out
}

/// A document: text and special tokens.
#[derive(Clone)]
enum Part {
    Text(&'static str),
    A,
    B,
}

impl Setup {
    /// Free text, then calls `A {"key": n, …} B`, each followed by optional text (no
    /// quote in the text: lexing is global, so a text lexeme would run on through a
    /// call's pairs).
    fn tool_grammar(&self) -> String {
        format!(
            "start: TEXT? (call TEXT?)*\n\
             call: {} \"{{\" PAIR (\",\" PAIR)* \"}}\" <[{}]>\n\
             PAIR: /\"[a-z]+\": [0-9]+/\n\
             TEXT: /[^{{}}\"]+/\n",
            self.a.1, self.b.0
        )
    }

    /// Calls `A body B`, one or more, each body a document of one of two JSON Schemas
    /// (`%json`): the tool-call format of Llama-3.1's `<|python_tag|>` with a schema per
    /// tool.
    fn json_tool_grammar(&self) -> String {
        format!(
            "start: call+\n\
             call: {} (weather | search) <[{}]>\n\
             weather: %json {{\"type\": \"object\", \"properties\": {{\"name\": {{\"const\": \"weather\"}}, \
             \"city\": {{\"type\": \"string\", \"maxLength\": 6}}}}, \"required\": [\"name\", \"city\"], \
             \"additionalProperties\": false}}\n\
             search: %json {{\"type\": \"object\", \"properties\": {{\"name\": {{\"const\": \"search\"}}, \
             \"limit\": {{\"type\": \"integer\", \"minimum\": 1, \"maximum\": 20}}}}, \"required\": [\"name\"], \
             \"additionalProperties\": false}}\n",
            self.a.1, self.b.0
        )
    }

    /// Sums between special tokens, ambiguous (`1+2+3` parses two ways).
    fn ambiguous_grammar(&self) -> String {
        format!(
            "start: {a} e ({b} e)* {b}?\ne: e \"+\" e | NUM\nNUM: /[0-9]+/\n",
            a = self.a.1,
            b = self.b.1
        )
    }

    /// GBNF: a word, `A`, then `x` or `B`, by id.
    fn gbnf_grammar(&self) -> String {
        format!(
            "root ::= \"say \" [a-z]+ {} (\"x\" | <[{}]>)\n",
            self.a.1, self.b.0
        )
    }

    fn id(&self, p: &Part) -> Option<TokenId> {
        match p {
            Part::A => Some(self.a.0),
            Part::B => Some(self.b.0),
            Part::Text(_) => None,
        }
    }

    /// The bytes the grammar reads for a document.
    fn bytes(&self, doc: &[Part]) -> Vec<u8> {
        let mut out = Vec::new();
        for p in doc {
            match p {
                Part::Text(t) => out.extend_from_slice(t.as_bytes()),
                Part::A => out.extend(special_lexeme(&self.a.1)),
                Part::B => out.extend(special_lexeme(&self.b.1)),
            }
        }
        out
    }

    /// Token sequences for a document: canonical (each text encoded, special tokens as
    /// themselves) and a random segmentation of its bytes.
    fn segmentations(&self, doc: &[Part]) -> Vec<Vec<TokenId>> {
        let mut canonical = Vec::new();
        for p in doc {
            match (p, self.id(p)) {
                (_, Some(t)) => canonical.push(t),
                (Part::Text(t), None) => canonical.extend(self.vocab.encode(t).unwrap()),
                _ => unreachable!(),
            }
        }
        let bytes = self.bytes(doc);
        vec![
            canonical,
            random_segmentation(&self.vocab, &bytes, 7).unwrap(),
        ]
    }
}

pub(super) struct Engines {
    pub(super) tables: Arc<stackmask::glr::Tables>,
    pub(super) dwa: Arc<stackmask::dwa::Dwa>,
    pub(super) reference: Reference,
}

pub(super) fn engines(v: &Vocab, text: &str, format: GrammarFormat) -> Engines {
    let c = Compiler::new(v);
    let g = c.grammar(text, format).unwrap();
    let tables = Arc::new(c.tables(&g).unwrap());
    let dwa = Arc::new(c.automaton(&tables).unwrap());
    let reference = Reference::new(&g, &tables.lexer);
    Engines {
        tables,
        dwa,
        reference,
    }
}

pub(super) fn bit(words: &[u32], t: TokenId) -> bool {
    words[t.index() / 32] >> (t.index() % 32) & 1 == 1
}

/// Replays `ids` and, at every step, checks that the automaton's mask and the GLR walk's
/// equal the reference's; returns each step's automaton mask. Every token commits.
pub(super) fn replay(
    e: &Engines,
    v: &Vocab,
    sorted: &SortedTokens,
    ids: &[TokenId],
    what: &str,
) -> Vec<Vec<u32>> {
    let mut m = Matcher::new(e.tables.clone(), e.dwa.clone());
    let mut p = e.reference.empty();
    let mut masks = Vec::new();
    for i in 0..=ids.len() {
        let mut words = vec![0u32; v.len().div_ceil(32)];
        m.fill_mask(&mut words).unwrap();
        let want = e.reference.mask(&p, v);
        let walked = walk::mask(m.glr(), sorted);
        for (k, &w) in want.iter().enumerate() {
            let t = TokenId::new(k);
            assert_eq!(
                bit(&words, t),
                w,
                "{what}: step {i} token {k}: automaton vs reference"
            );
            assert_eq!(
                bit(&walked, t),
                w,
                "{what}: step {i} token {k}: GLR walk vs reference"
            );
        }
        masks.push(words);
        if let Some(&t) = ids.get(i) {
            m.commit(v, t)
                .unwrap_or_else(|err| panic!("{what}: step {i}: {err}"));
            p = e.reference.commit(&p, v.mask_bytes(t).unwrap());
        }
    }
    masks
}

/// Masks equal the reference's at every step of tool-call documents, with the special
/// tokens allowed exactly where the grammar places them (checked by hand at the steps
/// around each), the token spelled out as text allowed as text, and normal tokens
/// holding the special mark never allowed.
#[test]
fn tool_call_masks_place_special_tokens_exactly() {
    for s in setups() {
        let v = &s.vocab;
        let e = engines(v, &s.tool_grammar(), GrammarFormat::Lark);
        let sorted = SortedTokens::new(v);
        let eos = v.eos()[0];
        let marked: Vec<TokenId> = (0..v.len())
            .map(TokenId::new)
            .filter(|&t| {
                matches!(v.kind(t), Ok(TokenKind::Normal))
                    && v.token_bytes(t).unwrap().contains(&SPECIAL_MARK)
            })
            .collect();
        let docs: Vec<Vec<Part>> = vec![
            vec![
                Part::Text("Let me look that up. "),
                Part::A,
                Part::Text("{\"city\": 12,\"day\": 3}"),
                Part::B,
                Part::Text(" and "),
                Part::A,
                Part::Text("{\"n\": 1}"),
                Part::B,
            ],
            vec![
                Part::A,
                Part::Text("{\"x\": 7}"),
                Part::B,
                Part::A,
                Part::Text("{\"y\": 8}"),
                Part::B,
            ],
        ];
        for doc in &docs {
            for (n, ids) in s.segmentations(doc).iter().enumerate() {
                let what = format!("{} tool doc seg {n}", v.name());
                let masks = replay(&e, v, &sorted, ids, &what);
                // Where each special token sits in this segmentation, the step before it
                // allows it and not the other; after the whole document, `a` and EOS.
                for (i, &t) in ids.iter().enumerate() {
                    let mask = &masks[i];
                    if t == s.a.0 {
                        assert!(
                            bit(mask, s.a.0) && !bit(mask, s.b.0),
                            "{what}: before a at {i}"
                        );
                        assert!(!bit(&masks[i + 1], s.a.0) && !bit(&masks[i + 1], s.b.0));
                        assert!(!bit(&masks[i + 1], eos), "{what}: a call is open");
                    }
                    if t == s.b.0 {
                        assert!(
                            bit(mask, s.b.0) && !bit(mask, s.a.0),
                            "{what}: before b at {i}"
                        );
                        assert!(!bit(mask, eos), "{what}: a call is open");
                    }
                }
                let last = masks.last().unwrap();
                assert!(
                    bit(last, s.a.0) && !bit(last, s.b.0) && bit(last, eos),
                    "{what}: end"
                );
                for m in &masks {
                    assert!(
                        marked.iter().all(|&t| !bit(m, t)),
                        "{what}: a marked token allowed"
                    );
                    assert!(
                        s.other.is_none_or(|o| !bit(m, o)),
                        "{what}: an unnamed special token"
                    );
                }
            }
        }
        // The token's name spelled as text is text: allowed where TEXT is, and it opens
        // no call.
        let spelled = v.encode(&format!("say {} then", s.a.1)).unwrap();
        let masks = replay(&e, v, &sorted, &spelled, &format!("{} spelled", v.name()));
        assert!(bit(masks.last().unwrap(), eos));
        // A marked normal token (byte-level vocabularies have `\xFE`) does not commit.
        for &t in &marked {
            let mut m = Matcher::new(e.tables.clone(), e.dwa.clone());
            assert!(
                m.commit(v, t).is_err(),
                "{}: marked token {t} committed",
                v.name()
            );
        }
    }
}

/// An ambiguous grammar (sums parse two ways) and a GBNF one: masks equal the
/// reference's at every step under all three engines.
#[test]
fn ambiguous_and_gbnf_grammars_with_special_tokens_match_the_reference() {
    for s in setups() {
        let v = &s.vocab;
        let sorted = SortedTokens::new(v);
        let e = engines(v, &s.ambiguous_grammar(), GrammarFormat::Lark);
        let doc = [
            Part::A,
            Part::Text("1+2+3"),
            Part::B,
            Part::Text("40+5"),
            Part::B,
        ];
        for (n, ids) in s.segmentations(&doc).iter().enumerate() {
            let masks = replay(
                &e,
                v,
                &sorted,
                ids,
                &format!("{} ambiguous seg {n}", v.name()),
            );
            assert!(bit(masks.last().unwrap(), v.eos()[0]));
        }
        let e = engines(v, &s.gbnf_grammar(), GrammarFormat::Gbnf);
        for doc in [
            vec![Part::Text("say hi"), Part::A, Part::Text("x")],
            vec![Part::Text("say hello"), Part::A, Part::B],
        ] {
            for (n, ids) in s.segmentations(&doc).iter().enumerate() {
                let masks = replay(&e, v, &sorted, ids, &format!("{} gbnf seg {n}", v.name()));
                assert!(bit(masks.last().unwrap(), v.eos()[0]));
            }
        }
    }
}

/// Tool calls whose bodies are JSON Schemas embedded with `%json`, between special tokens:
/// masks equal the reference's at every step (canonical and random segmentations), the
/// closing token is allowed exactly where a body is complete, and a body the schema
/// refuses is not committed.
#[test]
fn json_schema_bodies_between_special_tokens_match_the_reference() {
    for s in setups() {
        let v = &s.vocab;
        let sorted = SortedTokens::new(v);
        let e = engines(v, &s.json_tool_grammar(), GrammarFormat::Lark);
        let body = r#"{"name": "weather", "city": "Oslo"}"#;
        let doc = [
            Part::A,
            Part::Text(body),
            Part::B,
            Part::A,
            Part::Text(r#"{"name":"search","limit":12}"#),
            Part::B,
        ];
        for (n, ids) in s.segmentations(&doc).iter().enumerate() {
            let what = format!("{} %json seg {n}", v.name());
            let masks = replay(&e, v, &sorted, ids, &what);
            // `B` closes a body and nothing else: allowed after the first body's last
            // token and at no earlier step of it.
            let first_b = ids.iter().position(|&t| t == s.b.0).unwrap();
            for (i, m) in masks.iter().enumerate().take(first_b + 1) {
                assert_eq!(bit(m, s.b.0), i == first_b, "{what}: step {i}");
            }
            assert!(bit(masks.last().unwrap(), v.eos()[0]), "{what}");
        }
        // A city past `maxLength` 6, and a search with a city: neither commits whole.
        for bad in [
            r#"{"name": "weather", "city": "Reykjavik"}"#,
            r#"{"name": "search", "city": "Oslo"}"#,
        ] {
            let mut m = Matcher::new(e.tables.clone(), e.dwa.clone());
            m.commit(v, s.a.0).unwrap();
            let committed = v
                .encode(bad)
                .unwrap()
                .into_iter()
                .try_for_each(|t| m.commit(v, t));
            assert!(committed.is_err(), "{}: {bad} committed", v.name());
        }
    }
}

/// `validate_tokens` counts special tokens like any other, and forced tokens include a
/// forced special token (after `}` only `b` may come).
#[test]
fn special_tokens_validate_and_are_forced() {
    for s in setups() {
        let v = &s.vocab;
        let e = engines(v, &s.tool_grammar(), GrammarFormat::Lark);
        let mut ids = vec![s.a.0];
        ids.extend(v.encode("{\"n\": 1}").unwrap());
        ids.push(s.b.0);
        let m = Matcher::new(e.tables.clone(), e.dwa.clone());
        assert_eq!(m.validate_tokens(v, &ids), ids.len());
        let mut wrong = ids.clone();
        wrong[0] = s.b.0;
        assert_eq!(m.validate_tokens(v, &wrong), 0);
        let mut m = m;
        for &t in &ids[..ids.len() - 1] {
            m.commit(v, t).unwrap();
        }
        assert_eq!(m.forced_bytes(256), special_lexeme(&s.b.1), "{}", v.name());
        assert_eq!(m.forced_tokens(v, 256), vec![s.b.0], "{}", v.name());
        // After `a`, `{` is forced; the key is not.
        let mut m = Matcher::new(e.tables.clone(), e.dwa.clone());
        m.commit(v, s.a.0).unwrap();
        assert_eq!(m.forced_bytes(256), b"{\"");
    }
}

/// Special tokens that cannot be used are refused with a named error, and the vocabulary
/// stays usable.
#[test]
fn unusable_special_tokens_are_refused_by_name() {
    let v = Vocab::load(&resolve("shared:tokenizers/llama3.json")).unwrap();
    let c = Compiler::new(&v);
    let special_err = |text: &str| match c.grammar(text, GrammarFormat::Lark) {
        Err(GrammarError::SpecialToken {
            token,
            reason,
            span,
        }) => (token, reason, span.line),
        other => panic!("{text}: {other:?}"),
    };
    let (token, reason, line) = special_err("start: \"a\"\n  | <|no_such_token|>\n");
    assert_eq!((token.as_str(), line), ("<|no_such_token|>", 2));
    assert!(reason.contains("no special token"), "{reason}");
    let (_, reason, _) = special_err("start: \"a\" <|eot_id|>\n");
    assert!(reason.contains("end-of-sequence"), "{reason}");
    let (_, reason, _) = special_err("start: \"a\" <[999999]>\n");
    assert!(reason.contains("no token"), "{reason}");
    for (text, format) in [
        ("start: <[128000-128010]>\n", GrammarFormat::Lark),
        ("start: X\nX: \"a\" <|python_tag|>\n", GrammarFormat::Lark),
        ("root ::= !<[5]>\n", GrammarFormat::Gbnf),
    ] {
        assert!(
            matches!(
                c.grammar(text, format),
                Err(GrammarError::Unsupported { .. })
            ),
            "{text}"
        );
    }
    // Without a tokenizer, an id cannot be named.
    let g = compile_grammar("start: <[128010]>\n", GrammarFormat::Lark).unwrap();
    assert!(matches!(
        build_glr_tables(&g),
        Err(GrammarError::SpecialToken { .. })
    ));
    assert!(c
        .grammar("start: <[128010]>\n", GrammarFormat::Lark)
        .is_ok());
}

/// A grammar naming special tokens goes through its artifact bytes and back: the loaded
/// grammar's masks equal the compiled one's at every step, special tokens committed.
#[test]
fn special_token_grammars_load_back_from_artifacts() {
    let s = setups().swap_remove(1);
    let v = &s.vocab;
    let compiled = Compiler::new(v)
        .compile(&s.tool_grammar(), GrammarFormat::Lark)
        .unwrap();
    let loaded = stackmask::runtime::CompiledGrammar::from_bytes(&compiled.to_bytes()).unwrap();
    loaded.check_vocab(v).unwrap();
    let doc = [
        Part::Text("ok "),
        Part::A,
        Part::Text("{\"a\": 1}"),
        Part::B,
        Part::Text(" done"),
    ];
    let ids = &s.segmentations(&doc)[0];
    let (mut a, mut b) = (
        Matcher::from_compiled(&compiled),
        Matcher::from_compiled(&loaded),
    );
    let mut specials_allowed = 0;
    for &t in ids {
        let (mut x, mut y) = (
            vec![0u32; v.len().div_ceil(32)],
            vec![0u32; v.len().div_ceil(32)],
        );
        a.fill_mask(&mut x).unwrap();
        b.fill_mask(&mut y).unwrap();
        assert_eq!(x, y);
        specials_allowed += usize::from(bit(&y, s.a.0)) + usize::from(bit(&y, s.b.0));
        a.commit(v, t).unwrap();
        b.commit(v, t).unwrap();
    }
    assert!(b.is_accepting());
    // Before the call, after `ok `, and before `b`, at least.
    assert!(specials_allowed >= 2, "{specials_allowed}");
}

/// A normal token named in a rule (an added token such as Qwen2.5's `<tool_call>`, by
/// name or id) is its text: the grammar compiles as with the string literal, and the
/// token is allowed there beside the other spellings of its text.
#[test]
fn named_normal_tokens_read_as_their_text() {
    let v = Vocab::load(&resolve("shared:tokenizers/qwen2_5.json")).unwrap();
    let tool_call = v
        .mask_tokens()
        .find(|(_, b)| *b == b"<tool_call>")
        .map(|(id, _)| id)
        .expect("Qwen2.5 has <tool_call>");
    assert!(matches!(v.kind(tool_call), Ok(TokenKind::Normal)));
    let mask = |text: &str| {
        let g = Compiler::new(&v)
            .compile(text, GrammarFormat::Lark)
            .unwrap();
        let mut w = vec![0u32; v.len().div_ceil(32)];
        Matcher::from_compiled(&g).fill_mask(&mut w).unwrap();
        w
    };
    let literal = mask("start: \"<tool_call>\" \"x\"\n");
    assert!(bit(&literal, tool_call));
    assert!(
        literal.iter().map(|w| w.count_ones()).sum::<u32>() > 1,
        "`<` alone starts it too"
    );
    assert_eq!(mask("start: <tool_call> \"x\"\n"), literal);
    assert_eq!(mask(&format!("start: <[{tool_call}]> \"x\"\n")), literal);
}
