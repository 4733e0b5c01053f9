//! Pass: drop what the start symbol cannot reach.
//!
//! Like Lark, a grammar's lexer only knows the terminals that reachable rules use (plus
//! ignored ones): an unused terminal must not take part in maximal munch. Nonterminals
//! unreachable from the start symbol are dropped too; ids are renumbered densely.

use crate::compile::grammar::ir::{Grammar, Symbol};
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
        indenter: g.indenter,
        declared: g.declared,
        longest_match: g.longest_match,
    }
}

/// Pass: drop productions that use nonterminals deriving no terminal string, so that
/// every remaining symbol is productive (then every viable LR prefix extends to a whole
/// document). Fails if the start symbol itself derives nothing.
pub fn remove_unproductive(g: Grammar) -> Result<Grammar, crate::compile::GrammarError> {
    remove_unproductive_until(g, &Default::default())
}

/// [`remove_unproductive`], checking `stop` as it goes.
pub(crate) fn remove_unproductive_until(
    g: Grammar,
    stop: &crate::compile::interrupt::Interrupt,
) -> Result<Grammar, crate::compile::GrammarError> {
    let productive = deriving(&g, true, stop)?;
    if !productive[g.start.index()] {
        return Err(crate::compile::GrammarError::NoDocument {
            name: g.nonterminals[g.start.index()].name.clone(),
        });
    }
    let productions = g
        .productions
        .into_iter()
        .filter(|p| {
            productive[p.lhs.index()]
                && p.rhs.iter().all(|s| match s {
                    Symbol::T(_) => true,
                    Symbol::N(n) => productive[n.index()],
                })
        })
        .collect();
    Ok(prune_unreachable(Grammar { productions, ..g }))
}

/// Pass: reject cyclic grammars (A ⇒+ A): they have infinitely many parses of one input
/// and would make the graph-structured stack cyclic.
pub fn check_acyclic(g: &Grammar) -> Result<(), crate::compile::GrammarError> {
    let nt = g.nonterminals.len();
    let nullable = g.nullable();
    // unit[a] = nonterminals b with a ⇒ α b β, α and β nullable.
    let mut unit: Vec<Vec<usize>> = vec![Vec::new(); nt];
    for p in &g.productions {
        for (i, s) in p.rhs.iter().enumerate() {
            if let Symbol::N(b) = s {
                let others_nullable = p
                    .rhs
                    .iter()
                    .enumerate()
                    .all(|(j, x)| j == i || matches!(x, Symbol::N(n) if nullable[n.index()]));
                if others_nullable {
                    unit[p.lhs.index()].push(b.index());
                }
            }
        }
    }
    // Depth-first search for a cycle (colors: 0 new, 1 on stack, 2 done).
    let mut color = vec![0u8; nt];
    for root in 0..nt {
        if color[root] != 0 {
            continue;
        }
        let mut stack = vec![(root, 0usize)];
        color[root] = 1;
        while let Some(&mut (a, ref mut i)) = stack.last_mut() {
            if *i < unit[a].len() {
                let b = unit[a][*i];
                *i += 1;
                match color[b] {
                    0 => {
                        color[b] = 1;
                        stack.push((b, 0));
                    }
                    1 => {
                        let n = &g.nonterminals[b];
                        return Err(crate::compile::GrammarError::Unsupported {
                            span: n.span,
                            construct: format!("cyclic rule `{}`", n.name),
                            reason: format!(
                                "`{}` derives itself (A ⇒+ A); such grammars have infinitely many parses",
                                n.name
                            ),
                        });
                    }
                    _ => {}
                }
            } else {
                color[a] = 2;
                stack.pop();
            }
        }
    }
    Ok(())
}

/// Pass: reject hidden left recursion (A ⇒ B A … with B ⇒ ε). An LR parser would push
/// ε-reductions without end there, and the graph-structured stack would need cycles; plain
/// left recursion (A ⇒ A …) is fine.
pub fn check_no_hidden_left_recursion(g: &Grammar) -> Result<(), crate::compile::GrammarError> {
    let nt = g.nonterminals.len();
    let nullable = g.nullable();
    // Left-corner edges A → X (A → α X β, α nullable); `hidden` when α is non-empty.
    let mut edges: Vec<Vec<usize>> = vec![Vec::new(); nt];
    let mut hidden: Vec<(usize, usize)> = Vec::new();
    for p in &g.productions {
        for (i, s) in p.rhs.iter().enumerate() {
            let Symbol::N(x) = s else { break };
            edges[p.lhs.index()].push(x.index());
            if i > 0 {
                hidden.push((p.lhs.index(), x.index()));
            }
            if !nullable[x.index()] {
                break;
            }
        }
    }
    for (a, x) in hidden {
        // Does x reach a through left corners?
        let mut seen = vec![false; nt];
        let mut stack = vec![x];
        while let Some(v) = stack.pop() {
            if v == a {
                let n = &g.nonterminals[a];
                return Err(crate::compile::GrammarError::Unsupported {
                    span: n.span,
                    construct: format!("hidden left recursion in `{}`", n.name),
                    reason: format!(
                        "`{}` derives itself after a prefix that can be empty; make the empty prefix explicit (split the rule into alternatives with and without it)",
                        n.name
                    ),
                });
            }
            if !std::mem::replace(&mut seen[v], true) {
                stack.extend(edges[v].iter().copied());
            }
        }
    }
    Ok(())
}

/// The nonterminals that derive a string of terminals (`terminals`: any string, the
/// productive ones) or the empty string (`!terminals`: the nullable ones): a least
/// fixpoint by worklist, linear in the grammar. Each production counts its nonterminal
/// occurrences not yet known to derive one (a terminal, when not allowed, keeps it from
/// ever reaching zero); one that reaches zero marks its left-hand side, which counts down
/// every production using it. Checks `stop` as it goes.
pub(crate) fn deriving(
    g: &Grammar,
    terminals: bool,
    stop: &crate::compile::interrupt::Interrupt,
) -> Result<Vec<bool>, crate::compile::GrammarError> {
    let nt = g.nonterminals.len();
    let mut marked = vec![false; nt];
    let mut missing: Vec<u32> = Vec::with_capacity(g.productions.len());
    let mut uses: Vec<Vec<u32>> = vec![Vec::new(); nt];
    let mut ready: Vec<u32> = Vec::new();
    for (i, p) in g.productions.iter().enumerate() {
        if !terminals && p.rhs.iter().any(|s| matches!(s, Symbol::T(_))) {
            // Never counts down: no use of it is recorded.
            missing.push(u32::MAX);
            continue;
        }
        let mut m = 0u32;
        for s in &p.rhs {
            if let Symbol::N(n) = s {
                uses[n.index()].push(i as u32);
                m += 1;
            }
        }
        missing.push(m);
        if m == 0 {
            ready.push(i as u32);
        }
    }
    let mut done = 0usize;
    while let Some(i) = ready.pop() {
        done += 1;
        if done % 4096 == 0 {
            stop.check()?;
        }
        let a = g.productions[i as usize].lhs.index();
        if marked[a] {
            continue;
        }
        marked[a] = true;
        for &u in &uses[a] {
            missing[u as usize] -= 1;
            if missing[u as usize] == 0 {
                ready.push(u);
            }
        }
    }
    Ok(marked)
}
