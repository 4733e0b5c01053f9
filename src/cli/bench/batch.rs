//! The batched-server case: `fill_masks` for N concurrent matchers (rayon, one mask row
//! each), with the matchers sitting at successive positions of a workload's document.

use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use stackmask::compile::Compiler;
use stackmask::runtime::{fill_masks, Matcher};

use super::super::check::tokens_of;
use super::super::stats::Dist;
use super::matrix::Workload;
use super::workload::{load_inputs, missing_files};

/// One batch size's figures.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BatchRow {
    /// The workload whose states the matchers hold.
    pub workload: String,
    /// Matchers per call.
    pub batch: usize,
    /// Calls timed.
    pub calls: usize,
    /// Time of one `fill_masks` call, µs.
    pub total_us: Dist,
    /// `total_us.p50 / batch`.
    pub per_sequence_p50_us: f64,
    /// The same states' masks filled one by one on the calling thread (`Matcher::fill_mask`
    /// in a loop over the same rows): p50 of a loop, divided by `batch`. The cost per
    /// sequence without batching, to compare `per_sequence_p50_us` with.
    #[serde(default)]
    pub one_by_one_p50_us: f64,
    /// The same states' masks filled one by one into one reused row (which stays in the
    /// core's cache): p50 of a loop, divided by `batch`. A single sequence's cost, without
    /// the memory traffic of a batch's distinct rows (`batch` × 16 KB at 128K tokens).
    #[serde(default)]
    pub single_row_p50_us: f64,
    /// Threads `fill_masks` could use (rayon's pool; `RAYON_NUM_THREADS` sets it).
    #[serde(default)]
    pub threads: usize,
}

/// Rounds the timed blocks of one batch size are split into (see [`run`]).
const ROUNDS: usize = 10;

/// Times `fill_masks` for each size in `sizes`, `calls` times each (after one warm-up).
pub fn run(w: &Workload, sizes: &[usize], calls: usize) -> Result<Vec<BatchRow>, String> {
    let missing = missing_files(w);
    if !missing.is_empty() {
        return Err(format!("missing {}", missing.join(", ")));
    }
    let (vocab, loaded) = load_inputs(w)?;
    let dwa = Arc::new(
        Compiler::new(&vocab)
            .automaton(&loaded.tables)
            .map_err(|e| e.to_string())?,
    );
    let text =
        std::fs::read(&w.document).map_err(|e| format!("cannot read {}: {e}", w.document))?;
    let tokens = tokens_of(&vocab, &text, &w.segment)?;
    let mut m = Matcher::new(loaded.tables.clone(), dwa);
    let mut states = Vec::with_capacity(tokens.len());
    for &t in &tokens {
        states.push(m.clone());
        m.commit(&vocab, t).map_err(|e| e.to_string())?;
    }
    if states.is_empty() {
        return Err(format!("{}: empty document", w.document));
    }
    let row = vocab.len().div_ceil(32);
    let mut out = Vec::new();
    for &n in sizes {
        let batch: Vec<&Matcher> = (0..n).map(|i| &states[i % states.len()]).collect();
        let mut masks = vec![0u32; row * n];
        fill_masks(&batch, &mut masks, row).map_err(|e| e.to_string())?;
        // The batched calls, loops filling the same rows one by one, and loops filling one
        // reused row, timed in blocks (alternating them call by call moved the rows
        // between the two cores' caches, which neither path pays in a server's steady
        // state), the three kinds of block taking turns for `ROUNDS` rounds so that the
        // machine's drift over the run falls on all three alike.
        let (mut us, mut one, mut single) = (
            Vec::with_capacity(calls),
            Vec::with_capacity(calls),
            Vec::with_capacity(calls),
        );
        let mut reused = vec![0u32; row];
        for round in 0..ROUNDS {
            let block = calls * (round + 1) / ROUNDS - calls * round / ROUNDS;
            for _ in 0..block {
                let t0 = Instant::now();
                fill_masks(&batch, &mut masks, row).map_err(|e| e.to_string())?;
                us.push(t0.elapsed().as_secs_f64() * 1e6);
            }
            for _ in 0..block {
                let t0 = Instant::now();
                for (row, m) in masks.chunks_mut(row).zip(&batch) {
                    m.fill_mask(row).map_err(|e| e.to_string())?;
                }
                one.push(t0.elapsed().as_secs_f64() * 1e6);
            }
            for _ in 0..block {
                let t0 = Instant::now();
                for m in &batch {
                    m.fill_mask(&mut reused).map_err(|e| e.to_string())?;
                }
                single.push(t0.elapsed().as_secs_f64() * 1e6);
            }
        }
        // `calls` is at least one, so the distributions exist.
        let total = Dist::of(&mut us).ok_or("no calls timed")?;
        let one = Dist::of(&mut one).ok_or("no calls timed")?;
        let single = Dist::of(&mut single).ok_or("no calls timed")?;
        out.push(BatchRow {
            workload: w.name.clone(),
            batch: n,
            calls,
            total_us: total,
            per_sequence_p50_us: total.p50 / n.max(1) as f64,
            one_by_one_p50_us: one.p50 / n.max(1) as f64,
            single_row_p50_us: single.p50 / n.max(1) as f64,
            threads: rayon::current_num_threads(),
        });
    }
    Ok(out)
}
