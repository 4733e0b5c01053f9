//! The MaskBench replay (JSONSchemaBench files: a `schema` and `tests`, instances marked
//! `valid`): compile each schema (time to first mask), serialize each instance as
//! Python's `json.dumps` does, tokenize it canonically and replay it token by token
//! (time between masks: mask + commit per token), then compare the outcome with the
//! label. Used by `stackmask maskbench` and its tests; depends on the JSON Schema front
//! end, the compiler and the runtime.

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use stackmask::compile::frontend::json_schema::{self, SchemaError, SchemaOptions};
use stackmask::compile::DwaLimits;
use stackmask::compile::{Compiler, GrammarError};
use stackmask::glr::{GlrState, Tables};
use stackmask::ids::TokenId;
use stackmask::reference::Reference;
use stackmask::runtime::{ArtifactError, CompiledGrammar, GrammarBuild, Matcher};
use stackmask::vocab::Vocab;

pub use super::py_json::{to_python_json, PyJson};

/// Which engine replays the instances.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// The reference oracle: commit only (viability of each prefix), no masks.
    Reference,
    /// The GLR recognizer: commit only, no masks.
    Glr,
    /// Masks from the mask automaton, checked before each GLR commit: what a server runs.
    Dwa,
    /// As `Dwa`, with the automaton built on another thread: the compile ends with the
    /// tables and the first mask, and masks walk the vocabulary until the automaton is
    /// there (`runtime::GrammarBuild`).
    Background,
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
    /// The compiled grammar (tables, mask automaton and first mask).
    Dwa(Box<CompiledGrammar>),
    /// Tables and first mask, the automaton on its way.
    Background(GrammarBuild),
    /// Recognizer tables.
    Glr(Arc<Tables>),
    /// The oracle.
    Reference(Box<Reference>),
}

