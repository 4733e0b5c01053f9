//! Pass: drop what the start symbol cannot reach.
//!
//! Like Lark, a grammar's lexer only knows the terminals that reachable rules use (plus
//! ignored ones): an unused terminal must not take part in maximal munch. Nonterminals
//! unreachable from the start symbol are dropped too; ids are renumbered densely.

use super::ir::{Grammar, Symbol};
use crate::ids::{NonterminalId, TerminalId};

/// Returns `g` without unreachable nonterminals and unused, non-ignored terminals.
pub fn prune_unreachable(g: Grammar) -> Grammar {
    let nt = g.nonterminals.len();
    let mut reach = vec![false; nt];
    let mut stack = vec![g.start];
    reach[g.start.index()] = true;
    let mut by_lhs: Vec<Vec<usize>> = vec![Vec::new(); nt];
    for (i, p) in g.productions.iter().enumerate() {
        by_lhs[p.lhs.index()].push(i);
    }
    let mut used_t = vec![false; g.terminals.len()];
    while let Some(n) = stack.pop() {
        for &pi in &by_lhs[n.index()] {
            for s in &g.productions[pi].rhs {
                match *s {
                    Symbol::N(m) if !reach[m.index()] => {
                        reach[m.index()] = true;
                        stack.push(m);
                    }
                    Symbol::T(t) => used_t[t.index()] = true,
                    _ => {}
                }
            }
        }
    }
    for (i, t) in g.terminals.iter().enumerate() {
        if t.ignored {
            used_t[i] = true;
        }
    }
    let mut nmap = vec![None; nt];
    let mut nonterminals = Vec::new();
    for (i, n) in g.nonterminals.into_iter().enumerate() {
        if reach[i] {
            nmap[i] = Some(NonterminalId::new(nonterminals.len()));
            nonterminals.push(n);
        }
    }
    let mut tmap = vec![None; used_t.len()];
    let mut terminals = Vec::new();
    for (i, t) in g.terminals.into_iter().enumerate() {
        if used_t[i] {
            tmap[i] = Some(TerminalId::new(terminals.len()));
            terminals.push(t);
        }
    }
    // Every symbol of a kept production is reachable/used by construction.
    let productions = g
        .productions
        .into_iter()
        .filter(|p| reach[p.lhs.index()])
        .map(|mut p| {
            p.lhs = nmap[p.lhs.index()].expect("kept lhs");
            for s in &mut p.rhs {
                *s = match *s {
                    Symbol::N(m) => Symbol::N(nmap[m.index()].expect("reachable")),
                    Symbol::T(t) => Symbol::T(tmap[t.index()].expect("used")),
                };
            }
            p
        })
        .collect();
    Grammar {
        terminals,
        nonterminals,
        productions,
        start: nmap[g.start.index()].expect("start is reachable"),
    }
}
