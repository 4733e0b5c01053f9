//! EBNF trees and their lowering into the BNF productions of the IR.
//!
//! Both front ends resolve names to symbols and hand each rule body over as an [`Ebnf`]
//! tree; [`BnfBuilder`] expands it the way Lark does, so that LR tables look like Lark's:
//! alternations and optionals inside a sequence are distributed into separate productions
//! (`a (b|c)? d` → `a d | a b d | a c d`), `x+` becomes a left-recursive helper
//! (`P → x | P x`), `x*` is an optional `x+`, and bounded repeats `x{m,n}` are spelled out
//! when short, else counted by left-recursive helpers (`T_k → T_{k-1} x`).
//! Distribution is capped: a sequence whose expansion would exceed
//! [`MAX_ALTERNATIVES`] gets its widest parts factored into helper nonterminals instead.
//! None of this changes the language.

use std::hash::BuildHasher;

use hashbrown::HashMap;

use crate::compile::error::{GrammarError, Span};
use crate::compile::grammar::ir::{Nonterminal, Production, Symbol};
use crate::ids::NonterminalId;

/// Most productions one rule body may distribute into before parts are factored out.
pub const MAX_ALTERNATIVES: usize = 64;
/// Largest repetition bound (`x{m,n}`, `x ~ m..n`); bounds grammar size.
pub const MAX_REPEAT: u32 = 10_000;
/// Most right-hand-side symbols in the whole grammar; bounds memory.
pub const MAX_SYMBOLS: usize = 4_000_000;
/// Bounded repeats with at most this many optional copies are spelled out as alternatives;
/// longer ones become a left-recursive counting chain (linear size, flat stack).
const SPELL_OUT: u32 = 4;

/// An EBNF expression over resolved symbols.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Ebnf {
    /// One symbol.
    Sym(Symbol),
    /// Concatenation (empty = ε).
    Seq(Vec<Ebnf>),
    /// Alternation.
    Alt(Vec<Ebnf>),
    /// `inner` repeated `min..=max` times (`max = None`: unbounded).
    Repeat {
        /// What is repeated.
        inner: Box<Ebnf>,
        /// Fewest copies.
        min: u32,
        /// Most copies, if bounded.
        max: Option<u32>,
    },
}

impl Ebnf {
    /// `inner?`.
    pub fn optional(inner: Ebnf) -> Ebnf {
        Ebnf::Repeat {
            inner: Box::new(inner),
            min: 0,
            max: Some(1),
        }
    }
}

/// Accumulates nonterminals and productions while rule bodies are lowered.
pub struct BnfBuilder {
    nonterminals: Vec<Nonterminal>,
    productions: Vec<Production>,
    /// Indices into `productions` by the hash of their `(lhs, rhs)`: a repeat is found
    /// without a second copy of every right-hand side.
    seen: hashbrown::HashTable<u32>,
    hasher: hashbrown::DefaultHashBuilder,
    helpers: HashMap<(&'static str, Ebnf), NonterminalId>,
    symbols: usize,
}

type Alts = Vec<Vec<Symbol>>;

/// Alternatives without repeats, in order of first appearance. Few are compared in turn;
/// past [`DISTINCT_SCAN`] a hash set takes over, since an alternation of thousands of
/// items (an `anyOf` of 1,500 objects) made the pairwise scan quadratic.
#[derive(Default)]
struct Distinct(Alts, Option<hashbrown::HashSet<Vec<Symbol>>>);

/// Most alternatives [`Distinct`] scans for a repeat.
const DISTINCT_SCAN: usize = 16;

impl Distinct {
    fn push(&mut self, a: Vec<Symbol>) {
        let Distinct(out, set) = self;
        match set {
            Some(set) => {
                if set.insert(a.clone()) {
                    out.push(a);
                }
            }
            None if out.contains(&a) => {}
            None => {
                out.push(a);
                if out.len() > DISTINCT_SCAN {
                    *set = Some(out.iter().cloned().collect());
                }
            }
        }
    }
}

impl BnfBuilder {
    /// Starts with the named nonterminals of the grammar (ids already handed out).
    pub fn new(nonterminals: Vec<Nonterminal>) -> Self {
        Self {
            nonterminals,
            productions: Vec::new(),
            seen: Default::default(),
            hasher: Default::default(),
            helpers: HashMap::new(),
            symbols: 0,
        }
    }

    /// Adds the productions of `lhs → body`.
    pub fn define(
        &mut self,
        lhs: NonterminalId,
        body: &Ebnf,
        priority: i32,
        span: Span,
    ) -> Result<(), GrammarError> {
        let alts = self.alternatives(body, lhs, span)?;
        for rhs in alts {
            self.push(lhs, rhs, priority, span)?;
        }
        Ok(())
    }

