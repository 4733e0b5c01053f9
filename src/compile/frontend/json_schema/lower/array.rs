//! Arrays: `items`, `prefixItems`, counted items, `contains`, and `uniqueItems` over short
//! lists of scalars.

use super::*;

impl<'a> Lowerer<'a> {
    /// `uniqueItems` over items drawn from a short list of values (an `enum`/`const` of
    /// strings, booleans or null): one nonterminal per set of values used so far, so no
    /// value can come twice. `None` when the items are not such a list.
    pub(super) fn unique_items(
        &mut self,
        m: &Map<String, Value>,
        min: u64,
        max: Option<u64>,
        pointer: &str,
    ) -> Result<Option<Ebnf>, SchemaError> {
        let tuple = m.contains_key("prefixItems") || m.get("items").is_some_and(Value::is_array);
        let Some(items) = m
            .get("items")
            .filter(|_| !tuple && !m.contains_key("contains"))
        else {
            return Ok(None);
        };
        let at = format!("{pointer}/items");
        let Some(listed) = oneof_candidates(&[(items.clone(), at)], &self.resolver) else {
            return Ok(None);
        };
        let Some(values) = finite::filter(self.resolver.root(), items, &listed) else {
            return Ok(None);
        };
        if values.len() > MAX_UNIQUE_VALUES
            || values
                .iter()
                .any(|v| v.is_number() || v.is_array() || v.is_object())
        {
            return Ok(None);
        }
        let k = values.len();
        let max = max.map_or(k, |x| (x as usize).min(k));
        let min = min as usize;
        if min > max {
            return Ok(Some(nothing()));
        }
        let mut syms = Vec::with_capacity(k);
        for v in &values {
            let e = self.exact_value(v)?;
            let n = self.nonterminal(format!("{pointer}/unique:{v}"));
            self.define(n, e);
            syms.push(Symbol::N(n));
        }
        let fx = self.f();
        let (lk, rk, comma) = (fx.lbrack, fx.rbrack, fx.comma);
        // used[s]: the values in bit set s are written; more may follow, each new.
        let used: Vec<NonterminalId> = (0..1usize << k)
            .map(|s| self.nonterminal(format!("{pointer}/unique{s:b}")))
            .collect();
        for (s, &nt) in used.iter().enumerate() {
            let n = s.count_ones() as usize;
            let mut alts = Vec::new();
            if n >= min {
                alts.push(eps());
            }
            if n < max {
                for (j, &sym) in syms.iter().enumerate().filter(|(j, _)| s & (1 << j) == 0) {
                    alts.push(Ebnf::Seq(vec![
                        e_sym(comma),
                        e_sym(sym),
                        e_sym(Symbol::N(used[s | 1 << j])),
                    ]));
                }
            }
            self.define(nt, Ebnf::Alt(alts));
        }
        let mut body = Vec::new();
        if min == 0 {
            body.push(eps());
        }
        if max > 0 {
            for (j, &sym) in syms.iter().enumerate() {
                body.push(Ebnf::Seq(vec![e_sym(sym), e_sym(Symbol::N(used[1 << j]))]));
            }
        }
        let body = Ebnf::Alt(body);
        Ok(Some(Ebnf::Seq(vec![e_sym(lk), body, e_sym(rk)])))
    }

