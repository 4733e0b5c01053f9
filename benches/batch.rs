//! Batched masks and rollback: `fill_masks` over 1, 8, 64 and 256 matchers (rayon, one row
//! each; per-sequence time = total / batch), and `Matcher::rollback(n)` for n steps. JSON
//! with the bundled o200k; the matchers sit at every step of catalog.json, cycled.

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use stackmask::compile::Compiler;
use stackmask::compile::{build_glr_tables, compile_grammar, GrammarFormat, BUILTIN_JSON};
use stackmask::runtime::{fill_masks, Matcher};
use stackmask::vocab::Vocab;

fn bench(c: &mut Criterion) {
    let dir = env!("CARGO_MANIFEST_DIR");
    let doc = std::fs::read_to_string(format!("{dir}/benches/data/catalog.json")).unwrap();
    let g = compile_grammar(BUILTIN_JSON, GrammarFormat::Lark).unwrap();
    let tables = Arc::new(build_glr_tables(&g).unwrap());
    let vocab = Vocab::load("builtin:o200k").unwrap();
    let dwa = Arc::new(Compiler::new(&vocab).automaton(&tables).unwrap());
    let ids = vocab.encode(&doc).unwrap();
    let mut states = Vec::with_capacity(ids.len());
    let mut m = Matcher::new(tables.clone(), dwa.clone());
    for &t in &ids {
        states.push(m.clone());
        m.commit(&vocab, t).unwrap();
    }
    let row = vocab.len().div_ceil(32);
    let mut group = c.benchmark_group("batch");
    group.sample_size(20);
    for n in [1usize, 8, 64, 256] {
        let batch: Vec<&Matcher> = (0..n).map(|i| &states[i % states.len()]).collect();
        let mut out = vec![0u32; row * n];
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(BenchmarkId::new("fill_masks", n), |b| {
            b.iter(|| fill_masks(&batch, &mut out, row).unwrap())
        });
    }
    group.finish();
    let mut group = c.benchmark_group("rollback");
    for n in [1usize, 16, 64] {
        let n = n.min(ids.len());
        group.bench_function(BenchmarkId::new("steps", n), |b| {
            b.iter_batched(
                || m.clone(),
                |mut mm| {
                    mm.rollback(n).unwrap();
                    mm
                },
                criterion::BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
