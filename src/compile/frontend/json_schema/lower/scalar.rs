//! Scalars: `enum` / `const` values, numbers and strings (patterns, formats, lengths,
//! counted strings).

use super::*;

impl<'a> Lowerer<'a> {
    /// `enum`/`const`: the listed values that the rest of the schema accepts.
    pub(super) fn enumerated(
        &mut self,
        values: &[Value],
        m: &Map<String, Value>,
        types: &Option<Vec<String>>,
        forbidden: &[String],
        (not_strings, not_bools): (&[Hir], &[bool]),
        pointer: &str,
    ) -> Result<Ebnf, SchemaError> {
        // Strings outside every language of `not_strings`.
        let kept = ValueMatcher::all(&[])
            .and_then(|mm| mm.except(not_strings))
            .map_err(|e| SchemaError::Unsupported {
                keyword: "not".into(),
                pointer: pointer.to_string(),
                reason: e,
            })?;
        let mut alts = Vec::new();
        for v in values {
            if v.as_str().is_some_and(|s| !kept.is_match(s))
                || v.as_bool().is_some_and(|b| not_bools.contains(&b))
            {
                continue;
            }
            let t = json_type_of(v);
            if !type_allows(types, t) {
                continue;
            }
            if v.as_object()
                .is_some_and(|o| forbidden.iter().any(|f| o.contains_key(f)))
            {
                continue;
            }
            if !self.value_ok(v, m, pointer)? {
                continue;
            }
            alts.push(self.exact_value(v)?);
        }
        Ok(Ebnf::Alt(alts))
    }

