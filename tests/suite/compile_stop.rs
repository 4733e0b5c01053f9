//! Compiles stop when told: a cancellation flag (set before the compile, or by another
//! thread while a large schema compiles) and a time limit, each with its named error; a
//! clear flag and a generous limit change nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use stackmask::compile::{Compiler, GrammarError, GrammarFormat, BUILTIN_JSON};
use stackmask::vocab::Vocab;

use super::common::shared_dir;

fn gpt2() -> Vocab {
    Vocab::load(shared_dir().join("tokenizers/gpt2.json").to_str().unwrap()).unwrap()
}

const SCHEMA: &str = r#"{"type": "object", "properties": {"a": {"type": "string", "maxLength": 40},
    "b": {"type": "array", "items": {"type": "integer"}}}, "required": ["a"]}"#;

#[test]
fn a_set_flag_or_a_passed_limit_stops_a_compile_with_its_error() {
    let v = gpt2();
    for (text, format) in [
        (BUILTIN_JSON, GrammarFormat::Lark),
        (SCHEMA, GrammarFormat::JsonSchema),
    ] {
        let set = Arc::new(AtomicBool::new(true));
        match Compiler::new(&v).with_cancel(set).compile(text, format) {
            Err(GrammarError::Cancelled) => {}
            other => panic!("{format:?}: {:?}", other.map(|_| "compiled")),
        }
        match Compiler::new(&v)
            .with_time_limit(Duration::ZERO)
            .compile(text, format)
        {
            Err(e @ GrammarError::TimeLimit { limit_ms: 0 }) => {
                assert!(e.to_string().contains("time limit of 0 ms"), "{e}")
            }
            other => panic!("{format:?}: {:?}", other.map(|_| "compiled")),
        }
        // Neither stops a compile that has not reached them: the same artifact.
        let plain = Compiler::new(&v).compile(text, format).unwrap().to_bytes();
        let bounded = Compiler::new(&v)
            .with_cancel(Arc::new(AtomicBool::new(false)))
            .with_time_limit(Duration::from_secs(3600))
            .compile(text, format)
            .unwrap()
            .to_bytes();
        assert!(
            plain == bounded,
            "{format:?}: the limits changed the artifact"
        );
    }
}

/// The largest MaskBench schema takes seconds to compile here (lowering, lexer, automaton);
/// a flag set 50 ms in stops it, wherever it is, with `Cancelled`.
#[test]
fn another_thread_cancels_a_large_compile() {
    let v = gpt2();
    let file = shared_dir().join("maskbench/Kubernetes---kb_1161_Normalized.json");
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let text = doc["schema"].to_string();
    for delay_ms in [50, 1500, 3000] {
        let flag = Arc::new(AtomicBool::new(false));
        let setter = {
            let flag = flag.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(delay_ms));
                flag.store(true, Ordering::Relaxed);
                Instant::now()
            })
        };
        let r = Compiler::new(&v)
            .with_cancel(flag)
            .compile(&text, GrammarFormat::JsonSchema);
        let returned = Instant::now();
        let set_at = setter.join().unwrap();
        match r {
            Err(GrammarError::Cancelled) => eprintln!(
                "flag set at {delay_ms} ms: the compile returned {:.1} ms later",
                returned.saturating_duration_since(set_at).as_secs_f64() * 1e3
            ),
            // A machine fast enough to finish before the flag: nothing to stop.
            Ok(_) if delay_ms > 50 => {}
            other => panic!("set at {delay_ms} ms: {:?}", other.map(|_| "compiled")),
        }
    }
}
