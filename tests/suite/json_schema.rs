//! JSON Schema front end: table-driven keyword cases (tests/data/json_schema/*.toml) and a
//! MaskBench replay of a fixed sample of ../shared/maskbench.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;
use stackmask::compile::build_glr_tables;
use stackmask::compile::frontend::json_schema::{self, SchemaError, SchemaOptions};
use stackmask::glr::GlrState;
use stackmask::maskbench::{self, Engine, FileOutcome, PyJson};
use stackmask::reference::Reference;
use stackmask::vocab::Vocab;

use super::common::{data_dir, shared_dir};

#[derive(Deserialize)]
struct Spec {
    case: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    schema: String,
    #[serde(default)]
    valid: Vec<String>,
    #[serde(default)]
    invalid: Vec<String>,
    /// Documents the specification finds valid but that break a documented spelling rule
    /// of the front end (a `\u` escape of printable ASCII): the validator must accept
    /// them and the grammar must reject them, so the rule is exactly as narrow as stated.
    #[serde(default)]
    outside_rule: Vec<String>,
    #[serde(default)]
    compact: bool,
    refused: Option<String>,
    /// Why an independent validator judges some document differently (the documented
    /// deviations: keys out of schema order); without it the validator must agree.
    validator_differs: Option<String>,
}

/// A document with every `«TEXT×N»` replaced by TEXT repeated N times (long strings
/// for length cases).
fn expand(d: &str) -> String {
    let mut out = String::new();
    let mut rest = d;
    while let Some(i) = rest.find('«') {
        out.push_str(&rest[..i]);
        let body = &rest[i + '«'.len_utf8()..];
        let j = body.find('»').expect("«…» closed");
        let (text, n) = body[..j].rsplit_once('×').expect("«TEXT×N»");
        out.push_str(&text.repeat(n.parse().expect("a count after ×")));
        rest = &body[j + '»'.len_utf8()..];
    }
    out.push_str(rest);
    out
}

/// The expectations themselves checked against an independent validator (the
/// `jsonschema` crate, with formats asserted): a case cannot encode a misreading of the
/// specification that the lowering then shares.
fn check_against_validator(c: &Case, at: &str, failures: &mut Vec<String>) {
    if c.validator_differs.is_some() {
        return;
    }
    let Ok(schema) = serde_json::from_str::<Value>(&c.schema) else {
        return failures.push(format!("{at}: schema is not JSON"));
    };
    let validator = match jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
    {
        Ok(v) => v,
        // A refused schema may use what the validator cannot load (a remote `$ref`).
        Err(_) if c.refused.is_some() => return,
        Err(e) => return failures.push(format!("{at}: validator refuses the schema: {e}")),
    };
    for (docs, want) in [
        (&c.valid, true),
        (&c.invalid, false),
        (&c.outside_rule, true),
    ] {
        for d in docs {
            let d = &expand(d);
            // Documents that are not JSON at all are invalid without asking.
            let Ok(instance) = serde_json::from_str::<Value>(d) else {
                if want {
                    failures.push(format!("{at}: valid document {d:?} is not JSON"));
                }
                continue;
            };
            if validator.is_valid(&instance) != want {
                failures.push(format!(
                    "{at}: the validator finds {d:?} {}",
                    if want { "invalid" } else { "valid" }
                ));
            }
        }
    }
}

fn run_case(c: &Case, file: &str, failures: &mut Vec<String>) {
    let opts = SchemaOptions {
        compact: c.compact,
        lenient: false,
    };
    let at = format!("{file}: {}", c.name);
    check_against_validator(c, &at, failures);
    if let Some(kw) = &c.refused {
        match json_schema::compile(&c.schema, &opts) {
            Err(SchemaError::Unsupported { keyword, .. }) if &keyword == kw => {}
            Err(e) => failures.push(format!("{at}: want `{kw}` refused, got {e}")),
            Ok(_) => failures.push(format!("{at}: want `{kw}` refused, compiled")),
        }
        let lenient = SchemaOptions {
            lenient: true,
            ..opts
        };
        match json_schema::compile(&c.schema, &lenient) {
            Ok(l) if l.dropped.iter().any(|d| &d.keyword == kw) => {}
            Ok(_) => failures.push(format!("{at}: lenient mode did not report `{kw}`")),
            Err(e) => failures.push(format!("{at}: lenient mode failed: {e}")),
        }
        return;
    }
    let lowered = match json_schema::compile(&c.schema, &opts) {
        Ok(l) => l,
        Err(e) => {
            failures.push(format!("{at}: {e}"));
            return;
        }
    };
    let tables = Arc::new(build_glr_tables(&lowered.grammar).expect("tables"));
    let reference = Reference::new(&lowered.grammar, &tables.lexer);
    for (docs, want) in [
        (&c.valid, true),
        (&c.invalid, false),
        (&c.outside_rule, false),
    ] {
        for d in docs {
            let d = &expand(d);
            let mut g = GlrState::new(tables.clone());
            let glr = g.commit_bytes(d.as_bytes()).is_ok() && g.is_accepting();
            let oracle = reference.is_complete(d.as_bytes());
            if glr != want || oracle != want {
                failures.push(format!(
                    "{at}: {d:?} should be {} (glr: {glr}, reference: {oracle})",
                    if want { "accepted" } else { "rejected" }
                ));
            }
        }
    }
}