    /// The nonterminals and productions, productions grouped by left-hand side.
    pub fn finish(self) -> (Vec<Nonterminal>, Vec<Production>) {
        let mut prods = self.productions;
        prods.sort_by_key(|p| p.lhs);
        (self.nonterminals, prods)
    }

    fn push(
        &mut self,
        lhs: NonterminalId,
        rhs: Vec<Symbol>,
        priority: i32,
        span: Span,
    ) -> Result<(), GrammarError> {
        let h = self.hasher.hash_one((lhs, &rhs));
        let prods = &self.productions;
        let same = |&i: &u32| {
            let p = &prods[i as usize];
            p.lhs == lhs && p.rhs == rhs
        };
        if self.seen.find(h, same).is_some() {
            return Ok(());
        }
        self.symbols += rhs.len() + 1;
        if self.symbols > MAX_SYMBOLS {
            return Err(GrammarError::TooLarge {
                span,
                what: "total size of the expanded rules".into(),
                limit: MAX_SYMBOLS,
            });
        }
        let (prods, hasher) = (&self.productions, &self.hasher);
        self.seen.insert_unique(h, prods.len() as u32, |&i| {
            let p = &prods[i as usize];
            hasher.hash_one((p.lhs, &p.rhs))
        });
        self.productions.push(Production { lhs, rhs, priority });
        Ok(())
    }

    fn helper(
        &mut self,
        kind: &'static str,
        key: Ebnf,
        parent: NonterminalId,
        span: Span,
        alts: impl FnOnce(&mut Self, NonterminalId) -> Result<Alts, GrammarError>,
    ) -> Result<NonterminalId, GrammarError> {
        if let Some(&n) = self.helpers.get(&(kind, key.clone())) {
            return Ok(n);
        }
        let id = NonterminalId::new(self.nonterminals.len());
        let name = format!(
            "{}__{}{}",
            self.nonterminals[parent.index()].name,
            kind,
            self.helpers.len()
        );
        self.nonterminals.push(Nonterminal { name, span });
        self.helpers.insert((kind, key), id);
        for rhs in alts(self, id)? {
            self.push(id, rhs, 0, span)?;
        }
        Ok(id)
    }

    /// A single symbol standing for `e`: itself if `e` is one symbol, else a helper.
    fn as_symbol(
        &mut self,
        e: &Ebnf,
        parent: NonterminalId,
        span: Span,
    ) -> Result<Symbol, GrammarError> {
        let alts = self.alternatives(e, parent, span)?;
        if alts.len() == 1 && alts[0].len() == 1 {
            return Ok(alts[0][0]);
        }
        let n = self.helper("group", e.clone(), parent, span, |_, _| Ok(alts))?;
        Ok(Symbol::N(n))
    }

    fn alternatives(
        &mut self,
        e: &Ebnf,
        parent: NonterminalId,
        span: Span,
    ) -> Result<Alts, GrammarError> {
        match e {
            Ebnf::Sym(s) => Ok(vec![vec![*s]]),
            Ebnf::Alt(items) => {
                let mut out = Distinct::default();
                for it in items {
                    for a in self.alternatives(it, parent, span)? {
                        out.push(a);
                    }
                }
                let out = out.0;
                if out.len() > MAX_ALTERNATIVES * MAX_ALTERNATIVES {
                    return Err(GrammarError::TooLarge {
                        span,
                        what: "alternatives of one rule".into(),
                        limit: MAX_ALTERNATIVES * MAX_ALTERNATIVES,
                    });
                }
                Ok(out)
            }
            Ebnf::Seq(items) => self.sequence_alternatives(items, parent, span),
            Ebnf::Repeat { inner, min, max } => {
                self.repeat_alternatives(inner, *min, *max, parent, span)
            }
        }
    }

    /// A sequence's alternatives: the product of its items' alternatives, after factoring
    /// the widest items into helper rules until the product is at most
    /// [`MAX_ALTERNATIVES`].
    fn sequence_alternatives(
        &mut self,
        items: &[Ebnf],
        parent: NonterminalId,
        span: Span,
    ) -> Result<Alts, GrammarError> {
        let mut parts: Vec<Alts> = Vec::with_capacity(items.len());
        for it in items {
            parts.push(self.alternatives(it, parent, span)?);
        }
        // Factor the widest parts out until the product is small enough.
        loop {
            let product = parts
                .iter()
                .map(|p| p.len())
                .try_fold(1usize, |a, b| a.checked_mul(b))
                .unwrap_or(usize::MAX);
            if product <= MAX_ALTERNATIVES {
                break;
            }
            let (i, _) = parts
                .iter()
                .enumerate()
                .max_by_key(|(_, p)| p.len())
                .expect("product > 1 implies a part with alternatives");
            let alts = std::mem::take(&mut parts[i]);
            let n = self.helper("group", items[i].clone(), parent, span, |_, _| Ok(alts))?;
            parts[i] = vec![vec![Symbol::N(n)]];
        }
        let mut out: Alts = vec![Vec::new()];
        for p in parts {
            let mut next = Vec::with_capacity(out.len() * p.len());
            for prefix in &out {
                for a in &p {
                    let mut v = prefix.clone();
                    v.extend_from_slice(a);
                    if !next.contains(&v) {
                        next.push(v);
                    }
                }
            }
            out = next;
        }
        Ok(out)
    }

