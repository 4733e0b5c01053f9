//! Complements of simple schemas, as the `not` forms lowering compiles: what `oneOf`
//! needs to make overlapping alternatives exclusive and `if`/`then`/`else` needs for
//! its `else` branch. Depends on the string, format and resolve helpers.

use regex_syntax::hir::{Hir, Repetition};
use serde_json::{json, Map, Value};

use super::format::{format, Format};
use super::lower::{integer_divisor, MAX_COUNTED_LENGTH};
use super::resolve::{contains_list, type_set, Flat, Resolver, ASSERTIONS};
use super::string::{any_char, parse_pattern, parse_value_regex};

/// The values of an `enum` / `const` (alone in `m`) when they are all strings, booleans
/// or null: the ones whose exclusion `not` compiles.
pub(super) fn scalar_values(m: &Map<String, Value>) -> Option<Vec<Value>> {
    let keys: Vec<&str> = m
        .keys()
        .map(String::as_str)
        .filter(|k| ASSERTIONS.contains(k))
        .collect();
    let values = match keys.as_slice() {
        ["enum"] => m["enum"].as_array()?.clone(),
        ["const"] => vec![m["const"].clone()],
        _ => return None,
    };
    values
        .iter()
        .all(|v| matches!(v, Value::String(_) | Value::Bool(_) | Value::Null))
        .then_some(values)
}

/// Whether `not` of this property schema compiles: a scalar `enum` / `const`, a
/// `type` list, one string language, or an `anyOf` of those.
fn negatable_value(m: &Map<String, Value>) -> bool {
    let keys: Vec<&str> = m
        .keys()
        .map(String::as_str)
        .filter(|k| ASSERTIONS.contains(k))
        .collect();
    let any_of = || {
        m["anyOf"].as_array().is_some_and(|alts| {
            alts.iter()
                .all(|a| a.as_object().is_some_and(negatable_value))
        })
    };
    (keys == ["type"] && type_negatable(&m["type"]))
        || (keys == ["anyOf"] && any_of())
        || scalar_values(m).is_some()
        || string_language(m).is_some()
}

/// Whether `not: {type: v}` compiles: any valid type list (numbers that are not
/// integers compile as `number::NON_INTEGER`).
fn type_negatable(v: &Value) -> bool {
    type_set(Some(v)).is_some()
}

/// The complement of a subschema one level below a complemented one (a property value,
/// the items): empty when it asserts nothing, everything (`true`) when it is `false`.
fn complement_of(
    sub: &Value,
    pointer: &str,
    resolver: &Resolver<'_>,
    depth: usize,
) -> Option<Vec<(Value, String)>> {
    let f = resolver.probe(|r| r.flatten(sub, pointer).ok())?;
    if f.never {
        return Some(vec![(Value::Bool(true), pointer.to_string())]);
    }
    complement_at(&f, pointer, resolver, depth + 1, None)
}

/// Arrays none of whose items match `c`: every item in its complement.
fn no_item_matches(
    c: &Value,
    pointer: &str,
    resolver: &Resolver<'_>,
    depth: usize,
    at: &str,
) -> Option<(Value, String)> {
    let negated = complement_of(c, pointer, resolver, depth)?;
    let form = if negated.is_empty() {
        // Every item would match: only the empty array has none.
        json!({ "type": "array", "maxItems": 0 })
    } else {
        json!({ "type": "array", "items": any_of(negated) })
    };
    Some((form, at.to_string()))
}

/// The union of complement forms as one schema.
pub(super) fn any_of(forms: Vec<(Value, String)>) -> Value {
    let alts: Vec<Value> = forms.into_iter().map(|(v, _)| v).collect();
    json!({ "anyOf": alts })
}

