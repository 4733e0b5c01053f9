//! `stackmask maskbench`: the MaskBench replay over a directory of JSONSchemaBench files
//! ([`replay`]), with a progress bar and the summary as text or JSON.

pub mod py_json;
pub mod replay;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::io::Write;

use self::replay::{Engine, FileOutcome, PyJson, RoundTrip};
use serde_json::Value;
use stackmask::compile::frontend::json_schema::{SchemaError, SchemaOptions};
use stackmask::vocab::Vocab;

use super::stats::percentiles;

/// Counts of compiled grammars by [`RoundTrip`] outcome.
#[derive(Default)]
struct Trips {
    masks_equal: usize,
    differ: usize,
    refused: usize,
}

impl Trips {
    fn to_json(&self) -> Value {
        serde_json::json!({
            "compiled": self.masks_equal + self.differ + self.refused,
            "masks_equal": self.masks_equal,
            "mask_differs": self.differ,
            "refused": self.refused,
        })
    }
}

/// Options of `maskbench`.
pub struct MaskbenchArgs<'a> {
    pub data: &'a str,
    pub engine: Engine,
    pub limit: Option<usize>,
    pub filter: Option<&'a str>,
    pub every: usize,
    pub json: bool,
    pub ensure_ascii: bool,
    pub schema: SchemaOptions,
    pub details: Option<&'a str>,
    /// Replays per instance; past 1, each token's minimum is reported too.
    pub replays: usize,
    /// Compiles per schema; past 1, each schema's least compile time is reported too.
    pub compiles: usize,
    /// Also time a fixed computation as long as the median token, as many times as
    /// tokens were timed: the machine's own noise at that length.
    pub noise: bool,
    /// Take every compiled grammar through its artifact bytes and back, and compare the
    /// loaded grammar's masks with the original's along every instance (automaton only).
    pub round_trip: bool,
    /// A time limit on each schema's compile (tables and automaton).
    pub time_limit: Option<std::time::Duration>,
}

/// Runs the replay and prints the summary; returns it.
pub fn run(a: MaskbenchArgs, vocab: &std::sync::Arc<Vocab>) -> Result<Value, String> {
    let files = files(&a)?;
    let mut details = match a.details {
        Some(p) => Some(std::io::BufWriter::new(
            std::fs::File::create(p).map_err(|e| format!("cannot create {p}: {e}"))?,
        )),
        None => None,
    };
    let bar = indicatif::ProgressBar::new(files.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} [{elapsed_precise}] {msg}")
            .map_err(|e| e.to_string())?,
    );
    let style = PyJson {
        ensure_ascii: a.ensure_ascii,
    };
    let mut tally = Tally::default();
    let mut times = replay::TokenTimes::new(a.replays);
    let run = replay::RunOptions {
        style,
        compiles: a.compiles,
        round_trip: a.round_trip,
        time_limit: a.time_limit,
        ..replay::RunOptions::new(&a.schema, a.engine)
    };
    for path in &files {
        bar.inc(1);
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // This file's tokens are the ones appended to `times` from here on.
        let tbm_from = times.first.len();
        let outcome = match std::fs::read(path)
            .map_err(|e| e.to_string())
            .and_then(|b| serde_json::from_slice::<Value>(&b).map_err(|e| e.to_string()))
        {
            Ok(file) => replay::run_file(&file, &run, vocab, &mut times),
            Err(e) => FileOutcome::BadFile(e),
        };
        let line = tally.record(name, outcome, &times, tbm_from, a.compiles);
        if let Some(d) = details.as_mut() {
            writeln!(d, "{line}").map_err(|e| e.to_string())?;
            d.flush().map_err(|e| e.to_string())?;
        }
        bar.set_message(format!(
            "{} compiled, {} validation / {} invalidation errors",
            tally.compiled, tally.ve, tally.ie
        ));
    }
    bar.finish_and_clear();
    let summary = serde_json::json!({
        "schemas_total": tally.total,
        "schemas_compiled": tally.compiled,
        "schemas_refused": tally.refused,
        "compile_errors": tally.errors,
        "valid_accepted": tally.va,
        "validation_errors": tally.ve,
        "invalid_rejected": tally.ir,
        "invalidation_errors": tally.ie,
        "ttfm_ms": percentiles(&mut tally.ttfm),
        "t10_ms": percentiles(&mut tally.t10),
        "tbm_us": percentiles(&mut times.first),
    });
    // The floor is not one of the summary's keys: with --json it is a line of its own,
    // before the summary (which stays the last line).
    let floor = (times.replays > 1).then(|| percentiles(&mut times.floor));
    let ttfm_floor = (a.compiles > 1).then(|| percentiles(&mut tally.ttfm_floor));
    // After the replay, so that it does not disturb the tokens' times.
    let noise = summary["tbm_us"]["p50"]
        .as_f64()
        .filter(|_| a.noise)
        .map(|p50| machine_noise(p50, times.first.len()));
    let extras = Extras {
        floor,
        ttfm_floor,
        noise,
    };
    if a.json {
        print_json(&a, &summary, &extras, &times, &tally.trips);
    } else {
        print_text(&a, &summary, &extras, &times, &tally);
    }
    Ok(summary)
}