    /// A repetition's alternatives: spelled out when its range is small, else through
    /// helper rules (`plus` for an unbounded one, `times`/`range` for a long range).
    fn repeat_alternatives(
        &mut self,
        inner: &Ebnf,
        min: u32,
        max: Option<u32>,
        parent: NonterminalId,
        span: Span,
    ) -> Result<Alts, GrammarError> {
        let too_big = |limit_hit: u32| GrammarError::TooLarge {
            span,
            what: format!("repetition count {limit_hit}"),
            limit: MAX_REPEAT as usize,
        };
        if min > MAX_REPEAT {
            return Err(too_big(min));
        }
        if let Some(m) = max {
            if m > MAX_REPEAT {
                return Err(too_big(m));
            }
        }
        if min == 0 && max == Some(1) {
            let mut out = Distinct::default();
            out.push(Vec::new());
            for a in self.alternatives(inner, parent, span)? {
                out.push(a);
            }
            return Ok(out.0);
        }
        // A repeated item that can be empty would make the helper rules cyclic
        // (P → P x with x ⇒ ε); (x | ε){m,n} is the same language as x{0,n}.
        let inner_alts = self.alternatives(inner, parent, span)?;
        let (inner, min): (Ebnf, u32) = if inner_alts.iter().any(|a| a.is_empty()) {
            let non_empty: Vec<Ebnf> = inner_alts
                .into_iter()
                .filter(|a| !a.is_empty())
                .map(|a| Ebnf::Seq(a.into_iter().map(Ebnf::Sym).collect()))
                .collect();
            if non_empty.is_empty() {
                return Ok(vec![Vec::new()]);
            }
            (Ebnf::Alt(non_empty), 0)
        } else {
            (inner.clone(), min)
        };
        if min == 0 && max == Some(1) {
            return self.alternatives(&Ebnf::optional(inner), parent, span);
        }
        let x = self.as_symbol(&inner, parent, span)?;
        match max {
            None => {
                let plus = self.helper("plus", Ebnf::Sym(x), parent, span, |_, me| {
                    Ok(vec![vec![x], vec![Symbol::N(me), x]])
                })?;
                if min == 0 {
                    Ok(vec![Vec::new(), vec![Symbol::N(plus)]])
                } else {
                    let mut v = vec![x; (min - 1) as usize];
                    v.push(Symbol::N(plus));
                    Ok(vec![v])
                }
            }
            Some(max) if max < min => Err(GrammarError::Syntax {
                span,
                message: format!("repetition range {min}..{max} is empty"),
            }),
            Some(max) if max - min <= SPELL_OUT => {
                Ok((min..=max).map(|k| vec![x; k as usize]).collect())
            }
            Some(max) => {
                // Left-recursive counting: T_k → T_{k-1} x holds exactly k copies,
                // and one helper R → T_min | … | T_max (| ε) picks the count. A
                // right-nested chain of optionals would instead keep one stack
                // entry per copy, so every mask after k copies would read k levels
                // to see past the repetition; here the stack stays flat.
                let mut exact: Vec<NonterminalId> = Vec::with_capacity(max as usize);
                for k in 1..=max {
                    let key = Ebnf::Repeat {
                        inner: Box::new(Ebnf::Sym(x)),
                        min: k,
                        max: Some(k),
                    };
                    let prev = exact.last().copied();
                    let t = self.helper("times", key, parent, span, move |_, _| {
                        Ok(vec![match prev {
                            None => vec![x],
                            Some(p) => vec![Symbol::N(p), x],
                        }])
                    })?;
                    exact.push(t);
                }
                let key = Ebnf::Repeat {
                    inner: Box::new(Ebnf::Sym(x)),
                    min,
                    max: Some(max),
                };
                let range = self.helper("range", key, parent, span, |_, _| {
                    let mut alts: Alts = Vec::new();
                    if min == 0 {
                        alts.push(Vec::new());
                    }
                    alts.extend((min.max(1)..=max).map(|k| vec![Symbol::N(exact[k as usize - 1])]));
                    Ok(alts)
                })?;
                Ok(vec![vec![Symbol::N(range)]])
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::TerminalId;

    fn t(i: usize) -> Ebnf {
        Ebnf::Sym(Symbol::T(TerminalId::new(i)))
    }

    fn builder() -> BnfBuilder {
        BnfBuilder::new(vec![Nonterminal {
            name: "r".into(),
            span: Span::default(),
        }])
    }

    #[test]
    fn optional_in_sequence_is_distributed() {
        let mut b = builder();
        let body = Ebnf::Seq(vec![
            t(0),
            Ebnf::optional(Ebnf::Alt(vec![t(1), t(2)])),
            t(3),
        ]);
        b.define(NonterminalId::new(0), &body, 0, Span::default())
            .unwrap();
        let (nts, prods) = b.finish();
        assert_eq!(nts.len(), 1);
        assert_eq!(prods.len(), 3);
        let lens: Vec<usize> = prods.iter().map(|p| p.rhs.len()).collect();
        assert_eq!(lens, vec![2, 3, 3]);
    }

    #[test]
    fn plus_is_left_recursive_and_shared() {
        let mut b = builder();
        let plus = Ebnf::Repeat {
            inner: Box::new(t(0)),
            min: 1,
            max: None,
        };
        let body = Ebnf::Seq(vec![plus.clone(), t(1), plus]);
        b.define(NonterminalId::new(0), &body, 0, Span::default())
            .unwrap();
        let (nts, prods) = b.finish();
        assert_eq!(nts.len(), 2, "one shared helper");
        let helper = NonterminalId::new(1);
        let hp: Vec<_> = prods.iter().filter(|p| p.lhs == helper).collect();
        assert_eq!(hp.len(), 2);
        assert_eq!(hp[1].rhs[0], Symbol::N(helper));
    }

    #[test]
    fn wide_products_are_factored() {
        let mut b = builder();
        let opt = |i| Ebnf::optional(t(i));
        let body = Ebnf::Seq((0..10).map(opt).collect());
        b.define(NonterminalId::new(0), &body, 0, Span::default())
            .unwrap();
        let (_, prods) = b.finish();
        assert!(prods.len() < 200, "{}", prods.len());
    }

    /// The lengths (up to `cap`) of the words nonterminal 0 derives, when every
    /// production is over nonterminals and the single terminal 0.
    fn lengths(prods: &[Production], n: usize, cap: usize) -> Vec<usize> {
        let mut sets = vec![vec![false; cap + 1]; n];
        loop {
            let mut changed = false;
            for p in prods {
                let mut cur = vec![false; cap + 1];
                cur[0] = true;
                for s in &p.rhs {
                    let mut next = vec![false; cap + 1];
                    for (i, _) in cur.iter().enumerate().filter(|(_, &b)| b) {
                        match s {
                            Symbol::T(_) if i < cap => next[i + 1] = true,
                            Symbol::T(_) => {}
                            Symbol::N(m) => {
                                for (j, _) in sets[m.index()].iter().enumerate().filter(|(_, &b)| b)
                                {
                                    if i + j <= cap {
                                        next[i + j] = true;
                                    }
                                }
                            }
                        }
                    }
                    cur = next;
                }
                for (i, b) in cur.into_iter().enumerate() {
                    if b && !sets[p.lhs.index()][i] {
                        sets[p.lhs.index()][i] = true;
                        changed = true;
                    }
                }
            }
            if !changed {
                return (0..=cap).filter(|&i| sets[0][i]).collect();
            }
        }
    }

    #[test]
    fn long_bounded_repeat_is_linear() {
        for (min, max) in [(0, 9), (2, 9), (3, 12)] {
            let mut b = builder();
            let body = Ebnf::Repeat {
                inner: Box::new(t(0)),
                min,
                max: Some(max),
            };
            b.define(NonterminalId::new(0), &body, 0, Span::default())
                .unwrap();
            let (nts, prods) = b.finish();
            let want: Vec<usize> = (min as usize..=max as usize).collect();
            assert_eq!(lengths(&prods, nts.len(), 20), want, "{min}..{max}");
        }
        let mut b = builder();
        let body = Ebnf::Repeat {
            inner: Box::new(t(0)),
            min: 2,
            max: Some(1000),
        };
        b.define(NonterminalId::new(0), &body, 0, Span::default())
            .unwrap();
        let (nts, prods) = b.finish();
        // One helper per count and one choosing the count.
        assert_eq!(nts.len(), 1 + 1000 + 1);
        assert!(prods.len() <= 1 + 1000 + 999);
        let huge = Ebnf::Repeat {
            inner: Box::new(t(0)),
            min: 0,
            max: Some(MAX_REPEAT + 1),
        };
        let mut b = builder();
        assert!(matches!(
            b.define(NonterminalId::new(0), &huge, 0, Span::default()),
            Err(GrammarError::TooLarge { .. })
        ));
    }
}