/// The value language of a string schema that `not` can exclude: `m` holds (besides
/// annotations and an optional `type: string`) only one `pattern`, one regular `format`,
/// an `enum` / `const` of strings, or length bounds up to [`MAX_COUNTED_LENGTH`]. The
/// flag says whether every non-string satisfies `m` (a string keyword without `type`).
pub(super) fn string_language(m: &Map<String, Value>) -> Option<(Hir, bool)> {
    let typed = m.contains_key("type");
    if typed && type_set(m.get("type")) != Some(vec!["string".to_string()]) {
        return None;
    }
    let keys: Vec<&str> = m
        .keys()
        .map(String::as_str)
        .filter(|k| ASSERTIONS.contains(k) && *k != "type")
        .collect();
    let literals = |vs: &[Value]| -> Option<Hir> {
        let alts: Option<Vec<Hir>> = vs
            .iter()
            .map(|v| v.as_str().map(|s| Hir::literal(s.as_bytes())))
            .collect();
        Some(Hir::alternation(alts?))
    };
    let h = match keys.as_slice() {
        ["pattern"] => parse_pattern(m["pattern"].as_str()?).ok(),
        ["format"] => match format(m["format"].as_str()?) {
            Format::Regular(re) => Some(parse_value_regex(&re)),
            _ => None,
        },
        // Listed values: a non-string is not one of them.
        ["enum"] => return literals(m["enum"].as_array()?).map(|h| (h, false)),
        ["const"] => return literals(std::slice::from_ref(&m["const"])).map(|h| (h, false)),
        ["minLength"] | ["maxLength"] | ["minLength", "maxLength"] | ["maxLength", "minLength"] => {
            let get = |k: &str| {
                m.get(k)
                    .map(|v| v.as_u64().filter(|&n| n <= MAX_COUNTED_LENGTH))
            };
            let (lo, hi) = (get("minLength"), get("maxLength"));
            // A bound that is not a small count: not compiled.
            if lo == Some(None) || hi == Some(None) {
                return None;
            }
            Some(Hir::repetition(Repetition {
                min: lo.flatten().unwrap_or(0) as u32,
                max: hi.flatten().map(|x| x as u32),
                greedy: true,
                sub: Box::new(any_char()),
            }))
        }
        _ => None,
    };
    h.map(|h| (h, !typed))
}

/// Every string value.
pub(super) fn any_string_hir() -> Hir {
    Hir::repetition(Repetition {
        min: 0,
        max: None,
        greedy: true,
        sub: Box::new(any_char()),
    })
}

/// How deep complements of property schemas may nest (recursive definitions).
const MAX_COMPLEMENT_DEPTH: usize = 8;

/// The complement of a flattened schema as schemas whose union it is (¬(A ∧ B) is
/// ¬A ∨ ¬B), for conjuncts whose negation `not` compiles: a `type` list, `required`
/// names (objects lacking one of them; non-objects satisfy `required`), one string
/// language, scalar `enum`/`const`, count and number bounds (the opposite bound, for
/// values of the bounded type), `not` (its schema itself), `properties`, `items` and
/// `contains` whose schemas have
/// such complements themselves, and pending `anyOf` / `oneOf` whose alternatives do.
/// `None` when some conjunct has no such negation; empty (no value) when `f` asserts
/// nothing. `resolver` flattens property schemas (lenient drops unreported).
pub(super) fn complement(
    f: &Flat,
    pointer: &str,
    resolver: &Resolver<'_>,
) -> Option<Vec<(Value, String)>> {
    complement_at(f, pointer, resolver, 0, None)
}

/// [`complement`] among objects whose names are all in `names` (a branch with
/// `additionalProperties: false`): there `additionalProperties` of `f` fails exactly when
/// one of those names that `f` does not declare is present (with, for a schema, a value it
/// rejects). Values of other types are complemented as by [`complement`].
pub(super) fn complement_within(
    f: &Flat,
    pointer: &str,
    resolver: &Resolver<'_>,
    names: &[String],
) -> Option<Vec<(Value, String)>> {
    complement_at(f, pointer, resolver, 0, Some(names))
}

