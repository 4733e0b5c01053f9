//! The canonical collection of LR(0) item sets (states) and their transitions.

use hashbrown::HashMap;

use crate::compile::ir::Symbol;

/// An LR(0) item: production index (builder numbering, 0 = augmented start) and dot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Item {
    pub prod: u32,
    pub dot: u32,
}

/// Productions in builder numbering: 0 is `S' → S`, `i + 1` is grammar production `i`.
pub struct Prods {
    pub lhs: Vec<u32>,
    pub rhs: Vec<Vec<Symbol>>,
    /// Productions of each nonterminal (the augmented start has id `num_nonterminals`).
    pub by_lhs: Vec<Vec<u32>>,
}

impl Prods {
    /// The symbol after the dot, if any.
    pub fn next_symbol(&self, it: Item) -> Option<Symbol> {
        self.rhs[it.prod as usize].get(it.dot as usize).copied()
    }
}

/// LR(0) states: kernels and transitions.
pub struct Lr0 {
    pub kernels: Vec<Vec<Item>>,
    pub transitions: Vec<Vec<(Symbol, u32)>>,
}

/// Adds the closure of `items` (LR(0): items `B → ·γ` for every `B` after a dot).
pub fn closure(prods: &Prods, kernel: &[Item]) -> Vec<Item> {
    let mut out: Vec<Item> = kernel.to_vec();
    let mut seen_nt = vec![false; prods.by_lhs.len()];
    let mut i = 0;
    while i < out.len() {
        if let Some(Symbol::N(n)) = prods.next_symbol(out[i]) {
            if !seen_nt[n.index()] {
                seen_nt[n.index()] = true;
                for &p in &prods.by_lhs[n.index()] {
                    out.push(Item { prod: p, dot: 0 });
                }
            }
        }
        i += 1;
    }
    out
}

/// Builds the LR(0) automaton, bounded by `max_states`.
pub fn build(prods: &Prods, max_states: usize) -> Result<Lr0, usize> {
    let start = vec![Item { prod: 0, dot: 0 }];
    let mut index: HashMap<Vec<Item>, u32> = HashMap::new();
    index.insert(start.clone(), 0);
    let mut kernels = vec![start];
    let mut transitions = Vec::new();
    let mut s = 0;
    while s < kernels.len() {
        let items = closure(prods, &kernels[s]);
        let mut by_sym: Vec<(Symbol, Vec<Item>)> = Vec::new();
        for it in items {
            if let Some(x) = prods.next_symbol(it) {
                let adv = Item {
                    prod: it.prod,
                    dot: it.dot + 1,
                };
                match by_sym.iter_mut().find(|(y, _)| *y == x) {
                    Some((_, v)) => v.push(adv),
                    None => by_sym.push((x, vec![adv])),
                }
            }
        }
        let mut trans = Vec::with_capacity(by_sym.len());
        for (x, mut k) in by_sym {
            k.sort();
            k.dedup();
            let id = match index.get(&k) {
                Some(&id) => id,
                None => {
                    if kernels.len() >= max_states {
                        return Err(max_states);
                    }
                    let id = kernels.len() as u32;
                    index.insert(k.clone(), id);
                    kernels.push(k);
                    id
                }
            };
            trans.push((x, id));
        }
        transitions.push(trans);
        s += 1;
    }
    Ok(Lr0 {
        kernels,
        transitions,
    })
}
