//! `stackmask check`: decode a document token by token, checking and timing every mask and
//! commit.

use std::io::Write;
use std::time::Instant;

use stackmask::glr::walk::VocabWalk;
use std::sync::Arc;

use stackmask::compile::Compiler;
use stackmask::glr::GlrState;
use stackmask::ids::TokenId;
use stackmask::reference::{Prefix, Reference};
use stackmask::runtime::{CompiledGrammar, Matcher};
use stackmask::vocab::segment::random_segmentation;
use stackmask::vocab::Vocab;

use super::load::{self, GrammarArgs, TokenizerArgs};
use super::stats::percentiles;

/// Which engine masks and commits.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Engine {
    /// The reference oracle (Earley; slow).
    Reference,
    /// The GLR recognizer; masks by walking the vocabulary through it (slow path).
    Glr,
    /// GLR commits, masks from the mask automaton.
    Dwa,
    /// Like dwa, and the reference mask on every masked step (counting mismatches).
    Both,
}

/// Options of `check`.
pub struct CheckArgs<'a> {
    pub grammar: &'a GrammarArgs,
    pub tokenizer: &'a TokenizerArgs,
    pub text: &'a str,
    pub engine: Engine,
    pub segment: &'a str,
    pub dump_masks: Option<&'a str>,
    pub json: bool,
    pub mask_every: usize,
    pub verify_every: usize,
    pub artifact: Option<&'a str>,
}

/// The document's tokens: the tokenizer's own encoding (`canonical`) or a random
/// segmentation into vocabulary tokens (`random:SEED`).
pub fn tokens_of(vocab: &Vocab, text: &[u8], segment: &str) -> Result<Vec<TokenId>, String> {
    if segment == "canonical" {
        let s = std::str::from_utf8(text).map_err(|e| {
            format!(
                "canonical tokenization needs UTF-8 text (byte {})",
                e.valid_up_to()
            )
        })?;
        return vocab.encode(s).map_err(|e| e.to_string());
    }
    if let Some(seed) = segment.strip_prefix("random:") {
        let seed: u64 = seed
            .parse()
            .map_err(|_| format!("bad seed in --segment {segment}"))?;
        return random_segmentation(vocab, text, seed).map_err(|e| e.to_string());
    }
    Err(format!(
        "--segment must be canonical or random:SEED, not {segment}"
    ))
}

fn bits(mask: &[bool]) -> Vec<u32> {
    let mut out = vec![0u32; mask.len().div_ceil(32)];
    for (i, &m) in mask.iter().enumerate() {
        if m {
            out[i / 32] |= 1 << (i % 32);
        }
    }
    out
}

fn has(mask: &[u32], t: TokenId) -> bool {
    mask.get(t.index() / 32)
        .is_some_and(|w| w >> (t.index() % 32) & 1 == 1)
}