/// The files `a` selects, in name order.
fn files(a: &MaskbenchArgs) -> Result<Vec<std::path::PathBuf>, String> {
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(a.data)
        .map_err(|e| format!("cannot read {}: {e}", a.data))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter(|p| a.filter.is_none_or(|f| p.to_string_lossy().contains(f)))
        .collect();
    files.sort();
    files = files.into_iter().step_by(a.every.max(1)).collect();
    if let Some(n) = a.limit {
        files.truncate(n);
    }
    Ok(files)
}

/// The machine's own noise at the median token's length (see [`super::noise::probe`]).
fn machine_noise(p50: f64, tokens: usize) -> Value {
    let (rounds, mut s) = super::noise::probe(p50, tokens);
    serde_json::json!({"noise_samples": s.len(), "noise_rounds": rounds, "noise_us": percentiles(&mut s)})
}

/// Tokens whose times `t10_ms` adds to the compile (as `../shared/peers/maskbench.py`
/// counts it: the first ten replayed, in order).
const T10_TOKENS: usize = 10;

/// The counts over the files replayed so far.
#[derive(Default)]
struct Tally {
    total: usize,
    compiled: usize,
    refused: BTreeMap<String, usize>,
    errors: BTreeMap<String, usize>,
    /// Valid instances accepted, valid rejected, invalid rejected, invalid accepted.
    va: usize,
    ve: usize,
    ir: usize,
    ie: usize,
    ttfm: Vec<f64>,
    /// Per compiled file: its TTFM plus its first ten tokens' times (mask and commit),
    /// where a compile's deferred work would land.
    t10: Vec<f64>,
    ttfm_floor: Vec<f64>,
    trips: Trips,
}

impl Tally {
    /// Counts one file's outcome and returns its details line. Its tokens' times are
    /// `times`' from `tbm_from` on.
    fn record(
        &mut self,
        name: String,
        outcome: FileOutcome,
        times: &replay::TokenTimes,
        tbm_from: usize,
        compiles: usize,
    ) -> Value {
        self.total += 1;
        match outcome {
            FileOutcome::BadFile(e) => {
                *self.errors.entry("bad_file".into()).or_default() += 1;
                serde_json::json!({"file": name, "status": "bad_file", "error": e})
            }
            FileOutcome::Error(e) => {
                match &e {
                    SchemaError::Unsupported { keyword, .. } => {
                        *self.refused.entry(keyword.clone()).or_default() += 1
                    }
                    other => *self.errors.entry(other.kind().to_string()).or_default() += 1,
                }
                serde_json::json!({"file": name, "status": "error", "kind": e.kind(), "error": e.to_string()})
            }
            FileOutcome::Compiled {
                ttfm_ms,
                ttfm_floor_ms,
                instances,
                round_trip,
            } => {
                self.compiled += 1;
                self.ttfm.push(ttfm_ms);
                self.ttfm_floor.push(ttfm_floor_ms);
                let mut wrong = Vec::new();
                for i in &instances {
                    match (i.valid, i.accepted) {
                        (true, true) => self.va += 1,
                        (true, false) => self.ve += 1,
                        (false, false) => self.ir += 1,
                        (false, true) => self.ie += 1,
                    }
                    if i.valid != i.accepted {
                        wrong.push(
                            serde_json::json!({"test": i.index, "valid": i.valid, "text": i.text}),
                        );
                    }
                }
                let max = |v: &[f64]| v.iter().copied().fold(0.0f64, f64::max);
                let mine = &times.first[tbm_from..];
                let t10_ms = ttfm_ms + mine.iter().take(T10_TOKENS).sum::<f64>() / 1e3;
                self.t10.push(t10_ms);
                let mut line = serde_json::json!({
                    "file": name,
                    "status": "compiled",
                    "ttfm_ms": ttfm_ms,
                    "t10_ms": t10_ms,
                    "tokens": mine.len(),
                    "tbm_max_us": max(mine),
                    "tbm_sum_us": mine.iter().sum::<f64>(),
                    "wrong": wrong,
                });
                if times.replays > 1 {
                    line["tbm_floor_max_us"] = max(&times.floor[tbm_from..]).into();
                    line["tbm_floor_sum_us"] = times.floor[tbm_from..].iter().sum::<f64>().into();
                }
                if compiles > 1 {
                    line["ttfm_floor_ms"] = ttfm_floor_ms.into();
                }
                if let Some(rt) = round_trip {
                    line["round_trip"] = self.trips.record(rt);
                }
                line
            }
        }
    }
}

