//! LALR(1) lookaheads by propagation over a graph of kernel items and closure
//! nonterminals (the relations of DeRemer and Pennello, *Efficient Computation of LALR(1)
//! Look-Ahead Sets*, 1982, over items rather than nonterminal transitions).
//!
//! Every closure item `B → ·γ` of a state gets the same lookaheads (the union of what the
//! items with `B` after their dot pass down), so a state's closure items share one node
//! per nonterminal. Nodes receive lookaheads *spontaneously* (FIRST of what follows `B`)
//! and by *propagation* (from the item above when that is nullable, and from an item to
//! its advanced form in the successor's kernel); the fixpoint gives every node's set.
//! Per state, this costs its closure's items once, where closing each kernel item again
//! with explicit lookahead sets (Aho et al., Algorithm 4.62) cost a hash map and a set
//! per closure item: a Kubernetes schema's states close over 280-literal string rules.

use super::first::First;
use super::lr0::{Item, Lr0, Prods};
use crate::compile::error::GrammarError;
use crate::compile::grammar::ir::Symbol;
use crate::compile::interrupt::Interrupt;
use crate::ids::TerminalId;
use crate::termset::TermSet;

/// The complete items of every state with their LALR(1) lookahead sets, in the state's
/// closure order (kernel items first, then closure items as a depth-first closure meets
/// them): `(builder production, lookaheads)`. Sets are over `first`'s universe; `eof` is
/// end of input.
pub fn reductions(
    prods: &Prods,
    first: &First,
    lr0: &Lr0,
    eof: TerminalId,
    stop: &Interrupt,
) -> Result<Vec<Vec<(u32, TermSet)>>, GrammarError> {
    // `first`'s universe: terminals, end of input and the textbook algorithm's marker
    // (never set here).
    let width = eof.index() + 2;
    let nw = width.div_ceil(64);
    let n = lr0.kernels.len();
    let mut koff: Vec<u32> = Vec::with_capacity(n + 1);
    koff.push(0);
    for k in &lr0.kernels {
        koff.push(koff.last().copied().unwrap_or(0) + k.len() as u32);
    }
    let mut nodes = koff[n] as usize;
    // Node sets, `nw` words each, grown as closure nodes are made.
    let mut sets: Vec<u64> = vec![0; nodes * nw];
    let mut edges: Vec<(u32, u32)> = Vec::new();
    let mut reds: Vec<Vec<(u32, u32)>> = Vec::with_capacity(n);
    // Per-state scratch, by stamp: a nonterminal's node, a production's discovery, a
    // symbol's successor state.
    let mut nt_node: Vec<(u32, u32)> = vec![(0, 0); prods.by_lhs.len()];
    let mut prod_seen: Vec<u32> = vec![0; prods.rhs.len()];
    let mut target: Vec<(u32, u32)> = vec![(0, 0); prods.num_symbols()];
    let mut items: Vec<Item> = Vec::new();
    let mut stack: Vec<u32> = Vec::new();
    for s in 0..n {
        if s % STOP_CHECK_STATES == 0 {
            stop.check()?;
        }
        let stamp = s as u32 + 1;
        for &(x, t) in &lr0.transitions[s] {
            target[prods.symbol_index(x)] = (stamp, t);
        }
        let kernel = &lr0.kernels[s];
        // The closure in the order a depth-first search meets its items.
        items.clear();
        items.extend_from_slice(kernel);
        stack.clear();
        stack.extend(0..kernel.len() as u32);
        while let Some(i) = stack.pop() {
            if let Some(Symbol::N(b)) = prods.next_symbol(items[i as usize]) {
                for &p in &prods.by_lhs[b.index()] {
                    if prod_seen[p as usize] != stamp {
                        prod_seen[p as usize] = stamp;
                        items.push(Item { prod: p, dot: 0 });
                        stack.push(items.len() as u32 - 1);
                    }
                }
            }
        }
        let mut node_of = |b: usize, sets: &mut Vec<u64>| -> u32 {
            if nt_node[b].0 != stamp {
                nt_node[b] = (stamp, nodes as u32);
                nodes += 1;
                sets.resize(nodes * nw, 0);
            }
            nt_node[b].1
        };
        let mut red = Vec::new();
        for (i, &it) in items.iter().enumerate() {
            let src = if i < kernel.len() {
                koff[s] + i as u32
            } else {
                node_of(prods.lhs[it.prod as usize] as usize, &mut sets)
            };
            let rhs = &prods.rhs[it.prod as usize];
            let Some(&x) = rhs.get(it.dot as usize) else {
                red.push((it.prod, src));
                continue;
            };
            let (st, t) = target[prods.symbol_index(x)];
            debug_assert_eq!(st, stamp, "every symbol after a dot has a transition");
            let adv = prods.advance(it);
            // The advanced item is in the successor's kernel by construction.
            let j = lr0.kernels[t as usize]
                .binary_search(&adv)
                .expect("advanced item is in the kernel");
            edges.push((src, koff[t as usize] + j as u32));
            if let Symbol::N(b) = x {
                let dst = node_of(b.index(), &mut sets);
                let at = dst as usize * nw;
                if first.of_string_into(&rhs[it.dot as usize + 1..], &mut sets[at..at + nw]) {
                    edges.push((src, dst));
                }
            }
        }
        reds.push(red);
    }
    // Kernel item 0 of state 0 (S' → ·S) has end of input. Successor lists, then the
    // fixpoint.
    sets[eof.index() / 64] |= 1 << (eof.index() % 64);
    let (start, succ) = successor_lists(edges, nodes);
    stop.check()?;
    propagate(&mut sets, nw, &start, &succ);
    stop.check()?;
    Ok(reds
        .into_iter()
        .map(|r| {
            r.into_iter()
                .map(|(p, node)| {
                    let w = &sets[node as usize * nw..(node as usize + 1) * nw];
                    // Words of `first`'s universe, built above.
                    (
                        p,
                        TermSet::from_words(w, width).expect("lookahead words fit"),
                    )
                })
                .collect()
        })
        .collect())
}

