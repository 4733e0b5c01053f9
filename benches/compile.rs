//! Compile stage: grammar text → recognizer tables (lexer DFA, follow sets, LALR tables),
//! and the JSON grammar's mask automaton for a 128K vocabulary with the tokenizer-only
//! work (token byte order) already cached in the vocabulary.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use stackmask::compile::dwa_build::build_dwa;
use stackmask::compile::{build_glr_tables, compile_grammar, GrammarFormat, BUILTIN_JSON};
use stackmask::vocab::Vocab;

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
    let tok = format!(
        "{}/../shared/tokenizers/llama3.json",
        env!("CARGO_MANIFEST_DIR")
    );
    if let Ok(vocab) = Vocab::load(&tok) {
        let g = compile_grammar(BUILTIN_JSON, GrammarFormat::Lark).unwrap();
        let tables = build_glr_tables(&g).unwrap();
        // Caches the token byte order: what a server computes once per tokenizer.
        vocab.byte_order();
        group.bench_function(BenchmarkId::new("automaton", "json_llama3"), |b| {
            b.iter(|| build_dwa(&tables, &vocab).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
