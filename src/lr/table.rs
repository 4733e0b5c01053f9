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

/// One slot of the packed action table: the cell of state `owner` on the terminal the
/// slot stands for there, `actions[start..end]`. Free slots have `owner == FREE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Slot {
    owner: u32,
    start: u32,
    end: u32,
}

/// The owner of a slot no cell uses.
const FREE: u32 = u32::MAX;

const FREE_SLOT: Slot = Slot {
    owner: FREE,
    start: 0,
    end: 0,
};

/// LR(1)-style tables (LALR(1) lookaheads) where a cell may hold several actions.
///
/// Terminals are `0..num_terminals`; `eof()` = `num_terminals` is end of input. Action
/// rows are packed into one comb (row displacement, as yacc packs its tables): the cell
/// of state `s` on terminal `t` is slot `base[s] + t` if that slot's owner is `s`, else
/// empty, so a lookup stays one load and a check while the table holds the cells that
/// exist, not states × terminals (a dense table was most of a large JSON Schema's
/// artifact and of its LR build's time: 30,000 states × 300 terminals). Every row's
/// window `base[s] .. base[s] + T + 1` lies inside `slots`. Gotos are stored by row, as
/// few states have a goto on more than a handful of the nonterminals: state `s`'s are
/// `gotos[goto_offsets[s] .. goto_offsets[s + 1]]`, `(nonterminal, target)` strictly
/// ascending by nonterminal. State 0 is the start state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LrTable {
    num_terminals: u32,
    num_nonterminals: u32,
    base: Vec<u32>,
    slots: Vec<Slot>,
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
        if cells.len() >= FREE as usize {
            return Err(LrValidateError::Invalid("too many states".into()));
        }
        let width = num_terminals + 1;
        // Each row as (terminal, start, end) cells, its actions appended in state order.
        let mut actions = Vec::new();
        let mut rows: Vec<Vec<(u32, u32, u32)>> = Vec::with_capacity(cells.len());
        for mut row in cells {
            // Stable: the actions of one cell keep their order.
            row.sort_by_key(|&(t, _)| t);
            if row.last().is_some_and(|&(t, _)| t.index() >= width) {
                return Err(LrValidateError::Invalid(
                    "action terminal out of range".into(),
                ));
            }
            let mut packed = Vec::with_capacity(row.len());
            for cell in row.chunk_by(|a, b| a.0 == b.0) {
                let at = actions.len();
                for &(_, a) in cell {
                    // Cells hold a few actions: a scan keeps each once.
                    if !actions[at..].contains(&a) {
                        actions.push(a);
                    }
                }
                packed.push((cell[0].0.as_u32(), at as u32, actions.len() as u32));
            }
            rows.push(packed);
        }
        let (base, slots) = pack(&rows, width);
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
            base,
            slots,
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
        let n = self.base.len();
        if self.base.iter().any(|&b| b as usize + w > self.slots.len()) {
            return bad("action row outside the table");
        }
        if self.slots.iter().any(|c| {
            c.owner != FREE
                && (c.owner as usize >= n || c.start > c.end || c.end as usize > self.actions.len())
        }) {
            return bad("action cell out of range");
        }
        self.validate_rows()
    }

    /// [`Self::validate`] but for the action slots, which [`Self::from_parts`] makes in
    /// range by construction.
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
        self.base.len()
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
        let c = self.slots[self.base[s.index()] as usize + t.index()];
        if c.owner == s.as_u32() {
            &self.actions[c.start as usize..c.end as usize]
        } else {
            &[]
        }
    }

    /// The terminals (end of input included) state `s` has any action on, ascending: one
    /// pass over the state's window instead of a lookup per terminal.
    pub fn acting_terminals(&self, s: LrStateId) -> impl Iterator<Item = TerminalId> + '_ {
        let w = self.num_terminals as usize + 1;
        let b = self.base[s.index()] as usize;
        let owner = s.as_u32();
        self.slots[b..b + w]
            .iter()
            .enumerate()
            .filter(move |(_, c)| c.owner == owner && c.start != c.end)
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
        self.slots
            .iter()
            .filter(|c| c.owner != FREE && c.end - c.start > 1)
            .count()
    }
}

/// Positions a row may be tried at before it goes past the end of the comb.
const PACK_TRIES: usize = 64;

