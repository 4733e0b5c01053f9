//! The MaskBench harness on real files: a fixed sample of ../shared/maskbench replayed
//! through the GLR recognizer (no invalid instance accepted, valid ones rejected only for
//! the documented key order), the same sample's compiled grammars through their artifact
//! bytes and back and with their automata built in the background, and the replay's
//! timing bookkeeping.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use stackmask::compile::json_schema::{SchemaError, SchemaOptions};
use stackmask::runtime::Matcher;
use stackmask::vocab::Vocab;

use super::replay::{self as maskbench, Engine, FileOutcome, PyJson};

/// ../shared beside the checkout, or $STACKMASK_SHARED.
fn shared_dir() -> PathBuf {
    let p = std::env::var_os("STACKMASK_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    assert!(
        p.join("tokenizers").is_dir(),
        "shared corpus not found at {} (set STACKMASK_SHARED)",
        p.display()
    );
    p
}

/// The fixed MaskBench sample: every 20th file of ../shared/maskbench in name order.
fn sample_files() -> Vec<PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(shared_dir().join("maskbench"))
        .expect("../shared/maskbench")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files.into_iter().step_by(20).collect()
}

fn llama3() -> Arc<Vocab> {
    Arc::new(
        Vocab::load(
            &shared_dir()
                .join("tokenizers/llama3.json")
                .to_string_lossy(),
        )
        .unwrap(),
    )
}

fn gpt2() -> Arc<Vocab> {
    Arc::new(Vocab::load(&shared_dir().join("tokenizers/gpt2.json").to_string_lossy()).unwrap())
}

/// Resolves a local `$ref` chain (test-side, independent of the front end).
fn deref<'a>(root: &'a Value, mut s: &'a Value) -> &'a Value {
    for _ in 0..20 {
        let Some(r) = s.get("$ref").and_then(Value::as_str) else {
            break;
        };
        match r.strip_prefix('#').and_then(|p| root.pointer(p)) {
            Some(t) => s = t,
            None => break,
        }
    }
    s
}

/// Whether every object of `v` lists its declared keys in the order of the `properties`
/// of the schema node (and its `allOf`/`anyOf`/`oneOf` members) that describes it — the
/// one spelling rule of the front end that valid instances may break.
fn in_schema_order(root: &Value, s: &Value, v: &Value) -> bool {
    let s = deref(root, s);
    let mut nodes = vec![s];
    for k in ["allOf", "anyOf", "oneOf"] {
        if let Some(a) = s.get(k).and_then(Value::as_array) {
            nodes.extend(a.iter().map(|x| deref(root, x)));
        }
    }
    for n in nodes {
        if let (Value::Object(obj), Some(props)) =
            (v, n.get("properties").and_then(Value::as_object))
        {
            let names: Vec<&String> = props.keys().collect();
            let idx: Vec<usize> = obj
                .keys()
                .filter_map(|k| names.iter().position(|n| *n == k))
                .collect();
            if idx.windows(2).any(|w| w[0] > w[1]) {
                return false;
            }
            for (k, x) in obj {
                if let Some(ps) = props.get(k) {
                    if !in_schema_order(root, ps, x) {
                        return false;
                    }
                }
            }
        }
        // Values under patternProperties / additionalProperties follow their schema's
        // order too (a pattern that does not parse as a Rust regex is assumed to match).
        if let Value::Object(obj) = v {
            let props = n.get("properties").and_then(Value::as_object);
            for (k, x) in obj
                .iter()
                .filter(|(k, _)| props.is_none_or(|p| !p.contains_key(*k)))
            {
                let mut matched = false;
                for (p, ps) in n
                    .get("patternProperties")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                {
                    let hit = regex_automata::meta::Regex::new(p).map_or(true, |r| r.is_match(k));
                    matched |= hit;
                    if hit && !in_schema_order(root, ps, x) {
                        return false;
                    }
                }
                if let Some(ap) = n.get("additionalProperties").filter(|a| a.is_object()) {
                    if !matched && !in_schema_order(root, ap, x) {
                        return false;
                    }
                }
            }
        }
        if let (Value::Array(a), Some(items)) = (v, n.get("items").filter(|i| i.is_object())) {
            if !a.iter().all(|x| in_schema_order(root, items, x)) {
                return false;
            }
        }
    }
    true
}

