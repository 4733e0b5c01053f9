//! Objects: property names and their regions, members in schema order (left-linear, so
//! the parse stack stays flat), shared key/value pairs.

use super::*;

impl<'a> Lowerer<'a> {
    /// The nonterminal for property names in the value language `h`, except `names`
    /// (declared names are lexed as their literals and belong to their own pairs).
    pub(super) fn key_nt(
        &mut self,
        h: &Hir,
        names: &[String],
        pointer: &str,
    ) -> Result<NonterminalId, SchemaError> {
        self.key_nt_region(std::slice::from_ref(h), &[], names, pointer)
    }

    /// A key nonterminal for the names in every language of `ins` and in none of `outs`
    /// (one terminal, intersected and subtracted in the lexer builder), less `names`.
    pub(super) fn key_nt_region(
        &mut self,
        ins: &[Hir],
        outs: &[Hir],
        names: &[String],
        pointer: &str,
    ) -> Result<NonterminalId, SchemaError> {
        let quoted = |h: &Hir| {
            quoted_regex(h).map_err(|e| SchemaError::Unsupported {
                keyword: "patternProperties".into(),
                pointer: pointer.to_string(),
                reason: e,
            })
        };
        let mut res = ins.iter().map(quoted).collect::<Result<Vec<_>, _>>()?;
        let not_res = outs.iter().map(quoted).collect::<Result<Vec<_>, _>>()?;
        let mm = ValueMatcher::all(ins)
            .and_then(|mm| mm.except(outs))
            .map_err(|e| invalid("patternProperties", pointer, &e))?;
        let key = format!(
            "{}\u{0}except:{}\u{0}names:{}",
            res.join("\u{0}"),
            not_res.join("\u{0}"),
            names.join("\u{0}")
        );
        let main = res.remove(0);
        let t = self.terminal_also(&format!("KEY<{pointer}>"), &main, res, not_res);
        let kn = self.string_nt(key, StringRule::Constrained(t, mm));
        self.exclusions.push((kn, names.to_vec()));
        Ok(kn)
    }

    /// The language `propertyNames` holds names to: `Some(None)` when it holds every
    /// name (absent, or asserting nothing of strings), `Some(Some(h))` for one string
    /// language, `None` when it is not one the lowering compiles.
    pub(super) fn property_names(&self, m: &Map<String, Value>) -> Option<Option<Hir>> {
        let Some(pn) = m.get("propertyNames").filter(|v| !is_trivial(v)) else {
            return Some(None);
        };
        let f = self.resolver.probe(|r| r.flatten(pn, "").ok())?;
        if f.never {
            // No name is allowed: only the empty object.
            return Some(Some(Hir::fail()));
        }
        if !f.disjunctions.is_empty() {
            return None;
        }
        let strings_only = f.base.iter().all(|(k, v)| {
            !ASSERTIONS.contains(&k.as_str())
                || (k == "type"
                    && type_set(Some(v)).is_some_and(|ts| ts.iter().any(|t| t == "string")))
        });
        if strings_only {
            return Some(None);
        }
        string_language(&f.base).map(|(h, _)| Some(h))
    }