#[test]
fn keyword_cases_accept_exactly_the_valid_documents() {
    let dir = data_dir().join("json_schema");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/data/json_schema")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    let mut failures = Vec::new();
    let mut cases = 0;
    for f in &files {
        let spec: Spec = toml::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        for c in &spec.case {
            cases += 1;
            run_case(c, &name, &mut failures);
        }
    }
    assert!(cases >= 50, "only {cases} cases");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn malformed_schemas_are_errors_not_panics() {
    let opts = SchemaOptions::default();
    let bad = [
        ("{\"type\": \"object\",", "json"),
        ("{\"minLength\": \"x\", \"type\": \"string\"}", "invalid"),
        ("{\"$ref\": \"#/nowhere\"}", "invalid"),
        ("{\"type\": \"strin\"}", "invalid"),
        ("{\"allOf\": []}", "invalid"),
        ("{\"type\": \"string\", \"enum\": [1]}", "unsatisfiable"),
        ("{\"$ref\": \"#\"}", "unsatisfiable"),
        (
            "{\"type\": \"integer\", \"minimum\": 5, \"maximum\": 4}",
            "unsatisfiable",
        ),
    ];
    for (text, kind) in bad {
        match json_schema::compile(text, &opts) {
            Err(e) => assert_eq!(e.kind(), kind, "{text}: {e}"),
            Ok(_) => panic!("{text} compiled"),
        }
    }
    match json_schema::compile("{\n  \"type\": [1,}", &opts) {
        Err(SchemaError::Json { line, .. }) => assert_eq!(line, 2),
        other => panic!("{other:?}"),
    }
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
    let dir = shared_dir().join("maskbench");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("../shared/maskbench")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    // A fixed sample: every 20th file in name order.
    let sample: Vec<_> = files.iter().step_by(20).collect();
    assert!(sample.len() >= 200);
    let vocab = Vocab::load(
        &shared_dir()
            .join("tokenizers/llama3.json")
            .to_string_lossy(),
    )
    .unwrap();
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
    use stackmask::maskbench::RoundTrip;
    let dir = shared_dir().join("maskbench");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("../shared/maskbench")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let sample: Vec<_> = files.iter().step_by(20).collect();
    let vocab = Vocab::load(
        &shared_dir()
            .join("tokenizers/llama3.json")
            .to_string_lossy(),
    )
    .unwrap();
    let opts = SchemaOptions::default();
    let (mut equal, mut split) = (0, 0);
    let mut failures = Vec::new();
    for path in &sample {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let file: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let Ok(maskbench::Compiled::Dwa(g)) =
            maskbench::compile(&file["schema"], &opts, Engine::Dwa, &vocab)
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
    let vocab = Vocab::load(&shared_dir().join("tokenizers/gpt2.json").to_string_lossy()).unwrap();
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

/// `maskbench --json --replays 2 --noise`: the summary stays the last line with exactly
/// the keys; the floor and the machine-noise lines come before it, the noise
/// timed once per replayed token (a missing line, a reordered one, or samples not taken
/// per token fail here).
#[test]
fn maskbench_json_keeps_the_summary_last_beside_floor_and_noise() {
    let dir = std::env::temp_dir().join(format!("stackmask-noise-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = serde_json::json!({
        "schema": {"type": "object", "properties": {"a": {"type": "integer"}}},
        "tests": [{"data": {"a": 12}, "valid": true}, {"data": {"a": "x"}, "valid": false}]
    });
    std::fs::write(dir.join("one.json"), file.to_string()).unwrap();
    let details = dir.join("details.jsonl");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_stackmask"))
        .args(["maskbench", "--json", "--replays", "2", "--noise", "--data"])
        .arg(&dir)
        .arg("--tokenizer")
        .arg(shared_dir().join("tokenizers/gpt2.json"))
        .arg("--details")
        .arg(&details)
        .output()
        .expect("runs the binary");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tokens = serde_json::from_str::<Value>(&std::fs::read_to_string(&details).unwrap())
        .unwrap()["tokens"]
        .as_u64()
        .unwrap();
    std::fs::remove_dir_all(&dir).ok();
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let [floor, noise, summary] = &lines[..] else {
        panic!("expected floor, noise and summary lines: {lines:?}");
    };
    let keys: Vec<&str> = summary
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "schemas_total",
            "schemas_compiled",
            "schemas_refused",
            "compile_errors",
            "valid_accepted",
            "validation_errors",
            "invalid_rejected",
            "invalidation_errors",
            "ttfm_ms",
            "tbm_us"
        ]
    );
    assert_eq!(summary["valid_accepted"], 1);
    assert_eq!(summary["invalid_rejected"], 1);
    assert_eq!(floor["replays"], 2);
    assert!(floor["tbm_floor_us"]["p50"].is_number());
    // The first instance's tokens, and the second's up to its rejection.
    assert!(tokens > 4, "{tokens}");
    assert_eq!(noise["noise_samples"].as_u64(), Some(tokens));
    let d = &noise["noise_us"];
    for k in ["p50", "p90", "p99", "p999", "max"] {
        assert!(d[k].as_f64().is_some_and(|x| x >= 0.0), "{noise}");
    }
    assert!(d["p50"].as_f64() <= d["max"].as_f64());
}
