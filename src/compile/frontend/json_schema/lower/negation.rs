//! `not`: negations pushed down to what can be complemented (types, required names,
//! string languages, scalar values), and complements of whole subschemas.

use super::*;

impl<'a> Lowerer<'a> {
    /// The items of an array (of schema `rest`, lowered as `r`) among which each of
    /// `conds` is matched by some item: for every ordered split of `conds` into groups,
    /// one witness per group (matching `rest` and the whole group) in that order, any
    /// items around them. Ambiguous where several items match; the GLR keeps every reading.
    pub(super) fn witnessed(
        &mut self,
        rest: &Value,
        conds: &[Value],
        r: Symbol,
        pointer: &str,
    ) -> Result<Ebnf, SchemaError> {
        let comma = self.f().comma;
        let any = |e: Ebnf| Ebnf::Repeat {
            inner: Box::new(e),
            min: 0,
            max: None,
        };
        let mut alts = Vec::new();
        for groups in ordered_splits((1u32 << conds.len()) - 1) {
            let mut seq = vec![any(Ebnf::Seq(vec![e_sym(r), e_sym(comma)]))];
            for (i, g) in groups.iter().enumerate() {
                let mut all = vec![rest.clone()];
                all.extend(
                    (0..conds.len())
                        .filter(|k| g >> k & 1 == 1)
                        .map(|k| conds[k].clone()),
                );
                let w = self.schema(
                    &serde_json::json!({ "allOf": all }),
                    &format!("{pointer}/contains"),
                )?;
                if i > 0 {
                    seq.push(any(Ebnf::Seq(vec![e_sym(comma), e_sym(r)])));
                    seq.push(e_sym(comma));
                }
                seq.push(e_sym(w));
            }
            seq.push(any(Ebnf::Seq(vec![e_sym(comma), e_sym(r)])));
            alts.push(Ebnf::Seq(seq));
        }
        Ok(Ebnf::Alt(alts))
    }

    /// The union forms of a `not` that [`Self::negation`] would refuse but whose subschema
    /// has a complement (see `complement`): `not: {properties: …}`, bounds, items….
    pub(super) fn not_as_complement(
        &mut self,
        m: &Map<String, Value>,
        pointer: &str,
    ) -> Option<Vec<(Value, String)>> {
        let n = m.get("not")?;
        // Would the direct forms refuse it? Asked leniently, then forgotten.
        let (lenient, reported) = (self.opts.lenient, self.dropped.len());
        self.opts.lenient = true;
        let direct = self.negation(n, pointer);
        let refused = self.dropped.len() > reported;
        self.dropped.truncate(reported);
        self.opts.lenient = lenient;
        if direct.is_err() || !refused {
            return None;
        }
        let at = format!("{pointer}/not");
        let f = self.resolver.probe(|r| r.flatten(n, &at).ok())?;
        self.resolver.probe(|r| complement(&f, &at, r))
    }

    /// What a `not` subschema excludes, in the forms compiled exactly: a conjunction of
    /// excluded types and absent names (so `anyOf` members negate one by one).
    pub(super) fn negation(&mut self, n: &Value, pointer: &str) -> Result<Negation, SchemaError> {
        self.negation_at(n, pointer, 0)
    }

    /// [`Self::negation`] `depth` anyOf levels down (a reference cycle through `anyOf`
    /// would otherwise recurse forever).
    pub(super) fn negation_at(
        &mut self,
        n: &Value,
        pointer: &str,
        depth: usize,
    ) -> Result<Negation, SchemaError> {
        if depth > MAX_NEGATION_DEPTH {
            self.refuse("not", pointer, "`not` of a recursive anyOf is not compiled")?;
            return Ok(Negation::default());
        }
        if is_trivial(n) {
            return Ok(Negation {
                nothing: true,
                ..Default::default()
            });
        }
        if *n == Value::Bool(false) {
            return Ok(Negation::default());
        }
        let flat = self.resolver.flatten(n, &format!("{pointer}/not"))?;
        if flat.never {
            return Ok(Negation::default());
        }
        if flat.base.is_empty() {
            if let [Disjunction {
                keyword: "anyOf",
                alternatives: alts,
                ..
            }] = flat.disjunctions.as_slice()
            {
                let mut out = Negation::default();
                for (alt, ap) in alts {
                    out = out.and(self.negation_at(alt, ap, depth + 1)?);
                }
                return Ok(out);
            }
        }
        if flat.disjunctions.is_empty() {
            let keys: Vec<&str> = flat
                .base
                .keys()
                .map(String::as_str)
                .filter(|k| ASSERTIONS.contains(k))
                .collect();
            if keys == ["type"] {
                return Ok(Negation {
                    excluded: type_set(flat.base.get("type")).unwrap_or_default(),
                    ..Default::default()
                });
            }
            if keys == ["required"] {
                if let Some([Value::String(name)]) =
                    flat.base["required"].as_array().map(Vec::as_slice)
                {
                    return Ok(Negation {
                        absent: vec![name.clone()],
                        ..Default::default()
                    });
                }
            }
            if let Some(values) = scalar_values(&flat.base) {
                let mut neg = Negation::default();
                let mut literals = Vec::new();
                for v in values {
                    match v {
                        Value::String(s) => literals.push(Hir::literal(s.as_bytes())),
                        Value::Bool(b) => neg.bools.push(b),
                        _ => neg.excluded.push("null".to_string()),
                    }
                }
                if !literals.is_empty() {
                    neg.strings.push(Hir::alternation(literals));
                }
                return Ok(neg);
            }
            if let Some((h, vacuous)) = string_language(&flat.base) {
                return Ok(Negation {
                    strings: vec![h],
                    strings_only: vacuous,
                    ..Default::default()
                });
            }
            if keys == ["multipleOf"] {
                if let Some(k) = integer_divisor(&flat.base["multipleOf"]) {
                    return Ok(Negation {
                        multiples: vec![k],
                        ..Default::default()
                    });
                }
            }
        }
        self.refuse(
            "not",
            pointer,
            "only `not` of types, of required properties, of one string language (pattern, format, string enum, lengths), or of an anyOf of those is compiled",
        )?;
        Ok(Negation::default())
    }
}
