//! LALR(1) lookaheads by spontaneous generation and propagation over LR(0) kernels
//! (Aho, Lam, Sethi, Ullman, *Compilers*, 2nd ed., §4.7.5, Algorithm 4.62–4.63).

use hashbrown::HashMap;

use super::first::First;
use super::lr0::{Item, Lr0, Prods};
use crate::compile::ir::Symbol;
use crate::ids::TerminalId;
use crate::termset::TermSet;

/// LR(1) closure of items with lookahead sets: `[A → α·Bβ, L]` adds `[B → ·γ, FIRST(β) ∪
/// (L if β ⇒* ε)]` until nothing changes.
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
pub fn lookaheads(prods: &Prods, first: &First, lr0: &Lr0, eof: TerminalId) -> Vec<Vec<TermSet>> {
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
                let adv = Item {
                    prod: it.prod,
                    dot: it.dot + 1,
                };
                let j = kernel_pos(target as usize, adv).expect("advanced item is in the kernel");
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
