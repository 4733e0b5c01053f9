//! `oneOf`: decided type by type, by disjointness where it can be proven, else by making
//! each alternative exclusive with the others' complements.

use super::*;

impl<'a> Lowerer<'a> {
    /// For each branch of a `oneOf`, the complement of every other alternative (see
    /// `complement`); where one has none, its complement within the branch's finite set
    /// of names (`complement_within`). `None` when some pair has neither.
    pub(super) fn pairwise_complements(
        &self,
        branches: &[Flat],
        alt_flats: &[(Flat, &str)],
    ) -> Option<Vec<Vec<Forms>>> {
        // Each alternative's complement, when it has a compiled form (computed only here:
        // deep ones are costly, and disjoint alternatives never need them).
        let complements: Vec<Option<Forms>> = alt_flats
            .iter()
            .map(|(af, ap)| self.resolver.probe(|r| complement(af, ap, r)))
            .collect();
        let mut out = Vec::with_capacity(branches.len());
        for (i, b) in branches.iter().enumerate() {
            let names = closed_names(&b.base);
            let mut cs = Vec::new();
            for (j, c) in complements.iter().enumerate() {
                if i == j {
                    continue;
                }
                let c = match (c, &names) {
                    (Some(c), _) => c.clone(),
                    (None, Some(names)) => {
                        let (af, ap) = &alt_flats[j];
                        self.resolver
                            .probe(|r| complement_within(af, ap, r, names))?
                    }
                    (None, None) => return None,
                };
                cs.push(c);
            }
            out.push(cs);
        }
        Some(out)
    }

    /// The values satisfying exactly one of `alts` when every alternative is a finite
    /// list: the validator decides each listed value (see `finite`), so overlapping
    /// lists, numerically equal spellings and context keywords are all exact.
    pub(super) fn finite_oneof(&self, alts: &[(Value, String)]) -> Option<Vec<Value>> {
        let values = oneof_candidates(alts, &self.resolver)?;
        let node =
            serde_json::json!({ "oneOf": alts.iter().map(|(v, _)| v.clone()).collect::<Vec<_>>() });
        finite::filter(self.resolver.root(), &node, &values)
    }
}

/// `oneOf` decided type by type: for each JSON type, either at least two alternatives
/// accept all its values (no value of it satisfies exactly one: the type is excluded) or
/// the branches restricted to it are pairwise disjoint. Returns the excluded types, or
/// `None` when some type is neither (then the caller needs complements or refuses).
pub(super) fn oneof_by_type(
    branches: &[Flat],
    alone: &[Map<String, Value>],
    own: &[Disjunctions],
    resolver: &Resolver<'_>,
) -> Option<Vec<&'static str>> {
    let mut excluded = Vec::new();
    for t in TYPES {
        let universal = (0..alone.len())
            .filter(|&i| own[i].is_empty() && accepts_all_of(&alone[i], t))
            .count();
        if universal >= 2 {
            excluded.push(t);
            continue;
        }
        // The branches restricted to `t` (integers are numbers).
        let only = Map::from_iter([("type".to_string(), Value::String(t.to_string()))]);
        let restricted: Vec<Option<Map<String, Value>>> = branches
            .iter()
            .map(|b| resolver.merge(b.base.clone(), only.clone(), "").ok())
            .collect();
        for i in 0..branches.len() {
            for j in i + 1..branches.len() {
                let (Some(a), Some(b)) = (&restricted[i], &restricted[j]) else {
                    return None;
                };
                if !flats_disjoint((a, &own[i]), (b, &own[j]), resolver, 0) {
                    return None;
                }
            }
        }
    }
    Some(excluded)
}

/// The values a `oneOf` can take when every alternative lists its values
/// (`enum`/`const`, possibly through `$ref` or `allOf`), in first-listed order.
pub(super) fn oneof_candidates(
    alts: &[(Value, String)],
    resolver: &Resolver<'_>,
) -> Option<Vec<Value>> {
    let mut out: Vec<Value> = Vec::new();
    for (alt, at) in alts {
        let f = resolver.probe(|r| r.flatten(alt, at).ok())?;
        if f.never {
            continue;
        }
        if !f.disjunctions.is_empty() {
            return None;
        }
        let listed = match (f.base.get("const"), f.base.get("enum")) {
            (Some(c), _) => vec![c.clone()],
            (_, Some(Value::Array(e))) => e.clone(),
            _ => return None,
        };
        // Kept apart when only numerically equal (1 and 1.0): each spelling is a value.
        for v in listed {
            if !out.contains(&v) {
                out.push(v);
            }
        }
    }
    Some(out)
}

/// Schemas (with their pointers) whose union is a complement.
type Forms = Vec<(Value, String)>;

/// Every ordered split of the set `set` (a bit set) into nonempty groups.
pub(super) fn ordered_splits(set: u32) -> Vec<Vec<u32>> {
    if set == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    // Every nonempty subset of `set` as the first group.
    let mut g = set;
    while g != 0 {
        for mut rest in ordered_splits(set & !g) {
            rest.insert(0, g);
            out.push(rest);
        }
        g = (g - 1) & set;
    }
    out
}

