//! The mask automaton against the reference on real programs with language grammars
//! and JSON with the large tokenizers (cases in tests/data/dwa_programs.toml): full masks
//! at evenly spaced steps and around chosen offsets, and the document's own token allowed
//! at every step, to the end (accepted). At every step the recognizer's vocabulary walk
//! (`glr::walk::VocabWalk`, the slow path) gives the automaton's mask.

use std::sync::Arc;

use serde::Deserialize;
use stackmask::compile::Compiler;
use stackmask::compile::{build_glr_tables, compile_grammar, GrammarFormat};
use stackmask::glr::walk::VocabWalk;
use stackmask::reference::Reference;
use stackmask::runtime::Matcher;
use stackmask::vocab::segment::random_segmentation;
use stackmask::vocab::Vocab;

use super::common::{load_toml, resolve};

#[derive(Deserialize)]
struct File {
    case: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    grammar: String,
    document: String,
    tokenizer: String,
    segment: String,
    full_masks: usize,
    /// Byte offsets of the document (e.g. where a counted string runs out) around which
    /// every step gets a full mask: those whose committed prefix ends within 24 bytes
    /// before the offset.
    #[serde(default)]
    full_masks_around: Vec<usize>,
    /// Droppable terminals (`--droppable`).
    #[serde(default)]
    droppable: Vec<String>,
}

#[test]
fn dwa_masks_equal_reference_on_programs() {
    let file: File = load_toml("dwa_programs.toml");
    assert!(file.case.len() >= 3);
    for c in &file.case {
        let text = match c.grammar.as_str() {
            "builtin:json" => stackmask::compile::BUILTIN_JSON.to_string(),
            g => std::fs::read_to_string(resolve(g)).unwrap(),
        };
        let mut g = compile_grammar(&text, GrammarFormat::from_path(&c.grammar)).unwrap();
        g.set_droppable(&c.droppable).unwrap();
        let tables = Arc::new(build_glr_tables(&g).unwrap());
        let vocab = Vocab::load(&resolve(&c.tokenizer)).unwrap();
        let doc = std::fs::read(resolve(&c.document)).unwrap();
        let ids = match c.segment.strip_prefix("random:") {
            Some(seed) => random_segmentation(&vocab, &doc, seed.parse().unwrap()).unwrap(),
            None => vocab.encode(std::str::from_utf8(&doc).unwrap()).unwrap(),
        };
        let dwa = Arc::new(
            Compiler::new(&vocab)
                .automaton(&tables)
                .unwrap_or_else(|e| panic!("{}: {e}", c.name)),
        );
        let reference = Reference::new(&g, &tables.lexer);
        let walk = VocabWalk::new(tables.clone());
        let mut m = Matcher::new(tables.clone(), dwa);
        let mut p = reference.empty();
        let every = (ids.len() / c.full_masks.max(1)).max(1);
        let mut words = vec![0u32; vocab.len().div_ceil(32)];
        let mut compared = 0;
        let mut committed = 0usize;
        for (i, &t) in ids.iter().enumerate() {
            m.fill_mask(&mut words).unwrap();
            assert!(
                words[t.index() / 32] >> (t.index() % 32) & 1 == 1,
                "{}: step {i}: the document's token {t:?} is masked out",
                c.name
            );
            assert!(
                walk.mask(m.glr(), &vocab) == words,
                "{}: step {i}: the vocabulary walk's mask is not the automaton's",
                c.name
            );
            let near = c
                .full_masks_around
                .iter()
                .any(|&o| committed <= o && o - committed <= 24);
            if i % every == 0 || near {
                let want = reference.mask(&p, &vocab);
                for (k, &w) in want.iter().enumerate() {
                    assert_eq!(
                        words[k / 32] >> (k % 32) & 1 == 1,
                        w,
                        "{}: step {i}: token {k} {:?}",
                        c.name,
                        String::from_utf8_lossy(
                            vocab
                                .token_bytes(stackmask::ids::TokenId::new(k))
                                .unwrap_or(&[])
                        )
                    );
                }
                compared += 1;
            }
            let b = vocab.token_bytes(t).unwrap();
            committed += b.len();
            m.commit_bytes(b).unwrap();
            p = reference.commit(&p, b);
        }
        // The end: EOS allowed exactly when the reference says the document is complete.
        m.fill_mask(&mut words).unwrap();
        assert!(walk.mask(m.glr(), &vocab) == words, "{}: end", c.name);
        let want = reference.mask(&p, &vocab);
        for (k, &w) in want.iter().enumerate() {
            assert_eq!(
                words[k / 32] >> (k % 32) & 1 == 1,
                w,
                "{}: end, token {k}",
                c.name
            );
        }
        assert!(m.is_accepting(), "{}: document not accepted", c.name);
        assert!(compared >= c.full_masks.min(ids.len()), "{}", c.name);
    }
}

/// The memo of class → token expansions answers as the expansion does: along a Java
/// program with Llama-3 (rows of 4,008 words, wide decided sets at statement boundaries),
/// every mask from the automaton whose memo has seen the whole document so far equals
/// the mask from a copy with an empty memo, and the memo ends up holding rows.
#[test]
fn expansion_memo_masks_equal_fresh_expansions() {
    let text = std::fs::read_to_string(resolve("shared:grammars/syncode/java.lark")).unwrap();
    let g = compile_grammar(&text, GrammarFormat::Lark).unwrap();
    let tables = Arc::new(build_glr_tables(&g).unwrap());
    let vocab = Vocab::load(&resolve("shared:tokenizers/llama3.json")).unwrap();
    let dwa = Arc::new(Compiler::new(&vocab).automaton(&tables).unwrap());
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("benches/data/programs/java/CheckedInputStream.java"),
    )
    .unwrap();
    let ids = vocab.encode(&doc).unwrap();
    let mut warm = Matcher::new(tables.clone(), dwa.clone());
    let (mut a, mut b) = (
        vec![0u32; vocab.len().div_ceil(32)],
        vec![0u32; vocab.len().div_ceil(32)],
    );
    for (i, &t) in ids.iter().enumerate() {
        // Twice: a set's first sighting expands and keeps its row, the second reads it.
        for _ in 0..2 {
            warm.fill_mask(&mut a).unwrap();
        }
        let cold = (*dwa).clone();
        b.fill(0);
        stackmask::runtime::fill_mask_words_cached(warm.glr(), &cold, &mut b, None);
        assert_eq!(a, b, "step {i}");
        warm.commit(&vocab, t).unwrap();
    }
    assert!(dwa.expansion_rows() > 0, "no row was made");
}