/// Runs `check`; returns whether the document passed.
pub fn run(a: CheckArgs) -> Result<bool, String> {
    let vocab = load::vocab(a.tokenizer)?;
    let loaded = load::grammar(a.grammar, &vocab)?;
    let text = std::fs::read(a.text).map_err(|e| format!("cannot read {}: {e}", a.text))?;
    let tokens = tokens_of(&vocab, &text, a.segment)?;
    let reference = Reference::new(&loaded.grammar, &loaded.tables.lexer);
    let (matcher, dwa_ms) = match a.engine {
        Engine::Dwa | Engine::Both => {
            let t0 = Instant::now();
            let m = matcher(a.artifact, &a.grammar.compiler(&vocab), &loaded)?;
            (Some(m), Some(t0.elapsed().as_secs_f64() * 1e3))
        }
        _ => (None, None),
    };
    let mut e = Engines {
        engine: a.engine,
        walk: (a.engine == Engine::Glr).then(|| VocabWalk::new(loaded.tables.clone())),
        glr: GlrState::new(loaded.tables.clone()),
        matcher,
        prefix: reference.empty(),
        reference,
        words: vec![0u32; vocab.len().div_ceil(32)],
        reads: Vec::new(),
    };
    let mut dump = match a.dump_masks {
        Some(p) => Some(std::io::BufWriter::new(
            std::fs::File::create(p).map_err(|e| format!("cannot create {p}: {e}"))?,
        )),
        None => None,
    };

    let (mut mask_us, mut commit_us) = (Vec::new(), Vec::new());
    let mut rejected_at = None;
    let mut mismatches = 0usize;
    let mask_every = a.mask_every.max(1);
    for (i, &t) in tokens.iter().enumerate() {
        if i % mask_every == 0 {
            let (mask, us) = e.mask(&vocab)?;
            mask_us.push(us);
            let verify = match a.engine {
                Engine::Both => true,
                Engine::Glr | Engine::Dwa => a.verify_every > 0 && i % a.verify_every == 0,
                Engine::Reference => false,
            };
            if verify && bits(&e.reference.mask(&e.prefix, &vocab)) != mask {
                mismatches += 1;
            }
            if let Some(d) = dump.as_mut() {
                let ids: Vec<usize> = (0..vocab.len())
                    .filter(|&k| has(&mask, TokenId::new(k)))
                    .collect();
                writeln!(d, "{}", serde_json::to_string(&ids).unwrap_or_default())
                    .map_err(|e| e.to_string())?;
            }
            if !has(&mask, t) {
                rejected_at = Some(i);
                break;
            }
        }
        let bytes = vocab
            .mask_bytes(t)
            .ok_or_else(|| format!("token {t} carries no text a grammar reads"))?;
        let t0 = Instant::now();
        let ok = e.commit(bytes);
        commit_us.push(t0.elapsed().as_secs_f64() * 1e6);
        e.reference_follows(bytes);
        if !ok {
            rejected_at = Some(i);
            break;
        }
    }
    let accepted = rejected_at.is_none() && e.accepted();
    if rejected_at.is_none()
        && a.engine != Engine::Reference
        && accepted != e.reference.prefix_complete(&e.prefix)
    {
        mismatches += 1;
    }
    let ok = rejected_at.is_none() && accepted && mismatches == 0;
    let reads = &e.reads;
    let report = serde_json::json!({
        "tokens": tokens.len(),
        "rejected_at": rejected_at,
        "accepted": accepted,
        "mismatches": mismatches,
        "compile_ms": ((loaded.compile_ms + dwa_ms.unwrap_or(0.0)) * 1000.0).round() / 1000.0,
        "mask_us": percentiles(&mut mask_us),
        "commit_us": percentiles(&mut commit_us),
        "stack_reads": (!reads.is_empty()).then(|| serde_json::json!({
            "mean": (reads.iter().sum::<usize>() as f64 / reads.len() as f64 * 10.0).round() / 10.0,
            "max": reads.iter().max(),
        })),
    });
    if a.json {
        println!("{report}");
    } else {
        let outcome = match rejected_at {
            Some(k) => rejected_after(&vocab, &tokens, k),
            None if accepted => "accepted".into(),
            None => "every token allowed, but the document is incomplete (EOS not allowed)".into(),
        };
        println!("{}: {} tokens, {outcome}", a.text, tokens.len());
        println!(
            "mismatches: {mismatches}, compile: {:.1} ms",
            loaded.compile_ms
        );
        println!("mask µs:   {}", report["mask_us"]);
        println!("commit µs: {}", report["commit_us"]);
    }
    Ok(ok)
}

/// The engine under check at one point of the document, and the reference oracle's
/// prefix beside it (kept for every engine: it checks masks and the end).
struct Engines {
    engine: Engine,
    reference: Reference,
    prefix: Prefix,
    /// The recognizer (`--engine glr`), masked by `walk`.
    glr: GlrState,
    walk: Option<VocabWalk>,
    /// The matcher (`--engine dwa` and `both`), filling `words`.
    matcher: Option<Matcher>,
    words: Vec<u32>,
    /// Stack entries each automaton mask read.
    reads: Vec<usize>,
}

