//! Loading what the commands need: grammars (files or builtins) and tokenizers.

use std::sync::Arc;
use std::time::Instant;

use stackmask::compile::{self, GrammarFormat};
use stackmask::glr::Tables;
use stackmask::vocab::Vocab;

/// A compiled grammar with everything the commands use.
pub struct Loaded {
    pub grammar: compile::Grammar,
    pub tables: Arc<Tables>,
    pub compile_ms: f64,
}

/// `--format` values.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Format {
    Lark,
    Gbnf,
}

/// Reads grammar text from a file or a builtin, with the format to use.
pub fn grammar_text(spec: &str, format: Option<Format>) -> Result<(String, GrammarFormat), String> {
    let (text, guessed) = if let Some(name) = spec.strip_prefix("builtin:") {
        match name {
            "json" => (compile::BUILTIN_JSON.to_string(), GrammarFormat::Lark),
            other => {
                return Err(format!(
                    "no builtin grammar {other:?} (available: builtin:json)"
                ))
            }
        }
    } else {
        let bytes = std::fs::read(spec).map_err(|e| format!("cannot read {spec}: {e}"))?;
        let text = String::from_utf8(bytes).map_err(|e| {
            format!(
                "{spec}: grammar is not valid UTF-8 (byte {})",
                e.utf8_error().valid_up_to()
            )
        })?;
        (text, GrammarFormat::from_path(spec))
    };
    let format = match format {
        Some(Format::Lark) => GrammarFormat::Lark,
        Some(Format::Gbnf) => GrammarFormat::Gbnf,
        None => guessed,
    };
    Ok((text, format))
}

/// Compiles a grammar spec into recognizer tables, timing it.
pub fn grammar(spec: &str, format: Option<Format>) -> Result<Loaded, String> {
    let (text, format) = grammar_text(spec, format)?;
    let t0 = Instant::now();
    let grammar = compile::compile_grammar(&text, format).map_err(|e| format!("{spec}:{e}"))?;
    let tables = compile::build_glr_tables(&grammar).map_err(|e| format!("{spec}:{e}"))?;
    let compile_ms = t0.elapsed().as_secs_f64() * 1e3;
    Ok(Loaded {
        grammar,
        tables: Arc::new(tables),
        compile_ms,
    })
}

/// Loads a tokenizer and applies `--eos` overrides.
pub fn vocab(spec: &str, eos: &[String]) -> Result<Vocab, String> {
    let mut v = Vocab::load(spec).map_err(|e| e.to_string())?;
    if !eos.is_empty() {
        let ids = eos
            .iter()
            .map(|s| v.resolve_token(s))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        v.set_eos(&ids).map_err(|e| e.to_string())?;
    }
    Ok(v)
}