/// States read between checks of the compile's [`Interrupt`].
const STOP_CHECK_STATES: usize = 1024;

/// The successors of each of `nodes` nodes from the edge list, each target once, as
/// offsets (`start`, `nodes + 1` of them) into one list: a counting sort on the source
/// (sorting the edge list would cost more). The order within a list only changes the
/// order sets propagate in, not the fixpoint.
fn successor_lists(edges: Vec<(u32, u32)>, nodes: usize) -> (Vec<u32>, Vec<u32>) {
    let mut start = vec![0u32; nodes + 1];
    for &(a, _) in &edges {
        start[a as usize + 1] += 1;
    }
    for i in 0..nodes {
        start[i + 1] += start[i];
    }
    let mut succ = vec![0u32; edges.len()];
    let mut fill = start.clone();
    for &(a, b) in &edges {
        succ[fill[a as usize] as usize] = b;
        fill[a as usize] += 1;
    }
    drop(edges);
    let mut seen = vec![u32::MAX; nodes];
    let mut kept = 0;
    for a in 0..nodes {
        let (lo, hi) = (start[a] as usize, start[a + 1] as usize);
        start[a] = kept as u32;
        for i in lo..hi {
            let b = succ[i];
            if seen[b as usize] != a as u32 {
                seen[b as usize] = a as u32;
                succ[kept] = b;
                kept += 1;
            }
        }
    }
    start[nodes] = kept as u32;
    succ.truncate(kept);
    (start, succ)
}

