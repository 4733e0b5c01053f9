//! Schemas with a finite list of instances: an `enum` or `const` beside keywords the
//! lowering does not compile (`not`, `if`, `uniqueItems`, long lengths…).
//!
//! Such a schema accepts exactly the listed values that validate against the whole node,
//! so it lowers to an `enum` of those values — exact whatever the other keywords are.
//! Which values validate is decided by the `jsonschema` crate (the reference validator),
//! under drafts 7, 2019-09 and 2020-12 since schemas rarely name their draft: when the
//! drafts disagree on a value, the node is refused. Depends on `serde_json`,
//! `jsonschema` and `resolve::ASSERTIONS`; used by `lower` only.

use jsonschema::Draft;
use serde_json::{Map, Value};

use super::resolve::ASSERTIONS;

/// Keywords that may sit beside `enum`/`const` without making the node need a validator.
const PLAIN: &[&str] = &[
    "enum",
    "const",
    "type",
    "title",
    "description",
    "$comment",
    "examples",
    "default",
    "$schema",
    "$id",
    "id",
    "deprecated",
    "readOnly",
    "writeOnly",
    "nullable",
];

/// The drafts a value must validate under (alike) to be kept.
const DRAFTS: [Draft; 3] = [Draft::Draft7, Draft::Draft201909, Draft::Draft202012];

/// Keywords whose values are instances (data), not schemas: never rewritten or searched
/// for references.
const DATA_KEYWORDS: &[&str] = &["enum", "const", "default", "examples"];

/// Where the node is placed inside the validated document (next to the root's contents).
const NODE_KEY: &str = "stackmask-node";
const ROOT_KEY: &str = "stackmask-root";

/// The candidate values of `node` when they are finite and something beside them needs
/// the validator: the node's own `enum`/`const`, or an `allOf` member's.
pub fn candidates(node: &Map<String, Value>) -> Option<Vec<Value>> {
    let own = |m: &Map<String, Value>| -> Option<Vec<Value>> {
        if let Some(c) = m.get("const") {
            return Some(vec![c.clone()]);
        }
        m.get("enum").and_then(Value::as_array).cloned()
    };
    // Keys that assert nothing (vendor `x-…` annotations and the like) need no validator.
    let needs_validator = node
        .keys()
        .any(|k| ASSERTIONS.contains(&k.as_str()) && !PLAIN.contains(&k.as_str()));
    if !needs_validator {
        return None;
    }
    own(node).or_else(|| {
        node.get("allOf")?
            .as_array()?
            .iter()
            .filter_map(Value::as_object)
            .find_map(own)
    })
}

/// The values among `values` that satisfy `node` (a subschema of `root`, whose local
/// `$ref`s resolve against `root`), in their listed order; `None` when the validator
/// rejects the schema (or a reference in it) or the drafts disagree on a value.
pub fn filter(root: &Value, node: &Value, values: &[Value]) -> Option<Vec<Value>> {
    // One document holds both: the root's `#/...` references are rewritten to point into
    // its copy, and identifiers that would move the base URI are dropped (only local
    // references are compiled anyway).
    let prefix = format!("#/$defs/{ROOT_KEY}");
    let mut defs = Map::new();
    // The root is copied in only when the node refers into it: every draft's validator
    // meta-validates the copy, per filtered node (a quarter of a large schema's
    // lowering).
    if refers(node) {
        defs.insert(ROOT_KEY.into(), relocate(root, &prefix));
    }
    defs.insert(NODE_KEY.into(), relocate(node, &prefix));
    let doc = serde_json::json!({
        "$ref": format!("#/$defs/{NODE_KEY}"),
        "$defs": defs,
    });
    let mut validators = Vec::with_capacity(DRAFTS.len());
    for draft in DRAFTS {
        let v = jsonschema::options()
            .with_draft(draft)
            .should_validate_formats(true)
            .build(&doc)
            .ok()?;
        validators.push(v);
    }
    let mut kept = Vec::new();
    for value in values {
        let verdicts: Vec<bool> = validators.iter().map(|v| v.is_valid(value)).collect();
        if verdicts.iter().any(|&b| b != verdicts[0]) {
            return None;
        }
        if verdicts[0] {
            kept.push(value.clone());
        }
    }
    Some(kept)
}

/// Whether a schema holds a reference (`$ref`, `$recursiveRef`, `$dynamicRef`) at a
/// schema position, which may need the root to resolve. Values (`enum`, `const`, …) are
/// data, not schemas, and are not looked into.
fn refers(schema: &Value) -> bool {
    match schema {
        Value::Object(m) => m.iter().any(|(k, v)| match k.as_str() {
            "$ref" | "$recursiveRef" | "$dynamicRef" => true,
            k if DATA_KEYWORDS.contains(&k) => false,
            _ => refers(v),
        }),
        Value::Array(a) => a.iter().any(refers),
        _ => false,
    }
}

