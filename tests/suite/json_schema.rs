//! JSON Schema front end: table-driven keyword cases (tests/data/json_schema/*.toml) and a
//! MaskBench replay of a fixed sample of ../shared/maskbench.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;
use stackmask::compile::build_glr_tables;
use stackmask::compile::frontend::json_schema::{self, SchemaError, SchemaOptions};
use stackmask::glr::GlrState;
use stackmask::reference::Reference;

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
    let line = serde_json::from_str::<Value>(&std::fs::read_to_string(&details).unwrap()).unwrap();
    let tokens = line["tokens"].as_u64().unwrap();
    // t10: the compile plus the first ten tokens' times, no more than all of them.
    let ms = |k: &str| line[k].as_f64().unwrap();
    assert!(
        ms("ttfm_ms") < ms("t10_ms") && ms("t10_ms") <= ms("ttfm_ms") + ms("tbm_sum_us") / 1e3,
        "{line}"
    );
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
            "t10_ms",
            "tbm_us"
        ]
    );
    // Summaries round to hundredths.
    assert!((summary["t10_ms"]["max"].as_f64().unwrap() - ms("t10_ms")).abs() <= 0.01);
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

/// A Lark grammar's `%json` schemas are lowered with the compiler's schema options:
/// compact leaves no whitespace between the body's tokens (the grammar's own text around
/// it unchanged), lenient drops a keyword it would otherwise refuse at the `%json`.
#[test]
fn embedded_schemas_take_the_compilers_schema_options() {
    use stackmask::compile::{Compiler, GrammarError, GrammarFormat};
    let vocab = stackmask::vocab::Vocab::load("builtin:o200k").unwrap();
    let text = "start: \"call \" body\nbody: %json {\"type\": \"object\", \"properties\": \
                {\"n\": {\"type\": \"integer\"}}, \"required\": [\"n\"], \
                \"additionalProperties\": false}\n";
    let accepts = |c: &Compiler, doc: &str| {
        let g = c.grammar(text, GrammarFormat::Lark).unwrap();
        let tables = build_glr_tables(&g).unwrap();
        Reference::new(&g, &tables.lexer).is_complete(doc.as_bytes())
    };
    let spaced = "call {\"n\": 1}";
    let tight = "call {\"n\":1}";
    let plain = Compiler::new(&vocab);
    assert!(accepts(&plain, spaced) && accepts(&plain, tight));
    let compact = Compiler::new(&vocab).with_schema_options(SchemaOptions {
        compact: true,
        lenient: false,
    });
    assert!(!accepts(&compact, spaced) && accepts(&compact, tight));
    let unique = "start: %json {\"type\": \"array\", \"uniqueItems\": true}\n";
    match plain.grammar(unique, GrammarFormat::Lark) {
        Err(GrammarError::EmbeddedSchema { span, error }) => {
            assert_eq!(span.to_string(), "1:8");
            assert!(matches!(*error, SchemaError::Unsupported { .. }), "{error}");
        }
        other => panic!("want the %json refused, got {other:?}"),
    }
    let lenient = Compiler::new(&vocab).with_schema_options(SchemaOptions {
        compact: false,
        lenient: true,
    });
    assert!(lenient.grammar(unique, GrammarFormat::Lark).is_ok());
}