/// Whether two flat schemas, each with disjunctions still pending, provably accept no
/// common value: their keywords are disjoint, or every alternative of one pending
/// disjunction (with the keywords it is conjoined with) is disjoint from the other side.
/// Sound because a schema is contained in the union of any one disjunction's alternatives.
pub(super) fn flats_disjoint(
    a: Pending<'_>,
    b: Pending<'_>,
    resolver: &Resolver<'_>,
    depth: usize,
) -> bool {
    // Alternatives that nest disjunctions in themselves (through `$ref`) recurse forever.
    if depth > 6 {
        return false;
    }
    if disjoint(a.0, b.0, resolver, 0) {
        return true;
    }
    let split = |x: Pending<'_>, y: Pending<'_>| {
        x.1.iter().any(|d| {
            d.alternatives.iter().all(|(alt, at)| {
                let Ok(af) = resolver.flatten(alt, at) else {
                    return false;
                };
                if af.never {
                    return true;
                }
                // The conjunction with x's keywords only sharpens the proof; when the
                // two cannot be merged, the alternative alone still contains it.
                let base = resolver
                    .merge(af.base.clone(), x.0.clone(), at)
                    .unwrap_or(af.base);
                flats_disjoint((&base, &af.disjunctions), y, resolver, depth + 1)
            })
        })
    };
    split(a, b) || split(b, a)
}

/// Whether two flat schemas provably accept no common value.
pub(super) fn disjoint(
    a: &Map<String, Value>,
    b: &Map<String, Value>,
    resolver: &Resolver<'_>,
    depth: usize,
) -> bool {
    // Recursive definitions can nest required properties forever; past this, not proven.
    if depth > 16 {
        return false;
    }
    let types_of = |m: &Map<String, Value>| -> Vec<String> {
        let listed: Option<Vec<Value>> = match (m.get("const"), m.get("enum")) {
            (Some(c), _) => Some(vec![c.clone()]),
            (_, Some(Value::Array(e))) => Some(e.clone()),
            _ => None,
        };
        if let Some(vals) = listed {
            return vals.iter().map(|v| json_type_of(v).to_string()).collect();
        }
        type_set(m.get("type")).unwrap_or_else(|| TYPES.iter().map(|s| s.to_string()).collect())
    };
    // `not: {required: [..]}` fails on every non-object (`required` holds for them).
    let not_required = |m: &Map<String, Value>| -> Option<Vec<String>> {
        let n = m.get("not")?.as_object()?;
        let names: Vec<String> = n
            .get("required")?
            .as_array()?
            .iter()
            .map(|x| x.as_str().map(str::to_string))
            .collect::<Option<_>>()?;
        (n.len() == 1 && !names.is_empty()).then_some(names)
    };
    let objects_only = |m: &Map<String, Value>, mut ts: Vec<String>| {
        if not_required(m).is_some() {
            ts.retain(|t| t == "object");
        }
        ts
    };
    let (ta, tb) = (objects_only(a, types_of(a)), objects_only(b, types_of(b)));
    let overlaps = |x: &str, y: &str| {
        x == y || (x == "number" && y == "integer") || (x == "integer" && y == "number")
    };
    let shared: Vec<&String> = ta
        .iter()
        .filter(|x| tb.iter().any(|y| overlaps(x, y)))
        .collect();
    if shared.is_empty() {
        return true;
    }
    let values = |m: &Map<String, Value>| -> Option<Vec<Value>> {
        match (m.get("const"), m.get("enum")) {
            (Some(c), _) => Some(vec![c.clone()]),
            (_, Some(Value::Array(e))) => Some(e.clone()),
            _ => None,
        }
    };
    if let (Some(x), Some(y)) = (values(a), values(b)) {
        return !x.iter().any(|v| y.iter().any(|w| json_equal(v, w)));
    }
    if shared.iter().any(|t| *t != "object") {
        return false;
    }
    // Objects: a required property whose values are disjoint in both, or a required
    // name the other side forbids.
    let props = |m: &Map<String, Value>| {
        m.get("properties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let req = |m: &Map<String, Value>| -> Vec<String> {
        m.get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let (pa, pb, ra, rb) = (props(a), props(b), req(a), req(b));
    let resolved = |v: &Value| -> Map<String, Value> {
        resolver.flatten(v, "").map(|f| f.base).unwrap_or_default()
    };
    for k in ra.iter().filter(|k| rb.contains(k)) {
        if let (Some(x), Some(y)) = (pa.get(k), pb.get(k)) {
            if disjoint(&resolved(x), &resolved(y), resolver, depth + 1) {
                return true;
            }
        }
    }
    let forbids = |m: &Map<String, Value>, p: &Map<String, Value>, name: &str| {
        m.get("additionalProperties") == Some(&Value::Bool(false))
            && !m.contains_key("patternProperties")
            && !p.contains_key(name)
    };
    // One side lacks one of the names the other requires.
    let lacks = |m: &Map<String, Value>, req: &[String]| {
        not_required(m).is_some_and(|names| names.iter().all(|n| req.contains(n)))
    };
    ra.iter().any(|k| forbids(b, &pb, k))
        || rb.iter().any(|k| forbids(a, &pa, k))
        || lacks(a, &rb)
        || lacks(b, &ra)
}