impl Engines {
    /// The engine's mask here, and how long producing it took (µs; not copying it out
    /// for the checks).
    fn mask(&mut self, vocab: &Vocab) -> Result<(Vec<u32>, f64), String> {
        let t0 = Instant::now();
        let (mask, us) = match self.engine {
            Engine::Reference => {
                let m = bits(&self.reference.mask(&self.prefix, vocab));
                (m, t0.elapsed())
            }
            // `walk` is made whenever the engine is GLR.
            Engine::Glr => {
                let m = self
                    .walk
                    .as_ref()
                    .expect("vocabulary walk")
                    .mask(&self.glr, vocab);
                (m, t0.elapsed())
            }
            Engine::Dwa | Engine::Both => {
                // The matcher exists for these engines.
                let m = self.matcher.as_ref().expect("matcher");
                let reads = m
                    .fill_mask_counted(&mut self.words)
                    .map_err(|e| e.to_string())?;
                let us = t0.elapsed();
                self.reads.push(reads);
                (self.words.clone(), us)
            }
        };
        Ok((mask, us.as_secs_f64() * 1e6))
    }

    /// Commits `bytes` to the engine; whether it took them.
    fn commit(&mut self, bytes: &[u8]) -> bool {
        match self.engine {
            Engine::Reference => {
                let next = self.reference.extend(&self.prefix, bytes);
                let ok = self.reference.prefix_viable(&next);
                if ok {
                    // The old prefix is dropped first, so freezing appends in place.
                    self.prefix = next;
                    self.prefix.freeze();
                }
                ok
            }
            Engine::Glr => self.glr.commit_bytes(bytes).is_ok(),
            Engine::Dwa | Engine::Both => {
                // The matcher exists for these engines; it holds its own recognizer.
                self.matcher
                    .as_mut()
                    .expect("matcher")
                    .commit_bytes(bytes)
                    .is_ok()
            }
        }
    }

    /// Moves the reference's prefix over `bytes` beside another engine (untimed).
    fn reference_follows(&mut self, bytes: &[u8]) {
        if self.engine != Engine::Reference {
            let prefix = std::mem::replace(&mut self.prefix, self.reference.empty());
            self.prefix = self.reference.commit_owned(prefix, bytes);
        }
    }

    /// Whether the engine takes the document as complete here.
    fn accepted(&self) -> bool {
        match self.engine {
            Engine::Reference => self.reference.prefix_complete(&self.prefix),
            Engine::Glr => self.glr.is_accepting(),
            Engine::Dwa | Engine::Both => self.matcher.as_ref().is_some_and(|m| m.is_accepting()),
        }
    }
}

/// The matcher for the automaton engines: loaded from `artifact`, else with an automaton
/// built by `compiler` for `loaded`'s tables.
fn matcher(
    artifact: Option<&str>,
    compiler: &Compiler<'_>,
    loaded: &load::Loaded,
) -> Result<Matcher, String> {
    let vocab = compiler.vocab();
    Ok(match artifact {
        Some(path) => {
            let bytes = std::fs::read(path).map_err(|e| format!("cannot read {path}: {e}"))?;
            let g = CompiledGrammar::from_bytes(&bytes).map_err(|e| format!("{path}: {e}"))?;
            g.check_vocab(vocab).map_err(|e| format!("{path}: {e}"))?;
            Matcher::from_compiled(&g)
        }
        None => {
            let dwa = compiler
                .automaton(&loaded.tables)
                .map_err(|e| e.to_string())?;
            Matcher::new(loaded.tables.clone(), Arc::new(dwa))
        }
    })
}

/// Token `k` rejected, with the last bytes before it (where in the document it stands).
fn rejected_after(vocab: &Vocab, tokens: &[TokenId], k: usize) -> String {
    let before: Vec<u8> = tokens[..k]
        .iter()
        .flat_map(|&t| vocab.token_bytes(t).unwrap_or_default().iter().copied())
        .collect();
    let from = before.len().saturating_sub(80);
    format!(
        "token {k} ({:?}) rejected after …{:?}",
        String::from_utf8_lossy(vocab.token_bytes(tokens[k]).unwrap_or_default()),
        String::from_utf8_lossy(&before[from..])
    )
}
