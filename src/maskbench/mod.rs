//! The MaskBench replay (JSONSchemaBench files: a `schema` and `tests`, instances marked
//! `valid`): compile each schema (time to first mask), serialize each instance as
//! Python's `json.dumps` does, tokenize it canonically and replay it token by token
//! (time between masks: mask + commit per token), then compare the outcome with the
//! label. Used by `stackmask maskbench` and by the conformance tests; depends on the
//! JSON Schema front end, the table and automaton builders, and the runtime.

pub mod noise;
pub mod py_json;

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use crate::compile::dwa_build::DwaLimits;
use crate::compile::json_schema::{self, SchemaError, SchemaOptions};
use crate::compile::lexer_build::LexerOptions;
use crate::compile::{build_glr_tables_with, build_tables_and_dwa, GrammarError};
use crate::glr::{GlrState, Tables};
use crate::ids::TokenId;
use crate::reference::Reference;
use crate::runtime::{CompiledGrammar, Matcher};
use crate::vocab::Vocab;

pub use py_json::{to_python_json, PyJson};

/// Which engine replays the instances.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// The reference oracle: commit only (viability of each prefix), no masks.
    Reference,
    /// The GLR recognizer: commit only, no masks.
    Glr,
    /// Masks from the mask automaton, checked before each GLR commit: what a server runs.
    Dwa,
}

/// States per schema automaton above which a schema counts as a compile error (bounds
/// the replay's time and memory on pathological schemas).
pub const MAX_DWA_STATES: usize = 300_000;

/// Distinct terminal tries above which a schema counts as a compile error for the
/// automaton: each is a class table over the vocabulary, so this bounds the replay's
/// compile time and memory (the slowest MaskBench schema under it compiles in ~15 s with
/// 128K tokens on 2 cores).
pub const MAX_TRIES: usize = 40_000;

/// A schema compiled for one engine.
pub enum Compiled {
    /// Matcher with its mask automaton.
    Dwa(Box<Matcher>),
    /// Recognizer tables.
    Glr(Arc<Tables>),
    /// The oracle.
    Reference(Box<Reference>),
}

/// Compiles a schema for `engine` (the automaton against `vocab`).
pub fn compile(
    schema: &Value,
    opts: &SchemaOptions,
    engine: Engine,
    vocab: &Vocab,
) -> Result<Compiled, SchemaError> {
    let lowered = json_schema::compile_value(schema, opts)?;
    let grammar_err = |e: GrammarError| SchemaError::Grammar(Box::new(e));
    let opts = LexerOptions::for_vocab(vocab);
    let tables = || build_glr_tables_with(&lowered.grammar, &opts).map_err(grammar_err);
    Ok(match engine {
        Engine::Dwa => {
            let limits = DwaLimits {
                max_states: MAX_DWA_STATES,
                max_tries: MAX_TRIES,
                ..DwaLimits::default()
            };
            let (tables, dwa) = build_tables_and_dwa(&lowered.grammar, &opts, vocab, limits)
                .map_err(grammar_err)?;
            // Made as a server makes it: the first mask is walked as part of the compile.
            let g = CompiledGrammar::new(Arc::new(tables), Arc::new(dwa), vocab);
            Compiled::Dwa(Box::new(Matcher::from_compiled(&g)))
        }
        Engine::Glr => Compiled::Glr(Arc::new(tables()?)),
        Engine::Reference => {
            Compiled::Reference(Box::new(Reference::new(&lowered.grammar, &tables()?.lexer)))
        }
    })
}

/// Replays one tokenized instance; true iff every token was allowed and the document is
/// complete at the end. Pushes one time per replayed token (µs) onto `tbm_us`.
pub fn replay(
    c: &Compiled,
    vocab: &Vocab,
    tokens: &[TokenId],
    words: &mut [u32],
    tbm_us: &mut Vec<f64>,
) -> bool {
    match c {
        Compiled::Dwa(base) => {
            let mut m = base.clone();
            for &t in tokens {
                let t0 = Instant::now();
                let ok = m.fill_mask(words).is_ok()
                    && {
                        let i = t.index();
                        words.get(i / 32).is_some_and(|w| w >> (i % 32) & 1 == 1)
                    }
                    && m.commit(vocab, t).is_ok();
                tbm_us.push(t0.elapsed().as_secs_f64() * 1e6);
                if !ok {
                    return false;
                }
            }
            m.is_accepting()
        }
        Compiled::Glr(tables) => {
            let mut g = GlrState::new(tables.clone());
            for &t in tokens {
                let Ok(bytes) = vocab.token_bytes(t) else {
                    return false;
                };
                let t0 = Instant::now();
                let ok = g.commit_bytes(bytes).is_ok();
                tbm_us.push(t0.elapsed().as_secs_f64() * 1e6);
                if !ok {
                    return false;
                }
            }
            g.is_accepting()
        }
        Compiled::Reference(r) => {
            let mut p = r.empty();
            for &t in tokens {
                let Ok(bytes) = vocab.token_bytes(t) else {
                    return false;
                };
                let t0 = Instant::now();
                let next = r.extend(&p, bytes);
                let ok = r.prefix_viable(&next);
                tbm_us.push(t0.elapsed().as_secs_f64() * 1e6);
                if !ok {
                    return false;
                }
                p = next;
                p.freeze();
            }
            r.prefix_complete(&p)
        }
    }
}