    /// An object: `{`, the declared pairs in schema order with the extra pairs (pattern
    /// and additional properties) among them, `}`. Lowered in phases: the name keywords
    /// are read ([`ObjectNames`]), the declared properties listed ([`Self::declared`]),
    /// the property count bounded ([`Self::property_count`]), the pairs written
    /// ([`Self::extra_pairs`]), then the members — left-linear when uncounted, else the
    /// counted chain of [`Self::counted_members`].
    pub(super) fn object(
        &mut self,
        m: &Map<String, Value>,
        forbidden: &[String],
        pointer: &str,
    ) -> Result<Ebnf, SchemaError> {
        let Some(names) = self.object_names(m, pointer)? else {
            return Ok(nothing());
        };
        let Some(declared) = self.declared(&names, forbidden, pointer)? else {
            return Ok(nothing());
        };
        let n = declared.len();
        let nreq = declared.iter().filter(|d| d.required).count() as u64;
        // `^name$` names that are neither in `properties` nor required are extra pairs,
        // written in any order among the additional ones.
        let extra_names: Vec<String> = names
            .pattern_names
            .iter()
            .filter(|n| !declared.iter().any(|d| &d.name == *n) && names.name_ok(n))
            .cloned()
            .collect();
        let extra_allowed =
            !names.addl_false || !names.open_patterns.is_empty() || !extra_names.is_empty();
        let Some(count) = self.property_count(m, pointer, n, nreq, extra_allowed)? else {
            return Ok(nothing());
        };
        let fx = self.f();
        let (lb, rb) = (fx.lbrace, fx.rbrace);
        // One key-value pair per declared property.
        let mut kvs = Vec::with_capacity(n);
        for d in &declared {
            let key = self.literal(&d.name);
            let v = self.schema(&d.schema, &d.pointer)?;
            let pair = self.pair(Symbol::T(key), v, &d.pointer);
            kvs.push(e_sym(Symbol::N(pair)));
        }
        let extra = self.extra_pairs(&names, &declared, &extra_names, pointer)?;
        if !count.counted {
            let optional: Vec<bool> = declared.iter().map(|d| !d.required).collect();
            let members = self.members_left_linear(pointer, kvs, &optional, extra, count.lo > 0);
            return Ok(Ebnf::Seq(vec![e_sym(lb), members, e_sym(rb)]));
        }
        let required: Vec<bool> = declared.iter().map(|d| d.required).collect();
        let members = self.counted_members(pointer, kvs, &required, extra, count);
        Ok(Ebnf::Seq(vec![e_sym(lb), members, e_sym(rb)]))
    }

