//! Recognizer states as snapshots (rollback points), and commits that fail cleanly.

use std::sync::Arc;

use stackmask::compile::{build_glr_tables, compile_grammar, GrammarFormat, BUILTIN_JSON};
use stackmask::glr::{CommitError, GlrState, Tables};
use stackmask::ids::TokenId;
use stackmask::vocab::Vocab;

fn json() -> Arc<Tables> {
    let g = compile_grammar(BUILTIN_JSON, GrammarFormat::Lark).unwrap();
    Arc::new(build_glr_tables(&g).unwrap())
}

/// Kept states are snapshots: going back to one (a rollback) behaves exactly like
/// replaying the prefix from scratch.
#[test]
fn kept_states_are_rollback_points() {
    let t = json();
    let doc: &[&[u8]] = &[b"{\"a\"", b": [", b"1, 2", b"], ", b"\"b\": tr", b"ue}"];
    let mut s = GlrState::new(t.clone());
    let mut history = vec![s.clone()];
    for piece in doc {
        s.commit_bytes(piece).unwrap();
        history.push(s.clone());
    }
    assert!(s.is_accepting());
    for (n, kept) in history.iter().enumerate() {
        let mut fresh = GlrState::new(t.clone());
        for piece in &doc[..n] {
            fresh.commit_bytes(piece).unwrap();
        }
        assert_eq!(kept.is_accepting(), fresh.is_accepting());
        for probe in [&b"}"[..], b",", b"]", b" 3", b"\"", b"e}"] {
            assert_eq!(
                kept.clone().commit_bytes(probe).is_ok(),
                fresh.clone().commit_bytes(probe).is_ok(),
                "after {n} pieces, probe {probe:?}"
            );
        }
    }
}

/// A state others were committed from (a template cloned per request) keeps none of
/// their stacks alive once they are dropped: its memos must not chain to later lexemes.
#[test]
fn a_start_state_keeps_no_stacks_of_documents_committed_from_it() {
    let start = GlrState::new(json());
    let mut stacks = Vec::new();
    for doc in [
        &br#"{"a": [1, 2.5, {"b": null}], "c": "x"}"#[..],
        br#"[true, false, {"d": [[]], "e": -3}]"#,
        br#"{"a": {"a": {"a": "deep"}}}"#,
    ] {
        let mut s = start.clone();
        s.commit_bytes(doc).unwrap();
        assert!(s.is_accepting());
        stacks.extend(
            s.configs()
                .iter()
                .flat_map(|c| c.heads.iter().map(Arc::downgrade)),
        );
    }
    assert!(!stacks.is_empty());
    let kept = stacks.iter().filter(|w| w.upgrade().is_some()).count();
    assert_eq!(
        kept,
        0,
        "{kept} of {} final heads outlived their state",
        stacks.len()
    );
    // The start state still works (and still remembers its own first emissions).
    let mut s = start.clone();
    s.commit_bytes(b"{\"a\": 1}").unwrap();
    assert!(s.is_accepting());
}

#[test]
fn rejected_commit_changes_nothing_and_tokens_are_checked() {
    let t = json();
    let v = Vocab::from_byte_tokens(
        "t",
        vec![
            Some(b"[".to_vec()),
            Some(b"]".to_vec()),
            Some(b"}".to_vec()),
            Some(b"<e>".to_vec()),
        ],
        &[TokenId::new(3)],
    )
    .unwrap();
    let mut s = GlrState::new(t);
    s.commit_token(&v, TokenId::new(0)).unwrap();
    let before = format!("{:?}", s.configs());
    assert!(matches!(
        s.commit_token(&v, TokenId::new(2)),
        Err(CommitError::Rejected(_))
    ));
    assert!(matches!(
        s.commit_token(&v, TokenId::new(3)),
        Err(CommitError::NotText(3))
    ));
    assert!(matches!(
        s.commit_token(&v, TokenId::new(9)),
        Err(CommitError::Token(_))
    ));
    assert_eq!(before, format!("{:?}", s.configs()));
    s.commit_token(&v, TokenId::new(1)).unwrap();
    assert!(s.is_accepting());
}

/// A rejected commit names the byte where every configuration died: the first byte of
/// the input and a later one are both counted from the input's start.
#[test]
fn rejected_commits_name_the_byte_that_ended_them() {
    let t = json();
    let mut s = GlrState::new(t);
    let before = format!("{:?}", s.configs());
    // `]` cannot start a document.
    assert_eq!(s.commit_bytes(b"]").unwrap_err().byte, 0);
    // `[` and `1` read; `x` neither extends the number nor starts a terminal.
    assert_eq!(s.commit_bytes(b"[1x").unwrap_err().byte, 2);
    assert_eq!(before, format!("{:?}", s.configs()));
    // Empty input is no step: the state stays as it is, and stays usable.
    s.commit_bytes(b"").unwrap();
    s.commit_bytes(b"[1]").unwrap();
    assert!(s.is_accepting());
}

/// Regression (found by the `commit_bytes` fuzz target, which printed states to compare
/// them): `Debug` of a state must not walk every stack path. With no precedence, `1+1+…`
/// of n operands has Catalan(n-1) parse stacks merged into one graph; the old derived
/// `Debug` printed each path (a 2 GB string at ~35 operands). Its size must now grow with
/// the graph, not with the paths.
#[test]
fn debug_of_an_ambiguous_stack_graph_is_small() {
    let g = compile_grammar(
        "start: e\ne: e \"+\" e | e \"*\" e | NUM\nNUM: /[0-9]+/\n",
        GrammarFormat::Lark,
    )
    .unwrap();
    let t = Arc::new(build_glr_tables(&g).unwrap());
    let debug_len = |operands: usize| {
        let mut s = GlrState::new(t.clone());
        let doc = vec!["1"; operands].join("+");
        s.commit_bytes(doc.as_bytes()).unwrap();
        s.commit_bytes(b"+").unwrap();
        format!("{s:?}").len()
    };
    let (small, large) = (debug_len(6), debug_len(13));
    // Catalan(12) / Catalan(5) = 208012 / 42 ≈ 5000: path-wise printing grows thousands of
    // times from 6 to 13 operands; graph-wise printing grows about linearly.
    assert!(large < 4 * small, "{small} → {large} bytes");
    assert!(large < 50_000, "{large} bytes");
}
