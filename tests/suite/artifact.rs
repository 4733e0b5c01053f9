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

/// The toy vocabulary the golden artifacts were compiled for: JSON punctuation, a few
/// letters and digits, spaces, multi-character pieces that straddle terminals, and EOS.
fn golden_vocab() -> Vocab {
    let tokens = [
        "{", "}", "[", "]", "\"", ":", ",", " ", "a", "b", "xyz", "1", "23", "-", ".", "e", "true",
        "false", "null", "\":", "\",", "{\"", "\"}", " \"", "ab\"", "\\", "n", "u00e9", "c",
        "<eos>",
    ];
    let eos = stackmask::ids::TokenId::new(tokens.len() - 1);
    Vocab::from_byte_tokens(
        "golden",
        tokens.iter().map(|t| Some(t.as_bytes().to_vec())).collect(),
        &[eos],
    )
    .expect("toy vocabulary")
}

/// `doc` as the toy vocabulary's tokens, longest match first.
fn greedy(vocab: &Vocab, doc: &str) -> Vec<stackmask::ids::TokenId> {
    let mut out = Vec::new();
    let mut rest = doc.as_bytes();
    while !rest.is_empty() {
        let t = (0..vocab.len())
            .map(stackmask::ids::TokenId::new)
            .filter(|&t| !vocab.eos().contains(&t))
            .filter(|&t| vocab.token_bytes(t).is_ok_and(|b| rest.starts_with(b)))
            .max_by_key(|&t| vocab.token_bytes(t).map_or(0, |b| b.len()))
            .unwrap_or_else(|| panic!("no token for {:?}", String::from_utf8_lossy(rest)));
        rest = &rest[vocab.token_bytes(t).unwrap().len()..];
        out.push(t);
    }
    out
}

/// The grammars of the golden artifacts: the built-in JSON grammar, and a schema whose
/// lexer counts a bounded string and splits string states (runs and a split table in
/// the payload).
fn golden_grammars() -> Vec<(&'static str, String, stackmask::compile::GrammarFormat)> {
    use stackmask::compile::{GrammarFormat, BUILTIN_JSON};
    let schema = r#"{"type": "object", "properties": {
        "a": {"type": "string", "maxLength": 40},
        "b": {"anyOf": [{"type": "string", "pattern": "^a+$"}, {"type": "string", "maxLength": 3}]},
        "c": {"type": "array", "items": {"type": "number"}}}}"#;
    vec![
        ("json", BUILTIN_JSON.to_string(), GrammarFormat::Lark),
        ("schema", schema.to_string(), GrammarFormat::JsonSchema),
    ]
}

/// Stored artifacts of every format version (`tests/data/artifacts/v{N}-{name}.smk`):
/// this version's must load, check against their vocabulary and give the masks a fresh
/// compile gives along documents; an older version's must be refused with a version
/// error naming it, never a panic or a wrong load. With `STACKMASK_BLESS=1` the current
/// version's files are written (after a format change bumps `FORMAT_VERSION`).
#[test]
fn golden_artifacts_load_or_are_refused_by_version() {
    use stackmask::compile::Compiler;
    use stackmask::runtime::FORMAT_VERSION;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/artifacts");
    let vocab = golden_vocab();
    let compiler = Compiler::new(&vocab);
    let fresh: Vec<(&str, CompiledGrammar)> = golden_grammars()
        .into_iter()
        .map(|(name, text, format)| (name, compiler.compile(&text, format).expect("compiles")))
        .collect();
    if std::env::var_os("STACKMASK_BLESS").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for (name, g) in &fresh {
            std::fs::write(
                dir.join(format!("v{FORMAT_VERSION}-{name}.smk")),
                g.to_bytes(),
            )
            .unwrap();
        }
    }
    let docs = [
        r#"{"a": "xyzab", "b": "aaa", "c": [1, -23.1e1]}"#,
        r#"{"b": "ab", "c": []}"#,
        r#"[true, false, null, {"a": "\u00e9\n"}]"#,
    ];
    // The schema's artifact holds a counted lexer's runs and a split table.
    let schema = &fresh.iter().find(|(n, _)| *n == "schema").unwrap().1;
    assert!(!schema.tables.lexer.runs().is_empty() && schema.dwa.split().is_some());
    let (mut current, mut steps) = (0, 0);
    for entry in std::fs::read_dir(&dir).expect("tests/data/artifacts") {
        let path = entry.unwrap().path();
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let (version, name) = file
            .strip_prefix('v')
            .and_then(|f| f.strip_suffix(".smk"))
            .and_then(|f| f.split_once('-'))
            .unwrap_or_else(|| panic!("{file}: not v{{N}}-{{name}}.smk"));
        let version: u32 = version.parse().expect("version number");
        let bytes = std::fs::read(&path).unwrap();
        match CompiledGrammar::from_bytes(&bytes) {
            Ok(loaded) => {
                assert_eq!(version, FORMAT_VERSION, "{file}: an old version loaded");
                current += 1;
                loaded.check_vocab(&vocab).expect("the golden vocabulary");
                let (_, g) = fresh
                    .iter()
                    .find(|(n, _)| *n == name)
                    .unwrap_or_else(|| panic!("{file}: no grammar named {name}"));
                for doc in docs {
                    // Along the longest prefix the fresh grammar allows (the documents
                    // fit one grammar or the other).
                    let mut a = Matcher::from_compiled(g);
                    let mut b = Matcher::from_compiled(&loaded);
                    let mut words = vec![0u32; vocab.len().div_ceil(32)];
                    let mut other = words.clone();
                    for t in greedy(&vocab, doc) {
                        a.fill_mask(&mut words).unwrap();
                        b.fill_mask(&mut other).unwrap();
                        assert_eq!(words, other, "{file}: {doc}");
                        steps += 1;
                        if a.commit(&vocab, t).is_err() {
                            break;
                        }
                        b.commit(&vocab, t)
                            .expect("the loaded grammar commits alike");
                    }
                }
            }
            Err(ArtifactError::Version { found, expected }) => {
                assert_eq!((found, expected), (version, FORMAT_VERSION), "{file}");
                assert_ne!(version, FORMAT_VERSION, "{file}");
            }
            Err(e) => panic!("{file}: {e}"),
        }
    }
    assert!(steps >= 40, "only {steps} masks compared");
    assert_eq!(
        current,
        fresh.len(),
        "every golden grammar has an artifact of format version {FORMAT_VERSION} \
         (write them with STACKMASK_BLESS=1 after bumping the version)"
    );
}
