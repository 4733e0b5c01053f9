//! Nullable nonterminals and FIRST sets, the inputs of the LALR lookahead computation
//! (Aho, Lam, Sethi, Ullman, *Compilers*, 2nd ed., §4.4.2).

use crate::compile::error::GrammarError;
use crate::compile::grammar::ir::{Grammar, Symbol};
use crate::compile::interrupt::Interrupt;
use crate::termset::TermSet;

/// Nullable flags and FIRST sets of every nonterminal, over a terminal universe of
/// `width` bits (the grammar's terminals, end of input and a propagation marker).
pub struct First {
    pub nullable: Vec<bool>,
    pub first: Vec<TermSet>,
}

impl First {
    /// Computes both by fixpoint iteration (checking `stop` at every round).
    pub(crate) fn compute(
        g: &Grammar,
        width: usize,
        stop: &Interrupt,
    ) -> Result<Self, GrammarError> {
        let nt = g.nonterminals.len();
        let mut nullable = vec![false; nt];
        let mut first = vec![TermSet::new(width); nt];
        loop {
            stop.check()?;
            let mut changed = false;
            for p in &g.productions {
                let a = p.lhs.index();
                let mut all_nullable = true;
                for s in &p.rhs {
                    match *s {
                        Symbol::T(t) => {
                            changed |= first[a].insert(t);
                            all_nullable = false;
                        }
                        Symbol::N(n) => {
                            if n.index() != a {
                                let f = first[n.index()].clone();
                                changed |= first[a].union_with(&f);
                            }
                            if !nullable[n.index()] {
                                all_nullable = false;
                            }
                        }
                    }
                    if !all_nullable {
                        break;
                    }
                }
                if all_nullable && !nullable[a] {
                    nullable[a] = true;
                    changed = true;
                }
            }
            if !changed {
                return Ok(Self { nullable, first });
            }
        }
    }

    /// Adds FIRST of a symbol string to `words` (a set of this universe's words); returns
    /// whether the whole string is nullable.
    pub fn of_string_into(&self, syms: &[Symbol], words: &mut [u64]) -> bool {
        for s in syms {
            match *s {
                Symbol::T(t) => {
                    words[t.index() / 64] |= 1 << (t.index() % 64);
                    return false;
                }
                Symbol::N(n) => {
                    for (w, &f) in words.iter_mut().zip(self.first[n.index()].words()) {
                        *w |= f;
                    }
                    if !self.nullable[n.index()] {
                        return false;
                    }
                }
            }
        }
        true
    }

    /// FIRST of a symbol string, and whether the whole string is nullable.
    #[cfg(test)]
    pub fn of_string(&self, syms: &[Symbol], width: usize) -> (TermSet, bool) {
        let mut out = TermSet::new(width);
        for s in syms {
            match *s {
                Symbol::T(t) => {
                    out.insert(t);
                    return (out, false);
                }
                Symbol::N(n) => {
                    out.union_with(&self.first[n.index()]);
                    if !self.nullable[n.index()] {
                        return (out, false);
                    }
                }
            }
        }
        (out, true)
    }
}
