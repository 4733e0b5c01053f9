//! Pass: grammar IR → LALR(1) tables that keep every conflict.
//!
//! LALR(1) rather than canonical LR(1): it has the LR(0) automaton's (far smaller) number of
//! states, which keeps the GLR stack and the mask automaton built over state ids small,
//! and the GLR parser makes any spurious conflict harmless (an extra branch that dies). A
//! shift/reduce or reduce/reduce conflict becomes several actions in one cell; conflicts
//! are reported as data ([`Conflict`]), not errors. A nonterminal's one-terminal
//! alternatives share their successor state (`lr0::Prods::advance`): the tables keep
//! only a production's left side and length, which such alternatives have in common.

pub(crate) mod first;
mod lalr;
mod lr0;

use self::first::First;
use self::lr0::Prods;
use super::error::GrammarError;
use crate::compile::grammar::ir::{Grammar, Symbol};
use crate::compile::interrupt::Interrupt;
use crate::ids::{LrStateId, NonterminalId, ProductionId, TerminalId};
use crate::lr::{Action, LrTable};

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
}

impl LrBuild {
    /// Every conflict, kept in the tables as several actions. Found by scanning every
    /// cell (on request: a large schema's table has millions).
    pub fn conflicts(&self) -> Vec<Conflict> {
        let t = &self.table;
        let mut out = Vec::new();
        for s in 0..t.num_states() {
            let s = LrStateId::new(s);
            for x in 0..=t.num_terminals() {
                let x = TerminalId::new(x);
                let actions = t.actions(s, x);
                if actions.len() > 1 {
                    out.push(Conflict {
                        state: s,
                        terminal: x,
                        actions: actions.to_vec(),
                    });
                }
            }
        }
        out
    }
}

/// The builder's productions (augmented), FIRST sets and the end-of-input terminal.
fn prepare(g: &Grammar, stop: &Interrupt) -> Result<(Prods, First, TerminalId), GrammarError> {
    let nt = g.nonterminals.len();
    let nterm = g.terminals.len();
    let eof = TerminalId::new(nterm);
    // Terminals, end of input and (for the textbook algorithm the tests compare with) a
    // propagation marker.
    let width = nterm + 2;
    let aug = NonterminalId::new(nt);
    let mut prods = Prods {
        lhs: vec![aug.as_u32()],
        rhs: vec![vec![Symbol::N(g.start)]],
        by_lhs: vec![Vec::new(); nt + 1],
        num_terminals: nterm + 1,
        advanced: Vec::new(),
    };
    prods.by_lhs[nt].push(0);
    for (i, p) in g.productions.iter().enumerate() {
        prods.lhs.push(p.lhs.as_u32());
        prods.rhs.push(p.rhs.clone());
        prods.by_lhs[p.lhs.index()].push(i as u32 + 1);
    }
    prods.merge_single_terminal_alternatives();
    let first = First::compute(g, width, stop)?;
    Ok((prods, first, eof))
}

/// Builds LALR(1) tables for `g`.
pub fn build_lr(g: &Grammar) -> Result<LrBuild, GrammarError> {
    build_lr_until(g, &Interrupt::default())
}