/// Compiles a schema for `engine` (the automaton against `vocab`), its tables and
/// automaton within `time_limit` if one is given.
pub fn compile(
    schema: &Value,
    opts: &SchemaOptions,
    engine: Engine,
    vocab: &Arc<Vocab>,
    time_limit: Option<std::time::Duration>,
) -> Result<Compiled, SchemaError> {
    let lowered = json_schema::compile_value(schema, opts)?;
    let grammar_err = |e: GrammarError| SchemaError::Grammar(Box::new(e));
    let mut compiler = Compiler::new(vocab).with_limits(DwaLimits {
        max_states: MAX_DWA_STATES,
        max_tries: MAX_TRIES,
        ..DwaLimits::default()
    });
    if let Some(limit) = time_limit {
        compiler = compiler.with_time_limit(limit);
    }
    let tables = || compiler.tables(&lowered.grammar).map_err(grammar_err);
    Ok(match engine {
        // Made as a server makes it: the first mask is walked as part of the compile.
        Engine::Dwa => Compiled::Dwa(Box::new(
            compiler.compile_ir(&lowered.grammar).map_err(grammar_err)?,
        )),
        Engine::Background => Compiled::Background(
            compiler
                .compile_ir_in_background(vocab, &lowered.grammar)
                .map_err(grammar_err)?,
        ),
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
        Compiled::Dwa(_) | Compiled::Background(_) => {
            let mut m = match c {
                Compiled::Background(b) => Matcher::from_build(b),
                Compiled::Dwa(g) => Matcher::from_compiled(g),
                _ => unreachable!("matched above"),
            };
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
                let Some(bytes) = vocab.mask_bytes(t) else {
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
                let Some(bytes) = vocab.mask_bytes(t) else {
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
        /// The artifact round trip, when asked for (automaton engine only).
        round_trip: Option<RoundTrip>,
    },
}

/// A compiled grammar taken through its artifact bytes and back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoundTrip {
    /// Loaded back; at every step of every replayed instance the loaded grammar's mask
    /// equals the original's.
    MasksEqual,
    /// Loaded back, but a mask differs: the instance's index and the step.
    MaskDiffers {
        /// Index in the file's `tests`.
        index: usize,
        /// Tokens committed before the differing mask.
        step: usize,
    },
    /// The bytes were refused.
    Refused(ArtifactError),
}

/// Writes `g` to bytes, loads them back, and compares the two grammars' masks at every
/// step of each of `docs` (instance index, tokens): from the start up to the first token
/// the original's mask does not allow, or the end.
pub fn round_trip(g: &CompiledGrammar, vocab: &Vocab, docs: &[(usize, &[TokenId])]) -> RoundTrip {
    let back = match CompiledGrammar::from_bytes(&g.to_bytes()) {
        Ok(b) => b,
        Err(e) => return RoundTrip::Refused(e),
    };
    let words = vocab.len().div_ceil(32);
    let (mut want, mut got) = (vec![0u32; words], vec![0u32; words]);
    for &(index, tokens) in docs {
        let (mut a, mut b) = (Matcher::from_compiled(g), Matcher::from_compiled(&back));
        for step in 0..=tokens.len() {
            let ok_a = a.fill_mask(&mut want).is_ok();
            let ok_b = b.fill_mask(&mut got).is_ok();
            if ok_a != ok_b || want != got {
                return RoundTrip::MaskDiffers { index, step };
            }
            let Some(&t) = tokens.get(step) else { break };
            let allowed = want
                .get(t.index() / 32)
                .is_some_and(|w| w >> (t.index() % 32) & 1 == 1);
            if !ok_a || !allowed || a.commit(vocab, t).is_err() {
                break;
            }
            if b.commit(vocab, t).is_err() {
                return RoundTrip::MaskDiffers {
                    index,
                    step: step + 1,
                };
            }
        }
        if a.is_accepting() != b.is_accepting() {
            return RoundTrip::MaskDiffers {
                index,
                step: tokens.len(),
            };
        }
    }
    RoundTrip::MasksEqual
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

/// How [`run_file`] compiles and replays a file.
#[derive(Debug, Clone, Copy)]
pub struct RunOptions<'a> {
    /// The JSON Schema front end's options.
    pub schema: &'a SchemaOptions,
    /// The engine that replays.
    pub engine: Engine,
    /// How instances are serialized.
    pub style: PyJson,
    /// Compiles per schema (at least 1): past one, the least compile time is kept too.
    pub compiles: usize,
    /// Take the compiled grammar through its artifact bytes and back, and compare masks
    /// along every replayed instance ([`round_trip`]; automaton engine only).
    pub round_trip: bool,
    /// A time limit on each compile (tables and automaton).
    pub time_limit: Option<std::time::Duration>,
}

impl<'a> RunOptions<'a> {
    /// One compile, no round trip, `json.dumps` defaults.
    pub fn new(schema: &'a SchemaOptions, engine: Engine) -> Self {
        Self {
            schema,
            engine,
            style: PyJson::default(),
            compiles: 1,
            round_trip: false,
            time_limit: None,
        }
    }
}

/// Compiles a file's schema and replays its instances; then, past `o.compiles` = 1,
/// compiles it again that many times less one, for the floor of its compile time.
///
/// The further compiles come after the replays, so that the first replays run on the
/// caches the first compile left, as they would alone. Their times leave out what a
/// single compile meets by chance on a shared machine (steal time, interrupts, a page
/// reclaimed meanwhile); nothing is cached from one compile to the next but the
/// vocabulary's own tables, which the first compile already made.
pub fn run_file(
    file: &Value,
    o: &RunOptions,
    vocab: &Arc<Vocab>,
    times: &mut TokenTimes,
) -> FileOutcome {
    let (opts, engine, style, compiles) = (o.schema, o.engine, o.style, o.compiles);
    let limit = o.time_limit;
    let (Some(schema), Some(tests)) = (
        file.get("schema"),
        file.get("tests").and_then(Value::as_array),
    ) else {
        return FileOutcome::BadFile("no `schema` and `tests`".into());
    };
    let t0 = Instant::now();
    let compiled = match compile(schema, opts, engine, vocab, limit) {
        Ok(c) => c,
        Err(e) => return FileOutcome::Error(e),
    };
    let ttfm_ms = t0.elapsed().as_secs_f64() * 1e3;
    let mut words = vec![0u32; vocab.len().div_ceil(32)];
    let mut instances = Vec::new();
    // Each replayed instance's index, tokens and where its times start.
    let mut replayed: Vec<(usize, Vec<TokenId>, usize)> = Vec::new();
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
                replayed.push((index, tokens, from));
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
        for (_, tokens, from) in &replayed {
            again.clear();
            // Replays are deterministic: they take the same tokens to the same outcome.
            replay(&compiled, vocab, tokens, &mut words, &mut again);
            for (f, &t) in times.floor[*from..].iter_mut().zip(&again) {
                *f = f.min(t);
            }
        }
    }
    let round_trip = match &compiled {
        Compiled::Dwa(g) if o.round_trip => {
            let docs: Vec<(usize, &[TokenId])> = replayed
                .iter()
                .map(|(index, tokens, _)| (*index, tokens.as_slice()))
                .collect();
            Some(round_trip(g, vocab, &docs))
        }
        _ => None,
    };
    let mut ttfm_floor_ms = ttfm_ms;
    for _ in 1..compiles {
        let t0 = Instant::now();
        // The same schema compiled a moment ago: it compiles again (the build is
        // deterministic); the result is dropped outside the timed span.
        let again = compile(schema, opts, engine, vocab, limit);
        ttfm_floor_ms = ttfm_floor_ms.min(t0.elapsed().as_secs_f64() * 1e3);
        drop(again);
    }
    FileOutcome::Compiled {
        ttfm_ms,
        ttfm_floor_ms,
        instances,
        round_trip,
    }
}
