//! The serving API of `Matcher`: rollback, reset, EOS termination, speculative
//! validation, batch fills.

use stackmask::ids::TokenId;
use stackmask::runtime::{fill_masks, Matcher, MatcherError};
use stackmask::vocab::Vocab;

use super::common::json_gpt2;

fn setup() -> (Matcher, Vocab) {
    let (g, vocab) = json_gpt2();
    (Matcher::from_compiled(&g), vocab)
}

fn mask(m: &Matcher, v: &Vocab) -> Vec<u32> {
    let mut w = vec![0u32; v.len().div_ceil(32)];
    m.fill_mask(&mut w).expect("fits");
    w
}

const DOC: &str = r#"{"name": "x", "tags": [1, 2, {"deep": null}], "ok": true}"#;

/// Masks after rolling back k steps equal the masks first seen at that step, for every
/// k; re-committing gives the same masks again; rolling back too far changes nothing.
#[test]
fn rollback_restores_every_earlier_state() {
    let (mut m, v) = setup();
    let ids = v.encode(DOC).unwrap();
    let mut seen = vec![mask(&m, &v)];
    for &t in &ids {
        m.commit(&v, t).unwrap();
        seen.push(mask(&m, &v));
    }
    assert_eq!(m.num_steps(), ids.len());
    for k in [1, 2, 5, ids.len()] {
        let mut r = m.clone();
        r.rollback(k).unwrap();
        assert_eq!(mask(&r, &v), seen[ids.len() - k], "rollback {k}");
        for &t in &ids[ids.len() - k..] {
            r.commit(&v, t).unwrap();
        }
        assert_eq!(mask(&r, &v), seen[ids.len()], "recommit after rollback {k}");
    }
    let before = mask(&m, &v);
    assert!(matches!(
        m.rollback(ids.len() + 1),
        Err(MatcherError::Rollback { asked, available }) if asked == ids.len() + 1 && available == ids.len()
    ));
    assert_eq!(mask(&m, &v), before);
    m.reset();
    assert_eq!(m.num_steps(), 0);
    assert_eq!(mask(&m, &v), seen[0]);
}

/// A matcher reset and reused for the next document keeps nothing of the documents
/// before it: their stacks are freed when it resets.
#[test]
fn reset_frees_the_stacks_of_earlier_documents() {
    let (mut m, v) = setup();
    let mut stacks = Vec::new();
    for doc in [
        DOC,
        r#"[{"x": [1, 2, 3]}, "y", -0.5]"#,
        r#"{"deep": {"deeper": [null]}}"#,
    ] {
        for t in v.encode(doc).unwrap() {
            m.commit(&v, t).unwrap();
        }
        assert!(m.is_accepting());
        stacks.extend(
            m.glr()
                .configs()
                .iter()
                .flat_map(|c| c.heads.iter().map(std::sync::Arc::downgrade)),
        );
        m.reset();
    }
    let kept = stacks.iter().filter(|w| w.upgrade().is_some()).count();
    assert_eq!(
        kept,
        0,
        "{kept} of {} final heads outlived reset",
        stacks.len()
    );
}

/// EOS ends a complete document (then only EOS is allowed and nothing commits), is
/// refused on an incomplete one, and rolling EOS back reopens the document.
#[test]
fn eos_terminates_only_complete_documents() {
    let (mut m, v) = setup();
    let eos = v.eos()[0];
    assert!(matches!(m.commit(&v, eos), Err(MatcherError::Incomplete)));
    for t in v.encode(DOC).unwrap() {
        m.commit(&v, t).unwrap();
    }
    let open = mask(&m, &v);
    m.commit(&v, eos).unwrap();
    assert!(m.is_terminated());
    let only_eos = mask(&m, &v);
    let allowed: Vec<usize> = (0..v.len())
        .filter(|&k| only_eos[k / 32] >> (k % 32) & 1 == 1)
        .collect();
    assert_eq!(allowed, vec![eos.index()]);
    let space = v.encode(" ").unwrap()[0];
    assert!(matches!(m.commit(&v, space), Err(MatcherError::Terminated)));
    m.rollback(1).unwrap();
    assert!(!m.is_terminated());
    assert_eq!(mask(&m, &v), open);
}