/// Packs action rows (`(terminal, start, end)` cells, ascending by terminal) into one
/// comb of slots, first fit, densest rows first: returns each row's base and the slots,
/// long enough that every row's window of `width` slots lies inside.
fn pack(rows: &[Vec<(u32, u32, u32)>], width: usize) -> (Vec<u32>, Vec<Slot>) {
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by_key(|&s| std::cmp::Reverse(rows[s].len()));
    let mut base = vec![0u32; rows.len()];
    let mut slots: Vec<Slot> = Vec::new();
    let mut free = FreeSlots::default();
    for s in order {
        let row = &rows[s];
        let Some(&(c0, _, _)) = row.first() else {
            // No cell: any window will do, its slots owned by other states.
            continue;
        };
        let c0 = c0 as usize;
        let taken = |slots: &[Slot], i: usize| slots.get(i).is_some_and(|c| c.owner != FREE);
        // The first cell goes to a free slot, the base not negative. After a few misses
        // the row goes past the end, where every slot is free: packing stays linear in
        // the cells whatever the rows look like.
        let mut at = c0;
        let mut tries = 0;
        let b = loop {
            at = free.next(at);
            let b = at - c0;
            if row[1..]
                .iter()
                .all(|&(t, _, _)| !taken(&slots, b + t as usize))
            {
                break b;
            }
            tries += 1;
            if tries == PACK_TRIES {
                break slots.len().max(c0) - c0;
            }
            at += 1;
        };
        let last = b + row.last().map_or(0, |c| c.0 as usize);
        if slots.len() <= last {
            slots.resize(last + 1, FREE_SLOT);
        }
        for &(t, start, end) in row {
            let i = b + t as usize;
            slots[i] = Slot {
                owner: s as u32,
                start,
                end,
            };
            free.take(i);
        }
        base[s] = b as u32;
    }
    let len = base
        .iter()
        .map(|&b| b as usize + width)
        .max()
        .unwrap_or(width);
    slots.resize(len.max(slots.len()), FREE_SLOT);
    (base, slots)
}

/// The free slots of a growing comb, found in near-constant time: each taken slot links
/// to a later slot, and lookups shorten the chains they walk (union–find by path halving).
#[derive(Default)]
struct FreeSlots {
    /// `next[i] == i`: slot `i` is free; else a later slot to look at. Past the end every
    /// slot is free.
    next: Vec<u32>,
}

impl FreeSlots {
    /// The first free slot at or after `i`.
    fn next(&mut self, mut i: usize) -> usize {
        while i < self.next.len() && self.next[i] as usize != i {
            let j = self.next[i] as usize;
            if j < self.next.len() {
                self.next[i] = self.next[j];
            }
            i = j;
        }
        i
    }

    /// Marks slot `i` taken.
    fn take(&mut self, i: usize) {
        if self.next.len() <= i + 1 {
            let from = self.next.len();
            self.next.extend((from as u32)..=(i as u32 + 1));
        }
        self.next[i] = i as u32 + 1;
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

    /// Random sparse and dense rows, with conflicts: every (state, terminal) lookup
    /// agrees with the rows given, `acting_terminals` lists exactly the nonempty cells,
    /// and the comb's size follows the cells, not states × terminals.
    #[test]
    fn packed_rows_agree_with_a_dense_table() {
        let mut rng = crate::rng::SplitMix64::new(11);
        for round in 0..30 {
            let terms = 1 + rng.below(40);
            let states = 1 + rng.below(300);
            let width = terms + 1;
            let mut dense = vec![vec![Vec::new(); width]; states];
            let mut cells = vec![Vec::new(); states];
            for (s, row) in dense.iter_mut().enumerate() {
                // Mostly a few cells, some rows nearly full, some empty.
                let fill = match rng.below(10) {
                    0 => 0.0,
                    1 => 0.9,
                    _ => 2.0 / width as f64,
                };
                for (t, cell) in row.iter_mut().enumerate() {
                    while rng.chance(fill.min(0.95)) && cell.len() < 3 {
                        let a = match rng.below(3) {
                            0 => Action::Shift(st(rng.below(states))),
                            1 => Action::Reduce(ProductionId::new(0)),
                            _ => Action::Accept,
                        };
                        cells[s].push((TerminalId::new(t), a));
                        if !cell.contains(&a) {
                            cell.push(a);
                        }
                        if fill < 0.5 {
                            break;
                        }
                    }
                }
            }
            let t = LrTable::from_parts(
                terms,
                1,
                cells,
                vec![Vec::new(); states],
                vec![nt(0)],
                vec![1],
            )
            .unwrap();
            assert_eq!(t.validate(), Ok(()));
            let mut nonempty = 0;
            for (s, row) in dense.iter().enumerate() {
                for (x, cell) in row.iter().enumerate() {
                    assert_eq!(
                        t.actions(st(s), TerminalId::new(x)),
                        &cell[..],
                        "round {round}"
                    );
                }
                let acting: Vec<_> = (0..width).filter(|&x| !row[x].is_empty()).collect();
                let got: Vec<_> = t.acting_terminals(st(s)).map(|x| x.index()).collect();
                assert_eq!(got, acting, "round {round} state {s}");
                nonempty += acting.len();
            }
            assert!(
                t.slots.len() <= 3 * nonempty + 2 * width,
                "round {round}: {} slots for {nonempty} cells",
                t.slots.len()
            );
        }
    }

    /// A window past the end of the comb, or a cell out of range, is an invalid table.
    #[test]
    fn bad_action_slots_are_invalid() {
        let cells = vec![vec![(TerminalId::new(0), Action::Accept)]];
        let good =
            LrTable::from_parts(1, 1, cells, vec![Vec::new()], vec![nt(0)], vec![1]).unwrap();
        assert_eq!(good.validate(), Ok(()));
        let mut t = good.clone();
        t.base[0] = t.slots.len() as u32;
        assert!(t.validate().is_err());
        let mut t = good.clone();
        t.slots[0].end = 5;
        assert!(t.validate().is_err());
        let mut t = good;
        t.slots[0].owner = 3;
        assert!(t.validate().is_err());
    }
}
