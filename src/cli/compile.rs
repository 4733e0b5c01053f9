//! `stackmask compile`: grammar × tokenizer → an artifact file, with sizes and timings;
//! `--load` reads an artifact back (checking it) and reports its load time.

use std::sync::Arc;
use std::time::Instant;

use stackmask::runtime::CompiledGrammar;

use super::load::{self, GrammarArgs, TokenizerArgs};

/// Compiles and writes `out`; prints one JSON object of figures.
pub fn run(grammar: &GrammarArgs, tokenizer: &TokenizerArgs, out: &str) -> Result<(), String> {
    let vocab = load::vocab(tokenizer)?;
    let loaded = load::grammar(grammar, &vocab)?;
    let t0 = Instant::now();
    let dwa = grammar
        .compiler(&vocab)
        .automaton(&loaded.tables)
        .map_err(|e| e.to_string())?;
    let dwa_ms = t0.elapsed().as_secs_f64() * 1e3;
    let g = CompiledGrammar::new(loaded.tables.clone(), Arc::new(dwa), &vocab);
    let bytes = g.to_bytes();
    std::fs::write(out, &bytes).map_err(|e| format!("cannot write {out}: {e}"))?;
    let d = &g.dwa;
    println!(
        "{}",
        serde_json::json!({
            "grammar_ms": (loaded.compile_ms * 1000.0).round() / 1000.0,
            "automaton_ms": (dwa_ms * 1000.0).round() / 1000.0,
            "states": d.num_states(),
            "transitions": d.num_transitions(),
            "weights": d.num_weights(),
            "class_words": d.class_words(),
            "shapes": d.num_shapes(),
            // Tokens each mask commits on the recognizer instead (`Drops::overflow`).
            "recognizer_tokens": d.drops().overflow.len(),
            "artifact_bytes": bytes.len(),
            "out": out,
        })
    );
    Ok(())
}

/// Loads an artifact, checks it against the tokenizer if one is given, prints figures.
pub fn load(path: &str, tokenizer: Option<&TokenizerArgs>) -> Result<(), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let t0 = Instant::now();
    let g = CompiledGrammar::from_bytes(&bytes).map_err(|e| format!("{path}: {e}"))?;
    let load_ms = t0.elapsed().as_secs_f64() * 1e3;
    if let Some(t) = tokenizer {
        let vocab = load::vocab(t)?;
        g.check_vocab(&vocab).map_err(|e| format!("{path}: {e}"))?;
    }
    println!(
        "{}",
        serde_json::json!({
            "load_ms": (load_ms * 1000.0).round() / 1000.0,
            "states": g.dwa.num_states(),
            "artifact_bytes": bytes.len(),
            "vocab_len": g.vocab.len,
        })
    );
    Ok(())
}
