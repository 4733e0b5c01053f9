//! The canonical collection of LR(0) item sets (states) and their transitions.

use crate::compile::error::GrammarError;
use crate::compile::interrupt::Interrupt;
use hashbrown::HashMap;

use crate::compile::grammar::ir::Symbol;

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
    /// Grammar terminals plus end of input: symbols are numbered terminals first, then
    /// nonterminals (see [`Prods::symbol_index`]).
    pub num_terminals: usize,
    /// Per production, the one its item takes after the dot moves past its first
    /// symbol: for a production of a single terminal, the first such production of its
    /// nonterminal; else itself (see [`Prods::advance`]).
    pub advanced: Vec<u32>,
}

impl Prods {
    /// Fills [`Prods::advanced`] from `lhs` and `rhs`.
    pub fn merge_single_terminal_alternatives(&mut self) {
        let mut first_of: Vec<Option<u32>> = vec![None; self.by_lhs.len()];
        self.advanced = (0..self.rhs.len() as u32)
            .map(|p| match self.rhs[p as usize].as_slice() {
                [Symbol::T(_)] => *first_of[self.lhs[p as usize] as usize].get_or_insert(p),
                _ => p,
            })
            .collect();
    }

    /// The item `it` becomes once the symbol after its dot is read. The alternatives of a
    /// nonterminal that are one terminal each (`A → t₁ | t₂ | …`) advance as one
    /// production: after any of them the state holds the same item, so a state that
    /// closes over `A` has one successor state for all of them rather than one per
    /// terminal. The tables keep only a production's left side and length, which these
    /// share, so the parse is the same; a JSON schema's "any key but the declared ones"
    /// rules list ~280 literals each, and a Kubernetes schema had 24K states of them.
    pub fn advance(&self, it: Item) -> Item {
        Item {
            prod: if it.dot == 0 {
                self.advanced[it.prod as usize]
            } else {
                it.prod
            },
            dot: it.dot + 1,
        }
    }

    /// The symbol after the dot, if any.
    pub fn next_symbol(&self, it: Item) -> Option<Symbol> {
        self.rhs[it.prod as usize].get(it.dot as usize).copied()
    }

    /// Dense index of a symbol: terminals, then nonterminals.
    pub fn symbol_index(&self, x: Symbol) -> usize {
        match x {
            Symbol::T(t) => t.index(),
            Symbol::N(n) => self.num_terminals + n.index(),
        }
    }

    /// Number of symbol indices.
    pub fn num_symbols(&self) -> usize {
        self.num_terminals + self.by_lhs.len()
    }
}

/// LR(0) states: kernels and transitions.
pub struct Lr0 {
    pub kernels: Vec<Vec<Item>>,
    pub transitions: Vec<Vec<(Symbol, u32)>>,
}

/// Reusable buffers of the closure: which nonterminals a state's closure has added, by a
/// stamp per state, so that no per-state array is cleared (large schemas have tens of
/// thousands of states and thousands of nonterminals).
pub struct ClosureScratch {
    stamp: u32,
    seen: Vec<u32>,
    /// The closure's items, kernel first, then by nonterminal in order of first need.
    pub items: Vec<Item>,
}

impl ClosureScratch {
    /// Buffers for `prods`.
    pub fn new(prods: &Prods) -> Self {
        Self {
            stamp: 0,
            seen: vec![0; prods.by_lhs.len()],
            items: Vec::new(),
        }
    }

    /// Fills `items` with the closure of `kernel` (LR(0): items `B → ·γ` for every `B`
    /// after a dot).
    pub fn close(&mut self, prods: &Prods, kernel: &[Item]) {
        self.stamp += 1;
        self.items.clear();
        self.items.extend_from_slice(kernel);
        let mut i = 0;
        while i < self.items.len() {
            if let Some(Symbol::N(n)) = prods.next_symbol(self.items[i]) {
                if self.seen[n.index()] != self.stamp {
                    self.seen[n.index()] = self.stamp;
                    for &p in &prods.by_lhs[n.index()] {
                        self.items.push(Item { prod: p, dot: 0 });
                    }
                }
            }
            i += 1;
        }
    }
}

/// States built between checks of the compile's [`Interrupt`].
const STOP_CHECK_STATES: usize = 1024;

/// Builds the LR(0) automaton, bounded by `max_states` ([`GrammarError::TooLarge`] past
/// it; `stop` is checked every [`STOP_CHECK_STATES`] states).
pub fn build(prods: &Prods, max_states: usize, stop: &Interrupt) -> Result<Lr0, GrammarError> {
    let start = vec![Item { prod: 0, dot: 0 }];
    let mut index: HashMap<Vec<Item>, u32> = HashMap::new();
    index.insert(start.clone(), 0);
    let mut kernels = vec![start];
    let mut transitions = Vec::new();
    let mut scratch = ClosureScratch::new(prods);
    // Each state's successors' kernels, grouped by symbol in order of first appearance
    // (which numbers the states); `slot` finds a symbol's group, by the state's stamp.
    let mut slot: Vec<(u32, u32)> = vec![(0, 0); prods.num_symbols()];
    let mut by_sym: Vec<(Symbol, Vec<Item>)> = Vec::new();
    let mut s = 0;
    while s < kernels.len() {
        if s % STOP_CHECK_STATES == 0 {
            stop.check()?;
        }
        scratch.close(prods, &kernels[s]);
        let stamp = s as u32 + 1;
        by_sym.clear();
        for &it in &scratch.items {
            if let Some(x) = prods.next_symbol(it) {
                let adv = prods.advance(it);
                let sl = &mut slot[prods.symbol_index(x)];
                if sl.0 == stamp {
                    by_sym[sl.1 as usize].1.push(adv);
                } else {
                    *sl = (stamp, by_sym.len() as u32);
                    by_sym.push((x, vec![adv]));
                }
            }
        }
        let mut trans = Vec::with_capacity(by_sym.len());
        for (x, mut k) in by_sym.drain(..) {
            k.sort();
            k.dedup();
            let id = match index.get(&k) {
                Some(&id) => id,
                None => {
                    if kernels.len() >= max_states {
                        return Err(GrammarError::TooLarge {
                            span: Default::default(),
                            what: "LR states".into(),
                            limit: max_states,
                        });
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
