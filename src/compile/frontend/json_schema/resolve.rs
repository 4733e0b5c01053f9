//! `$ref` resolution and `allOf` merging: turning a schema node into one flat map of
//! keywords plus the disjunctions (`anyOf`, `oneOf`) still to distribute over it.
//!
//! Merging is exact or refused: keywords whose conjunction is again one keyword
//! (`type` ∩, `required` ∪, bounds max/min, `enum` ∩, subschemas as nested `allOf`) are
//! merged; two different `pattern`s, `format`s and the like are refused by name.
//! `additionalProperties` is merged with each side's view of which names are
//! "additional", so `allOf` never widens an object.

use serde_json::{Map, Value};

use super::SchemaError;

/// Every keyword that asserts something about an instance (drafts 4 to 2020-12, plus
/// OpenAPI's `nullable`). Any other key is an annotation or a vendor extension and
/// constrains nothing, as the specification says of unknown keywords.
pub const ASSERTIONS: &[&str] = &[
    "type",
    "enum",
    "const",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "format",
    "items",
    "prefixItems",
    "additionalItems",
    "maxItems",
    "minItems",
    "uniqueItems",
    "contains",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties",
    "required",
    "properties",
    "patternProperties",
    "additionalProperties",
    "dependencies",
    "dependentRequired",
    "dependentSchemas",
    "propertyNames",
    "if",
    "then",
    "else",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "$ref",
    "$dynamicRef",
    "$recursiveRef",
    "unevaluatedItems",
    "unevaluatedProperties",
    "nullable",
];

/// The schemas some item must each match: a `contains`, or the list merged `allOf`
/// members leave (see `merge`); likewise the patterns a string must all match.
pub fn contains_list(v: &Value) -> Vec<Value> {
    match v {
        Value::Array(all) => all.clone(),
        one => vec![one.clone()],
    }
}

/// How deep `$ref`/`allOf` inlining may nest before it is taken to be a cycle.
const MAX_INLINE_DEPTH: usize = 24;
/// Most schemas one flattening may inline: `allOf` members that reference the same
/// definitions several times would otherwise expand exponentially within the depth limit.
const MAX_INLINED: usize = 4096;

/// A combinator still to distribute over a node: `anyOf`, `oneOf` (or a complement, see
/// `lower`), with each alternative's schema and JSON pointer.
#[derive(Debug, Clone)]
pub struct Disjunction {
    /// The keyword it is distributed as.
    pub keyword: &'static str,
    /// Each alternative and its pointer.
    pub alternatives: Vec<(Value, String)>,
    /// Set when a `properties` was met before the keyword (in the schema text, with
    /// `$ref` and `allOf` members in place), so that branches list the node's properties
    /// before the alternative's, as the text does.
    pub after_properties: bool,
}

impl Disjunction {
    /// A disjunction of `alternatives` distributed as `keyword`.
    pub fn new(
        keyword: &'static str,
        alternatives: Vec<(Value, String)>,
        after_properties: bool,
    ) -> Self {
        Self {
            keyword,
            alternatives,
            after_properties,
        }
    }
}

/// A node split into its own keywords and the disjunctions left to distribute.
#[derive(Debug, Clone)]
pub struct Flat {
    /// Conjunction of every inlined `$ref` and `allOf` member (no combinators left).
    pub base: Map<String, Value>,
    /// Each `anyOf` / `oneOf` met (see [`Disjunction`]).
    pub disjunctions: Vec<Disjunction>,
    /// Set when some conjunct is the `false` schema.
    pub never: bool,
}

/// Resolves local references against the document root, and merges keyword maps.
pub struct Resolver<'a> {
    root: &'a Value,
    lenient: bool,
    /// Keywords dropped in lenient mode while resolving and merging.
    dropped: std::cell::RefCell<Vec<super::Dropped>>,
    /// Schemas the current flattening may still inline (see [`MAX_INLINED`]).
    budget: std::cell::Cell<usize>,
}

fn unsupported(keyword: &str, pointer: &str, reason: impl Into<String>) -> SchemaError {
    SchemaError::Unsupported {
        keyword: keyword.to_string(),
        pointer: pointer.to_string(),
        reason: reason.into(),
    }
}

