//! The memo key of a schema node: what lowering reads of it, written as one string.
//!
//! Two nodes with equal keys lower to the same language, so they share one nonterminal.
//! The key keeps only assertions ([`ASSERTIONS`]) at schema positions, recursively:
//! annotations (`description`, `title`, vendor `x-…` keys) and `definitions` constrain
//! nothing, and local `$ref`s resolve from the root wherever they stand, so dropping them
//! loses nothing. Generated schemas (Kubernetes, OpenAPI) repeat one definition inline
//! under many descriptions; keyed by full text each copy was its own nonterminal (and
//! its own LR and automaton states). Depends on `draft`'s keyword positions,
//! `resolve::ASSERTIONS` and `serde_json`.

use serde_json::Value;

use super::draft::{LIST, MAP, ONE};
use super::resolve::ASSERTIONS;

/// The key of a schema node: its assertions (in the order written) with every subschema
/// keyed the same way; values that are data (`enum`, `const`, `required`…) verbatim.
pub fn schema_key(node: &Value) -> String {
    let mut out = String::new();
    write_schema(node, &mut out);
    out
}

fn write_schema(node: &Value, out: &mut String) {
    let Value::Object(m) = node else {
        write_data(node, out);
        return;
    };
    out.push('{');
    for (k, v) in m.iter().filter(|(k, _)| ASSERTIONS.contains(&k.as_str())) {
        write_data(&Value::String(k.clone()), out);
        out.push(':');
        let k = k.as_str();
        match v {
            Value::Object(_) if ONE.contains(&k) => write_schema(v, out),
            Value::Array(items) if LIST.contains(&k) => {
                out.push('[');
                for item in items {
                    write_schema(item, out);
                    out.push(',');
                }
                out.push(']');
            }
            Value::Object(named) if MAP.contains(&k) => {
                out.push('{');
                for (name, sub) in named {
                    write_data(&Value::String(name.clone()), out);
                    out.push(':');
                    // `dependencies` also maps names to lists of names: data, kept whole.
                    write_schema(sub, out);
                    out.push(',');
                }
                out.push('}');
            }
            _ => write_data(v, out),
        }
        out.push(',');
    }
    out.push('}');
}

fn write_data(v: &Value, out: &mut String) {
    // Serializing a `Value` into a string cannot fail (no non-string keys, no I/O).
    out.push_str(&serde_json::to_string(v).unwrap_or_default());
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn annotations_do_not_change_the_key_but_assertions_and_data_do() {
        let a = json!({
            "type": "object", "description": "one",
            "properties": {"x": {"type": "string", "title": "X", "x-k8s": true}},
            "definitions": {"d": {"type": "null"}}
        });
        let b = json!({
            "type": "object", "description": "two",
            "properties": {"x": {"type": "string"}}
        });
        assert_eq!(schema_key(&a), schema_key(&b));
        // A property named like an annotation is data, not an annotation.
        let c = json!({"type": "object", "properties": {"description": {"type": "string"}}});
        let d = json!({"type": "object", "properties": {"title": {"type": "string"}}});
        assert_ne!(schema_key(&c), schema_key(&d));
        // `enum` values are data even when they look like schemas.
        let e = json!({"enum": [{"description": "a"}]});
        let f = json!({"enum": [{"description": "b"}]});
        assert_ne!(schema_key(&e), schema_key(&f));
        assert_ne!(
            schema_key(&json!({"items": {"minimum": 1}})),
            schema_key(&json!({"items": {"minimum": 2}}))
        );
        assert_ne!(
            schema_key(&json!({"anyOf": [{"type": "string"}], "description": "z"})),
            schema_key(&json!({"anyOf": [{"type": "number"}]}))
        );
    }
}