    /// Whether an enumerated value satisfies the scalar keywords beside the `enum`.
    pub(super) fn value_ok(
        &mut self,
        v: &Value,
        m: &Map<String, Value>,
        pointer: &str,
    ) -> Result<bool, SchemaError> {
        match v {
            Value::String(s) => {
                if let Some(n) = count(m, "minLength", pointer)? {
                    if (s.chars().count() as u64) < n {
                        return Ok(false);
                    }
                }
                if let Some(n) = count(m, "maxLength", pointer)? {
                    if (s.chars().count() as u64) > n {
                        return Ok(false);
                    }
                }
                for p in m.get("pattern").map(contains_list).unwrap_or_default() {
                    let Some(p) = p.as_str() else {
                        return Err(invalid("pattern", pointer, "must be a string"));
                    };
                    match parse_pattern(p).and_then(|h| ValueMatcher::new(&h)) {
                        Ok(mm) if !mm.is_match(s) => return Ok(false),
                        Ok(_) => {}
                        Err(e) => {
                            self.refuse("pattern", pointer, &e)?;
                        }
                    }
                }
                Ok(true)
            }
            Value::Number(n) => {
                let Some(x) = n.as_f64() else { return Ok(true) };
                let get = |k: &str| m.get(k).and_then(Value::as_f64);
                let excl_bool = |k: &str| m.get(k).and_then(Value::as_bool).unwrap_or(false);
                if let Some(lo) = get("minimum") {
                    if x < lo || (excl_bool("exclusiveMinimum") && x == lo) {
                        return Ok(false);
                    }
                }
                if let Some(hi) = get("maximum") {
                    if x > hi || (excl_bool("exclusiveMaximum") && x == hi) {
                        return Ok(false);
                    }
                }
                if get("exclusiveMinimum").is_some_and(|lo| x <= lo)
                    || get("exclusiveMaximum").is_some_and(|hi| x >= hi)
                {
                    return Ok(false);
                }
                if let Some(d) = get("multipleOf") {
                    if d > 0.0 && (x / d).fract() != 0.0 {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Value::Array(_) | Value::Object(_) => {
                let structural = [
                    "items",
                    "prefixItems",
                    "additionalItems",
                    "minItems",
                    "maxItems",
                    "uniqueItems",
                    "properties",
                    "required",
                    "additionalProperties",
                    "patternProperties",
                    "minProperties",
                    "maxProperties",
                ];
                if let Some(k) = structural.iter().find(|k| m.contains_key(**k)) {
                    self.refuse(
                        "enum",
                        pointer,
                        &format!("an array/object value beside `{k}`"),
                    )?;
                }
                Ok(true)
            }
            _ => Ok(true),
        }
    }

    /// Exactly one JSON value (objects with their keys in the order given).
    pub(super) fn exact_value(&mut self, v: &Value) -> Result<Ebnf, SchemaError> {
        let fx = self.f();
        let (lb, rb, lk, rk, comma, colon) = (
            fx.lbrace, fx.rbrace, fx.lbrack, fx.rbrack, fx.comma, fx.colon,
        );
        Ok(match v {
            Value::Null => e_sym(fx.null),
            Value::Bool(true) => e_sym(fx.tru),
            Value::Bool(false) => e_sym(fx.fals),
            Value::String(s) => e_sym(Symbol::T(self.literal(s))),
            Value::Number(n) => {
                let re = value_spellings(n);
                e_sym(Symbol::T(self.terminal(&n.to_string(), &re, 0, false)))
            }
            Value::Array(a) => {
                let mut seq = vec![e_sym(lk)];
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        seq.push(e_sym(comma));
                    }
                    seq.push(self.exact_value(x)?);
                }
                seq.push(e_sym(rk));
                Ebnf::Seq(seq)
            }
            Value::Object(o) => {
                let mut seq = vec![e_sym(lb)];
                for (i, (k, x)) in o.iter().enumerate() {
                    if i > 0 {
                        seq.push(e_sym(comma));
                    }
                    seq.push(e_sym(Symbol::T(self.literal(k))));
                    seq.push(e_sym(colon));
                    seq.push(self.exact_value(x)?);
                }
                seq.push(e_sym(rb));
                Ebnf::Seq(seq)
            }
        })
    }

    /// Numbers of `set` meeting `m`'s bounds and `multipleOf`, and no multiple of any
    /// of `not_multiples`.
    pub(super) fn number(
        &mut self,
        m: &Map<String, Value>,
        set: NumberSet,
        not_multiples: &[u32],
        pointer: &str,
    ) -> Result<Ebnf, SchemaError> {
        if set == NumberSet::All && !not_multiples.is_empty() {
            // The non-multiples of integers: the other integers and every non-integer.
            let ints = self.number(m, NumberSet::Integers, not_multiples, pointer)?;
            let fracs = self.number(m, NumberSet::NonIntegers, &[], pointer)?;
            return Ok(Ebnf::Alt(vec![ints, fracs]));
        }
        let (integer, div, divisible) = self.divisibility(m, set, not_multiples, pointer)?;
        let (lo, hi) = number_bounds(m, pointer)?;
        if lo.is_none() && hi.is_none() {
            let re = if integer { ANY_INTEGER } else { ANY_NUMBER };
            let name = if integer { "INTEGER" } else { "NUMBER" };
            return Ok(self.number_terminal(name, re, div, divisible));
        }
        let to_bound = |b, upper| integral_bound(b, upper, integer);
        let fractional = |b: Option<(f64, bool)>| b.is_some_and(|(x, _)| x.fract() != 0.0);
        if !integer
            && (fractional(lo) || fractional(hi))
            && [lo, hi]
                .iter()
                .flatten()
                .all(|(x, _)| x.is_finite() && x.abs() <= BOUND_LIMIT)
        {
            return self.decimal_between(lo, hi, div, pointer);
        }
        let (Some(lb), Some(ub)) = (to_bound(lo, false), to_bound(hi, true)) else {
            let kw = if lo.is_some_and(|(x, _)| x.fract() != 0.0 || x.abs() > BOUND_LIMIT) {
                "minimum"
            } else {
                "maximum"
            };
            self.refuse(
                kw,
                pointer,
                "a non-integer bound on a number is not compiled",
            )?;
            let re = if integer { ANY_INTEGER } else { ANY_NUMBER };
            return Ok(self.number_terminal("NUMBER", re, div, divisible));
        };
        let re = if integer {
            integer_range(lb, ub)
        } else {
            decimal_range(lb, ub)
        };
        Ok(match re {
            None => nothing(),
            Some(re) => {
                let name = format!(
                    "{}[{:?}..{:?}]",
                    if integer { "INTEGER" } else { "NUMBER" },
                    lo,
                    hi
                );
                self.number_terminal(&name, &re, div, divisible)
            }
        })
    }

    /// What `multipleOf` and the excluded multiples make of numbers in `set`: whether
    /// they are integers, the languages every number terminal is intersected with (the
    /// multiples by powers of ten, the non-integers), and the divisibility conditions
    /// the lexer runs as remainder automata.
    fn divisibility(
        &mut self,
        m: &Map<String, Value>,
        set: NumberSet,
        not_multiples: &[u32],
        pointer: &str,
    ) -> Result<(bool, Vec<String>, Vec<Divisibility>), SchemaError> {
        let mut integer = set == NumberSet::Integers;
        // Divisibility conditions the lexer runs as remainder automata.
        let mut divisible: Vec<Divisibility> = Vec::new();
        if set == NumberSet::Integers {
            divisible.extend(not_multiples.iter().map(|&divisor| Divisibility {
                divisor,
                multiple: false,
            }));
        }
        // The multiples (and the non-integers), as languages every number terminal here
        // is intersected with.
        let mut div: Vec<String> = Vec::new();
        if set == NumberSet::NonIntegers {
            div.push(NON_INTEGER.to_string());
        }
        if let Some(d) = m.get("multipleOf") {
            match d.as_f64() {
                Some(1.0) => integer = true,
                // Rust prints a finite f64 in plain decimal: the divisor as written.
                Some(x) if x > 0.0 => match multiple_of(&format!("{x}")) {
                    Some((re, integral)) => {
                        integer |= integral;
                        div.push(re);
                    }
                    None => match integer_divisor(d) {
                        Some(divisor) => {
                            integer = true;
                            divisible.push(Divisibility {
                                divisor,
                                multiple: true,
                            });
                        }
                        None => self.refuse(
                            "multipleOf",
                            pointer,
                            &format!(
                                "divisibility is compiled only by powers of ten and by integers up to {MAX_DIVISOR}"
                            ),
                        )?,
                    },
                },
                _ => return Err(invalid("multipleOf", pointer, "must be a positive number")),
            }
        }
        Ok((integer, div, divisible))
    }

    /// A number terminal: `re` intersected with `also` (the multiples, when constrained).
    pub(super) fn number_terminal(
        &mut self,
        name: &str,
        re: &str,
        also: Vec<String>,
        divisible: Vec<Divisibility>,
    ) -> Ebnf {
        let key = (re.to_string(), also, Vec::new(), 0, divisible);
        e_sym(Symbol::T(self.make_terminal(name, key, false)))
    }

    /// Decimals (no exponent) between bounds of which one at least is not an integer:
    /// the lower half-line's terminal intersected with the upper one's.
    pub(super) fn decimal_between(
        &mut self,
        lo: Option<(f64, bool)>,
        hi: Option<(f64, bool)>,
        div: Vec<String>,
        pointer: &str,
    ) -> Result<Ebnf, SchemaError> {
        if let (Some((l, le)), Some((h, he))) = (lo, hi) {
            if l > h || (l == h && (le || he)) {
                return Ok(nothing());
            }
        }
        let half = |b: Option<(f64, bool)>, side: Side| -> Option<String> {
            let (x, exclusive) = b?;
            if x.fract() == 0.0 {
                let bound = Some(Bound {
                    value: x as i128,
                    exclusive,
                });
                return match side {
                    Side::Above => decimal_range(bound, None),
                    Side::Below => decimal_range(None, bound),
                };
            }
            // Rust prints a finite f64 in plain decimal, shortest round-trip digits: the
            // bound as the schema wrote it.
            decimal_half(&format!("{x}"), exclusive, side)
        };
        let mut halves = Vec::new();
        for (b, side, kw) in [(lo, Side::Above, "minimum"), (hi, Side::Below, "maximum")] {
            match (b, half(b, side)) {
                (_, Some(re)) => halves.push(re),
                (None, None) => {}
                (Some(_), None) => {
                    self.refuse(kw, pointer, "a bound that is not a plain decimal")?;
                    halves.push(ANY_NUMBER.to_string());
                }
            }
        }
        // At least one bound is set (the caller checked).
        let main = halves.remove(0);
        halves.extend(div);
        let name = format!("NUMBER[{lo:?}..{hi:?}]");
        Ok(self.number_terminal(&name, &main, halves, Vec::new()))
    }

    /// A string schema: the intersection of its `pattern`, `format` and length languages,
    /// minus the languages of `except` (from a `not`).
    pub(super) fn string(
        &mut self,
        m: &Map<String, Value>,
        except: &[Hir],
        pointer: &str,
    ) -> Result<Ebnf, SchemaError> {
        let mut parts: Vec<(&str, Hir)> = Vec::new();
        // One pattern, or the list an allOf merge leaves: every one must match.
        for p in m.get("pattern").map(contains_list).unwrap_or_default() {
            let Some(p) = p.as_str() else {
                return Err(invalid("pattern", pointer, "must be a string"));
            };
            match parse_pattern(p) {
                Ok(h) => parts.push(("pattern", h)),
                Err(e) => self.refuse("pattern", pointer, &format!("{e} in /{p}/"))?,
            }
        }
        if let Some(f) = m.get("format").and_then(Value::as_str) {
            match format(f) {
                Format::Regular(re) => parts.push(("format", parse_value_regex(&re))),
                Format::NotRegular => self.refuse(
                    "format",
                    pointer,
                    &format!("format `{f}` is not a regular language"),
                )?,
                Format::Annotation => {}
            }
        }
        let min = count(m, "minLength", pointer)?;
        let max = count(m, "maxLength", pointer)?;
        // The length bounds as one more value language, unless a part already implies them.
        let lo = min.unwrap_or(0);
        let implied = parts.iter().any(|(_, h)| {
            let (pmin, pmax) = char_len(h);
            pmin as u64 >= lo && max.is_none_or(|x| pmax.is_some_and(|p| p as u64 <= x))
        });
        if (lo > 0 || max.is_some()) && !implied {
            if max.is_some_and(|x| x < lo) {
                return Ok(nothing());
            }
            let longest = max.unwrap_or(lo);
            let kw = if max.is_some() {
                "maxLength"
            } else {
                "minLength"
            };
            // Beside other constraints, a length is counted from `COUNTED_FROM`, or from
            // `COUNTED_FREE_PATTERN_FROM` when none of them counts characters itself.
            let counts_beside = longest >= COUNTED_FROM
                || longest >= COUNTED_FREE_PATTERN_FROM
                    && !parts.iter().any(|(_, h)| has_bounded_repetition(h))
                    && !except.iter().any(has_bounded_repetition);
            if longest > MAX_LEXER_COUNT {
                self.refuse(
                    kw,
                    pointer,
                    &format!("lengths above {MAX_LEXER_COUNT} characters are not compiled"),
                )?;
            } else if longest >= COUNTED_LENGTH_FROM && parts.is_empty() && except.is_empty() {
                // The length is the only constraint: the lexer counts characters instead
                // of unrolling them (`ir::Counted`).
                return Ok(self.counted_string(lo as u32, max.map(|x| x as u32), pointer));
            } else if let Some(e) = counts_beside
                .then(|| self.counted_pattern(&parts, except, lo as u32, max, pointer))
                .transpose()?
                .flatten()
            {
                return Ok(e);
            } else if longest > MAX_COUNTED_LENGTH {
                self.refuse(
                    kw,
                    pointer,
                    &format!(
                        "lengths above {MAX_COUNTED_LENGTH} characters are not compiled beside \
                         a pattern, format or `not` that a longer string cannot always still \
                         complete"
                    ),
                )?;
            } else {
                parts.push((
                    kw,
                    Hir::repetition(Repetition {
                        min: lo as u32,
                        max: max.map(|x| x as u32),
                        greedy: true,
                        sub: Box::new(any_char()),
                    }),
                ));
            }
        }
        if parts.is_empty() {
            if except.is_empty() {
                return Ok(e_sym(self.any_string()));
            }
            parts.push(("not", any_string_hir()));
        }
        // The terminal is the intersection of the parts' quoted languages: the first as
        // its regex, the others as `also` (intersected in the lexer builder).
        let (mut res, not_res) = quoted_parts(&parts, except, pointer)?;
        let matcher = value_matcher(&parts, except, pointer)?;
        let key = format!("{}\u{1}{}", res.join("\u{0}"), not_res.join("\u{0}"));
        if let Some(&n) = self.string_memo.get(&key) {
            return Ok(e_sym(Symbol::N(n)));
        }
        let re = res.remove(0);
        let t = self.terminal_also(&format!("STRING<{pointer}>"), &re, res, not_res);
        let n = self.string_nt(key, StringRule::Constrained(t, matcher));
        Ok(e_sym(Symbol::N(n)))
    }

    /// A string of `lo` to `hi` characters and no other constraint, as a counted
    /// terminal.
    pub(super) fn counted_string(&mut self, lo: u32, hi: Option<u32>, pointer: &str) -> Ebnf {
        let key = format!("\u{2}{lo}..{hi:?}");
        if let Some(&n) = self.string_memo.get(&key) {
            return e_sym(Symbol::N(n));
        }
        let t = CountedPattern {
            counted: counted_chars(lo, hi),
            regex: ANY_STRING.to_string(),
            also: Vec::new(),
            except: Vec::new(),
        };
        let t = self.counted_terminal(&format!("STRING<{pointer}>"), t);
        let matcher = ValueMatcher::lengths(u64::from(lo), hi.map(u64::from));
        let n = self.string_nt(key, StringRule::Constrained(t, matcher));
        e_sym(Symbol::N(n))
    }

    /// A string of `lo` to `hi` characters in the languages `parts` and none of `except`,
    /// as a counted terminal with that pattern — when the lexer counts it exactly (a
    /// value the pattern can complete after `k` more characters can also after `k + 1`:
    /// `lexer::build::counted_is_exact`). `None` otherwise.
    pub(super) fn counted_pattern(
        &mut self,
        parts: &[(&str, Hir)],
        except: &[Hir],
        lo: u32,
        hi: Option<u64>,
        pointer: &str,
    ) -> Result<Option<Ebnf>, SchemaError> {
        let hi = hi.map(|x| x as u32);
        let mut parts = parts.to_vec();
        if parts.is_empty() {
            parts.push(("not", any_string_hir()));
        }
        let (mut res, not_res) = quoted_parts(&parts, except, pointer)?;
        let regex = res.remove(0);
        let t = CountedPattern {
            counted: counted_chars(lo, hi),
            regex,
            also: res,
            except: not_res,
        };
        let pattern = format!(
            "{}\u{0}{}\u{1}{}",
            t.regex,
            t.also.join("\u{0}"),
            t.except.join("\u{0}")
        );
        let key = format!("\u{2}{lo}..{hi:?}\u{1}{pattern}");
        if let Some(&n) = self.string_memo.get(&key) {
            return Ok(Some(e_sym(Symbol::N(n))));
        }
        // A pattern the lexer builder cannot take (too large a DFA, say) is not counted
        // either: the caller unrolls or refuses it, and the builder reports it there.
        let exact = *self
            .counts_exactly
            .entry(pattern)
            .or_insert_with(|| counted_is_exact(&t.terminal("")).unwrap_or(false));
        if !exact {
            return Ok(None);
        }
        let matcher =
            value_matcher(&parts, except, pointer)?.with_lengths(u64::from(lo), hi.map(u64::from));
        let t = self.counted_terminal(&format!("STRING<{pointer}>"), t);
        let n = self.string_nt(key, StringRule::Constrained(t, matcher));
        Ok(Some(e_sym(Symbol::N(n))))
    }
}

/// The count of a JSON string of `lo` to `hi` characters.
pub(super) fn counted_chars(lo: u32, hi: Option<u32>) -> Counted {
    Counted {
        open: b'"',
        // Spelling one character cannot fail: it is a plain class.
        unit: spell(&any_char())
            .expect("one character spells")
            .to_string(),
        close: b'"',
        lo,
        hi,
    }
}

/// The matcher of a string's value languages `parts` minus the languages `except`.
pub(super) fn value_matcher(
    parts: &[(&str, Hir)],
    except: &[Hir],
    pointer: &str,
) -> Result<ValueMatcher, SchemaError> {
    let hirs: Vec<Hir> = parts.iter().map(|(_, h)| h.clone()).collect();
    ValueMatcher::all(&hirs)
        .and_then(|mm| mm.except(except))
        .map_err(|e| SchemaError::Unsupported {
            keyword: parts[0].0.into(),
            pointer: pointer.to_string(),
            reason: e,
        })
}

/// The quoted regexes of a string's value languages `parts` and of the languages
/// `except` it must avoid.
pub(super) fn quoted_parts(
    parts: &[(&str, Hir)],
    except: &[Hir],
    pointer: &str,
) -> Result<(Vec<String>, Vec<String>), SchemaError> {
    let quote = |kw: &str, h: &Hir| {
        quoted_regex(h).map_err(|e| SchemaError::Unsupported {
            keyword: kw.to_string(),
            pointer: pointer.to_string(),
            reason: e,
        })
    };
    let res = parts
        .iter()
        .map(|(kw, h)| quote(kw, h))
        .collect::<Result<_, _>>()?;
    let not_res = except
        .iter()
        .map(|h| quote("not", h))
        .collect::<Result<_, _>>()?;
    Ok((res, not_res))
}

/// A number schema's bounds, each `(value, exclusive)`: the tighter of `minimum` (with a
/// draft-4 boolean `exclusiveMinimum`) and a numeric `exclusiveMinimum`, likewise above.
fn number_bounds(
    m: &Map<String, Value>,
    pointer: &str,
) -> Result<(NumBound, NumBound), SchemaError> {
    let mut lo: Option<(f64, bool)> = None;
    let mut hi: Option<(f64, bool)> = None;
    let num = |k: &str| -> Result<Option<f64>, SchemaError> {
        match m.get(k) {
            None => Ok(None),
            Some(Value::Number(n)) => Ok(n.as_f64()),
            Some(Value::Bool(_)) => Ok(None),
            Some(_) => Err(invalid(k, pointer, "must be a number")),
        }
    };
    let flag = |k: &str| m.get(k).and_then(Value::as_bool).unwrap_or(false);
    if let Some(x) = num("minimum")? {
        lo = Some((x, flag("exclusiveMinimum")));
    }
    if let Some(x) = num("maximum")? {
        hi = Some((x, flag("exclusiveMaximum")));
    }
    if let Some(x) = num("exclusiveMinimum")? {
        if lo.is_none_or(|(l, _)| x >= l) {
            lo = Some((x, true));
        }
    }
    if let Some(x) = num("exclusiveMaximum")? {
        if hi.is_none_or(|(h, _)| x <= h) {
            hi = Some((x, true));
        }
    }
    Ok((lo, hi))
}

/// A bound of a number schema: `(value, exclusive)`.
type NumBound = Option<(f64, bool)>;

/// Bounds past this magnitude are not compiled.
const BOUND_LIMIT: f64 = 1e30;

/// `b` as an integral bound (`Some(None)` when absent): for integers rounded inward and
/// inclusive; `None` when it is not finite, past [`BOUND_LIMIT`], or fractional on a
/// number.
fn integral_bound(b: NumBound, upper: bool, integer: bool) -> Option<Option<Bound>> {
    match b {
        None => Some(None),
        Some((x, _)) if !x.is_finite() || x.abs() > BOUND_LIMIT => None,
        Some((x, excl)) if integer => {
            // Integers in the range: round the bound inward.
            let v = if upper {
                if excl && x.fract() == 0.0 {
                    x - 1.0
                } else {
                    x.floor()
                }
            } else if excl && x.fract() == 0.0 {
                x + 1.0
            } else {
                x.ceil()
            };
            Some(Some(Bound {
                value: v as i128,
                exclusive: false,
            }))
        }
        Some((x, excl)) if x.fract() == 0.0 => Some(Some(Bound {
            value: x as i128,
            exclusive: excl,
        })),
        Some(_) => None,
    }
}