    /// Reads the keywords that decide an object's names: `propertyNames`, `required`,
    /// `additionalProperties` and `patternProperties`, the patterns parsed and sorted into
    /// `^name$` names and open ones. `None` when a pattern is refused in lenient mode (the
    /// object then accepts nothing).
    fn object_names<'m>(
        &mut self,
        m: &'m Map<String, Value>,
        pointer: &str,
    ) -> Result<Option<ObjectNames<'m>>, SchemaError> {
        // Names outside `propertyNames`' language: declared ones may not appear, the
        // others' keys are drawn from it.
        let names_in = match self.property_names(m) {
            Some(Some(h)) => {
                let mm =
                    ValueMatcher::new(&h).map_err(|e| invalid("propertyNames", pointer, &e))?;
                Some((h, mm))
            }
            _ => None,
        };
        // `propertyNames: false`: no name at all (and no key terminal for the empty language).
        let no_names = names_in
            .as_ref()
            .is_some_and(|(h, _)| h.properties().minimum_len().is_none());
        let props = match m.get("properties") {
            None => None,
            Some(Value::Object(p)) => Some(p),
            Some(_) => return Err(invalid("properties", pointer, "must be an object")),
        };
        let required: Vec<String> = match m.get("required") {
            None => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect(),
            Some(Value::Bool(_)) => Vec::new(), // draft-3 style, per property; not an assertion here
            Some(_) => return Err(invalid("required", pointer, "must be an array of names")),
        };
        let addl = m
            .get("additionalProperties")
            .cloned()
            .unwrap_or(Value::Bool(true));
        let addl = if addl.is_object() || addl.is_boolean() {
            addl
        } else {
            return Err(invalid("additionalProperties", pointer, "must be a schema"));
        };
        let mut patterns: Vec<(String, Value)> = match m.get("patternProperties") {
            None => Vec::new(),
            Some(Value::Object(p)) => p.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            Some(_) => return Err(invalid("patternProperties", pointer, "must be an object")),
        };
        if no_names {
            patterns.clear();
        }
        let addl = if no_names { Value::Bool(false) } else { addl };
        let addl_false = addl == Value::Bool(false);
        if !patterns.is_empty()
            && !addl_false
            && patterns.iter().all(|(_, s)| is_trivial(s))
            && is_trivial(&addl)
        {
            patterns.clear();
        }
        // Every pattern (as a value language) decides which schemas a declared name gets.
        let mut pattern_hirs = Vec::new();
        for (p, _) in &patterns {
            match parse_pattern(p).and_then(|h| ValueMatcher::new(&h).map(|mm| (h, mm))) {
                Ok(x) => pattern_hirs.push(x),
                Err(e) => {
                    self.refuse("patternProperties", pointer, &format!("{e} in /{p}/"))?;
                    return Ok(None);
                }
            }
        }
        // `^name$` patterns name one property each: they join the declared ones. The
        // others give the names that are not declared their schema.
        let mut pattern_names: Vec<String> = Vec::new();
        let mut open_patterns: Vec<usize> = Vec::new();
        let mut open_splits: Vec<Option<PatternSplit>> = Vec::new();
        for (i, (p, _)) in patterns.iter().enumerate() {
            match split_pattern(p) {
                Some(PatternSplit::Name(name)) => pattern_names.push(name),
                split => {
                    open_patterns.push(i);
                    open_splits.push(split);
                }
            }
        }
        // Names no open pattern matches get additionalProperties: written out as the
        // complement of the one open pattern for the shapes `split_pattern` knows, else
        // as any name minus the patterns' languages.
        let mut complement: Option<PatternSplit> = None;
        let mut complement_except = false;
        if !addl_false && !open_patterns.is_empty() {
            match (open_patterns.len(), open_splits.pop().flatten()) {
                (1, Some(split)) => complement = Some(split),
                _ => complement_except = true,
            }
        }
        // Patterns with different schemas: a name gets the conjunction of those it matches,
        // so every non-empty set of patterns is its own region of names (at most 2^3 - 1).
        let regions = open_patterns.len() > 1
            && open_patterns
                .iter()
                .any(|&i| patterns[i].1 != patterns[open_patterns[0]].1);
        if regions && open_patterns.len() > MAX_PATTERN_REGIONS_OF {
            self.refuse(
                "patternProperties",
                pointer,
                &format!(
                    "more than {MAX_PATTERN_REGIONS_OF} patterns with different schemas (a name \
                     matching several must satisfy each)"
                ),
            )?;
            open_patterns.truncate(1);
        }
        let regions = regions && open_patterns.len() > 1;
        Ok(Some(ObjectNames {
            names_in,
            no_names,
            properties: props,
            required,
            addl,
            addl_false,
            patterns,
            pattern_hirs,
            pattern_names,
            open_patterns,
            complement,
            complement_except,
            regions,
        }))
    }

    /// The declared properties in order: `properties`, then required names it lacks, then
    /// names `not: {required: [x]}` forbids. A declared name outside `propertyNames`'
    /// language or forbidden gets the schema `false`. `None` when a required name may
    /// not appear (the object accepts nothing).
    fn declared(
        &mut self,
        names: &ObjectNames,
        forbidden: &[String],
        pointer: &str,
    ) -> Result<Option<Vec<Declared>>, SchemaError> {
        let required = &names.required;
        let mut declared: Vec<Declared> = Vec::new();
        for (k, v) in names.properties.into_iter().flatten() {
            let schema = names
                .matched(k)
                .map_or_else(|| v.clone(), |p| conjoin(v, &p));
            declared.push(Declared {
                name: k.clone(),
                schema,
                pointer: format!("{pointer}/properties/{}", escape_pointer(k)),
                required: required.contains(k),
            });
        }
        for r in required {
            if !declared.iter().any(|d| &d.name == r) {
                declared.push(Declared {
                    name: r.clone(),
                    schema: names.unlisted(r),
                    pointer: format!("{pointer}/additionalProperties"),
                    required: true,
                });
            }
        }
        // A declared name outside propertyNames' language may not appear.
        for d in declared.iter_mut().filter(|d| !names.name_ok(&d.name)) {
            if d.required {
                return Ok(None);
            }
            d.schema = Value::Bool(false);
        }
        // `not: {required: [x]}`: x may not appear at all (a declared slot that accepts
        // nothing, so it is also excluded from the additional keys).
        for name in forbidden {
            if required.contains(name) {
                return Ok(None);
            }
            match declared.iter_mut().find(|d| &d.name == name) {
                Some(d) => d.schema = Value::Bool(false),
                None => declared.push(Declared {
                    name: name.clone(),
                    schema: Value::Bool(false),
                    pointer: format!("{pointer}/not"),
                    required: false,
                }),
            }
        }
        Ok(Some(declared))
    }

    /// Bounds on the property count. Declared names are written at most once each, so
    /// counting the pairs written is counting properties; additional pairs may repeat a
    /// key, so a minimum above what the required names give (other than "not empty") is
    /// refused beside them. A maximum counts pairs: a text that repeats a key is
    /// rejected. `None` when the bounds admit no object.
    fn property_count(
        &mut self,
        m: &Map<String, Value>,
        pointer: &str,
        n: usize,
        nreq: u64,
        extra_allowed: bool,
    ) -> Result<Option<PropertyCount>, SchemaError> {
        let minp = count(m, "minProperties", pointer)?;
        let maxp = count(m, "maxProperties", pointer)?;
        let mut lo = 0;
        let mut counted = false;
        if let Some(minp) = minp {
            if minp > nreq && minp > 1 && extra_allowed {
                self.refuse(
                    "minProperties",
                    pointer,
                    "a minimum above the required properties (other than one) beside \
                     additional properties, whose keys may repeat",
                )?;
            } else {
                lo = minp;
                counted |= minp > 1 && minp > nreq;
            }
        }
        if maxp.is_some_and(|x| x < lo) {
            return Ok(None);
        }
        let mut maxp = maxp.filter(|&x| extra_allowed || x < n as u64);
        counted |= maxp.is_some();
        let cap = maxp.unwrap_or(lo);
        if counted && (n as u64 + 1) * (cap + 1) > MAX_COUNTED_PROPERTY_STATES {
            let kw = if maxp.is_some() {
                "maxProperties"
            } else {
                "minProperties"
            };
            self.refuse(
                kw,
                pointer,
                &format!(
                    "{n} properties counted up to {cap} need more than \
                     {MAX_COUNTED_PROPERTY_STATES} grammar states"
                ),
            )?;
            counted = false;
            maxp = None;
            lo = lo.min(1);
        }
        // Uncounted, the body only knows whether something was written (count 0 or 1+).
        let (cap, saturates) = if counted {
            (cap, maxp.is_none())
        } else {
            (1, true)
        };
        Ok(Some(PropertyCount {
            lo: lo.min(cap),
            cap,
            saturates,
            counted,
        }))
    }

    /// The extra pairs, as one alternation (`None` when there are none): `^name$` pattern
    /// properties, open pattern properties (one pair per region of names when their
    /// schemas differ) and, beside additional properties, the names no pattern matches,
    /// or additional properties alone. Their keys exclude every name that has a pair of
    /// its own.
    fn extra_pairs(
        &mut self,
        names: &ObjectNames,
        declared: &[Declared],
        extra_names: &[String],
        pointer: &str,
    ) -> Result<Option<Ebnf>, SchemaError> {
        let colon = self.f().colon;
        let (patterns, pattern_hirs, open_patterns) =
            (&names.patterns, &names.pattern_hirs, &names.open_patterns);
        let mut excluded: Vec<String> = declared.iter().map(|d| d.name.clone()).collect();
        excluded.extend(extra_names.iter().cloned());
        let mut pairs = Vec::new();
        for name in extra_names {
            let key = self.literal(name);
            let v = self.schema(
                &names.unlisted(name),
                &format!("{pointer}/patternProperties"),
            )?;
            let pair = self.pair(Symbol::T(key), v, pointer);
            pairs.push(e_sym(Symbol::N(pair)));
        }
        if names.regions {
            if names.names_in.is_some() {
                self.refuse(
                    "propertyNames",
                    pointer,
                    "beside patternProperties patterns with different schemas",
                )?;
            }
            let k = open_patterns.len();
            for set in 1u32..(1 << k) {
                let (ins, outs): (Vec<usize>, Vec<usize>) = open_patterns.iter().enumerate().fold(
                    (Vec::new(), Vec::new()),
                    |(mut ins, mut outs), (j, &i)| {
                        if set & (1 << j) != 0 {
                            ins.push(i)
                        } else {
                            outs.push(i)
                        }
                        (ins, outs)
                    },
                );
                let schema = ins[1..].iter().fold(patterns[ins[0]].1.clone(), |acc, &i| {
                    conjoin(&acc, &patterns[i].1)
                });
                let v = self.schema(
                    &schema,
                    &format!(
                        "{pointer}/patternProperties/{}",
                        escape_pointer(&patterns[ins[0]].0)
                    ),
                )?;
                let in_h: Vec<Hir> = ins.iter().map(|&i| pattern_hirs[i].0.clone()).collect();
                let out_h: Vec<Hir> = outs.iter().map(|&i| pattern_hirs[i].0.clone()).collect();
                let kn = self.key_nt_region(&in_h, &out_h, &excluded, pointer)?;
                let pair = self.pair(Symbol::N(kn), v, pointer);
                pairs.push(e_sym(Symbol::N(pair)));
            }
        }
        if !open_patterns.is_empty() && !names.regions {
            let (p, s) = &patterns[open_patterns[0]];
            let v = self.schema(
                s,
                &format!("{pointer}/patternProperties/{}", escape_pointer(p)),
            )?;
            let mut key_alts = Vec::new();
            for &i in open_patterns {
                // Beside propertyNames, only a pattern matching every name is compiled:
                // its keys are then propertyNames' (no intersection of two is written).
                let h = match &names.names_in {
                    None => &pattern_hirs[i].0,
                    Some((h, _))
                        if matches!(split_pattern(&patterns[i].0), Some(PatternSplit::All)) =>
                    {
                        h
                    }
                    Some((h, _)) => {
                        self.refuse(
                            "propertyNames",
                            pointer,
                            "beside a patternProperties pattern that does not match every name",
                        )?;
                        h
                    }
                };
                let kn = self.key_nt(h, &excluded, pointer)?;
                key_alts.push(e_sym(Symbol::N(kn)));
            }
            pairs.push(Ebnf::Seq(vec![Ebnf::Alt(key_alts), e_sym(colon), e_sym(v)]));
        }
        // The names no open pattern matches, beside additional properties.
        let complement_key = match &names.complement {
            Some(PatternSplit::Complement(h)) => Some(self.key_nt(h, &excluded, pointer)?),
            _ if names.complement_except => {
                let outs: Vec<Hir> = open_patterns
                    .iter()
                    .map(|&i| pattern_hirs[i].0.clone())
                    .collect();
                Some(self.key_nt_region(&[any_string_hir()], &outs, &excluded, pointer)?)
            }
            _ => None,
        };
        if let Some(kn) = complement_key {
            if names.names_in.is_some() {
                self.refuse(
                    "propertyNames",
                    pointer,
                    "beside names that no patternProperties pattern matches",
                )?;
            }
            let v = self.schema(&names.addl, &format!("{pointer}/additionalProperties"))?;
            let pair = self.pair(Symbol::N(kn), v, pointer);
            pairs.push(e_sym(Symbol::N(pair)));
        } else if !names.addl_false && open_patterns.is_empty() {
            let v = self.schema(&names.addl, &format!("{pointer}/additionalProperties"))?;
            let key = if let Some((h, _)) = &names.names_in {
                Symbol::N(self.key_nt(h, &excluded, pointer)?)
            } else if excluded.is_empty() {
                self.any_string()
            } else {
                Symbol::N(self.string_nt(
                    format!("except:{}", excluded.join("\u{0}")),
                    StringRule::Except(excluded.clone()),
                ))
            };
            let pair = self.pair(key, v, pointer);
            pairs.push(e_sym(Symbol::N(pair)));
        }
        Ok((!pairs.is_empty()).then_some(Ebnf::Alt(pairs)))
    }

    /// The members of an object whose property count is constrained. The count is part of
    /// every nonterminal, so they are right-recursive (a few stack entries per member, at
    /// most MAX_COUNTED_PROPERTY_STATES nonterminals): `body[i][c]` is the members from
    /// declared property `i` on with `c` properties written (at least `c` when the count
    /// saturates at `cap`); extra pairs once the count no longer matters are any number
    /// of them, flat.
    fn counted_members(
        &mut self,
        pointer: &str,
        kvs: Vec<Ebnf>,
        required: &[bool],
        extra: Option<Ebnf>,
        count: PropertyCount,
    ) -> Ebnf {
        let PropertyCount {
            lo, cap, saturates, ..
        } = count;
        let n = kvs.len();
        let comma = self.f().comma;
        let tail = match &extra {
            Some(x) => {
                let t = self.nonterminal(format!("{pointer}/extra*"));
                let body = Ebnf::Repeat {
                    inner: Box::new(Ebnf::Seq(vec![e_sym(comma), x.clone()])),
                    min: 0,
                    max: None,
                };
                self.define(t, body);
                Some(e_sym(Symbol::N(t)))
            }
            None => None,
        };
        let body: Vec<Vec<NonterminalId>> = (0..=n)
            .map(|i| {
                (0..=cap)
                    .map(|c| self.nonterminal(format!("{pointer}/props{i}#{c}")))
                    .collect()
            })
            .collect();
        let next = |c: u64| -> Option<u64> {
            if c < cap {
                Some(c + 1)
            } else {
                saturates.then_some(cap)
            }
        };
        // What follows a pair that brought the count to c: extra pairs, then body[i][·].
        let mut after_memo: HashMap<(usize, u64), Ebnf> = HashMap::new();
        let mut after = |me: &mut Self, i: usize, c: u64| -> Ebnf {
            let cont = e_sym(Symbol::N(body[i][c as usize]));
            let (Some(x), Some(tail)) = (&extra, &tail) else {
                return cont;
            };
            if saturates && c == cap {
                return Ebnf::Seq(vec![tail.clone(), cont]);
            }
            if let Some(e) = after_memo.get(&(i, c)) {
                return e.clone();
            }
            // Below the cap each extra pair is counted: a chain of at most `cap` steps.
            let mut chain: Vec<NonterminalId> = Vec::new();
            let mut k = c;
            loop {
                chain.push(me.nonterminal(format!("{pointer}/extra{i}#{k}")));
                match next(k) {
                    Some(k2) if !(saturates && k2 == cap) && k2 != k => k = k2,
                    _ => break,
                }
            }
            for (j, &nt) in chain.iter().enumerate() {
                let k = c + j as u64;
                let mut alts = vec![e_sym(Symbol::N(body[i][k as usize]))];
                if let Some(k2) = next(k) {
                    let rest = match chain.get(j + 1) {
                        Some(&n2) => e_sym(Symbol::N(n2)),
                        None => {
                            Ebnf::Seq(vec![tail.clone(), e_sym(Symbol::N(body[i][k2 as usize]))])
                        }
                    };
                    alts.push(Ebnf::Seq(vec![e_sym(comma), x.clone(), rest]));
                }
                me.define(nt, Ebnf::Alt(alts));
            }
            let e = e_sym(Symbol::N(chain[0]));
            after_memo.insert((i, c), e.clone());
            e
        };
        for i in 0..=n {
            for c in 0..=cap {
                let nt = body[i][c as usize];
                if i == n {
                    self.define(nt, if c >= lo { eps() } else { nothing() });
                    continue;
                }
                let mut alts = Vec::new();
                if let Some(c2) = next(c) {
                    let mut this = Vec::new();
                    if c > 0 {
                        this.push(e_sym(comma));
                    }
                    this.push(kvs[i].clone());
                    this.push(after(self, i + 1, c2));
                    alts.push(Ebnf::Seq(this));
                }
                if !required[i] {
                    alts.push(e_sym(Symbol::N(body[i + 1][c as usize])));
                }
                self.define(nt, Ebnf::Alt(alts));
            }
        }
        let mut start = vec![e_sym(Symbol::N(body[0][0]))];
        if let (Some(x), Some(c2)) = (&extra, next(0)) {
            start.push(Ebnf::Seq(vec![x.clone(), after(self, 0, c2)]));
        }
        Ebnf::Alt(start)
    }

    /// The members of an object whose property count is not constrained, as a left-linear
    /// grammar: `L_q` is a non-empty prefix whose last declared pair is `q` (extra pairs
    /// may follow it), `W_q` a prefix after which `q` may come next, comma included, and
    /// `E` a prefix of extra pairs only. Left-linear because a right-recursive spelling
    /// keeps a few parse-stack entries per written member until the object closes, and a
    /// 200-member object then costs every mask and the closing commit hundreds of entries;
    /// here each pair is reduced as soon as it ends. Skipping optional members is the
    /// chain `W_q → W_{q-hop}` (`hop` is 1, or [`SKIP_HOP`] over [`HOP_OVER`] members),
    /// which LALR(1) resolves on the next key (keys are distinct terminals), so the size
    /// stays linear in the number of members.
    pub(super) fn members_left_linear(
        &mut self,
        pointer: &str,
        kvs: Vec<Ebnf>,
        optional: &[bool],
        extra: Option<Ebnf>,
        nonempty: bool,
    ) -> Ebnf {
        let n = kvs.len();
        let comma = self.f().comma;
        let x = extra.map(|x| {
            let nt = self.nonterminal(format!("{pointer}/extra"));
            self.define(nt, x);
            e_sym(Symbol::N(nt))
        });
        let e = x.as_ref().map(|x| {
            let nt = self.nonterminal(format!("{pointer}/extras"));
            let e = e_sym(Symbol::N(nt));
            self.define(
                nt,
                Ebnf::Alt(vec![
                    x.clone(),
                    Ebnf::Seq(vec![e.clone(), e_sym(comma), x.clone()]),
                ]),
            );
            e
        });
        let l: Vec<NonterminalId> = (0..n)
            .map(|q| self.nonterminal(format!("{pointer}/last{q}")))
            .collect();
        let w: Vec<NonterminalId> = (0..n)
            .map(|q| self.nonterminal(format!("{pointer}/before{q}")))
            .collect();
        let hop = if n > HOP_OVER { SKIP_HOP } else { 1 };
        let mut free_before = true;
        for (q, kv) in kvs.into_iter().enumerate() {
            // The last pair written is one of the `hop` members before q (back to the
            // nearest required one), extras alone or, further back, whatever may precede
            // member q - hop (optional, as all after it).
            let mut before = Vec::new();
            for d in 1..=hop {
                let Some(p) = q.checked_sub(d) else {
                    if let Some(e) = &e {
                        before.push(Ebnf::Seq(vec![e.clone(), e_sym(comma)]));
                    }
                    break;
                };
                before.push(Ebnf::Seq(vec![e_sym(Symbol::N(l[p])), e_sym(comma)]));
                if !optional[p] {
                    break;
                }
                if d == hop {
                    before.push(e_sym(Symbol::N(w[p])));
                }
            }
            self.define(w[q], Ebnf::Alt(before));
            let mut last = vec![Ebnf::Seq(vec![e_sym(Symbol::N(w[q])), kv.clone()])];
            if free_before {
                last.push(kv);
            }
            if let Some(x) = &x {
                last.push(Ebnf::Seq(vec![
                    e_sym(Symbol::N(l[q])),
                    e_sym(comma),
                    x.clone(),
                ]));
            }
            self.define(l[q], Ebnf::Alt(last));
            free_before &= optional[q];
        }
        // The object may end after any member all of whose successors are optional, after
        // extras alone or with nothing written when every member is optional.
        let mut ends = Vec::new();
        for q in (0..n).rev() {
            ends.push(e_sym(Symbol::N(l[q])));
            if !optional[q] {
                break;
            }
        }
        if free_before {
            if let Some(e) = e {
                ends.push(e);
            }
            if !nonempty {
                ends.push(eps());
            }
        }
        Ebnf::Alt(ends)
    }

    /// The nonterminal of the pair `key : value`, one per (key, value) across the schema,
    /// made of the key and the nonterminal of `: value`, one per value. Written inline in
    /// each object's members, a property's parser states (after its key, after its colon)
    /// were each object's own, and every one a stack top the mask automaton explores a
    /// start for; shared, objects declaring the same property (a Kubernetes schema's
    /// `metadata`, `name`, …) and values of one schema share them (~10% fewer compile
    /// instructions on large schemas), at two more reductions per pair in a commit.
    pub(super) fn pair(&mut self, key: Symbol, value: Symbol, pointer: &str) -> NonterminalId {
        if let Some(&n) = self.pairs.get(&(key, value)) {
            return n;
        }
        let c = match self.colon_values.get(&value) {
            Some(&c) => c,
            None => {
                let c = self.nonterminal(format!("{pointer}/:value"));
                let colon = self.f().colon;
                self.define(c, Ebnf::Seq(vec![e_sym(colon), e_sym(value)]));
                self.colon_values.insert(value, c);
                c
            }
        };
        let n = self.nonterminal(format!("{pointer}/pair"));
        self.define(n, Ebnf::Seq(vec![e_sym(key), e_sym(Symbol::N(c))]));
        self.pairs.insert((key, value), n);
        n
    }
}

