//! Measuring one workload in this process: compile (tables, then the mask automaton and
//! the grammar's first mask), the artifact's size and load time, then the document
//! replayed token by token by a matcher of the compiled grammar (as a server makes one),
//! every mask and commit timed, and the process's peak resident memory at the end.
//! `stackmask bench` runs each workload in a child process so peak RSS is per workload.

use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use stackmask::compile::Compiler;
use stackmask::runtime::{CompiledGrammar, Matcher};
use stackmask::vocab::Vocab;

use super::super::check::tokens_of;
use super::super::load::{self, Format, GrammarArgs, TokenizerArgs};
use super::super::stats::Dist;
use super::matrix::Workload;

/// The measured figures of one workload (or why there are none).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    /// Workload name.
    pub name: String,
    /// `ok`, `rejected at token K`, `error: …` or `skipped: …`.
    pub status: String,
    /// Tokens in the document.
    pub tokens: usize,
    /// Masks timed (tokens × repeats).
    pub masks: usize,
    /// Grammar text → lexer and LR tables.
    pub tables_ms: f64,
    /// Tables + vocabulary → mask automaton, and the grammar's first mask (`CompiledGrammar`).
    pub automaton_ms: f64,
    /// The compile (tables and automaton) plus the first replay's first ten masks and
    /// commits: how long a new grammar keeps the tenth token waiting.
    #[serde(default)]
    pub t10_ms: f64,
    /// Serialized artifact (tables + automaton).
    pub artifact_bytes: usize,
    /// Loading and validating that artifact.
    pub load_ms: f64,
    /// Peak resident set of the process (tokenizer included), in MiB.
    pub peak_rss_mib: Option<f64>,
    /// Mask latency, µs.
    pub mask_us: Option<Dist>,
    /// Each token's least mask latency over the replays (when there are two or more),
    /// µs: the engine's cost with the machine's passing interruptions taken out.
    #[serde(default)]
    pub mask_least_us: Option<Dist>,
    /// Commit latency, µs.
    pub commit_us: Option<Dist>,
    /// With `--noise`: a fixed computation as long as the median mask, timed as many
    /// times as masks were, right after them (see [`super::super::noise`]), µs.
    #[serde(default)]
    pub noise_us: Option<Dist>,
    /// Stack entries the mask walk read, mean per mask.
    pub reads_mean: f64,
    /// Stack entries the mask walk read, most in one mask.
    pub reads_max: usize,
}

impl Row {
    /// A row with no figures.
    pub fn empty(name: &str, status: String) -> Self {
        Row {
            name: name.to_string(),
            status,
            tokens: 0,
            masks: 0,
            tables_ms: 0.0,
            automaton_ms: 0.0,
            t10_ms: 0.0,
            artifact_bytes: 0,
            load_ms: 0.0,
            peak_rss_mib: None,
            mask_us: None,
            mask_least_us: None,
            commit_us: None,
            noise_us: None,
            reads_mean: 0.0,
            reads_max: 0,
        }
    }

    /// Whether the workload ran and its document was accepted, or it failed as the
    /// matrix expects, or it was skipped for missing files.
    pub fn ok(&self) -> bool {
        self.status == "ok"
            || self.status.starts_with(EXPECTED_ERROR)
            || self.status.starts_with(SKIPPED)
    }
}

/// Status prefix of a workload that failed to compile as the matrix says it should.
pub const EXPECTED_ERROR: &str = "expected error: ";

/// Status prefix of a workload whose files are not on this machine.
pub const SKIPPED: &str = "skipped: ";

/// Files a workload needs that are not there (builtins need nothing).
pub fn missing_files(w: &Workload) -> Vec<String> {
    [&w.grammar, &w.tokenizer, &w.document]
        .into_iter()
        .filter(|p| !p.starts_with("builtin:") && !std::path::Path::new(p.as_str()).exists())
        .cloned()
        .collect()
}

fn format_of(w: &Workload) -> Result<Option<Format>, String> {
    Ok(match w.format.as_deref() {
        None => None,
        Some("lark") => Some(Format::Lark),
        Some("gbnf") => Some(Format::Gbnf),
        Some("json-schema") => Some(Format::JsonSchema),
        Some("regex") => Some(Format::Regex),
        Some(other) => return Err(format!("unknown format {other:?}")),
    })
}

/// Runs one workload, replaying the document `repeats` times (from a reset matcher), then
/// with `noise` timing the machine's noise. Compile errors become the row's status; only
/// I/O-free invariants may panic.
pub fn run(w: &Workload, repeats: usize, noise: bool) -> Row {
    let missing = missing_files(w);
    if !missing.is_empty() {
        return Row::empty(&w.name, format!("{SKIPPED}missing {}", missing.join(", ")));
    }
    match (measure(w, repeats.max(1), noise), &w.expect_error) {
        (Ok(row), None) => row,
        (Ok(_), Some(want)) => Row::empty(
            &w.name,
            format!("error: compiled, but the matrix expects an error containing {want:?}"),
        ),
        (Err(e), Some(want)) if e.contains(want.as_str()) => {
            Row::empty(&w.name, format!("{EXPECTED_ERROR}{want}"))
        }
        (Err(e), _) => Row::empty(&w.name, format!("error: {e}")),
    }
}

