//! Compile stage: grammar text → recognizer tables (lexer DFA, follow sets, LALR tables).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use stackmask::compile::{build_glr_tables, compile_grammar, GrammarFormat, BUILTIN_JSON};

fn shared(rel: &str) -> Option<String> {
    std::fs::read_to_string(format!("{}/../shared/{rel}", env!("CARGO_MANIFEST_DIR"))).ok()
}

fn bench(c: &mut Criterion) {
    let mut workloads = vec![("json", BUILTIN_JSON.to_string(), GrammarFormat::Lark)];
    for (name, rel, f) in [
        ("java", "grammars/syncode/java.lark", GrammarFormat::Lark),
        ("go", "grammars/syncode/go.lark", GrammarFormat::Lark),
        ("json_gbnf", "grammars/gbnf/json.gbnf", GrammarFormat::Gbnf),
    ] {
        if let Some(text) = shared(rel) {
            workloads.push((name, text, f));
        }
    }
    let mut group = c.benchmark_group("compile");
    group.sample_size(10);
    for (name, text, format) in &workloads {
        group.bench_with_input(BenchmarkId::new("tables", name), text, |b, text| {
            b.iter(|| {
                let g = compile_grammar(text, *format).unwrap();
                build_glr_tables(&g).unwrap()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