fn complement_at(
    f: &Flat,
    pointer: &str,
    resolver: &Resolver<'_>,
    depth: usize,
    names: Option<&[String]>,
) -> Option<Vec<(Value, String)>> {
    if depth > MAX_COMPLEMENT_DEPTH {
        return None;
    }
    let at = format!("{pointer}/not");
    let mut out = Vec::new();
    // The values of type `ty` that break a bound: the opposite bound on that type.
    let opposite = |ty: &str, k: &str, v: &Value| (json!({ "type": ty, k: v }), at.clone());
    for (k, v) in &f.base {
        match k.as_str() {
            "type" if type_negatable(v) => out.push((json!({ "not": { "type": v } }), at.clone())),
            "required" => {
                for name in v.as_array()? {
                    let name = name.as_str()?;
                    out.push((json!({ "not": { "required": [name] } }), at.clone()));
                }
            }
            _ if !ASSERTIONS.contains(&k.as_str()) => {}
            // A format stackmask does not know is an annotation: it asserts nothing.
            "format"
                if v.as_str()
                    .is_some_and(|f| matches!(format(f), Format::Annotation)) => {}
            "pattern" | "format" | "minLength" | "maxLength" => {
                // The conjunct alone, negated as one string language (or not at all).
                let alone = Map::from_iter([(k.clone(), v.clone())]);
                string_language(&alone)?;
                out.push((json!({ "not": alone }), at.clone()));
            }
            "enum" | "const" => {
                let alone = Map::from_iter([(k.clone(), v.clone())]);
                scalar_values(&alone)?;
                out.push((json!({ "not": alone }), at.clone()));
            }
            "minimum" => out.push(opposite("number", "exclusiveMaximum", v)),
            "exclusiveMinimum" if v.is_number() => out.push(opposite("number", "maximum", v)),
            "maximum" => out.push(opposite("number", "exclusiveMinimum", v)),
            "exclusiveMaximum" if v.is_number() => out.push(opposite("number", "minimum", v)),
            "minItems" | "minProperties" => {
                let n = v.as_u64()?;
                let ty = if k == "minItems" { "array" } else { "object" };
                let max = if k == "minItems" {
                    "maxItems"
                } else {
                    "maxProperties"
                };
                // A minimum of zero holds for every value.
                if n > 0 {
                    out.push(opposite(ty, max, &json!(n - 1)));
                }
            }
            "maxItems" | "maxProperties" => {
                let n = v.as_u64()?;
                let (ty, min) = if k == "maxItems" {
                    ("array", "minItems")
                } else {
                    ("object", "minProperties")
                };
                out.push(opposite(ty, min, &json!(n.checked_add(1)?)));
            }
            // Numbers that are no multiple (lowered as remainder automata).
            "multipleOf" if integer_divisor(v).is_some() => {
                out.push((json!({ "not": { "multipleOf": v } }), at.clone()))
            }
            // ¬¬S is S: the negated schema itself, lowered as any schema is.
            "not" => out.push((v.clone(), at.clone())),
            "additionalProperties" | "items" if v == &Value::Bool(true) => {}
            "additionalProperties"
                if names.is_some() && !f.base.contains_key("patternProperties") =>
            {
                let declared = f.base.get("properties").and_then(Value::as_object);
                let names = names.unwrap_or_default();
                out.extend(undeclared_complement(
                    v, declared, names, pointer, resolver, depth, &at,
                )?);
            }
            // Arrays with an item the schema rejects; with some item at all, for `false`.
            "items" if v == &Value::Bool(false) => {
                out.push((json!({ "type": "array", "minItems": 1 }), at.clone()))
            }
            "items" if v.is_object() => {
                let negated = complement_of(v, &format!("{pointer}/items"), resolver, depth)?;
                if !negated.is_empty() {
                    out.push((
                        json!({ "type": "array", "contains": any_of(negated) }),
                        at.clone(),
                    ));
                }
            }
            // Arrays none of whose items match: every item in the complement.
            "contains" => {
                for (i, c) in contains_list(v).iter().enumerate() {
                    let cp = format!("{pointer}/contains/{i}");
                    out.push(no_item_matches(c, &cp, resolver, depth, &at)?);
                }
            }
            "properties" => out.extend(properties_complement(
                v.as_object()?,
                names,
                pointer,
                resolver,
                depth,
                &at,
            )?),
            _ => return None,
        }
    }
    for d in &f.disjunctions {
        out.extend(disjunction_complement(
            d.keyword,
            &d.alternatives,
            resolver,
            depth,
            &at,
        )?);
    }
    Some(out)
}