/// validate_tokens counts the longest accepted prefix and leaves the matcher alone.
#[test]
fn validate_tokens_counts_the_accepted_prefix() {
    let (mut m, v) = setup();
    let ids = v.encode(DOC).unwrap();
    m.commit(&v, ids[0]).unwrap();
    let before = mask(&m, &v);
    assert_eq!(m.validate_tokens(&v, &ids[1..]), ids.len() - 1);
    // The document's tokens up to its last, then `]` where only `}` can close.
    let n = ids.len();
    assert_eq!(v.decode_bytes(&ids[n - 1..]).unwrap(), b"}");
    let mut bad = ids[1..n - 1].to_vec();
    bad.push(v.encode("]").unwrap()[0]);
    bad.push(ids[n - 1]);
    assert_eq!(m.validate_tokens(&v, &bad), n - 2);
    assert_eq!(m.validate_tokens(&v, &[TokenId::new(v.len() + 5)]), 0);
    assert_eq!(mask(&m, &v), before);
    assert_eq!(m.num_steps(), 1);
}

/// A parallel batch fill equals one fill per matcher, rows padded past the vocabulary
/// stay zero, and a short buffer is an error.
#[test]
fn batch_fill_equals_single_fills() {
    let (m0, v) = setup();
    let ids = v.encode(DOC).unwrap();
    let mut ms = vec![m0.clone()];
    let mut m = m0;
    for &t in &ids {
        m.commit(&v, t).unwrap();
        ms.push(m.clone());
    }
    // Small batches are filled on the caller's thread, large ones on the pool: both.
    assert!(
        ms.len() >= 16,
        "the document gives a batch large enough for the pool"
    );
    let row = v.len().div_ceil(32) + 3;
    for n in [1, 5, ms.len()] {
        let mut out = vec![u32::MAX; row * n];
        let refs: Vec<&Matcher> = ms[..n].iter().collect();
        fill_masks(&refs, &mut out, row).unwrap();
        for (i, mm) in ms[..n].iter().enumerate() {
            let single = mask(mm, &v);
            assert_eq!(
                &out[i * row..i * row + single.len()],
                &single[..],
                "batch {n}, row {i}"
            );
            assert!(out[i * row + single.len()..(i + 1) * row]
                .iter()
                .all(|&w| w == 0));
        }
        assert!(fill_masks(&refs, &mut out[..row * n - 1], row).is_err());
    }
}

/// Fast-forward: at every step of a tool-call document, the forced bytes are a prefix of
/// the rest of the document (the grammar leaves no choice there), and the forced tokens
/// are what the tokenizer produces for the whole document: the next tokens of its
/// canonical encoding, never a segmentation the model would not emit.
#[test]
fn forced_tokens_are_the_canonical_tokens_of_the_forced_text() {
    use stackmask::compile::{build_glr_tables, compile_grammar, GrammarFormat};
    use std::sync::Arc;

    let (_, vocab) = json_gpt2();
    let grammar = r#"start: "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": " CITY ", \"unit\": " UNIT "}}</tool_call>"
CITY: /"[A-Za-z ]+"/
UNIT: "\"celsius\"" | "\"fahrenheit\""
"#;
    let g = compile_grammar(grammar, GrammarFormat::Lark).unwrap();
    let tables = Arc::new(build_glr_tables(&g).unwrap());
    let dwa = Arc::new(
        stackmask::compile::Compiler::new(&vocab)
            .automaton(&tables)
            .unwrap(),
    );
    let doc = r#"<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}</tool_call>"#;
    let ids = vocab.encode(doc).unwrap();
    let mut m = Matcher::new(tables, dwa);
    assert_eq!(
        m.forced_bytes(256),
        br#"<tool_call>{"name": "get_weather", "arguments": {"city": ""#
    );
    assert_eq!(m.forced_bytes(5), b"<tool");
    let mut done = 0usize;
    let mut forced_total = 0;
    for (i, &t) in ids.iter().enumerate() {
        let rest = &doc.as_bytes()[done..];
        let bytes = m.forced_bytes(256);
        assert!(
            rest.starts_with(&bytes),
            "step {i}: forced {bytes:?} is not next"
        );
        let forced = m.forced_tokens(&vocab, 256);
        assert_eq!(
            forced,
            ids[i..i + forced.len()],
            "step {i}: not the canonical tokens"
        );
        forced_total += forced.len();
        m.commit(&vocab, t).unwrap();
        done += vocab.token_bytes(t).unwrap().len();
    }
    assert!(m.is_accepting() && m.forced_bytes(256).is_empty());
    // The opening, `", "unit": "` and `}}</tool_call>` are forced.
    assert!(forced_total >= 15, "{forced_total}");
}

