//! Compile stage: grammar text → recognizer tables (lexer DFA, follow sets, LALR tables)
//! for JSON, Java, Go, GBNF JSON and the invoice schema of benches/data, and the mask
//! automaton of JSON and of the tree schema for Llama-3's 128K vocabulary, with the
//! tokenizer-only work (token byte order) already cached in the vocabulary.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use stackmask::compile::frontend::json_schema::{self, SchemaOptions};
use stackmask::compile::Compiler;
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
    let data = |f: &str| {
        std::fs::read_to_string(format!("{}/benches/data/{f}", env!("CARGO_MANIFEST_DIR"))).unwrap()
    };
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
    let invoice = data("invoice.schema.json");
    group.bench_function(BenchmarkId::new("tables", "schema_invoice"), |b| {
        b.iter(|| {
            let g = json_schema::compile(&invoice, &SchemaOptions::default()).unwrap();
            build_glr_tables(&g.grammar).unwrap()
        })
    });
    let tok = format!(
        "{}/../shared/tokenizers/llama3.json",
        env!("CARGO_MANIFEST_DIR")
    );
    if let Ok(vocab) = Vocab::load(&tok) {
        let g = compile_grammar(BUILTIN_JSON, GrammarFormat::Lark).unwrap();
        let tables = build_glr_tables(&g).unwrap();
        // Caches the token tries: what a server computes once per tokenizer.
        vocab.parts();
        group.bench_function(BenchmarkId::new("automaton", "json_llama3"), |b| {
            b.iter(|| Compiler::new(&vocab).automaton(&tables).unwrap())
        });
        let tree = json_schema::compile(&data("tree.schema.json"), &SchemaOptions::default());
        let tables = build_glr_tables(&tree.unwrap().grammar).unwrap();
        group.bench_function(BenchmarkId::new("automaton", "schema_tree_llama3"), |b| {
            b.iter(|| Compiler::new(&vocab).automaton(&tables).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
