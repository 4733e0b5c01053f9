//! Fills mask rows for cache counters: the same matchers (JSON, at successive steps of
//! `benches/data/catalog.json`) either batched into one row each or one by one into a
//! single reused row, `CALLS` times, with nothing else timed. Run under cachegrind once
//! per mode, `none` included (the setup alone), and subtract: the difference per mask is
//! what a batch's rows cost in instructions and cache misses beyond one warm row.
//! `valgrind --tool=cachegrind --cache-sim=yes target/release/examples/batch_rows --
//! TOKENIZER MATCHERS CALLS batch|single|none` (one thread: `RAYON_NUM_THREADS=1`).

use std::sync::Arc;

use stackmask::compile::BUILTIN_JSON;
use stackmask::compile::{build_glr_tables, compile_grammar, Compiler, GrammarFormat};
use stackmask::runtime::{fill_masks, Matcher};
use stackmask::vocab::Vocab;

/// The binary's allocator and tuning, so that memory behaves as in `stackmask` (huge
/// pages for the automaton's arrays, freed memory kept mapped).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: stackmask::allocator::Allocator = stackmask::allocator::Allocator;

fn main() {
    // SAFETY: no other thread exists yet.
    #[cfg(feature = "mimalloc")]
    unsafe {
        stackmask::allocator::tune_for_compiles()
    };
    let args: Vec<String> = std::env::args().collect();
    let [_, tokenizer, matchers, calls, mode] = &args[..] else {
        eprintln!("usage: batch_rows TOKENIZER MATCHERS CALLS batch|single|none");
        std::process::exit(2);
    };
    let n: usize = matchers.parse().expect("MATCHERS is a number");
    let calls: usize = calls.parse().expect("CALLS is a number");
    let dir = env!("CARGO_MANIFEST_DIR");
    let doc = std::fs::read_to_string(format!("{dir}/benches/data/catalog.json")).unwrap();
    let g = compile_grammar(BUILTIN_JSON, GrammarFormat::Lark).unwrap();
    let tables = Arc::new(build_glr_tables(&g).unwrap());
    let vocab = Vocab::load(tokenizer).unwrap();
    let dwa = Arc::new(Compiler::new(&vocab).automaton(&tables).unwrap());
    let ids = vocab.encode(&doc).unwrap();
    let mut states = Vec::with_capacity(ids.len());
    let mut m = Matcher::new(tables, dwa);
    for &t in &ids {
        states.push(m.clone());
        m.commit(&vocab, t).unwrap();
    }
    let row = vocab.len().div_ceil(32);
    let batch: Vec<&Matcher> = (0..n).map(|i| &states[i % states.len()]).collect();
    let mut out = vec![0u32; row * n];
    for _ in 0..calls {
        match mode.as_str() {
            "batch" => fill_masks(&batch, &mut out, row).unwrap(),
            "single" => {
                for m in &batch {
                    m.fill_mask(&mut out[..row]).unwrap();
                }
            }
            "none" => {}
            _ => panic!("mode is batch, single or none"),
        }
        std::hint::black_box(&mut out);
    }
    let set: u32 = out.iter().map(|w| w.count_ones()).sum();
    println!("{n} matchers, {calls} calls, {mode}: {set} bits set");
}
