//! LR action/goto tables.

use serde::{Deserialize, Serialize};

use crate::ids::{LrStateId, NonterminalId, ProductionId, TerminalId};

/// One parser action on a lookahead terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Action {
    /// Push the terminal and go to this state.
    Shift(LrStateId),
    /// Reduce by this production (pop its length, then go to goto(top, lhs)).
    Reduce(ProductionId),
    /// End of input after a complete document.
    Accept,
}

/// Why a set of LR tables is not a valid [`LrTable`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LrValidateError {
    /// Sizes disagree or an entry is out of range.
    #[error("invalid LR tables: {0}")]
    Invalid(String),
}

/// LR(1)-style tables (LALR(1) lookaheads) where a cell may hold several actions.
///
/// Terminals are `0..num_terminals`; `eof()` = `num_terminals` is end of input. The actions
/// of state `s` on terminal `t` are `actions[offsets[s * (T + 1) + t] .. offsets[... + 1]]`.
/// Gotos are stored by row, as few states have a goto on more than a handful of the
/// nonterminals (a dense table was most of a large JSON Schema's artifact): state `s`'s
/// are `gotos[goto_offsets[s] .. goto_offsets[s + 1]]`, `(nonterminal, target)` strictly
/// ascending by nonterminal. State 0 is the start state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LrTable {
    num_terminals: u32,
    num_nonterminals: u32,
    offsets: Vec<u32>,
    actions: Vec<Action>,
    goto_offsets: Vec<u32>,
    gotos: Vec<(NonterminalId, LrStateId)>,
    prod_lhs: Vec<NonterminalId>,
    prod_len: Vec<u32>,
}

impl LrTable {
    /// Assembles and validates tables. `cells[s]` lists state `s`'s actions as
    /// `(terminal, action)` (`t = num_terminals` is end of input; a cell's actions keep
    /// their order, repeats dropped); `gotos[s]` its `(nonterminal, target)` gotos, in any order.
    pub fn from_parts(
        num_terminals: usize,
        num_nonterminals: usize,
        cells: Vec<Vec<(TerminalId, Action)>>,
        gotos: Vec<Vec<(NonterminalId, LrStateId)>>,
        prod_lhs: Vec<NonterminalId>,
        prod_len: Vec<u32>,
    ) -> Result<Self, LrValidateError> {
        if gotos.len() != cells.len() {
            return Err(LrValidateError::Invalid("goto row count".into()));
        }
        let width = num_terminals + 1;
        let mut offsets = Vec::with_capacity(cells.len() * width + 1);
        offsets.push(0u32);
        let mut actions = Vec::new();
        for mut row in cells {
            // Stable: the actions of one cell keep their order.
            row.sort_by_key(|&(t, _)| t);
            if row.last().is_some_and(|&(t, _)| t.index() >= width) {
                return Err(LrValidateError::Invalid(
                    "action terminal out of range".into(),
                ));
            }
            // Cell t ends at offsets[row + t + 1]: cells before an action's terminal end
            // where the actions so far do (rows are sparse, so mostly a fill).
            let row_start = offsets.len() - 1;
            for cell in row.chunk_by(|a, b| a.0 == b.0) {
                let t = cell[0].0.index();
                offsets.resize(row_start + t + 1, actions.len() as u32);
                let at = actions.len();
                for &(_, a) in cell {
                    // Cells hold a few actions: a scan keeps each once.
                    if !actions[at..].contains(&a) {
                        actions.push(a);
                    }
                }
                offsets.push(actions.len() as u32);
            }
            offsets.resize(row_start + width + 1, actions.len() as u32);
        }
        let mut goto_offsets = Vec::with_capacity(gotos.len() + 1);
        goto_offsets.push(0u32);
        let mut flat = Vec::new();
        for mut row in gotos {
            row.sort_unstable();
            flat.extend_from_slice(&row);
            goto_offsets.push(flat.len() as u32);
        }
        let t = Self {
            num_terminals: num_terminals as u32,
            num_nonterminals: num_nonterminals as u32,
            offsets,
            actions,
            goto_offsets,
            gotos: flat,
            prod_lhs,
            prod_len,
        };
        t.validate_rows()?;
        debug_assert_eq!(t.validate(), Ok(()));
        Ok(t)
    }

    /// Checks sizes and that every id in the tables is in range.
    pub fn validate(&self) -> Result<(), LrValidateError> {
        let bad = |m: &str| Err(LrValidateError::Invalid(m.into()));
        let w = self.num_terminals as usize + 1;
        if self.offsets.is_empty() || (self.offsets.len() - 1) % w != 0 {
            return bad("offset table size");
        }
        if self.offsets.windows(2).any(|p| p[0] > p[1])
            || *self.offsets.last().unwrap_or(&0) as usize != self.actions.len()
        {
            return bad("offsets not monotone");
        }
        self.validate_rows()
    }