/// `is_rejected`: false wherever some token (or EOS) continues, true on a prefix that is
/// viable one terminal ahead but has no completion (tests/corpus/lookahead_one: after `x`
/// the terminal `a` may start, but `a` `b` never lexes because `ab` munches).
#[test]
fn is_rejected_marks_viable_prefixes_without_completion() {
    use stackmask::compile::{build_glr_tables, compile_grammar, GrammarFormat};
    use std::sync::Arc;

    let g = compile_grammar(
        "start: \"x\" \"a\" \"b\" | \"y\" \"ab\"\n",
        GrammarFormat::Lark,
    )
    .unwrap();
    let tables = Arc::new(build_glr_tables(&g).unwrap());
    let toks = ["x", "y", "a", "b", "ab", "<eos>"];
    let vocab = Vocab::from_byte_tokens(
        "toy",
        toks.iter().map(|t| Some(t.as_bytes().to_vec())).collect(),
        &[TokenId::new(5)],
    )
    .unwrap();
    let dwa = Arc::new(
        stackmask::compile::Compiler::new(&vocab)
            .automaton(&tables)
            .unwrap(),
    );
    let mut m = Matcher::new(tables, dwa);
    assert!(!m.is_rejected());
    m.commit(&vocab, TokenId::new(0)).unwrap();
    assert!(m.is_rejected(), "after `x` nothing can follow");
    m.rollback(1).unwrap();
    for t in [1, 4, 5] {
        m.commit(&vocab, TokenId::new(t)).unwrap();
        assert!(!m.is_rejected(), "after token {t}");
    }
    assert!(m.is_terminated());
}

/// A sequence's first mask is the grammar's start mask, made once when the grammar is
/// compiled or loaded: it equals a walk from the start state (into a buffer wider than
/// the vocabulary, whose extra words come back zero), at the start and after rolling
/// everything back or resetting; every other step's mask is a walk from that step's
/// state, not the start mask; a failed commit at the start keeps the start mask.
#[test]
fn first_masks_are_the_start_states_walked_masks() {
    use stackmask::runtime::{mask_set, CompiledGrammar};
    let (g, v) = json_gpt2();
    let need = v.len().div_ceil(32);
    let walked = |m: &Matcher| {
        let set = mask_set(m.glr(), m.dwa().expect("an automaton matcher"));
        let mut w = vec![0u32; need];
        for t in &set {
            w[t as usize / 32] |= 1 << (t % 32);
        }
        w
    };
    let loaded = CompiledGrammar::from_bytes(&g.to_bytes()).unwrap();
    let fresh = Matcher::new(g.tables.clone(), g.dwa.clone());
    for m in [
        Matcher::from_compiled(&g),
        Matcher::from_compiled(&loaded),
        fresh,
    ] {
        let start = walked(&m);
        assert!(start.iter().any(|&w| w != 0));
        let mut wide = vec![u32::MAX; need + 3];
        m.fill_mask(&mut wide).unwrap();
        assert_eq!(&wide[..need], &start[..]);
        assert_eq!(&wide[need..], &[0, 0, 0]);

        let ids = v.encode(DOC).unwrap();
        let mut m = m;
        // `]` cannot open a document: refused, and the matcher is still at the start.
        let close = v.encode("]").unwrap();
        assert!(m.commit(&v, close[0]).is_err());
        assert_eq!(mask(&m, &v), start);
        let mut other = m.clone();
        for (i, &t) in ids.iter().enumerate() {
            m.commit(&v, t).unwrap();
            assert_eq!(mask(&m, &v), walked(&m), "step {}", i + 1);
        }
        assert_ne!(mask(&m, &v), start);
        // A clone taken at the start is still there.
        assert_eq!(mask(&other, &v), start);
        other.commit(&v, ids[0]).unwrap();
        assert_ne!(mask(&other, &v), start);
        for k in [1, ids.len() - 1] {
            let mut r = m.clone();
            r.rollback(k).unwrap();
            assert_eq!(mask(&r, &v), walked(&r), "rollback {k}");
        }
        let mut r = m.clone();
        r.rollback(ids.len()).unwrap();
        assert_eq!(mask(&r, &v), start);
        m.reset();
        assert_eq!(mask(&m, &v), start);
    }
}
