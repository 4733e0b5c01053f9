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
