//! Compiled-grammar artifacts: round trip, vocabulary check, and corrupt input.

use std::path::Path;

use stackmask::rng::SplitMix64;
use stackmask::runtime::{ArtifactError, CompiledGrammar, Matcher};
use stackmask::vocab::Vocab;

use super::common::{json_gpt2, shared_dir};

fn masks_along(g: &CompiledGrammar, vocab: &Vocab, doc: &str) -> Vec<Vec<u32>> {
    let mut m = Matcher::from_compiled(g);
    let mut out = Vec::new();
    let mut words = vec![0u32; vocab.len().div_ceil(32)];
    for t in vocab.encode(doc).expect("encodes") {
        m.fill_mask(&mut words).expect("mask fits");
        out.push(words.clone());
        m.commit_token(vocab, t).expect("document is valid");
    }
    out
}

/// Loading what was written gives the same tables, automaton and masks.
#[test]
fn artifact_round_trips() {
    let (g, vocab) = json_gpt2();
    let bytes = g.to_bytes();
    let back = CompiledGrammar::from_bytes(&bytes).expect("loads");
    assert_eq!(*back.dwa, *g.dwa);
    assert_eq!(back.tables.lr, g.tables.lr);
    assert_eq!(back.tables.lexer, g.tables.lexer);
    assert_eq!(back.tables.follow, g.tables.follow);
    back.check_vocab(&vocab).expect("same vocabulary");
    let doc = r#"{"a": [1, 2.5e3, "x\n"], "b": {"c": null, "d": true}}"#;
    assert_eq!(
        masks_along(&back, &vocab, doc),
        masks_along(&g, &vocab, doc)
    );
    // Deterministic output: the same grammar writes the same bytes.
    assert_eq!(back.to_bytes(), bytes);
}

/// Another vocabulary is refused by name.
#[test]
fn artifact_refuses_another_vocabulary() {
    let (g, _) = json_gpt2();
    let llama = Vocab::load(
        &shared_dir()
            .join("tokenizers/llama2.json")
            .display()
            .to_string(),
    )
    .expect("llama2 loads");
    assert!(matches!(
        g.check_vocab(&llama),
        Err(ArtifactError::Vocabulary(_))
    ));
}

/// Corrupt bytes give an error, never a panic: bad magic, other versions, truncation,
/// flipped payload bytes (checksum), and payload edits with a recomputed checksum (the
/// decoder and the table validators). Whatever loads must also run without panicking.
#[test]
fn corrupt_artifacts_are_errors() {
    let (g, vocab) = json_gpt2();
    let bytes = g.to_bytes();
    assert_eq!(
        CompiledGrammar::from_bytes(b"GIF89a..........................").unwrap_err(),
        ArtifactError::Magic
    );
    let mut v = bytes.clone();
    v[8] ^= 1;
    assert!(matches!(
        CompiledGrammar::from_bytes(&v),
        Err(ArtifactError::Version { .. })
    ));
    for cut in [0, 7, 23, 24, 100, bytes.len() / 2, bytes.len() - 1] {
        assert!(
            CompiledGrammar::from_bytes(&bytes[..cut]).is_err(),
            "cut at {cut}"
        );
    }
    let mut padded = bytes.clone();
    padded.push(0);
    assert!(matches!(
        CompiledGrammar::from_bytes(&padded),
        Err(ArtifactError::Length { .. })
    ));
    let mut rng = SplitMix64::new(7);
    for _ in 0..200 {
        let mut v = bytes.clone();
        let i = 24 + rng.below(v.len() - 24);
        v[i] ^= 1 << rng.below(8) as u32;
        assert_eq!(
            CompiledGrammar::from_bytes(&v).unwrap_err(),
            ArtifactError::Checksum
        );
    }
    let doc = r#"{"k": [true, -0.5]}"#;
    let mut loaded = 0;
    for _ in 0..300 {
        let mut v = bytes.clone();
        for _ in 0..1 + rng.below(3) {
            let i = 24 + rng.below(v.len() - 24);
            v[i] = rng.below(256) as u8;
        }
        let crc = crc32fast::hash(&v[24..]);
        v[12..16].copy_from_slice(&crc.to_le_bytes());
        if let Ok(g2) = CompiledGrammar::from_bytes(&v) {
            loaded += 1;
            // A table edit that passes every check must still be safe to run.
            let mut m = Matcher::from_compiled(&g2);
            let mut words = vec![0u32; g2.dwa.vocab_len().div_ceil(32)];
            for t in vocab.encode(doc).expect("encodes") {
                m.fill_mask(&mut words).expect("sized by the artifact");
                if m.commit_token(&vocab, t).is_err() {
                    break;
                }
            }
        }
    }
    // Most single-byte edits land in weights or tables whose values stay in range.
    assert!(
        loaded > 0,
        "no edited artifact loaded: the run-safety check ran nothing"
    );
}

