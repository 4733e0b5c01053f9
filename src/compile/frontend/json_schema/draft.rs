//! What the declared draft changes before lowering: in drafts 3 to 7 a `$ref` stands
//! alone and its sibling keywords are ignored (2019-09 made them apply alongside).
//!
//! Lowering itself follows 2019-09 and later, where a sibling narrows the reference; for
//! a schema that declares an older draft that would reject valid instances, so such
//! schemas have their `$ref` siblings removed first. Annotations stay (`definitions`
//! beside a root `$ref` is how those drafts hold their definitions). Depends on
//! `resolve::ASSERTIONS` and `serde_json`.

use std::borrow::Cow;

use serde_json::Value;

use super::resolve::ASSERTIONS;

/// Keywords whose value is one schema.
pub(super) const ONE: &[&str] = &[
    "additionalItems",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "items",
];
/// Keywords whose value is a list of schemas.
pub(super) const LIST: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems", "items"];
/// Keywords whose value maps names to schemas.
pub(super) const MAP: &[&str] = &[
    "properties",
    "patternProperties",
    "definitions",
    "$defs",
    "dependentSchemas",
    "dependencies",
];

/// Whether the root's `$schema` names draft 3, 4, 6 or 7.
pub fn ref_overrides_siblings(root: &Value) -> bool {
    root.get("$schema")
        .and_then(Value::as_str)
        .is_some_and(|s| {
            ["draft-03", "draft-04", "draft-06", "draft-07"]
                .iter()
                .any(|d| s.contains(d))
        })
}

/// The schema as lowering must see it: unchanged unless it declares a draft where `$ref`
/// overrides its siblings, then with every such sibling assertion removed.
pub fn normalize(root: &Value) -> Cow<'_, Value> {
    if !ref_overrides_siblings(root) {
        return Cow::Borrowed(root);
    }
    let mut out = root.clone();
    strip(&mut out);
    Cow::Owned(out)
}

/// Removes the assertions beside a string `$ref` in this schema and every subschema
/// (only at schema positions: `enum` and `const` values are data and stay as written).
fn strip(node: &mut Value) {
    let Value::Object(m) = node else { return };
    if m.get("$ref").is_some_and(Value::is_string) {
        m.retain(|k, _| k == "$ref" || !ASSERTIONS.contains(&k.as_str()));
    }
    for (k, v) in m.iter_mut() {
        let k = k.as_str();
        if ONE.contains(&k) && v.is_object() {
            strip(v);
        }
        if LIST.contains(&k) {
            if let Value::Array(items) = v {
                items.iter_mut().for_each(strip);
            }
        }
        if MAP.contains(&k) {
            if let Value::Object(named) = v {
                // `dependencies` also maps names to lists of names: those are not objects.
                named.values_mut().for_each(strip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn siblings_of_ref_go_only_under_old_drafts() {
        let body = json!({
            "definitions": {"s": {"type": "string"}},
            "properties": {
                "a": {"$ref": "#/definitions/s", "maxLength": 3, "description": "kept"},
                "b": {"enum": [{"$ref": "x", "type": "data"}]},
                "c": {"items": [{"$ref": "#/definitions/s", "minLength": 1}]}
            }
        });
        let mut old = body.clone();
        old["$schema"] = json!("http://json-schema.org/draft-07/schema#");
        let n = normalize(&old).into_owned();
        assert_eq!(
            n["properties"]["a"],
            json!({"$ref": "#/definitions/s", "description": "kept"})
        );
        // Data inside `enum` is not a schema.
        assert_eq!(n["properties"]["b"], body["properties"]["b"]);
        assert_eq!(
            n["properties"]["c"]["items"][0],
            json!({"$ref": "#/definitions/s"})
        );
        let mut new = body.clone();
        new["$schema"] = json!("https://json-schema.org/draft/2020-12/schema");
        assert_eq!(*normalize(&new), new);
        assert_eq!(*normalize(&body), body);
    }
}