    pub(super) fn array(
        &mut self,
        m: &Map<String, Value>,
        pointer: &str,
    ) -> Result<Ebnf, SchemaError> {
        let min = count(m, "minItems", pointer)?.unwrap_or(0);
        let max = count(m, "maxItems", pointer)?;
        if min > MAX_COUNTED_ITEMS || max.is_some_and(|x| x > MAX_COUNTED_ITEMS) {
            let kw = if min > MAX_COUNTED_ITEMS {
                "minItems"
            } else {
                "maxItems"
            };
            self.refuse(
                kw,
                pointer,
                &format!("item counts above {MAX_COUNTED_ITEMS} are not compiled exactly"),
            )?;
        }
        let min = if min > MAX_COUNTED_ITEMS { 0 } else { min };
        let max = max.filter(|&x| x <= MAX_COUNTED_ITEMS);
        if m.get("uniqueItems") == Some(&Value::Bool(true)) && max.is_none_or(|x| x > 1) {
            if let Some(e) = self.unique_items(m, min, max, pointer)? {
                return Ok(e);
            }
            self.refuse(
                "uniqueItems",
                pointer,
                &format!(
                    "uniqueness of items is not a context-free property (compiled only over \
                     at most {MAX_UNIQUE_VALUES} listed strings, booleans or null)"
                ),
            )?;
        }
        let (prefix, rest, prefix_kw): (Vec<Value>, Value, &str) =
            match (m.get("prefixItems"), m.get("items")) {
                (Some(Value::Array(p)), items) => (
                    p.clone(),
                    items.cloned().unwrap_or(Value::Bool(true)),
                    "prefixItems",
                ),
                (_, Some(Value::Array(p))) => (
                    p.clone(),
                    m.get("additionalItems")
                        .cloned()
                        .unwrap_or(Value::Bool(true)),
                    "items",
                ),
                (_, Some(items)) => (Vec::new(), items.clone(), "items"),
                (_, None) => (Vec::new(), Value::Bool(true), "items"),
            };
        let mut item_syms = Vec::new();
        for (i, p) in prefix.iter().enumerate() {
            item_syms.push(self.schema(p, &format!("{pointer}/{prefix_kw}/{i}"))?);
        }
        let rest_ptr = if prefix.is_empty() || prefix_kw == "prefixItems" {
            format!("{pointer}/items")
        } else {
            format!("{pointer}/additionalItems")
        };
        let rest_sym = if rest == Value::Bool(false) {
            None
        } else {
            Some(self.schema(&rest, &rest_ptr)?)
        };
        let comma = self.f().comma;
        // Elements from index i on (`first`: nothing written yet).
        fn elements(
            i: u64,
            first: bool,
            items: &[Symbol],
            rest: Option<Symbol>,
            min: u64,
            max: Option<u64>,
            comma: Symbol,
        ) -> Ebnf {
            if max.is_some_and(|x| i >= x) {
                return eps();
            }
            let sep = |e: Ebnf| {
                if first {
                    e
                } else {
                    Ebnf::Seq(vec![e_sym(comma), e])
                }
            };
            if (i as usize) < items.len() {
                let this = Ebnf::Seq(vec![
                    sep(e_sym(items[i as usize])),
                    elements(i + 1, false, items, rest, min, max, comma),
                ]);
                return if i >= min {
                    Ebnf::Alt(vec![eps(), this])
                } else {
                    this
                };
            }
            let need = min.saturating_sub(i);
            let Some(r) = rest else {
                return if need > 0 { nothing() } else { eps() };
            };
            let allow = max.map(|x| x - i);
            let tail = |lo: u64, hi: Option<u64>| Ebnf::Repeat {
                inner: Box::new(Ebnf::Seq(vec![e_sym(comma), e_sym(r)])),
                min: lo as u32,
                max: hi.map(|h| h as u32),
            };
            if first {
                let some = Ebnf::Seq(vec![
                    e_sym(r),
                    tail(need.saturating_sub(1), allow.map(|a| a.saturating_sub(1))),
                ]);
                if need == 0 {
                    Ebnf::Alt(vec![eps(), some])
                } else {
                    some
                }
            } else {
                tail(need, allow)
            }
        }
        if max.is_some_and(|x| x < min) {
            return Ok(nothing());
        }
        let (lk, rk) = (self.f().lbrack, self.f().rbrack);
        if let (Some(c), Some(r)) = (m.get("contains"), rest_sym) {
            if contains_compiles(m) {
                let body = self.witnessed(&rest, &contains_list(c), r, pointer)?;
                return Ok(Ebnf::Seq(vec![e_sym(lk), body, e_sym(rk)]));
            }
        }
        let body = elements(0, true, &item_syms, rest_sym, min, max, comma);
        Ok(Ebnf::Seq(vec![e_sym(lk), body, e_sym(rk)]))
    }
}
