//! `stackmask bench`: the benchmark matrix. Each workload (grammar × tokenizer ×
//! document, listed in `benches/data/matrix.toml`) runs in a child process of this
//! binary, so compile time, peak RSS and latencies are measured on a fresh heap; then the
//! batch benchmark runs here. Prints markdown tables, or JSON lines with `--json`.

pub mod batch;
pub mod matrix;
pub mod table;
pub mod workload;

use std::process::Command;
use std::time::Instant;

use matrix::{Matrix, Workload};
use workload::Row;

/// Options of `bench`.
pub struct BenchArgs<'a> {
    /// The matrix file.
    pub matrix: &'a str,
    /// Only the workloads marked `quick`, one replay each, a short batch run.
    pub quick: bool,
    /// JSON lines instead of markdown.
    pub json: bool,
    /// Only workloads whose name contains this.
    pub filter: Option<&'a str>,
    /// Replays of each document (default: 3, or 1 with `--quick`).
    pub repeats: Option<usize>,
    /// Skip the batch benchmark.
    pub no_batch: bool,
    /// Time the machine's own noise after each workload (see [`super::noise`]).
    pub noise: bool,
    /// Internal: measure this one workload in this process and print its row as JSON.
    pub worker: Option<&'a str>,
}

/// Runs `bench`; fails when a workload's document is rejected or a workload errs
/// unexpectedly (a benchmark of a wrong mask is no benchmark).
pub fn run(a: BenchArgs) -> Result<(), String> {
    let m = Matrix::load(a.matrix)?;
    let repeats = a.repeats.unwrap_or(if a.quick { 1 } else { 3 });
    if let Some(name) = a.worker {
        let w = m
            .workload(name)
            .ok_or_else(|| format!("no workload {name:?} in {}", a.matrix))?;
        let row = workload::run(w, repeats, a.noise);
        println!(
            "{}",
            serde_json::to_string(&row).map_err(|e| e.to_string())?
        );
        return Ok(());
    }
    let selected: Vec<&Workload> = m
        .workloads
        .iter()
        .filter(|w| !a.quick || w.quick)
        .filter(|w| a.filter.is_none_or(|f| w.name.contains(f)))
        .collect();
    let t_all = Instant::now();
    let mut rows = Vec::with_capacity(selected.len());
    for (i, w) in selected.iter().enumerate() {
        eprint!("[{}/{}] {} … ", i + 1, selected.len(), w.name);
        let t0 = Instant::now();
        let row = in_child(a.matrix, &w.name, repeats, a.noise);
        eprintln!("{:.1} s: {}", t0.elapsed().as_secs_f64(), row.status);
        if a.json {
            println!("{}", row_json("workload", &row)?);
        }
        rows.push(row);
    }
    let mut batch_rows = Vec::new();
    if !a.no_batch && a.filter.is_none() {
        let name = if a.quick {
            &m.batch.quick_workload
        } else {
            &m.batch.workload
        };
        // Matrix::load checked that the batch workloads exist.
        let w = m.workload(name).ok_or("batch workload missing")?;
        eprintln!("batch: fill_masks on {name}");
        match batch::run(w, &m.batch.sizes, if a.quick { 200 } else { 2000 }) {
            Ok(b) => batch_rows = b,
            Err(e) if !workload::missing_files(w).is_empty() => eprintln!("batch skipped: {e}"),
            Err(e) => return Err(format!("batch benchmark on {name}: {e}")),
        }
        if a.json {
            for b in &batch_rows {
                println!("{}", row_json("batch", b)?);
            }
        }
    }
    if !a.json {
        println!("{}", machine());
        println!();
        print!("{}", table::workloads(&rows));
        if !batch_rows.is_empty() {
            println!();
            print!("{}", table::batches(&batch_rows));
        }
    }
    eprintln!("bench: {:.1} s", t_all.elapsed().as_secs_f64());
    let bad: Vec<&str> = rows
        .iter()
        .filter(|r| !r.ok())
        .map(|r| r.name.as_str())
        .collect();
    if bad.is_empty() {
        Ok(())
    } else {
        Err(format!("workloads failed: {}", bad.join(", ")))
    }
}

fn row_json<T: serde::Serialize>(kind: &str, row: &T) -> Result<String, String> {
    let mut v = serde_json::to_value(row).map_err(|e| e.to_string())?;
    if let Some(o) = v.as_object_mut() {
        o.insert("kind".into(), kind.into());
    }
    Ok(v.to_string())
}

/// Runs one workload in a child process (this binary, `bench --worker NAME`).
fn in_child(matrix: &str, name: &str, repeats: usize, noise: bool) -> Row {
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => return Row::empty(name, format!("error: cannot find this binary: {e}")),
    };
    let out = Command::new(exe)
        .args(["bench", "--matrix", matrix, "--worker", name, "--repeats"])
        .arg(repeats.to_string())
        .args(noise.then_some("--noise"))
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) => return Row::empty(name, format!("error: cannot start worker: {e}")),
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    match stdout.lines().last().map(serde_json::from_str::<Row>) {
        Some(Ok(row)) if out.status.success() => row,
        _ => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let tail: Vec<&str> = stderr.lines().rev().take(3).collect();
            Row::empty(
                name,
                format!(
                    "error: worker {}: {}",
                    out.status,
                    tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
                ),
            )
        }
    }
}

/// One line naming the machine: CPU model, cores, and the build profile.
fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    // The Cargo profile's name (see build.rs): `dist` is whole-program optimized.
    let profile = env!("STACKMASK_PROFILE");
    format!("Machine: {cpu}, {cores} cores available, `{profile}` profile. Latencies per call; compile = grammar text → tables, then tables × vocabulary → mask automaton; peak RSS of the workload's process (tokenizer included).")
}