/// Propagates each node's set (`nw` words in `sets`) to its successors until nothing
/// changes (a worklist, in node order first).
fn propagate(sets: &mut [u64], nw: usize, start: &[u32], succ: &[u32]) {
    let nodes = start.len() - 1;
    let mut work: Vec<u32> = (0..nodes as u32).rev().collect();
    let mut on_work = vec![true; nodes];
    let mut src = vec![0u64; nw];
    while let Some(a) = work.pop() {
        on_work[a as usize] = false;
        src.copy_from_slice(&sets[a as usize * nw..(a as usize + 1) * nw]);
        for &b in &succ[start[a as usize] as usize..start[a as usize + 1] as usize] {
            let dst = &mut sets[b as usize * nw..(b as usize + 1) * nw];
            let mut changed = false;
            for (d, &w) in dst.iter_mut().zip(&src) {
                changed |= *d | w != *d;
                *d |= w;
            }
            if changed && !on_work[b as usize] {
                on_work[b as usize] = true;
                work.push(b);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use hashbrown::HashMap;

    use super::*;
    use crate::compile::frontend::json_schema::{compile_value, SchemaOptions};
    use crate::compile::{compile_grammar, GrammarFormat};

    // The oracle: the textbook algorithm (Aho et al., Algorithm 4.62–4.63), each kernel
    // item closed with a propagation marker, then each state closed with its kernel's
    // lookaheads.
    /// LR(1) closure of items with lookahead sets: `[A → α·Bβ, L]` adds
    /// `[B → ·γ, FIRST(β) ∪ (L if β ⇒* ε)]` until nothing changes.
    pub fn lr1_closure(
        prods: &Prods,
        first: &First,
        width: usize,
        kernel: &[(Item, TermSet)],
    ) -> Vec<(Item, TermSet)> {
        let mut items: Vec<(Item, TermSet)> = kernel.to_vec();
        let mut pos: HashMap<Item, usize> = items
            .iter()
            .enumerate()
            .map(|(i, (it, _))| (*it, i))
            .collect();
        let mut dirty: Vec<usize> = (0..items.len()).collect();
        while let Some(i) = dirty.pop() {
            let (it, la) = (items[i].0, items[i].1.clone());
            let Some(Symbol::N(b)) = prods.next_symbol(it) else {
                continue;
            };
            let rest = &prods.rhs[it.prod as usize][it.dot as usize + 1..];
            let (mut f, nullable) = first.of_string(rest, width);
            if nullable {
                f.union_with(&la);
            }
            for &p in &prods.by_lhs[b.index()] {
                let new = Item { prod: p, dot: 0 };
                match pos.get(&new) {
                    Some(&j) => {
                        if items[j].1.union_with(&f) {
                            dirty.push(j);
                        }
                    }
                    None => {
                        pos.insert(new, items.len());
                        items.push((new, f.clone()));
                        dirty.push(items.len() - 1);
                    }
                }
            }
        }
        items
    }

    /// Lookahead sets of every kernel item of every state. Terminal ids `0..eof` are grammar
    /// terminals, `eof` is end of input; `eof + 1` is the propagation marker `#`.
    pub fn lookaheads(
        prods: &Prods,
        first: &First,
        lr0: &Lr0,
        eof: TerminalId,
    ) -> Vec<Vec<TermSet>> {
        let width = eof.index() + 2;
        let marker = TerminalId::new(eof.index() + 1);
        let mut la: Vec<Vec<TermSet>> = lr0
            .kernels
            .iter()
            .map(|k| vec![TermSet::new(width); k.len()])
            .collect();
        la[0][0].insert(eof);
        let kernel_pos = |s: usize, it: Item| lr0.kernels[s].binary_search(&it).ok();
        // edges[(s, k)] = kernel items that receive everything (s, k) gets.
        let mut edges: Vec<Vec<Vec<(u32, u32)>>> = lr0
            .kernels
            .iter()
            .map(|k| vec![Vec::new(); k.len()])
            .collect();
        for (s, kernel) in lr0.kernels.iter().enumerate() {
            for (k, &kit) in kernel.iter().enumerate() {
                let mut seed = TermSet::new(width);
                seed.insert(marker);
                for (it, set) in lr1_closure(prods, first, width, &[(kit, seed)]) {
                    let Some(x) = prods.next_symbol(it) else {
                        continue;
                    };
                    // Every symbol after a dot has a transition in the LR(0) automaton.
                    let &(_, target) = lr0.transitions[s]
                        .iter()
                        .find(|(y, _)| *y == x)
                        .expect("transition on a symbol after a dot");
                    let adv = prods.advance(it);
                    let j =
                        kernel_pos(target as usize, adv).expect("advanced item is in the kernel");
                    for t in set.iter() {
                        if t == marker {
                            edges[s][k].push((target, j as u32));
                        } else {
                            la[target as usize][j].insert(t);
                        }
                    }
                }
            }
        }
        // Propagate to a fixpoint.
        let mut work: Vec<(u32, u32)> = (0..lr0.kernels.len())
            .flat_map(|s| (0..lr0.kernels[s].len()).map(move |k| (s as u32, k as u32)))
            .collect();
        while let Some((s, k)) = work.pop() {
            let src = la[s as usize][k as usize].clone();
            for &(t, j) in &edges[s as usize][k as usize] {
                if la[t as usize][j as usize].union_with(&src) {
                    work.push((t, j));
                }
            }
        }
        la
    }

    /// The oracle's complete items and lookaheads, in the order [`reductions`] lists them.
    fn oracle(
        prods: &Prods,
        first: &First,
        lr0: &Lr0,
        eof: TerminalId,
    ) -> Vec<Vec<(u32, TermSet)>> {
        let width = eof.index() + 2;
        let la = lookaheads(prods, first, lr0, eof);
        (0..lr0.kernels.len())
            .map(|s| {
                let kernel: Vec<(Item, TermSet)> = lr0.kernels[s]
                    .iter()
                    .copied()
                    .zip(la[s].iter().cloned())
                    .collect();
                lr1_closure(prods, first, width, &kernel)
                    .into_iter()
                    .filter(|(it, _)| prods.next_symbol(*it).is_none())
                    .map(|(it, set)| (it.prod, set))
                    .collect()
            })
            .collect()
    }

    fn assert_agrees(name: &str, g: &crate::compile::grammar::ir::Grammar) {
        let (prods, first, eof) = super::super::prepare(g, &Default::default()).unwrap();
        let lr0 = super::super::lr0::build(&prods, usize::MAX, &Default::default()).unwrap();
        let got = reductions(&prods, &first, &lr0, eof, &Default::default()).unwrap();
        let want = oracle(&prods, &first, &lr0, eof);
        assert_eq!(got.len(), want.len());
        for (s, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "{name}: state {s}");
        }
    }

    #[test]
    fn reductions_match_the_textbook_algorithm() {
        let shared = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared");
        let mut checked = 0;
        assert_agrees(
            "builtin json",
            &compile_grammar(
                include_str!("../frontend/builtin/json.lark"),
                GrammarFormat::Lark,
            )
            .unwrap(),
        );
        checked += 1;
        for path in [
            "syncode/go.lark",
            "syncode/java.lark",
            "syncode/c.lark",
            "syncode/sql.lark",
            "syncode/calc.lark",
        ] {
            let Ok(text) = std::fs::read_to_string(format!("{shared}/grammars/{path}")) else {
                continue;
            };
            assert_agrees(path, &compile_grammar(&text, GrammarFormat::Lark).unwrap());
            checked += 1;
        }
        // Schemas: string rules of hundreds of literals, optional members, recursion.
        for file in [
            "Kubernetes---kb_148_Normalized.json",
            "Github_medium---o9906.json",
            "Snowplow---sp_331_Normalized.json",
        ] {
            let Ok(text) = std::fs::read_to_string(format!("{shared}/maskbench/{file}")) else {
                continue;
            };
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            let g = compile_value(&v["schema"], &SchemaOptions::default())
                .unwrap()
                .grammar;
            assert_agrees(file, &g);
            checked += 1;
        }
        // Every grammar when ../shared is beside the checkout (CI), else the built-in one.
        let expected = if std::path::Path::new(shared).exists() {
            9
        } else {
            1
        };
        assert_eq!(checked, expected);
    }
}