impl Trips {
    /// Counts one round trip and returns its details.
    fn record(&mut self, rt: RoundTrip) -> Value {
        let (status, said) = match rt {
            RoundTrip::MasksEqual => {
                self.masks_equal += 1;
                ("masks_equal", String::new())
            }
            RoundTrip::MaskDiffers { index, step } => {
                self.differ += 1;
                ("mask_differs", format!("test {index} step {step}"))
            }
            RoundTrip::Refused(e) => {
                self.refused += 1;
                ("refused", e.to_string())
            }
        };
        serde_json::json!({"status": status, "detail": said})
    }
}

/// The summary's companions: each token's floor over replays, each schema's floor over
/// compiles, and the machine's noise, when asked for.
struct Extras {
    floor: Option<Value>,
    ttfm_floor: Option<Value>,
    noise: Option<Value>,
}

/// `--json`: the companions a line each, then the summary as the last line.
fn print_json(
    a: &MaskbenchArgs,
    summary: &Value,
    x: &Extras,
    times: &replay::TokenTimes,
    trips: &Trips,
) {
    if let Some(f) = &x.floor {
        println!(
            "{}",
            serde_json::json!({"replays": times.replays, "tbm_floor_us": f})
        );
    }
    if let Some(f) = &x.ttfm_floor {
        println!(
            "{}",
            serde_json::json!({"compiles": a.compiles, "ttfm_floor_ms": f})
        );
    }
    if let Some(n) = &x.noise {
        println!("{n}");
    }
    if a.round_trip {
        println!("{}", serde_json::json!({"round_trip": trips.to_json()}));
    }
    println!("{summary}");
}

fn print_text(
    a: &MaskbenchArgs,
    summary: &Value,
    x: &Extras,
    times: &replay::TokenTimes,
    t: &Tally,
) {
    println!("schemas: {} total, {} compiled", t.total, t.compiled);
    println!("refused by keyword: {}", summary["schemas_refused"]);
    println!("compile errors by kind: {}", summary["compile_errors"]);
    println!(
        "valid instances: {} accepted, {} wrongly rejected (validation errors)",
        t.va, t.ve
    );
    println!(
        "invalid instances: {} rejected, {} wrongly accepted (invalidation errors)",
        t.ir, t.ie
    );
    println!("TTFM ms: {}", summary["ttfm_ms"]);
    println!(
        "to the 10th token (TTFM + ten masks and commits) ms: {}",
        summary["t10_ms"]
    );
    if let Some(f) = &x.ttfm_floor {
        println!(
            "TTFM ms, each schema's least over {} compiles: {f}",
            a.compiles
        );
    }
    println!(
        "TBM µs ({} tokens): {}",
        times.first.len(),
        summary["tbm_us"]
    );
    if let Some(f) = &x.floor {
        println!(
            "TBM µs, each token's minimum over {} replays: {f}",
            times.replays
        );
    }
    if a.round_trip {
        let trips = &t.trips;
        println!(
            "artifact round trip: {} compiled, {} loaded back with equal masks, {} with a \
             differing mask, {} refused",
            trips.masks_equal + trips.differ + trips.refused,
            trips.masks_equal,
            trips.differ,
            trips.refused
        );
    }
    if let Some(n) = &x.noise {
        println!(
            "machine noise µs (a fixed computation as long as the median token, timed {} \
             times): {}",
            n["noise_samples"], n["noise_us"]
        );
    }
}
