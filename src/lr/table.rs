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
/// of state `s` on terminal `t` are `actions[offsets[s * (T + 1) + t] .. offsets[... + 1]]`;
/// `goto[s * N + n]` is the state after reducing to nonterminal `n` on top of `s`, or
/// `u32::MAX`. State 0 is the start state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LrTable {
    num_terminals: u32,
    num_nonterminals: u32,
    offsets: Vec<u32>,
    actions: Vec<Action>,
    goto: Vec<u32>,
    prod_lhs: Vec<NonterminalId>,
    prod_len: Vec<u32>,
}

const NO_GOTO: u32 = u32::MAX;

impl LrTable {
    /// Assembles and validates tables. `cells[s][t]` lists the actions of state `s` on
    /// terminal `t` (`t = num_terminals` is end of input); `goto[s][n]` the goto targets.
    pub fn from_parts(
        num_terminals: usize,
        num_nonterminals: usize,
        cells: Vec<Vec<Vec<Action>>>,
        goto: Vec<Vec<Option<LrStateId>>>,
        prod_lhs: Vec<NonterminalId>,
        prod_len: Vec<u32>,
    ) -> Result<Self, LrValidateError> {
        let mut offsets = vec![0u32];
        let mut actions = Vec::new();
        for row in &cells {
            if row.len() != num_terminals + 1 {
                return Err(LrValidateError::Invalid("action row width".into()));
            }
            for cell in row {
                actions.extend_from_slice(cell);
                offsets.push(actions.len() as u32);
            }
        }
        let mut g = Vec::with_capacity(goto.len() * num_nonterminals);
        for row in &goto {
            if row.len() != num_nonterminals {
                return Err(LrValidateError::Invalid("goto row width".into()));
            }
            g.extend(row.iter().map(|s| s.map_or(NO_GOTO, |s| s.as_u32())));
        }
        let t = Self {
            num_terminals: num_terminals as u32,
            num_nonterminals: num_nonterminals as u32,
            offsets,
            actions,
            goto: g,
            prod_lhs,
            prod_len,
        };
        t.validate()?;
        Ok(t)
    }

    /// Checks sizes and that every id in the tables is in range.
    pub fn validate(&self) -> Result<(), LrValidateError> {
        let bad = |m: &str| Err(LrValidateError::Invalid(m.into()));
        let w = self.num_terminals as usize + 1;
        if self.offsets.is_empty() || (self.offsets.len() - 1) % w != 0 {
            return bad("offset table size");
        }
        let n = (self.offsets.len() - 1) / w;
        if n == 0 {
            return bad("no states");
        }
        if self.offsets.windows(2).any(|p| p[0] > p[1])
            || *self.offsets.last().unwrap_or(&0) as usize != self.actions.len()
        {
            return bad("offsets not monotone");
        }
        if self.goto.len() != n * self.num_nonterminals as usize {
            return bad("goto table size");
        }
        if self.goto.iter().any(|&g| g != NO_GOTO && g as usize >= n) {
            return bad("goto target out of range");
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

    /// The state after reducing to `n` on top of `s`.
    #[inline]
    pub fn goto(&self, s: LrStateId, n: NonterminalId) -> Option<LrStateId> {
        let g = self.goto[s.index() * self.num_nonterminals as usize + n.index()];
        (g != NO_GOTO).then_some(LrStateId::from_u32(g))
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