#[test]
fn maskbench_sample_has_no_validation_or_invalidation_errors() {
    let sample = sample_files();
    assert!(sample.len() >= 200);
    let vocab = llama3();
    let opts = SchemaOptions::default();
    let (mut compiled, mut valid, mut out_of_order) = (0, 0, 0);
    let mut refusals: Vec<String> = Vec::new();
    let mut failures = Vec::new();
    let mut tbm = maskbench::TokenTimes::new(1);
    for path in &sample {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let file: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        match maskbench::run_file(
            &file,
            &maskbench::RunOptions::new(&opts, Engine::Glr),
            &vocab,
            &mut tbm,
        ) {
            FileOutcome::BadFile(e) => failures.push(format!("{name}: bad file: {e}")),
            FileOutcome::Error(SchemaError::Unsupported { keyword, .. }) => {
                // A refusal names a keyword the schema really uses.
                if !serde_json::to_string(&file["schema"])
                    .unwrap()
                    .contains(&format!("\"{keyword}\""))
                {
                    failures.push(format!(
                        "{name}: refused `{keyword}`, which the schema does not use"
                    ));
                }
                refusals.push(keyword);
            }
            FileOutcome::Error(e) => refusals.push(format!("error: {}", e.kind())),
            FileOutcome::Compiled { instances, .. } => {
                compiled += 1;
                for i in instances {
                    valid += i.valid as usize;
                    match (i.valid, i.accepted) {
                        (false, true) => {
                            failures.push(format!("{name}: invalid instance {} accepted", i.index))
                        }
                        (true, false) => {
                            let data = &file["tests"][i.index]["data"];
                            if in_schema_order(&file["schema"], &file["schema"], data) {
                                failures.push(format!(
                                    "{name}: valid instance {} rejected: {}",
                                    i.index, i.text
                                ));
                            } else {
                                out_of_order += 1;
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    assert!(
        compiled >= 200,
        "only {compiled} of {} compiled; refusals: {refusals:?}",
        sample.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Instances whose keys are not in schema order are the documented exception; they
    // must stay rare (about 2% of the whole corpus: some 110 of 6,360 valid instances;
    // the sample's share moves with what compiles: one schema with two such instances
    // moves it by 0.6 points, hence the looser bound here).
    assert!(
        out_of_order * 25 <= valid,
        "{out_of_order} of {valid} valid instances out of schema order"
    );
}

/// The MaskBench sample of the test above, compiled with the mask automaton as a server
/// compiles it: every compiled grammar goes through its artifact bytes and back, and the
/// loaded grammar's mask equals the original's at every step of every instance (up to
/// the first token the mask refuses). Llama-3, whose counted and split string states
/// name lexer states the recognizer's lexer lacks.
#[test]
fn maskbench_sample_artifacts_load_back_with_equal_masks() {
    use super::replay::RoundTrip;
    let sample = sample_files();
    let vocab = llama3();
    let opts = SchemaOptions::default();
    let (mut equal, mut split) = (0, 0);
    let mut failures = Vec::new();
    for path in &sample {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let file: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let Ok(maskbench::Compiled::Dwa(g)) =
            maskbench::compile(&file["schema"], &opts, Engine::Dwa, &vocab, None)
        else {
            continue;
        };
        let docs: Vec<(usize, Vec<_>)> = file["tests"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
            .filter_map(|(i, t)| {
                let text = maskbench::to_python_json(&t["data"], PyJson::default());
                vocab.encode(&text).ok().map(|ids| (i, ids))
            })
            .collect();
        let docs: Vec<_> = docs.iter().map(|(i, ids)| (*i, ids.as_slice())).collect();
        match maskbench::round_trip(&g, &vocab, &docs) {
            RoundTrip::MasksEqual => equal += 1,
            other => failures.push(format!("{name}: {other:?}")),
        }
        // The split string states name lexer states the recognizer's lexer lacks.
        split += usize::from(g.dwa.split().is_some());
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        equal >= 200,
        "only {equal} of {} round-tripped",
        sample.len()
    );
    assert!(
        split >= 10,
        "only {split} split automata: the split path is barely tested"
    );
}

/// `TokenTimes` with several replays (and several compiles): the instances are judged as
/// with one, the floor has one time per token of the first replay, and no token's floor
/// exceeds its first time (a floor taken from the wrong token, or not a minimum, fails
/// here); the compile floor is the first compile's time with one compile, at most it with
/// three.
#[test]
fn replays_keep_outcomes_and_floor_each_token() {
    let vocab = gpt2();
    let file = serde_json::json!({
        "schema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"enum": ["x", "yy"]}},
            "required": ["a"]
        },
        "tests": [
            {"data": {"a": 12, "b": "yy"}, "valid": true},
            {"data": {"a": 3}, "valid": true},
            {"data": {"b": "x"}, "valid": false},
            {"data": {"a": 1, "b": "z"}, "valid": false}
        ]
    });
    let opts = SchemaOptions::default();
    let judge = |times: &mut maskbench::TokenTimes, compiles: usize| -> Vec<(bool, bool)> {
        let run = maskbench::RunOptions {
            compiles,
            ..maskbench::RunOptions::new(&opts, Engine::Dwa)
        };
        match maskbench::run_file(&file, &run, &vocab, times) {
            FileOutcome::Compiled {
                instances,
                ttfm_ms,
                ttfm_floor_ms,
                ..
            } => {
                // One compile is its own floor; more can only lower it.
                if compiles == 1 {
                    assert_eq!(ttfm_floor_ms, ttfm_ms);
                } else {
                    assert!(ttfm_floor_ms > 0.0 && ttfm_floor_ms <= ttfm_ms);
                }
                instances.iter().map(|i| (i.valid, i.accepted)).collect()
            }
            other => panic!("{other:?}"),
        }
    };
    let mut one = maskbench::TokenTimes::new(1);
    let mut three = maskbench::TokenTimes::new(3);
    // Further compiles change neither the outcomes nor the tokens timed.
    let (a, b) = (judge(&mut one, 1), judge(&mut three, 3));
    assert_eq!(a, b);
    assert!(a.iter().all(|(valid, accepted)| valid == accepted), "{a:?}");
    assert_eq!(one.first, one.floor);
    assert_eq!(three.first.len(), one.first.len());
    assert_eq!(three.floor.len(), three.first.len());
    assert!(three.first.iter().zip(&three.floor).all(|(f, m)| m <= f));
    // Not a timing claim: the floor must actually take later replays into account, and
    // for the first (cold) replay to be the fastest at every one of its dozens of tokens
    // has odds below 3^-20.
    assert!(three.first.iter().zip(&three.floor).any(|(f, m)| m < f));
}

/// A compile past the run's time limit is a `time_limit` compile error, not a crash or
/// a silent skip; with a generous limit the same file compiles.
#[test]
fn a_time_limit_makes_a_named_compile_error() {
    let vocab = gpt2();
    let file = serde_json::json!({
        "schema": {"type": "object", "properties": {"a": {"type": "string"}}},
        "tests": [{"data": {"a": "x"}, "valid": true}]
    });
    let opts = SchemaOptions::default();
    let run = |limit_ms: u64| {
        let o = maskbench::RunOptions {
            time_limit: Some(std::time::Duration::from_millis(limit_ms)),
            ..maskbench::RunOptions::new(&opts, Engine::Dwa)
        };
        maskbench::run_file(&file, &o, &vocab, &mut maskbench::TokenTimes::new(1))
    };
    match run(0) {
        FileOutcome::Error(e) => assert_eq!(e.kind(), "time_limit", "{e}"),
        other => panic!("{other:?}"),
    }
    match run(3_600_000) {
        FileOutcome::Compiled { instances, .. } => assert!(instances[0].accepted),
        other => panic!("{other:?}"),
    }
}

/// With the automaton built on another thread (`Engine::Background`), every third file of
/// the sample × Llama-3 gives at every step of its first tokenizable instance the mask
/// the eagerly compiled grammar gives, on the steps before the automaton is there (the
/// vocabulary walk) and after; and the instances' outcomes are the eager ones.
#[test]
fn background_builds_mask_as_the_eager_compile_at_every_step() {
    let vocab = llama3();
    let opts = SchemaOptions::default();
    let (mut files, mut walked, mut read) = (0, 0, 0);
    for path in sample_files().iter().step_by(3) {
        let file: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let compile = |e| maskbench::compile(&file["schema"], &opts, e, &vocab, None);
        let (Ok(maskbench::Compiled::Dwa(eager)), Ok(maskbench::Compiled::Background(build))) =
            (compile(Engine::Dwa), compile(Engine::Background))
        else {
            continue;
        };
        let Some(tokens) = file["tests"].as_array().unwrap().iter().find_map(|t| {
            let text = maskbench::to_python_json(&t["data"], PyJson::default());
            vocab.encode(&text).ok()
        }) else {
            continue;
        };
        files += 1;
        let mut a = Matcher::from_compiled(&eager);
        let mut b = Matcher::from_build(&build);
        let (mut wa, mut wb) = (
            vec![0u32; vocab.len().div_ceil(32)],
            vec![0u32; vocab.len().div_ceil(32)],
        );
        for (i, &t) in tokens.iter().enumerate() {
            let pending = b.dwa().is_none();
            a.fill_mask(&mut wa).unwrap();
            b.fill_mask(&mut wb).unwrap();
            assert!(wa == wb, "{name}: step {i} (automaton pending: {pending})");
            if pending {
                walked += 1;
            } else {
                read += 1;
            }
            let (ra, rb) = (a.commit(&vocab, t).is_ok(), b.commit(&vocab, t).is_ok());
            assert_eq!(ra, rb, "{name}: commit at step {i}");
            if !ra {
                break;
            }
        }
        assert!(build.wait().is_ok(), "{name}: the background build failed");
    }
    assert!(files >= 60, "{files} files compared");
    // Both paths ran: masks before the automaton was there, and after.
    assert!(walked > 0 && read > 0, "{walked} walked, {read} read");
}