/// The objects that break `additionalProperties: v` when the object's names are known
/// (`names`; those `declared` in `properties` aside): one of the undeclared names present
/// with a value `v` rejects (any value, for `false`).
fn undeclared_complement(
    v: &Value,
    declared: Option<&Map<String, Value>>,
    names: &[String],
    pointer: &str,
    resolver: &Resolver<'_>,
    depth: usize,
    at: &str,
) -> Option<Vec<(Value, String)>> {
    let undeclared = names
        .iter()
        .filter(|k| !declared.is_some_and(|d| d.contains_key(*k)));
    let value = match v {
        Value::Bool(false) => None,
        Value::Object(_) => {
            let ap = format!("{pointer}/additionalProperties");
            let negated = complement_of(v, &ap, resolver, depth)?;
            if negated.is_empty() {
                return Some(Vec::new());
            }
            Some(any_of(negated))
        }
        _ => return None,
    };
    let mut out = Vec::new();
    for k in undeclared {
        let mut o = json!({ "type": "object", "required": [k] });
        if let Some(value) = &value {
            o["properties"] = json!({ k: value });
        }
        out.push((o, at.to_string()));
    }
    Some(out)
}

/// The objects that break `properties`: one that has a property with a value its schema
/// rejects (a missing property satisfies `properties`). Within a branch whose names are
/// known (`names`), a property it cannot have breaks nothing.
fn properties_complement(
    props: &Map<String, Value>,
    names: Option<&[String]>,
    pointer: &str,
    resolver: &Resolver<'_>,
    depth: usize,
    at: &str,
) -> Option<Vec<(Value, String)>> {
    let mut out = Vec::new();
    for (name, sub) in props {
        if names.is_some_and(|ns| !ns.contains(name)) {
            continue;
        }
        let with = |value: Option<Value>| {
            let mut o = json!({ "type": "object", "required": [name] });
            if let Some(value) = value {
                o["properties"] = json!({ name: value });
            }
            (o, at.to_string())
        };
        match sub {
            Value::Bool(true) => {}
            Value::Bool(false) => out.push(with(None)),
            Value::Object(m) if negatable_value(m) => out.push(with(Some(json!({ "not": sub })))),
            Value::Object(_) => {
                let sp = format!("{pointer}/properties/{name}");
                let negated = complement_of(sub, &sp, resolver, depth)?;
                // An empty complement: the schema holds for every value.
                if !negated.is_empty() {
                    out.push(with(Some(any_of(negated))));
                }
            }
            _ => return None,
        }
    }
    Some(out)
}

/// The complement of one pending `anyOf` / `oneOf`: no alternative holds (every one's
/// complement at once) and, for `oneOf`, two alternatives hold together.
fn disjunction_complement(
    kind: &str,
    alts: &[(Value, String)],
    resolver: &Resolver<'_>,
    depth: usize,
    at: &str,
) -> Option<Vec<(Value, String)>> {
    let mut none = Vec::new();
    let mut possible = true;
    for (alt, ap) in alts {
        let negated = complement_of(alt, ap, resolver, depth)?;
        // An alternative that holds for every value: "none holds" is impossible.
        possible &= !negated.is_empty();
        none.push(any_of(negated));
    }
    let mut out = Vec::new();
    if possible {
        out.push((json!({ "allOf": none }), at.to_string()));
    }
    match kind {
        "anyOf" => {}
        "oneOf" => {
            for i in 0..alts.len() {
                for j in i + 1..alts.len() {
                    out.push((json!({ "allOf": [alts[i].0, alts[j].0] }), at.to_string()));
                }
            }
        }
        _ => return None,
    }
    Some(out)
}
