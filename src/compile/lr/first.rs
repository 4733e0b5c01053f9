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

/// `v[a]` to write and `v[b]` to read, for `a != b`.
fn pair_mut<T>(v: &mut [T], a: usize, b: usize) -> (&mut T, &T) {
    if a < b {
        let (lo, hi) = v.split_at_mut(b);
        (&mut lo[a], &hi[0])
    } else {
        let (lo, hi) = v.split_at_mut(a);
        (&mut hi[0], &lo[b])
    }
}

impl First {
    /// Computes both as least fixpoints by worklists (linear in the grammar, apart from
    /// the set unions), checking `stop` as it goes. Nullable first (`prune::deriving`),
    /// then FIRST: `A → α x …` with `α` nullable puts `x` (a terminal) or
    /// FIRST(x) into FIRST(A); the latter are edges along which sets propagate.
    pub(crate) fn compute(
        g: &Grammar,
        width: usize,
        stop: &Interrupt,
    ) -> Result<Self, GrammarError> {
        let nt = g.nonterminals.len();
        let nullable = crate::compile::grammar::prune::deriving(g, false, stop)?;
        stop.check()?;
        // FIRST: direct terminals, and edges B → A for FIRST(B) ⊆ FIRST(A).
        let mut first = vec![TermSet::new(width); nt];
        let mut into: Vec<Vec<u32>> = vec![Vec::new(); nt];
        for p in &g.productions {
            let a = p.lhs.index();
            for s in &p.rhs {
                match *s {
                    Symbol::T(t) => {
                        first[a].insert(t);
                        break;
                    }
                    Symbol::N(n) => {
                        if n.index() != a {
                            into[n.index()].push(a as u32);
                        }
                        if !nullable[n.index()] {
                            break;
                        }
                    }
                }
            }
        }
        let mut work: Vec<u32> = (0..nt as u32).rev().collect();
        let mut queued = vec![true; nt];
        let mut done = 0usize;
        while let Some(b) = work.pop() {
            done += 1;
            if done % 4096 == 0 {
                stop.check()?;
            }
            queued[b as usize] = false;
            for &a in &into[b as usize] {
                let (to, from) = pair_mut(&mut first, a as usize, b as usize);
                if to.union_with(from) && !queued[a as usize] {
                    queued[a as usize] = true;
                    work.push(a);
                }
            }
        }
        Ok(Self { nullable, first })
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