/// [`build_lr`], stopping with `stop`'s error once it says so.
pub(crate) fn build_lr_until(g: &Grammar, stop: &Interrupt) -> Result<LrBuild, GrammarError> {
    let nt = g.nonterminals.len();
    let nterm = g.terminals.len();
    let (prods, first, eof) = prepare(g, stop)?;
    let lr0 = lr0::build(&prods, MAX_LR_STATES, stop)?;
    let reductions = lalr::reductions(&prods, &first, &lr0, eof, stop)?;
    let n = lr0.kernels.len();
    // Rows are sparse: large schemas have tens of thousands of states and thousands of
    // symbols, of which a state acts on a few.
    let mut cells: Vec<Vec<(TerminalId, Action)>> = vec![Vec::new(); n];
    let mut gotos: Vec<Vec<(NonterminalId, LrStateId)>> = vec![Vec::new(); n];
    for (s, reds) in reductions.into_iter().enumerate() {
        for &(x, target) in &lr0.transitions[s] {
            let target = LrStateId::new(target as usize);
            match x {
                Symbol::T(t) => cells[s].push((t, Action::Shift(target))),
                Symbol::N(a) => gotos[s].push((a, target)),
            }
        }
        for (prod, set) in reds {
            let action = if prod == 0 {
                Action::Accept
            } else {
                Action::Reduce(ProductionId::new(prod as usize - 1))
            };
            for t in set.iter() {
                cells[s].push((t, action));
            }
        }
    }
    stop.check()?;
    let prod_lhs = g.productions.iter().map(|p| p.lhs).collect();
    let prod_len = g.productions.iter().map(|p| p.rhs.len() as u32).collect();
    // Built consistently above; validation failing would be a builder bug.
    let table = LrTable::from_parts(nterm, nt, cells, gotos, prod_lhs, prod_len)
        .expect("LR tables built consistently");
    Ok(LrBuild { table })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::{compile_grammar, GrammarFormat};

    fn terminal(g: &Grammar, name: &str) -> TerminalId {
        let i = g.terminals.iter().position(|t| t.name == name);
        TerminalId::new(i.unwrap_or_else(|| panic!("no terminal {name}")))
    }

    fn shift(t: &LrTable, s: LrStateId, x: TerminalId) -> LrStateId {
        match t.actions(s, x) {
            [Action::Shift(n)] => *n,
            other => panic!("expected one shift, got {other:?}"),
        }
    }

    /// A nonterminal's one-terminal alternatives lead to one state from a given state,
    /// whatever the terminal, so a rule of many literals used in many places costs a
    /// state per place rather than per (place, literal). The states still reduce by the
    /// rule and are told apart from other items on the same terminal.
    #[test]
    fn single_terminal_alternatives_share_their_successor() {
        let g = compile_grammar(
            r#"
            start: "x" k ":" k | "y" k2 "!" | "z" "a" "?"
            k: "a" | "b" | "c"
            k2: "a" | "b" | "c" | "d" "e"
            "#,
            GrammarFormat::Lark,
        )
        .unwrap();
        let t = build_lr(&g).unwrap().table;
        let [a, b, c, d, x, y, z] = [
            "\"a\"", "\"b\"", "\"c\"", "\"d\"", "\"x\"", "\"y\"", "\"z\"",
        ]
        .map(|n| terminal(&g, n));
        let s0 = t.start();
        // After "x": k's three literals go to one state, which reduces k on ":".
        let sx = shift(&t, s0, x);
        let ka = shift(&t, sx, a);
        assert_eq!(shift(&t, sx, b), ka);
        assert_eq!(shift(&t, sx, c), ka);
        let colon = terminal(&g, "\":\"");
        assert!(matches!(t.actions(ka, colon), [Action::Reduce(_)]));
        // After "y": k2's one-terminal alternatives share a state of their own (it
        // reduces k2, not k); "d" starts the two-symbol alternative elsewhere.
        let sy = shift(&t, s0, y);
        let k2a = shift(&t, sy, a);
        assert_eq!(shift(&t, sy, b), k2a);
        assert_ne!(k2a, ka);
        assert_ne!(shift(&t, sy, d), k2a);
        // After "z", "a" is not an alternative of a rule: a state of its own.
        assert_ne!(shift(&t, shift(&t, s0, z), a), ka);
        // The grammar still parses: after "x" k ":" the second k reduces at the end.
        let colon_state = shift(
            &t,
            t.goto(
                sx,
                g.nonterminals
                    .iter()
                    .position(|n| n.name == "k")
                    .map(NonterminalId::new)
                    .unwrap(),
            )
            .unwrap(),
            colon,
        );
        let end = TerminalId::new(g.terminals.len());
        assert!(matches!(
            t.actions(shift(&t, colon_state, c), end),
            [Action::Reduce(_)]
        ));
    }
}
