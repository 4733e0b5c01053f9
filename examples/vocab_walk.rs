//! Replays a document and times the recognizer's vocabulary walk (`glr::walk::VocabWalk`)
//! at every step, twice (the second with what the first learnt of the lexer), printing
//! the slowest steps: what the slow path costs a mask.
//! `cargo run --release --example vocab_walk -- GRAMMAR TOKENIZER DOCUMENT`

use std::sync::Arc;
use std::time::Instant;

use stackmask::compile::{build_glr_tables, compile_grammar, GrammarFormat};
use stackmask::glr::walk::VocabWalk;
use stackmask::glr::GlrState;
use stackmask::vocab::Vocab;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let text = std::fs::read_to_string(&args[1]).unwrap();
    let g = compile_grammar(&text, GrammarFormat::from_path(&args[1])).unwrap();
    let tables = Arc::new(build_glr_tables(&g).unwrap());
    let vocab = Vocab::load(&args[2]).unwrap();
    // As a server does at startup: the tries are not the walk's cost.
    vocab.prepare();
    let doc = std::fs::read_to_string(&args[3]).unwrap();
    let ids = vocab.encode(&doc).unwrap();
    let walk = VocabWalk::new(tables.clone());
    let mut state = GlrState::new(tables);
    let mut times = Vec::new();
    for (i, &t) in ids.iter().enumerate() {
        let t0 = Instant::now();
        let first = walk.mask(&state, &vocab);
        let a = t0.elapsed().as_secs_f64() * 1e6;
        let t0 = Instant::now();
        let again = walk.mask(&state, &vocab);
        let b = t0.elapsed().as_secs_f64() * 1e6;
        assert_eq!(first, again);
        times.push((a, b, i, state.configs().len()));
        state.commit_token(&vocab, t).unwrap();
    }
    let mut by = times.clone();
    by.sort_by(|x, y| y.0.total_cmp(&x.0));
    for (a, b, i, c) in by.iter().take(8) {
        let piece = vocab.decode_bytes(&ids[i.saturating_sub(4)..=*i]).unwrap();
        println!(
            "step {i:5}: first {a:9.1} µs, again {b:9.1} µs, configs {c}  …{:?}",
            String::from_utf8_lossy(&piece)
        );
    }
    let mut a: Vec<f64> = times.iter().map(|t| t.0).collect();
    a.sort_by(f64::total_cmp);
    let q = |p: f64| a[((a.len() - 1) as f64 * p) as usize];
    println!(
        "{} masks: p50 {:.1} µs, p90 {:.1}, p99 {:.1}, max {:.1}",
        a.len(),
        q(0.5),
        q(0.9),
        q(0.99),
        q(1.0)
    );
}
