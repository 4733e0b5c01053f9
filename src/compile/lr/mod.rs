//! Pass: grammar IR → LALR(1) tables that keep every conflict.
//!
//! LALR(1) rather than canonical LR(1): it has the LR(0) automaton's (far smaller) number of
//! states, which keeps the GLR stack and the mask automaton built over state ids small,
//! and the GLR parser makes any spurious conflict harmless (an extra branch that dies). A
//! shift/reduce or reduce/reduce conflict becomes several actions in one cell; conflicts
//! are reported as data ([`Conflict`]), not errors.

mod first;
mod lalr;
mod lr0;

use self::first::First;
use self::lr0::{Item, Prods};
use super::error::GrammarError;
use super::ir::{Grammar, Symbol};
use crate::ids::{LrStateId, NonterminalId, ProductionId, TerminalId};
use crate::lr::{Action, LrTable};
use crate::termset::TermSet;

/// Most LR states; bounds memory (states × terminals action cells).
pub const MAX_LR_STATES: usize = 100_000;

/// One table cell with more than one action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The state.
    pub state: LrStateId,
    /// The lookahead terminal (`num_terminals` = end of input).
    pub terminal: TerminalId,
    /// The competing actions.
    pub actions: Vec<Action>,
}

/// The result of building LR tables.
pub struct LrBuild {
    /// The frozen tables.
    pub table: LrTable,
    /// Every conflict, kept in the tables as several actions.
    pub conflicts: Vec<Conflict>,
}

/// Builds LALR(1) tables for `g`.
pub fn build_lr(g: &Grammar) -> Result<LrBuild, GrammarError> {
    let nt = g.nonterminals.len();
    let nterm = g.terminals.len();
    let eof = TerminalId::new(nterm);
    let width = nterm + 2;
    let aug = NonterminalId::new(nt);
    let mut prods = Prods {
        lhs: vec![aug.as_u32()],
        rhs: vec![vec![Symbol::N(g.start)]],
        by_lhs: vec![Vec::new(); nt + 1],
    };
    prods.by_lhs[nt].push(0);
    for (i, p) in g.productions.iter().enumerate() {
        prods.lhs.push(p.lhs.as_u32());
        prods.rhs.push(p.rhs.clone());
        prods.by_lhs[p.lhs.index()].push(i as u32 + 1);
    }
    let first = First::compute(g, width);
    let lr0 = lr0::build(&prods, MAX_LR_STATES).map_err(|limit| GrammarError::TooLarge {
        span: Default::default(),
        what: "LR states".into(),
        limit,
    })?;
    let la = lalr::lookaheads(&prods, &first, &lr0, eof);
    let n = lr0.kernels.len();
    // Rows are sparse: large schemas have tens of thousands of states and thousands of
    // symbols, of which a state acts on a few.
    let mut cells: Vec<Vec<(TerminalId, Action)>> = vec![Vec::new(); n];
    let mut gotos: Vec<Vec<(NonterminalId, LrStateId)>> = vec![Vec::new(); n];
    for s in 0..n {
        for &(x, target) in &lr0.transitions[s] {
            let target = LrStateId::new(target as usize);
            match x {
                Symbol::T(t) => cells[s].push((t, Action::Shift(target))),
                Symbol::N(a) => gotos[s].push((a, target)),
            }
        }
        let kernel: Vec<(Item, TermSet)> = lr0.kernels[s]
            .iter()
            .copied()
            .zip(la[s].iter().cloned())
            .collect();
        for (it, set) in lalr::lr1_closure(&prods, &first, width, &kernel) {
            if prods.next_symbol(it).is_some() {
                continue;
            }
            for t in set.iter() {
                if t.index() > nterm {
                    continue; // the propagation marker never reaches a final closure
                }
                let action = if it.prod == 0 {
                    Action::Accept
                } else {
                    Action::Reduce(ProductionId::new(it.prod as usize - 1))
                };
                cells[s].push((t, action));
            }
        }
    }
    let prod_lhs = g.productions.iter().map(|p| p.lhs).collect();
    let prod_len = g.productions.iter().map(|p| p.rhs.len() as u32).collect();
    // Built consistently above; validation failing would be a builder bug.
    let table = LrTable::from_parts(nterm, nt, cells, gotos, prod_lhs, prod_len)
        .expect("LR tables built consistently");
    let mut conflicts = Vec::new();
    for s in 0..n {
        let s = LrStateId::new(s);
        for t in 0..=nterm {
            let t = TerminalId::new(t);
            let actions = table.actions(s, t);
            if actions.len() > 1 {
                conflicts.push(Conflict {
                    state: s,
                    terminal: t,
                    actions: actions.to_vec(),
                });
            }
        }
    }
    Ok(LrBuild { table, conflicts })
}