/// The artifacts `stackmask compile` writes for `grammar` (a file) under each thread
/// count of `threads`, each compile in a process of its own.
fn artifacts_by_thread_count(grammar: &Path, tok: &Path, threads: &[&str]) -> Vec<Vec<u8>> {
    let dir = std::env::temp_dir().join(format!(
        "stackmask-repro-{}-{}",
        std::process::id(),
        grammar.file_stem().unwrap_or_default().to_string_lossy()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let mut outs = Vec::new();
    for (i, n) in threads.iter().enumerate() {
        let out = dir.join(format!("out{i}.smk"));
        let st = std::process::Command::new(env!("CARGO_BIN_EXE_stackmask"))
            .env("RAYON_NUM_THREADS", n)
            .args(["compile", "--grammar"])
            .arg(grammar)
            .arg("--tokenizer")
            .arg(tok)
            .arg("-o")
            .arg(&out)
            .output()
            .expect("runs the binary");
        assert!(
            st.status.success(),
            "{}",
            String::from_utf8_lossy(&st.stderr)
        );
        outs.push(std::fs::read(&out).unwrap());
    }
    std::fs::remove_dir_all(&dir).ok();
    outs
}

/// Compiling the same grammar twice, in two processes, one of them single-threaded,
/// writes the same bytes (neither hash order nor the thread count, which splits the
/// parallel parts of the build, may leak into the artifact). Java has LR conflicts,
/// which exercise the determinizer's merging.
#[test]
fn artifacts_are_reproducible_across_processes() {
    let outs = artifacts_by_thread_count(
        &shared_dir().join("grammars/syncode/java.lark"),
        &shared_dir().join("tokenizers/gpt2.json"),
        &["1", "2"],
    );
    assert!(outs[0] == outs[1], "two compiles wrote different artifacts");
}

/// A schema large enough for the drain's parallel batches (whose states' edges are made
/// while the rest of the batch is explored, in an order the threads' timing decides)
/// compiles to the same bytes on one, two and three threads. So do its atoms, merged
/// byte after byte by whichever thread finds the merge free.
#[test]
fn parallel_drain_artifacts_do_not_depend_on_the_thread_count() {
    let file = shared_dir().join("maskbench/Kubernetes---kb_1007_Normalized.json");
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(file).expect("reads")).expect("parses");
    let schema = std::env::temp_dir().join(format!("stackmask-kb1007-{}.json", std::process::id()));
    std::fs::write(&schema, doc["schema"].to_string()).expect("writes");
    let outs = artifacts_by_thread_count(
        &schema,
        &shared_dir().join("tokenizers/llama3.json"),
        &["1", "2", "3"],
    );
    std::fs::remove_file(&schema).ok();
    assert!(
        outs[0] == outs[1],
        "one and two threads wrote different artifacts"
    );
    assert!(
        outs[0] == outs[2],
        "one and three threads wrote different artifacts"
    );
}

/// Building the tables and the automaton together (the automaton's lexer half beside the
/// LR build) gives what building them in turn gives, on a schema large enough for every
/// parallel step of the automaton build (Kubernetes: 30K LR states, a parallel drain).
#[test]
fn tables_and_automaton_built_together_equal_built_in_turn() {
    use stackmask::compile::{json_schema, Compiler};
    let file = shared_dir().join("maskbench/Kubernetes---kb_1007_Normalized.json");
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(file).expect("reads")).expect("parses");
    let g = json_schema::compile_value(&doc["schema"], &Default::default())
        .expect("compiles")
        .grammar;
    let vocab = Vocab::load(
        &shared_dir()
            .join("tokenizers/llama3.json")
            .to_string_lossy(),
    )
    .expect("loads");
    let compiler = Compiler::new(&vocab);
    let (tables, dwa) = compiler.tables_and_automaton(&g).expect("builds");
    let apart = compiler.tables(&g).expect("builds");
    assert_eq!(tables.lexer, apart.lexer);
    assert_eq!(tables.follow, apart.follow);
    assert_eq!(tables.lr, apart.lr);
    assert_eq!(dwa, compiler.automaton(&apart).expect("builds"));
}