/// The keywords that decide an object's names, read and checked by
/// [`Lowerer::object_names`].
struct ObjectNames<'m> {
    /// `propertyNames`' language, when it is one the lowering compiles and not every name.
    names_in: Option<(Hir, ValueMatcher)>,
    /// `propertyNames` admits no name at all.
    no_names: bool,
    properties: Option<&'m Map<String, Value>>,
    required: Vec<String>,
    /// `additionalProperties` (`false` when no name is admitted).
    addl: Value,
    addl_false: bool,
    /// `patternProperties` in schema order, each with its value language.
    patterns: Vec<(String, Value)>,
    pattern_hirs: Vec<(Hir, ValueMatcher)>,
    /// The names of `^name$` patterns.
    pattern_names: Vec<String>,
    /// Indices into `patterns` of the other patterns.
    open_patterns: Vec<usize>,
    /// The names no open pattern matches, when written as the complement of the one.
    complement: Option<PatternSplit>,
    /// The names no open pattern matches, written as any name minus their languages.
    complement_except: bool,
    /// Open patterns with different schemas: one pair per non-empty set of them.
    regions: bool,
}

impl ObjectNames<'_> {
    fn name_ok(&self, k: &str) -> bool {
        !self.no_names && self.names_in.as_ref().is_none_or(|(_, mm)| mm.is_match(k))
    }

    /// The conjunction of the patterns a name matches, if any.
    fn matched(&self, name: &str) -> Option<Value> {
        let mut schema: Option<Value> = None;
        for ((_, ps), (_, mm)) in self.patterns.iter().zip(&self.pattern_hirs) {
            if mm.is_match(name) {
                schema = Some(match schema {
                    None => ps.clone(),
                    Some(s) => conjoin(&s, ps),
                });
            }
        }
        schema
    }

    /// The schema of a name that is not in `properties`: every pattern it matches, or
    /// additionalProperties when none does.
    fn unlisted(&self, name: &str) -> Value {
        self.matched(name).unwrap_or_else(|| self.addl.clone())
    }
}

/// A declared property: its name, its schema (patterns it matches conjoined) and where
/// the schema is.
struct Declared {
    name: String,
    schema: Value,
    pointer: String,
    required: bool,
}

/// The property count an object's members track, from [`Lowerer::property_count`].
#[derive(Clone, Copy)]
struct PropertyCount {
    /// The fewest properties.
    lo: u64,
    /// The highest count tracked.
    cap: u64,
    /// Counts at `cap` stay there (no maximum), rather than ending the object.
    saturates: bool,
    /// Whether the count is tracked in the grammar at all.
    counted: bool,
}