/// A workload's tokenizer and its grammar compiled to tables (timed in `compile_ms`).
pub fn load_inputs(w: &Workload) -> Result<(Vocab, load::Loaded), String> {
    let vocab = load::vocab(&TokenizerArgs {
        tokenizer: w.tokenizer.clone(),
        eos: Vec::new(),
    })?;
    let loaded = load::grammar(
        &GrammarArgs {
            grammar: w.grammar.clone(),
            format: format_of(w)?,
            lenient: false,
            compact: false,
            droppable: w.droppable.clone(),
            indenter: None,
            tab_len: w.tab_len,
            longest_match: w.longest_match,
            lexing: load::LexingArg::Auto,
            time_limit_ms: None,
        },
        &vocab,
    )?;
    Ok((vocab, loaded))
}

fn measure(w: &Workload, repeats: usize, noise: bool) -> Result<Row, String> {
    let (vocab, loaded) = load_inputs(w)?;
    // The automaton and the grammar's first mask (walked once per compiled grammar, as a
    // server's compile does; every sequence's first mask is then a copy).
    let t0 = Instant::now();
    let dwa = Compiler::new(&vocab)
        .automaton(&loaded.tables)
        .map_err(|e| e.to_string())?;
    let compiled = CompiledGrammar::new(loaded.tables.clone(), Arc::new(dwa), &vocab);
    let automaton_ms = t0.elapsed().as_secs_f64() * 1e3;
    let bytes = compiled.to_bytes();
    let t0 = Instant::now();
    let reloaded = CompiledGrammar::from_bytes(&bytes).map_err(|e| e.to_string())?;
    let load_ms = t0.elapsed().as_secs_f64() * 1e3;
    drop(reloaded);

    let text =
        std::fs::read(&w.document).map_err(|e| format!("cannot read {}: {e}", w.document))?;
    let tokens = tokens_of(&vocab, &text, &w.segment)?;
    let mut matcher = Matcher::from_compiled(&compiled);
    let mut words = vec![0u32; vocab.len().div_ceil(32)];
    let (mut mask_us, mut commit_us) = (Vec::new(), Vec::new());
    let mut least = vec![f64::INFINITY; tokens.len()];
    let (mut reads_sum, mut reads_max) = (0usize, 0usize);
    let mut status = "ok".to_string();
    'replay: for _ in 0..repeats {
        matcher.reset();
        for (i, &t) in tokens.iter().enumerate() {
            let t0 = Instant::now();
            let reads = matcher
                .fill_mask_counted(&mut words)
                .map_err(|e| e.to_string())?;
            let us = t0.elapsed().as_secs_f64() * 1e6;
            mask_us.push(us);
            least[i] = least[i].min(us);
            reads_sum += reads;
            reads_max = reads_max.max(reads);
            if words[t.index() / 32] >> (t.index() % 32) & 1 == 0 {
                status = format!("rejected at token {i} (not in the mask)");
                break 'replay;
            }
            let t0 = Instant::now();
            let committed = matcher.commit(&vocab, t);
            commit_us.push(t0.elapsed().as_secs_f64() * 1e6);
            if committed.is_err() {
                status = format!("rejected at token {i} (commit)");
                break 'replay;
            }
        }
        if !matcher.is_accepting() {
            status = "document incomplete (EOS not allowed at the end)".into();
            break;
        }
    }
    let masks = mask_us.len();
    // The first replay's times come first.
    let first_ten: f64 = mask_us
        .iter()
        .take(10)
        .chain(commit_us.iter().take(10))
        .sum();
    let t10_ms = loaded.compile_ms + automaton_ms + first_ten / 1e3;
    let mask_least_us = if repeats >= 2 && masks == repeats * tokens.len() {
        Dist::of(&mut least)
    } else {
        None
    };
    let mask_dist = Dist::of(&mut mask_us);
    let noise_us = match mask_dist {
        Some(m) if noise => Dist::of(&mut super::super::noise::probe(m.p50, masks).1),
        _ => None,
    };
    Ok(Row {
        name: w.name.clone(),
        status,
        tokens: tokens.len(),
        masks,
        tables_ms: loaded.compile_ms,
        automaton_ms,
        t10_ms,
        artifact_bytes: bytes.len(),
        load_ms,
        peak_rss_mib: peak_rss_mib(),
        mask_us: mask_dist,
        mask_least_us,
        commit_us: Dist::of(&mut commit_us),
        noise_us,
        reads_mean: if masks == 0 {
            0.0
        } else {
            reads_sum as f64 / masks as f64
        },
        reads_max,
    })
}

/// The process's peak resident set (`VmHWM`), where /proc exists.
pub fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}