/// One instance's outcome.
#[derive(Debug, Clone)]
pub struct InstanceOutcome {
    /// Index in the file's `tests`.
    pub index: usize,
    /// The label.
    pub valid: bool,
    /// Whether the replay accepted it.
    pub accepted: bool,
    /// The serialized text that was replayed.
    pub text: String,
}

/// One file's outcome.
#[derive(Debug)]
pub enum FileOutcome {
    /// Not a MaskBench file (unreadable, or no `schema`/`tests`).
    BadFile(String),
    /// The schema did not compile.
    Error(SchemaError),
    /// Compiled in `ttfm_ms`; every instance replayed.
    Compiled {
        /// Time to first mask: schema → grammar → tables (→ automaton), ms.
        ttfm_ms: f64,
        /// The least of `ttfm_ms` and the times of the further compiles asked for (the same
        /// as `ttfm_ms` with one compile), ms.
        ttfm_floor_ms: f64,
        /// Per instance.
        instances: Vec<InstanceOutcome>,
    },
}

/// Per-token times of a replay run (µs), appended file after file in replay order.
///
/// A token's one measured time includes whatever interrupted it: on the 2-core VM this
/// project is measured on, a busy thread is stalled for 10 to 80 µs some 250 to 360 times
/// a second (timer ticks at HZ=250 and other interrupts), so about one token in a
/// thousand is hit. Replaying each instance more than once and keeping each token's
/// minimum separates the engine's cost from the machine's. The first replay's times stay
/// the benchmark's TBM, cold caches and interruptions included.
#[derive(Debug, Clone)]
pub struct TokenTimes {
    /// Replays per instance (at least 1); all of them judge the instance alike.
    pub replays: usize,
    /// Each token's time in the first replay: the reported TBM.
    pub first: Vec<f64>,
    /// Each token's minimum over the replays (the same as `first` with one replay).
    pub floor: Vec<f64>,
}

impl TokenTimes {
    /// Empty, for `replays` replays per instance (0 counts as 1).
    pub fn new(replays: usize) -> Self {
        Self {
            replays: replays.max(1),
            first: Vec::new(),
            floor: Vec::new(),
        }
    }
}

/// Compiles a file's schema and replays its instances; then, past `compiles` = 1,
/// compiles it again that many times less one, for the floor of its compile time.
///
/// The further compiles come after the replays, so that the first replays run on the
/// caches the first compile left, as they would alone. Their times leave out what a
/// single compile meets by chance on a shared machine (steal time, interrupts, a page
/// reclaimed meanwhile); nothing is cached from one compile to the next but the
/// vocabulary's own tables, which the first compile already made.
pub fn run_file(
    file: &Value,
    opts: &SchemaOptions,
    engine: Engine,
    vocab: &Vocab,
    style: PyJson,
    times: &mut TokenTimes,
    compiles: usize,
) -> FileOutcome {
    let (Some(schema), Some(tests)) = (
        file.get("schema"),
        file.get("tests").and_then(Value::as_array),
    ) else {
        return FileOutcome::BadFile("no `schema` and `tests`".into());
    };
    let t0 = Instant::now();
    let compiled = match compile(schema, opts, engine, vocab) {
        Ok(c) => c,
        Err(e) => return FileOutcome::Error(e),
    };
    let ttfm_ms = t0.elapsed().as_secs_f64() * 1e3;
    let mut words = vec![0u32; vocab.len().div_ceil(32)];
    let mut instances = Vec::new();
    // Each replayed instance's tokens and where its times start.
    let mut replayed: Vec<(Vec<TokenId>, usize)> = Vec::new();
    for (index, test) in tests.iter().enumerate() {
        let (Some(data), Some(valid)) =
            (test.get("data"), test.get("valid").and_then(Value::as_bool))
        else {
            continue;
        };
        let text = to_python_json(data, style);
        let accepted = match vocab.encode(&text) {
            Ok(tokens) => {
                let from = times.first.len();
                let accepted = replay(&compiled, vocab, &tokens, &mut words, &mut times.first);
                times.floor.extend_from_slice(&times.first[from..]);
                replayed.push((tokens, from));
                accepted
            }
            Err(_) => false,
        };
        instances.push(InstanceOutcome {
            index,
            valid,
            accepted,
            text,
        });
    }
    // Further replays come after every first one, so that the first replays run as they
    // would alone (not on caches an instance's own replays just warmed).
    let mut again = Vec::new();
    for _ in 1..times.replays {
        for (tokens, from) in &replayed {
            again.clear();
            // Replays are deterministic: they take the same tokens to the same outcome.
            replay(&compiled, vocab, tokens, &mut words, &mut again);
            for (f, &t) in times.floor[*from..].iter_mut().zip(&again) {
                *f = f.min(t);
            }
        }
    }
    let mut ttfm_floor_ms = ttfm_ms;
    for _ in 1..compiles {
        let t0 = Instant::now();
        // The same schema compiled a moment ago: it compiles again (the build is
        // deterministic); the result is dropped outside the timed span.
        let again = compile(schema, opts, engine, vocab);
        ttfm_floor_ms = ttfm_floor_ms.min(t0.elapsed().as_secs_f64() * 1e3);
        drop(again);
    }
    FileOutcome::Compiled {
        ttfm_ms,
        ttfm_floor_ms,
        instances,
    }
}
