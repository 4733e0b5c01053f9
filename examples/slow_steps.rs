//! Replays a document and prints its slowest mask steps (least of 7 timings each) with
//! the stack entries each read and the stacks' size, then the steps whose first timing
//! was slowest (and their summed excess over the least): where a mask's tail comes from,
//! and whether it is the engine's or the machine's.
//! `cargo run --release --example slow_steps -- GRAMMAR TOKENIZER DOCUMENT
//! [--budget N] [--droppable NAME]… [--tab-len N] [--longest-match]` (`--budget`: `DwaLimits::determinize_budget`).

use std::sync::Arc;
use std::time::Instant;

use stackmask::compile::{build_glr_tables, compile_grammar, Compiler, GrammarFormat};
use stackmask::runtime::Matcher;
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
    let mut limits = stackmask::compile::DwaLimits::default();
    let mut droppable = Vec::new();
    let mut tab_len = None;
    let mut longest = false;
    let mut rest = args[4..].iter();
    while let Some(k) = rest.next() {
        let mut value = || rest.next().expect("option without a value");
        match k.as_str() {
            "--budget" => limits.determinize_budget = value().parse().unwrap(),
            "--droppable" => droppable.push(value().clone()),
            "--tab-len" => tab_len = Some(value().parse().unwrap()),
            "--longest-match" => longest = true,
            _ => panic!("unknown option {k:?}"),
        }
    }
    let text = std::fs::read_to_string(&args[1]).unwrap();
    let mut g = compile_grammar(&text, GrammarFormat::from_path(&args[1])).unwrap();
    g.set_droppable(&droppable).unwrap();
    if let Some(n) = tab_len {
        g.set_tab_len(n).unwrap();
    }
    g.longest_match |= longest;
    let tables = Arc::new(build_glr_tables(&g).unwrap());
    let vocab = Vocab::load(&args[2]).unwrap();
    let t0 = Instant::now();
    let dwa = Arc::new(
        Compiler::new(&vocab)
            .with_limits(limits)
            .automaton(&tables)
            .unwrap(),
    );
    println!(
        "automaton: {} states, {:.0} ms",
        dwa.num_states(),
        t0.elapsed().as_secs_f64() * 1e3
    );
    let doc = std::fs::read_to_string(&args[3]).unwrap();
    let ids = vocab.encode(&doc).unwrap();
    let mut m = Matcher::new(tables.clone(), dwa);
    let mut words = vec![0u32; vocab.len().div_ceil(32)];
    let mut steps = Vec::new();
    let mut firsts = Vec::new();
    let mut at = 0usize;
    for (i, &t) in ids.iter().enumerate() {
        let mut best = f64::MAX;
        let mut first = 0.0;
        let mut reads = 0;
        for k in 0..7 {
            let s = Instant::now();
            reads = m.fill_mask_counted(&mut words).unwrap();
            let us = s.elapsed().as_secs_f64() * 1e6;
            if k == 0 {
                first = us;
            }
            best = best.min(us);
        }
        firsts.push((first, best, i));
        let b = vocab.token_bytes(t).unwrap();
        // The stacks: configurations, heads, distinct nodes.
        let mut seen = std::collections::HashSet::new();
        let mut heads = 0;
        let mut stack: Vec<Arc<stackmask::glr::gss::Node>> = Vec::new();
        for c in m.glr().configs() {
            heads += c.heads.len();
            stack.extend(c.heads.iter().cloned());
        }
        while let Some(n) = stack.pop() {
            if seen.insert(Arc::as_ptr(&n) as usize) {
                stack.extend(n.preds().iter().cloned());
            }
        }
        steps.push((
            best,
            i,
            reads,
            at,
            m.glr().configs().len(),
            heads,
            seen.len(),
        ));
        at += b.len();
        m.commit(&vocab, t).unwrap();
    }
    steps.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap());
    firsts.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap());
    // The first timings' excess over the least: what cold memory and memo misses cost.
    let excess: f64 = firsts.iter().map(|(f, b, _)| f - b).sum();
    let over = |us: f64| firsts.iter().filter(|(f, _, _)| *f > us).count();
    println!(
        "first timings: {excess:.0} µs over the least in all; over 20 µs: {}, over 40 µs: {}",
        over(20.0),
        over(40.0)
    );
    for &(first, best, i) in firsts.iter().take(6) {
        println!("first timing {first:8.1} µs (least {best:6.1})  step {i}");
    }
    let bytes = doc.as_bytes();
    for &(us, i, reads, at, configs, heads, nodes) in steps.iter().take(12) {
        let from = at.saturating_sub(40);
        println!(
            "{us:8.1} µs  step {i:5}  reads {reads:4}  configs {configs} heads {heads} nodes {nodes}  …{:?} | {:?}",
            String::from_utf8_lossy(&bytes[from..at]),
            String::from_utf8_lossy(vocab.token_bytes(ids[i]).unwrap())
        );
    }
}