/// JSON Schema's equality of instances: numbers by mathematical value (`1` equals
/// `1.0`), containers member by member, everything else structurally.
pub(super) fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let int = |n: &serde_json::Number| {
                n.as_i64()
                    .map(i128::from)
                    .or_else(|| n.as_u64().map(i128::from))
            };
            // An integral float equals an integer only when it is exactly that integer
            // (comparing both as f64 would equate neighbours above 2^53).
            let float_int = |f: f64, i: i128| f.fract() == 0.0 && f.abs() < 1e38 && f as i128 == i;
            match (int(x), int(y), x.as_f64(), y.as_f64()) {
                (Some(i), Some(j), _, _) => i == j,
                (Some(i), None, _, Some(f)) | (None, Some(i), Some(f), _) => float_int(f, i),
                (None, None, Some(f), Some(g)) => f == g,
                _ => false,
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let hex = |b: u8| (b as char).to_digit(16);
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether a schema value constrains nothing (`true`, `{}` or annotations only).
pub fn is_trivial(v: &Value) -> bool {
    match v {
        Value::Bool(b) => *b,
        Value::Object(m) => m.keys().all(|k| !ASSERTIONS.contains(&k.as_str())),
        _ => false,
    }
}

/// `allOf [a, b]` as one value, simplified when either side is trivial or `false`.
pub fn conjoin(a: &Value, b: &Value) -> Value {
    if is_trivial(a) {
        return b.clone();
    }
    if is_trivial(b) || a == b {
        return a.clone();
    }
    if *a == Value::Bool(false) || *b == Value::Bool(false) {
        return Value::Bool(false);
    }
    serde_json::json!({ "allOf": [a, b] })
}

/// Before two maps merge: `items` of a map without `prefixItems` constrains every
/// element, but beside `prefixItems` it constrains only the later ones, so the other
/// side's tuple positions take it too.
fn distribute_items(target: &mut Map<String, Value>, other: &Map<String, Value>) {
    let Some(items) = other.get("items").filter(|i| !i.is_array()) else {
        return;
    };
    if other.contains_key("prefixItems") {
        return;
    }
    if let Some(Value::Array(prefix)) = target.get_mut("prefixItems") {
        for p in prefix.iter_mut() {
            *p = conjoin(p, items);
        }
    }
}

/// The disjunction of two schemas, simplified where one side decides it.
fn disjoin(a: &Value, b: &Value) -> Value {
    if is_trivial(a) || is_trivial(b) {
        return Value::Bool(true);
    }
    if *a == Value::Bool(false) || a == b {
        return b.clone();
    }
    if *b == Value::Bool(false) {
        return a.clone();
    }
    serde_json::json!({ "anyOf": [a, b] })
}

impl<'a> Resolver<'a> {
    /// The whole schema document local references resolve against.
    pub fn root(&self) -> &'a Value {
        self.root
    }

    /// A resolver for references inside `root` (`lenient`: drop what cannot be enforced).
    pub fn new(root: &'a Value, lenient: bool) -> Self {
        Self {
            root,
            lenient,
            dropped: Default::default(),
            budget: std::cell::Cell::new(MAX_INLINED),
        }
    }

    /// The keywords dropped so far.
    pub fn take_dropped(&self) -> Vec<super::Dropped> {
        std::mem::take(&mut self.dropped.borrow_mut())
    }

    /// Runs `f` as a probe: keywords it drops (lenient) are not reported and the
    /// inlining budget is restored, so a proof attempt leaves the compilation unchanged.
    /// Dropping only widens a schema, so what a probe proves disjoint stays disjoint.
    pub fn probe<T>(&self, f: impl FnOnce(&Self) -> T) -> T {
        let reported = self.dropped.borrow().len();
        let budget = self.budget.get();
        let out = f(self);
        self.dropped.borrow_mut().truncate(reported);
        self.budget.set(budget);
        out
    }

    /// `if: cond, then: a, else: b` as the alternatives `cond ∧ a` and `¬cond ∧ b`
    /// (disjoint by construction), when the complement of `cond` is one of the forms
    /// `not` compiles; `None` otherwise (the keywords are then refused where lowered).
    fn conditional(
        &self,
        cond: &Value,
        then: Option<&Value>,
        otherwise: Option<&Value>,
        pointer: &str,
        depth: usize,
    ) -> Option<Vec<(Value, String)>> {
        let yes = then.cloned().unwrap_or(Value::Bool(true));
        let no = otherwise.cloned().unwrap_or(Value::Bool(true));
        let at = format!("{pointer}/if");
        let cf = self.probe(|r| {
            let mut f = Flat {
                base: Map::new(),
                disjunctions: Vec::new(),
                never: false,
            };
            r.flatten_into(cond, &at, &mut f, depth + 1).ok().map(|_| f)
        })?;
        if cf.never {
            return Some(vec![(no, format!("{pointer}/else"))]);
        }
        let negated = super::complement::complement(&cf, &at, self)?;
        let mut alts = vec![(
            serde_json::json!({ "allOf": [cond, yes] }),
            format!("{pointer}/then"),
        )];
        if !negated.is_empty() {
            alts.push((
                serde_json::json!({ "allOf": [super::complement::any_of(negated), no] }),
                format!("{pointer}/else"),
            ));
        }
        Some(alts)
    }

    /// A refusal: an error, or (lenient) recorded so the caller can go on without it.
    fn refuse(&self, e: SchemaError) -> Result<(), SchemaError> {
        match e {
            SchemaError::Unsupported {
                keyword,
                pointer,
                reason,
            } if self.lenient => {
                self.dropped.borrow_mut().push(super::Dropped {
                    keyword,
                    pointer,
                    reason,
                });
                Ok(())
            }
            e => Err(e),
        }
    }

    /// Conjunction of two flat keyword maps; in lenient mode a keyword whose
    /// conjunction cannot be compiled keeps its first value and is reported.
    pub fn merge(
        &self,
        a: Map<String, Value>,
        b: Map<String, Value>,
        pointer: &str,
    ) -> Result<Map<String, Value>, SchemaError> {
        let mut b = b;
        loop {
            match merge(a.clone(), b.clone(), pointer) {
                Err(SchemaError::Unsupported {
                    keyword,
                    pointer: p,
                    reason,
                }) if self.lenient && b.contains_key(&keyword) => {
                    b.remove(&keyword);
                    self.refuse(SchemaError::Unsupported {
                        keyword,
                        pointer: p,
                        reason,
                    })?;
                }
                r => return r,
            }
        }
    }

    /// The target of a local `$ref` and its pointer.
    pub fn target(&self, r: &str, pointer: &str) -> Result<(&'a Value, String), SchemaError> {
        let Some(frag) = r.strip_prefix('#') else {
            return Err(unsupported(
                "$ref",
                pointer,
                format!("`{r}` is not a local reference (remote schemas are not fetched)"),
            ));
        };
        let frag = percent_decode(frag);
        if !frag.is_empty() && !frag.starts_with('/') {
            return Err(unsupported(
                "$ref",
                pointer,
                format!("`{r}` names an anchor; only JSON-pointer references are supported"),
            ));
        }
        match self.root.pointer(&frag) {
            Some(v) => Ok((v, format!("#{frag}"))),
            None => Err(SchemaError::Invalid {
                keyword: "$ref".into(),
                pointer: pointer.to_string(),
                reason: format!("`{r}` does not resolve"),
            }),
        }
    }

    /// Flattens a node: inlines `$ref` and `allOf`, collects `anyOf`/`oneOf`.
    pub fn flatten(&self, node: &Value, pointer: &str) -> Result<Flat, SchemaError> {
        let mut flat = Flat {
            base: Map::new(),
            disjunctions: Vec::new(),
            never: false,
        };
        self.budget.set(MAX_INLINED);
        self.flatten_into(node, pointer, &mut flat, 0)?;
        Ok(flat)
    }

    fn flatten_into(
        &self,
        node: &Value,
        pointer: &str,
        flat: &mut Flat,
        depth: usize,
    ) -> Result<(), SchemaError> {
        if depth > MAX_INLINE_DEPTH {
            return self.refuse(unsupported(
                "$ref",
                pointer,
                "a reference cycle through allOf/$ref with no object or array in between",
            ));
        }
        let Some(left) = self.budget.get().checked_sub(1) else {
            // In lenient mode the rest of the conjunction is dropped (the budget stays
            // spent, so every further call returns here at once).
            return self.refuse(unsupported(
                "allOf",
                pointer,
                format!("inlining $ref / allOf expands past {MAX_INLINED} schemas"),
            ));
        };
        self.budget.set(left);
        let m = match node {
            Value::Bool(true) => return Ok(()),
            Value::Bool(false) => {
                flat.never = true;
                return Ok(());
            }
            Value::Object(m) => m,
            _ => {
                return Err(SchemaError::Invalid {
                    keyword: "schema".into(),
                    pointer: pointer.to_string(),
                    reason: "a schema must be an object or a boolean".into(),
                })
            }
        };
        // The node's own keywords are merged at the place of its `properties` (or of its
        // first own keyword) among `$ref` and `allOf`: merged properties then keep the
        // order in which the schema text lists them.
        // `if`/`then`/`else` as a disjunction, when the condition's complement is known.
        let conditional = match m.get("if") {
            Some(cond) => self.conditional(cond, m.get("then"), m.get("else"), pointer, depth),
            None => None,
        };
        let mut own = Map::new();
        for (k, v) in m {
            if conditional.is_some() && matches!(k.as_str(), "if" | "then" | "else") {
                continue;
            }
            // Combinators, dependencies and a "lacks one of these" `not` become
            // disjunctions below; every other assertion is the node's own.
            let combinator = matches!(k.as_str(), "$ref" | "allOf" | "anyOf" | "oneOf")
                || is_dependency(k)
                || (k == "not" && not_required_names(v).is_some());
            if !combinator && ASSERTIONS.contains(&k.as_str()) {
                own.insert(k.clone(), v.clone());
            }
        }
        normalize_nullable(&mut own);
        let own_at = m
            .keys()
            .position(|k| k == "properties")
            .or_else(|| m.keys().position(|k| own.contains_key(k)));
        let mut own = Some(own);
        for (i, (k, v)) in m.iter().enumerate() {
            if Some(i) == own_at {
                if let Some(own) = own.take() {
                    let base = std::mem::take(&mut flat.base);
                    flat.base = self.merge(base, own, pointer)?;
                }
            }
            // Whether a `properties` came before this keyword: see [`Disjunction`].
            let after = flat.base.contains_key("properties");
            match k.as_str() {
                "$ref" => {
                    let r = v.as_str().ok_or_else(|| SchemaError::Invalid {
                        keyword: "$ref".into(),
                        pointer: pointer.to_string(),
                        reason: "must be a string".into(),
                    })?;
                    match self.target(r, pointer) {
                        Ok((t, tp)) => self.flatten_into(t, &tp, flat, depth + 1)?,
                        Err(e) => self.refuse(e)?,
                    }
                }
                "allOf" => {
                    let items = as_schema_list(k, v, pointer)?;
                    for (i, it) in items.iter().enumerate() {
                        self.flatten_into(it, &format!("{pointer}/allOf/{i}"), flat, depth + 1)?;
                    }
                }
                "anyOf" | "oneOf" => {
                    let kw: &'static str = if k == "anyOf" { "anyOf" } else { "oneOf" };
                    let items = as_schema_list(k, v, pointer)?;
                    let alts = items
                        .iter()
                        .enumerate()
                        .map(|(i, it)| (it.clone(), format!("{pointer}/{kw}/{i}")))
                        .collect();
                    flat.disjunctions.push(Disjunction::new(kw, alts, after));
                }
                "if" if conditional.is_some() => {
                    let alts = conditional.clone().unwrap_or_default();
                    flat.disjunctions
                        .push(Disjunction::new("anyOf", alts, after));
                }
                "not" if not_required_names(v).is_some() => {
                    // Lacking one of several names: a disjunction of one-name negations.
                    let names = not_required_names(v).unwrap_or_default();
                    let alts = names
                        .into_iter()
                        .map(|n| {
                            let alt = serde_json::json!({ "not": { "required": [n] } });
                            (alt, format!("{pointer}/not"))
                        })
                        .collect();
                    flat.disjunctions
                        .push(Disjunction::new("anyOf", alts, after));
                }
                k if is_dependency(k) => {
                    let Value::Object(deps) = v else {
                        return Err(SchemaError::Invalid {
                            keyword: k.to_string(),
                            pointer: pointer.to_string(),
                            reason: "must be an object".into(),
                        });
                    };
                    for (name, dep) in deps {
                        let at = format!(
                            "{pointer}/{k}/{}",
                            name.replace('~', "~0").replace('/', "~1")
                        );
                        flat.disjunctions.push(Disjunction::new(
                            "anyOf",
                            dependency_alternatives(name, dep, &at)?,
                            after,
                        ));
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// The names of `not: {required: [a, b, …]}` (or of an `allOf` of such `required`s) when
/// there are at least two: "lacks one of them", which flattening turns into an `anyOf` of
/// one-name negations. `None` for any other `not`.
fn not_required_names(v: &Value) -> Option<Vec<String>> {
    fn collect(v: &Value, out: &mut Vec<String>) -> Option<()> {
        let m = v.as_object()?;
        for (k, x) in m {
            match k.as_str() {
                "required" => {
                    for n in x.as_array()? {
                        out.push(n.as_str()?.to_string());
                    }
                }
                "allOf" => {
                    for member in x.as_array()? {
                        collect(member, out)?;
                    }
                }
                k if ASSERTIONS.contains(&k) => return None,
                _ => {}
            }
        }
        Some(())
    }
    let mut names = Vec::new();
    collect(v, &mut names)?;
    names.dedup();
    (names.len() >= 2).then_some(names)
}

/// `dependencies` (drafts 4–7) and its 2019-09 split: a property that, when present,
/// brings other required names or a schema along.
fn is_dependency(k: &str) -> bool {
    matches!(k, "dependencies" | "dependentRequired" | "dependentSchemas")
}

/// A dependency of `name` as the alternatives it allows: objects without `name`, or
/// with it and what it brings; non-objects satisfy it too.
fn dependency_alternatives(
    name: &str,
    dep: &Value,
    pointer: &str,
) -> Result<Vec<(Value, String)>, SchemaError> {
    let absent = serde_json::json!({ "not": { "required": [name] } });
    let mut alts = vec![(absent, pointer.to_string())];
    match dep {
        Value::Array(names) => {
            if !names.iter().all(Value::is_string) {
                return Err(SchemaError::Invalid {
                    keyword: "dependencies".into(),
                    pointer: pointer.to_string(),
                    reason: "must list property names".into(),
                });
            }
            // `required` holds for every non-object, so this one covers them.
            let mut all = vec![Value::String(name.to_string())];
            all.extend(names.iter().cloned());
            alts.push((serde_json::json!({ "required": all }), pointer.to_string()));
        }
        Value::Object(_) | Value::Bool(_) => {
            alts.push((
                serde_json::json!({ "required": [name], "allOf": [dep] }),
                pointer.to_string(),
            ));
            alts.push((
                serde_json::json!({ "type": ["null", "boolean", "number", "string", "array"] }),
                pointer.to_string(),
            ));
        }
        _ => {
            return Err(SchemaError::Invalid {
                keyword: "dependencies".into(),
                pointer: pointer.to_string(),
                reason: "must be an array of names or a schema".into(),
            })
        }
    }
    Ok(alts)
}

fn as_schema_list<'v>(k: &str, v: &'v Value, pointer: &str) -> Result<&'v Vec<Value>, SchemaError> {
    match v {
        Value::Array(a) if !a.is_empty() => Ok(a),
        _ => Err(SchemaError::Invalid {
            keyword: k.to_string(),
            pointer: pointer.to_string(),
            reason: "must be a non-empty array of schemas".into(),
        }),
    }
}

/// OpenAPI's `nullable: true` adds `null` to an explicit `type`.
fn normalize_nullable(m: &mut Map<String, Value>) {
    if let Some(Value::Bool(n)) = m.remove("nullable") {
        if n {
            match m.get_mut("type") {
                Some(Value::String(t)) => {
                    let t = t.clone();
                    m.insert("type".into(), serde_json::json!([t, "null"]));
                }
                Some(Value::Array(a)) if !a.contains(&Value::from("null")) => {
                    a.push(Value::from("null"));
                }
                _ => {}
            }
        }
    }
}

/// The set of type names a `type` value allows (`None`: no `type`, all types).
pub fn type_set(v: Option<&Value>) -> Option<Vec<String>> {
    match v {
        None => None,
        Some(Value::String(s)) => Some(vec![s.clone()]),
        Some(Value::Array(a)) => Some(
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect(),
        ),
        Some(_) => Some(Vec::new()),
    }
}

fn intersect_types(a: &[String], b: &[String]) -> Vec<String> {
    let has = |s: &[String], t: &str| s.iter().any(|x| x == t);
    let mut out = Vec::new();
    for t in a {
        if has(b, t) || (t == "integer" && has(b, "number")) {
            out.push(t.clone());
        } else if t == "number" && has(b, "integer") {
            out.push("integer".to_string());
        }
    }
    out.dedup();
    out
}

fn props_of(m: &Map<String, Value>) -> Map<String, Value> {
    match m.get("properties") {
        Some(Value::Object(p)) => p.clone(),
        _ => Map::new(),
    }
}

/// The names of both maps in one order that keeps each map's own order where they
/// agree (`a`'s names first when they are independent): merged properties are listed
/// the way instances of either schema write them.
fn interleave(a: &Map<String, Value>, b: &Map<String, Value>) -> Vec<String> {
    let (av, bv): (Vec<&String>, Vec<&String>) = (a.keys().collect(), b.keys().collect());
    let mut out: Vec<String> = Vec::new();
    let mut seen = hashbrown::HashSet::new();
    let mut j = 0;
    for k in &av {
        if b.contains_key(*k) {
            while j < bv.len() && bv[j] != *k {
                if seen.insert(bv[j].clone()) {
                    out.push(bv[j].clone());
                }
                j += 1;
            }
            j += 1;
        }
        if seen.insert((*k).clone()) {
            out.push((*k).clone());
        }
    }
    for k in bv.into_iter().skip(j) {
        if seen.insert(k.clone()) {
            out.push(k.clone());
        }
    }
    out
}

fn num(v: &Value) -> Option<f64> {
    v.as_f64()
}

/// Conjunction of two flat keyword maps (strict).
fn merge(
    mut a: Map<String, Value>,
    mut b: Map<String, Value>,
    pointer: &str,
) -> Result<Map<String, Value>, SchemaError> {
    if b.is_empty() {
        return Ok(a);
    }
    if a.is_empty() {
        return Ok(b);
    }
    distribute_items(&mut a, &b);
    distribute_items(&mut b, &a);
    merge_object_keywords(&mut a, &b, pointer)?;
    for (k, v) in b {
        if matches!(k.as_str(), "properties" | "additionalProperties") && has_object_keywords(&a) {
            if !a.contains_key(&k) {
                a.insert(k, v);
            }
            continue;
        }
        let Some(old) = a.get(&k).cloned() else {
            a.insert(k, v);
            continue;
        };
        if old == v {
            continue;
        }
        match merge_keyword(&k, old, v, pointer)? {
            Merged::Value(merged) => {
                a.insert(k, merged);
            }
            Merged::Enum(both) => {
                a.remove(&k);
                a.insert("enum".into(), Value::Array(both));
            }
        }
    }
    Ok(a)
}

/// Whether a keyword map has keywords that describe an object's properties.
fn has_object_keywords(m: &Map<String, Value>) -> bool {
    m.contains_key("properties")
        || m.contains_key("additionalProperties")
        || m.contains_key("patternProperties")
}

/// When both maps describe properties, writes their conjunction into `a`: each name's
/// schemas conjoined (a name one side lacks gets that side's additionalProperties), and
/// the additionalProperties conjoined.
fn merge_object_keywords(
    a: &mut Map<String, Value>,
    b: &Map<String, Value>,
    pointer: &str,
) -> Result<(), SchemaError> {
    if has_object_keywords(a) && has_object_keywords(b) {
        if a.contains_key("patternProperties") || b.contains_key("patternProperties") {
            return Err(unsupported(
                "patternProperties",
                pointer,
                "patternProperties inside allOf together with other object keywords",
            ));
        }
        let (pa, pb) = (props_of(a), props_of(b));
        let addl = |m: &Map<String, Value>| {
            m.get("additionalProperties")
                .cloned()
                .unwrap_or(Value::Bool(true))
        };
        let (aa, ab) = (addl(a), addl(b));
        let mut props = Map::new();
        for k in interleave(&pa, &pb) {
            let v = match (pa.get(&k), pb.get(&k)) {
                (Some(x), Some(y)) => conjoin(x, y),
                (Some(x), None) => conjoin(x, &ab),
                (None, Some(y)) => conjoin(&aa, y),
                (None, None) => continue,
            };
            props.insert(k, v);
        }
        a.insert("properties".into(), Value::Object(props));
        let merged = conjoin(&aa, &ab);
        if is_trivial(&merged) {
            a.remove("additionalProperties");
        } else {
            a.insert("additionalProperties".into(), merged);
        }
    }
    Ok(())
}

/// What one keyword that both maps give, with different values, merges to.
enum Merged {
    Value(Value),
    /// `enum`/`const` whose conjunction is not one value: the values both allow, as `enum`.
    Enum(Vec<Value>),
}

/// The conjunction of keyword `k`'s two values `old` and `v` (strict: an error where it
/// is not one value the lowering reads).
fn merge_keyword(k: &str, old: Value, v: Value, pointer: &str) -> Result<Merged, SchemaError> {
    Ok(Merged::Value(match k {
        "type" => {
            let (x, y) = (
                type_set(Some(&old)).unwrap_or_default(),
                type_set(Some(&v)).unwrap_or_default(),
            );
            Value::from(intersect_types(&x, &y))
        }
        "required" => {
            let mut r: Vec<Value> = old.as_array().cloned().unwrap_or_default();
            for x in v.as_array().cloned().unwrap_or_default() {
                if !r.contains(&x) {
                    r.push(x);
                }
            }
            Value::Array(r)
        }
        "enum" | "const" => {
            let list = |k: &str, v: &Value| match k {
                "const" => vec![v.clone()],
                _ => v.as_array().cloned().unwrap_or_default(),
            };
            let (x, y) = (list(k, &old), list(k, &v));
            let both: Vec<Value> = x
                .into_iter()
                .filter(|e| y.iter().any(|f| json_equal(e, f)))
                .collect();
            if k == "const" && both.len() == 1 {
                both[0].clone()
            } else {
                return Ok(Merged::Enum(both));
            }
        }
        "minimum" | "minLength" | "minItems" | "minProperties" | "exclusiveMinimum" | "maximum"
        | "maxLength" | "maxItems" | "maxProperties" | "exclusiveMaximum" => {
            // The tighter bound: the larger lower bound, the smaller upper bound.
            let lower = k.starts_with("min") || k == "exclusiveMinimum";
            match (num(&old), num(&v)) {
                (Some(x), Some(y)) if (x >= y) == lower || x == y => old,
                (Some(_), Some(_)) => v,
                _ => {
                    return Err(unsupported(
                        k,
                        pointer,
                        "bounds of different kinds in allOf",
                    ))
                }
            }
        }
        // ¬A ∧ ¬B = ¬(A ∨ B).
        "not" => disjoin(&old, &v),
        // Two `contains` may be met by two different items, and two patterns must both
        // match: not one value but both, kept as a list (a form no schema spells; the
        // array and string lowerings read it back with `contains_list`).
        "contains" | "pattern" => {
            let mut all = contains_list(&old);
            for c in contains_list(&v) {
                if !all.contains(&c) {
                    all.push(c);
                }
            }
            match all.len() {
                1 => all.pop().expect("one element"),
                _ => Value::Array(all),
            }
        }
        "items" | "additionalItems" | "propertyNames" => {
            if old.is_array() || v.is_array() {
                return Err(unsupported(k, pointer, "two tuple forms in allOf"));
            }
            conjoin(&old, &v)
        }
        "properties" | "additionalProperties" => conjoin(&old, &v),
        "uniqueItems" => Value::Bool(old == Value::Bool(true) || v == Value::Bool(true)),
        // Multiples of two integers are the multiples of their least common multiple
        // (a multiple of an integer is an integer).
        "multipleOf" => match (old.as_u64(), v.as_u64()) {
            (Some(x), Some(y)) if x > 0 && y > 0 => {
                let (mut a, mut b) = (x, y);
                while b != 0 {
                    (a, b) = (b, a % b);
                }
                match (x / a).checked_mul(y) {
                    Some(l) => Value::from(l),
                    None => {
                        return Err(unsupported(
                            k,
                            pointer,
                            "the multiples' common multiple overflows",
                        ))
                    }
                }
            }
            _ => return Err(unsupported(
                k,
                pointer,
                "allOf members give it different values, and their conjunction is not one value",
            )),
        },
        _ => {
            return Err(unsupported(
                k,
                pointer,
                "allOf members give it different values, and their conjunction is not one value",
            ))
        }
    }))
}