    /// [`Self::validate`] but for the action offsets, which [`Self::from_parts`] makes
    /// ascending and ending at the last action by construction (checking them again was
    /// most of the check: a large schema has tens of thousands of states × hundreds of
    /// terminals of them).
    fn validate_rows(&self) -> Result<(), LrValidateError> {
        let bad = |m: &str| Err(LrValidateError::Invalid(m.into()));
        let n = self.num_states();
        if n == 0 {
            return bad("no states");
        }
        if self.goto_offsets.len() != n + 1
            || self.goto_offsets[0] != 0
            || self.goto_offsets.windows(2).any(|p| p[0] > p[1])
            || self.goto_offsets[n] as usize != self.gotos.len()
        {
            return bad("goto offsets");
        }
        for s in 0..n {
            let row = &self.gotos[self.goto_offsets[s] as usize..self.goto_offsets[s + 1] as usize];
            if row.windows(2).any(|p| p[0].0 >= p[1].0) {
                return bad("goto row not ascending");
            }
            if row
                .iter()
                .any(|&(a, g)| a.as_u32() >= self.num_nonterminals || g.index() >= n)
            {
                return bad("goto out of range");
            }
        }
        if self.prod_lhs.len() != self.prod_len.len()
            || self
                .prod_lhs
                .iter()
                .any(|l| l.as_u32() >= self.num_nonterminals)
        {
            return bad("production table");
        }
        for a in &self.actions {
            match *a {
                Action::Shift(s) if s.index() >= n => return bad("shift target out of range"),
                Action::Reduce(p) if p.index() >= self.prod_lhs.len() => {
                    return bad("reduce production out of range")
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The number of states.
    pub fn num_states(&self) -> usize {
        (self.offsets.len() - 1) / (self.num_terminals as usize + 1)
    }

    /// The number of grammar terminals (end of input not counted).
    pub fn num_terminals(&self) -> usize {
        self.num_terminals as usize
    }

    /// The number of nonterminals.
    pub fn num_nonterminals(&self) -> usize {
        self.num_nonterminals as usize
    }

    /// The pseudo-terminal for end of input.
    pub fn eof(&self) -> TerminalId {
        TerminalId::from_u32(self.num_terminals)
    }

    /// The start state.
    pub fn start(&self) -> LrStateId {
        LrStateId::from_u32(0)
    }

    /// The actions of state `s` on terminal `t` (`t` may be [`Self::eof`]).
    #[inline]
    pub fn actions(&self, s: LrStateId, t: TerminalId) -> &[Action] {
        let i = s.index() * (self.num_terminals as usize + 1) + t.index();
        &self.actions[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }

    /// The terminals (end of input included) state `s` has any action on, ascending: one
    /// pass over the state's offsets instead of a lookup per terminal.
    pub fn acting_terminals(&self, s: LrStateId) -> impl Iterator<Item = TerminalId> + '_ {
        let w = self.num_terminals as usize + 1;
        self.offsets[s.index() * w..=(s.index() + 1) * w]
            .windows(2)
            .enumerate()
            .filter(|(_, o)| o[0] != o[1])
            .map(|(t, _)| TerminalId::new(t))
    }

    /// The state after reducing to `n` on top of `s`.
    #[inline]
    pub fn goto(&self, s: LrStateId, n: NonterminalId) -> Option<LrStateId> {
        let row = self.gotos(s);
        // Rows are short (a state's nonterminals after a dot): a scan beats a search.
        if row.len() <= 8 {
            return row.iter().find(|&&(a, _)| a == n).map(|&(_, g)| g);
        }
        row.binary_search_by_key(&n, |&(a, _)| a)
            .ok()
            .map(|i| row[i].1)
    }

    /// State `s`'s gotos, `(nonterminal, target)` ascending by nonterminal.
    #[inline]
    pub fn gotos(&self, s: LrStateId) -> &[(NonterminalId, LrStateId)] {
        &self.gotos
            [self.goto_offsets[s.index()] as usize..self.goto_offsets[s.index() + 1] as usize]
    }

    /// The number of productions.
    pub fn num_productions(&self) -> usize {
        self.prod_lhs.len()
    }

    /// The left-hand side of a production.
    #[inline]
    pub fn lhs(&self, p: ProductionId) -> NonterminalId {
        self.prod_lhs[p.index()]
    }

    /// The length of a production's right-hand side.
    #[inline]
    pub fn rhs_len(&self, p: ProductionId) -> usize {
        self.prod_len[p.index()] as usize
    }

    /// The number of (state, terminal) cells with more than one action.
    pub fn num_conflicts(&self) -> usize {
        self.offsets.windows(2).filter(|w| w[1] - w[0] > 1).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nt(i: usize) -> NonterminalId {
        NonterminalId::new(i)
    }

    fn st(i: usize) -> LrStateId {
        LrStateId::new(i)
    }

    /// `n` states, one terminal, 20 nonterminals, no actions; state `s`'s gotos `rows[s]`.
    fn table(rows: Vec<Vec<(NonterminalId, LrStateId)>>) -> Result<LrTable, LrValidateError> {
        let n = rows.len();
        LrTable::from_parts(1, 20, vec![Vec::new(); n], rows, vec![nt(0)], vec![1])
    }

    /// Lookups agree with the rows given, in any order, on the short rows (scanned) and
    /// the long ones (searched), and `gotos` lists them ascending.
    #[test]
    fn gotos_are_found_in_short_and_long_rows() {
        let long: Vec<_> = (0..20).rev().map(|a| (nt(a), st(a % 3))).collect();
        let short = vec![(nt(7), st(2)), (nt(3), st(1))];
        let t = table(vec![long.clone(), short.clone(), Vec::new()]).unwrap();
        for a in 0..20 {
            assert_eq!(t.goto(st(0), nt(a)), Some(st(a % 3)));
            let want = short.iter().find(|e| e.0 == nt(a)).map(|e| e.1);
            assert_eq!(t.goto(st(1), nt(a)), want);
            assert_eq!(t.goto(st(2), nt(a)), None);
        }
        assert_eq!(t.gotos(st(1)), &[(nt(3), st(1)), (nt(7), st(2))]);
    }

    /// A duplicate nonterminal in a row, or a target or nonterminal out of range, is an
    /// invalid table (artifacts are validated through this).
    #[test]
    fn bad_goto_rows_are_invalid() {
        assert!(table(vec![vec![(nt(1), st(0)), (nt(1), st(0))]]).is_err());
        assert!(table(vec![vec![(nt(1), st(1))]]).is_err());
        assert!(table(vec![vec![(nt(20), st(0))]]).is_err());
        assert!(table(vec![vec![(nt(19), st(0))]]).is_ok());
    }

    /// Actions given in any terminal order land in their cells, a cell's in order and each
    /// once.
    #[test]
    fn actions_land_in_their_cells() {
        let cells = vec![vec![
            (TerminalId::new(1), Action::Reduce(ProductionId::new(0))),
            (TerminalId::new(0), Action::Shift(st(0))),
            (TerminalId::new(1), Action::Accept),
            (TerminalId::new(1), Action::Reduce(ProductionId::new(0))),
        ]];
        let t = LrTable::from_parts(1, 1, cells, vec![Vec::new()], vec![nt(0)], vec![1]).unwrap();
        assert_eq!(
            t.actions(st(0), TerminalId::new(0)),
            &[Action::Shift(st(0))]
        );
        assert_eq!(
            t.actions(st(0), t.eof()),
            &[Action::Reduce(ProductionId::new(0)), Action::Accept]
        );
        assert_eq!(t.num_conflicts(), 1);
    }

    /// A state's acting terminals are exactly those whose cell is not empty, end of input
    /// included, for rows with gaps, a full row and an empty one.
    #[test]
    fn acting_terminals_are_the_nonempty_cells() {
        let term = TerminalId::new;
        let shift = Action::Shift(st(0));
        let cells = vec![
            vec![(term(3), Action::Accept), (term(1), shift)],
            vec![
                (term(0), shift),
                (term(1), shift),
                (term(2), shift),
                (term(3), shift),
            ],
            Vec::new(),
        ];
        let t =
            LrTable::from_parts(3, 1, cells, vec![Vec::new(); 3], vec![nt(0)], vec![1]).unwrap();
        let acting = |s: usize| t.acting_terminals(st(s)).collect::<Vec<_>>();
        assert_eq!(acting(0), vec![term(1), t.eof()]);
        assert_eq!(acting(1), (0..4).map(term).collect::<Vec<_>>());
        assert_eq!(acting(2), Vec::<TerminalId>::new());
        for s in 0..3 {
            let by_lookup: Vec<_> = (0..4)
                .map(term)
                .filter(|&x| !t.actions(st(s), x).is_empty())
                .collect();
            assert_eq!(acting(s), by_lookup, "state {s}");
        }
    }
}
