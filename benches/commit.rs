//! Commit stage: token-by-token GLR commits of a whole document — `stackmask bench`
//! workloads (benches/data): JSON with the bundled o200k, Java with Llama-3 and the
//! ambiguous expression grammar with GPT-2 when ../shared is present.

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use stackmask::compile::{build_glr_tables, compile_grammar, GrammarFormat, BUILTIN_JSON};
use stackmask::glr::GlrState;
use stackmask::vocab::Vocab;

fn bench(c: &mut Criterion) {
    let dir = env!("CARGO_MANIFEST_DIR");
    let mut workloads = vec![(
        "json_o200k",
        BUILTIN_JSON.to_string(),
        "builtin:o200k".to_string(),
        std::fs::read_to_string(format!("{dir}/benches/data/catalog.json")).unwrap(),
    )];
    if let Ok(java) = std::fs::read_to_string(format!("{dir}/../shared/grammars/syncode/java.lark"))
    {
        workloads.push((
            "java_llama3",
            java,
            format!("{dir}/../shared/tokenizers/llama3.json"),
            std::fs::read_to_string(format!("{dir}/benches/data/Inventory.java")).unwrap(),
        ));
        workloads.push((
            "expr_ambiguous_gpt2",
            std::fs::read_to_string(format!("{dir}/tests/corpus/expr_ambiguous/grammar.lark"))
                .unwrap(),
            format!("{dir}/../shared/tokenizers/gpt2.json"),
            std::fs::read_to_string(format!("{dir}/benches/data/expr.txt")).unwrap(),
        ));
    }
    let mut group = c.benchmark_group("commit");
    group.sample_size(20);
    for (name, grammar, tok, doc) in &workloads {
        let g = compile_grammar(grammar, GrammarFormat::Lark).unwrap();
        let tables = Arc::new(build_glr_tables(&g).unwrap());
        let vocab = Vocab::load(tok).unwrap();
        let ids = vocab.encode(doc).unwrap();
        group.bench_function(BenchmarkId::new("document", name), |b| {
            b.iter(|| {
                let mut s = GlrState::new(tables.clone());
                for &t in &ids {
                    s.commit_token(&vocab, t).unwrap();
                }
                assert!(s.is_accepting());
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
