//! get_mask: filling the mask at every step of a document — workloads of the
//! `stackmask bench` matrix (benches/data): JSON with the bundled o200k and with Llama-3,
//! the tree schema with Llama-3, Java with GPT-2 (the last three when ../shared is
//! present). The whole document's masks per iteration; divide by the token count for the
//! per-mask mean (`stackmask bench` reports percentiles).

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use stackmask::compile::frontend::json_schema::{self, SchemaOptions};
use stackmask::compile::Compiler;
use stackmask::compile::{build_glr_tables, compile_grammar, Grammar, GrammarFormat, BUILTIN_JSON};
use stackmask::runtime::Matcher;
use stackmask::vocab::Vocab;

fn bench(c: &mut Criterion) {
    let dir = env!("CARGO_MANIFEST_DIR");
    let data = |f: &str| std::fs::read_to_string(format!("{dir}/benches/data/{f}")).unwrap();
    let lark = |text: &str| compile_grammar(text, GrammarFormat::Lark).unwrap();
    let json_doc = data("catalog.json");
    let mut workloads: Vec<(&str, Grammar, String, String)> = vec![(
        "json_o200k",
        lark(BUILTIN_JSON),
        "builtin:o200k".to_string(),
        json_doc.clone(),
    )];
    let shared = format!("{dir}/../shared");
    if std::path::Path::new(&shared).is_dir() {
        workloads.push((
            "json_llama3",
            lark(BUILTIN_JSON),
            format!("{shared}/tokenizers/llama3.json"),
            json_doc,
        ));
        let tree = json_schema::compile(&data("tree.schema.json"), &SchemaOptions::default());
        workloads.push((
            "schema_tree_llama3",
            tree.unwrap().grammar,
            format!("{shared}/tokenizers/llama3.json"),
            data("tree.json"),
        ));
        workloads.push((
            "java_gpt2",
            lark(&std::fs::read_to_string(format!("{shared}/grammars/syncode/java.lark")).unwrap()),
            format!("{shared}/tokenizers/gpt2.json"),
            data("Inventory.java"),
        ));
    }
    let mut group = c.benchmark_group("mask");
    group.sample_size(10);
    for (name, g, tok, doc) in &workloads {
        let tables = Arc::new(build_glr_tables(g).unwrap());
        let vocab = Vocab::load(tok).unwrap();
        let dwa = Arc::new(Compiler::new(&vocab).automaton(&tables).unwrap());
        let ids = vocab.encode(doc).unwrap();
        // The states along the document, so the loop times masks only.
        let mut states = Vec::with_capacity(ids.len());
        let mut m = Matcher::new(tables.clone(), dwa.clone());
        for &t in &ids {
            states.push(m.clone());
            m.commit_token(&vocab, t).unwrap();
        }
        let mut words = vec![0u32; vocab.len().div_ceil(32)];
        group.bench_function(BenchmarkId::new("document", name), |b| {
            b.iter(|| {
                for s in &states {
                    s.fill_mask(&mut words).unwrap();
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
