//! Paths to test data and to the shared corpus beside the checkout.

use std::path::PathBuf;

/// `tests/data/`.
pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// The shared corpus (`../shared` beside the checkout, or `$STACKMASK_SHARED`). Tests that
/// need it fail loudly when it is missing: CI always has it.
pub fn shared_dir() -> PathBuf {
    let p = std::env::var_os("STACKMASK_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    assert!(
        p.join("tokenizers").is_dir(),
        "shared corpus not found at {} (set STACKMASK_SHARED)",
        p.display()
    );
    p
}

/// Resolves `shared:REL` to a path in the shared corpus, `data:REL` to one in tests/data,
/// `bench:REL` to one in benches/data, and leaves other specs (e.g. `builtin:o200k`) alone.
pub fn resolve(spec: &str) -> String {
    if let Some(rel) = spec.strip_prefix("shared:") {
        shared_dir().join(rel).display().to_string()
    } else if let Some(rel) = spec.strip_prefix("data:") {
        data_dir().join(rel).display().to_string()
    } else if let Some(rel) = spec.strip_prefix("bench:") {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("benches/data")
            .join(rel)
            .display()
            .to_string()
    } else {
        spec.to_string()
    }
}

/// Reads and parses a TOML file from tests/data.
pub fn load_toml<T: serde::de::DeserializeOwned>(rel: &str) -> T {
    let path = data_dir().join(rel);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The built-in JSON grammar compiled for GPT-2 (tables and mask automaton), with the
/// vocabulary: the fixture of the runtime API tests.
pub fn json_gpt2() -> (stackmask::runtime::CompiledGrammar, stackmask::vocab::Vocab) {
    use stackmask::compile::{build_glr_tables, compile_grammar, GrammarFormat, BUILTIN_JSON};
    use std::sync::Arc;
    let vocab =
        stackmask::vocab::Vocab::load(&resolve("shared:tokenizers/gpt2.json")).expect("gpt2 loads");
    let g = compile_grammar(BUILTIN_JSON, GrammarFormat::Lark).expect("json grammar");
    let tables = Arc::new(build_glr_tables(&g).expect("tables"));
    let dwa = Arc::new(
        stackmask::compile::Compiler::new(&vocab)
            .automaton(&tables)
            .expect("automaton"),
    );
    (
        stackmask::runtime::CompiledGrammar::new(tables, dwa, &vocab),
        vocab,
    )
}