/// A copy of a schema with local references moved under `prefix` and `$id`s removed.
/// Only schema positions are rewritten: `enum`/`const` values are data and kept verbatim.
fn relocate(schema: &Value, prefix: &str) -> Value {
    match schema {
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, v) in m {
                match k.as_str() {
                    "$id" | "id" | "$schema" | "$anchor" if v.is_string() => {}
                    "$ref" => {
                        let r = v.as_str().unwrap_or_default();
                        let moved = match r.strip_prefix('#') {
                            Some(rest) if rest.is_empty() || rest.starts_with('/') => {
                                Value::String(format!("{prefix}{rest}"))
                            }
                            _ => v.clone(),
                        };
                        out.insert(k.clone(), moved);
                    }
                    d if DATA_KEYWORDS.contains(&d) => {
                        out.insert(k.clone(), v.clone());
                    }
                    _ => {
                        out.insert(k.clone(), relocate(v, prefix));
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(|v| relocate(v, prefix)).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn keep(root: Value, node: Value) -> Vec<Value> {
        let values = candidates(node.as_object().unwrap()).unwrap();
        filter(&root, &node, &values).unwrap()
    }

    #[test]
    fn values_are_kept_by_the_whole_node() {
        let node = json!({"enum": ["a", "bb", "ccc", 3], "not": {"maxLength": 1}});
        // 3 is not a string: maxLength holds for it, so `not` rejects it.
        assert_eq!(keep(json!({}), node), vec![json!("bb"), json!("ccc")]);
        let node = json!({"allOf": [{"enum": [[1, 1], [1, 2]]}, {"uniqueItems": true}]});
        assert_eq!(keep(json!({}), node), vec![json!([1, 2])]);
    }

    #[test]
    fn references_resolve_against_the_root() {
        let root =
            json!({"$id": "http://example.com/s", "definitions": {"short": {"maxLength": 2}}});
        let node = json!({"enum": ["ab", "abc"], "allOf": [{"$ref": "#/definitions/short"}]});
        assert_eq!(keep(root, node), vec![json!("ab")]);
    }

    #[test]
    fn only_a_referring_node_brings_the_root_in() {
        assert!(!refers(
            &json!({"enum": [{"$ref": "#/x"}], "not": {"maxLength": 1}})
        ));
        assert!(refers(
            &json!({"enum": [1], "anyOf": [{"items": {"$ref": "#/x"}}]})
        ));
        assert!(refers(
            &json!({"enum": [1], "not": {"$dynamicRef": "#meta"}})
        ));
        // A root the validator would reject is not needed by a node that does not refer
        // into it, so the node's values are still filtered.
        let root = json!({"definitions": {"bad": {"type": 12}}});
        let node = json!({"enum": ["a", "bb"], "not": {"maxLength": 1}});
        assert_eq!(keep(root.clone(), node), vec![json!("bb")]);
        let node = json!({"enum": ["a", "bb"], "not": {"$ref": "#/definitions/bad"}});
        let values = candidates(node.as_object().unwrap()).unwrap();
        assert_eq!(filter(&root, &node, &values), None);
    }

    #[test]
    fn plain_enums_need_no_validator() {
        assert!(candidates(
            json!({"type": "string", "enum": ["a"]})
                .as_object()
                .unwrap()
        )
        .is_none());
        assert!(candidates(json!({"not": {"type": "string"}}).as_object().unwrap()).is_none());
        // Vendor keys assert nothing; an assertion lowering leaves to the validator does.
        let m = json!({"enum": ["a"], "x-prompt": "p", "default": "a"});
        assert!(candidates(m.as_object().unwrap()).is_none());
        let m = json!({"enum": ["a"], "x-prompt": "p", "not": {"const": "b"}});
        assert_eq!(candidates(m.as_object().unwrap()), Some(vec![json!("a")]));
    }

    #[test]
    fn draft_dependent_values_are_not_decided() {
        // `items` as an array is a tuple before 2020-12 and an error-free unknown shape
        // after it: [1, "x"] passes under one reading only.
        let node = json!({"enum": [[1, "x"]], "items": [{"type": "integer"}, {"type": "integer"}]});
        let values = candidates(node.as_object().unwrap()).unwrap();
        assert_eq!(filter(&json!({}), &node, &values), None);
    }
}
